-- examples/common.lua — what every example does first: find the module from the
-- repository (so `luajit examples/<name>.lua` works from any directory, no LUA_PATH
-- needed), line-buffer stdout, and parse `--key value` / `--flag` options against a
-- table of defaults (--help prints the file's header and the options; an unknown
-- option or a missing value prints what is wrong and the usage, exit status 2).
--
--   local mx, args = dofile(<dir of the example> .. 'common.lua').setup{['num-epochs'] = 10}
local M = {}

local function here()
  local src = debug.getinfo(1, 'S').source:match('^@(.*)$') or ''
  local dir = src:match('^(.-)[^/\\]*$')
  return dir == '' and '.' or dir:sub(1, -2)
end

-- The usage text: the example's header comment and its options with their defaults.
function M.usage(defaults, script)
  local lines = {}
  local f = script and io.open(script, 'r')
  if f then
    for line in f:lines() do
      local text = line:match('^%-%-%s?(.*)$')
      if not text then break end
      lines[#lines + 1] = text
    end
    f:close()
  end
  local keys = {}
  for k in pairs(defaults) do keys[#keys + 1] = k end
  table.sort(keys)
  lines[#lines + 1] = ''
  lines[#lines + 1] = 'options (default in brackets):'
  for _, k in ipairs(keys) do
    local v = defaults[k]
    lines[#lines + 1] = type(v) == 'boolean' and ('  --%s'):format(k) or ('  --%s VALUE  [%s]'):format(k, tostring(v))
  end
  lines[#lines + 1] = '  --help  this text'
  return table.concat(lines, '\n')
end

-- Parses argv against defaults. --help / -h prints the usage and exits 0; an unknown
-- option or a missing value prints the problem and the usage and exits 2.
function M.parse_args(defaults, argv)
  local opts, i = {}, 1
  for k, v in pairs(defaults) do opts[k] = v end
  local script = argv and argv[0]
  local function fail(msg)
    io.stderr:write(msg, '\n\n', M.usage(defaults, script), '\n')
    os.exit(2)
  end
  while argv and argv[i] do
    if argv[i] == '--help' or argv[i] == '-h' then
      io.stdout:write(M.usage(defaults, script), '\n')
      os.exit(0)
    end
    local key = argv[i]:match('^%-%-([%w-]+)$')
    if not key or opts[key] == nil then fail('unknown option ' .. tostring(argv[i])) end
    if type(opts[key]) == 'boolean' then opts[key] = true; i = i + 1
    else
      local v = argv[i + 1]
      if v == nil then fail('option --' .. key .. ' needs a value') end
      if type(opts[key]) == 'number' then
        opts[key] = tonumber(v) or fail(('option --%s needs a number, got %q'):format(key, v))
      else
        opts[key] = v
      end
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
