--- luamx.optimizer.more — mx.optimizer: Ftrl, Signum, Adamax, Nadam, SGLD, FTML, LAMB and
-- DCASGD with MXNet 1.9's update rules (python/mxnet/optimizer/optimizer.py and the
-- kernels of src/operator/optimizer_op-inl.h, contrib/optimizer_op-inl.h).
--
--   local opt = mx.optimizer.create('ftrl', {lamda1 = 0.01, learning_rate = 0.1})
--   local opt = mx.optimizer.Signum(0.01, 0.9)     -- MXNet's positional order
--
-- Invariants (as luamx.optimizer): update(index, weight, grad, state) counts the update
-- first, then reads lr and wd (schedulers, multipliers); weights and states change in
-- place; clip_gradient applies when > 0; t is the index's update count. Every class takes
-- `multi_precision` through the base class's wrapper (a float32 master copy of a float16
-- weight). Ftrl, Signum (signum_update / signsgd_update), FTML (ftml_update) and LAMB
-- (lamb_update_phase1 / phase2, mp_ with multi_precision) call the fused operators when
-- the engine has them, else NDArray arithmetic with the same formula.
local nd = require 'luamx.ndarray'

local P = {}

--- Defines the optimizers in the optimizer module `M` (called by luamx.optimizer).
-- @param M the luamx.optimizer module table
function P.define(M)
  local U = M._util
  local class, clip, sqrt, zeros_like, fused, clip_arg =
    M.class, U.clip, U.sqrt, U.zeros_like, U.fused, U.clip_arg
  local function op(name) return nd[name] end

  -- ---------------------------------------------------------------- Ftrl ------------
  --- Ftrl(lamda1=0.01, learning_rate=0.1, beta=1): g = clip(rescale*grad);
  --- z += g - (sqrt(n + g^2) - sqrt(n))*w/lr; n += g^2;
  --- w = (sign(z)*lamda1 - z) / ((beta + sqrt(n))/lr + wd) * (|z| > lamda1).
  M.Ftrl = class('ftrl', {learning_rate = 0.1}, function(self, o)
    self.lamda1, self.beta = o.lamda1 or 0.01, o.beta or 1
  end, {'lamda1', 'learning_rate', 'beta'})
  function M.Ftrl:create_state(_, weight) return {zeros_like(weight), zeros_like(weight)} end
  function M.Ftrl:update(index, weight, grad, state)
    self:_update_count(index)
    local lr, wd = self:_get_lr(index), self:_get_wd(index)
    local z, n = state[1], state[2]
    if fused(self, index, 'ftrl_update', {weight = weight, grad = grad, z = z, n = n, out = weight, lr = lr, wd = wd,
        lamda1 = self.lamda1, beta = self.beta, rescale_grad = self.rescale_grad,
        clip_gradient = clip_arg(self)}) then return end
    local g = clip(grad * self.rescale_grad, self.clip_gradient)
    z:set(z + g - (sqrt(n + g * g) - sqrt(n)) * weight / lr)
    n:set(n + g * g)
    local mask = op('_greater_scalar')(op('abs')(z), {scalar = self.lamda1})
    weight:set((op('sign')(z) * self.lamda1 - z) / ((sqrt(n) + self.beta) / lr + wd) * mask)
  end

  -- ---------------------------------------------------------------- Signum ----------
  --- Signum(learning_rate=0.01, momentum=0.9, wd_lh=0): with momentum,
  --- m = momentum*m - (1-momentum)*(wd*w + clip(rescale*grad)); w = (1 - lr*wd_lh)*w + lr*sign(m).
  --- momentum 0 is signSGD: w = (1 - lr*wd)*w - lr*sign(grad) (clipping has no effect).
  M.Signum = class('signum', {learning_rate = 0.01}, function(self, o)
    self.momentum, self.wd_lh, self._single_state = o.momentum or 0.9, o.wd_lh or 0, true
  end, {'learning_rate', 'momentum', 'wd_lh'})
  function M.Signum:create_state(_, weight)
    if self.momentum ~= 0 then return zeros_like(weight) end
    return nil
  end
  function M.Signum:update(index, weight, grad, state)
    self:_update_count(index)
    local lr, wd = self:_get_lr(index), self:_get_wd(index)
    if state then
      if fused(self, index, 'signum_update', {weight = weight, grad = grad, mom = state, out = weight, lr = lr, wd = wd,
          momentum = self.momentum, wd_lh = self.wd_lh, rescale_grad = self.rescale_grad,
          clip_gradient = clip_arg(self)}) then return end
      local g = clip(grad * self.rescale_grad, self.clip_gradient)
      state:set(state * self.momentum - (weight * wd + g) * (1 - self.momentum))
      weight:set(weight * (1 - lr * self.wd_lh) + op('sign')(state) * lr)
    else
      if fused(self, index, 'signsgd_update', {weight = weight, grad = grad, out = weight, lr = lr, wd = wd,
          rescale_grad = self.rescale_grad, clip_gradient = clip_arg(self)}) then return end
      weight:set(weight * (1 - lr * wd) - op('sign')(grad) * lr)
    end
  end

  -- ---------------------------------------------------------------- Adamax ----------
  --- Adamax(learning_rate=0.002, beta1=0.9, beta2=0.999): g = clip(rescale*grad + wd*w);
  --- m = beta1*m + (1-beta1)*g; u = max(beta2*u, |g|); w = w - lr/(1-beta1^t) * m/u.
  M.Adamax = class('adamax', {learning_rate = 0.002}, function(self, o)
    self.beta1, self.beta2 = o.beta1 or 0.9, o.beta2 or 0.999
  end, {'learning_rate', 'beta1', 'beta2'})
  function M.Adamax:create_state(_, weight) return {zeros_like(weight), zeros_like(weight)} end
  function M.Adamax:update(index, weight, grad, state)
    self:_update_count(index)
    local lr, wd = self:_get_lr(index), self:_get_wd(index)
    local t = self._index_update_count[index]
    lr = lr / (1 - self.beta1 ^ t)
    local g = clip(grad * self.rescale_grad + weight * wd, self.clip_gradient)
    local m, u = state[1], state[2]
    m:set(m * self.beta1 + g * (1 - self.beta1))
    u:set(nd.maximum(u * self.beta2, op('abs')(g)))
    weight:set(weight - m * lr / u)
  end

  -- ---------------------------------------------------------------- Nadam -----------
  --- Nadam(learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, schedule_decay=0.004):
  --- g = clip(rescale*grad + wd*w); mu_t = beta1*(1 - 0.5*0.96^(t*schedule_decay));
  --- the optimizer's m_schedule *= mu_t (one product over all updates, as MXNet);
  --- m = beta1*m + (1-beta1)*g; v = beta2*v + (1-beta2)*g^2;
  --- m_bar = (1-mu_t)*g/(1-m_schedule) + mu_{t+1}*m/(1-m_schedule*mu_{t+1});
  --- w = w - lr*m_bar/(sqrt(v/(1-beta2^t)) + epsilon).
  M.Nadam = class('nadam', {learning_rate = 0.001}, function(self, o)
    self.beta1, self.beta2, self.epsilon = o.beta1 or 0.9, o.beta2 or 0.999, o.epsilon or 1e-8
    self.schedule_decay, self.m_schedule = o.schedule_decay or 0.004, 1
  end, {'learning_rate', 'beta1', 'beta2', 'epsilon', 'schedule_decay'})
  function M.Nadam:create_state(_, weight) return {zeros_like(weight), zeros_like(weight)} end
  function M.Nadam:update(index, weight, grad, state)
    self:_update_count(index)
    local lr, wd = self:_get_lr(index), self:_get_wd(index)
    local t = self._index_update_count[index]
    local g = clip(grad * self.rescale_grad + weight * wd, self.clip_gradient)
    local b1, b2 = self.beta1, self.beta2
    local mu_t = b1 * (1 - 0.5 * 0.96 ^ (t * self.schedule_decay))
    local mu_t1 = b1 * (1 - 0.5 * 0.96 ^ ((t + 1) * self.schedule_decay))
    self.m_schedule = self.m_schedule * mu_t
    local m_next = self.m_schedule * mu_t1
    local m, v = state[1], state[2]
    m:set(m * b1 + g * (1 - b1))
    v:set(v * b2 + g * g * (1 - b2))
    local m_bar = g * ((1 - mu_t) / (1 - self.m_schedule)) + m * (mu_t1 / (1 - m_next))
    weight:set(weight - m_bar * lr / (sqrt(v / (1 - b2 ^ t)) + self.epsilon))
  end

  -- ---------------------------------------------------------------- SGLD ------------
  --- SGLD (stochastic gradient Langevin dynamics): g = clip(rescale*grad);
  --- w = w - lr/2*(g + wd*w) + N(0, sqrt(lr)) noise (from mx.nd.random.normal).
  M.SGLD = class('sgld', {}, nil, {})
  function M.SGLD:update(index, weight, grad, _)
    self:_update_count(index)
    local lr, wd = self:_get_lr(index), self:_get_wd(index)
    local g = clip(grad * self.rescale_grad, self.clip_gradient)
    local noise = nd.random.normal(0, math.sqrt(lr), weight.shape, {ctx = weight.context, dtype = weight.dtype})
    weight:set(weight - (g + weight * wd) * (lr / 2) + noise)
  end

  -- ---------------------------------------------------------------- FTML ------------
  --- FTML(beta1=0.6, beta2=0.999, epsilon=1e-8): g = clip(rescale*grad + wd*w);
  --- v = beta2*v + (1-beta2)*g^2; d_t = (1-beta1^t)/lr*(sqrt(v/(1-beta2^t)) + epsilon);
  --- z = beta1*z + (1-beta1)*g - (d_t - beta1*d)*w; d = d_t; w = -z/d_t.
  M.FTML = class('ftml', {}, function(self, o)
    self.beta1, self.beta2, self.epsilon = o.beta1 or 0.6, o.beta2 or 0.999, o.epsilon or 1e-8
  end, {'beta1', 'beta2', 'epsilon'})
  function M.FTML:create_state(_, weight) return {zeros_like(weight), zeros_like(weight), zeros_like(weight)} end
  function M.FTML:update(index, weight, grad, state)
    self:_update_count(index)
    local lr, wd = self:_get_lr(index), self:_get_wd(index)
    local t = self._index_update_count[index]
    local d, v, z = state[1], state[2], state[3]
    if fused(self, index, 'ftml_update', {weight = weight, grad = grad, d = d, v = v, z = z, out = weight, lr = lr, wd = wd,
        t = t, beta1 = self.beta1, beta2 = self.beta2, epsilon = self.epsilon,
        rescale_grad = self.rescale_grad, clip_grad = clip_arg(self)}) then return end
    local b1, b2 = self.beta1, self.beta2
    local g = clip(grad * self.rescale_grad + weight * wd, self.clip_gradient)
    v:set(v * b2 + g * g * (1 - b2))
    local d_t = (sqrt(v / (1 - b2 ^ t)) + self.epsilon) * ((1 - b1 ^ t) / lr)
    z:set(z * b1 + g * (1 - b1) - (d_t - d * b1) * weight)
    d:set(d_t)
    weight:set(-z / d_t)
  end

  -- ---------------------------------------------------------------- LAMB ------------
  --- LAMB(learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6, lower_bound=nil,
  --- upper_bound=nil, bias_correction=true): g = clip(rescale*grad);
  --- m = beta1*m + (1-beta1)*g; v = beta2*v + (1-beta2)*g^2; with bias_correction
  --- m, v divided by (1-beta^t); r = m/(sqrt(v) + epsilon) + wd*w; r1 = ||w|| (clamped to
  --- [lower_bound, upper_bound] when given), r2 = ||r||; w = w - lr*(r1/r2)*r (ratio 1 when
  --- r1 or r2 is 0). Runs MXNet's fused lamb_update_phase1 / norm / lamb_update_phase2
  --- (mp_lamb_update_phase1 / phase2 with multi_precision and a float16 weight, state
  --- {weight32, mean, var}) into per-index scratch arrays (r, r1, r2) kept outside the
  --- state, so a steady step allocates nothing; NDArray arithmetic when fusing is off.
  M.LAMB = class('lamb', {learning_rate = 0.001}, function(self, o)
    self.beta1, self.beta2, self.epsilon = o.beta1 or 0.9, o.beta2 or 0.999, o.epsilon or 1e-6
    self.lower_bound, self.upper_bound = o.lower_bound, o.upper_bound
    self.bias_correction = o.bias_correction ~= false
    self._lamb_scratch = {}
  end, {'learning_rate', 'beta1', 'beta2', 'epsilon', 'lower_bound', 'upper_bound', 'bias_correction'})
  function M.LAMB:create_state(_, weight) return {zeros_like(weight), zeros_like(weight)} end
  local function l2(x) return math.sqrt((x * x):sum():tonumber()) end

  -- whether the fused path runs for a weight of this dtype and context: the CPU kernels
  -- take float32 / float64, the GPU's float16 too
  local function lamb_fusable(name, weight)
    if not (M.use_fused and nd.prepare and rawget(nd, name) ~= nil) then return false end
    return weight.dtype ~= 'float16' or weight.context.device_type ~= 'cpu'
  end
  -- the scratch arrays of an index, made again when the weight's shape, dtype or context
  -- changed (a float32 r for the master copy with mp)
  local function lamb_scratch(self, index, weight, dtype)
    local s = self._lamb_scratch[index]
    if s and s.r.dtype == dtype and s.r.context == weight.context then
      local a, b = s.r.shape, weight.shape
      local same = #a == #b
      for i = 1, #b do same = same and a[i] == b[i] end
      if same then return s end
    end
    local o = {ctx = weight.context, dtype = dtype}
    s = {r = nd.zeros(weight.shape, o), r1 = nd.zeros({1}, o), r2 = nd.zeros({1}, o)}
    self._lamb_scratch[index] = s
    return s
  end
  -- one fused step; w32 the master copy (mp) or nil
  local function lamb_fused(self, index, weight, grad, m, v, w32, lr, wd, t)
    local s = lamb_scratch(self, index, weight, w32 and 'float32' or weight.dtype)
    local p1 = {weight = weight, grad = grad, mean = m, var = v, out = s.r, wd = wd, t = t,
                beta1 = self.beta1, beta2 = self.beta2, epsilon = self.epsilon,
                bias_correction = self.bias_correction, rescale_grad = self.rescale_grad,
                clip_gradient = clip_arg(self)}
    local p2 = {weight = weight, g = s.r, r1 = s.r1, r2 = s.r2, out = weight, lr = lr}
    -- as MXNet's optimizer: a bound is passed when set and not 0
    if self.lower_bound and self.lower_bound ~= 0 then p2.lower_bound = self.lower_bound end
    if self.upper_bound and self.upper_bound ~= 0 then p2.upper_bound = self.upper_bound end
    if w32 then p1.weight32, p2.weight32 = w32, w32 end
    local mp = w32 and 'mp_' or ''
    fused(self, index, mp .. 'lamb_update_phase1', p1)
    fused(self, index, 'norm', {data = w32 or weight, out = s.r1})
    fused(self, index, 'norm', {data = s.r, out = s.r2})
    fused(self, index, mp .. 'lamb_update_phase2', p2)
  end

  function M.LAMB:update(index, weight, grad, state)
    self:_update_count(index)
    local lr, wd = self:_get_lr(index), self:_get_wd(index)
    local t = self._index_update_count[index]
    local b1, b2 = self.beta1, self.beta2
    local m, v = state[1], state[2]
    if lamb_fusable('lamb_update_phase1', weight) then
      return lamb_fused(self, index, weight, grad, m, v, nil, lr, wd, t)
    end
    local g = clip(grad * self.rescale_grad, self.clip_gradient)
    m:set(m * b1 + g * (1 - b1))
    v:set(v * b2 + g * g * (1 - b2))
    local mh, vh = m, v
    if self.bias_correction then mh, vh = m / (1 - b1 ^ t), v / (1 - b2 ^ t) end
    local r = mh / (sqrt(vh) + self.epsilon) + weight * wd
    local r1, r2 = l2(weight), l2(r)
    if self.lower_bound and self.lower_bound > 0 then r1 = math.max(r1, self.lower_bound) end
    if self.upper_bound and self.upper_bound > 0 then r1 = math.min(r1, self.upper_bound) end
    local ratio = (r1 == 0 or r2 == 0) and 1 or r1 / r2
    weight:set(weight - r * (lr * ratio))
  end
  --- With multi_precision and a float16 weight: the fused mp_lamb_update_phase1 / phase2
  --- on the state {weight32, mean, var} (MXNet's layout, (weight32, (mean, var))), else
  --- the generic wrapper (the float32 update on weight32, then the weight rounded).
  function M.LAMB:update_multi_precision(index, weight, grad, state)
    if self.multi_precision and weight.dtype == 'float16' and type(state) == 'table'
        and not nd.is_ndarray(state) and #state == 3 and lamb_fusable('mp_lamb_update_phase1', state[1]) then
      M._check_update(self, index, weight, grad, state)
      self:_update_count(index)
      local lr, wd = self:_get_lr(index), self:_get_wd(index)
      return lamb_fused(self, index, weight, grad, state[2], state[3], state[1], lr, wd,
        self._index_update_count[index])
    end
    return M.Optimizer.update_multi_precision(self, index, weight, grad, state)
  end

  -- ---------------------------------------------------------------- DCASGD ----------
  --- DCASGD(momentum=0, lamda=0.04) (delay-compensated SGD): g = clip(rescale*grad);
  --- step = -lr*(g + wd*w + lamda*g^2*(w - w_prev)); with momentum m = momentum*m + step,
  --- else m = step; w_prev = w; w = w + m. State {mom, w_prev}, or {false, w_prev} with
  --- momentum 0: MXNet's (None, w_prev), so saved states keep MXNet's layout.
  M.DCASGD = class('dcasgd', {}, function(self, o)
    self.momentum, self.lamda = o.momentum or 0, o.lamda or 0.04
  end, {'momentum', 'lamda'})
  function M.DCASGD:create_state(_, weight)
    if self.momentum == 0 then return {false, weight:copy()} end
    return {zeros_like(weight), weight:copy()}
  end
  function M.DCASGD:update(index, weight, grad, state)
    self:_update_count(index)
    local lr, wd = self:_get_lr(index), self:_get_wd(index)
    local g = clip(grad * self.rescale_grad, self.clip_gradient)
    local mom, prev = state[1], state[2]
    local step = (g + weight * wd + g * g * (weight - prev) * self.lamda) * (-lr)
    if mom then
      mom:set(mom * self.momentum + step)
    else
      mom = step
    end
    prev:set(weight)
    weight:set(weight + mom)
  end
end

return P
