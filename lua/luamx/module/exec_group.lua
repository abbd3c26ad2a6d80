--- luamx.module.exec_group — a Lua DataParallelExecutorGroup (MXNet 1.9
--- python/mxnet/module/executor_group.py), used by mx.mod.Module only when the engine's
--- mx.executor_manager.DataParallelExecutorGroup is not available in the build.
--
-- Invariants:
-- * One executor per context; the batch is split along axis 0 (the 'N' of the layouts
--   this group supports) by MXNet's _split_input_slice (banker's rounding, remainder to
--   the last device, empty slices are an error).
-- * grad_req: a string applies to parameters (fixed parameters get 'null'), to data only
--   with inputs_need_grad, never to labels or states; a name table overrides per name.
-- * With shared_group, executor i binds the shared group's executor i parameter, gradient
--   and aux arrays (the same NDArrays) and shares its memory pool (shared_exec).
-- * reshape always derives new executors from the executors first bound (MXNet's
--   _default_execs), with allow_up_sizing.
local capi = require 'luamx.capi'
local nd = require 'luamx.ndarray'
local raise = capi.raise

local M = {}
local Group = {}
Group.__index = Group
M.DataParallelExecutorGroup = Group

--- MXNet's _split_input_slice: array of {first, last} (0-based, last exclusive).
function M.split_input_slice(batch_size, work_load_list)
  local total = 0
  for _, w in ipairs(work_load_list) do total = total + w end
  local function round_even(x)
    local f = math.floor(x)
    local d = x - f
    if d > 0.5 or (d == 0.5 and f % 2 == 1) then return f + 1 end
    return f
  end
  local sizes, sum = {}, 0
  for i, w in ipairs(work_load_list) do
    sizes[i] = round_even(w * batch_size / total)
    sum = sum + sizes[i]
  end
  if sum < batch_size then sizes[#sizes] = sizes[#sizes] + batch_size - sum end
  local slices, start = {}, 0
  for i, n in ipairs(sizes) do
    local b, e = math.min(start, batch_size), math.min(start + n, batch_size)
    if b >= e then raise('Too many slices. Some splits are empty.') end
    slices[i] = {b, e}
    start = start + n
  end
  return slices
end

local function set_of(list)
  local s = {}
  for _, n in ipairs(list or {}) do s[n] = true end
  return s
end

local function sliced(shape, n)
  local s = {}
  for i, v in ipairs(shape) do s[i] = v end
  s[1] = n
  return s
end

function Group:_grad_reqs()
  local args = self.arg_names
  local reqs = {}
  local params, fixed = set_of(self.param_names), set_of(self.fixed_param_names)
  local data = set_of(self.data_names)
  local gr = self.grad_req
  local default = type(gr) == 'string' and gr or 'write'
  for _, a in ipairs(args) do
    local r = 'null'
    if self.for_training then
      if params[a] then r = fixed[a] and 'null' or default
      elseif data[a] and self.inputs_need_grad then r = default end
    end
    reqs[a] = r
  end
  if type(gr) == 'table' then
    if #gr > 0 then for i, a in ipairs(args) do reqs[a] = gr[i] end
    else for k, v in pairs(gr) do reqs[k] = v end end
  end
  return reqs
end

local function input_shapes(self, i)
  local n = self.slices[i][2] - self.slices[i][1]
  local shapes = {}
  for _, d in ipairs(self.data_shapes) do shapes[d.name] = sliced(d.shape, n) end
  for _, d in ipairs(self.label_shapes or {}) do shapes[d.name] = sliced(d.shape, n) end
  return shapes
end

-- Executor i bound against the shared group's executor i (parameters and pool shared).
local function bind_shared(self, i, ctx, reqs, shapes, shared_exe)
  local sym = self.symbol
  local arg_shapes, _, aux_shapes = sym:infer_shape(shapes)
  if not arg_shapes then raise('bind: cannot infer the shapes of every argument from the data shapes') end
  local params = set_of(self.param_names)
  local sargs, sgrads, saux = shared_exe.arg_dict, shared_exe.grad_dict, shared_exe.aux_dict
  local args, grads = {}, {}
  for j, a in ipairs(self.arg_names) do
    local s = arg_shapes[j]
    if params[a] and sargs[a] then
      local p = sargs[a]
      local ps = p.shape
      local same = #ps == #s
      for k = 1, #s do same = same and ps[k] == s[k] end
      if not same then raise(('bind: parameter %s has shape (%s) in the shared module but (%s) here')
        :format(a, table.concat(ps, ', '), table.concat(s, ', '))) end
      args[a], grads[a] = p, sgrads[a]
    else
      args[a] = nd.zeros(s, {ctx = ctx})
      if reqs[a] ~= 'null' then grads[a] = nd.zeros(s, {ctx = ctx}) end
    end
  end
  local aux = {}
  for j, a in ipairs(sym:list_auxiliary_states()) do aux[a] = saux[a] or nd.zeros(aux_shapes[j], {ctx = ctx}) end
  return sym:bind{ctx = ctx, args = args, args_grad = grads, grad_req = reqs, aux_states = aux,
                  shared_exec = shared_exe}
end

function Group:_collect()
  local ex = self.execs
  self.param_arrays, self.grad_arrays, self.aux_arrays, self.state_arrays = {}, {}, {}, {}
  for i, p in ipairs(self.param_names) do
    local ws, gs = {}, {}
    for k, e in ipairs(ex) do ws[k] = e.arg_dict[p]; gs[k] = self.for_training and e.grad_dict[p] or nil end
    self.param_arrays[i] = ws
    self.grad_arrays[i] = (#gs > 0) and gs or false
  end
  for i, a in ipairs(self.aux_names) do
    local t = {}
    for k, e in ipairs(ex) do t[k] = e.aux_dict[a] end
    self.aux_arrays[i] = t
  end
  for i, s in ipairs(self.state_names) do
    local t = {}
    for k, e in ipairs(ex) do t[k] = e.arg_dict[s] end
    self.state_arrays[i] = t
  end
  local outs = {}
  for j, name in ipairs(self.symbol:list_outputs()) do
    local shape = ex[1].outputs[j].shape
    for k = 2, #ex do shape[1] = shape[1] + ex[k].outputs[j].shape[1] end
    outs[j] = {name = name, shape = shape, [1] = name, [2] = shape}
  end
  self.output_shapes = outs
end

--- DataParallelExecutorGroup{symbol=, contexts=, workload=, data_shapes=, label_shapes=,
--- param_names=, for_training=, inputs_need_grad=, shared_group=, fixed_param_names=,
--- grad_req=, state_names=}
setmetatable(Group, {__call = function(cls, o)
  local self = setmetatable({}, cls)
  self.symbol, self.contexts = o.symbol, o.contexts
  self.workload = o.workload
  self.param_names, self.fixed_param_names = o.param_names, o.fixed_param_names or {}
  self.state_names = o.state_names or {}
  self.for_training, self.inputs_need_grad = o.for_training, o.inputs_need_grad
  self.grad_req = o.grad_req or 'write'
  self.arg_names = o.symbol:list_arguments()
  self.aux_names = o.symbol:list_auxiliary_states()
  self.data_shapes, self.label_shapes = o.data_shapes, o.label_shapes
  self.data_names = {}
  for i, d in ipairs(o.data_shapes) do self.data_names[i] = d.name end
  self.label_names = {}
  for i, d in ipairs(o.label_shapes or {}) do self.label_names[i] = d.name end
  self.batch_size = o.data_shapes[1].shape[1]
  self.slices = M.split_input_slice(self.batch_size, self.workload)
  local reqs = self:_grad_reqs()
  self.execs = {}
  for i, ctx in ipairs(self.contexts) do
    local shapes = input_shapes(self, i)
    local shared = o.shared_group and o.shared_group.execs[i]
    if shared then
      self.execs[i] = bind_shared(self, i, ctx, reqs, shapes, shared)
    else
      local opts = {ctx = ctx, grad_req = reqs}
      for k, v in pairs(shapes) do opts[k] = v end
      self.execs[i] = self.symbol:simple_bind(opts)
    end
  end
  self._default_execs = nil
  self:_collect()
  return self
end})

function Group:reshape(data_shapes, label_shapes)
  local same = #data_shapes == #self.data_shapes
  for i, d in ipairs(data_shapes) do
    local old = self.data_shapes[i]
    same = same and old and table.concat(old.shape, ',') == table.concat(d.shape, ',')
  end
  if same then return end
  self._default_execs = self._default_execs or self.execs
  self.data_shapes, self.label_shapes = data_shapes, label_shapes
  self.batch_size = data_shapes[1].shape[1]
  self.slices = M.split_input_slice(self.batch_size, self.workload)
  local execs = {}
  for i, e in ipairs(self._default_execs) do
    local opts = {allow_up_sizing = true}
    for k, v in pairs(input_shapes(self, i)) do opts[k] = v end
    execs[i] = e:reshape(opts)
  end
  self.execs = execs
  self:_collect()
end

function Group:set_params(arg_params, aux_params, allow_extra)
  for _, e in ipairs(self.execs) do e:copy_params_from(arg_params, aux_params, allow_extra) end
end

local function average_into(list, dst)
  local cpu = require('luamx.context').cpu()
  local sum = list[1]:copyto(cpu)
  for k = 2, #list do sum = sum + list[k]:copyto(cpu) end
  if #list > 1 then sum = sum / #list end
  sum:copyto(dst)
end

function Group:get_params(arg_params, aux_params)
  for i, p in ipairs(self.param_names) do average_into(self.param_arrays[i], arg_params[p]) end
  for i, a in ipairs(self.aux_names) do average_into(self.aux_arrays[i], aux_params[a]) end
end

local function load_inputs(self, arrays, names)
  for i, e in ipairs(self.execs) do
    local s = self.slices[i]
    local whole = #self.execs == 1
    for j, name in ipairs(names) do
      local src = arrays[j]
      if src then
        local dst = e.arg_dict[name]
        if whole then src:copyto(dst) else src:slice(s[1] + 1, s[2]):copyto(dst) end
      end
    end
  end
end

function Group:forward(batch, is_train)
  if is_train == nil then is_train = self.for_training end
  load_inputs(self, batch.data, self.data_names)
  if batch.label and #batch.label > 0 and #self.label_names > 0 then load_inputs(self, batch.label, self.label_names) end
  for _, e in ipairs(self.execs) do e:forward{is_train = is_train} end
end

function Group:backward(out_grads)
  for i, e in ipairs(self.execs) do
    local og = nil
    if out_grads then
      og = {}
      local s = self.slices[i]
      for j, g in ipairs(out_grads) do og[j] = #self.execs == 1 and g or g:slice(s[1] + 1, s[2]) end
    end
    e:backward(og)
  end
end

local function merge(parts)
  if #parts == 1 then return parts[1] end
  local total = 0
  for _, p in ipairs(parts) do total = total + p.shape[1] end
  local out = nd.empty(sliced(parts[1].shape, total), {dtype = parts[1].dtype})
  local row = 1
  for _, p in ipairs(parts) do
    local n = p.shape[1]
    out:slice(row, row + n - 1):set(p)
    row = row + n
  end
  return out
end

local function gather(self, getter, count, merge_multi)
  local out = {}
  for j = 1, count do
    local parts = {}
    for k, e in ipairs(self.execs) do parts[k] = getter(e, j) end
    out[j] = merge_multi and merge(parts) or parts
  end
  return out
end

function Group:get_outputs(merge_multi)
  return gather(self, function(e, j) return e.outputs[j] end, #self.execs[1].outputs, merge_multi ~= false)
end

function Group:get_input_grads(merge_multi)
  return gather(self, function(e, j) return e.grad_dict[self.data_names[j]] end, #self.data_names, merge_multi ~= false)
end

function Group:get_states(merge_multi)
  if merge_multi then raise('get_states: merge_multi_context = true is not supported') end
  return self.state_arrays
end

function Group:set_states(states, value)
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

function Group:update_metric(metric, labels, pre_sliced)
  for i, e in ipairs(self.execs) do
    local ls = labels
    if pre_sliced then ls = labels[i]
    elseif #self.execs > 1 then
      local s = self.slices[i]
      ls = {}
      for j, l in ipairs(labels) do ls[j] = l:slice(s[1] + 1, s[2]) end
    end
    metric:update(ls, e.outputs)
  end
end

function Group:install_monitor(mon)
  for _, e in ipairs(self.execs) do mon:install(e) end
end

return M
