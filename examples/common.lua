-- examples/common.lua — what every example does first: find the module from the
-- repository (so `luajit examples/<name>.lua` works from any directory, no LUA_PATH
-- needed), line-buffer stdout, and parse `--key value` / `--flag` options against a
-- table of defaults (an unknown option or a missing value is an error naming it).
--
--   local mx, args = dofile(<dir of the example> .. 'common.lua').setup{['num-epochs'] = 10}
local M = {}

local function here()
  local src = debug.getinfo(1, 'S').source:match('^@(.*)$') or ''
  local dir = src:match('^(.-)[^/\\]*$')
  return dir == '' and '.' or dir:sub(1, -2)
end

function M.parse_args(defaults, argv)
  local opts, i = {}, 1
  for k, v in pairs(defaults) do opts[k] = v end
  while argv and argv[i] do
    local key = argv[i]:match('^%-%-([%w-]+)$')
    if not key or opts[key] == nil then error('unknown option ' .. tostring(argv[i]) .. ' (see the top of this file)', 0) end
    if type(opts[key]) == 'boolean' then opts[key] = true; i = i + 1
    else
      local v = argv[i + 1]
      if v == nil then error('option --' .. key .. ' needs a value', 0) end
      opts[key] = type(opts[key]) == 'number' and assert(tonumber(v), '--' .. key .. ' needs a number') or v
      i = i + 2
    end
  end
  return opts
end

-- The digits are split by position: every 6th image is held out (299 images), the rest
-- (1498) train; --quick keeps 300 and 100 of them.
function M.digits_split(mx, x, y, quick)
  local train_rows, val_rows = {}, {}
  for i = 0, x.shape[1] - 1 do
    if i % 6 == 5 then val_rows[#val_rows + 1] = i else train_rows[#train_rows + 1] = i end
  end
  if quick then
    for i = #train_rows, 301, -1 do train_rows[i] = nil end
    for i = #val_rows, 101, -1 do val_rows[i] = nil end
  end
  local function take(src, rows)
    local shape = src.shape
    shape[1] = #rows
    local dst = mx.nd.empty(shape)
    mx.io.gather_rows(dst, src, rows)
    return dst
  end
  return take(x, train_rows), take(y, train_rows), take(x, val_rows), take(y, val_rows)
end
-- Accuracy over exactly the held-out images (predict drops the padding rows that score
-- counts, as MXNet's score does, in the last batch).
function M.heldout_accuracy(mx, mod, val)
  local probs = mod:predict(val)
  local labels = {}
  val:reset()
  for batch in val do
    local l = batch.label[1]:toflat()
    for i = 1, #l - batch.pad do labels[#labels + 1] = l[i] end
  end
  local metric = mx.metric.Accuracy()
  metric:update({mx.nd.array(labels)}, {probs})
  local _, acc = metric:get()
  return acc
end

--- Sets up the module path and stdout, then returns mx and the parsed options.
function M.setup(defaults)
  local root = here() .. '/..'
  package.path = root .. '/lua/?.lua;' .. root .. '/lua/?/init.lua;' .. package.path
  local mx = require 'luamx'
  io.stdout:setvbuf('line')
  return mx, M.parse_args(defaults or {}, arg)
end

return M
