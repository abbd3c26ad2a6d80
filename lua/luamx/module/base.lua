--- luamx.module.base — mx.mod.BaseModule: what every module shares (MXNet 1.9
--- python/mxnet/module/base_module.py): fit, score, predict, iter_predict, forward_backward,
--- and the small helpers the concrete modules use (classes with properties, logging,
--- shape descriptions, checks).
--
--   mod:fit(train_iter, {eval_data = val_iter, optimizer_params = {learning_rate = 0.1},
--                        num_epoch = 10})
--   local name_values = mod:score(val_iter, 'acc')     -- {{'accuracy', 0.97}}
--   local probs = mod:predict(test_iter)               -- padding rows removed
--
-- Invariants:
-- * A concrete module provides bind, init_params, init_optimizer, forward, backward,
--   update, get_outputs, update_metric, get_params, set_params, prepare, install_monitor,
--   and the properties symbol, data_names, output_names, data_shapes, label_shapes,
--   output_shapes. Properties are computed on read (class `__index` looks at `_props`).
-- * fit follows MXNet's loop exactly: forward_backward, update, update_metric, prefetch of
--   the next batch (prepare), monitor toc_print, batch-end callbacks with
--   {epoch=, nbatch=, eval_metric=, locals=} (nbatch from 0), then per epoch the log lines
--   'Epoch[%d] Train-<name>=%f', 'Epoch[%d] Time cost=%.3f', a parameter sync, epoch-end
--   callbacks (epoch, symbol, arg_params, aux_params) and 'Epoch[%d] Validation-<name>=%f'.
-- * score counts every row of a padded batch, as MXNet's does; predict and iter_predict
--   drop the `pad` rows at the end of a batch.
-- * Log lines go through the module's logger: opts.logger (a function(level, msg), a table
--   with :info/:warning methods, or false for silence), else mx.logging, whose level
--   (mx.logging.set_level('warning')) silences info lines for every module.
local capi = require 'luamx.capi'
local nd = require 'luamx.ndarray'
local raise = capi.raise

local M = {}

-- ------------------------------------------------------------------ logging --------
local logging = {DEBUG = 10, INFO = 20, WARNING = 30, ERROR = 40, level = 20}
M.logging = logging

--- Where mx.logging writes (replaceable): stderr, as Python's logging does by default.
function logging.write(msg) io.stderr:write(msg, '\n') io.stderr:flush() end

--- Sets the threshold of `mx.logging` (messages below it are dropped).
-- @param level a level name (`'debug'`, `'info'`, `'warning'`, `'error'`, any case) or number
-- @usage mx.logging.set_level('warning')
function logging.set_level(level)
  if type(level) == 'string' then level = logging[level:upper()] end
  if type(level) ~= 'number' then raise('mx.logging.set_level: expected a level name or number, got ' .. tostring(level)) end
  logging.level = level
end

local function emitter(lvl)
  return function(a, b)
    local msg = a
    if a == logging then msg = b end
    if logging[lvl] >= logging.level then logging.write(msg) end
  end
end
logging.debug, logging.info = emitter('DEBUG'), emitter('INFO')
logging.warning, logging.error = emitter('WARNING'), emitter('ERROR')

--- Sends msg at level ('info' | 'warning') to a module's logger.
function M.log(logger, level, msg)
  if logger == false then return end
  if logger == nil then logger = logging end
  if type(logger) == 'function' then return logger(level, msg) end
  local f = logger[level] or logger.info
  if f then f(logger, msg) end
end

-- ------------------------------------------------------------------ classes --------
--- A class whose instances read properties from cls._props (getter functions) first.
function M.class(parent)
  local cls = {}
  cls._props = setmetatable({}, {__index = parent and parent._props})
  cls.__index = function(self, k)
    local p = cls._props[k]
    if p then return p(self) end
    return cls[k]
  end
  setmetatable(cls, {__index = parent})
  return cls
end

-- ------------------------------------------------------------------ small helpers --
local function shape_str(shape)
  if type(shape) ~= 'table' then return tostring(shape) end
  return '(' .. table.concat(shape, ', ') .. ')'
end
M.shape_str = shape_str

--- Formats a list of names as `{a, b, c}` for messages.
-- @param list list of strings (nil gives `{}`)
-- @return string
function M.names_str(list) return '{' .. table.concat(list or {}, ', ') .. '}' end

--- Whether two shapes (lists of dimensions) are equal.
-- @param a shape
-- @param b shape
-- @return boolean
function M.same_shape(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end

--- A list of shape descriptions {name=, shape=, dtype=, layout=, [1]=name, [2]=shape} from
--- an array of mx.io.DataDesc, an array of {name, shape} pairs, or a name -> shape table
--- (sorted by name). nil stays nil.
function M.descs(shapes, who, what)
  if shapes == nil then return nil end
  if type(shapes) ~= 'table' then
    raise(('%s: %s must be an array of mx.io.DataDesc or {name, shape} pairs, got %s'):format(who, what, type(shapes)))
  end
  local list = {}
  if #shapes == 0 then
    for k, v in pairs(shapes) do list[#list + 1] = {k, v} end
    table.sort(list, function(a, b) return tostring(a[1]) < tostring(b[1]) end)
  else
    list = shapes
  end
  local out = {}
  for i, d in ipairs(list) do
    local name, shape = d.name or d[1], d.shape or d[2]
    if type(name) ~= 'string' or type(shape) ~= 'table' then
      raise(('%s: %s[%d] must be a DataDesc or a {name, shape} pair'):format(who, what, i))
    end
    local s = {}
    for j, v in ipairs(shape) do
      if type(v) ~= 'number' or v % 1 ~= 0 or v < 0 then
        raise(('%s: %s: shape of %q must be an array of non-negative integers, got %s'):format(who, what, name, shape_str(shape)))
      end
      s[j] = v
    end
    out[i] = {name = name, shape = s, dtype = d.dtype or 'float32', layout = d.layout, [1] = name, [2] = s}
  end
  return out
end

--- Wraps a single value in a list: nil gives `{}`, a non-empty plain list is returned as is,
-- anything else (an NDArray, a string, ...) becomes `{x}`.
-- @param x value or list
-- @return list
function M.as_list(x)
  if x == nil then return {} end
  if type(x) == 'table' and getmetatable(x) == nil and #x > 0 then return x end
  return {x}
end

local function call_all(cbs, ...)
  for _, cb in ipairs(M.as_list(cbs)) do cb(...) end
end

local function clock() return require('luamx.callback').clock() end

--- Number of batches per epoch an iterator will give, when it can tell.
local function batches_per_epoch(it)
  if type(it.num_batches) == 'number' then return it.num_batches end
  local n, bs = rawget(it, 'num_data'), rawget(it, 'batch_size')
  if type(n) == 'number' and type(bs) == 'number' and bs > 0 then
    if it.last_batch_handle == 'discard' then return math.floor(n / bs) end
    return math.ceil(n / bs)
  end
  return nil
end

local function next_batch(it)
  if type(it) == 'function' then return it() end
  return it:next()
end

local function reset_iter(it) if type(it) == 'table' and it.reset then it:reset() end end

-- A data iterator (an object with next(), or a function giving batches), or an error
-- naming `who` and the argument.
local function check_iter(who, name, it)
  if type(it) == 'function' or (type(it) == 'table' and it.next) then return it end
  require('luamx.check').fail(who, name, 'a data iterator (such as mx.io.NDArrayIter) or a function giving batches', it)
end
M.check_iter = check_iter

-- Callbacks: nil or false (none), a function (or callable object) or a list of them.
local function check_callbacks(who, name, cbs)
  if cbs == false then return end
  local check = require 'luamx.check'
  for i, cb in ipairs(M.as_list(cbs)) do
    local mt = type(cb) == 'table' and getmetatable(cb)
    if type(cb) ~= 'function' and not (mt and mt.__call) then
      check.fail(who, #M.as_list(cbs) > 1 and ('%s[%d]'):format(name, i) or name, 'a function or a list of functions', cb)
    end
  end
end
M.check_callbacks = check_callbacks

-- ------------------------------------------------------------------ checkpoint files -
--- Keeps the snapshot of a checkpoint's `.states` file (luamx.manifest.check) for
-- init_optimizer: `release` removes it then, or when the module is collected if
-- init_optimizer never runs.
-- @param self the module Module.load / BucketingModule.load made
-- @param path the snapshot's path
-- @param release the function that removes it
function M.keep_preloaded_states(self, path, release)
  local ffi = require 'ffi'
  self._preload_opt_states, self._preload_release = path, release
  self._preload_guard = ffi.gc(ffi.new('char[1]'), function() release() end)
end

--- Loads the optimizer states Module.load / BucketingModule.load kept for init_optimizer
-- into `into`, then removes the snapshot of the `.states` file, whether the load worked
-- or not.
-- @param self the module that kept them
-- @param into the module whose load_optimizer_states reads them
function M.load_preloaded_states(self, into)
  local path, release, guard = self._preload_opt_states, self._preload_release, self._preload_guard
  if not path then return end
  self._preload_opt_states, self._preload_release, self._preload_guard = nil, nil, nil
  local ok, err = pcall(into.load_optimizer_states, into, path)
  if guard then require('ffi').gc(guard, nil) end
  if release then release() end
  if not ok then error(err, 0) end
end

local function write_atomic(path, text)
  require('luamx.manifest').write_atomic(path, text, 'save_checkpoint')
end
M.write_atomic = write_atomic

--- prefix-%04d.params with arg:/aux: names (CPU copies), atomically.
function M.save_params(fname, arg_params, aux_params)
  local cpu = require('luamx.context').cpu()
  local t = {}
  for k, v in pairs(arg_params) do t['arg:' .. k] = v:as_in_context(cpu) end
  for k, v in pairs(aux_params) do t['aux:' .. k] = v:as_in_context(cpu) end
  nd.save(fname, t)
end

--- arg_params, aux_params from prefix-%04d.params (keys must be arg:/aux:).
function M.load_params(fname)
  local loaded = nd.load(fname)
  local arg, aux = {}, {}
  for k, v in pairs(loaded) do
    local kind, name = tostring(k):match('^(%a+):(.+)$')
    if kind == 'arg' then arg[name] = v
    elseif kind == 'aux' then aux[name] = v
    else raise(('Invalid param file %s: key %q is not arg:<name> or aux:<name>'):format(fname, tostring(k))) end
  end
  return arg, aux
end

-- ------------------------------------------------------------------ BaseModule -----
local BaseModule = M.class(nil)
M.BaseModule = BaseModule

function BaseModule:_log(level, msg) M.log(self.logger, level, msg) end

function BaseModule:_check_ready(who, need_params)
  if not self.binded then raise(('%s: the module is not bound; call bind first'):format(who)) end
  if need_params and not self.params_initialized then
    raise(('%s: the module\'s parameters are not initialized; call init_params first'):format(who))
  end
end

--- A training `forward(batch, true)` followed by `backward()`.
-- @param batch a DataBatch
function BaseModule:forward_backward(batch)
  self:forward(batch, true)
  self:backward()
end

--- Hook run before `forward` on a batch (MXNet uses it to pull sparse rows); does nothing here.
function BaseModule:prepare() end

--- score(iter, metric [, {num_batch=, batch_end_callback=, score_end_callback=,
--- reset=true, epoch=0}]) -> metric:get_name_value().
function BaseModule:score(eval_data, eval_metric, opts)
  opts = opts or {}
  self:_check_ready('score', true)
  if eval_metric == nil then raise('score: eval_metric is required (a metric or a name such as \'acc\')') end
  check_iter('score', 'eval_data', eval_data)
  check_callbacks('score', 'batch_end_callback', opts.batch_end_callback)
  check_callbacks('score', 'score_end_callback', opts.score_end_callback)
  if opts.reset ~= false then reset_iter(eval_data) end
  local metric = require('luamx.metric').create(eval_metric)
  metric:reset()
  local nbatch = 0
  while opts.num_batch == nil or nbatch < opts.num_batch do
    local batch = next_batch(eval_data)
    if not batch then break end
    self:prepare(batch)
    self:forward(batch, false)
    self:update_metric(metric, batch.label)
    if opts.batch_end_callback then
      call_all(opts.batch_end_callback, {epoch = opts.epoch or 0, nbatch = nbatch, eval_metric = metric, locals = {}})
    end
    nbatch = nbatch + 1
  end
  if opts.score_end_callback then
    call_all(opts.score_end_callback, {epoch = opts.epoch or 0, nbatch = nbatch, eval_metric = metric, locals = {}})
  end
  return metric:get_name_value()
end

local function unpadded(outputs, pad)
  local out = {}
  for i, o in ipairs(outputs) do
    local n = o.shape[1]
    if pad and pad > 0 then out[i] = o:slice(1, n - pad) else out[i] = o end
  end
  return out
end

--- iter_predict(iter [, {num_batch=, reset=true}]): a generic-for iterator giving
--- (outputs, nbatch, batch) per batch, outputs without the padding rows (views valid
--- until the next step).
function BaseModule:iter_predict(eval_data, opts)
  opts = opts or {}
  self:_check_ready('iter_predict', true)
  check_iter('iter_predict', 'eval_data', eval_data)
  if opts.reset ~= false then reset_iter(eval_data) end
  local nbatch = -1
  return function()
    if opts.num_batch and nbatch + 1 >= opts.num_batch then return nil end
    local batch = next_batch(eval_data)
    if not batch then return nil end
    nbatch = nbatch + 1
    self:prepare(batch)
    self:forward(batch, false)
    return unpadded(self:get_outputs(), batch.pad), nbatch, batch
  end
end

local function concat_rows(list)
  local total = 0
  for _, a in ipairs(list) do total = total + a.shape[1] end
  local shape = list[1].shape
  shape[1] = total
  local out = nd.empty(shape, {dtype = list[1].dtype})
  local row = 1
  for _, a in ipairs(list) do
    local n = a.shape[1]
    if n > 0 then out:slice(row, row + n - 1):set(a) end
    row = row + n
  end
  return out
end

--- predict(iter [, {num_batch=, merge_batches=true, reset=true, always_output_list=false}]):
--- merged: one NDArray per output (a single NDArray for a single output unless
--- always_output_list), padding rows removed; not merged: {{out1_b1, ...}, {out1_b2, ...}}.
function BaseModule:predict(eval_data, opts)
  opts = opts or {}
  self:_check_ready('predict', true)
  check_iter('predict', 'eval_data', eval_data)
  local cpu = require('luamx.context').cpu()
  local batches = {}
  for outputs in self:iter_predict(eval_data, opts) do
    local copies = {}
    for i, o in ipairs(outputs) do copies[i] = o:copyto(cpu) end
    batches[#batches + 1] = copies
  end
  if #batches == 0 then return {} end
  if opts.merge_batches == false then return batches end
  local n = #batches[1]
  for _, b in ipairs(batches) do
    if #b ~= n then raise('predict: cannot merge batches, as the number of outputs differs between batches (bucketing?); pass merge_batches = false') end
  end
  local merged = {}
  for i = 1, n do
    local col = {}
    for j, b in ipairs(batches) do col[j] = b[i] end
    merged[i] = concat_rows(col)
  end
  if n == 1 and not opts.always_output_list then return merged[1] end
  return merged
end

local FIT_KEYS = {eval_data = 1, eval_metric = 1, epoch_end_callback = 1, batch_end_callback = 1,
  kvstore = 1, optimizer = 1, optimizer_params = 1, eval_end_callback = 1, eval_batch_end_callback = 1,
  initializer = 1, arg_params = 1, aux_params = 1, allow_missing = 1, force_rebind = 1, force_init = 1,
  begin_epoch = 1, num_epoch = 1, validation_metric = 1, monitor = 1, all_ranks = 1, plot = 1}

-- The dist kvstore a module trains with (nil for local training).
local function dist_store(self)
  local m = self._curr_module or self
  local kv = m._kvstore
  if kv and tostring(kv.type):find('dist', 1, true) then return kv end
  return nil
end

local function progress_bar(self, it, opts)
  if opts.batch_end_callback ~= nil or self.logger == false then return nil end
  local cb = require('luamx.callback')
  if not cb.stdout_is_terminal() then return nil end
  local total = batches_per_epoch(it)
  if not total then return nil end
  local bar = cb.ProgressBar(total, 50)
  -- counted from 1 so the bar reaches 100% and ends its line before the epoch's log lines
  return function(p)
    bar{epoch = p.epoch, nbatch = p.nbatch + 1, eval_metric = p.eval_metric, locals = p.locals}
  end
end

--- fit(train_iter, opts): trains for epochs begin_epoch .. num_epoch - 1 (see the top).
--- Returns the last epoch's metrics: {epoch =, train = {name = value}, validation = {...}}.
--- opts.plot = 'curve.png' (or .svg, or {path =, every = N}) records the metrics with
--- mx.callback.LogMetrics and draws them at the end (gnuplot; a warning when missing).
function BaseModule:fit(train_data, opts)
  opts = opts or {}
  for k in pairs(opts) do
    if not FIT_KEYS[k] then raise(('fit: unknown option %q'):format(tostring(k))) end
  end
  local check = require 'luamx.check'
  if opts.num_epoch == nil then raise('fit: num_epoch is required (the number of epochs to train)') end
  check.number('fit', 'num_epoch', opts.num_epoch, {integer = true, min = 0})
  check.number('fit', 'begin_epoch', opts.begin_epoch, {optional = true, integer = true, min = 0})
  check.type('fit', 'optimizer_params', opts.optimizer_params, 'table', true)
  for _, k in ipairs {'batch_end_callback', 'epoch_end_callback', 'eval_end_callback', 'eval_batch_end_callback'} do
    check_callbacks('fit', k, opts[k])
  end
  if opts.eval_data ~= nil then check_iter('fit', 'eval_data', opts.eval_data) end
  if type(train_data) ~= 'table' or not train_data.provide_data then
    raise('fit: train_data must be a data iterator with provide_data (e.g. mx.io.NDArrayIter)')
  end
  local metric_mod = require('luamx.metric')
  local eval_metric = metric_mod.create(opts.eval_metric or 'acc')
  local validation_metric = opts.validation_metric and metric_mod.create(opts.validation_metric) or eval_metric
  self:bind{data_shapes = train_data.provide_data, label_shapes = train_data.provide_label,
            for_training = true, force_rebind = opts.force_rebind}
  if opts.monitor then self:install_monitor(opts.monitor) end
  self:init_params{initializer = opts.initializer or require('luamx.initializer').Uniform(0.01),
                   arg_params = opts.arg_params, aux_params = opts.aux_params,
                   allow_missing = opts.allow_missing, force_init = opts.force_init}
  self:init_optimizer{kvstore = opts.kvstore == nil and 'local' or opts.kvstore,
                      optimizer = opts.optimizer or 'sgd',
                      optimizer_params = opts.optimizer_params or {learning_rate = 0.01}}
  -- Distributed: rank 0 logs the epoch summary and runs the epoch-end callbacks
  -- (checkpoints) unless all_ranks = true; every rank checks the batch count per epoch.
  local kv = dist_store(self)
  local rank, workers = kv and kv.rank or 0, kv and kv.num_workers or 1
  local leader = rank == 0 or opts.all_ranks
  local batch_cbs = opts.batch_end_callback or (leader and progress_bar(self, train_data, opts))
  local monitor = opts.monitor
  -- plot = 'curve.png' | 'curve.svg' | {path =, every =}: metrics recorded and drawn at the end
  local recorder
  if opts.plot then
    local plot = type(opts.plot) == 'table' and opts.plot or {path = opts.plot}
    recorder = require('luamx.callback').LogMetrics{every = plot.every}
    batch_cbs = M.as_list(batch_cbs)
    local cbs = {}
    for i, cb in ipairs(batch_cbs) do cbs[i] = cb end
    cbs[#cbs + 1] = recorder.batch_end_callback
    batch_cbs = cbs
    local eval_end = {}
    for i, cb in ipairs(M.as_list(opts.eval_end_callback)) do eval_end[i] = cb end
    eval_end[#eval_end + 1] = recorder.eval_end_callback
    opts = setmetatable({eval_end_callback = eval_end, _plot_path = plot.path}, {__index = opts})
  end
  local final = {epoch = nil, train = {}, validation = {}}
  for epoch = opts.begin_epoch or 0, opts.num_epoch - 1 do
    local tic = clock()
    eval_metric:reset()
    local nbatch = 0
    local batch = next_batch(train_data)
    local name_values = eval_metric:get_global_name_value()
    while batch do
      if monitor then monitor:tic() end
      self:forward_backward(batch)
      self:update()
      self:update_metric(eval_metric, batch.label)
      local nxt = next_batch(train_data)
      if nxt then self:prepare(nxt) end
      if monitor then monitor:toc_print() end
      if not nxt then name_values = eval_metric:get_global_name_value() end
      if batch_cbs then
        call_all(batch_cbs, {epoch = epoch, nbatch = nbatch, eval_metric = eval_metric,
                             rank = rank, num_workers = workers, all_ranks = opts.all_ranks,
                             locals = {self = self, data_batch = batch, epoch = epoch}})
      end
      nbatch = nbatch + 1
      batch = nxt
    end
    if kv then kv:check_consistency(('batches in epoch %d'):format(epoch), nbatch) end
    if nbatch == 0 then
      self:_log('warning', ('Epoch[%d]: the training iterator gave no batch (is it exhausted? '
        .. 'call reset() on it before fit)'):format(epoch))
    end
    final.epoch, final.train, final.validation = epoch, {}, {}
    for _, nv in ipairs(name_values) do final.train[nv[1]] = nv[2] end
    if leader then
      for _, nv in ipairs(name_values) do
        self:_log('info', ('Epoch[%d] Train-%s=%f'):format(epoch, nv[1], nv[2]))
      end
      self:_log('info', ('Epoch[%d] Time cost=%.3f'):format(epoch, clock() - tic))
    end
    local arg_params, aux_params = self:get_params()
    self:set_params(arg_params, aux_params)
    if opts.epoch_end_callback and leader then
      call_all(opts.epoch_end_callback, epoch, self.symbol, arg_params, aux_params)
    end
    if opts.eval_data then
      local res = self:score(opts.eval_data, validation_metric, {
        score_end_callback = opts.eval_end_callback, batch_end_callback = opts.eval_batch_end_callback,
        epoch = epoch})
      for _, nv in ipairs(res) do
        if leader then self:_log('info', ('Epoch[%d] Validation-%s=%f'):format(epoch, nv[1], nv[2])) end
        final.validation[nv[1]] = nv[2]
      end
    end
    reset_iter(train_data)
  end
  if recorder and opts._plot_path then
    local ok, err = pcall(recorder.plot, recorder, opts._plot_path)
    if not ok then self:_log('warning', 'fit: plot not written: ' .. tostring(err)) end
  end
  return final
end

return M
