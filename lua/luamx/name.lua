--- luamx.name — mx.name.NameManager and mx.name.Prefix (MXNet 1.9 python/mxnet/name.py).
--
--   mx.name.Prefix('net_'):with(function()
--     local fc = mx.sym.FullyConnected{data = x, num_hidden = 4}   -- 'net_fullyconnected0'
--     local out = mx.sym.Activation{data = fc, act_type = 'relu', name = 'a'}  -- 'net_a'
--   end)
--
-- Lua has no `with`: a manager's `with(fn)` enters it, calls fn, and leaves it (also when
-- fn raises), returning fn's results; scopes nest. Invariants:
-- * The counters live in the engine (src/graph/scope.c): the default manager is the
--   process-wide counters every symbol uses; a NameManager made here has its own, which
--   start at 0 and keep counting across its `with` calls (MXNet's per-manager dict).
-- * Inside a Prefix, every operator node name gets the prefix, given or automatic
--   ('net_fc' for name = 'fc'), and so do the argument variables named after the node
--   ('net_fc_weight'); mx.sym.Variable names are not changed (as MXNet's).
-- * The scope is per OS thread, as MXNet's thread-local NameManager.current.
local ffi = require 'ffi'
local capi = require 'luamx.capi'
local C, check, raise = capi.C, capi.check, capi.raise

local M = {}

local Manager = {}
Manager.__index = Manager
Manager.__tostring = function(m)
  return m._prefix ~= '' and ('<Prefix %q>'):format(m._prefix) or '<NameManager>'
end

local stack = {} -- the entered managers of this Lua state, innermost last

local function new_manager(prefix)
  local out = ffi.new('lmx_name_manager *[1]')
  check(C.lmx_name_manager_new(prefix, out))
  return setmetatable({_h = ffi.gc(out[0], C.lmx_name_manager_free), _prefix = prefix}, Manager)
end

--- NameManager(): a name manager with fresh counters (fullyconnected0, ... again).
-- @return a manager; use it as a scope with `nm:with(fn)`
-- @usage mx.name.NameManager():with(function() ... end)
function M.NameManager() return new_manager('') end

--- Prefix(prefix): a name manager with fresh counters that prepends `prefix` to every
-- operator node name created in its scope (MXNet's mx.name.Prefix).
-- @param prefix a string
-- @return a manager; use it as a scope with `p:with(fn)`
-- @usage local out = mx.name.Prefix('net_'):with(function() return build() end)
function M.Prefix(prefix)
  if type(prefix) == 'table' and getmetatable(prefix) == nil then prefix = prefix.prefix end
  if type(prefix) ~= 'string' then raise('mx.name.Prefix: prefix must be a string, got ' .. type(prefix)) end
  return new_manager(prefix)
end

--- The name a node would get: `name` (with the prefix) when given, else the next
-- automatic name for `hint` from this manager's counters (MXNet's NameManager.get).
-- @param name a string or nil
-- @param hint the operator's hint, e.g. 'fullyconnected'
-- @return the name
function Manager:get(name, hint)
  if name ~= nil then
    if type(name) ~= 'string' then raise('NameManager:get: name must be a string or nil, got ' .. type(name)) end
    return self._prefix .. name
  end
  if type(hint) ~= 'string' then raise('NameManager:get: hint must be a string, got ' .. type(hint)) end
  local buf = ffi.new('char[?]', #self._prefix + #hint + 32)
  check(C.lmx_name_manager_next(self._h, hint, buf, ffi.sizeof(buf)))
  return ffi.string(buf)
end

--- Calls fn(...) with this manager current, then restores the previous one (also when
-- fn raises; the error is re-raised). Scopes nest.
-- @param fn the function to run
-- @param ... its arguments
-- @return fn's results
function Manager:with(fn, ...)
  if type(fn) ~= 'function' then raise('NameManager:with: expected a function, got ' .. type(fn)) end
  if not self._h then raise('NameManager:with: the default name manager cannot be entered') end
  check(C.lmx_name_manager_enter(self._h))
  stack[#stack + 1] = self
  local res = {pcall(fn, ...)}
  stack[#stack] = nil
  check(C.lmx_name_manager_exit())
  if not res[1] then error(res[2], 0) end
  return unpack(res, 2, table.maxn(res))
end

--- The default manager: the engine's process-wide counters, no prefix.
M.default = setmetatable({_h = nil, _prefix = ''}, Manager)

--- The current name manager: the innermost entered one, else `mx.name.default`.
-- @return a manager
function M.current() return stack[#stack] or M.default end

--- Adds NameManager, Prefix, current and default to `mx.name` (which holds reset).
-- @param mx the luamx module table
function M.install(mx)
  mx.name = mx.name or {}
  for _, k in ipairs({'NameManager', 'Prefix', 'current', 'default'}) do mx.name[k] = M[k] end
end

return M
