--- luamx.check — argument validation for the public Lua functions: one message form,
-- "<function>: <argument> must be <expected>, got <actual>", raised at the caller's line.
--
--   local check = require 'luamx.check'
--   check.number('mx.optimizer.sgd', 'learning_rate', o.learning_rate, {min = 0})
--   check.ndarray('mx.nd.relu', 'data', x)
--
-- Invariants: every check returns the value it accepted (so `x = check.number(...)`);
-- nil passes only with `optional = true` (or `opt.optional`); NaN never passes a number
-- check; `describe` names what was given without dumping it (a string is quoted and
-- cut at 40 characters, an NDArray shows its shape and dtype).
local capi = require 'luamx.capi'

local M = {}

--- A shape as MXNet prints it: `(2,3)`.
-- @param s array of dims
-- @return string
local function shape_str(s)
  local t = {}
  for i = 1, #s do t[i] = tostring(s[i]) end
  return '(' .. table.concat(t, ',') .. ')'
end
M.shape_str = shape_str

--- A short description of a value for an error message: `a string ('two')`, `nil`,
--- `NaN`, `the number -1`, `an NDArray of shape (2,3) float32`, `a Symbol 'fc1'`, `a table`.
-- @param v any value
-- @return string
function M.describe(v)
  local t = type(v)
  if v == nil then return 'nil' end
  if t == 'number' then
    if v ~= v then return 'NaN' end
    return ('the number %.17g'):format(v)
  end
  if t == 'string' then
    local s = #v > 40 and v:sub(1, 40) .. '...' or v
    return ('a string (%q)'):format(s)
  end
  if t == 'boolean' then return 'the boolean ' .. tostring(v) end
  if t == 'table' then
    local mt = getmetatable(v)
    local nd = package.loaded['luamx.ndarray']
    if nd and nd.is_ndarray and nd.is_ndarray(v) then
      local ok, sh = pcall(function() return v.shape end)
      local okd, dt = pcall(function() return v.dtype end)
      return ('an NDArray of shape %s %s'):format(ok and shape_str(sh) or '?', okd and tostring(dt) or '?')
    end
    local sym = package.loaded['luamx.symbol']
    if sym and sym.is_symbol and sym.is_symbol(v) then
      local ok, name = pcall(function() return v.name end)
      return ok and name and ("a Symbol '" .. tostring(name) .. "'") or 'a Symbol'
    end
    if mt then return 'an object (' .. tostring(v) .. ')' end
    return 'a table'
  end
  if t == 'cdata' then return 'a cdata (' .. tostring(require('ffi').typeof(v)) .. ')' end
  return 'a ' .. t
end

--- Raises "<who>: <name> must be <expected>, got <describe(v)>".
-- @param who the function's public name (`mx.nd.slice`)
-- @param name the argument's name
-- @param expected what it must be (`a positive integer`)
-- @param v the value given
function M.fail(who, name, expected, v)
  capi.raise(('%s: %s must be %s, got %s'):format(who, name, expected, M.describe(v)))
end

local function optional(opt) return opt == true or (type(opt) == 'table' and opt.optional) end

--- Checks a number: finite unless `opt.inf`, not NaN, and within the bounds given.
-- @param who the function's name
-- @param name the argument's name
-- @param v the value
-- @param opt optional table: `optional`, `integer`, `min`, `max` (inclusive), `gt`, `lt`
-- (exclusive), `inf` (allow infinities)
-- @return v
function M.number(who, name, v, opt)
  opt = type(opt) == 'table' and opt or {optional = opt}
  if v == nil and opt.optional then return v end
  local parts = {opt.integer and 'an integer' or 'a number'}
  if opt.min then parts[#parts + 1] = ('>= %.17g'):format(opt.min) end
  if opt.gt then parts[#parts + 1] = ('> %.17g'):format(opt.gt) end
  if opt.max then parts[#parts + 1] = ('<= %.17g'):format(opt.max) end
  if opt.lt then parts[#parts + 1] = ('< %.17g'):format(opt.lt) end
  local expected = table.concat(parts, ' ')
  if type(v) ~= 'number' or v ~= v then M.fail(who, name, expected, v) end
  if not opt.inf and (v == math.huge or v == -math.huge) then M.fail(who, name, 'finite (' .. expected .. ')', v) end
  if opt.integer and v % 1 ~= 0 then M.fail(who, name, expected, v) end
  if (opt.min and v < opt.min) or (opt.max and v > opt.max) or (opt.gt and v <= opt.gt) or
     (opt.lt and v >= opt.lt) then
    M.fail(who, name, expected, v)
  end
  return v
end

--- Checks a value's Lua type (`'string'`, `'function'`, `'table'`, `'boolean'`).
-- @param who the function's name
-- @param name the argument's name
-- @param v the value
-- @param t the type name
-- @param opt true (or `{optional = true}`) to let nil pass
-- @return v
function M.type(who, name, v, t, opt)
  if v == nil and optional(opt) then return v end
  if type(v) ~= t then
    local article = t:match('^[aeiou]') and 'an ' or 'a '
    M.fail(who, name, article .. t, v)
  end
  return v
end

--- Checks an NDArray.
-- @param who the function's name
-- @param name the argument's name
-- @param v the value
-- @param opt true (or `{optional = true}`) to let nil pass
-- @return v
function M.ndarray(who, name, v, opt)
  if v == nil and optional(opt) then return v end
  if not require('luamx.ndarray').is_ndarray(v) then M.fail(who, name, 'an NDArray', v) end
  return v
end

--- Checks a Symbol.
-- @param who the function's name
-- @param name the argument's name
-- @param v the value
-- @param opt true (or `{optional = true}`) to let nil pass
-- @return v
function M.symbol(who, name, v, opt)
  if v == nil and optional(opt) then return v end
  if not require('luamx.symbol').is_symbol(v) then M.fail(who, name, 'a Symbol', v) end
  return v
end

--- Checks one of a fixed set of strings.
-- @param who the function's name
-- @param name the argument's name
-- @param v the value
-- @param choices array of accepted strings
-- @param opt true (or `{optional = true}`) to let nil pass
-- @return v
function M.choice(who, name, v, choices, opt)
  if v == nil and optional(opt) then return v end
  for _, c in ipairs(choices) do if v == c then return v end end
  local q = {}
  for i, c in ipairs(choices) do q[i] = ("'%s'"):format(c) end
  M.fail(who, name, 'one of ' .. table.concat(q, ', '), v)
end

return M
