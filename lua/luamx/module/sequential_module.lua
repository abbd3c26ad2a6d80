--- luamx.module.sequential_module — mx.mod.SequentialModule: modules chained so that the
--- outputs of one are the data of the next (MXNet 1.9 python/mxnet/module/sequential_module.py).
--
--   local seq = mx.mod.SequentialModule()
--   seq:add(mx.mod.Module{symbol = features, label_names = {}})
--      :add(mx.mod.Module{symbol = classifier, data_names = {'feat'}}, {take_labels = true, auto_wiring = true})
--   seq:fit(train_iter, {num_epoch = 5, optimizer_params = {learning_rate = 0.1}})
--
-- Invariants (MXNet's):
-- * add(module [, {take_labels=, auto_wiring=}]) appends and resets the chain to unbound.
--   Only modules added with take_labels get the label shapes and update the metric; the
--   chain's label_shapes is nil when none takes labels.
-- * bind: module i > 1 is bound with inputs_need_grad = for_training, with the previous
--   module's output shapes as data shapes (renamed to its own data_names when auto_wiring;
--   then the counts must match). shared_module is not supported.
-- * forward passes a shallow copy of the batch along, replacing data with the previous
--   outputs; provide_data is rewritten with the next module's data names (luamx's Module
--   checks names as well as shapes). backward runs in reverse, each module's input
--   gradients being the previous module's out_grads.
-- * init_params gives every module the parameters it knows (luamx's Module refuses extra
--   names) and then refuses a parameter name used by two modules, with MXNet's message.
local capi = require 'luamx.capi'
local base = require 'luamx.module.base'
local raise = capi.raise

local M = {}

local Seq = base.class(base.BaseModule)
M.SequentialModule = Seq

local META = {take_labels = true, auto_wiring = true}

local function new(_, o)
  if type(o) == 'function' then o = {logger = o} end -- MXNet's positional logger
  o = o or {}
  if type(o) ~= 'table' then raise('mx.mod.SequentialModule: expected a table of options {logger = ...}, got ' .. type(o)) end
  for k in pairs(o) do
    if k ~= 'logger' then raise(('mx.mod.SequentialModule: unknown option %s'):format(tostring(k))) end
  end
  local self = setmetatable({logger = o.logger, _modules = {}, _metas = {}}, Seq)
  self.binded, self.params_initialized, self.optimizer_initialized = false, false, false
  self.for_training, self.inputs_need_grad = false, false
  return self
end
setmetatable(Seq, {__index = base.BaseModule, __call = new})

--- Appends a module to the chain; the chain must be bound and initialized again.
-- @param module a module (Module, BucketingModule, LuaModule, SequentialModule, ...)
-- @param meta optional table: `take_labels` (give it the labels), `auto_wiring` (rename
-- the previous outputs to its data names)
-- @return self, for chaining
-- @usage seq:add(m1):add(m2, {take_labels = true, auto_wiring = true})
function Seq:add(module, meta)
  if type(module) ~= 'table' or type(module.bind) ~= 'function' or type(module.forward) ~= 'function' then
    raise('SequentialModule:add: module must be a module (with bind and forward), got ' .. type(module))
  end
  meta = meta or {}
  if type(meta) ~= 'table' then raise('SequentialModule:add: meta must be a table, got ' .. type(meta)) end
  for k in pairs(meta) do
    if not META[k] then raise(('SequentialModule:add: Unknown meta "%s", a typo?'):format(tostring(k))) end
  end
  self._modules[#self._modules + 1] = module
  self._metas[#self._metas + 1] = meta
  self.binded, self.params_initialized, self.optimizer_initialized = false, false, false
  return self
end

local P = Seq._props
--- Property `data_names`: the first module's.
-- @param self the SequentialModule
function P.data_names(self) local m = self._modules[1] return m and m.data_names or {} end
--- Property `output_names`: the last module's.
-- @param self the SequentialModule
function P.output_names(self) local m = self._modules[#self._modules] return m and m.output_names or {} end
--- Property `data_shapes`: the first module's (bound).
-- @param self the SequentialModule
function P.data_shapes(self) self:_check_ready('data_shapes') return self._modules[1].data_shapes end
--- Property `label_shapes`: the chain's (nil when no module takes labels).
-- @param self the SequentialModule
function P.label_shapes(self) self:_check_ready('label_shapes') return self._label_shapes end
--- Property `output_shapes`: the last module's (bound).
-- @param self the SequentialModule
function P.output_shapes(self) self:_check_ready('output_shapes') return self._modules[#self._modules].output_shapes end
--- Property `symbol`: the last module's symbol, if it has one (epoch-end callbacks get it).
-- @param self the SequentialModule
function P.symbol(self) local m = self._modules[#self._modules] return m and m.symbol end

--- bind{data_shapes=, label_shapes=, for_training=true, inputs_need_grad=false,
-- force_rebind=false, grad_req='write'}: binds every module in turn.
-- @param o the options (as Module:bind; shared_module is refused)
function Seq:bind(o)
  o = o or {}
  if self.binded and not o.force_rebind then
    self:_log('warning', 'Already bound, ignoring bind()')
    return
  end
  local for_training = o.for_training ~= false
  if o.inputs_need_grad and not for_training then raise('SequentialModule:bind: inputs_need_grad = true requires for_training = true') end
  if o.shared_module ~= nil then raise('SequentialModule:bind: Shared module is not supported') end
  if #self._modules == 0 then raise('SequentialModule:bind: Attempting to bind an empty SequentialModule') end
  if o.data_shapes == nil then raise('SequentialModule:bind: data_shapes is required') end
  local label_shapes = base.descs(o.label_shapes, 'SequentialModule:bind', 'label_shapes')
  local data_shapes = base.descs(o.data_shapes, 'SequentialModule:bind', 'data_shapes')
  self.binded = true
  self.for_training, self.inputs_need_grad = for_training, o.inputs_need_grad and true or false
  self._label_shapes = label_shapes
  local anyone_needs_label = false
  for i, module in ipairs(self._modules) do
    local meta = self._metas[i]
    local my_labels = nil
    if meta.take_labels then my_labels, anyone_needs_label = label_shapes, true end
    if meta.auto_wiring then
      local names = module.data_names
      if #names ~= #data_shapes then
        self.binded = false
        raise(('SequentialModule:bind: auto_wiring: module %d has %d data names %s but gets %d input(s)')
          :format(i, #names, base.names_str(names), #data_shapes))
      end
      local renamed = {}
      for j, d in ipairs(data_shapes) do renamed[j] = {names[j], d.shape or d[2]} end
      data_shapes = renamed
    end
    local ok, err = pcall(module.bind, module, {data_shapes = data_shapes, label_shapes = my_labels,
      for_training = for_training, inputs_need_grad = (o.inputs_need_grad or (for_training and i > 1)) and true or false,
      force_rebind = o.force_rebind, grad_req = o.grad_req})
    if not ok then
      self.binded = false
      error(err, 0)
    end
    data_shapes = base.descs(module.output_shapes, 'SequentialModule:bind', 'output_shapes')
  end
  if not anyone_needs_label then self._label_shapes = nil end
end

-- The part of `params` that `module` knows (all of it for modules that do not say).
local function own(module, params, names)
  if params == nil or names == nil then return params end
  local out = {}
  for _, n in ipairs(names) do out[n] = params[n] end
  return out
end

--- init_params{initializer=, arg_params=, aux_params=, allow_missing=false,
-- force_init=false, allow_extra=false}: initializes every module, then checks that no
-- parameter name is used twice.
-- @param o the options (as Module:init_params)
function Seq:init_params(o)
  o = o or {}
  if self.params_initialized and not o.force_init then return end
  self:_check_ready('SequentialModule:init_params')
  local claimed = {}
  for _, module in ipairs(self._modules) do
    local pn, an = module._param_names, module._aux_names
    for _, n in ipairs(pn or {}) do claimed[n] = true end
    for _, n in ipairs(an or {}) do claimed[n] = true end
    module:init_params{initializer = o.initializer, arg_params = own(module, o.arg_params, pn),
      aux_params = own(module, o.aux_params, an), allow_missing = o.allow_missing,
      force_init = o.force_init, allow_extra = o.allow_extra or pn == nil}
  end
  if not o.allow_extra then
    for what, given in pairs({arg_params = o.arg_params, aux_params = o.aux_params}) do
      for n in pairs(given or {}) do
        if not claimed[n] then
          raise(('SequentialModule:init_params: %s has %q, which no module of the chain uses (pass allow_extra = true to ignore it)')
            :format(what, n))
        end
      end
    end
  end
  local arg_owner, aux_owner = {}, {}
  local function claim(known, names, i)
    for n in pairs(names) do
      if known[n] then
        raise(('SequentialModule:init_params: Duplicated parameter names: name "%s" in layer %d (%s) is already used in layer %d (%s).')
          :format(n, i - 1, tostring(self._modules[i]), known[n] - 1, tostring(self._modules[known[n]])))
      end
      known[n] = i
    end
  end
  for i, module in ipairs(self._modules) do
    local arg, aux = module:get_params()
    claim(arg_owner, arg or {}, i)
    claim(aux_owner, aux or {}, i)
  end
  self.params_initialized = true
end

--- set_params(arg_params, aux_params [, {allow_missing=, force_init=true, allow_extra=}]):
-- hands each module its own parameters.
-- @param arg_params table name -> NDArray
-- @param aux_params table name -> NDArray
-- @param o options as Module:set_params
function Seq:set_params(arg_params, aux_params, o)
  o = o or {}
  self:_check_ready('SequentialModule:set_params')
  for _, module in ipairs(self._modules) do
    local pn, an = module._param_names, module._aux_names
    module:set_params(own(module, arg_params, pn), own(module, aux_params, an),
      {allow_missing = o.allow_missing, force_init = o.force_init, allow_extra = o.allow_extra or pn == nil})
  end
  self.params_initialized = true
end

--- get_params() -> arg_params, aux_params: the union of the modules' parameters.
-- @return arg_params, aux_params
function Seq:get_params()
  self:_check_ready('SequentialModule:get_params', true)
  local arg, aux = {}, {}
  for _, module in ipairs(self._modules) do
    local a, x = module:get_params()
    for k, v in pairs(a or {}) do arg[k] = v end
    for k, v in pairs(x or {}) do aux[k] = v end
  end
  return arg, aux
end

--- init_optimizer{kvstore='local', optimizer='sgd', optimizer_params=, force_init=false}:
-- the same optimizer settings for every module (each has its own optimizer state).
-- @param o the options (as Module:init_optimizer)
function Seq:init_optimizer(o)
  o = o or {}
  self:_check_ready('SequentialModule:init_optimizer', true)
  if self.optimizer_initialized and not o.force_init then
    self:_log('warning', 'optimizer already initialized, ignoring.')
    return
  end
  for _, module in ipairs(self._modules) do
    module:init_optimizer{kvstore = o.kvstore, optimizer = o.optimizer, optimizer_params = o.optimizer_params,
                          force_init = o.force_init}
  end
  self.optimizer_initialized = true
end

--- forward(batch [, is_train]): runs the chain, each module on the previous outputs.
-- @param batch a DataBatch
-- @param is_train defaults to each module's for_training
function Seq:forward(batch, is_train)
  self:_check_ready('SequentialModule:forward', true)
  if type(batch) ~= 'table' then raise('SequentialModule:forward: expected a DataBatch, got ' .. type(batch)) end
  local b = setmetatable({}, getmetatable(batch))
  for k, v in pairs(batch) do b[k] = v end
  local n = #self._modules
  for i, module in ipairs(self._modules) do
    module:forward(b, is_train)
    if i == n then break end
    b.data = module:get_outputs()
    local names = self._modules[i + 1].data_names
    local pd = {}
    for j, a in ipairs(b.data) do pd[j] = {names[j] or ('data%d'):format(j), a.shape} end
    b.provide_data = pd
  end
end

--- backward([out_grads]): runs the chain backwards; each module's input gradients are
-- the previous module's out_grads.
-- @param out_grads gradients of the last module's outputs (nil for loss heads)
function Seq:backward(out_grads)
  self:_check_ready('SequentialModule:backward', true)
  for i = #self._modules, 1, -1 do
    local module = self._modules[i]
    module:backward(out_grads)
    if i == 1 then break end
    out_grads = module:get_input_grads()
  end
end

--- update(): every module's optimizer step.
function Seq:update()
  self:_check_ready('SequentialModule:update', true)
  if not self.optimizer_initialized then raise('SequentialModule:update: the optimizer is not initialized; call init_optimizer first') end
  for _, module in ipairs(self._modules) do module:update() end
end

--- The last module's outputs.
-- @param merge as Module:get_outputs
-- @return list of NDArrays
function Seq:get_outputs(merge)
  self:_check_ready('SequentialModule:get_outputs', true)
  return self._modules[#self._modules]:get_outputs(merge)
end

--- The first module's input gradients (bind with inputs_need_grad = true).
-- @param merge as Module:get_input_grads
-- @return list of NDArrays
function Seq:get_input_grads(merge)
  self:_check_ready('SequentialModule:get_input_grads', true)
  if not self.inputs_need_grad then raise('SequentialModule:get_input_grads: bind with inputs_need_grad = true first') end
  return self._modules[1]:get_input_grads(merge)
end

--- Updates the metric through every module added with take_labels.
-- @param eval_metric an EvalMetric
-- @param labels the batch's label list
-- @param pre_sliced whether the labels are already split per device
function Seq:update_metric(eval_metric, labels, pre_sliced)
  for i, module in ipairs(self._modules) do
    if self._metas[i].take_labels then module:update_metric(eval_metric, labels, pre_sliced) end
  end
end

--- Installs a Monitor on every module.
-- @param mon an mx.monitor.Monitor
function Seq:install_monitor(mon)
  for _, module in ipairs(self._modules) do module:install_monitor(mon) end
end

function Seq.__tostring(self)
  return ('<SequentialModule of %d module(s)>'):format(#self._modules)
end

return M
