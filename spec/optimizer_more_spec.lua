-- Ftrl, Signum (and signSGD), Adamax, Nadam, SGLD, FTML, LAMB, DCASGD against scalar
-- references written from MXNet 1.9's update rules (optimizer.py and the kernels of
-- optimizer_op-inl.h), element by element in plain Lua doubles over three steps with
-- weight decay, rescale_grad and clipping; Adamax and Nadam also against PyTorch's
-- optimizers (spec/torch_optim_ref.py, skipped without torch); multi_precision through
-- MXNet's generic wrapper; both constructor forms.
local mx = require 'luamx'
local H = require 'helpers'

local W0 = {0.5, -1.0, 2.0, 0.25}
local GRADS = {{0.1, -0.2, 0.3, 0.0}, {-0.5, 0.4, 0.05, 1.0}, {0.2, 0.2, -0.3, -0.1}}
local TOL = 2e-5

local function sign(x) return x > 0 and 1 or (x < 0 and -1 or 0) end
local function clipv(x, c) if c and c > 0 then return math.max(-c, math.min(c, x)) end return x end

-- runs `opt` for the three steps through an updater; returns the weights after each step
local function run(opt, dtype)
  local w = mx.nd.array(W0, {dtype = dtype or 'float32'})
  local upd = mx.optimizer.get_updater(opt)
  local out = {}
  for s, g in ipairs(GRADS) do
    upd(0, mx.nd.array(g, {dtype = dtype or 'float32'}), w)
    out[s] = w:astype('float64'):toflat()
  end
  return out, upd
end

-- a scalar reference: step(i, w, g, t, st) returns the new w for element i at step t;
-- st is a per-element table of states
local function reference(step)
  local w, st, out = {}, {}, {}
  for i, v in ipairs(W0) do w[i], st[i] = v, {} end
  for t, g in ipairs(GRADS) do
    for i = 1, #w do w[i] = step(i, w[i], g[i], t, st[i]) end
    local copy = {}
    for i, v in ipairs(w) do copy[i] = v end
    out[t] = copy
  end
  return out
end

local function same_steps(got, want, tol)
  for t = 1, #want do H.near(got[t], want[t], tol or TOL) end
end

describe('Ftrl (ftrl_update)', function()
  it('matches the scalar rule with wd, rescale_grad and clip_gradient', function()
    local lr, l1, beta, wd, rs, clip = 0.1, 0.01, 1, 0.05, 2, 0.5
    local want = reference(function(_, w, g, _, s)
      s.z, s.n = s.z or 0, s.n or 0
      g = clipv(g * rs, clip)
      s.z = s.z + g - (math.sqrt(s.n + g * g) - math.sqrt(s.n)) * w / lr
      s.n = s.n + g * g
      if math.abs(s.z) <= l1 then return 0 end
      return (sign(s.z) * l1 - s.z) / ((beta + math.sqrt(s.n)) / lr + wd)
    end)
    local got = run(mx.optimizer.Ftrl(l1, lr, beta, {wd = wd, rescale_grad = rs, clip_gradient = clip}))
    same_steps(got, want)
    -- a hand-derived first step of element 1: g = 0.2, z = 0.2 - 0.2*0.5/0.1 = -0.8,
    -- n = 0.04, w = (-0.01 + 0.8) / ((1 + 0.2)/0.1 + 0.05)
    H.near({got[1][1]}, {0.79 / 12.05}, 1e-6)
  end)
end)

describe('Signum (signum_update) and signSGD (signsgd_update)', function()
  it('Signum matches the scalar rule with wd_lh', function()
    local lr, mom, wd, wd_lh, clip = 0.01, 0.9, 0.1, 0.05, 0.15
    local want = reference(function(_, w, g, _, s)
      s.m = s.m or 0
      s.m = mom * s.m - (1 - mom) * (wd * w + clipv(g, clip))
      return (1 - lr * wd_lh) * w + lr * sign(s.m)
    end)
    same_steps(run(mx.optimizer.Signum(lr, mom, wd_lh, {wd = wd, clip_gradient = clip})), want)
  end)
  it('momentum 0 is signSGD: w = (1 - lr*wd)*w - lr*sign(g), clipping ignored', function()
    local lr, wd = 0.01, 0.1
    local want = reference(function(_, w, g) return (1 - lr * wd) * w - lr * sign(g) end)
    same_steps(run(mx.optimizer.Signum{learning_rate = lr, momentum = 0, wd = wd, clip_gradient = 0.01}), want)
  end)
end)

local function adamax_ref(lr, b1, b2, wd, clip)
  return reference(function(_, w, g, t, s)
    s.m, s.u = s.m or 0, s.u or 0
    g = clipv(g + wd * w, clip)
    s.m = b1 * s.m + (1 - b1) * g
    s.u = math.max(b2 * s.u, math.abs(g))
    return w - lr / (1 - b1 ^ t) * s.m / s.u
  end)
end

local function nadam_ref(lr, b1, b2, eps, decay, wd)
  local m_schedule = 1
  return reference(function(i, w, g, t, s)
    s.m, s.v = s.m or 0, s.v or 0
    g = g + wd * w
    local mu, mu1 = b1 * (1 - 0.5 * 0.96 ^ (t * decay)), b1 * (1 - 0.5 * 0.96 ^ ((t + 1) * decay))
    if i == 1 then m_schedule = m_schedule * mu end -- once per update
    s.m = b1 * s.m + (1 - b1) * g
    s.v = b2 * s.v + (1 - b2) * g * g
    local m_bar = (1 - mu) * g / (1 - m_schedule) + mu1 * s.m / (1 - m_schedule * mu1)
    return w - lr * m_bar / (math.sqrt(s.v / (1 - b2 ^ t)) + eps)
  end)
end

-- PyTorch's values, computed once by spec/torch_optim_ref.py (nil without torch)
local torch_ref = (function()
  local src = os.getenv('LUAMX_SOURCE_DIR') or '.'
  local p = io.popen(('/usr/bin/python3 %s/spec/torch_optim_ref.py 2>/dev/null'):format(src))
  if not p then return nil end
  local out = {}
  for line in p:lines() do
    local name, rest = line:match('^(%S+) (.*)$')
    if name then
      local vals = {}
      for v in rest:gmatch('%S+') do vals[#vals + 1] = tonumber(v) end
      local steps = {}
      for t = 1, #GRADS do steps[t] = {unpack(vals, (t - 1) * #W0 + 1, t * #W0)} end
      out[name] = steps
    end
  end
  p:close()
  return next(out) and out or nil
end)()

describe('Adamax', function()
  it('matches the scalar rule (u = max(beta2*u, |g|), lr/(1-beta1^t)) with clipping', function()
    same_steps(run(mx.optimizer.Adamax(0.002, 0.9, 0.999, {wd = 0.01, clip_gradient = 0.3})),
      adamax_ref(0.002, 0.9, 0.999, 0.01, 0.3))
  end)
  it('matches PyTorch\'s Adamax (eps 0)', function()
    if not torch_ref then pending('PyTorch is not installed') return end
    same_steps(run(mx.optimizer.create('adamax', {wd = 0.01})), torch_ref.adamax)
  end)
end)

describe('Nadam', function()
  it('matches the scalar rule, with the momentum schedule shared over all updates', function()
    same_steps(run(mx.optimizer.Nadam{wd = 0.01}), nadam_ref(0.001, 0.9, 0.999, 1e-8, 0.004, 0.01))
  end)
  it('matches PyTorch\'s NAdam', function()
    if not torch_ref then pending('PyTorch is not installed') return end
    same_steps(run(mx.optimizer.create('nadam', {wd = 0.01})), torch_ref.nadam)
  end)
  it('multiplies m_schedule once per update of any parameter, as MXNet', function()
    local opt = mx.optimizer.Nadam()
    local upd = mx.optimizer.get_updater(opt)
    upd(0, mx.nd.array{1}, mx.nd.array{1})
    upd(1, mx.nd.array{1}, mx.nd.array{1})
    local mu1 = 0.9 * (1 - 0.5 * 0.96 ^ 0.004)
    H.near({opt.m_schedule}, {mu1 * mu1}, 1e-12)
  end)
end)

describe('FTML (ftml_update)', function()
  it('matches the scalar rule', function()
    local lr, b1, b2, eps, wd, clip = 0.05, 0.6, 0.999, 1e-8, 0.02, 0.4
    local want = reference(function(_, w, g, t, s)
      s.d, s.v, s.z = s.d or 0, s.v or 0, s.z or 0
      g = clipv(g + wd * w, clip)
      s.v = b2 * s.v + (1 - b2) * g * g
      local d_t = (1 - b1 ^ t) / lr * (math.sqrt(s.v / (1 - b2 ^ t)) + eps)
      s.z = b1 * s.z + (1 - b1) * g - (d_t - b1 * s.d) * w
      s.d = d_t
      return -s.z / d_t
    end)
    same_steps(run(mx.optimizer.FTML(b1, b2, eps, {learning_rate = lr, wd = wd, clip_gradient = clip})), want, 1e-4)
  end)
end)

describe('LAMB (lamb_update_phase1 / phase2)', function()
  local function lamb_ref(lr, b1, b2, eps, wd, lower, upper, bias)
    local w, m, v, out = {}, {}, {}, {}
    for i, x in ipairs(W0) do w[i], m[i], v[i] = x, 0, 0 end
    for t, g in ipairs(GRADS) do
      local r = {}
      for i = 1, #w do
        m[i] = b1 * m[i] + (1 - b1) * g[i]
        v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i]
        local mh, vh = m[i], v[i]
        if bias then mh, vh = mh / (1 - b1 ^ t), vh / (1 - b2 ^ t) end
        r[i] = mh / (math.sqrt(vh) + eps) + wd * w[i]
      end
      local r1, r2 = 0, 0
      for i = 1, #w do r1, r2 = r1 + w[i] ^ 2, r2 + r[i] ^ 2 end
      r1, r2 = math.sqrt(r1), math.sqrt(r2)
      if lower then r1 = math.max(r1, lower) end
      if upper then r1 = math.min(r1, upper) end
      local ratio = (r1 == 0 or r2 == 0) and 1 or r1 / r2
      local copy = {}
      for i = 1, #w do w[i] = w[i] - lr * ratio * r[i]; copy[i] = w[i] end
      out[t] = copy
    end
    return out
  end
  it('matches the layer-wise rule with bias correction', function()
    same_steps(run(mx.optimizer.LAMB{learning_rate = 0.01, wd = 0.01}),
      lamb_ref(0.01, 0.9, 0.999, 1e-6, 0.01, nil, nil, true))
  end)
  it('clamps the weight norm to upper_bound, and runs without bias correction', function()
    same_steps(run(mx.optimizer.LAMB(0.01, 0.9, 0.999, 1e-6, nil, 1.0, false)),
      lamb_ref(0.01, 0.9, 0.999, 1e-6, 0, nil, 1.0, false))
  end)
end)

describe('DCASGD', function()
  local function dca_ref(lr, mom, lamda, wd)
    return reference(function(_, w, g, _, s)
      s.prev = s.prev or w
      s.m = s.m or 0
      local step = -lr * (g + wd * w + lamda * g * g * (w - s.prev))
      if mom ~= 0 then s.m = mom * s.m + step else s.m = step end
      s.prev = w
      return w + s.m
    end)
  end
  it('matches the delay-compensated rule without and with momentum', function()
    same_steps(run(mx.optimizer.DCASGD(0, 0.5, {learning_rate = 0.1, wd = 0.01})), dca_ref(0.1, 0, 0.5, 0.01))
    same_steps(run(mx.optimizer.DCASGD{momentum = 0.9, lamda = 0.5, learning_rate = 0.1}), dca_ref(0.1, 0.9, 0.5, 0))
  end)
  it('keeps MXNet\'s state layout: (None, w_prev) without momentum, (mom, w_prev) with', function()
    local w = mx.nd.array{1, 2}
    local st = mx.optimizer.DCASGD():create_state(0, w)
    assert.equal(2, #st)
    assert.is_false(st[1])
    H.near(st[2]:toflat(), {1, 2}, 0)
    local st2 = mx.optimizer.DCASGD{momentum = 0.5}:create_state(0, w)
    H.near(st2[1]:toflat(), {0, 0}, 0)
    H.near(st2[2]:toflat(), {1, 2}, 0)
    local mp = mx.optimizer.DCASGD{multi_precision = true}:create_state_multi_precision(0, w:astype('float16'))
    assert.equal(3, #mp) -- {weight32, None, w_prev}
    assert.is_false(mp[2])
    assert.equal('float32', mp[3].dtype)
  end)
  it('saves and restores the None entry; the restored updater continues the same steps', function()
    local function make() return mx.optimizer.DCASGD(0, 0.5, {learning_rate = 0.1, wd = 0.01}) end
    local _, upd = run(make())
    local saved = upd:get_states()
    assert.is_not_nil(saved['i0/1none'])
    assert.is_nil(saved['i0/1'])
    H.near(saved['i0/2']:toflat(), upd.states[0][2]:toflat(), 0)
    local path = os.tmpname()
    upd:save_states(path)
    local upd2 = mx.optimizer.get_updater(make())
    upd2:set_states(path)
    os.remove(path)
    local w1, w2 = mx.nd.array{0.3, -0.2, 0.1, 0.4}, mx.nd.array{0.3, -0.2, 0.1, 0.4}
    upd(0, mx.nd.array{0.1, 0.1, -0.1, 0.2}, w1)
    upd2(0, mx.nd.array{0.1, 0.1, -0.1, 0.2}, w2)
    H.near(w2:toflat(), w1:toflat(), 0)
    assert.is_false(upd2.states[0][1])
    -- a state saved with momentum does not load into an optimizer without: named
    local _, um = run(mx.optimizer.DCASGD{momentum = 0.9})
    local upd3 = mx.optimizer.get_updater(make())
    upd3:set_states(um:get_states())
    H.raises(function() upd3(0, mx.nd.array{0, 0, 0, 0}, mx.nd.array{1, 1, 1, 1}) end,
      'the loaded optimizer state of i0 is {(4) float32, (4) float32}', 'needs {None, (4) float32}')
  end)
end)

describe('SGLD', function()
  it('adds N(0, sqrt(lr)) noise around the half-step gradient descent', function()
    mx.random.seed(7)
    local n, lr, wd = 20000, 0.04, 0.1
    local w = mx.nd.ones{n}
    local g = mx.nd.ones{n} * 2
    local opt = mx.optimizer.SGLD{learning_rate = lr, wd = wd}
    opt:update(0, w, g, nil)
    local v = w:toflat()
    local mean, var = 0, 0
    for i = 1, n do mean = mean + v[i] end
    mean = mean / n
    for i = 1, n do var = var + (v[i] - mean) ^ 2 end
    var = var / (n - 1)
    local expect = 1 - lr / 2 * (2 + wd * 1)
    -- standard error of the mean: sqrt(lr / n) ~ 0.0014
    assert.is_true(math.abs(mean - expect) < 0.006, ('mean %g, expected %g'):format(mean, expect))
    assert.is_true(math.abs(var - lr) < 0.004, ('variance %g, expected %g'):format(var, lr))
  end)
end)

describe('multi_precision (MXNet\'s generic wrapper)', function()
  it('keeps a float32 master copy of a float16 weight and updates it in float32', function()
    local opt = mx.optimizer.Adamax{multi_precision = true, wd = 0.01}
    local got, upd = run(opt, 'float16')
    local st = upd.states[0]
    assert.equal('float32', st[1].dtype)
    assert.equal(3, #st) -- {weight32, m, u}
    local ref = adamax_ref(0.002, 0.9, 0.999, 0.01, nil)
    H.near(st[1]:astype('float64'):toflat(), ref[3], TOL)
    -- the float16 weight is the master copy rounded
    H.near(got[3], st[1]:astype('float16'):astype('float64'):toflat(), 0)
  end)
  it('wraps a single-array state (Signum\'s momentum) as {weight32, mom}', function()
    local opt = mx.optimizer.Signum{multi_precision = true, momentum = 0.9}
    local _, upd = run(opt, 'float16')
    assert.equal(2, #upd.states[0]) -- {weight32, mom}: the single momentum state unpacked
    local st = upd.states[0]
    assert.equal('float32', st[2].dtype)
  end)
  it('round-trips the wrapped states through get_states / set_states', function()
    local opt = mx.optimizer.Nadam{multi_precision = true}
    local _, upd = run(opt, 'float16')
    local saved = upd:get_states()
    local upd2 = mx.optimizer.get_updater(mx.optimizer.Nadam{multi_precision = true})
    upd2:set_states(saved)
    H.near(upd2.states[0][1]:toflat(), upd.states[0][1]:toflat(), 0)
    assert.equal(3, #upd2.states[0])
  end)
end)

describe('constructors: positional (MXNet\'s order) and keyword forms', function()
  it('give the same options', function()
    local cases = {
      {mx.optimizer.Ftrl(0.02, 0.3, 2), mx.optimizer.Ftrl{lamda1 = 0.02, learning_rate = 0.3, beta = 2}, {'lamda1', 'lr', 'beta'}},
      {mx.optimizer.Signum(0.1, 0.5, 0.01), mx.optimizer.Signum{learning_rate = 0.1, momentum = 0.5, wd_lh = 0.01}, {'lr', 'momentum', 'wd_lh'}},
      {mx.optimizer.Adamax(0.1, 0.8, 0.9), mx.optimizer.Adamax{learning_rate = 0.1, beta1 = 0.8, beta2 = 0.9}, {'lr', 'beta1', 'beta2'}},
      {mx.optimizer.Nadam(0.1, 0.8, 0.9, 1e-3, 0.01), mx.optimizer.Nadam{learning_rate = 0.1, beta1 = 0.8, beta2 = 0.9, epsilon = 1e-3, schedule_decay = 0.01}, {'lr', 'beta1', 'beta2', 'epsilon', 'schedule_decay'}},
      {mx.optimizer.FTML(0.5, 0.9, 1e-4), mx.optimizer.FTML{beta1 = 0.5, beta2 = 0.9, epsilon = 1e-4}, {'beta1', 'beta2', 'epsilon'}},
      {mx.optimizer.LAMB(0.1, 0.8, 0.9, 1e-3, 0.1, 2, false), mx.optimizer.LAMB{learning_rate = 0.1, beta1 = 0.8, beta2 = 0.9, epsilon = 1e-3, lower_bound = 0.1, upper_bound = 2, bias_correction = false}, {'lr', 'beta1', 'beta2', 'epsilon', 'lower_bound', 'upper_bound', 'bias_correction'}},
      {mx.optimizer.DCASGD(0.9, 0.1), mx.optimizer.DCASGD{momentum = 0.9, lamda = 0.1}, {'momentum', 'lamda'}},
      {mx.optimizer.SGD(0.9), mx.optimizer.SGD{momentum = 0.9}, {'momentum'}},
      {mx.optimizer.NAG(0.8), mx.optimizer.NAG{momentum = 0.8}, {'momentum'}},
      {mx.optimizer.Adam(0.1, 0.8, 0.7, 1e-3), mx.optimizer.Adam{learning_rate = 0.1, beta1 = 0.8, beta2 = 0.7, epsilon = 1e-3}, {'lr', 'beta1', 'beta2', 'epsilon'}},
      {mx.optimizer.RMSProp(0.1, 0.8, 0.7, 1e-3, true, 5), mx.optimizer.RMSProp{learning_rate = 0.1, gamma1 = 0.8, gamma2 = 0.7, epsilon = 1e-3, centered = true, clip_weights = 5}, {'lr', 'gamma1', 'gamma2', 'epsilon', 'centered', 'clip_weights'}},
      {mx.optimizer.AdaGrad(1e-3), mx.optimizer.AdaGrad{eps = 1e-3}, {'float_stable_eps'}},
      {mx.optimizer.AdaDelta(0.5, 1e-3), mx.optimizer.AdaDelta{rho = 0.5, epsilon = 1e-3}, {'rho', 'epsilon'}},
      {mx.optimizer.SGD(0.9, {wd = 0.1}), mx.optimizer.SGD{momentum = 0.9, wd = 0.1}, {'momentum', 'wd'}},
    }
    for _, c in ipairs(cases) do
      for _, k in ipairs(c[3]) do
        assert.equal(c[2][k], c[1][k], c[1]._name .. '.' .. k)
        assert.is_not_nil(c[1][k], c[1]._name .. '.' .. k)
      end
    end
  end)
  it('rejects too many positional arguments and a name given twice', function()
    H.raises(function() mx.optimizer.DCASGD(0.9, 0.1, 3) end,
      'mx.optimizer.dcasgd: takes at most 2 positional arguments (momentum, lamda), got 3')
    H.raises(function() mx.optimizer.SGD(0.9, {momentum = 0.5}) end,
      "mx.optimizer.sgd: got multiple values for argument 'momentum'")
    H.raises(function() mx.optimizer.Ftrl{lamda = 0.1} end, 'mx.optimizer.ftrl: unknown option lamda')
  end)
  it('are registered for create() under MXNet\'s names', function()
    for _, name in ipairs{'ftrl', 'signum', 'adamax', 'nadam', 'sgld', 'ftml', 'lamb', 'dcasgd'} do
      assert.equal(name, mx.optimizer.create(name)._name)
    end
  end)
end)

describe('fused update operators (ftrl_update, signum_update, signsgd_update, ftml_update)', function()
  local function with_fused(flag, fn)
    local old = mx.optimizer.use_fused
    mx.optimizer.use_fused = flag
    local ok, err = pcall(fn)
    mx.optimizer.use_fused = old
    if not ok then error(err, 0) end
  end
  local makers = {
    ftrl = function() return mx.optimizer.Ftrl(0.01, 0.1, 1, {wd = 0.05, rescale_grad = 2, clip_gradient = 0.5}) end,
    signum = function() return mx.optimizer.Signum(0.01, 0.9, 0.05, {wd = 0.1, clip_gradient = 0.15}) end,
    signsgd = function() return mx.optimizer.Signum{momentum = 0, wd = 0.1} end,
    ftml = function() return mx.optimizer.FTML(0.6, 0.999, 1e-8, {learning_rate = 0.05, wd = 0.02, clip_gradient = 0.4}) end,
  }
  for name, make in pairs(makers) do
    it(name .. ': the operator and the NDArray arithmetic give the same steps', function()
      assert.is_function(rawget(mx.nd, name .. '_update'))
      local fused, plain
      with_fused(true, function() fused = run(make()) end)
      with_fused(false, function() plain = run(make()) end)
      same_steps(fused, plain, 1e-6)
    end)
  end

  it('ftrl_update by MXNet\'s names and formula (one step, by hand)', function()
    local w, z, n = mx.nd.array{0.5, 0.01}, mx.nd.zeros{2}, mx.nd.zeros{2}
    mx.nd.ftrl_update{weight = w, grad = mx.nd.array{0.1, 0.001}, z = z, n = n, out = w, lr = 0.1,
                      lamda1 = 0.01, beta = 1}
    -- element 1: z = 0.1 - 0.1*0.5/0.1 = -0.4, n = 0.01: w = (-0.01 + 0.4)/((1 + 0.1)/0.1)
    -- element 2: z = 0.001 - 0.001*0.01/0.1 = 0.0009 <= lamda1: w = 0
    H.near(w:toflat(), {0.39 / 11, 0}, 1e-7)
    H.near(z:toflat(), {-0.4, 0.0009}, 1e-7)
    H.near(n:toflat(), {0.01, 1e-6}, 1e-9)
  end)

  -- The comparison above cannot tell a failing operator from a working one (the optimizer
  -- falls back to the arithmetic): each operator is also checked on its own.
  it('signum_update by MXNet\'s names and formula (one step, by hand)', function()
    local w, m = mx.nd.array{1, -2}, mx.nd.array{0.05, 0}
    mx.nd.signum_update{weight = w, grad = mx.nd.array{0.1, -0.4}, mom = m, out = w, lr = 0.1,
                        momentum = 0.9, wd = 0.5, wd_lh = 0.2, rescale_grad = 2, clip_gradient = 0.3}
    -- element 1: g = 0.2, m = 0.9*0.05 - 0.1*(0.5*1 + 0.2) = -0.025, w = 0.98*1 - 0.1 = 0.88
    -- element 2: g = clip(-0.8) = -0.3, m = -0.1*(0.5*-2 - 0.3) = 0.13, w = 0.98*-2 + 0.1 = -1.86
    H.near(m:toflat(), {-0.025, 0.13}, 1e-6)
    H.near(w:toflat(), {0.88, -1.86}, 1e-6)
  end)

  it('signsgd_update by MXNet\'s names and formula (one step, by hand)', function()
    local w = mx.nd.array{1, -2, 3}
    mx.nd.signsgd_update{weight = w, grad = mx.nd.array{0.1, -0.4, 0}, out = w, lr = 0.1, wd = 0.5,
                         rescale_grad = 2, clip_gradient = 0.01}
    -- w = (1 - 0.1*0.5)*w - 0.1*sign(g): the sign, so neither rescale nor clipping matter
    H.near(w:toflat(), {0.85, -1.8, 2.85}, 1e-6)
  end)

  it('ftml_update by MXNet\'s names and formula (one step, by hand)', function()
    local w, d, v, z = mx.nd.array{1}, mx.nd.zeros{1}, mx.nd.zeros{1}, mx.nd.zeros{1}
    mx.nd.ftml_update{weight = w, grad = mx.nd.array{0.5}, d = d, v = v, z = z, out = w, lr = 0.1, t = 1,
                      epsilon = 0}
    -- v = 0.001*0.25; d = (1 - 0.6)/0.1 * sqrt(v/(1 - 0.999)) = 2; z = 0.4*0.5 - 2*1 = -1.8;
    -- w = -z/d = 0.9
    H.near({w:tonumber(), d:tonumber(), v:tonumber(), z:tonumber()}, {0.9, 2, 0.00025, -1.8}, 5e-5) -- float32 (1 - beta2)
    H.raises(function() mx.nd.ftml_update{weight = w, grad = w, d = d, v = v, z = z, lr = 0.1} end, "'t'")
  end)

  it('runs on gpu(0) with the CPU\'s values', function()
    if mx.context.num_gpus() == 0 then pending('no GPU context') return end
    for name, make in pairs(makers) do
      local cpu = run(make())
      local w = mx.nd.array(W0, {ctx = mx.gpu(0)})
      local upd = mx.optimizer.get_updater(make())
      for s, g in ipairs(GRADS) do
        upd(0, mx.nd.array(g, {ctx = mx.gpu(0)}), w)
        H.near(w:as_in_context(mx.cpu()):toflat(), cpu[s], 1e-6)
      end
      assert.is_truthy(name)
    end
  end)
end)
