--- luamx.module.bucketing_module — mx.mod.BucketingModule: one Module per bucket key, all
--- sharing parameters, gradients, optimizer state and memory with the default bucket
--- (MXNet 1.9 python/mxnet/module/bucketing_module.py).
--
--   local function sym_gen(len) ... return sym, {'data'}, {'softmax_label'} end
--   local mod = mx.mod.BucketingModule{sym_gen = sym_gen, default_bucket_key = 60}
--   mod:fit(bucket_iter, {num_epoch = 5, eval_metric = mx.metric.Perplexity(0)})
--
-- Invariants:
-- * sym_gen is called once per bucket key over the module's life (the result is cached
--   with the key's data/label names), and must return a Symbol first.
-- * The default bucket is bound first and without sharing; every other bucket is bound
--   with shared_module = the default bucket's module (not the current one, as MXNet's
--   PR #5133), so parameter arrays, gradient arrays (grad_req 'add' accumulates across
--   buckets), the CPU parameter dicts and the executor memory pool are the default's.
--   Choose the largest bucket as the default so every other bucket fits in its memory.
-- * A bucket whose symbol has parameters (or aux states) the default bucket lacks is
--   bound against the earlier bucket that has most of them, so they are shared with
--   every bucket holding them; one no bound bucket has yet is created in the shared
--   parameter dicts and set from the module's initializer (the one init_params was
--   given, Uniform(0.01) by default) or from loaded parameters, when the bucket is first
--   bound. get_params (and so save_checkpoint) includes them.
-- * init_optimizer runs on the default bucket; every other bucket borrows it (and later
--   buckets borrow at bind), so optimizer state is one: shared parameters keep the
--   default bucket's updater indices, a bucket's own parameters are keyed by name.
-- * forward(batch) switches to batch.bucket_key (default key when nil) by itself.
-- * Checkpoints (MXNet's §4 layout): prefix-%04d.params, one prefix-<key>-symbol.json
--   per bound bucket, prefix.buckets (an NDArray list file with one int32 array of the
--   bucket keys; keys must then be integers), prefix-%04d.states when asked, and
--   prefix-%04d.manifest last, which commits the set (luamx.manifest).
local capi = require 'luamx.capi'
local nd = require 'luamx.ndarray'
local base = require 'luamx.module.base'
local manifest = require 'luamx.manifest'
local modmod = require 'luamx.module.module'
local raise = capi.raise
local Module = modmod.Module

local M = {}
local BucketingModule = base.class(base.BaseModule)
M.BucketingModule = BucketingModule

local function key_str(k) return tostring(k) end

--- mx.mod.BucketingModule{sym_gen=, default_bucket_key=, context=, work_load_list=,
--- fixed_param_names=, state_names=, logger=}
local function new(_, o)
  if type(o) ~= 'table' then raise('mx.mod.BucketingModule: expected a table of options {sym_gen = ..., ...}') end
  if type(o.sym_gen) ~= 'function' then
    raise('mx.mod.BucketingModule: sym_gen must be a function(key) returning symbol, data_names, label_names; got ' .. type(o.sym_gen))
  end
  if o.default_bucket_key == nil then raise('mx.mod.BucketingModule: default_bucket_key is required') end
  local self = setmetatable({}, BucketingModule)
  self.logger = o.logger
  self._sym_gen, self._default_bucket_key = o.sym_gen, o.default_bucket_key
  self._gen_cache = {}
  self._context, self._work_load_list = o.context, o.work_load_list
  self._fixed_param_names, self._state_names = o.fixed_param_names, o.state_names
  self._buckets, self._bucket_order = {}, {}
  self._curr_module, self._curr_bucket_key = nil, nil
  self._params_dirty = false
  self.binded, self.for_training, self.inputs_need_grad = false, false, false
  self.params_initialized, self.optimizer_initialized = false, false
  local sym, dn, ln = self:_call_sym_gen(self._default_bucket_key)
  self._default_symbol, self._default_data_names, self._default_label_names = sym, dn, ln
  return self
end
setmetatable(BucketingModule, {__index = base.BaseModule, __call = new})

--- symbol, data_names, label_names for `key` (sym_gen called once per key).
function BucketingModule:_call_sym_gen(key)
  local c = self._gen_cache[key]
  if c then return c[1], c[2], c[3] end
  local sym, data_names, label_names = self._sym_gen(key)
  if not require('luamx.symbol').is_symbol(sym) then
    raise(('BucketingModule: sym_gen(%s) must return a Symbol (then data_names, label_names), got %s')
      :format(key_str(key), type(sym)))
  end
  data_names = data_names or {'data'}
  label_names = label_names or {'softmax_label'}
  if type(data_names) ~= 'table' or type(label_names) ~= 'table' then
    raise(('BucketingModule: sym_gen(%s) must return data_names and label_names as arrays of names')
      :format(key_str(key)))
  end
  self._gen_cache[key] = {sym, data_names, label_names}
  return sym, data_names, label_names
end

local function make_module(self, key)
  local sym, dn, ln = self:_call_sym_gen(key)
  return Module{symbol = sym, data_names = dn, label_names = ln, logger = self.logger,
                context = self._context, work_load_list = self._work_load_list,
                fixed_param_names = self._fixed_param_names, state_names = self._state_names}
end

-- ------------------------------------------------------------------ properties -----
local P = BucketingModule._props
--- Property `default_bucket_key`: the bucket key given to the constructor.
-- @param self the BucketingModule
function P.default_bucket_key(self) return self._default_bucket_key end
--- Property `symbol`: the current bucket's symbol (the default bucket's before binding).
-- @param self the BucketingModule
function P.symbol(self)
  if self._curr_module then return self._curr_module.symbol end
  return self._default_symbol
end
--- Property `data_names`: the current bucket's data names (the default ones before binding).
-- @param self the BucketingModule
function P.data_names(self)
  if self.binded then return self._curr_module.data_names end
  return self._default_data_names
end
--- Property `output_names`: the current bucket's output names (the default symbol's before binding).
-- @param self the BucketingModule
function P.output_names(self)
  if self.binded then return self._curr_module.output_names end
  return self._default_symbol:list_outputs()
end
--- Property `data_shapes`: the current bucket's data descriptions (needs a bound module).
-- @param self the BucketingModule
function P.data_shapes(self) self:_check_ready('data_shapes') return self._curr_module.data_shapes end
--- Property `label_shapes`: the current bucket's label descriptions (needs a bound module).
-- @param self the BucketingModule
function P.label_shapes(self) self:_check_ready('label_shapes') return self._curr_module.label_shapes end
--- Property `output_shapes`: the current bucket's output shapes (needs a bound module).
-- @param self the BucketingModule
function P.output_shapes(self) self:_check_ready('output_shapes') return self._curr_module.output_shapes end
--- {key = Module} of the buckets created so far.
function P.buckets(self) return self._buckets end
--- Property `bucket_key`: the key of the current bucket.
-- @param self the BucketingModule
function P.bucket_key(self) return self._curr_bucket_key end

-- ------------------------------------------------------------------ binding --------
function BucketingModule:_reset_bind()
  self.binded = false
  self._buckets, self._bucket_order = {}, {}
  self._curr_module, self._curr_bucket_key = nil, nil
end

local function add_bucket(self, key, mod)
  self._buckets[key] = mod
  self._bucket_order[#self._bucket_order + 1] = key
end

--- bind{data_shapes=, label_shapes=, for_training=true, inputs_need_grad=false,
--- force_rebind=false, grad_req='write'}: binds the default bucket.
function BucketingModule:bind(o)
  o = o or {}
  local arg_params, aux_params
  if self.params_initialized and o.force_rebind then arg_params, aux_params = self:get_params() end
  if o.force_rebind then self:_reset_bind() end
  if self.binded then
    self:_log('warning', 'Already bound, ignoring bind()')
    return
  end
  if o.shared_module ~= nil then raise('BucketingModule.bind: shared_module is not supported') end
  self.for_training = o.for_training ~= false
  self.inputs_need_grad = o.inputs_need_grad and true or false
  self._grad_req = o.grad_req or 'write'
  local mod = make_module(self, self._default_bucket_key)
  self._bucket_names, self._bucket_attrs = self._bucket_names or {}, self._bucket_attrs or {}
  mod._bucket_names, mod._bucket_attrs = self._bucket_names, self._bucket_attrs
  mod:bind{data_shapes = o.data_shapes, label_shapes = o.label_shapes, for_training = self.for_training,
           inputs_need_grad = self.inputs_need_grad, grad_req = self._grad_req}
  add_bucket(self, self._default_bucket_key, mod)
  self._curr_module, self._curr_bucket_key = mod, self._default_bucket_key
  self.binded = true
  if self._monitor then mod:install_monitor(self._monitor) end
  if self._preloaded then
    mod._arg_params, mod._aux_params = self._preloaded[1], self._preloaded[2]
    mod.params_initialized = true
    mod._exec_group:set_params(mod._arg_params, mod._aux_params, true)
    self._preloaded = nil
  end
  if arg_params then
    self:set_params(arg_params, aux_params)
    -- other buckets' own parameters wait in the dicts for their buckets' next bind
    for k, v in pairs(arg_params) do if mod._arg_params[k] == nil then mod._arg_params[k] = v:copy() end end
    for k, v in pairs(aux_params or {}) do if mod._aux_params[k] == nil then mod._aux_params[k] = v:copy() end end
  end
end

-- Names of `mod`'s parameters and aux states that module `other` lacks.
local function missing_in(mod, other)
  local have, out = {}, {}
  for _, n in ipairs(other._param_names) do have[n] = true end
  for _, n in ipairs(other._aux_names) do have[n] = true end
  for _, n in ipairs(mod._param_names) do if not have[n] then out[#out + 1] = n end end
  for _, n in ipairs(mod._aux_names) do if not have[n] then out[#out + 1] = n end end
  return out
end

-- The bound bucket to bind `mod` against: the default one, unless `mod` has parameters
-- the default lacks that an earlier bucket has (the one with most of them).
local function base_for(self, mod)
  local def = self._buckets[self._default_bucket_key]
  local extra = missing_in(mod, def)
  if #extra == 0 then return def end
  local best, best_n = def, 0
  for _, key in ipairs(self._bucket_order) do
    local b = self._buckets[key]
    local n = #extra - #missing_in({_param_names = extra, _aux_names = {}}, b)
    if n > best_n then best, best_n = b, n end
  end
  return best
end

-- Sets the parameters `mod` has and its base lacked (new arrays): from the shared dicts
-- when they hold them (loaded parameters, or a bucket bound before against another
-- base), else created there and set by the initializer.
local function adopt_new_params(self, mod, base_mod)
  local new = missing_in(mod, base_mod)
  if #new == 0 then return end
  if self.params_initialized and self._params_dirty then self:get_params() end -- the dicts up to date
  local g = mod._exec_group
  local arg, aux = mod._arg_params, mod._aux_params
  local pos, apos = {}, {}
  for i, n in ipairs(mod._param_names) do pos[n] = i end
  for i, n in ipairs(mod._aux_names) do apos[n] = i end
  local attrs = mod._symbol:attr_dict()
  local cpu = require('luamx.context').cpu()
  local init = self._initializer or require('luamx.initializer').Uniform(0.01)
  local set_arg, set_aux = {}, {}
  for _, name in ipairs(new) do
    local dict, dev = pos[name] and arg or aux, pos[name] and g.param_arrays[pos[name]] or g.aux_arrays[apos[name]]
    self._bucket_names[name] = true
    self._bucket_attrs[name] = attrs[name]
    if dict[name] == nil then
      local a = dev[1]
      dict[name] = nd.zeros(a.shape, {ctx = cpu, dtype = a.dtype})
      init(require('luamx.initializer').InitDesc(name, attrs[name]), dict[name])
    end
    if pos[name] then set_arg[name] = dict[name] else set_aux[name] = dict[name] end
  end
  g:set_params(set_arg, set_aux, true)
end

--- switch_bucket(key, data_shapes [, label_shapes]): binds the bucket on first use
--- (sharing with the default bucket, or with the bucket holding its own parameters)
--- and makes it current.
function BucketingModule:switch_bucket(key, data_shapes, label_shapes)
  if not self.binded then raise('switch_bucket: call bind before switching buckets') end
  if key == nil then raise('switch_bucket: bucket key is nil') end
  local mod = self._buckets[key]
  if not mod then
    mod = make_module(self, key)
    mod._bucket_names, mod._bucket_attrs = self._bucket_names, self._bucket_attrs
    local base_mod = base_for(self, mod)
    mod:bind{data_shapes = data_shapes, label_shapes = label_shapes, for_training = self._curr_module.for_training,
             inputs_need_grad = self._curr_module.inputs_need_grad, grad_req = self._grad_req,
             shared_module = base_mod}
    adopt_new_params(self, mod, base_mod)
    -- borrowed at bind; again now that its own parameters have values (kvstore keys)
    if mod.optimizer_initialized then mod:borrow_optimizer(self._buckets[self._default_bucket_key]) end
    if self._monitor then mod:install_monitor(self._monitor) end
    add_bucket(self, key, mod)
  end
  self._curr_module, self._curr_bucket_key = mod, key
end

-- ------------------------------------------------------------------ parameters -----
--- Initialises the parameters (through the current bucket's module, whose arrays all
-- buckets share); a no-op when already done unless `force_init`.
-- @param o options as `Module:init_params`: `initializer`, `arg_params`, `aux_params`,
-- `allow_missing`, `force_init`, `allow_extra`
function BucketingModule:init_params(o)
  o = o or {}
  if self.params_initialized and not o.force_init then return end
  self:_check_ready('init_params')
  if o.initializer ~= nil then self._initializer = o.initializer end
  self._curr_module:init_params(o)
  self:_push_params(self._curr_module._arg_params, self._curr_module._aux_params)
  self._params_dirty, self.params_initialized = false, true
end

-- Copies the given values into every bucket other than the current one (their own
-- parameters; shared ones are the same arrays).
function BucketingModule:_push_params(arg, aux)
  for _, key in ipairs(self._bucket_order) do
    local mod = self._buckets[key]
    if mod ~= self._curr_module then mod._exec_group:set_params(arg or {}, aux or {}, true) end
  end
end

--- Current parameter values (CPU copies, averaged over devices).
-- @return arg_params, aux_params (tables name -> NDArray)
function BucketingModule:get_params()
  self:_check_ready('get_params', true)
  local cur = self._curr_module
  local dirty = self._params_dirty or cur._params_dirty
  cur._params_dirty = dirty
  local a, x = cur:get_params()
  if dirty then
    -- parameters of other buckets that the current one lacks: from a bucket holding them
    local done = {}
    for _, n in ipairs(cur._param_names) do done[n] = true end
    for _, n in ipairs(cur._aux_names) do done[n] = true end
    for _, key in ipairs(self._bucket_order) do
      local mod, sa, sx = self._buckets[key], {}, {}
      for _, n in ipairs(mod._param_names) do if not done[n] then done[n], sa[n] = true, a[n] end end
      for _, n in ipairs(mod._aux_names) do if not done[n] then done[n], sx[n] = true, x[n] end end
      if next(sa) or next(sx) then mod._exec_group:get_params(sa, sx) end
    end
  end
  self._params_dirty = false
  return a, x
end

--- Assigns parameter values, as `Module:set_params`.
-- @param arg_params table name -> NDArray
-- @param aux_params table name -> NDArray
-- @param o options: `allow_missing` (false), `force_init` (true), `allow_extra` (false)
function BucketingModule:set_params(arg_params, aux_params, o)
  o = o or {}
  if not o.allow_missing then
    return self:init_params{_no_initializer = true, arg_params = arg_params, aux_params = aux_params,
                            allow_missing = false, force_init = o.force_init ~= false, allow_extra = o.allow_extra}
  end
  if self.params_initialized and o.force_init == false then
    self:_log('warning', 'Parameters already initialized and force_init=False. set_params call ignored.')
    return
  end
  self:_check_ready('set_params')
  self._curr_module:set_params(arg_params, aux_params, o)
  self:_push_params(arg_params, aux_params)
  self._params_dirty, self.params_initialized = true, true
end

--- Sets up the optimizer on the current bucket's module and shares it with every other
-- bucket (and buckets made later); a no-op when already done unless `force_init`.
-- @param o options as `Module:init_optimizer`: `kvstore`, `optimizer`, `optimizer_params`, `force_init`
function BucketingModule:init_optimizer(o)
  o = o or {}
  self:_check_ready('init_optimizer', true)
  if self.optimizer_initialized and not o.force_init then
    self:_log('warning', 'optimizer already initialized, ignoring.')
    return
  end
  local def = self._buckets[self._default_bucket_key]
  def:init_optimizer(o)
  for _, key in ipairs(self._bucket_order) do
    local mod = self._buckets[key]
    if mod ~= def then mod:borrow_optimizer(def) end
  end
  self.optimizer_initialized = true
  base.load_preloaded_states(self, def)
end

-- ------------------------------------------------------------------ computation ----
--- Prepares the module of `batch.bucket_key` (binding it when new) without changing
-- the current bucket.
-- @param batch a DataBatch
function BucketingModule:prepare(batch)
  self:_check_ready('prepare', true)
  local key = batch.bucket_key
  if key == nil or key == self._curr_bucket_key then return self._curr_module:prepare(batch) end
  local orig = self._curr_bucket_key
  self:switch_bucket(key, batch.provide_data, batch.provide_label)
  self._curr_module:prepare(batch)
  self:switch_bucket(orig)
end

--- Switches to the bucket of `batch.bucket_key` (the default key when nil; binding it,
-- sharing memory with the default bucket, when new) and runs forward there.
-- @param batch a DataBatch (`bucket_key`, `provide_data`, `provide_label` used when present)
-- @param is_train whether this is a training pass (defaults to `for_training`)
function BucketingModule:forward(batch, is_train)
  self:_check_ready('forward', true)
  if type(batch) ~= 'table' then raise('forward: expected a DataBatch, got ' .. type(batch)) end
  local key = batch.bucket_key
  if key == nil then key = self._default_bucket_key end
  if key ~= self._curr_bucket_key or not self._buckets[key] then
    self:switch_bucket(key, batch.provide_data or self:_shapes_of(batch, key, 'data'),
      batch.provide_label or self:_shapes_of(batch, key, 'label'))
  end
  self._curr_module:forward(batch, is_train)
end

function BucketingModule:_shapes_of(batch, key, field)
  local arrays = batch[field]
  if not arrays then return nil end
  local _, dn, ln = self:_call_sym_gen(key)
  local names = field == 'data' and dn or ln
  local out = {}
  for i, a in ipairs(arrays) do out[i] = {names[i], a.shape} end
  return out
end

--- Backward on the current bucket's module.
-- @param out_grads gradients of the outputs (only for outputs that are not loss heads)
function BucketingModule:backward(out_grads)
  self:_check_ready('backward', true)
  self._curr_module:backward(out_grads)
end

--- One optimizer step on the current bucket's module (needs `init_optimizer`).
function BucketingModule:update()
  self:_check_ready('update', true)
  if not self.optimizer_initialized then raise('update: the optimizer is not initialized; call init_optimizer first') end
  self._params_dirty = true
  self._curr_module:update()
end

--- Outputs of the last forward on the current bucket.
-- @param merge merge the devices' outputs (default true)
-- @return list of NDArrays (per output, then per device when not merged)
function BucketingModule:get_outputs(merge)
  self:_check_ready('get_outputs', true)
  return self._curr_module:get_outputs(merge)
end

--- Gradients of the inputs from the last backward (bind with `inputs_need_grad`).
-- @param merge merge the devices' gradients (default true)
-- @return list of NDArrays
function BucketingModule:get_input_grads(merge)
  self:_check_ready('get_input_grads', true)
  return self._curr_module:get_input_grads(merge)
end

--- The state arrays of the current bucket's module, as `Module:get_states`.
-- @param merge must be false or nil
-- @return list (per state) of lists (per device) of NDArrays
function BucketingModule:get_states(merge)
  self:_check_ready('get_states', true)
  return self._curr_module:get_states(merge)
end

--- Sets the state arrays of the current bucket's module, as `Module:set_states`.
-- @param states list (per state) of lists (per device) of NDArrays
-- @param value a number to fill every state with (instead of `states`)
function BucketingModule:set_states(states, value)
  self:_check_ready('set_states', true)
  self._curr_module:set_states(states, value)
end

--- Updates a metric with the current bucket's outputs.
-- @param eval_metric an EvalMetric
-- @param labels list of label NDArrays of the batch
-- @param pre_sliced whether the labels are already split per device
function BucketingModule:update_metric(eval_metric, labels, pre_sliced)
  self:_check_ready('update_metric', true)
  self._curr_module:update_metric(eval_metric, labels, pre_sliced)
end

--- Installs a Monitor on every bucket's module (and on those made later).
-- @param mon a `mx.monitor.Monitor`
function BucketingModule:install_monitor(mon)
  self:_check_ready('install_monitor')
  self._monitor = mon
  for _, key in ipairs(self._bucket_order) do self._buckets[key]:install_monitor(mon) end
end

-- ------------------------------------------------------------------ checkpoints ----
--- save_checkpoint(prefix, epoch [, save_optimizer_states]) in MXNet's bucketing layout,
--- committed by prefix-%04d.manifest as Module's (luamx.manifest).
function BucketingModule:save_checkpoint(prefix, epoch, save_optimizer_states)
  if type(prefix) ~= 'string' then raise('save_checkpoint: prefix must be a string, got ' .. type(prefix)) end
  if type(epoch) ~= 'number' or epoch % 1 ~= 0 or epoch < 0 then
    raise('save_checkpoint: epoch must be a non-negative integer, got ' .. (type(epoch) == 'number' and tostring(epoch) or type(epoch)))
  end
  self:_check_ready('save_checkpoint', true)
  if save_optimizer_states and not self.optimizer_initialized then
    raise('save_checkpoint: save_optimizer_states is set but the optimizer is not initialized (call init_optimizer first)')
  end
  local keys, jsons = {}, {}
  for _, key in ipairs(self._bucket_order) do
    if type(key) ~= 'number' or key % 1 ~= 0 then
      raise(('save_checkpoint: bucket keys must be integers to be saved, got %s'):format(key_str(key)))
    end
    keys[#keys + 1] = key
    jsons[#jsons + 1] = {('%s-%s-symbol.json'):format(prefix, key_str(key)), self:_call_sym_gen(key):tojson()}
  end
  table.sort(keys)
  local arg_params, aux_params = self:get_params()
  local pname, bname = ('%s-%04d.params'):format(prefix, epoch), prefix .. '.buckets'
  local parts = {{path = pname, write = function(tmp) base.save_params(tmp, arg_params, aux_params) end}}
  if save_optimizer_states then
    local cur = self._curr_module
    parts[2] = {path = ('%s-%04d.states'):format(prefix, epoch), write = function(tmp) cur:save_optimizer_states(tmp) end}
  end
  local shared = {bname}
  for _, j in ipairs(jsons) do
    base.write_atomic(j[1], j[2])
    shared[#shared + 1] = j[1]
  end
  nd.save(bname, {nd.array(keys, {dtype = 'int32'})})
  manifest.save(prefix, epoch, 'save_checkpoint', parts, shared)
  self:_log('info', ('Saved checkpoint to "%s"'):format(pname))
  if parts[2] then self:_log('info', ('Saved optimizer state to "%s"'):format(parts[2].path)) end
end

--- BucketingModule.load(prefix, epoch, sym_gen, default_bucket_key [, load_optimizer_states
--- [, opts]]): parameters from the checkpoint, symbols from sym_gen (as MXNet). The
--- checkpoint is checked as Module.load checks it.
function BucketingModule.load(prefix, epoch, sym_gen, default_bucket_key, load_optimizer_states, opts)
  if type(prefix) ~= 'string' then raise('BucketingModule.load: prefix must be a string, got ' .. type(prefix)) end
  if type(epoch) ~= 'number' then raise('BucketingModule.load: epoch must be a number, got ' .. type(epoch)) end
  local pname, sname = ('%s-%04d.params'):format(prefix, epoch), ('%s-%04d.states'):format(prefix, epoch)
  local _, file, release = manifest.check(prefix, epoch, 'BucketingModule.load', load_optimizer_states and {pname, sname} or {pname})
  local ok, arg, aux = pcall(base.load_params, file(pname))
  release(pname)
  if not ok then release() error(arg, 0) end
  local o = {}
  for k, v in pairs(opts or {}) do o[k] = v end
  o.sym_gen, o.default_bucket_key = sym_gen, default_bucket_key
  local mok, mod = pcall(BucketingModule, o)
  if not mok then release() error(mod, 0) end
  mod._preloaded = {arg, aux}
  mod.params_initialized = true
  if load_optimizer_states then base.keep_preloaded_states(mod, file(sname), release) end
  return mod
end

--- Bucket keys saved next to a bucketing checkpoint (prefix.buckets).
function BucketingModule.load_bucket_keys(prefix)
  local path = prefix .. '.buckets'
  local list = nd.load(path)
  local arr, n = list[1], 0
  for _ in pairs(list) do n = n + 1 end
  if n ~= 1 or not arr then
    local got = n == 0 and 'no arrays' or not arr and (n .. ' named array(s)') or (n .. ' arrays')
    raise(('BucketingModule.load_bucket_keys: %s must hold one unnamed array of bucket keys, got %s')
      :format(path, got))
  end
  if #arr.shape ~= 1 or not (arr.dtype:match('^u?int') or arr.dtype:match('^float')) then
    raise(('BucketingModule.load_bucket_keys: %s: expected a 1-D array of integer keys, got shape (%s) %s')
      :format(path, table.concat(arr.shape, ', '), arr.dtype))
  end
  local keys = {}
  for i, v in ipairs(arr:toflat()) do
    if v % 1 ~= 0 or v ~= v then
      raise(('BucketingModule.load_bucket_keys: %s: key %d is %s, not an integer'):format(path, i, tostring(v)))
    end
    keys[#keys + 1] = v
  end
  return keys
end

function BucketingModule.__tostring(self)
  return ('BucketingModule(default_bucket_key=%s, %d bucket(s) bound)'):format(key_str(self._default_bucket_key), #self._bucket_order)
end

return M
