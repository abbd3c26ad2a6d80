--- luamx.symbol — mx.sym / mx.symbol: MXNet's symbolic graphs over lmx_symbol handles.
--
-- A Symbol is a table {_h = cdata} whose handle is wrapped in ffi.gc at birth. All graph
-- logic (composition, naming, listings, attributes, inference, JSON) is in the engine;
-- this file converts Lua values to MXNet's string forms and back:
--   parameters: integers "128", other numbers the shortest text that reads back equal,
--   booleans "True"/"False", tables tuples "(2, 2)" ("(2,)" for one element), strings
--   as they are;
--   shapes: Lua arrays of integers; dtypes: names ('float32').
-- Operator constructors mx.sym.<Op>{...} are built at load time for every registered
-- operator and alias through the introspection API (symbol/ops.lua).
-- Non-partial inference returns nil, nil, nil (and a message as a 4th value) when not
-- enough is known, as MXNet does; contradictions raise errors.
local ffi = require 'ffi'
local capi = require 'luamx.capi'
local C, check = capi.C, capi.check

local M = {}
local Symbol = {}
M.Symbol = Symbol
local methods = {}

local function release(h) C.lmx_symbol_free(h) end
local function wrap(h) return setmetatable({_h = ffi.gc(h, release)}, Symbol) end
M.wrap = wrap

local function is_symbol(x) return getmetatable(x) == Symbol end
M.is_symbol = is_symbol

local out_h = ffi.new('lmx_symbol *[1]')
local function new_from(level, fn, ...)
  local args = {...}
  local n = select('#', ...)
  args[n + 1] = out_h
  check(fn(unpack(args, 1, n + 1)), level + 1)
  return wrap(out_h[0])
end
-- Custom ops (luamx.operator) call back into Lua from this C call: keep it out of traces.
jit.off(new_from)

local function handle(s, level)
  if not is_symbol(s) then
    error('expected a Symbol, got ' .. type(s), (level or 2) + 1)
  end
  return s._h
end
M.handle = handle

-- ------------------------------------------------------------ value conversion --
local function fmt_number(v)
  if v == math.floor(v) and math.abs(v) < 2 ^ 53 then return ('%d'):format(v) end
  if v ~= v then return 'nan' end
  if v == math.huge then return 'inf' elseif v == -math.huge then return '-inf' end
  for p = 15, 17 do
    local s = ('%.' .. p .. 'g'):format(v)
    if tonumber(s) == v then return s end
  end
  return ('%.17g'):format(v)
end

--- MXNet's string form of a Lua parameter value.
local function param_string(v, key, level)
  local t = type(v)
  if t == 'string' then return v end
  if t == 'number' then return fmt_number(v) end
  if t == 'boolean' then return v and 'True' or 'False' end
  if t == 'table' and not is_symbol(v) then
    local parts = {}
    for i = 1, #v do parts[i] = param_string(v[i], key, level + 1) end
    if #parts == 1 then return '(' .. parts[1] .. ',)' end
    return '(' .. table.concat(parts, ', ') .. ')'
  end
  error(('parameter \'%s\': cannot convert a %s to a parameter value'):format(key, t), level + 1)
end
M.param_string = param_string

local function cstrings(list)
  local arr = ffi.new('const char *[?]', math.max(#list, 1))
  for i = 1, #list do arr[i - 1] = list[i] end
  return arr
end

-- ---------------------------------------------------------------- listings -----
local n_buf = ffi.new('int[1]')
local items_buf = ffi.new('const char *const *[1]')

local function list(s, kind, level)
  check(C.lmx_symbol_list(handle(s, level + 1), kind, n_buf, items_buf), level + 1)
  local r = {}
  for i = 1, n_buf[0] do r[i] = ffi.string(items_buf[0][i - 1]) end
  return r
end

--- Names of the arguments (inputs that are not auxiliary states), in graph order.
-- @return list of strings
-- @usage mx.sym.FullyConnected{data = mx.sym.var('data'), num_hidden = 10, name = 'fc'}:list_arguments()
-- -- {'data', 'fc_weight', 'fc_bias'}
function methods:list_arguments() return list(self, C.LMX_SYM_ARGUMENTS, 2) end
--- Names of the outputs (`name_output`, ...).
-- @return list of strings
function methods:list_outputs() return list(self, C.LMX_SYM_OUTPUTS, 2) end
--- Names of the auxiliary states (such as BatchNorm's `moving_mean`, `moving_var`).
-- @return list of strings
function methods:list_auxiliary_states() return list(self, C.LMX_SYM_AUX_STATES, 2) end
--- Names of all inputs: arguments and auxiliary states, in graph order.
-- @return list of strings
function methods:list_inputs() return list(self, C.LMX_SYM_INPUTS, 2) end

--- Shallow attributes of the head node (hidden keys appear as __k__ and k).
function methods:list_attr()
  local kv, r = list(self, C.LMX_SYM_ATTR, 2), {}
  for i = 1, #kv, 2 do r[kv[i]] = kv[i + 1] end
  return r
end

--- Every node's attributes: {node_name = {key = value}}.
function methods:attr_dict()
  local kv, r = list(self, C.LMX_SYM_ATTR_ALL, 2), {}
  for i = 1, #kv, 2 do
    local node, key = kv[i]:match('^(.*)%$([^$]*)$')
    r[node] = r[node] or {}
    r[node][key] = kv[i + 1]
  end
  return r
end

local str_buf = ffi.new('const char *[1]')
--- The value of attribute `key` on the head node.
-- @param key attribute name
-- @return string, or nil when not set
function methods:attr(key)
  if type(key) ~= 'string' then error('attr: key must be a string', 2) end
  check(C.lmx_symbol_get_attr(handle(self, 2), key, str_buf), 2)
  return str_buf[0] ~= nil and ffi.string(str_buf[0]) or nil
end

--- Sets attributes (values must be strings, as in MXNet's _set_attr).
function methods:_set_attr(kv)
  for k, v in pairs(kv) do
    if type(v) ~= 'string' then error(('_set_attr: value of \'%s\' must be a string'):format(tostring(k)), 2) end
    check(C.lmx_symbol_set_attr(handle(self, 2), k, v), 2)
  end
  return self
end
jit.off(methods._set_attr) -- re-parses the node: a Custom op calls back into Lua

local function sym_name(s)
  check(C.lmx_symbol_name(handle(s, 3), str_buf), 3)
  return str_buf[0] ~= nil and ffi.string(str_buf[0]) or nil
end

--- Number of outputs.
-- @return number
function methods:num_outputs()
  check(C.lmx_symbol_num_outputs(handle(self, 2), n_buf), 2)
  return n_buf[0]
end

--- A grouped symbol of every node's outputs (`name_output` for each), as MXNet's `get_internals`.
-- @return a Symbol
-- @usage local fc1 = net:get_internals()['fc1_output']
function methods:get_internals() return new_from(2, C.lmx_symbol_get_internals, handle(self, 2)) end

--- The inputs of the head node, grouped.
-- @return a Symbol, or nil for a variable
function methods:get_children()
  local c = new_from(2, C.lmx_symbol_get_children, handle(self, 2))
  if c:num_outputs() == 0 then return nil end
  return c
end

--- The graph as MXNet-compatible JSON.
-- @return string
function methods:tojson()
  check(C.lmx_symbol_tojson(handle(self, 2), str_buf), 2)
  return ffi.string(str_buf[0])
end

--- A readable dump of the graph.
-- @return string
function methods:debug_str()
  check(C.lmx_symbol_debug_str(handle(self, 2), str_buf), 2)
  return ffi.string(str_buf[0])
end

--- Writes the graph as JSON to a file (loadable by `mx.sym.load` and MXNet).
-- @param path file path
function methods:save(path)
  if type(path) ~= 'string' then error('save: path must be a string', 2) end
  check(C.lmx_symbol_save(handle(self, 2), path), 2)
end

--- A deep copy of the symbol.
-- @return a Symbol
function methods:copy() return new_from(2, C.lmx_symbol_copy, handle(self, 2)) end

--- Frees the symbol's handle now instead of at collection; using it afterwards raises.
function methods:free()
  local h = rawget(self, '_h')
  if h then
    ffi.gc(h, nil)
    C.lmx_symbol_free(h)
    rawset(self, '_h', nil)
  end
end

--- Output i (1-based) or the output whose list_outputs() name is `key`.
local function select_output(s, key, level)
  if type(key) == 'number' then
    if key % 1 ~= 0 then error(('Symbol index: output positions must be integers, got %s'):format(tostring(key)), level + 1) end
    return new_from(level + 1, C.lmx_symbol_get_output, handle(s, level + 1), key - 1)
  end
  local names, found = list(s, C.LMX_SYM_OUTPUTS, level + 1), nil
  for i, n in ipairs(names) do
    if n == key then
      if found then error(('there are multiple outputs with name \'%s\''):format(key), level + 1) end
      found = i
    end
  end
  if not found then
    error(('cannot find output that matches name \'%s\''):format(key), level + 1)
  end
  return select_output(s, found, level)
end
--- One output: by 1-based index or by output name (`s[i]` and `s.name_output` do the same).
-- @param self the Symbol
-- @param key index or output name
-- @return a Symbol
methods.get_output = function(self, key) return select_output(self, key, 2) end

Symbol.__index = function(s, k)
  local m = methods[k]
  if m then return m end
  if k == 'name' then return sym_name(s) end
  if k == '_h' then error('Symbol has been freed', 2) end
  if type(k) == 'number' or type(k) == 'string' then return select_output(s, k, 2) end
  return nil
end

-- Method and field names, for the REPL's completion (luamx.repl.complete reads __fields).
Symbol.__fields = setmetatable({name = true}, {__index = methods})

Symbol.__tostring = function(s)
  if not rawget(s, '_h') then return '<Symbol (freed)>' end
  local name = s.name
  if name then return ('<Symbol %s>'):format(name) end
  local parts = {}
  for i = 1, s:num_outputs() do parts[i] = s[i].name or '?' end
  return ('<Symbol group [%s]>'):format(table.concat(parts, ', '))
end

M.methods = methods
M.new_from = new_from
M.cstrings = cstrings
M.list = list

--- mx.sym.zeros(shape [, {dtype=, name=}]), ones, full(shape, value [, opts]): MXNet's
-- creation symbols (_zeros / _ones / _full). Dims of 0 are inferred from consumers.
local function creator(op, with_value)
  return function(shape, a, b)
    if type(shape) == 'table' and shape.shape ~= nil then return M[op](shape) end -- {shape=, ...}
    local value, opts = nil, a
    if with_value then value, opts = a, b end
    opts = opts or {}
    if type(opts) ~= 'table' or getmetatable(opts) ~= nil then
      require('luamx.check').fail('mx.sym.' .. op:sub(2), 'options', 'a table {dtype =, name =, attr =}', opts)
    end
    local args = {shape = shape, dtype = opts.dtype, name = opts.name, attr = opts.attr}
    if with_value then args.value = value end
    return M[op](args)
  end
end

--- Adds mx.sym / mx.symbol, mx.AttrScope / mx.attribute, mx.name to mx.
function M.install(mx)
  require('luamx.symbol.ops').install(M)
  require('luamx.symbol.infer').install(M)
  M.zeros, M.ones, M.full = creator('_zeros'), creator('_ones'), creator('_full', true)
  mx.sym, mx.symbol = M, M
  mx.AttrScope = M.AttrScope
  mx.attribute = {AttrScope = M.AttrScope}
  mx.name = {reset = M.reset_names}
end

return M
