--- luamx.executor_manager.manager — mx.executor_manager.DataParallelExecutorManager, the
-- legacy (FeedForward-era) helper of MXNet 1.x's python/mxnet/executor_manager.py.
--
-- It splits `train_data.batch_size` over the contexts with `_split_input_slice(batch_size,
-- work_load_list)` and binds one DataParallelExecutorGroup in the documented form
-- (`DataParallelExecutorGroup(sym, arg_names, param_names, ctx, slices, train_data)`);
-- with `sym_gen` (bucketing) each new `bucket_key` gets its own group, sharing parameters
-- and memory with the default bucket's. Invariant: `curr_execgrp` is the group the last
-- `load_data_batch` selected; `forward`, `backward` and `update_metric` act on it.
-- Both the positional form and one keyword table with the same names are accepted.
local capi = require 'luamx.capi'
local context = require 'luamx.context'
local raise = capi.raise

local P = {}

local POSITIONAL = {'symbol', 'ctx', 'train_data', 'arg_names', 'param_names', 'aux_names',
                    'work_load_list', 'logger', 'sym_gen'}

local function provided(data, what)
  local p = data[what]
  if type(p) == 'function' then p = p(data) end
  return p
end

--- The manager class over the executor_manager module `EM` (its group class and slicing).
-- @param EM the luamx.executor_manager module table
-- @return the DataParallelExecutorManager class
function P.new_class(EM)
  local Group = EM.DataParallelExecutorGroup
  local Manager = {}

  -- DataParallelExecutorManager(symbol, ctx, train_data, arg_names, param_names, aux_names,
  -- work_load_list, logger, sym_gen) or the same names in one table.
  local function new(cls, first, ...)
    local o
    if require('luamx.symbol').is_symbol(first) then
      o = {}
      local rest = {...}
      o.symbol = first
      for i = 2, #POSITIONAL do o[POSITIONAL[i]] = rest[i - 1] end
    elseif type(first) == 'table' then
      o = first
    else
      raise('DataParallelExecutorManager: expected a Symbol (positional form) or a table of options, got ' .. type(first))
    end
    if not require('luamx.symbol').is_symbol(o.symbol) then
      raise('DataParallelExecutorManager: symbol must be a Symbol, got ' .. type(o.symbol))
    end
    if type(o.train_data) ~= 'table' then
      raise('DataParallelExecutorManager: train_data must be a DataIter, got ' .. type(o.train_data))
    end
    local self = setmetatable({}, cls)
    self.ctx = type(o.ctx) == 'table' and #o.ctx > 0 and o.ctx or {o.ctx or context.cpu()}
    local n = #self.ctx
    local wl = o.work_load_list
    if wl == nil then
      wl = {}
      for i = 1, n do wl[i] = 1 end
    end
    if type(wl) ~= 'table' or #wl ~= n then raise('Invalid settings for work load. ') end
    self.work_load_list = wl
    local logger = o.logger
    if logger and logger.info then
      local t = {}
      for i, c in ipairs(self.ctx) do t[i] = tostring(c) end
      logger.info(('Start training with [%s]'):format(table.concat(t, ', ')))
    end
    local batch_size = o.train_data.batch_size
    if batch_size == nil then
      local pd = provided(o.train_data, 'provide_data') or {}
      local d = pd[1]
      batch_size = d and (d.shape or d[2]) and (d.shape or d[2])[1]
    end
    if type(batch_size) ~= 'number' then
      raise('DataParallelExecutorManager: train_data.batch_size must be a number, got ' .. type(batch_size))
    end
    self.slices = EM._split_input_slice(batch_size, wl)
    self.arg_names = o.arg_names or o.symbol:list_arguments()
    self.param_names = o.param_names or {}
    self.aux_names = o.aux_names or o.symbol:list_auxiliary_states()
    self.symbol, self.sym_gen, self.logger = o.symbol, o.sym_gen, logger
    self.execgrp = Group(o.symbol, self.arg_names, self.param_names, self.ctx, self.slices, o.train_data)
    self.curr_execgrp = nil
    if self.sym_gen then self.execgrp_bucket = {[o.train_data.default_bucket_key] = self.execgrp} end
    return self
  end

  --- Installs a Monitor on every executor (not supported with bucketing, `sym_gen`).
  -- @param monitor a `mx.monitor.Monitor`
  function Manager:install_monitor(monitor)
    if self.sym_gen then raise('Monitoring is not implemented for bucketing') end
    self.execgrp:install_monitor(monitor)
  end

  --- Copies parameter values into every executor (names the executors lack are an error).
  -- @param arg_params table name -> NDArray of argument values
  -- @param aux_params table name -> NDArray of auxiliary-state values
  function Manager:set_params(arg_params, aux_params)
    self.execgrp:set_params(arg_params, aux_params)
  end

  --- Copies the parameters out: each is the average over the contexts, cast to the
  -- target's dtype and written into the given arrays (in place).
  -- @param arg_params table name -> NDArray, one for each of `param_names`
  -- @param aux_params table name -> NDArray, one for each of `aux_names`
  function Manager:copy_to(arg_params, aux_params)
    for _, list in ipairs{{self.param_names, arg_params, 'arg_params'}, {self.aux_names, aux_params, 'aux_params'}} do
      for _, name in ipairs(list[1]) do
        if type(list[2]) ~= 'table' or list[2][name] == nil then
          raise(("copy_to: %s has no array for '%s'"):format(list[3], name))
        end
      end
    end
    self.execgrp:get_params(arg_params, aux_params)
  end

  --- Loads a batch into the executors; with bucketing (`sym_gen`) it first selects (or
  -- builds, sharing memory with the default bucket) the group for `data_batch.bucket_key`.
  -- @param data_batch a DataBatch (`data`, `label`, and `bucket_key` when bucketing)
  function Manager:load_data_batch(data_batch)
    if self.sym_gen then
      local key = data_batch.bucket_key
      local grp = self.execgrp_bucket[key]
      if not grp then
        local sym = self.sym_gen(key)
        if not require('luamx.symbol').is_symbol(sym) then
          raise(('sym_gen(%s) must return a Symbol, got %s'):format(tostring(key), type(sym)))
        end
        self.arg_names = sym:list_arguments()
        local shapes = data_batch
        if provided(data_batch, 'provide_data') == nil then -- shapes from the arrays
          local pd, pl = {}, {}
          for i, a in ipairs(data_batch.data or {}) do pd[i] = {self.execgrp.data_names[i], a.shape} end
          for i, a in ipairs(data_batch.label or {}) do pl[i] = {self.execgrp.label_names[i], a.shape} end
          shapes = {provide_data = pd, provide_label = pl}
        end
        grp = Group(sym, self.arg_names, self.param_names, self.ctx, self.slices, shapes, self.execgrp)
        self.execgrp_bucket[key] = grp
      end
      self.curr_execgrp = grp
    else
      self.curr_execgrp = self.execgrp
    end
    self.curr_execgrp:load_data_batch(data_batch)
  end

  local function current(self)
    if not self.curr_execgrp then raise('DataParallelExecutorManager: call load_data_batch first') end
    return self.curr_execgrp
  end

  --- Runs forward on the current executor group.
  -- @param is_train whether this is a training pass (default false; affects Dropout, BatchNorm, ...)
  function Manager:forward(is_train) current(self):forward(is_train and true or false) end
  --- Runs backward on the current executor group (after a `forward(true)`).
  function Manager:backward() current(self):backward() end
  --- Updates a metric with the current outputs.
  -- @param metric an EvalMetric
  -- @param labels list of label NDArrays of the batch (or, with `pre_sliced`, one list per context)
  -- @param pre_sliced when true, `labels` is already split per context
  function Manager:update_metric(metric, labels, pre_sliced)
    current(self):update_metric(metric, labels, pre_sliced)
  end

  -- param_arrays, grad_arrays, aux_arrays: the default group's (shared by every bucket).
  local props = {
    param_arrays = function(m) return m.execgrp.param_arrays end,
    grad_arrays = function(m) return m.execgrp.grad_arrays end,
    aux_arrays = function(m) return m.execgrp.aux_arrays end,
  }
  Manager.__index = function(m, k)
    local v = Manager[k]
    if v ~= nil then return v end
    local p = props[k]
    if p then return p(m) end
    return nil
  end
  Manager.__tostring = function(m)
    return ('<DataParallelExecutorManager: %d contexts>'):format(#m.ctx)
  end
  return setmetatable(Manager, {__call = new})
end

return P
