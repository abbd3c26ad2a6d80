--- luamx.metric — mx.metric: evaluation metrics (MXNet 1.9 python/mxnet/metric.py).
--
--   local m = mx.metric.create('acc')
--   m:update({label}, {pred})        -- Lua arrays of NDArrays, paired by position
--   local name, value = m:get()
--
-- Invariants:
-- * Every metric keeps a local (sum_metric, num_inst) and a global
--   (global_sum_metric, global_num_inst) pair; update() adds to both, reset() clears both,
--   reset_local() only the local pair (Speedometer's auto_reset). get() reads the local
--   pair, get_global() the global one; an empty metric gives NaN, as MXNet.
-- * Class labels count from 0 and are compared after truncation to integers (MXNet's
--   astype('int32')); predictions are read on the host through the FFI (arrays on other
--   devices are copied to the CPU first).
-- * CompositeEvalMetric:get() returns two arrays (names, values); get_name_value()
--   always returns a flat array of {name, value} pairs.
local capi = require 'luamx.capi'
local kwargs = require 'luamx.kwargs'
local nd = require 'luamx.ndarray'
local raise = capi.raise

local M = {}

-- ------------------------------------------------------------------ host access ----
--- A readable pointer to the values of `a` as doubles or floats, and the element count.
local function host(a)
  if not nd.is_ndarray(a) then raise('metric: expected an NDArray, got ' .. type(a)) end
  local src = a
  if a.context.device_type ~= 'cpu' or (a.dtype ~= 'float32' and a.dtype ~= 'float64') then
    src = a:as_in_context(require('luamx.context').cpu()):astype('float64')
  end
  src:wait_to_read()
  return src:data(), src.size, src
end

local function check_pairs(labels, preds)
  if type(labels) ~= 'table' or type(preds) ~= 'table' or nd.is_ndarray(labels) or nd.is_ndarray(preds) then
    raise('metric update: labels and preds must be Lua arrays of NDArrays')
  end
  if #labels ~= #preds then
    raise(('metric update: shape of labels %d does not match shape of predictions %d'):format(#labels, #preds))
  end
  local check = require 'luamx.check'
  for i = 1, #labels do
    check.ndarray('metric update', ('labels[%d]'):format(i), labels[i])
    check.ndarray('metric update', ('preds[%d]'):format(i), preds[i])
  end
end

local function trunc(x) return x >= 0 and math.floor(x) or math.ceil(x) end

--- Argmax of pred along axis (0-based, negative from the end): a Lua array, C order.
local function argmax(pred, axis)
  local s = pred.shape
  if axis < 0 then axis = #s + axis end
  if axis < 0 or axis >= #s then
    raise(('metric: axis %d is out of range for a prediction of %d dimensions'):format(axis, #s))
  end
  local outer, inner = 1, 1
  for i = 1, axis do outer = outer * s[i] end
  for i = axis + 2, #s do inner = inner * s[i] end
  local dim = s[axis + 1]
  local p = host(pred)
  local out = {}
  for o = 0, outer - 1 do
    for i = 0, inner - 1 do
      local best, bj = -math.huge, 0
      for j = 0, dim - 1 do
        local v = p[(o * dim + j) * inner + i]
        if v > best then best, bj = v, j end
      end
      out[o * inner + i + 1] = bj
    end
  end
  return out
end

local function flat(a)
  local p, n = host(a)
  local t = {}
  for i = 1, n do t[i] = p[i - 1] end
  return t
end

-- ------------------------------------------------------------------ base -----------
local EvalMetric = {}
EvalMetric.__index = EvalMetric
M.EvalMetric = EvalMetric

--- A new metric class with constructor `init(self, o)`: `o` holds the call's arguments,
--- given positionally in the order `positional` (MXNet's Python signature) or as one
--- keyword table (luamx.kwargs), e.g. `Accuracy(1)` or `Accuracy{axis = 1}`.
local function class(init, positional, who)
  local cls = setmetatable({}, {__index = EvalMetric})
  cls.__index = cls
  cls.__tostring = EvalMetric.__tostring
  setmetatable(cls, {__index = EvalMetric, __call = function(c, ...)
    local self = setmetatable({num_inst = 0, sum_metric = 0, global_num_inst = 0, global_sum_metric = 0}, c)
    init(self, kwargs.parse('mx.metric.' .. (who or 'EvalMetric'), positional or {}, ...))
    return self
  end})
  return cls
end
M.class = class

--- Clears both the local and the global accumulated values.
function EvalMetric:reset()
  self.num_inst, self.sum_metric, self.global_num_inst, self.global_sum_metric = 0, 0, 0, 0
end
--- Clears the local accumulated values only (the global ones keep accumulating).
function EvalMetric:reset_local() self.num_inst, self.sum_metric = 0, 0 end
function EvalMetric:_add(sum, num)
  self.sum_metric = self.sum_metric + sum
  self.global_sum_metric = self.global_sum_metric + sum
  self.num_inst = self.num_inst + num
  self.global_num_inst = self.global_num_inst + num
end
function EvalMetric:_value(sum, num) return sum / num end
--- The current (local) value of the metric; NaN when nothing was accumulated.
-- @return name, value (a composite or multi-output metric returns lists)
-- @usage local name, acc = metric:get()
function EvalMetric:get()
  if self.num_inst == 0 then return self.name, 0 / 0 end
  return self.name, self:_value(self.sum_metric, self.num_inst)
end
--- The value accumulated since the last `reset` (across `reset_local` calls); NaN when empty.
-- @return name, value
function EvalMetric:get_global()
  if self.global_num_inst == 0 then return self.name, 0 / 0 end
  return self.name, self:_value(self.global_sum_metric, self.global_num_inst)
end
local function pairs_of(names, values)
  if type(names) ~= 'table' then return {{names, values}} end
  local out = {}
  for i = 1, #names do out[i] = {names[i], values[i]} end
  return out
end
--- The current value as a list of `{name, value}` pairs.
-- @return list of pairs
function EvalMetric:get_name_value() return pairs_of(self:get()) end
--- The global value as a list of `{name, value}` pairs.
-- @return list of pairs
function EvalMetric:get_global_name_value() return pairs_of(self:get_global()) end
function EvalMetric.__tostring(m)
  local parts = {}
  for _, nv in ipairs(m:get_name_value()) do parts[#parts + 1] = ('%s=%s'):format(nv[1], tostring(nv[2])) end
  return 'EvalMetric: ' .. table.concat(parts, ', ')
end

-- ------------------------------------------------------------------ Accuracy -------
--- Accuracy{axis=1, ignore_label=nil, name='accuracy'} (or Accuracy(axis)).
M.Accuracy = class(function(self, o)
  local check = require 'luamx.check'
  check.number('mx.metric.Accuracy', 'axis', o.axis, {optional = true, integer = true})
  check.number('mx.metric.Accuracy', 'ignore_label', o.ignore_label, true)
  check.type('mx.metric.Accuracy', 'name', o.name, 'string', true)
  self.axis, self.ignore_label, self.name = o.axis or 1, o.ignore_label, o.name or 'accuracy'
end, {'axis', 'name', 'output_names', 'label_names'}, 'Accuracy')
function M.Accuracy:update(labels, preds)
  check_pairs(labels, preds)
  for i = 1, #labels do
    local label, pred = labels[i], preds[i]
    local pl
    if pred.size ~= label.size or #pred.shape ~= #label.shape then pl = argmax(pred, self.axis)
    else pl = flat(pred) end
    local lt = flat(label)
    if #pl ~= #lt then
      raise(('Accuracy: %d labels but %d predicted labels'):format(#lt, #pl))
    end
    local correct, count = 0, 0
    for k = 1, #lt do
      local l = trunc(lt[k])
      if self.ignore_label == nil or l ~= self.ignore_label then
        count = count + 1
        if trunc(pl[k]) == l then correct = correct + 1 end
      end
    end
    self:_add(correct, count)
  end
end

-- ------------------------------------------------------------------ TopKAccuracy ---
--- TopKAccuracy{top_k=1} (or TopKAccuracy(k)); name 'top_k_accuracy_<k>'. A sample is
--- correct when fewer than top_k classes score strictly higher than its label.
M.TopKAccuracy = class(function(self, o)
  self.top_k = o.top_k or 1
  if type(self.top_k) ~= 'number' or self.top_k < 1 then
    raise('TopKAccuracy: top_k must be a positive integer, got ' .. tostring(self.top_k))
  end
  self.name = (o.name or 'top_k_accuracy') .. '_' .. self.top_k
end, {'top_k', 'name', 'output_names', 'label_names'}, 'TopKAccuracy')
function M.TopKAccuracy:update(labels, preds)
  check_pairs(labels, preds)
  for i = 1, #labels do
    local pred, lt = preds[i], flat(labels[i])
    local s = pred.shape
    if #s == 1 then
      local pl = flat(pred)
      local c = 0
      for k = 1, #lt do if trunc(pl[k]) == trunc(lt[k]) then c = c + 1 end end
      self:_add(c, #lt)
    else
      if #s ~= 2 or s[1] ~= #lt then
        raise(('TopKAccuracy: predictions of shape (%s) do not match %d labels'):format(table.concat(s, ', '), #lt))
      end
      local p, ncls, c = host(pred), s[2], 0
      for r = 0, s[1] - 1 do
        local l = trunc(lt[r + 1])
        local pv, higher = p[r * ncls + l], 0
        for j = 0, ncls - 1 do if p[r * ncls + j] > pv then higher = higher + 1 end end
        if higher < self.top_k then c = c + 1 end
      end
      self:_add(c, s[1])
    end
  end
end

-- ------------------------------------------------------------------ probabilities --
--- Calls fn(prob_of_label, label) for each row of a (N, C) prediction (or (..., C),
--- picked along the last axis).
local function each_pick(label, pred, who, fn)
  local lt = flat(label)
  local s = pred.shape
  local ncls = s[#s]
  if pred.size / ncls ~= #lt then
    raise(('%s: %d labels but predictions of shape (%s)'):format(who, #lt, table.concat(s, ', ')))
  end
  local p = host(pred)
  for r = 0, #lt - 1 do
    local l = trunc(lt[r + 1])
    local pl = l
    if pl < 0 then pl = 0 elseif pl >= ncls then pl = ncls - 1 end -- pick's clip mode
    fn(p[r * ncls + pl], l)
  end
  return #lt
end

--- CrossEntropy{eps=1e-12}: mean of -log(p[label] + eps).
M.CrossEntropy = class(function(self, o)
  self.eps, self.name = o.eps or 1e-12, o.name or 'cross-entropy'
end, {'eps', 'name', 'output_names', 'label_names'}, 'CrossEntropy')
function M.CrossEntropy:update(labels, preds)
  check_pairs(labels, preds)
  for i = 1, #labels do
    local loss = 0
    local n = each_pick(labels[i], preds[i], 'CrossEntropy', function(p) loss = loss - math.log(p + self.eps) end)
    self:_add(loss, n)
  end
end

--- Perplexity{ignore_label=nil} (or Perplexity(ignore_label)): exp of the mean of
--- -log(max(1e-10, p[label])) over positions whose label is not ignore_label.
M.Perplexity = class(function(self, o)
  require('luamx.check').number('mx.metric.Perplexity', 'ignore_label', o.ignore_label, true)
  self.ignore_label, self.name = o.ignore_label, o.name or 'perplexity'
end, {'ignore_label', 'axis', 'name', 'output_names', 'label_names'}, 'Perplexity')
function M.Perplexity:update(labels, preds)
  check_pairs(labels, preds)
  local loss, num, ignored = 0, 0, 0
  for i = 1, #labels do
    num = num + each_pick(labels[i], preds[i], 'Perplexity', function(p, l)
      if self.ignore_label ~= nil and l == self.ignore_label then ignored = ignored + 1
      else loss = loss - math.log(math.max(1e-10, p)) end
    end)
  end
  self:_add(loss, num - ignored)
end
function M.Perplexity:_value(sum, num) return math.exp(sum / num) end

-- ------------------------------------------------------------------ regression -----
--- One regression metric: per (label, pred) pair the mean of err(label - pred), one
--- instance per pair (MXNet's MSE/MAE/RMSE); `post` maps the pair's mean.
local function regression(default_name, err, post)
  local cls = class(function(self, o)
    self.name = o.name or default_name
  end, {'name', 'output_names', 'label_names'}, default_name:upper())
  function cls:update(labels, preds)
    check_pairs(labels, preds)
    for i = 1, #labels do
      local lt, pt = flat(labels[i]), flat(preds[i])
      if #lt ~= #pt then
        raise(('%s: %d labels but %d predictions'):format(self.name, #lt, #pt))
      end
      local s = 0
      for k = 1, #lt do s = s + err(lt[k] - pt[k]) end
      self:_add(post(s / #lt), 1)
    end
  end
  return cls
end
local function id(x) return x end
M.MSE = regression('mse', function(d) return d * d end, id)
M.MAE = regression('mae', math.abs, id)
M.RMSE = regression('rmse', function(d) return d * d end, math.sqrt)

-- ------------------------------------------------------------------ F1 -------------
--- F1{average='macro'}: binary F1 of class 1 (predicted = argmax along axis 1). 'macro'
--- averages the F1 of each update() call; 'micro' pools the counts of all calls.
M.F1 = class(function(self, o)
  self.name, self.average = o.name or 'f1', o.average or 'macro'
  if self.average ~= 'macro' and self.average ~= 'micro' then
    raise("F1: average must be 'macro' or 'micro', got " .. tostring(self.average))
  end
  self.tp, self.fp, self.fn, self.tn = 0, 0, 0, 0
end, {'name', 'output_names', 'label_names', 'average'}, 'F1')
local function fscore(m)
  local p = (m.tp + m.fp) > 0 and m.tp / (m.tp + m.fp) or 0
  local r = (m.tp + m.fn) > 0 and m.tp / (m.tp + m.fn) or 0
  return (p + r) > 0 and 2 * p * r / (p + r) or 0
end
function M.F1:update(labels, preds)
  check_pairs(labels, preds)
  for i = 1, #labels do
    local pl, lt = argmax(preds[i], 1), flat(labels[i])
    if #pl ~= #lt then raise(('F1: %d labels but %d predictions'):format(#lt, #pl)) end
    local seen, nseen = {}, 0
    for k = 1, #lt do
      local l = trunc(lt[k])
      if not seen[l] then seen[l] = true; nseen = nseen + 1 end
      local pt, lt1 = pl[k] == 1, l == 1
      if pt and lt1 then self.tp = self.tp + 1
      elseif pt then self.fp = self.fp + 1
      elseif lt1 then self.fn = self.fn + 1
      else self.tn = self.tn + 1 end
    end
    if nseen > 2 then raise(('F1 currently only supports binary classification, got %d classes'):format(nseen)) end
  end
  if self.average == 'macro' then
    self:_add(fscore(self), 1)
    self.tp, self.fp, self.fn, self.tn = 0, 0, 0, 0
  else
    local total = self.tp + self.fp + self.fn + self.tn
    local f = fscore(self)
    self.sum_metric, self.global_sum_metric = f * total, f * total
    self.num_inst, self.global_num_inst = total, total
  end
end
function M.F1:reset()
  EvalMetric.reset(self)
  self.tp, self.fp, self.fn, self.tn = 0, 0, 0, 0
end

-- ------------------------------------------------------------------ custom ---------
--- CustomMetric(fn, {name='custom'}): fn(label, pred) gets NDArrays and returns a value
--- (one instance) or sum, count.
M.CustomMetric = class(function(self, o)
  local fn = o.feval
  if type(fn) ~= 'function' then raise('CustomMetric: feval must be a function, got ' .. type(fn)) end
  self.feval, self.name = fn, o.name or 'custom'
end, {'feval', 'name', 'allow_extra_outputs', 'output_names', 'label_names'}, 'CustomMetric')
function M.CustomMetric:update(labels, preds)
  check_pairs(labels, preds)
  for i = 1, #labels do
    local s, n = self.feval(labels[i], preds[i])
    if type(s) ~= 'number' then raise('CustomMetric: feval must return a number, got ' .. type(s)) end
    self:_add(s, n or 1)
  end
end

-- ------------------------------------------------------------------ composite ------
M.CompositeEvalMetric = class(function(self, o)
  self.name, self.metrics = o.name or 'composite', {}
  for _, m in ipairs(o.metrics or {}) do self:add(m) end
end, {'metrics', 'name', 'output_names', 'label_names'}, 'CompositeEvalMetric')
local Composite = M.CompositeEvalMetric
--- Adds a child metric.
-- @param m an EvalMetric, or anything `mx.metric.create` accepts (such as `'acc'`)
-- @usage local m = mx.metric.CompositeEvalMetric(); m:add('acc'); m:add('ce')
function Composite:add(m) self.metrics[#self.metrics + 1] = M.create(m) end
--- The child metric at index `i` (1-based); raises when out of range.
-- @param i index
-- @return an EvalMetric
function Composite:get_metric(i)
  local m = self.metrics[i]
  if not m then raise(('CompositeEvalMetric: metric index %s out of range (1..%d)'):format(tostring(i), #self.metrics)) end
  return m
end
--- Updates every child metric with the same labels and predictions.
-- @param labels list of label NDArrays
-- @param preds list of prediction NDArrays
function Composite:update(labels, preds) for _, m in ipairs(self.metrics) do m:update(labels, preds) end end
--- Resets every child metric (local and global values).
function Composite:reset() for _, m in ipairs(self.metrics) do m:reset() end end
--- Resets the local values of every child metric.
function Composite:reset_local() for _, m in ipairs(self.metrics) do m:reset_local() end end
local function gather(self, method)
  local names, values = {}, {}
  for _, m in ipairs(self.metrics) do
    local n, v = m[method](m)
    if type(n) == 'table' then
      for k = 1, #n do names[#names + 1] = n[k]; values[#values + 1] = v[k] end
    else
      names[#names + 1] = n; values[#values + 1] = v
    end
  end
  return names, values
end
--- The current values of all child metrics.
-- @return list of names, list of values
function Composite:get() return gather(self, 'get') end
--- The global values of all child metrics.
-- @return list of names, list of values
function Composite:get_global() return gather(self, 'get_global') end

-- ------------------------------------------------------------------ create ---------
local REGISTRY = {
  acc = M.Accuracy, accuracy = M.Accuracy, ce = M.CrossEntropy, ['cross-entropy'] = M.CrossEntropy,
  top_k_accuracy = M.TopKAccuracy, top_k_acc = M.TopKAccuracy, perplexity = M.Perplexity,
  mse = M.MSE, mae = M.MAE, rmse = M.RMSE, f1 = M.F1, composite = M.CompositeEvalMetric,
}

local function known()
  local t = {}
  for k in pairs(REGISTRY) do t[#t + 1] = k end
  table.sort(t)
  return table.concat(t, ', ')
end

--- Creates a metric, as `mx.metric.create(metric, *args, **kwargs)`: a registered name
-- (case-insensitive) with the class's arguments (positional or a keyword table), a metric
-- object (returned as is), a Lua function (a CustomMetric: `feval(label, pred)` returns a
-- value, or a sum and a count) or a Lua array of these (a CompositeEvalMetric).
-- @param metric a name, a metric, a function or an array of these
-- @param ... the constructor's arguments (`{name = ...}` for a function)
-- @return an EvalMetric
-- @usage local m = mx.metric.create(function(label, pred) return 0.5 end, {name = 'half'})
function M.create(metric, ...)
  if type(metric) == 'table' and rawget(metric, 'num_inst') ~= nil then return metric end
  if type(metric) == 'function' then return M.CustomMetric(metric, ...) end
  if type(metric) == 'string' then
    local cls = REGISTRY[metric:lower()]
    if not cls then
      raise(('mx.metric.create: unknown metric %q; known metrics: %s'):format(metric, known()))
    end
    return cls(...)
  end
  if type(metric) == 'table' and #metric > 0 then
    local c = M.CompositeEvalMetric()
    for _, m in ipairs(metric) do c:add(M.create(m)) end
    return c
  end
  raise('mx.metric.create: metric must be a name, a function, a metric or an array of these, got ' .. type(metric))
end

M._util = {host = host, flat = flat, argmax = argmax, trunc = trunc, check_pairs = check_pairs}
require('luamx.metric.more').define(M, REGISTRY)

--- Registers a metric class under a name for create().
function M.register(name, cls)
  require('luamx.check').type('mx.metric.register', 'name', name, 'string')
  require('luamx.check').type('mx.metric.register', 'cls', cls, 'table')
  REGISTRY[name:lower()] = cls
end

--- Installs this module as `mx.metric`.
-- @param mx the luamx module table
-- @return this module
function M.install(mx)
  mx.metric = M
  return M
end

return M
