--- luamx.operator — operators written in Lua (mx.operator): MXNet's CustomOp / CustomOpProp.
--
--   mx.operator.register('softmax', {
--     list_arguments = function(self) return {'data', 'label'} end,
--     need_top_grad = false,                 -- a loss: backward gets no head gradient
--     infer_shape = function(self, in_shape)
--       return {in_shape[1], {in_shape[1][1]}}, {in_shape[1]}, {}
--     end,
--     create_operator = function(self, ctx, shapes, dtypes)
--       return {
--         forward = function(op, is_train, req, in_data, out_data, aux) ... end,
--         backward = function(op, req, out_grad, in_data, out_data, in_grad, aux) ... end,
--       }
--     end,
--   })
--   local net = mx.sym.Custom{data = fc, label = y, op_type = 'softmax', name = 'sm'}
--   local y = mx.nd.Custom(x, label, {op_type = 'softmax'})
--
-- Classes, the Lua way: a prop is a table of methods (or a function kwargs -> such a
-- table). Each Custom node gets its own instance: a table holding the node's string
-- arguments as fields (and as `self.kwargs`), whose missing methods come from the
-- registered table and then from mx.operator.CustomOpProp (MXNet's defaults). The
-- object create_operator returns falls back to mx.operator.CustomOp for `assign`.
-- An optional `init(self, kwargs)` runs when the instance is made (MXNet's __init__).
--
-- The engine side is the C operator "Custom" (src/ops/custom.c): each parse of a Custom
-- node calls `create` below for a prop id, inference and the kernels call back with
-- that id. Callbacks run on the thread that called the engine, during the call (a
-- group's workers relay to it). Arrays handed to forward/backward view the executor's
-- memory: no copy, valid only during the call (they are freed when it returns).
--
-- LuaJIT: a callback entered from C that a compiled trace called aborts the process
-- ("bad callback"). Every Lua function that calls into C where a Custom callback can
-- fire (symbol creation and loading, inference, bind, forward, backward, imperative
-- calls) is kept out of traces with jit.off, here and in the modules that own them.
-- Errors raised by the Lua code are caught in the callback (an error must not unwind
-- through C frames) and returned to the engine, which reports
-- "Custom '<node>' (op_type '<t>'): forward: <message>" from the call that ran it.
local ffi = require 'ffi'
local bit = require 'bit'
local capi = require 'luamx.capi'
local context = require 'luamx.context'
local nd = require 'luamx.ndarray'
local C, check, raise = capi.C, capi.check, capi.raise

local M = {}

local registry = {}   -- op_type -> prop (table of methods or constructor function)
local instances = {}  -- prop id -> instance
local next_id = 0
local names_keep = {} -- keeps the last `names` string alive until C copies it

-- ------------------------------------------------------------ base classes --------
--- Defaults of a prop (MXNet's CustomOpProp): one input 'data', one output 'output',
-- no aux states, output shapes and types equal to input 1's, the backward reading
-- everything it may (head gradients only when need_top_grad). One difference: the
-- default infer_shape gives aux states input 1's shape too (MXNet's gives none, so an
-- op with aux states must define infer_shape there).
local CustomOpProp = {need_top_grad = true}
M.CustomOpProp = CustomOpProp

--- Argument names (default {'data'}).
function CustomOpProp.list_arguments(_) return {'data'} end
--- Output names (default {'output'}).
function CustomOpProp.list_outputs(_) return {'output'} end
--- Aux state names (default none).
function CustomOpProp.list_auxiliary_states(_) return {} end
--- Shapes: in_shape (input shapes, {} where unknown) -> in, out, aux shape lists.
function CustomOpProp:infer_shape(in_shape)
  local out, aux = {}, {}
  for i = 1, #self:list_outputs() do out[i] = in_shape[1] end
  for i = 1, #self:list_auxiliary_states() do aux[i] = in_shape[1] end
  return in_shape, out, aux
end
--- Types: in_type (dtype names, false where unknown) -> in, out, aux dtype lists
-- (default: inputs as given, outputs and aux states of input 1's type, as MXNet).
function CustomOpProp:infer_type(in_type)
  local t = in_type[1]
  local out, aux = {}, {}
  for i = 1, #self:list_outputs() do out[i] = t end
  for i = 1, #self:list_auxiliary_states() do aux[i] = t end
  return in_type, out, aux
end
--- Which arrays backward reads: the ids it is given (MXNet's default: all, head
-- gradients only when need_top_grad).
function CustomOpProp:declare_backward_dependency(out_grad, in_data, out_data)
  local deps = {}
  if M._need_top_grad(self) then for _, v in ipairs(out_grad) do deps[#deps + 1] = v end end
  for _, v in ipairs(in_data) do deps[#deps + 1] = v end
  for _, v in ipairs(out_data) do deps[#deps + 1] = v end
  return deps
end
--- Must be defined by the prop: returns the operator object.
function CustomOpProp:create_operator()
  error(('prop of op_type \'%s\' defines no create_operator'):format(self.op_type), 0)
end

--- Base of operator objects: `self:assign(dst, req, src)` and default errors.
local CustomOp = {}
M.CustomOp = CustomOp

--- Writes src (an NDArray or a number) into dst as req says: 'null' does nothing,
-- 'write' / 'inplace' overwrite, 'add' accumulates (MXNet's CustomOp.assign).
function CustomOp.assign(_, dst, req, src)
  if req == 'null' then return end
  if req == 'write' or req == 'inplace' then
    if type(src) == 'number' then dst:fill(src) else dst:set(src) end
  elseif req == 'add' then
    local sum = dst + src
    dst:set(sum)
    sum:free()
  else
    raise(('CustomOp.assign: req must be null, write, inplace or add, got %s'):format(tostring(req)))
  end
end
--- forward(self, is_train, req, in_data, out_data, aux): must be defined by the operator.
function CustomOp.forward() error('the operator defines no forward', 0) end
--- backward(self, req, out_grad, in_data, out_data, in_grad, aux): must be defined by the
-- operator when it is trained.
function CustomOp.backward() error('the operator defines no backward', 0) end

function M._need_top_grad(inst)
  local v = inst.need_top_grad
  if type(v) == 'function' then v = v(inst) end
  return v ~= false
end

-- ----------------------------------------------------------- registration --------
--- Registers prop (a table of methods or a function(kwargs) returning one) as op_type;
-- registering the name again replaces it for nodes made from then on.
function M.register(op_type, prop)
  if type(op_type) ~= 'string' or op_type == '' then
    raise('mx.operator.register: op_type must be a non-empty string, got ' .. tostring(op_type))
  end
  if type(prop) ~= 'table' and type(prop) ~= 'function' then
    raise(('mx.operator.register: prop of \'%s\' must be a table of methods or a function, got %s')
      :format(op_type, type(prop)))
  end
  registry[op_type] = prop
  return prop
end

--- Registered op types, sorted.
function M.list()
  local t = {}
  for k in pairs(registry) do t[#t + 1] = k end
  table.sort(t)
  return t
end

-- ------------------------------------------------------------ instances --------
local function instantiate(op_type, kwargs)
  local prop = registry[op_type]
  if not prop then
    local known = M.list()
    error(('not registered (register it with mx.operator.register before creating or loading ' ..
      'the symbol; registered: %s)'):format(#known > 0 and table.concat(known, ', ') or 'none'), 0)
  end
  local inst
  if type(prop) == 'function' then
    inst = prop(kwargs)
    if type(inst) ~= 'table' then
      error('the prop constructor returned ' .. type(inst) .. ', expected a table', 0)
    end
    local mt = getmetatable(inst)
    if not mt then setmetatable(inst, {__index = CustomOpProp})
    elseif mt.__index == nil then mt.__index = CustomOpProp end
  else
    inst = {}
    for k, v in pairs(kwargs) do inst[k] = v end
    setmetatable(inst, {__index = function(_, k)
      local v = prop[k]
      if v == nil then v = CustomOpProp[k] end
      return v
    end})
    if inst.init then inst:init(kwargs) end
  end
  inst.kwargs, inst.op_type = kwargs, op_type
  return inst
end

local function name_list(inst, method)
  local t = inst[method](inst)
  if type(t) ~= 'table' then error(method .. ' must return a list of names, got ' .. type(t), 0) end
  for i, s in ipairs(t) do
    if type(s) ~= 'string' or s == '' or s:find(',', 1, true) then
      error(('%s: name %d must be a non-empty string without commas, got %s'):format(
        method, i, tostring(s)), 0)
    end
  end
  return t
end

local function ids(from, n)
  local t = {}
  for i = 1, n do t[i] = from + i - 1 end
  return t
end

local function drain_released()
  local buf, n = ffi.new('int64_t[64]'), ffi.new('int[1]')
  repeat
    C.lmx_custom_released(buf, 64, n)
    for i = 0, n[0] - 1 do instances[tonumber(buf[i])] = nil end
  until n[0] < 64
end

-- --------------------------------------------------------------- callbacks --------
local REQ = {[0] = 'null', 'write', 'inplace', 'add'}

local function fail(err)
  return C.lmx_custom_fail(C.LMX_ERR_ARG, tostring(err))
end

local function cb_create(op_type, node, n, keys, vals, info)
  local ok, err = pcall(function()
    drain_released()
    local kwargs = {}
    for i = 0, n - 1 do kwargs[ffi.string(keys[i])] = ffi.string(vals[i]) end
    local inst = instantiate(ffi.string(op_type), kwargs)
    inst.node = ffi.string(node)
    local ins = name_list(inst, 'list_arguments')
    local outs = name_list(inst, 'list_outputs')
    local aux = name_list(inst, 'list_auxiliary_states')
    if #outs == 0 then error('list_outputs must name at least one output', 0) end
    local nin, nout = #ins, #outs
    local deps = inst:declare_backward_dependency(ids(0, nout), ids(nout, nin), ids(nout + nin, nout))
    if type(deps) ~= 'table' then
      error('declare_backward_dependency must return a list of ids, got ' .. type(deps), 0)
    end
    local needs = 0
    for _, d in ipairs(deps) do
      if type(d) ~= 'number' or d < 0 or d >= 2 * nout + nin then
        error(('declare_backward_dependency: id %s is out of range 0..%d'):format(tostring(d), 2 * nout + nin - 1), 0)
      end
      needs = bit.bor(needs, d < nout and 4 or d < nout + nin and 1 or 2)
    end
    if not M._need_top_grad(inst) then needs = bit.band(needs, 3) end
    next_id = next_id + 1
    instances[next_id] = inst
    inst.num_inputs, inst.num_outputs, inst.num_aux = nin, nout, #aux
    local all = {}
    for _, l in ipairs {ins, outs, aux} do for _, s in ipairs(l) do all[#all + 1] = s end end
    names_keep[1] = table.concat(all, ',')
    info.prop, info.num_inputs, info.num_outputs, info.num_aux = next_id, nin, nout, #aux
    info.needs, info.names = needs, names_keep[1]
  end)
  if ok then return 0 end
  return fail(err)
end

local function instance_of(prop)
  local inst = instances[tonumber(prop)]
  if not inst then error('prop ' .. tostring(prop) .. ' is gone (internal error)', 0) end
  return inst
end

local function check_count(list, n, what, method)
  if type(list) ~= 'table' or #list ~= n then
    error(('%s must return %d %s, got %s'):format(method, n, what,
      type(list) == 'table' and tostring(#list) or type(list)), 0)
  end
end

local MAXD = tonumber(C.LMX_MAX_NDIM)

local function cb_infer_shape(prop, n, ndim, dims)
  local ok, err = pcall(function()
    local inst = instance_of(prop)
    local in_shape = {}
    for i = 0, inst.num_inputs - 1 do
      local s = {}
      for d = 0, ndim[i] - 1 do s[d + 1] = tonumber(dims[i * MAXD + d]) end
      in_shape[i + 1] = s
    end
    local ins, outs, aux = inst:infer_shape(in_shape)
    aux = aux or {}
    check_count(ins, inst.num_inputs, 'input shapes', 'infer_shape')
    check_count(outs, inst.num_outputs, 'output shapes', 'infer_shape')
    check_count(aux, inst.num_aux, 'aux shapes', 'infer_shape')
    local k = 0
    for _, list in ipairs {ins, outs, aux} do
      for _, s in ipairs(list) do
        if type(s) ~= 'table' or #s > MAXD then
          error(('infer_shape: shape %d must be a table of at most %d dims, got %s'):format(
            k + 1, MAXD, type(s) == 'table' and (#s .. ' dims') or type(s)), 0)
        end
        ndim[k] = #s
        for d = 1, #s do
          local v = s[d]
          if type(v) ~= 'number' or v < 0 or v % 1 ~= 0 or v > 2 ^ 62 then
            error(('infer_shape: shape %d has a bad dimension %s (expected an integer in '
              .. '[0, 2^62])'):format(k + 1, tostring(v)), 0)
          end
          dims[k * MAXD + d - 1] = v
        end
        k = k + 1
      end
    end
    assert(k == n)
  end)
  if ok then return 0 end
  return fail(err)
end

local function dtype_name(code) return code >= 0 and ffi.string(C.lmx_dtype_name(code)) or false end

local function cb_infer_type(prop, n, dtypes)
  local ok, err = pcall(function()
    local inst = instance_of(prop)
    local in_type = {}
    for i = 0, inst.num_inputs - 1 do in_type[i + 1] = dtype_name(dtypes[i]) end
    local ins, outs, aux = inst:infer_type(in_type)
    aux = aux or {}
    check_count(ins, inst.num_inputs, 'input types', 'infer_type')
    check_count(outs, inst.num_outputs, 'output types', 'infer_type')
    check_count(aux, inst.num_aux, 'aux types', 'infer_type')
    local k, code = 0, ffi.new('int[1]')
    for _, list in ipairs {ins, outs, aux} do
      for _, t in ipairs(list) do
        if t then
          if C.lmx_dtype_from_name(tostring(t), code) ~= 0 then
            error(('infer_type: unknown dtype %s'):format(tostring(t)), 0)
          end
          dtypes[k] = code[0]
        else
          dtypes[k] = -1
        end
        k = k + 1
      end
    end
    assert(k == n)
  end)
  if ok then return 0 end
  return fail(err)
end

-- Wraps count arrays from arrays[at ...] as NDArrays (false where NULL); adds them to
-- `made` so they are freed when the call returns.
local function lend(arrays, at, count, made)
  local t = {}
  for i = 1, count do
    local h = arrays[at + i - 1]
    if h ~= nil then
      C.lmx_ndarray_retain(h)
      local a = nd.wrap(h)
      made[#made + 1] = a
      t[i] = a
    else
      t[i] = false
    end
  end
  return t
end

local function reqs(req, n)
  local t = {}
  for i = 1, n do t[i] = REQ[req[i - 1]] or 'write' end
  return t
end

-- The operator object of an instance for these inputs on this context: create_operator
-- runs once per (context, input shapes, input dtypes), as MXNet makes one per executor.
local function operator_for(inst, dev_type, dev_id, in_data)
  local key = dev_type .. ':' .. dev_id
  local shapes, dtypes = {}, {}
  for i, a in ipairs(in_data) do
    if a then
      shapes[i], dtypes[i] = a.shape, a.dtype
      key = key .. '|' .. table.concat(shapes[i], 'x') .. dtypes[i]
    else
      shapes[i], dtypes[i] = false, false
    end
  end
  inst._ops = inst._ops or {}
  local op = inst._ops[key]
  if op then return op end
  local ctx = dev_type == tonumber(C.LMX_GPU) and context.gpu(dev_id) or context.cpu(dev_id)
  op = inst:create_operator(ctx, shapes, dtypes)
  if type(op) ~= 'table' then
    error('create_operator must return an operator table, got ' .. type(op), 0)
  end
  local mt = getmetatable(op)
  if not mt then setmetatable(op, {__index = CustomOp})
  elseif mt.__index == nil then mt.__index = CustomOp end
  inst._ops[key] = op
  return op
end

-- The callbacks run with recording off and training mode set to the call's is_train,
-- as MXNet runs a CustomOp's (the engine records the Custom call itself; recording the
-- Lua code's own calls would reject its in-place writes and pin the lent arrays).
local ag_rec, ag_train = ffi.new('int[1]'), ffi.new('int[1]')

local function run(body, is_train)
  local made = {}
  local st = nd.autograd_state
  local lua_rec, lua_train = st.recording, st.training
  C.lmx_autograd_set_state(0, is_train, ag_rec, ag_train)
  local c_rec, c_train = ag_rec[0], ag_train[0]
  st.recording, st.training = false, is_train ~= 0
  local ok, err = pcall(body, made)
  st.recording, st.training = lua_rec, lua_train
  C.lmx_autograd_set_state(c_rec, c_train, nil, nil)
  for _, a in ipairs(made) do a:free() end
  if ok then return 0 end
  return fail(err)
end

local function cb_forward(prop, is_train, dev_type, dev_id, req, arrays)
  return run(function(made)
    local inst = instance_of(prop)
    local nin, nout, naux = inst.num_inputs, inst.num_outputs, inst.num_aux
    local in_data = lend(arrays, 0, nin, made)
    local out_data = lend(arrays, nin, nout, made)
    local aux = lend(arrays, nin + nout, naux, made)
    local op = operator_for(inst, dev_type, dev_id, in_data)
    op:forward(is_train ~= 0, reqs(req, nout), in_data, out_data, aux)
  end, is_train)
end

local function cb_backward(prop, is_train, dev_type, dev_id, req, arrays)
  return run(function(made)
    local inst = instance_of(prop)
    local nin, nout, naux = inst.num_inputs, inst.num_outputs, inst.num_aux
    local out_grad = lend(arrays, 0, nout, made)
    local in_data = lend(arrays, nout, nin, made)
    local out_data = lend(arrays, nout + nin, nout, made)
    local in_grad = lend(arrays, nout + nin + nout, nin, made)
    local aux = lend(arrays, nout + 2 * nin + nout, naux, made)
    local op = operator_for(inst, dev_type, dev_id, in_data)
    op:backward(reqs(req, nin), out_grad, in_data, out_data, in_grad, aux)
  end, is_train)
end

-- The callbacks are GC roots for the life of the process (the engine may call them from
-- any later engine call), so they are made once and never freed.
local callbacks = ffi.new('lmx_custom_callbacks')
callbacks.create = ffi.cast('int (*)(const char *, const char *, int, const char *const *, ' ..
  'const char *const *, lmx_custom_info *)', cb_create)
callbacks.infer_shape = ffi.cast('int (*)(int64_t, int, int *, int64_t *)', cb_infer_shape)
callbacks.infer_type = ffi.cast('int (*)(int64_t, int, int *)', cb_infer_type)
callbacks.forward = ffi.cast('int (*)(int64_t, int, int, int, const int *, lmx_ndarray *const *)',
  cb_forward)
callbacks.backward = ffi.cast('int (*)(int64_t, int, int, int, const int *, lmx_ndarray *const *)',
  cb_backward)
check(C.lmx_custom_set_callbacks(callbacks), 1)
M._callbacks = callbacks

-- ----------------------------------------------------------- mx.nd.Custom --------
-- The C call is in its own function, kept out of traces (see the top of this file).
local function c_invoke(n, ck, cv, nin, hin, nout, hout, is_train)
  return C.lmx_imperative_invoke('Custom', n, ck, cv, nin, hin, nout, hout, is_train)
end
jit.off(c_invoke)

local op_mod = require 'luamx.op'

--- mx.nd.Custom(x1, x2, ..., {op_type = ..., <string kwargs>, out = ..., is_train = ...})
-- or mx.nd.Custom{op_type = ..., data = x, label = y, ...}: runs a registered Lua
-- operator on NDArrays. Inputs are positional (list_arguments order) or named by their
-- argument names. Returns the output NDArray, or a list of them when there are several.
function M.nd_custom(...)
  local nargs = select('#', ...)
  local kw = select(nargs, ...)
  if type(kw) ~= 'table' or nd.is_ndarray(kw) then raise('mx.nd.Custom: expected a final table with op_type') end
  local op_type = kw.op_type
  if type(op_type) ~= 'string' then
    raise('mx.nd.Custom: op_type must be a string, got ' .. type(op_type))
  end
  local kwargs, named = {}, {}
  for k, v in pairs(kw) do
    if type(k) == 'string' and k ~= 'out' and k ~= 'is_train' and k ~= 'name' then
      if nd.is_ndarray(v) then named[k] = v else kwargs[k] = op_mod.to_param_string(v) end
    end
  end
  local sk = {}
  for k in pairs(kwargs) do if k ~= 'op_type' then sk[#sk + 1] = k end end
  table.sort(sk)
  local inst_kw = {}
  for _, k in ipairs(sk) do inst_kw[k] = kwargs[k] end
  local ok, inst = pcall(instantiate, op_type, inst_kw)
  if not ok then raise(('mx.nd.Custom (op_type \'%s\'): %s'):format(op_type, tostring(inst))) end
  local ok2, args = pcall(name_list, inst, 'list_arguments')
  if not ok2 then raise(('mx.nd.Custom (op_type \'%s\'): %s'):format(op_type, tostring(args))) end
  local inputs = {}
  for i = 1, nargs - 1 do inputs[i] = select(i, ...) end
  for i = 1, #kw do inputs[#inputs + 1] = kw[i] end
  for i, name in ipairs(args) do
    if named[name] then
      if inputs[i] then raise(('mx.nd.Custom (op_type \'%s\'): input \'%s\' given twice'):format(op_type, name)) end
      inputs[i] = named[name]
      named[name] = nil
    end
  end
  local extra = next(named)
  if extra then
    raise(('mx.nd.Custom (op_type \'%s\'): unknown input \'%s\' (arguments: %s)'):format(
      op_type, extra, table.concat(args, ', ')))
  end
  if #inputs ~= #args then
    raise(('mx.nd.Custom (op_type \'%s\'): expected %d inputs (%s), got %d'):format(
      op_type, #args, table.concat(args, ', '), #inputs))
  end
  local hin = ffi.new('lmx_ndarray *[?]', #inputs + 1)
  for i, a in ipairs(inputs) do
    if not nd.is_ndarray(a) then
      raise(('mx.nd.Custom (op_type \'%s\'): input %d must be an NDArray, got %s'):format(op_type, i, type(a)))
    end
    hin[i - 1] = nd.handle(a, 2)
  end
  local nouts = #name_list(inst, 'list_outputs')
  local outs = kw.out
  if outs and nd.is_ndarray(outs) then outs = {outs} end
  local hout = ffi.new('lmx_ndarray *[?]', nouts + 1)
  for i = 1, nouts do hout[i - 1] = outs and outs[i] and nd.handle(outs[i], 2) or nil end
  local keys = {'op_type'}
  local vals = {op_type}
  for _, k in ipairs(sk) do keys[#keys + 1], vals[#vals + 1] = k, kwargs[k] end
  local ck, cv = ffi.new('const char *[?]', #keys), ffi.new('const char *[?]', #keys)
  for i = 1, #keys do ck[i - 1], cv[i - 1] = keys[i], vals[i] end
  local nout = ffi.new('int[1]', nouts)
  local is_train = kw.is_train
  if is_train == nil then is_train = nd.autograd_state.training end -- as every mx.nd op
  check(c_invoke(#keys, ck, cv, #inputs, hin, nout, hout, is_train and 1 or 0), 2)
  local res = {}
  for i = 1, nout[0] do res[i] = (outs and outs[i]) or nd.wrap(hout[i - 1]) end
  if #res == 1 then return res[1] end
  return res
end

--- Adds mx.operator and mx.nd.Custom (mx.sym.Custom is the registry's constructor: the
-- C calls it makes, in luamx.symbol, are kept out of traces there).
function M.install(mx)
  mx.operator = M
  mx.nd.Custom = M.nd_custom
end

return M
