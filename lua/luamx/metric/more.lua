--- luamx.metric.more — mx.metric: MCC, NegativeLogLikelihood, PearsonCorrelation, PCC,
-- Loss and np (MXNet 1.9 python/mxnet/metric.py).
--
--   mx.metric.create('mcc')           mx.metric.MCC{average = 'micro'}
--   mx.metric.np(function(label, pred) return ... end)   -- Lua tables instead of NDArrays
--
-- Invariants: as luamx.metric (local and global pairs, NaN when empty). MCC, like F1,
-- counts binary outcomes of argmax(pred, axis 1) against class 1; 'macro' averages one
-- value per update() call, 'micro' pools every call. PCC keeps a confusion matrix
-- (rows: predicted class, columns: label) that grows with the classes seen; its value
-- is the multiclass MCC of the local (get) or global (get_global) matrix.
-- PearsonCorrelation 'micro' keeps MXNet's running sums (its batched Welford update and
-- the covariance against the running means), so several batches give MXNet's figure.
local capi = require 'luamx.capi'
local raise = capi.raise

local P = {}

--- Defines the metrics in the metric module `M` and registers their names.
-- @param M the luamx.metric module table
-- @param REGISTRY its name -> class table
function P.define(M, REGISTRY)
  local U, class, EvalMetric = M._util, M.class, M.EvalMetric
  local flat, argmax, trunc, check_pairs = U.flat, U.argmax, U.trunc, U.check_pairs

  -- ---------------------------------------------------------------- MCC -------------
  --- MCC(name='mcc', output_names, label_names, average='macro'): Matthews correlation of
  --- binary predictions, (tp*tn - fp*fn) / sqrt of the product of the non-zero terms
  --- (tp+fp), (tp+fn), (tn+fp), (tn+fn).
  M.MCC = class(function(self, o)
    self.name, self.average = o.name or 'mcc', o.average or 'macro'
    if self.average ~= 'macro' and self.average ~= 'micro' then
      raise("mx.metric.MCC: average must be 'macro' or 'micro', got " .. tostring(self.average))
    end
    self.tp, self.fp, self.fn, self.tn = 0, 0, 0, 0
  end, {'name', 'output_names', 'label_names', 'average'}, 'MCC')
  local function mcc(m)
    local denom = 1
    for _, t in ipairs{m.tp + m.fp, m.tp + m.fn, m.tn + m.fp, m.tn + m.fn} do
      if t ~= 0 then denom = denom * t end
    end
    return (m.tp * m.tn - m.fp * m.fn) / math.sqrt(denom)
  end
  function M.MCC:update(labels, preds)
    check_pairs(labels, preds)
    for i = 1, #labels do
      local pl, lt = argmax(preds[i], 1), flat(labels[i])
      if #pl ~= #lt then raise(('MCC: %d labels but %d predictions'):format(#lt, #pl)) end
      local seen, nseen = {}, 0
      for k = 1, #lt do
        local l = trunc(lt[k])
        if not seen[l] then seen[l] = true; nseen = nseen + 1 end
        local p1, l1 = pl[k] == 1, l == 1
        if p1 and l1 then self.tp = self.tp + 1
        elseif p1 then self.fp = self.fp + 1
        elseif l1 then self.fn = self.fn + 1
        else self.tn = self.tn + 1 end
      end
      if nseen > 2 then raise(('MCC currently only supports binary classification, got %d classes'):format(nseen)) end
    end
    if self.average == 'macro' then
      self:_add(mcc(self), 1)
      self.tp, self.fp, self.fn, self.tn = 0, 0, 0, 0
    else
      local total = self.tp + self.fp + self.fn + self.tn
      local v = mcc(self)
      self.sum_metric, self.global_sum_metric = v * total, v * total
      self.num_inst, self.global_num_inst = total, total
    end
  end
  function M.MCC:reset()
    EvalMetric.reset(self)
    self.tp, self.fp, self.fn, self.tn = 0, 0, 0, 0
  end

  -- ---------------------------------------------------------------- NLL -------------
  --- NegativeLogLikelihood(eps=1e-12, name='nll-loss'): the mean over samples of
  --- -log(pred[i, label[i]] + eps); pred is (N, C), one instance per sample.
  M.NegativeLogLikelihood = class(function(self, o)
    self.eps, self.name = o.eps or 1e-12, o.name or 'nll-loss'
  end, {'eps', 'name', 'output_names', 'label_names'}, 'NegativeLogLikelihood')
  function M.NegativeLogLikelihood:update(labels, preds)
    check_pairs(labels, preds)
    for i = 1, #labels do
      local lt, pred = flat(labels[i]), preds[i]
      local s = pred.shape
      local n = s[1]
      if #lt ~= n then
        raise(('NegativeLogLikelihood: %d labels but %d predictions (shape (%s))'):format(#lt, n, table.concat(s, ', ')))
      end
      local p, ncls, nll = flat(pred), pred.size / n, 0
      for r = 1, n do
        local l = trunc(lt[r])
        if l < 0 or l >= ncls then
          raise(('NegativeLogLikelihood: label %d out of range (0..%d)'):format(l, ncls - 1))
        end
        nll = nll - math.log(p[(r - 1) * ncls + l + 1] + self.eps)
      end
      self:_add(nll, n)
    end
  end

  -- ---------------------------------------------------------------- Pearson ---------
  --- PearsonCorrelation(name='pearsonr', output_names, label_names, average='macro'):
  --- 'macro' averages numpy.corrcoef(pred, label) over update pairs; 'micro' pools every
  --- value seen (MXNet's running formula).
  M.PearsonCorrelation = class(function(self, o)
    self.name, self.average = o.name or 'pearsonr', o.average or 'macro'
    if self.average ~= 'macro' and self.average ~= 'micro' then
      raise("mx.metric.PearsonCorrelation: average must be 'macro' or 'micro', got " .. tostring(self.average))
    end
    self:_reset_micro()
  end, {'name', 'output_names', 'label_names', 'average'}, 'PearsonCorrelation')
  local Pearson = M.PearsonCorrelation
  function Pearson:_reset_micro()
    self._sse_p, self._mean_p, self._sse_l, self._mean_l = 0, 0, 0, 0
    self._pred_nums, self._label_nums, self._conv = 0, 0, 0
  end
  local function welford(x, count, mean, m2)
    count = count + #x
    local s = 0
    for _, v in ipairs(x) do s = s + (v - mean) / count end
    local new_mean = mean + s
    for _, v in ipairs(x) do m2 = m2 + (v - mean) * (v - new_mean) end
    return count, new_mean, m2
  end
  function Pearson:update(labels, preds)
    check_pairs(labels, preds)
    for i = 1, #labels do
      local l, p = flat(labels[i]), flat(preds[i])
      if #l ~= #p then raise(('PearsonCorrelation: %d labels but %d predictions'):format(#l, #p)) end
      if self.average == 'macro' then
        local ml, mp = 0, 0
        for k = 1, #l do ml, mp = ml + l[k], mp + p[k] end
        ml, mp = ml / #l, mp / #p
        local sxy, sxx, syy = 0, 0, 0
        for k = 1, #l do
          local a, b = p[k] - mp, l[k] - ml
          sxy, sxx, syy = sxy + a * b, sxx + a * a, syy + b * b
        end
        self:_add(sxy / math.sqrt(sxx * syy), 1)
      else
        self.num_inst, self.global_num_inst = self.num_inst + 1, self.global_num_inst + 1
        self._label_nums, self._mean_l, self._sse_l = welford(l, self._label_nums, self._mean_l, self._sse_l)
        for k = 1, #l do self._conv = self._conv + (l[k] - self._mean_l) * (p[k] - self._mean_p) end
        self._pred_nums, self._mean_p, self._sse_p = welford(p, self._pred_nums, self._mean_p, self._sse_p)
      end
    end
  end
  function Pearson:get()
    if self.num_inst == 0 then return self.name, 0 / 0 end
    if self.average == 'macro' then return self.name, self.sum_metric / self.num_inst end
    local n = self._label_nums
    return self.name, self._conv / ((n - 1) * math.sqrt(self._sse_p / (n - 1)) * math.sqrt(self._sse_l / (n - 1)))
  end
  function Pearson:reset()
    EvalMetric.reset(self)
    self:_reset_micro()
  end

  -- ---------------------------------------------------------------- PCC -------------
  --- PCC(name='pcc', output_names, label_names, has_global_stats=true): the multiclass
  --- Matthews correlation of the confusion matrix C (C[pred][label]):
  --- (sum_k C_kk*n - x.y) / sqrt(sum x*(n-x) * sum y*(n-y)), x row sums, y column sums;
  --- NaN when either variance term is 0. Predictions are argmax(axis 1) unless they have
  --- the labels' shape.
  M.PCC = class(function(self, o)
    self.name, self.k = o.name or 'pcc', 2
    self.lcm, self.gcm = {}, {}
  end, {'name', 'output_names', 'label_names', 'has_global_stats'}, 'PCC')
  local function calc(cm, k)
    local n, x, y, diag = 0, {}, {}, 0
    for i = 0, k - 1 do x[i], y[i] = 0, 0 end
    for key, c in pairs(cm) do
      local i, j = math.floor(key / 65536), key % 65536
      n, x[i], y[j] = n + c, x[i] + c, y[j] + c
      if i == j then diag = diag + c end
    end
    local cxx, cyy, sxy = 0, 0, 0
    for i = 0, k - 1 do
      cxx, cyy, sxy = cxx + x[i] * (n - x[i]), cyy + y[i] * (n - y[i]), sxy + x[i] * y[i]
    end
    if cxx == 0 or cyy == 0 then return 0 / 0 end
    return (diag * n - sxy) / math.sqrt(cxx * cyy)
  end
  function M.PCC:update(labels, preds)
    check_pairs(labels, preds)
    for i = 1, #labels do
      local label, pred = labels[i], preds[i]
      local lt = flat(label)
      local pl
      if table.concat(pred.shape, ',') ~= table.concat(label.shape, ',') then pl = argmax(pred, 1)
      else pl = flat(pred) end
      if #pl ~= #lt then raise(('PCC: %d labels but %d predictions'):format(#lt, #pl)) end
      for k = 1, #lt do
        local p, l = trunc(pl[k]), trunc(lt[k])
        if p < 0 or l < 0 or p >= 65536 or l >= 65536 then
          raise(('PCC: classes must be in 0..65535, got prediction %d, label %d'):format(p, l))
        end
        if p >= self.k then self.k = p + 1 end
        if l >= self.k then self.k = l + 1 end
        local key = p * 65536 + l
        self.lcm[key] = (self.lcm[key] or 0) + 1
        self.gcm[key] = (self.gcm[key] or 0) + 1
      end
    end
    self.num_inst, self.global_num_inst = self.num_inst + 1, self.global_num_inst + 1
  end
  function M.PCC:get()
    if self.num_inst == 0 then return self.name, 0 / 0 end
    return self.name, calc(self.lcm, self.k)
  end
  function M.PCC:get_global()
    if self.global_num_inst == 0 then return self.name, 0 / 0 end
    return self.name, calc(self.gcm, self.k)
  end
  function M.PCC:reset_local()
    EvalMetric.reset_local(self)
    self.lcm = {}
  end
  function M.PCC:reset()
    EvalMetric.reset(self)
    self.lcm, self.gcm = {}, {}
  end

  -- ---------------------------------------------------------------- Loss ------------
  --- Loss(name='loss', output_names, label_names): the mean of the elements of the
  --- predictions (a loss output); labels are ignored.
  M.Loss = class(function(self, o) self.name = o.name or 'loss' end,
    {'name', 'output_names', 'label_names', 'has_global_stats'}, 'Loss')
  function M.Loss:update(_, preds)
    if require('luamx.ndarray').is_ndarray(preds) then preds = {preds} end
    if type(preds) ~= 'table' then raise('Loss: preds must be an NDArray or a list of them, got ' .. type(preds)) end
    for _, pred in ipairs(preds) do
      local s = 0
      for _, v in ipairs(flat(pred)) do s = s + v end
      self:_add(s, pred.size)
    end
  end

  -- ---------------------------------------------------------------- np --------------
  --- np(feval, name, allow_extra_outputs): a CustomMetric whose `feval(label, pred)`
  --- receives each array as a flat Lua table of numbers with its `shape` field (the Lua
  --- counterpart of MXNet's numpy arrays) and returns a value (one instance) or a sum and
  --- a count.
  -- @param feval the function
  -- @param name the metric's name (default 'custom')
  -- @param allow_extra_outputs accepted for MXNet compatibility
  -- @return a CustomMetric
  -- @usage local m = mx.metric.np(function(l, p) return p[1] - l[1] end, 'diff')
  function M.np(feval, name, allow_extra_outputs)
    if type(feval) ~= 'function' then raise('mx.metric.np: feval must be a function, got ' .. type(feval)) end
    local function as_table(a)
      local t = flat(a)
      t.shape = a.shape
      return t
    end
    return M.CustomMetric{feval = function(label, pred) return feval(as_table(label), as_table(pred)) end,
                          name = name, allow_extra_outputs = allow_extra_outputs}
  end

  REGISTRY.mcc = M.MCC
  REGISTRY.negativeloglikelihood, REGISTRY.nll_loss = M.NegativeLogLikelihood, M.NegativeLogLikelihood
  REGISTRY.pearsoncorrelation, REGISTRY.pearsonr = M.PearsonCorrelation, M.PearsonCorrelation
  REGISTRY.pcc, REGISTRY.loss = M.PCC, M.Loss
  REGISTRY.custommetric = M.CustomMetric
end

return P
