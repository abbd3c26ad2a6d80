--- luamx.symbol.ops — symbol construction: Variable, operator constructors, Group,
-- AttrScope, arithmetic metamethods, composition by call, loading JSON.
--
-- Operator constructors accept MXNet's keyword style as one table
-- (mx.sym.FullyConnected{data = x, num_hidden = 6, name = 'fc', attr = {...}}) and
-- positional inputs (mx.sym.elemwise_add(a, b), or symbols in the table's array part).
-- Table keys holding Symbols are inputs by name; `name` and `attr` are special; every
-- other key is a parameter, converted to MXNet's string form. Keys are passed sorted,
-- so a given call always builds the same node. Variable-arity operators (those with a
-- num_args parameter) get num_args = number of positional inputs when it is not given.
local ffi = require 'ffi'
local capi = require 'luamx.capi'
local nd = require 'luamx.ndarray'
local C, check = capi.C, capi.check

local M = {}

--- Adds symbol creation (`Variable`/`var`, `Group`, `load`, `load_json`, one constructor per registered
-- operator), the arithmetic metamethods and composition by call (called by luamx.symbol).
-- @param S the luamx.symbol internals (`Symbol`, `methods`, `wrap`, `new_from`, ...)
function M.install(S)
  local Symbol, methods, wrap, is_symbol = S.Symbol, S.methods, S.wrap, S.is_symbol
  local new_from, handle, cstrings, param_string = S.new_from, S.handle, S.cstrings, S.param_string

  -- -------------------------------------------------------- registry access --
  -- op name (canonical or alias) -> true when the op has a num_args parameter
  local has_num_args = {}
  local function needs_num_args(opname) return has_num_args[opname] == true end

  -- ------------------------------------------------------------ creation -----
  local function compose(s, pos, named, level)
    local n = #pos + #named
    if n == 0 then
      check(C.lmx_symbol_compose(s._h, 0, nil, nil), level + 1)
      return s
    end
    local names = ffi.new('const char *[?]', n)
    local inputs = ffi.new('lmx_symbol *[?]', n)
    for i = 1, #pos do inputs[i - 1] = handle(pos[i], level + 1) end
    for i = 1, #named do
      names[#pos + i - 1] = named[i][1]
      inputs[#pos + i - 1] = handle(named[i][2], level + 1)
    end
    check(C.lmx_symbol_compose(s._h, n, names, inputs), level + 1)
    return s
  end
  -- Custom ops (luamx.operator) call back into Lua from this C call: keep it out of traces.
  jit.off(compose)

  -- An input given something other than a Symbol (data = 42) reads as an unknown
  -- parameter to the engine: name it as the input it is.
  local function misplaced(opname, kw)
    local params = {}
    for k, v in pairs(kw) do
      if type(k) == 'string' and k ~= 'name' and k ~= 'attr' and not is_symbol(v) then params[k] = v end
    end
    require('luamx.op').check_misplaced_inputs('mx.sym.' .. opname, opname, params, 'a Symbol')
  end

  --- Creates and composes op `opname`. pos: positional symbols; kw: keyword table.
  local function create(opname, pos, kw, level)
    level = level + 1
    local keys, vals, named = {}, {}, {}
    local sorted = {}
    for k in pairs(kw) do
      if type(k) == 'string' then sorted[#sorted + 1] = k
      elseif type(k) ~= 'number' then
        error(('%s: keys must be strings, got a %s'):format(opname, type(k)), level)
      end
    end
    table.sort(sorted)
    for _, k in ipairs(sorted) do
      local v = kw[k]
      if k == 'name' then
        if type(v) ~= 'string' then error(opname .. ': name must be a string', level) end
      elseif k == 'attr' then
        if type(v) ~= 'table' then error(opname .. ': attr must be a table of strings', level) end
        for ak, av in pairs(v) do
          if type(av) ~= 'string' then
            error(('%s: attr \'%s\' must be a string'):format(opname, tostring(ak)), level)
          end
          keys[#keys + 1], vals[#vals + 1] = ak, av
        end
      elseif is_symbol(v) then
        named[#named + 1] = {k, v}
      else
        local pok, str = pcall(param_string, v, k, level)
        if not pok then
          misplaced(opname, kw)
          error(('mx.sym.%s: %s'):format(opname, tostring(str):gsub('^[^:]*:%d+: ', '')), level)
        end
        keys[#keys + 1], vals[#vals + 1] = k, str
      end
    end
    if kw.num_args == nil and #pos > 0 and needs_num_args(opname) then
      keys[#keys + 1], vals[#vals + 1] = 'num_args', tostring(#pos)
    end
    local ok, s = pcall(new_from, level, C.lmx_symbol_new_op, opname, kw.name, #keys, cstrings(keys),
                        cstrings(vals))
    if not ok then
      misplaced(opname, kw)
      error(s, 0)
    end
    return compose(s, pos, named, level)
  end
  S.create = create

  --- Splits constructor arguments into positional symbols and the keyword table.
  local function split_args(opname, level, ...)
    local n = select('#', ...)
    local first = ...
    local pos, kw = {}, {}
    if n == 1 and type(first) == 'table' and not is_symbol(first) then
      kw = first
    else
      for i = 1, n do
        local a = select(i, ...)
        if is_symbol(a) then pos[#pos + 1] = a
        elseif i == n and type(a) == 'table' then kw = a
        else
          error(('%s: argument %d must be a Symbol (or a final table of keyword arguments), got %s')
                :format(opname, i, type(a)), level + 1)
        end
      end
    end
    for i = 1, #kw do
      if not is_symbol(kw[i]) then
        error(('%s: positional input %d must be a Symbol, got %s'):format(opname, i, type(kw[i])), level + 1)
      end
      pos[#pos + 1] = kw[i]
    end
    return pos, kw
  end

  local function constructor(opname)
    return function(...)
      local pos, kw = split_args(opname, 2, ...)
      return create(opname, pos, kw, 2)
    end
  end

  -- Build mx.sym.<Op> for every registered operator and alias (luamx.h "Operators").
  local cnt, str, idx = ffi.new('int[1]'), ffi.new('const char *[1]'), ffi.new('int[1]')
  local np = ffi.new('int[1]')
  check(C.lmx_op_registry_size(cnt))
  local canon = {}
  for i = 0, cnt[0] - 1 do
    check(C.lmx_op_get_name(i, str))
    local name = ffi.string(str[0])
    canon[i] = name
    check(C.lmx_op_info(i, nil, nil, nil, np, nil))
    for j = 0, np[0] - 1 do
      check(C.lmx_op_param_info(i, j, str, nil, nil, nil, nil))
      if ffi.string(str[0]) == 'num_args' then has_num_args[name] = true end
    end
    S[name] = constructor(name)
  end
  check(C.lmx_op_alias(-1, cnt, nil, nil))
  for i = 0, cnt[0] - 1 do
    check(C.lmx_op_alias(i, nil, str, idx))
    local alias = ffi.string(str[0])
    has_num_args[alias] = has_num_args[canon[idx[0]]]
    if rawget(S, alias) == nil then S[alias] = constructor(alias) end
  end

  -- ------------------------------------------------------------ variables ----
  function S.Variable(name, opts)
    local chk = require 'luamx.check'
    chk.type('mx.sym.Variable', 'name', name, 'string')
    opts = opts or {}
    chk.type('mx.sym.Variable', 'options', opts, 'table')
    if opts.shape ~= nil then
      local sh = opts.shape
      if type(sh) ~= 'table' or getmetatable(sh) ~= nil then chk.fail('mx.sym.Variable', 'shape', 'an array of integers', sh) end
      for i, d in ipairs(sh) do chk.number('mx.sym.Variable', ('shape[%d]'):format(i), d, {integer = true, min = 0}) end
    end
    chk.number('mx.sym.Variable', 'lr_mult', opts.lr_mult, true)
    chk.number('mx.sym.Variable', 'wd_mult', opts.wd_mult, true)
    local s = new_from(2, C.lmx_symbol_variable, name)
    local attrs = {}
    for k, v in pairs(opts.attr or {}) do
      if type(v) ~= 'string' then error(('Variable: attr \'%s\' must be a string'):format(k), 2) end
      attrs[k] = v
    end
    for k, v in pairs(opts) do
      if k == 'shape' then attrs.__shape__ = param_string(v, k, 2)
      elseif k == 'lr_mult' or k == 'wd_mult' then attrs['__' .. k .. '__'] = param_string(v, k, 2)
      elseif k == 'dtype' then attrs.__dtype__ = tostring(nd.dtype_code(v, 2))
      elseif k == 'init' then
        attrs.__init__ = type(v) == 'table' and v.dumps and v:dumps() or param_string(v, k, 2)
      elseif k == 'attr' then -- done above
      elseif type(k) == 'string' and k:match('^__.+__$') then attrs[k] = param_string(v, k, 2)
      else
        error(('Variable: attribute name=%s is not supported; additional attributes must start '
               .. 'and end with double underscores, e.g. __yourattr__'):format(tostring(k)), 2)
      end
    end
    local hk = {}
    for k in pairs(attrs) do hk[#hk + 1] = k end
    table.sort(hk)
    for _, k in ipairs(hk) do check(C.lmx_symbol_set_attr(s._h, k, attrs[k]), 2) end
    return s
  end
  S.var = S.Variable

  function S.Group(list)
    if type(list) ~= 'table' or is_symbol(list) then
      require('luamx.check').fail('mx.sym.Group', 'symbols', 'an array of Symbols', list)
    end
    local n = #list
    local arr = ffi.new('lmx_symbol *[?]', math.max(n, 1))
    for i = 1, n do
      if not is_symbol(list[i]) then require('luamx.check').fail('mx.sym.Group', ('symbols[%d]'):format(i), 'a Symbol', list[i]) end
      arr[i - 1] = handle(list[i], 2)
    end
    return new_from(2, C.lmx_symbol_group, n, arr)
  end

  function S.load(path)
    if type(path) ~= 'string' then error('mx.sym.load: path must be a string', 2) end
    return new_from(2, C.lmx_symbol_load, path)
  end

  function S.load_json(text)
    if type(text) ~= 'string' then error('mx.sym.load_json: expected a JSON string', 2) end
    return new_from(2, C.lmx_symbol_from_json, text, #text)
  end

  function S.reset_names() check(C.lmx_name_reset(), 2) end

  -- ------------------------------------------------------------ attr scopes --
  local function run_scope(attrs, fn, level)
    local keys, vals = {}, {}
    for k, v in pairs(attrs) do
      if type(k) ~= 'string' or type(v) ~= 'string' then
        error('AttrScope: attributes need to be strings', level + 1)
      end
      keys[#keys + 1], vals[#vals + 1] = k, v
    end
    check(C.lmx_attr_scope_push(#keys, cstrings(keys), cstrings(vals)), level + 1)
    local res = {pcall(fn)}
    C.lmx_attr_scope_pop()
    if not res[1] then error(res[2], 0) end
    return unpack(res, 2, table.maxn(res))
  end

  --- mx.AttrScope(attrs, fn) runs fn with the attributes applied to new symbols;
  -- mx.AttrScope(attrs) returns a scope to call later with a function.
  function S.AttrScope(attrs, fn)
    if type(attrs) ~= 'table' then error('AttrScope: expected a table of attributes', 2) end
    if fn ~= nil then
      if type(fn) ~= 'function' then error('AttrScope: second argument must be a function', 2) end
      return run_scope(attrs, fn, 2)
    end
    return setmetatable({attrs = attrs}, {__call = function(self, f) return run_scope(self.attrs, f, 2) end})
  end

  -- ------------------------------------------------------------ arithmetic ---
  local function binop(sym_op, scalar_op, rscalar_op, what)
    return function(a, b)
      if is_symbol(a) and is_symbol(b) then return create(sym_op, {a, b}, {}, 2) end
      if is_symbol(a) and type(b) == 'number' then return create(scalar_op, {a}, {scalar = b}, 2) end
      if type(a) == 'number' and is_symbol(b) then return create(rscalar_op, {b}, {scalar = a}, 2) end
      error(('Symbol %s: operands must be Symbols or numbers, got %s and %s'):format(what, type(a), type(b)), 2)
    end
  end
  Symbol.__add = binop('_Plus', '_PlusScalar', '_PlusScalar', '+')
  Symbol.__sub = binop('_Minus', '_MinusScalar', '_RMinusScalar', '-')
  Symbol.__mul = binop('_Mul', '_MulScalar', '_MulScalar', '*')
  Symbol.__div = binop('_Div', '_DivScalar', '_RDivScalar', '/')
  Symbol.__pow = binop('_Power', '_PowerScalar', '_RPowerScalar', '^')
  Symbol.__unm = function(a) return create('_MulScalar', {a}, {scalar = '-1.0'}, 2) end

  --- s{x = sym, name = 'n'}: MXNet's Symbol.__call__ — a copy with variables replaced.
  Symbol.__call = function(s, kw)
    if type(kw) ~= 'table' then
      error('Symbol call: expected a table of named inputs, got ' .. require('luamx.check').describe(kw), 2)
    end
    local c = s:copy()
    local named, pos = {}, {}
    for i = 1, #kw do pos[i] = kw[i] end
    for k, v in pairs(kw) do
      if k ~= 'name' and type(k) ~= 'number' then
        if not is_symbol(v) then
          error(('Symbol call: input \'%s\' must be a Symbol'):format(tostring(k)), 2)
        end
        named[#named + 1] = {k, v}
      end
    end
    table.sort(named, function(x, y) return x[1] < y[1] end)
    compose(c, pos, named, 2)
    if kw.name then check(C.lmx_symbol_set_attr(c._h, 'name', kw.name), 2) end
    return c
  end
  methods._compose = function(self, kw)
    local named = {}
    for k, v in pairs(kw) do if k ~= 'name' then named[#named + 1] = {k, v} end end
    table.sort(named, function(x, y) return x[1] < y[1] end)
    compose(self, {}, named, 2)
    if kw.name then check(C.lmx_symbol_set_attr(self._h, 'name', kw.name), 2) end
    return self
  end
  M.wrap = wrap
end

return M
