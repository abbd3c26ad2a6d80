--- luamx.module.lua_module — modules computed by Lua functions: mx.mod.LuaModule and
--- mx.mod.LuaLossModule, the counterparts of MXNet 1.9's PythonModule and PythonLossModule
--- (python/mxnet/module/python_module.py); also reachable under those names.
--
--   local loss = mx.mod.LuaLossModule{grad_func = function(scores, labels)
--     return mx.nd.softmax(scores) - mx.nd.one_hot(labels, 10)   -- d loss / d scores
--   end}
--   seq:add(net_module):add(loss, {take_labels = true})
--
-- Invariants (MXNet's):
-- * A LuaModule has no parameters: init_params, init_optimizer, update and set_params do
--   nothing, get_params returns two empty tables. bind checks that the data (and label)
--   shapes carry its names in order and computes output_shapes with
--   `compute_output_shapes(self)`, which a subclass (or the `output_shapes` option, a
--   function(data_shapes, label_shapes) returning {{name, shape}, ...}) provides;
--   forward/backward/get_outputs/get_input_grads are the subclass's (or the options'
--   `forward(self, batch, is_train)` / `backward(self, out_grads)` functions').
-- * update_metric is ignored when the module was bound without labels; otherwise the
--   metric sees (labels, outputs). Pre-sliced labels are refused.
-- * Both take MXNet's positional arguments too: LuaModule(data_names, label_names,
--   output_names, logger), LuaLossModule(name, data_names, label_names, logger, grad_func).
-- * LuaLossModule{name='pyloss', data_names={'data'}, label_names={'softmax_label'},
--   grad_func=}: output '<name>_output' is its input unchanged; labels are kept in
--   training forwards; backward calls grad_func(scores, labels), whose result (an NDArray
--   or a nested Lua table, converted) is the input gradient. It takes no out_grads.
local capi = require 'luamx.capi'
local base = require 'luamx.module.base'
local nd = require 'luamx.ndarray'
local raise = capi.raise

local M = {}

local function names_list(who, v, default, what)
  if v == nil then v = default end
  if type(v) == 'string' then v = {v} end
  if type(v) ~= 'table' then raise(('%s: %s must be an array of strings, got %s'):format(who, what, type(v))) end
  local out = {}
  for i, n in ipairs(v) do
    if type(n) ~= 'string' then raise(('%s: %s[%d] must be a string, got %s'):format(who, what, i, type(n))) end
    out[i] = n
  end
  return out
end

-- ------------------------------------------------------------------ LuaModule -------
local LuaModule = base.class(base.BaseModule)
M.LuaModule = LuaModule

local FUNCS = {forward = true, backward = true, get_outputs = true, get_input_grads = true}

--- Sets up the fields of a LuaModule (for subclasses' constructors).
-- @param self the new instance
-- @param o options: data_names, label_names, output_names, logger, output_shapes,
-- forward, backward, get_outputs, get_input_grads
-- @param who the constructor's name for messages
function M.init(self, o, who)
  self.logger = o.logger
  self._data_names = names_list(who, o.data_names, nil, 'data_names')
  self._label_names = names_list(who, o.label_names, {}, 'label_names')
  self._output_names = names_list(who, o.output_names, nil, 'output_names')
  if o.output_shapes ~= nil and type(o.output_shapes) ~= 'function' then
    raise(('%s: output_shapes must be a function(data_shapes, label_shapes), got %s'):format(who, type(o.output_shapes)))
  end
  self._output_shapes_fn = o.output_shapes
  for k in pairs(FUNCS) do
    if o[k] ~= nil then
      if type(o[k]) ~= 'function' then raise(('%s: %s must be a function, got %s'):format(who, k, type(o[k]))) end
      self['_fn_' .. k] = o[k]
    end
  end
  self.binded, self.params_initialized, self.optimizer_initialized = false, false, false
  self.for_training, self.inputs_need_grad = false, false
end

local function new_lua_module(cls, o, ...)
  if type(o) == 'table' and #o > 0 then -- MXNet's positional form
    local label_names, output_names, logger = ...
    o = {data_names = o, label_names = label_names, output_names = output_names, logger = logger}
  end
  if type(o) ~= 'table' then raise('mx.mod.LuaModule: expected a table of options {data_names=, output_names=, ...}') end
  local self = setmetatable({}, cls)
  M.init(self, o, 'mx.mod.LuaModule')
  return self
end
setmetatable(LuaModule, {__index = base.BaseModule, __call = new_lua_module})

local P = LuaModule._props
--- Property `data_names`.
-- @param self the module
function P.data_names(self) return self._data_names end
--- Property `label_names`.
-- @param self the module
function P.label_names(self) return self._label_names end
--- Property `output_names`.
-- @param self the module
function P.output_names(self) return self._output_names end
--- Property `data_shapes` (bound).
-- @param self the module
function P.data_shapes(self) self:_check_ready('data_shapes') return self._data_shapes end
--- Property `label_shapes` (bound; nil without labels).
-- @param self the module
function P.label_shapes(self) self:_check_ready('label_shapes') return self._label_shapes end
--- Property `output_shapes` (bound).
-- @param self the module
function P.output_shapes(self) self:_check_ready('output_shapes') return self._output_shapes end

--- No parameters: two empty tables.
-- @return {}, {}
function LuaModule:get_params() return {}, {} end
--- Does nothing (no parameters); marks the parameters initialized.
function LuaModule:init_params() self.params_initialized = true end
--- Does nothing (no parameters).
function LuaModule:set_params() self.params_initialized = true end
--- Does nothing (no parameters); marks the optimizer initialized.
function LuaModule:init_optimizer() self.optimizer_initialized = true end
--- Does nothing (no parameters).
function LuaModule:update() end
--- Not supported by Lua modules; raises.
function LuaModule:install_monitor() raise('LuaModule:install_monitor: not supported by Lua modules') end

local function check_names(who, descs, names, what)
  if #descs ~= #names then
    raise(('%s: %s has %d entries, the module has %d name(s) %s'):format(who, what, #descs, #names, base.names_str(names)))
  end
  for i, d in ipairs(descs) do
    if d.name ~= names[i] then
      raise(('%s: %s[%d] is named %q, expected %q'):format(who, what, i, d.name, names[i]))
    end
  end
end

--- bind{data_shapes=, label_shapes=, for_training=true, inputs_need_grad=false,
-- force_rebind=false, grad_req='write'}: checks the names and computes output_shapes.
-- @param o the options
function LuaModule:bind(o)
  o = o or {}
  if self.binded and not o.force_rebind then
    self:_log('warning', 'Already bound, ignoring bind()')
    return
  end
  if o.grad_req ~= nil and o.grad_req ~= 'write' then
    raise(('LuaModule:bind: Lua modules only support grad_req = \'write\', got %s'):format(tostring(o.grad_req)))
  end
  local d = base.descs(o.data_shapes, 'LuaModule:bind', 'data_shapes')
  if d == nil then raise('LuaModule:bind: data_shapes is required') end
  check_names('LuaModule:bind', d, self._data_names, 'data_shapes')
  local l = base.descs(o.label_shapes, 'LuaModule:bind', 'label_shapes')
  if l and #l == 0 then l = nil end
  if l then check_names('LuaModule:bind', l, self._label_names, 'label_shapes') end
  self.for_training = o.for_training ~= false
  self.inputs_need_grad = o.inputs_need_grad and true or false
  self._data_shapes, self._label_shapes = d, l
  self._output_shapes = base.descs(self:compute_output_shapes(), 'LuaModule:bind', 'output shapes')
  self.binded = true
end

--- The output shapes for the bound data/label shapes: the `output_shapes` option's
-- result; subclasses override it.
-- @return list of {name, shape}
function LuaModule:compute_output_shapes()
  if not self._output_shapes_fn then
    raise('LuaModule:compute_output_shapes: give the output_shapes option or override compute_output_shapes')
  end
  return self._output_shapes_fn(self._data_shapes, self._label_shapes)
end

for k in pairs(FUNCS) do
  LuaModule[k] = function(self, ...)
    local f = self['_fn_' .. k]
    if not f then raise(('LuaModule:%s: give the %s option or override the method'):format(k, k)) end
    return f(self, ...)
  end
end

--- Updates the metric with (labels, outputs); ignored when bound without labels.
-- @param eval_metric an EvalMetric
-- @param labels the batch's label list
-- @param pre_sliced must be false
function LuaModule:update_metric(eval_metric, labels, pre_sliced)
  if self._label_shapes == nil then return end
  if pre_sliced then raise('LuaModule:update_metric: Lua modules do not support pre-sliced labels') end
  eval_metric:update(labels, self:get_outputs())
end

-- ------------------------------------------------------------------ LuaLossModule ---
local Loss = base.class(LuaModule)
M.LuaLossModule = Loss

local function new_loss(cls, o, ...)
  if type(o) == 'string' then -- MXNet's positional form
    local data_names, label_names, logger, grad_func = ...
    o = {name = o, data_names = data_names, label_names = label_names, logger = logger, grad_func = grad_func}
  end
  o = o or {}
  if type(o) ~= 'table' then raise('mx.mod.LuaLossModule: expected a table of options, got ' .. type(o)) end
  local who = 'mx.mod.LuaLossModule'
  local name = o.name or 'pyloss'
  if type(name) ~= 'string' then raise(who .. ': name must be a string, got ' .. type(name)) end
  local self = setmetatable({}, cls)
  M.init(self, {logger = o.logger, data_names = o.data_names or {'data'},
                label_names = o.label_names or {'softmax_label'}, output_names = {name .. '_output'}}, who)
  if #self._data_names ~= 1 then raise(who .. ': exactly one data name is needed, got ' .. #self._data_names) end
  if #self._label_names ~= 1 then raise(who .. ': exactly one label name is needed, got ' .. #self._label_names) end
  if o.grad_func ~= nil and type(o.grad_func) ~= 'function' then
    raise(who .. ': grad_func must be a function(scores, labels), got ' .. type(o.grad_func))
  end
  self._name, self._grad_func = name, o.grad_func
  return self
end
setmetatable(Loss, {__index = LuaModule, __call = new_loss})

--- One output '<name>_output' shaped as the data.
-- @return list of {name, shape}
function Loss:compute_output_shapes() return {{self._name .. '_output', self._data_shapes[1].shape}} end

--- Keeps the scores (and, in training, the labels).
-- @param batch a DataBatch
-- @param is_train defaults to for_training
function Loss:forward(batch, is_train)
  self:_check_ready('LuaLossModule:forward')
  self._scores = batch.data[1]
  if is_train == nil then is_train = self.for_training end
  if is_train then
    if not batch.label or not batch.label[1] then raise('LuaLossModule:forward: training needs the batch\'s label') end
    self._labels = batch.label[1]
  end
end

--- The scores of the last forward.
-- @param merge must be true or nil
-- @return {scores}
function Loss:get_outputs(merge)
  if merge == false then raise('LuaLossModule:get_outputs: merge = false is not supported') end
  return {self._scores}
end

--- Computes the input gradient with grad_func(scores, labels).
-- @param out_grads must be nil (a loss module is a head)
function Loss:backward(out_grads)
  if out_grads ~= nil then raise('LuaLossModule:backward: For a loss module, out_grads should be nil') end
  if not self.for_training then raise('LuaLossModule:backward: the module is bound with for_training = false') end
  if not self._grad_func then raise('LuaLossModule:backward: no grad_func was given (or override backward)') end
  local g = self._grad_func(self._scores, self._labels)
  if not nd.is_ndarray(g) then
    if type(g) ~= 'table' then raise('LuaLossModule:backward: grad_func must return an NDArray or a table, got ' .. type(g)) end
    g = nd.array(g)
  end
  if not base.same_shape(g.shape, self._scores.shape) then
    raise(('LuaLossModule:backward: grad_func returned shape %s for scores of shape %s')
      :format(base.shape_str(g.shape), base.shape_str(self._scores.shape)))
  end
  self._scores_grad = g
end

--- The input gradient of the last backward.
-- @param merge must be true or nil
-- @return {grad}
function Loss:get_input_grads(merge)
  if merge == false then raise('LuaLossModule:get_input_grads: merge = false is not supported') end
  return {self._scores_grad}
end

function Loss.__tostring(self) return ('<LuaLossModule %s>'):format(self._name) end
function LuaModule.__tostring(self) return ('<LuaModule %s>'):format(base.names_str(self._output_names)) end

return M
