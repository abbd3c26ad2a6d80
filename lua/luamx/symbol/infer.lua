--- luamx.symbol.infer — infer_shape / infer_shape_partial / infer_type on symbols.
--
-- Inputs: a table of name -> shape (or dtype name), or an array in list_arguments()
-- order (false/{} for unknown). Results: three arrays in list_arguments(),
-- list_outputs(), list_auxiliary_states() order. Partial mode: unknown shapes are {}
-- and unknown dims 0. Complete mode: when not everything can be decided, raises an
-- error with MXNet's "Cannot decide shape ..." message naming the unknown arguments
-- (API.md's contract; MXNet's Python returns None x3 and warns with the same text);
-- contradictions always raise an error naming op, node, input and shapes.
local ffi = require 'ffi'
local capi = require 'luamx.capi'
local nd = require 'luamx.ndarray'
local C, check = capi.C, capi.check

local M = {}
local MAXD = tonumber(C.LMX_MAX_NDIM)

--- Adds `infer_shape`, `infer_shape_partial`, `infer_type` and `infer_type_partial` to the
-- symbol methods (called by luamx.symbol).
-- @param S the luamx.symbol internals (`methods`, `handle`, `cstrings`, `list`)
function M.install(S)
  local methods, handle, cstrings, list = S.methods, S.handle, S.cstrings, S.list

  local function collect(self, given, what, level)
    if given ~= nil and type(given) ~= 'table' then
      error(what .. ': expected a table of shapes by name or in argument order', level + 1)
    end
    given = given or {}
    local keys, vals = {}, {}
    local npos = #given
    for k, v in pairs(given) do
      if type(k) == 'string' then keys[#keys + 1], vals[#vals + 1] = k, v
      elseif type(k) ~= 'number' then error(what .. ': keys must be argument names', level + 1) end
    end
    if npos > 0 and #keys > 0 then
      error(what .. ': give values either by position or by name, not both', level + 1)
    end
    if npos > 0 then
      local v = {}
      for i = 1, npos do v[i] = given[i] end
      return nil, v
    end
    local order = {}
    for i = 1, #keys do order[i] = i end
    table.sort(order, function(a, b) return keys[a] < keys[b] end)
    local k2, v2 = {}, {}
    for i, j in ipairs(order) do k2[i], v2[i] = keys[j], vals[j] end
    return k2, v2
  end

  local function split3(self, level)
    local na = #list(self, C.LMX_SYM_ARGUMENTS, level + 1)
    local no = #list(self, C.LMX_SYM_OUTPUTS, level + 1)
    local nx = #list(self, C.LMX_SYM_AUX_STATES, level + 1)
    return na, no, nx
  end

  local function shape_input(v, name, level)
    if v == nil or v == false then return -1 end
    if type(v) ~= 'table' then
      error(('infer_shape: shape of \'%s\' must be an array of integers'):format(name), level + 1)
    end
    return v
  end

  local function infer_shape(self, given, partial, level)
    level = level + 1
    local what = partial and 'infer_shape_partial' or 'infer_shape'
    local keys, vals = collect(self, given, what, level)
    local n = #vals
    local ndim = ffi.new('int[?]', math.max(n, 1))
    local dims = ffi.new('int64_t[?]', math.max(n, 1) * MAXD)
    for i = 1, n do
      local s = shape_input(vals[i], keys and keys[i] or tostring(i), level)
      if s == -1 then ndim[i - 1] = -1
      else
        if #s > MAXD then error(('%s: shape of \'%s\' has more than %d dims'):format(what, keys and keys[i] or i, MAXD), level) end
        ndim[i - 1] = #s
        for d = 1, #s do
          local x = s[d]
          if type(x) ~= 'number' or x % 1 ~= 0 or x < 0 then
            error(('%s: shape of \'%s\': dim %d must be a non-negative integer, got %s')
                  :format(what, keys and keys[i] or i, d, tostring(x)), level)
          end
          dims[(i - 1) * MAXD + d - 1] = x
        end
      end
    end
    local na, no, nx = split3(self, level)
    local cap = na + no + nx
    local ond = ffi.new('int[?]', math.max(cap, 1))
    local odims = ffi.new('int64_t[?]', math.max(cap, 1) * MAXD)
    local complete = ffi.new('int[1]')
    check(C.lmx_symbol_infer_shape(handle(self, level), n, keys and cstrings(keys) or nil, ndim,
                                   dims, 1, cap, ond, odims, complete), level)
    local res = {}
    for k = 0, cap - 1 do
      local s = {}
      for d = 1, ond[k] do s[d] = tonumber(odims[k * MAXD + d - 1]) end
      res[k + 1] = s
    end
    if not partial and complete[0] == 0 then
      -- Same call in complete mode gives MXNet's message naming the unknown arguments.
      local rc = C.lmx_symbol_infer_shape(handle(self, level), n, keys and cstrings(keys) or nil,
                                          ndim, dims, 0, cap, ond, odims, complete)
      capi.raise(rc ~= 0 and ffi.string(C.lmx_last_error()) or 'infer_shape: shapes are not complete')
    end
    local a, o, x = {}, {}, {}
    for i = 1, na do a[i] = res[i] end
    for i = 1, no do o[i] = res[na + i] end
    for i = 1, nx do x[i] = res[na + no + i] end
    return a, o, x
  end

  function methods:infer_shape(given) return infer_shape(self, given, false, 2) end
  function methods:infer_shape_partial(given) return infer_shape(self, given, true, 2) end

  local function infer_type(self, given, partial, level)
    level = level + 1
    local what = partial and 'infer_type_partial' or 'infer_type'
    local keys, vals = collect(self, given, what, level)
    local n = #vals
    local dt = ffi.new('int[?]', math.max(n, 1))
    for i = 1, n do
      dt[i - 1] = (vals[i] == nil or vals[i] == false) and -1 or nd.dtype_code(vals[i], level, what)
    end
    local na, no, nx = split3(self, level)
    local cap = na + no + nx
    local out = ffi.new('int[?]', math.max(cap, 1))
    local complete = ffi.new('int[1]')
    local rc = C.lmx_symbol_infer_type(handle(self, level), n, keys and cstrings(keys) or nil, dt,
                                       partial and 1 or 0, cap, out, complete)
    check(rc, level)
    local names = nd.dtype_names
    local a, o, x = {}, {}, {}
    for k = 0, cap - 1 do
      local v = out[k] >= 0 and names[out[k]] or false
      if k < na then a[k + 1] = v elseif k < na + no then o[k - na + 1] = v else x[k - na - no + 1] = v end
    end
    return a, o, x
  end

  -- Custom ops (luamx.operator) call back into Lua from these C calls: keep them out of traces.
  jit.off(infer_shape)
  jit.off(infer_type)

  function methods:infer_type(given) return infer_type(self, given, false, 2) end
  --- Unknown dtypes are `false` (MXNet's None) in the partial result.
  function methods:infer_type_partial(given) return infer_type(self, given, true, 2) end
end

return M
