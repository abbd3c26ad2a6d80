--- luamx.executor_manager — mx.executor_manager: DataParallelExecutorGroup (MXNet 1.9
-- python/mxnet/module/executor_group.py) and the legacy DataParallelExecutorManager
-- (python/mxnet/executor_manager.py), over the engine's group (src/exec/group.c).
-- The group takes both constructors: the documented one of python/mxnet/executor_manager.py,
-- DataParallelExecutorGroup(sym, arg_names, param_names, ctx, slices, train_data,
-- shared_group) (then forward(is_train) defaults to false, as there), and the module-era
-- keyword table (`symbol =`, `contexts =`, ...) that mx.mod.Module binds with.
--
-- The engine owns the executors (one per context), the slicing (MXNet's
-- _split_input_slice), loading (each context copies its rows of the batch), forward and
-- backward (one persistent worker thread per context), merging outputs along axis 0 and
-- summing gradients. This file resolves MXNet's grad_req rules and layouts, wraps the
-- executors as Executor objects (their arrays are the engine's own, so they see every
-- step's results) and keeps MXNet's names:
--   param_arrays[i][k] / grad_arrays[i][k]: parameter i (param_names order) on context k
--   (grad_arrays[i] is false when the parameter has no gradient); aux_arrays likewise;
--   slices[k] = {begin, end} (0-based, end exclusive), as MXNet's slice objects.
-- Batch axes: position of 'N' in a DataDesc layout (no layout: 0; no 'N': not sliced).
-- Only axis 0 or unsliced inputs are supported (the engine says so otherwise); outputs
-- are merged along axis 0.
-- Monitor callbacks are delivered on the calling thread after each step (context 0's
-- records first); the C calls that may deliver them are kept out of JIT traces.
-- Extension: group:sum_gradients() writes the sum over contexts into every context's
-- gradient arrays (what a kvstore push/pull of the gradients would do).
local ffi = require 'ffi'
local capi = require 'luamx.capi'
local context = require 'luamx.context'
local nd = require 'luamx.ndarray'
local C, check, raise = capi.C, capi.check, capi.raise

local M = {}
local Group = {}
M.DataParallelExecutorGroup = Group

local REQ = require('luamx.executor').REQ

-- holder.busy counts the runs in progress: a monitor callback or a custom operator may not
-- free, rebind, reshape or re-monitor the group under a running step (the engine would free
-- the executors it is running, the FFI callback it is in; the engine itself holds the group
-- while a step runs, so a C caller's lmx_group_free from a callback frees it after).
local function c_forward(holder, h, n, names, arrays, is_train)
  holder.busy = (holder.busy or 0) + 1
  local rc = C.lmx_group_forward(h, n, names, arrays, is_train)
  holder.busy = holder.busy - 1
  return rc
end
local function c_backward(holder, h, n, arrays)
  holder.busy = (holder.busy or 0) + 1
  local rc = C.lmx_group_backward(h, n, arrays)
  holder.busy = holder.busy - 1
  return rc
end

local function not_running(self, what)
  local holder = rawget(self, '_holder')
  if holder and (holder.busy or 0) > 0 then
    raise(('DataParallelExecutorGroup:%s: cannot run while the group\'s forward or backward is '
      .. 'running (called from a monitor callback or a custom operator); call it after '
      .. 'forward/backward returns'):format(what))
  end
end
jit.off(c_forward)
jit.off(c_backward)

-- ------------------------------------------------------------------ helpers --------
local function set_of(list)
  local s = {}
  for _, n in ipairs(list or {}) do s[n] = true end
  return s
end

--- {name=, shape=, layout=} from a DataDesc or a {name, shape} pair.
local function desc(d, who)
  local name, shape = d.name or d[1], d.shape or d[2]
  if type(name) ~= 'string' or type(shape) ~= 'table' then
    raise(who .. ': data and label shapes are DataDesc objects or {name, shape} pairs')
  end
  return {name = name, shape = shape, layout = d.layout, dtype = d.dtype}
end

local function descs(list, who)
  local out = {}
  for i, d in ipairs(list or {}) do out[i] = desc(d, who) end
  return out
end

local function batch_axis(layout)
  if layout == nil then return 0 end
  local p = tostring(layout):find('N', 1, true)
  return p and p - 1 or -1
end

--- MXNet's _split_input_slice: {{begin, end}, ...} (0-based, end exclusive).
function M.split_input_slice(batch_size, work_load_list)
  local n = #work_load_list
  local w = ffi.new('double[?]', n)
  for i, v in ipairs(work_load_list) do w[i - 1] = v end
  local b, e = ffi.new('int64_t[?]', n), ffi.new('int64_t[?]', n)
  check(C.lmx_split_slices(batch_size, n, w, b, e), 2)
  local out = {}
  for i = 1, n do out[i] = {tonumber(b[i - 1]), tonumber(e[i - 1])} end
  return out
end
M._split_input_slice = M.split_input_slice

local function contexts_of(ctx)
  if ctx == nil then return {context.cpu()} end
  if type(ctx) == 'table' and #ctx > 0 then return ctx end
  return {ctx}
end

-- MXNet's grad_req resolution (executor_group.py _get_grad_req semantics).
local function grad_reqs(self, gr)
  local reqs = {}
  local params, fixed, data = set_of(self.param_names), set_of(self.fixed_param_names),
    set_of(self.data_names)
  local default = type(gr) == 'string' and gr or 'write'
  for _, a in ipairs(self.arg_names) do
    local r = 'null'
    if self.for_training then
      if params[a] then r = fixed[a] and 'null' or default
      elseif data[a] and self.inputs_need_grad then r = default end
    end
    reqs[a] = r
  end
  if type(gr) == 'table' then
    if #gr > 0 then for i, a in ipairs(self.arg_names) do reqs[a] = gr[i] end
    else for k, v in pairs(gr) do reqs[k] = v end end
  end
  for a, r in pairs(reqs) do
    if REQ[r] == nil then raise(('DataParallelExecutorGroup: grad_req %q for %q (expected write, add or null)'):format(tostring(r), a)) end
  end
  return reqs
end

local function int64s(shape, what)
  nd.check_dims(shape, what)
  local d = ffi.new('int64_t[?]', #shape + 1)
  for i, v in ipairs(shape) do d[i - 1] = v end
  return d
end

-- ------------------------------------------------------------------ the group ------
local function make_group(self, o)
  local n = #self.contexts
  local types, ids = ffi.new('int[?]', n), ffi.new('int[?]', n)
  local wl = ffi.new('double[?]', n)
  for i, ctx in ipairs(self.contexts) do
    local c = context.resolve(ctx, 4)
    types[i - 1], ids[i - 1], wl[i - 1] = c.dev_code, c.device_id, self.workload[i]
  end
  local out = ffi.new('lmx_group *[1]')
  check(C.lmx_group_new(self.symbol._h, n, types, ids, wl, out), 4)
  local holder = {}
  self._holder = holder
  self._g = ffi.gc(out[0], function(p)
    C.lmx_group_free(p)
    if holder.cb then holder.cb:free() end
  end)
  local reqs = grad_reqs(self, o.grad_req or 'write')
  for _, d in ipairs(self._inputs) do
    local dt = d.dtype and nd.dtype_code(d.dtype, 4) or -1
    local dims = int64s(d.shape, ("DataParallelExecutorGroup: shape of '%s'"):format(tostring(d.name)))
    check(C.lmx_group_add_input(self._g, d.name, dims, #d.shape, batch_axis(d.layout),
                                dt, REQ[reqs[d.name] or 'null']), 4)
  end
  for _, p in ipairs(self.param_names) do
    check(C.lmx_group_add_param(self._g, p, REQ[reqs[p] or 'null']), 4)
  end
  check(C.lmx_group_bind(self._g, o.shared_group and o.shared_group._g or nil), 4)
end

local function by_name(names, arrays)
  local t = {}
  for i, n in ipairs(names) do t[n] = arrays[i] end
  return t
end

-- Executors and the per-parameter lists, after bind and after each reshape.
function Group:_collect()
  local n = #self.contexts
  local out = ffi.new('lmx_executor *[1]')
  local wrap = require('luamx.executor').wrap
  self.execs = {}
  for k = 1, n do
    check(C.lmx_group_executor(self._g, k - 1, out), 3)
    self.execs[k] = wrap(out[0], self.symbol, context.resolve(self.contexts[k]))
  end
  local slices = M.slices_of(self)
  self.slices, self.batch_size = slices, slices[#slices][2]
  self.param_arrays, self.grad_arrays, self.aux_arrays, self.state_arrays = {}, {}, {}, {}
  local args, grads, auxs = {}, {}, {}
  for k, e in ipairs(self.execs) do
    args[k], auxs[k] = by_name(e._arg_names, e.arg_arrays), by_name(e._aux_names, e.aux_arrays)
    grads[k] = {}
    for i, name in ipairs(e._arg_names) do grads[k][name] = e.grad_arrays[i] end
  end
  for i, p in ipairs(self.param_names) do
    local ws, gs = {}, {}
    for k = 1, n do ws[k], gs[k] = args[k][p], grads[k][p] end
    self.param_arrays[i], self.grad_arrays[i] = ws, (#gs == n) and gs or false
  end
  for i, a in ipairs(self.aux_names) do
    local t = {}
    for k = 1, n do t[k] = auxs[k][a] end
    self.aux_arrays[i] = t
  end
  for i, s in ipairs(self.state_names) do
    local t = {}
    for k = 1, n do t[k] = args[k][s] end
    self.state_arrays[i] = t
  end
  -- MXNet's data_arrays / label_arrays: per input, one {slice, array} per context
  self.train_execs, self.data_arrays, self.label_arrays = self.execs, {}, {}
  for _, which in ipairs{{self.data_names, self.data_arrays}, {self.label_names, self.label_arrays}} do
    for i, name in ipairs(which[1]) do
      local t = {}
      for k = 1, n do t[k] = {slices[k], args[k][name]} end
      which[2][i] = t
    end
  end
  self.output_shapes = {}
  for j, name in ipairs(self.execs[1]._out_names) do
    local shape = self.execs[1].outputs[j].shape
    for k = 2, n do shape[1] = shape[1] + self.execs[k].outputs[j].shape[1] end
    self.output_shapes[j] = {name = name, shape = shape, [1] = name, [2] = shape}
  end
end

--- The batch slice of each device of an executor group: the rows the engine gives each
-- context (by its work load), as MXNet's `_split_input_slice`.
-- @param self an executor group
-- @return list of `{begin, end}` pairs (0-based, end exclusive), one per context
function M.slices_of(self)
  local n = #self.contexts
  local b, e = ffi.new('int64_t[?]', n), ffi.new('int64_t[?]', n)
  check(C.lmx_group_slices(self._g, b, e), 3)
  local s = {}
  for k = 1, n do s[k] = {tonumber(b[k - 1]), tonumber(e[k - 1])} end
  return s
end

-- The module-era form: DataParallelExecutorGroup{symbol=, contexts=, workload=,
-- data_shapes=, label_shapes=, param_names=, for_training=, inputs_need_grad=,
-- shared_group=, fixed_param_names=, grad_req=, state_names=, logger=}
local function new_group(o)
  local sym_mod = require('luamx.symbol')
  if type(o) ~= 'table' or not sym_mod.is_symbol(o.symbol) then
    raise('DataParallelExecutorGroup: symbol must be a Symbol')
  end
  local self = setmetatable({}, Group)
  self.symbol, self.contexts = o.symbol, contexts_of(o.contexts)
  self.workload = o.workload or {}
  if #self.workload == 0 then for i = 1, #self.contexts do self.workload[i] = 1 end end
  if #self.workload ~= #self.contexts then raise('Invalid settings for work load. ') end
  self.arg_names = o.symbol:list_arguments()
  self.aux_names = o.symbol:list_auxiliary_states()
  self.param_names = o.param_names or {}
  self.fixed_param_names = o.fixed_param_names or {}
  self.state_names = o.state_names or {}
  self.for_training = o.for_training ~= false
  self.inputs_need_grad = o.inputs_need_grad and true or false
  self.logger = o.logger
  self.data_shapes = descs(o.data_shapes, 'DataParallelExecutorGroup')
  self.label_shapes = o.label_shapes and descs(o.label_shapes, 'DataParallelExecutorGroup') or nil
  if #self.data_shapes == 0 then raise('DataParallelExecutorGroup: data_shapes is required') end
  self.data_names, self.label_names, self._inputs = {}, {}, {}
  for i, d in ipairs(self.data_shapes) do self.data_names[i] = d.name; self._inputs[#self._inputs + 1] = d end
  for i, d in ipairs(self.label_shapes or {}) do self.label_names[i] = d.name; self._inputs[#self._inputs + 1] = d end
  self._mon_fns = {}
  self._grad_req = o.grad_req
  self._legacy = o._legacy
  make_group(self, o)
  self:_collect()
  return self
end

--- DataParallelExecutorGroup(sym, arg_names, param_names, ctx, slices, train_data,
-- shared_group): the group of executors documented by MXNet's `mxnet.executor_manager`,
-- also accepted as one keyword table with those names (`{sym =, arg_names =, ...}`).
-- The module-era form (a table with `symbol =`, as `mx.mod.Module` binds it) is kept.
--
-- In this form every data and label input is split along axis 0 by `slices`, parameters
-- (the names of `arg_names` found in `param_names`, in `arg_names` order) get gradients
-- ('write'), and `forward(is_train)` defaults to `is_train = false`, as MXNet's legacy group.
-- @function DataParallelExecutorGroup
-- @param sym the Symbol
-- @param arg_names `sym:list_arguments()` (checked)
-- @param param_names names of the trainable parameters
-- @param ctx a Context or list of Contexts
-- @param slices one `{begin, end}` (0-based, end exclusive) per context, contiguous from 0,
--   as `_split_input_slice` returns
-- @param train_data anything with `provide_data` and `provide_label` (a DataIter or DataBatch)
-- @param shared_group optional DataParallelExecutorGroup to share parameters and memory with
-- @return a DataParallelExecutorGroup
local function legacy_group(sym, arg_names, param_names, ctx, slices, train_data, shared_group)
  local who = 'DataParallelExecutorGroup'
  local sym_mod = require('luamx.symbol')
  if not sym_mod.is_symbol(sym) then
    raise(who .. ': sym must be a Symbol, got ' .. type(sym))
  end
  local actual = sym:list_arguments()
  if type(arg_names) ~= 'table' or table.concat(arg_names, ',') ~= table.concat(actual, ',') then
    raise(('%s: arg_names must equal sym:list_arguments() {%s}, got %s'):format(who,
      table.concat(actual, ', '), type(arg_names) == 'table' and '{' .. table.concat(arg_names, ', ') .. '}' or type(arg_names)))
  end
  if type(param_names) ~= 'table' then raise(who .. ': param_names must be a list of names, got ' .. type(param_names)) end
  local ctxs = contexts_of(ctx)
  if type(slices) ~= 'table' or #slices ~= #ctxs then
    raise(('%s: slices must hold one {begin, end} per context (%d), got %s'):format(who, #ctxs,
      type(slices) == 'table' and tostring(#slices) or type(slices)))
  end
  local workload, at = {}, 0
  for k, s in ipairs(slices) do
    local b, e = type(s) == 'table' and s[1], type(s) == 'table' and s[2]
    if type(b) ~= 'number' or type(e) ~= 'number' or b ~= at or e <= b then
      raise(('%s: slices[%d] must be {%d, end > %d} (contiguous from 0), got %s'):format(who, k, at, at,
        type(s) == 'table' and ('{' .. tostring(b) .. ', ' .. tostring(e) .. '}') or type(s)))
    end
    workload[k], at = e - b, e
  end
  if type(train_data) ~= 'table' then
    raise(who .. ': train_data must have provide_data and provide_label, got ' .. type(train_data))
  end
  local wanted = set_of(param_names)
  local params = {}
  for _, a in ipairs(actual) do if wanted[a] then params[#params + 1] = a end end
  -- every input is split along axis 0 into the given slices: batch = the slices' end
  local function resized(list)
    local out = {}
    for i, d in ipairs(descs(list, who)) do
      local shape = {at}
      for j = 2, #d.shape do shape[j] = d.shape[j] end
      out[i] = {name = d.name, shape = shape, dtype = d.dtype}
    end
    return out
  end
  local function provided(what)
    local p = train_data[what]
    if type(p) == 'function' then p = p(train_data) end
    return p or {}
  end
  return new_group{symbol = sym, contexts = ctxs, workload = workload,
    data_shapes = resized(provided('provide_data')), label_shapes = resized(provided('provide_label')),
    param_names = params, for_training = true, shared_group = shared_group, _legacy = true}
end

local function construct(_, a, ...)
  local sym_mod = require('luamx.symbol')
  if sym_mod.is_symbol(a) then return legacy_group(a, ...) end
  if type(a) == 'table' and a.symbol == nil and (a.sym ~= nil or a.train_data ~= nil) then
    return legacy_group(a.sym, a.arg_names, a.param_names, a.ctx, a.slices, a.train_data, a.shared_group)
  end
  return new_group(a)
end
setmetatable(Group, {__call = construct})

-- After free(), anything that needs the engine's group says so.
Group.__index = function(t, k)
  local v = Group[k]
  if v == nil and k == '_g' and rawget(t, '_freed') then
    raise('DataParallelExecutorGroup: the group was freed (group:free()); bind a new one')
  end
  return v
end

--- Frees the engine's group now (its worker threads, its references to its executors)
-- and its monitor callback, instead of at garbage collection; the executors and arrays
-- handed out stay valid while referenced. Refused, with an error, from a callback that
-- runs inside the group's forward or backward (a monitor, a custom operator); a second
-- call does nothing.
function Group:free()
  local g = rawget(self, '_g')
  if not g then return end
  not_running(self, 'free')
  ffi.gc(g, nil)
  C.lmx_group_free(g)
  local holder = rawget(self, '_holder')
  if holder and holder.cb then holder.cb:free(); holder.cb = nil end
  rawset(self, '_g', nil)
  rawset(self, '_freed', true)
end

--- bind_exec(data_shapes, label_shapes, shared_group, reshape): the constructor binds;
--- this rebinds for new shapes (reshape = true: as reshape(), sharing memory with the
--- executors first bound; else fresh executors, optionally sharing with shared_group).
function Group:bind_exec(data_shapes, label_shapes, shared_group, reshape)
  not_running(self, 'bind_exec')
  if reshape then return self:reshape(data_shapes, label_shapes) end
  self.data_shapes = descs(data_shapes, 'bind_exec')
  self.label_shapes = label_shapes and descs(label_shapes, 'bind_exec') or nil
  self.data_names, self.label_names, self._inputs = {}, {}, {}
  for i, d in ipairs(self.data_shapes) do self.data_names[i] = d.name; self._inputs[#self._inputs + 1] = d end
  for i, d in ipairs(self.label_shapes or {}) do self.label_names[i] = d.name; self._inputs[#self._inputs + 1] = d end
  make_group(self, {grad_req = self._grad_req, shared_group = shared_group})
  self:_collect()
  if next(self._mon_fns) then self:_install_callback() end -- the monitor carries over
end

local function same_descs(a, b)
  if #a ~= #(b or {}) then return false end
  for i, d in ipairs(a) do
    if d.name ~= b[i].name or table.concat(d.shape, ',') ~= table.concat(b[i].shape, ',') then
      return false
    end
  end
  return true
end

--- reshape(data_shapes, label_shapes): new executors for a new batch (shared memory).
function Group:reshape(data_shapes, label_shapes)
  not_running(self, 'reshape')
  local d = descs(data_shapes, 'reshape')
  local l = label_shapes and descs(label_shapes, 'reshape') or nil
  if same_descs(d, self.data_shapes) and same_descs(l or {}, self.label_shapes or {}) then return end
  local all = {}
  for _, x in ipairs(d) do all[#all + 1] = x end
  for _, x in ipairs(l or {}) do all[#all + 1] = x end
  local n = #all
  local names, ndims = ffi.new('const char *[?]', n), ffi.new('int[?]', n)
  local total = 0
  for _, x in ipairs(all) do
    total = total + nd.check_dims(x.shape, ("reshape: shape of '%s'"):format(tostring(x.name)))
  end
  local dims, at = ffi.new('int64_t[?]', total + 1), 0
  for i, x in ipairs(all) do
    names[i - 1], ndims[i - 1] = x.name, #x.shape
    for _, v in ipairs(x.shape) do dims[at] = v; at = at + 1 end
  end
  check(C.lmx_group_reshape(self._g, n, names, dims, ndims), 2)
  self.data_shapes = d
  if l then self.label_shapes = l end
  self:_collect()
end

--- Copies parameter values into every device's executor.
-- @param arg_params table name -> NDArray of argument values
-- @param aux_params table name -> NDArray of auxiliary-state values
-- @param allow_extra when true, names the executors do not have are ignored instead of raising
function Group:set_params(arg_params, aux_params, allow_extra)
  for _, e in ipairs(self.execs) do e:copy_params_from(arg_params, aux_params, allow_extra) end
end

local function average_into(list, dst)
  local cpu = context.cpu()
  local sum = list[1]:copyto(cpu)
  for k = 2, #list do sum = sum + list[k]:copyto(cpu) end
  if #list > 1 then sum = sum / #list end
  sum:astype(dst.dtype):copyto(dst)
end

--- get_params(arg_params, aux_params): device averages copied into the given tables.
function Group:get_params(arg_params, aux_params)
  for i, p in ipairs(self.param_names) do
    if arg_params[p] then average_into(self.param_arrays[i], arg_params[p]) end
  end
  for i, a in ipairs(self.aux_names) do
    if aux_params and aux_params[a] then average_into(self.aux_arrays[i], aux_params[a]) end
  end
end

-- names/arrays of a batch's data (and labels when both exist) as C lists.
local function batch_lists(self, batch)
  local names, arrays = {}, {}
  for i, a in ipairs(batch.data or {}) do names[#names + 1], arrays[#arrays + 1] = self.data_names[i], a end
  if batch.label and #batch.label > 0 and #self.label_names > 0 then
    for i, a in ipairs(batch.label) do names[#names + 1], arrays[#arrays + 1] = self.label_names[i], a end
  end
  local n = #names
  local cn, ca = ffi.new('const char *[?]', n + 1), ffi.new('lmx_ndarray *[?]', n + 1)
  for i = 1, n do
    if not names[i] then raise(('forward: the batch has more arrays than the group has inputs (%d)'):format(#self._inputs)) end
    cn[i - 1], ca[i - 1] = names[i], nd.handle(arrays[i])
  end
  return n, cn, ca, names
end

local function raise_monitor_error(self)
  local err = self._holder.err
  if err then
    self._holder.err = nil
    raise('monitor callback failed: ' .. tostring(err))
  end
end

--- forward(data_batch, is_train): loads the batch (data, and labels when present) and
--- runs every context. is_train defaults to for_training.
-- The documented legacy form is forward(is_train = false): a boolean first argument (or no
-- argument at all on a group built by the documented constructor) runs on what
-- load_data_batch loaded.
function Group:forward(data_batch, is_train)
  if type(data_batch) == 'boolean' or (data_batch == nil and is_train == nil and self._legacy) then
    data_batch, is_train = nil, data_batch or false
  elseif data_batch ~= nil and type(data_batch) ~= 'table' then
    raise(('forward: data_batch must be a DataBatch or is_train a boolean, got %s'):format(type(data_batch)))
  end
  if is_train == nil then is_train = self.for_training end
  local n, cn, ca, anchor = batch_lists(self, data_batch or {})
  local rc = c_forward(self._holder, self._g, n, cn, ca, is_train and 1 or 0)
  local _ = anchor
  raise_monitor_error(self)
  check(rc, 2)
end

--- load_data_batch(data_batch): copies the batch's slices in without running.
function Group:load_data_batch(data_batch)
  not_running(self, 'load_data_batch')
  local n, cn, ca, anchor = batch_lists(self, data_batch)
  check(C.lmx_group_load(self._g, n, cn, ca), 2)
  local _ = anchor
end

--- backward(out_grads): out_grads in the merged (whole-batch) shapes, or nil.
function Group:backward(out_grads)
  local okv = self._overlap_kv
  if okv and not rawget(okv, '_h') then self:set_overlap(nil) end -- the store was freed
  local n = out_grads and #out_grads or 0
  local arr = ffi.new('lmx_ndarray *[?]', n + 1)
  for i = 1, n do arr[i - 1] = out_grads[i] and nd.handle(out_grads[i]) or nil end
  local rc = c_backward(self._holder, self._g, n, arr)
  raise_monitor_error(self)
  check(rc, 2)
end

--- Overlaps a dist kvstore's all-reduces with backward (`lmx_group_set_overlap`): each
-- backward starts the reduction of the parameters `names` (the keys of the pushpull that
-- follows, in its order) as their gradients become final. A no-op unless `kv` is a dist
-- store of several workers, the group has one context and every parameter has
-- grad_req 'write'; `kv` nil turns it off.
-- @param kv a KVStore or nil
-- @param names list of parameter names (the kvstore keys)
-- @return true when overlap applies
function Group:set_overlap(kv, names)
  not_running(self, 'set_overlap')
  names = names or {}
  local cn = ffi.new('const char *[?]', #names + 1)
  for i, n in ipairs(names) do cn[i - 1] = n end
  local armed = ffi.new('int[1]')
  check(C.lmx_group_set_overlap(self._g, kv and rawget(kv, '_h') or nil, #names, cn, armed), 2)
  self._overlap_kv = kv -- kept alive while the group may use it
  return armed[0] == 1
end

--- Sums gradients over the contexts into every context's gradient arrays.
function Group:sum_gradients() check(C.lmx_group_sum_grads(self._g), 2) end

local function gather(self, count, per_ctx, merged, merge)
  local out, n = {}, #self.execs
  for j = 1, count do
    if merge and n > 1 then
      out[j] = merged(j):copy()
    elseif merge then
      out[j] = per_ctx(1, j)
    else
      local parts = {}
      for k = 1, n do parts[k] = per_ctx(k, j) end
      out[j] = parts
    end
  end
  return out
end

--- get_outputs(merge_multi_context = true)
function Group:get_outputs(merge_multi_context)
  local a = ffi.new('lmx_ndarray *[1]')
  return gather(self, #self.execs[1].outputs,
    function(k, j) return self.execs[k].outputs[j] end,
    function(j) check(C.lmx_group_output(self._g, j - 1, -1, a), 4) return nd.wrap(a[0]) end,
    merge_multi_context ~= false)
end

--- get_input_grads(merge_multi_context = true): gradients of the data inputs.
function Group:get_input_grads(merge_multi_context)
  if not self.inputs_need_grad then raise('get_input_grads: bind with inputs_need_grad = true') end
  local a = ffi.new('lmx_ndarray *[1]')
  return gather(self, #self.data_names,
    function(k, j) return self.execs[k].grad_dict[self.data_names[j]] end,
    function(j) check(C.lmx_group_input_grad(self._g, j - 1, -1, a), 4) return nd.wrap(a[0]) end,
    merge_multi_context ~= false)
end

--- The state arrays of the executors (inputs named in `state_names`), per state then per device.
-- @param merge_multi_context must be false or nil (merging is not supported)
-- @return list (one per state) of lists (one per device) of NDArrays
function Group:get_states(merge_multi_context)
  if merge_multi_context then raise('get_states: merge_multi_context = true is not supported') end
  return self.state_arrays
end

--- Sets the state arrays, either copied from `states` or filled with `value`.
-- @param states list (per state) of lists (per device) of NDArrays, as `get_states` returns
-- @param value a number every state array is filled with (give this or `states`, not both)
function Group:set_states(states, value)
  if states ~= nil and value ~= nil then raise('set_states: give states or value, not both') end
  if states ~= nil then
    for i, per_dev in ipairs(states) do
      for k, a in ipairs(per_dev) do a:copyto(self.state_arrays[i][k]) end
    end
  else
    for _, per_dev in ipairs(self.state_arrays) do
      for _, a in ipairs(per_dev) do a:fill(value) end
    end
  end
end

--- Updates a metric with each context's outputs against its rows of the labels.
-- @param eval_metric an EvalMetric
-- @param labels list of whole-batch label NDArrays, or with `pre_sliced` one such list per
--   context (`labels[k]` for context k)
-- @param pre_sliced when true, `labels` is already split per context
function Group:update_metric(eval_metric, labels, pre_sliced)
  if type(labels) ~= 'table' then raise('update_metric: labels must be a list of NDArrays, got ' .. type(labels)) end
  if pre_sliced and #labels ~= #self.execs then
    raise(('update_metric: pre_sliced labels must hold one list per context (%d), got %d'):format(#self.execs, #labels))
  end
  for k, e in ipairs(self.execs) do
    local ls
    if pre_sliced then ls = labels[k]
    elseif #self.execs == 1 then ls = labels
    else
      local s = self.slices[k]
      ls = {}
      for j, l in ipairs(labels) do ls[j] = l:slice(s[1] + 1, s[2]) end
    end
    eval_metric:update(ls, e.outputs)
  end
end

-- One monitor target per context: what Monitor:install needs (set_monitor_callback,
-- arg_arrays, aux_arrays, names), always reading the group's current executor.
-- A target holds its group weakly: the ffi callback (never collected) reaches the
-- monitor functions, which reach the targets, so a strong reference would keep the
-- group alive forever.
local Target = {}
local function group_of(t)
  local g = t._ref.g
  if not g then raise('monitor target: the executor group has been collected') end
  return g
end
Target.__index = function(t, k)
  local v = Target[k]
  if v ~= nil then return v end
  return group_of(t).execs[t._k][k]
end
--- Sets the monitor callback of this device's executor (as `Executor:set_monitor_callback`).
-- @param fn called as `fn(name, array)` for each monitored array
-- @param monitor_all when true, inputs of each node are monitored too, not only outputs
function Target:set_monitor_callback(fn, monitor_all)
  local g = group_of(self)
  g._mon_fns[self._k] = fn
  g._mon_all = g._mon_all or monitor_all
  g:_install_callback()
end
--- Argument names of this device's executor.
-- @return list of strings
function Target:list_arguments() return group_of(self).execs[self._k]:list_arguments() end
--- Auxiliary-state names of this device's executor.
-- @return list of strings
function Target:list_auxiliary_states() return group_of(self).execs[self._k]:list_auxiliary_states() end

function Group:_install_callback()
  not_running(self, 'set_monitor_callback')
  local holder, fns = self._holder, self._mon_fns
  if not holder.cb then
    holder.cb = ffi.cast('lmx_group_monitor_fn', function(k, name, arr)
      local fn = fns[k + 1]
      if not fn or holder.err then return end
      C.lmx_ndarray_retain(arr)
      local ok, err = pcall(fn, ffi.string(name), nd.wrap(arr))
      if not ok then holder.err = err end
    end)
  end
  check(C.lmx_group_set_monitor(self._g, holder.cb, nil, self._mon_all and 1 or 0), 3)
end

--- install_monitor(mon): mon:install on one target per context.
function Group:install_monitor(mon)
  local ref = setmetatable({g = self}, {__mode = 'v'})
  for k = 1, #self.execs do mon:install(setmetatable({_ref = ref, _k = k}, Target)) end
end

Group.__tostring = function(g)
  return ('<DataParallelExecutorGroup: %d contexts, batch %d>'):format(#g.contexts, g.batch_size)
end

M.DataParallelExecutorManager = require('luamx.executor_manager.manager').new_class(M)

-- Custom ops (luamx.operator) call back into Lua from these C calls: keep them out of traces.
jit.off(make_group)
jit.off(Group.reshape)

--- Installs this module as `mx.executor_manager`.
-- @param mx the luamx module table
function M.install(mx)
  mx.executor_manager = M
end

return M
