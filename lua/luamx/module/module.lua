--- luamx.module.module — mx.mod.Module: one symbol bound on one or more contexts through a
--- DataParallelExecutorGroup (MXNet 1.9 python/mxnet/module/module.py).
--
--   local mod = mx.mod.Module{symbol = net, context = {mx.cpu(0), mx.cpu(1)}}
--   mod:bind{data_shapes = it.provide_data, label_shapes = it.provide_label}
--   mod:init_params{initializer = mx.init.Xavier()}
--   mod:init_optimizer{optimizer = 'sgd', optimizer_params = {learning_rate = 0.1}}
--   mod:forward_backward(batch); mod:update()
--
-- Invariants:
-- * param_names are the symbol's arguments that are neither data, label nor state
--   names, in list_arguments order; the CPU dicts _arg_params/_aux_params hold the master
--   copy, refreshed from the devices (average over devices) when _params_dirty.
-- * rescale_grad = 1/batch_size is fixed at init_optimizer and not recomputed when a
--   batch of another size reshapes the executors (MXNet's rule).
-- * kvstore: none for a single context (unless 'dist...'); else mx.kv.create(name) with
--   update_on_kvstore. update() hands every parameter to the store in ONE pushpull, so a
--   dist store fuses small gradients into few all-reduces. Without a kvstore on several
--   contexts, the group sums the gradients in C (lmx_group_sum_grads: the same sum the
--   stores use) and every device copy runs the updater with index i*n_dev + k.
-- * dist stores on one context: init_optimizer / borrow_optimizer arm the group's
--   overlap (Group:set_overlap with the names update() pushes), so backward starts the
--   all-reduce of each gradient as soon as it is final and update()'s pushpull waits
--   for the sums (LUAMX_DIST_OVERLAP=0 turns it off; several contexts, grad_req 'add':
--   not overlapped).
-- * dist stores: init broadcasts rank 0's values and every worker pulls them, so all
--   ranks start identical (also when resuming from a checkpoint).
-- * Checkpoint files are each written to a temporary name, fsync'ed and renamed, and the
--   set is committed by prefix-%04d.manifest (luamx.manifest): a kill at any instant
--   leaves every epoch complete, or marked incomplete, never silently mixed.
local capi = require 'luamx.capi'
local nd = require 'luamx.ndarray'
local base = require 'luamx.module.base'
local manifest = require 'luamx.manifest'
local raise = capi.raise

local M = {}
local Module = base.class(base.BaseModule)
M.Module = Module

local function mx() return require('luamx') end

local function contains(list, x)
  for _, v in ipairs(list or {}) do if v == x then return true end end
  return false
end

local function copy_list(t, who, what)
  if t ~= nil and (type(t) ~= 'table' or getmetatable(t) ~= nil) then
    require('luamx.check').fail(who or 'mx.mod.Module', what or 'names', 'an array of names', t)
  end
  local out = {}
  for i, v in ipairs(t or {}) do
    if who and type(v) ~= 'string' then require('luamx.check').fail(who, ('%s[%d]'):format(what, i), 'a string', v) end
    out[i] = v
  end
  return out
end

local function check_names(symbol, names, what, throw, logger)
  local args = symbol:list_arguments()
  for _, n in ipairs(names) do
    if not contains(args, n) then
      local candidates = {}
      for _, a in ipairs(args) do
        if not (a:match('_weight$') or a:match('_bias$') or a:match('_gamma$') or a:match('_beta$')) then
          candidates[#candidates + 1] = a
        end
      end
      local msg = ('mx.mod.Module: unknown %s name %q: not an argument of the symbol; candidates: %s')
        :format(what, n, base.names_str(candidates))
      if throw then raise(msg) end
      base.log(logger, 'warning', msg)
    end
  end
end

local function as_contexts(ctx)
  if ctx == nil then return {require('luamx.context').cpu()} end
  if type(ctx) == 'table' and #ctx > 0 then return copy_list(ctx) end
  return {ctx}
end

--- mx.mod.Module{symbol=, data_names={'data'}, label_names={'softmax_label'}, context=cpu(),
--- work_load_list=, fixed_param_names=, state_names=, logger=}
local function new(_, o)
  if type(o) ~= 'table' then raise('mx.mod.Module: expected a table of options {symbol = ..., ...}') end
  local S = require('luamx.symbol')
  if not S.is_symbol(o.symbol) then
    raise('mx.mod.Module: symbol must be a Symbol, got ' .. type(o.symbol))
  end
  local self = setmetatable({}, Module)
  self.logger = o.logger
  self._symbol = o.symbol
  self._context = as_contexts(o.context)
  local wl = o.work_load_list
  if wl ~= nil and (type(wl) ~= 'table' or getmetatable(wl) ~= nil) then
    require('luamx.check').fail('mx.mod.Module', 'work_load_list', 'a list of numbers', wl)
  end
  if wl == nil then wl = {} for i = 1, #self._context do wl[i] = 1 end end
  if #wl ~= #self._context then
    raise(('mx.mod.Module: work_load_list has %d entries for %d contexts'):format(#wl, #self._context))
  end
  self._work_load_list = copy_list(wl)
  local who = 'mx.mod.Module'
  self._data_names = copy_list(o.data_names or {'data'}, who, 'data_names')
  self._label_names = copy_list(o.label_names or {'softmax_label'}, who, 'label_names')
  self._state_names = copy_list(o.state_names, who, 'state_names')
  self._fixed_param_names = copy_list(o.fixed_param_names, who, 'fixed_param_names')
  check_names(o.symbol, self._data_names, 'data', true)
  check_names(o.symbol, self._label_names, 'label', false, self.logger)
  check_names(o.symbol, self._state_names, 'state', true)
  check_names(o.symbol, self._fixed_param_names, 'fixed_param', true)
  local input = {}
  for _, list in ipairs({self._data_names, self._label_names, self._state_names}) do
    for _, n in ipairs(list) do input[n] = true end
  end
  self._param_names = {}
  local label_set = {}
  for _, n in ipairs(self._label_names) do label_set[n] = true end
  for _, a in ipairs(o.symbol:list_arguments()) do
    if not input[a] then self._param_names[#self._param_names + 1] = a end
    if label_set[a] then self._takes_labels = true end
  end
  self._aux_names = o.symbol:list_auxiliary_states()
  self._output_names = o.symbol:list_outputs()
  self.binded, self.for_training, self.inputs_need_grad = false, false, false
  self.params_initialized, self.optimizer_initialized = false, false
  self._params_dirty = false
  return self
end
setmetatable(Module, {__index = base.BaseModule, __call = new})

-- ------------------------------------------------------------------ properties -----
local P = Module._props
--- Property `symbol`: the module's Symbol.
-- @param self the Module
function P.symbol(self) return self._symbol end
--- Property `data_names`: list of data input names.
-- @param self the Module
function P.data_names(self) return self._data_names end
--- Property `label_names`: list of label input names.
-- @param self the Module
function P.label_names(self) return self._label_names end
--- Property `output_names`: list of the symbol's output names.
-- @param self the Module
function P.output_names(self) return self._output_names end
--- Property `param_names`: arguments that are neither data, labels nor states.
-- @param self the Module
function P.param_names(self) return self._param_names end
--- Property `data_shapes`: the data descriptions given to `bind` (needs a bound module).
-- @param self the Module
function P.data_shapes(self) self:_check_ready('data_shapes') return self._data_shapes end
--- Property `label_shapes`: the label descriptions given to `bind` (`{}` when none).
-- @param self the Module
function P.label_shapes(self) self:_check_ready('label_shapes') return self._label_shapes or {} end
--- Property `output_shapes`: `{name, shape}` of each output (needs a bound module).
-- @param self the Module
function P.output_shapes(self) self:_check_ready('output_shapes') return self._exec_group.output_shapes end

-- ------------------------------------------------------------------ bind -----------
function Module:_reset_bind()
  self.binded = false
  self._exec_group = nil
  self._data_shapes, self._label_shapes = nil, nil
end

local function check_shape_names(who, descs, names, what, throw, logger)
  local got = {}
  for i, d in ipairs(descs) do got[i] = d.name end
  local ok = #got == #names
  for i = 1, #names do ok = ok and got[i] == names[i] end
  if not ok then
    local msg = ('%s: %s names %s do not match the module\'s %s_names %s')
      :format(who, what == 'data' and 'data_shapes' or 'label_shapes', base.names_str(got), what, base.names_str(names))
    if throw then raise(msg) end
    base.log(logger, 'warning', msg)
  end
end

local function make_group(self, shared_group, grad_req)
  local em = mx().executor_manager
  if not em or not em.DataParallelExecutorGroup then
    raise('bind: mx.executor_manager.DataParallelExecutorGroup is not available')
  end
  return em.DataParallelExecutorGroup{
    symbol = self._symbol, contexts = self._context, workload = self._work_load_list,
    data_shapes = self._data_shapes, label_shapes = self._label_shapes,
    param_names = self._param_names, for_training = self.for_training,
    inputs_need_grad = self.inputs_need_grad, shared_group = shared_group,
    logger = self.logger, fixed_param_names = self._fixed_param_names,
    grad_req = grad_req, state_names = self._state_names}
end

--- bind{data_shapes=, label_shapes=, for_training=true, inputs_need_grad=false,
--- force_rebind=false, shared_module=, grad_req='write'}
function Module:bind(o)
  o = o or {}
  if self.binded and not o.force_rebind then
    self:_log('warning', 'Already bound, ignoring bind()')
    return
  end
  local for_training = o.for_training ~= false
  local inputs_need_grad = o.inputs_need_grad and true or false
  if not for_training and inputs_need_grad then
    raise('bind: inputs_need_grad = true requires for_training = true')
  end
  if o.data_shapes == nil then raise('bind: data_shapes is required') end
  local data_shapes = base.descs(o.data_shapes, 'bind', 'data_shapes')
  local label_shapes = base.descs(o.label_shapes, 'bind', 'label_shapes')
  if label_shapes and #label_shapes == 0 then label_shapes = nil end
  check_shape_names('bind', data_shapes, self._data_names, 'data', true)
  if label_shapes then check_shape_names('bind', label_shapes, self._label_names, 'label', false, self.logger) end
  local shared = o.shared_module
  if shared ~= nil then
    if not (type(shared) == 'table' and shared.binded and shared.params_initialized) then
      raise('bind: shared_module must be a bound module with initialized parameters')
    end
  end
  if o.force_rebind then self:_reset_bind() end
  self.for_training, self.inputs_need_grad = for_training, inputs_need_grad
  self._grad_req = o.grad_req or 'write'
  self._data_shapes, self._label_shapes = data_shapes, label_shapes
  self._exec_group = make_group(self, shared and shared._exec_group, self._grad_req)
  self.binded = true
  if shared then
    self.params_initialized = true
    self._arg_params, self._aux_params = shared._arg_params, shared._aux_params
  elseif self.params_initialized then
    self._exec_group:set_params(self._arg_params, self._aux_params)
  else
    local cpu = require('luamx.context').cpu()
    self._arg_params, self._aux_params = {}, {}
    for i, name in ipairs(self._param_names) do
      local a = self._exec_group.param_arrays[i][1]
      self._arg_params[name] = nd.zeros(a.shape, {ctx = cpu, dtype = a.dtype})
    end
    for i, name in ipairs(self._aux_names) do
      local a = self._exec_group.aux_arrays[i][1]
      self._aux_params[name] = nd.zeros(a.shape, {ctx = cpu, dtype = a.dtype})
    end
  end
  if shared and shared.optimizer_initialized then self:borrow_optimizer(shared) end
end

--- reshape(data_shapes [, label_shapes]): new batch shapes, same parameters.
function Module:reshape(data_shapes, label_shapes)
  self:_check_ready('reshape')
  local d = base.descs(data_shapes, 'reshape', 'data_shapes')
  local l = base.descs(label_shapes, 'reshape', 'label_shapes')
  if l and #l == 0 then l = nil end
  check_shape_names('reshape', d, self._data_names, 'data', true)
  self._data_shapes, self._label_shapes = d, l
  self._exec_group:reshape(d, l)
end

-- ------------------------------------------------------------------ parameters -----
local function init_one(who, name, arr, cache, initializer, allow_missing, attrs)
  if cache then
    local src = cache[name]
    if src ~= nil then
      if not base.same_shape(src.shape, arr.shape) then
        raise(('%s: %s has shape %s in the given parameters, the module expects %s')
          :format(who, name, base.shape_str(src.shape), base.shape_str(arr.shape)))
      end
      if src ~= arr then src:copyto(arr) end
      return
    end
    if not allow_missing then raise(('%s: %s is not presented'):format(who, name)) end
  end
  if initializer then
    initializer(require('luamx.initializer').InitDesc(name, attrs[name]), arr)
  end
end

local function sorted_keys(t)
  local k = {}
  for n in pairs(t) do k[#k + 1] = n end
  table.sort(k)
  return k
end

local function check_extra(who, given, known, what, also)
  if not given then return end
  local set = {}
  for _, n in ipairs(known) do set[n] = true end
  for n in pairs(also or {}) do set[n] = true end
  for _, n in ipairs(sorted_keys(given)) do
    if not set[n] then
      raise(('%s: %s has %q, which is not a%s of the module (pass allow_extra = true to ignore it)')
        :format(who, what, n, what == 'arg_params' and 'n argument' or 'n auxiliary state'))
    end
  end
end

--- init_params{initializer=mx.init.Uniform(0.01), arg_params=, aux_params=,
--- allow_missing=false, force_init=false, allow_extra=false}
function Module:init_params(o)
  o = o or {}
  if self.params_initialized and not o.force_init then
    self:_log('warning', 'Parameters already initialized and force_init=False. init_params call ignored.')
    return
  end
  self:_check_ready('init_params')
  local initializer = o.initializer
  if initializer == nil and not o._no_initializer then initializer = require('luamx.initializer').Uniform(0.01) end
  local who = o._who or 'init_params'
  local imt = type(initializer) == 'table' and getmetatable(initializer)
  if initializer ~= nil and type(initializer) ~= 'function' and not (imt and imt.__call) then
    require('luamx.check').fail(who, 'initializer', 'an initializer (such as mx.init.Xavier()) or a function(desc, arr)', initializer)
  end
  require('luamx.model').check_params(who, o.arg_params, o.aux_params)
  if not o.allow_extra then
    check_extra(who, o.arg_params, self._param_names, 'arg_params', self._bucket_names)
    check_extra(who, o.aux_params, self._aux_names, 'aux_params', self._bucket_names)
  end
  local attrs = self._symbol:attr_dict()
  for n, a in pairs(self._bucket_attrs or {}) do if attrs[n] == nil then attrs[n] = a end end
  for _, name in ipairs(sorted_keys(self._arg_params)) do
    init_one(who, name, self._arg_params[name], o.arg_params, initializer, o.allow_missing, attrs)
  end
  for _, name in ipairs(sorted_keys(self._aux_params)) do
    init_one(who, name, self._aux_params[name], o.aux_params, initializer, o.allow_missing, attrs)
  end
  self.params_initialized, self._params_dirty = true, false
  -- the dicts of a bucketing module also hold other buckets' parameters
  self._exec_group:set_params(self._arg_params, self._aux_params, o.allow_extra or self._bucket_names ~= nil)
end

--- set_params(arg_params, aux_params [, {allow_missing=false, force_init=true, allow_extra=false}])
function Module:set_params(arg_params, aux_params, o)
  o = o or {}
  local force_init = o.force_init ~= false
  if not o.allow_missing then
    return self:init_params{_no_initializer = true, _who = 'set_params', arg_params = arg_params,
                            aux_params = aux_params, allow_missing = false, force_init = force_init,
                            allow_extra = o.allow_extra}
  end
  if self.params_initialized and not force_init then
    self:_log('warning', 'Parameters already initialized and force_init=False. set_params call ignored.')
    return
  end
  self:_check_ready('set_params')
  require('luamx.model').check_params('set_params', arg_params, aux_params)
  if not o.allow_extra then
    check_extra('set_params', arg_params, self._param_names, 'arg_params', self._bucket_names)
    check_extra('set_params', aux_params, self._aux_names, 'aux_params', self._bucket_names)
  end
  self._exec_group:set_params(arg_params or {}, aux_params or {}, o.allow_extra or self._bucket_names ~= nil)
  self._params_dirty, self.params_initialized = true, true
end

function Module:_sync_params_from_devices()
  self._exec_group:get_params(self._arg_params, self._aux_params)
  self._params_dirty = false
end

--- get_params() -> arg_params, aux_params (CPU copies, averaged over devices).
function Module:get_params()
  self:_check_ready('get_params', true)
  if self._params_dirty then self:_sync_params_from_devices() end
  return self._arg_params, self._aux_params
end

-- ------------------------------------------------------------------ optimizer ------
-- The parameters update() hands to the kvstore, in its order (those with a gradient).
local function pushed_names(self)
  local ga, names = self._exec_group.grad_arrays, {}
  for i, name in ipairs(self._param_names) do
    local gr = ga and ga[i]
    if gr and gr[1] then names[#names + 1] = name end
  end
  return names
end

-- With a dist store, backward starts the all-reduces of final gradients (see the top).
local function set_overlap(self)
  local kv = self._kvstore
  local dist = kv and kv.type and tostring(kv.type):find('dist', 1, true)
  self._overlap = self._exec_group:set_overlap(dist and kv or nil, dist and pushed_names(self) or nil)
end

-- MXNet's model._create_kvstore: no store for one device unless distributed;
-- update_on_kvstore from MXNET_UPDATE_ON_KVSTORE (default 1), off for 'local' when a
-- parameter has more than 16M elements.
local function create_kvstore(kvstore, num_device, arg_params)
  if kvstore == nil or kvstore == false then return nil, false end
  local update = os.getenv('MXNET_UPDATE_ON_KVSTORE') ~= '0'
  if type(kvstore) == 'string' then
    if num_device == 1 and not kvstore:find('dist', 1, true) then return nil, false end
    local kv = mx().kv
    if not kv or not kv.create then return nil, false end -- reduced in Lua (see the top)
    if kvstore == 'local' then
      for _, a in pairs(arg_params) do
        if a.size > 16 * 1024 * 1024 then update = false end
      end
    end
    return kv.create(kvstore), update
  end
  return kvstore, update
end

--- init_optimizer{kvstore='local', optimizer='sgd', optimizer_params={learning_rate=0.01},
--- force_init=false}
function Module:init_optimizer(o)
  o = o or {}
  self:_check_ready('init_optimizer', true)
  if self.optimizer_initialized and not o.force_init then
    self:_log('warning', 'optimizer already initialized, ignoring...')
    return
  end
  if self._params_dirty then self:_sync_params_from_devices() end
  local n_dev = #self._context
  local kv_arg = o.kvstore
  if kv_arg == nil then kv_arg = 'local' end
  local kvstore, update_on_kvstore = create_kvstore(kv_arg, n_dev, self._arg_params)
  local batch_size = self._exec_group.batch_size
  if kvstore and kvstore.type and tostring(kvstore.type):find('dist', 1, true) and kvstore.num_workers then
    batch_size = batch_size * kvstore.num_workers
  end
  local rescale_grad = 1 / batch_size
  local optimizer = o.optimizer or 'sgd'
  local opt_mod = require('luamx.optimizer')
  if type(optimizer) == 'string' then
    local idx2name = {}
    for i, name in ipairs(self._param_names) do
      if update_on_kvstore then idx2name[i - 1] = name
      else for k = 0, n_dev - 1 do idx2name[(i - 1) * n_dev + k] = name end end
    end
    local params = {}
    require('luamx.check').type('init_optimizer', 'optimizer_params', o.optimizer_params, 'table', true)
    for k, v in pairs(o.optimizer_params or {learning_rate = 0.01}) do params[k] = v end
    if params.rescale_grad == nil then params.rescale_grad = rescale_grad end
    params.sym, params.param_idx2name = self._symbol, idx2name
    optimizer = opt_mod.create(optimizer, params)
  elseif type(optimizer) == 'table' and optimizer.update then
    if optimizer.rescale_grad ~= rescale_grad then
      self:_log('warning', ('Optimizer created manually outside Module but rescale_grad is not normalized to ' ..
        '1.0/batch_size/num_workers (%s vs. %s). Is this intended?'):format(optimizer.rescale_grad, rescale_grad))
    end
  else
    raise('init_optimizer: optimizer must be a name such as \'sgd\' or an mx.optimizer object, got ' .. type(optimizer))
  end
  self._optimizer, self._kvstore, self._update_on_kvstore = optimizer, kvstore, update_on_kvstore
  self._updater, self._opt_index, self._opt_owner, self._kv_inited = nil, nil, nil, nil
  if kvstore then
    if update_on_kvstore then kvstore:set_optimizer(optimizer) end
    local pa = self._exec_group.param_arrays
    local dist = tostring(kvstore.type):find('dist', 1, true)
    for i, name in ipairs(self._param_names) do
      kvstore:init(name, self._arg_params[name])
      if update_on_kvstore or dist then kvstore:pull(name, pa[i], -(i - 1)) end
    end
    if dist then self._params_dirty = true end -- the devices hold rank 0's values
  end
  if not update_on_kvstore then self._updater = opt_mod.get_updater(optimizer) end
  set_overlap(self)
  self.optimizer_initialized = true
  base.load_preloaded_states(self, self)
end

--- Shares the optimizer, kvstore and updater of another module (bucketing).
-- The updater indices of this module's parameters when it shares the optimizer of
-- `owner`: a parameter the owner has keeps the owner's index (so its state is the
-- owner's whatever the order of this module's arguments); one the owner lacks (a bucket's
-- own parameter) is keyed by its name ('<name>', or '<name>@<k>' for device k of
-- several), the same in every process, so saved optimizer states load back to it.
local function borrowed_indices(self, owner)
  local pos = {}
  for i, name in ipairs(owner._param_names) do pos[name] = i end
  local n_dev, idx, fresh = #self._context, {}, {}
  local opt = self._optimizer
  for i, name in ipairs(self._param_names) do
    local row = {}
    for k = 1, n_dev do
      if pos[name] then row[k] = (pos[name] - 1) * n_dev + (k - 1)
      else
        row[k] = n_dev == 1 and name or ('%s@%d'):format(name, k - 1)
        if opt and opt.idx2name and opt.idx2name[row[k]] == nil then opt.idx2name[row[k]] = name end
      end
    end
    idx[i] = row
    if not pos[name] then fresh[#fresh + 1] = name end
  end
  return idx, fresh
end

--- Shares the optimizer, kvstore and updater of another module (bucketing). Parameters
-- the other module lacks get their own updater indices (by name) and kvstore keys.
function Module:borrow_optimizer(shared)
  if not shared.optimizer_initialized then raise('borrow_optimizer: the shared module has no optimizer') end
  self._optimizer, self._kvstore = shared._optimizer, shared._kvstore
  self._update_on_kvstore, self._updater = shared._update_on_kvstore, shared._updater
  local owner = shared._opt_owner or shared
  local fresh
  self._opt_index, fresh = borrowed_indices(self, owner)
  self._opt_owner = owner
  local kv = self._kvstore
  if kv and #fresh > 0 then
    local names = {}
    for i, n in ipairs(self._param_names) do names[n] = i end
    owner._kv_inited = owner._kv_inited or {}
    for _, name in ipairs(fresh) do
      if not owner._kv_inited[name] and self._arg_params[name] ~= nil then
        owner._kv_inited[name] = true
        kv:init(name, self._arg_params[name])
        if self._update_on_kvstore then kv:pull(name, self._exec_group.param_arrays[names[name]], -names[name]) end
      end
    end
  end
  self.optimizer_initialized = true
  set_overlap(self)
end

--- update(): one optimizer step on every parameter with a gradient.
function Module:update()
  self:_check_ready('update', true)
  if not self.optimizer_initialized then raise('update: the optimizer is not initialized; call init_optimizer first') end
  self._params_dirty = true
  local g = self._exec_group
  local pa, ga = g.param_arrays, g.grad_arrays
  local n_dev, kv = #self._context, self._kvstore
  local names, grads, weights, index = {}, {}, {}, {}
  for i, name in ipairs(self._param_names) do
    local gr = ga and ga[i]
    if gr and gr[1] then
      names[#names + 1], grads[#grads + 1], weights[#weights + 1], index[#index + 1] = name, gr, pa[i], i
    end
  end
  if #names == 0 then return end
  if self._update_on_kvstore then
    kv:pushpull(names, grads, weights)
    return
  end
  if kv then kv:pushpull(names, grads, grads)
  elseif n_dev > 1 then g:sum_gradients() end
  local oi = self._opt_index
  for j, i in ipairs(index) do
    for k = 1, n_dev do self._updater(oi and oi[i][k] or (i - 1) * n_dev + (k - 1), grads[j][k], weights[j][k]) end
  end
end

-- ------------------------------------------------------------------ computation ----
local function batch_descs(batch, field, provide, names)
  if batch[provide] then return base.descs(batch[provide], 'forward', provide) end
  local arrays = batch[field]
  if not arrays then return nil end
  local out = {}
  for i, a in ipairs(arrays) do
    local n = names[i] or ('%s%d'):format(field, i)
    out[i] = {name = n, shape = a.shape, dtype = a.dtype, [1] = n, [2] = a.shape}
  end
  return out
end

local function descs_equal(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do
    if a[i].name ~= b[i].name or not base.same_shape(a[i].shape, b[i].shape) then return false end
  end
  return true
end

-- A batch whose shapes differ from the bound ones may only differ in ways that keep the
-- parameter shapes (batch size, sequence length, image size); anything else is a clear error.
local function check_reshape(self, new_d, new_l)
  local bound = {}
  for _, d in ipairs(self._data_shapes) do bound[d.name] = d.shape end
  local shapes = {}
  for _, d in ipairs(new_d) do shapes[d.name] = d.shape end
  for _, d in ipairs(new_l or {}) do shapes[d.name] = d.shape end
  local ok, arg_shapes = pcall(self._symbol.infer_shape, self._symbol, shapes)
  local args = self._symbol:list_arguments()
  local fits = ok and arg_shapes ~= nil
  if fits then
    local pa = self._exec_group.param_arrays
    for i, name in ipairs(self._param_names) do
      for j, a in ipairs(args) do
        if a == name and not base.same_shape(arg_shapes[j], pa[i][1].shape) then fits = false end
      end
    end
  end
  if not fits then
    for _, d in ipairs(new_d) do
      local exp = bound[d.name]
      if exp and not base.same_shape(exp, d.shape) then
        raise(('forward: data %q has shape %s, which does not fit the module bound with %s')
          :format(d.name, base.shape_str(d.shape), base.shape_str(exp)))
      end
    end
    raise('forward: the batch\'s shapes do not fit the bound module')
  end
end

--- forward(batch [, is_train]): is_train defaults to for_training. A batch of another
--- batch size (or other free dimensions) reshapes the executors first.
function Module:forward(batch, is_train)
  self:_check_ready('forward', true)
  if type(batch) ~= 'table' or type(batch.data) ~= 'table' then
    raise('forward: expected a DataBatch with a data array list, got ' .. type(batch))
  end
  if #batch.data ~= #self._data_names then
    raise(('forward: the module has %d data input(s) %s but the batch has %d data array(s)')
      :format(#self._data_names, base.names_str(self._data_names), #batch.data))
  end
  if is_train == nil then is_train = self.for_training end
  local has_label = batch.label ~= nil and #batch.label > 0
  if is_train and self._takes_labels and not has_label then
    raise(('forward: the batch has no label, but the module is training with label(s) %s')
      :format(base.names_str(self._label_names)))
  end
  local new_d = batch_descs(batch, 'data', 'provide_data', self._data_names)
  for i, d in ipairs(new_d) do
    if batch.data[i] and not base.same_shape(batch.data[i].shape, d.shape) then
      raise(('forward: data %q: provide_data says %s but the array is %s')
        :format(d.name, base.shape_str(d.shape), base.shape_str(batch.data[i].shape)))
    end
  end
  if not descs_equal(new_d, self._data_shapes) then
    local new_l = nil
    if has_label and self._label_shapes then new_l = batch_descs(batch, 'label', 'provide_label', self._label_names) end
    check_reshape(self, new_d, new_l)
    self:reshape(new_d, new_l or self._label_shapes)
  end
  self._exec_group:forward(batch, is_train)
end

--- backward([out_grads]): out_grads only for outputs that are not loss heads.
function Module:backward(out_grads)
  self:_check_ready('backward', true)
  if not self.for_training then raise('backward: the module is bound with for_training = false') end
  self._exec_group:backward(out_grads)
end

--- Outputs of the last forward.
-- @param merge merge the devices' outputs into one array each (default true)
-- @return list of NDArrays (per output, then per device when not merged)
-- @usage mod:forward(batch, false); local prob = mod:get_outputs()[1]
function Module:get_outputs(merge)
  self:_check_ready('get_outputs', true)
  return self._exec_group:get_outputs(merge ~= false)
end

--- Gradients of the data inputs from the last backward (bind with `inputs_need_grad = true`).
-- @param merge merge the devices' gradients (default true)
-- @return list of NDArrays
function Module:get_input_grads(merge)
  self:_check_ready('get_input_grads', true)
  if not self.inputs_need_grad then raise('get_input_grads: bind with inputs_need_grad = true first') end
  return self._exec_group:get_input_grads(merge ~= false)
end

--- The state arrays (inputs named in `state_names`).
-- @param merge must be false or nil (merging is not supported)
-- @return list (per state) of lists (per device) of NDArrays
function Module:get_states(merge)
  self:_check_ready('get_states', true)
  return self._exec_group:get_states(merge)
end

--- Sets the state arrays: copies `states` in, or fills them all with `value`.
-- @param states list (per state) of lists (per device) of NDArrays
-- @param value a number (give this or `states`, not both)
function Module:set_states(states, value)
  self:_check_ready('set_states', true)
  self._exec_group:set_states(states, value)
end

--- Updates a metric with the outputs of the last forward, per device on its rows.
-- @param eval_metric an EvalMetric
-- @param labels the batch's list of label NDArrays (required)
-- @param pre_sliced whether the labels are already split per device
-- @usage mod:update_metric(metric, batch.label)
function Module:update_metric(eval_metric, labels, pre_sliced)
  if labels == nil then raise('update_metric: labels are required (the batch\'s label list)') end
  self._exec_group:update_metric(eval_metric, labels, pre_sliced)
end

--- Installs a Monitor on the module's executors.
-- @param mon a `mx.monitor.Monitor`
function Module:install_monitor(mon)
  self:_check_ready('install_monitor')
  self._exec_group:install_monitor(mon)
end

-- ------------------------------------------------------------------ checkpoints ----
local write_atomic = base.write_atomic

--- Saves the optimizer states to a file (through the kvstore when it runs the updates).
-- @param fname file path
function Module:save_optimizer_states(fname)
  if not self.optimizer_initialized then raise('save_optimizer_states: the optimizer is not initialized') end
  if self._update_on_kvstore then self._kvstore:save_optimizer_states(fname)
  else nd.save(fname, self._updater:get_states()) end
end

--- Loads optimizer states saved by `save_optimizer_states` (needs `init_optimizer` first).
-- @param fname file path
function Module:load_optimizer_states(fname)
  if not self.optimizer_initialized then raise('load_optimizer_states: the optimizer is not initialized') end
  if self._update_on_kvstore then self._kvstore:load_optimizer_states(fname)
  else self._updater:set_states(nd.load(fname)) end
end

--- save_checkpoint(prefix, epoch [, save_optimizer_states]): prefix-symbol.json,
--- prefix-%04d.params and, when asked, prefix-%04d.states (with the random state), then
--- prefix-%04d.manifest, which makes the set appear whole or not at all (luamx.manifest).
function Module:save_checkpoint(prefix, epoch, save_optimizer_states)
  if type(prefix) ~= 'string' then raise('save_checkpoint: prefix must be a string, got ' .. type(prefix)) end
  if type(epoch) ~= 'number' or epoch % 1 ~= 0 or epoch < 0 then
    raise('save_checkpoint: epoch must be a non-negative integer, got ' .. (type(epoch) == 'number' and tostring(epoch) or type(epoch)))
  end
  if save_optimizer_states and not self.optimizer_initialized then
    raise('save_checkpoint: save_optimizer_states is set but the optimizer is not initialized (call init_optimizer first)')
  end
  local arg_params, aux_params = self:get_params()
  local sym_path = prefix .. '-symbol.json'
  local pname = ('%s-%04d.params'):format(prefix, epoch)
  local parts = {{path = pname, write = function(tmp) base.save_params(tmp, arg_params, aux_params) end}}
  if save_optimizer_states then
    parts[2] = {path = ('%s-%04d.states'):format(prefix, epoch), write = function(tmp) self:save_optimizer_states(tmp) end}
  end
  write_atomic(sym_path, self._symbol:tojson())
  manifest.save(prefix, epoch, 'save_checkpoint', parts, {sym_path})
  self:_log('info', ('Saved checkpoint to "%s"'):format(pname))
  if parts[2] then self:_log('info', ('Saved optimizer state to "%s"'):format(parts[2].path)) end
end

--- mx.mod.Module.load(prefix, epoch [, load_optimizer_states [, opts]]): a module with the
--- checkpoint's symbol and parameters (opts as for mx.mod.Module, symbol excepted). A
--- checkpoint whose manifest says its save did not finish, or whose files differ from
--- what the manifest recorded, is an error naming the file; one without a manifest
--- (MXNet's) loads unchecked, but a missing `.states` is reported here, not at
--- init_optimizer.
function Module.load(prefix, epoch, load_optimizer_states, opts)
  if type(prefix) ~= 'string' then raise('Module.load: prefix must be a string, got ' .. type(prefix)) end
  if type(epoch) ~= 'number' then raise('Module.load: epoch must be a number, got ' .. type(epoch)) end
  local pname, sname = ('%s-%04d.params'):format(prefix, epoch), ('%s-%04d.states'):format(prefix, epoch)
  local _, file, release = manifest.check(prefix, epoch, 'Module.load', load_optimizer_states and {pname, sname} or {pname})
  local ok, sym, arg, aux = pcall(function()
    return require('luamx.symbol').load(prefix .. '-symbol.json'), base.load_params(file(pname))
  end)
  release(pname)
  if not ok then release() error(sym, 0) end
  local o = {}
  for k, v in pairs(opts or {}) do o[k] = v end
  o.symbol = sym
  local mok, mod = pcall(Module, o)
  if not mok then release() error(mod, 0) end
  mod._arg_params, mod._aux_params = arg, aux
  mod.params_initialized = true
  if load_optimizer_states then base.keep_preloaded_states(mod, file(sname), release) end
  return mod
end

function Module.__tostring(self)
  return ('Module(%s, data_names=%s, label_names=%s)'):format(self._symbol.name or '?',
    base.names_str(self._data_names), base.names_str(self._label_names))
end

return M
