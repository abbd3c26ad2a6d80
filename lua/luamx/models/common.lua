--- luamx.models.common — what every zoo builder shares: option checking with messages
-- that name the builder, the option, what was expected and what was got; the fresh name
-- scope a builder runs in; and the operator check for builders that use operators a
-- build of luamx may lack.
--
-- Invariant: a builder runs inside a fresh mx.name.NameManager, so its automatic names
-- (`_plus0`, `pooling0`, `flatten0`, ...) are those MXNet's Python builder gives when it
-- runs first in a fresh process, whatever the caller built before.
local capi = require 'luamx.capi'
local raise = capi.raise

local M = {}

--- Copies the keyword table `opts` of builder `who`, checking that every key is one of
-- `defaults`' keys, and fills in the defaults.
function M.options(who, opts, defaults)
  if opts == nil then opts = {} end
  if type(opts) ~= 'table' then
    raise(('mx.models.%s: expected a table of options, got %s'):format(who, type(opts)))
  end
  local o = {}
  for k, v in pairs(opts) do
    if defaults[k] == nil then
      local known = {}
      for name in pairs(defaults) do known[#known + 1] = name end
      table.sort(known)
      raise(('mx.models.%s: unknown option %q (expected one of %s)'):format(
        who, tostring(k), table.concat(known, ', ')))
    end
    o[k] = v
  end
  for k, v in pairs(defaults) do if o[k] == nil then o[k] = v end end
  return o
end

--- Checks that o[key] is a positive integer.
function M.positive_int(who, o, key)
  local v = o[key]
  if type(v) ~= 'number' or v % 1 ~= 0 or v < 1 then
    raise(('mx.models.%s: %s must be a positive integer, got %s'):format(who, key, tostring(v)))
  end
  return v
end

--- Checks that o[key] is one of the values in `allowed` (a list).
function M.one_of(who, o, key, allowed)
  local v = o[key]
  for _, a in ipairs(allowed) do if v == a then return v end end
  local s = {}
  for i, a in ipairs(allowed) do s[i] = tostring(a) end
  raise(('mx.models.%s: %s must be one of %s, got %s'):format(who, key, table.concat(s, ', '),
    tostring(v)))
end

--- Checks that o.image_shape is {channels, height, width} of positive integers.
function M.image_shape(who, o)
  local s = o.image_shape
  local ok = type(s) == 'table' and #s == 3
  if ok then
    for i = 1, 3 do
      if type(s[i]) ~= 'number' or s[i] % 1 ~= 0 or s[i] < 1 then ok = false end
    end
  end
  if not ok then
    local got = type(s) == 'table' and ('{' .. table.concat(s, ', ') .. '}') or tostring(s)
    raise(('mx.models.%s: image_shape must be {channels, height, width} of positive integers, got %s')
      :format(who, got))
  end
  return s[1], s[2], s[3]
end

--- Raises unless every operator in `ops` is registered in this build of luamx.
function M.require_ops(mx, who, ops)
  local have = {}
  for _, name in ipairs(mx.op.list()) do have[name] = true end
  for _, name in ipairs(ops) do
    if not have[name] then
      raise(('mx.models.%s: the network uses operator %s, which this build of luamx does not register')
        :format(who, name))
    end
  end
end

--- Runs build() in a fresh name manager and returns its symbol.
function M.fresh(mx, build)
  return mx.name.NameManager():with(build)
end

return M
