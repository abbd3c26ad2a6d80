-- spec/optimizer_spec.lua — mx.optimizer and mx.lr_scheduler against hand-computed
-- updates (2-3 steps each), multipliers, the updater's states, and the schedules' rates
-- and log lines at given update counts.
local mx = require 'luamx'
local H = require 'helpers'
local nd = mx.nd

-- runs `steps` updates of one parameter with a constant gradient; returns the weights
local function run(opt, w0, g, steps, index)
  local w, grad = nd.array(w0), nd.array(g)
  local upd = mx.optimizer.get_updater(opt)
  local out = {}
  for s = 1, steps do
    upd(index or 0, grad, w)
    out[s] = w:toflat()
  end
  return out
end

local TOL = 2e-6

describe('mx.optimizer', function()
  it('SGD without momentum: w = (1 - lr*wd)*w - lr*g', function()
    local r = run(mx.optimizer.create('sgd', {learning_rate = 0.1, wd = 0.01}), {1, 2}, {0.5, -1}, 2)
    H.near(r[1], {0.949, 2.098}, TOL)
    H.near(r[2], {0.898051, 2.195902}, TOL)
  end)

  it('SGD with momentum, rescale_grad and clip_gradient', function()
    local opt = mx.optimizer.SGD{learning_rate = 0.1, momentum = 0.9, rescale_grad = 0.5, clip_gradient = 0.2}
    local r = run(opt, {1, 2}, {1, -0.2}, 3)
    H.near(r[1], {0.98, 2.01}, TOL)
    H.near(r[2], {0.942, 2.029}, TOL)
    H.near(r[3], {0.8878, 2.0561}, TOL)
  end)

  it('NAG with momentum and weight decay', function()
    local r = run(mx.optimizer.create('nag', {learning_rate = 0.1, momentum = 0.9, wd = 0.1}), {1, 2}, {0.5, -1}, 2)
    H.near(r[1], {0.886, 2.152}, TOL)
    H.near(r[2], {0.725566, 2.365912}, TOL)
  end)

  it('Adam with bias correction, and with wd + clip + rescale', function()
    local r = run(mx.optimizer.create('adam', {learning_rate = 0.01}), {1}, {0.5}, 2)
    H.near(r[1], {0.9900000063245513}, TOL)
    H.near(r[2], {0.9800000107978037}, TOL)
    r = run(mx.optimizer.Adam{learning_rate = 0.01, wd = 0.1, clip_gradient = 0.3, rescale_grad = 2}, {1}, {0.5}, 2)
    H.near(r[2], {0.980000017996333}, TOL)
    assert.equal(0.001, mx.optimizer.Adam().lr)
  end)

  it('RMSProp, AdaGrad and AdaDelta', function()
    H.near(run(mx.optimizer.create('rmsprop', {learning_rate = 0.01}), {1}, {0.5}, 2)[2], {0.9454356587507156}, TOL)
    local r = run(mx.optimizer.create('adagrad', {learning_rate = 0.1}), {1}, {0.5}, 2)
    H.near(r[1], {0.900000019999994}, TOL)
    H.near(r[2], {0.829289348952406}, TOL)
    r = run(mx.optimizer.create('adadelta'), {1}, {0.5}, 2)
    H.near(r[1], {0.9900019994002}, TOL)
    H.near(r[2], {0.9797443211975133}, TOL)
  end)

  it('applies lr_mult / wd_mult, with wd_mult 0 for names not ending in _weight/_gamma', function()
    local function opt()
      local o = mx.optimizer.SGD{learning_rate = 0.1, wd = 0.1,
                                 param_idx2name = {[0] = 'fc_weight', [1] = 'fc_bias', [2] = 'bn_gamma'}}
      o:set_lr_mult({fc_weight = 2})
      return o
    end
    H.near(run(opt(), {1}, {1}, 1, 0)[1], {0.78}, TOL)
    H.near(run(opt(), {1}, {1}, 1, 1)[1], {0.9}, TOL)
    H.near(run(opt(), {1}, {1}, 1, 2)[1], {0.89}, TOL)
    local o = opt()
    o:set_wd_mult({fc_bias = 1})
    H.near(run(o, {1}, {1}, 1, 1)[1], {0.89}, TOL)
    H.near(run(opt(), {1}, {1}, 1, 'conv_bias')[1], {0.9}, TOL) -- a string index is its own name
    H.near(run(opt(), {1}, {1}, 1, 'conv_weight')[1], {0.89}, TOL)
  end)

  it('reads __lr_mult__ / __wd_mult__ from a symbol\'s attributes', function()
    local sym = {
      attr_dict = function() return {fc_weight = {__lr_mult__ = '0.5'}, fc_bias = {__wd_mult__ = '2'}} end,
      list_arguments = function() return {'data', 'fc_weight', 'fc_bias'} end,
    }
    local o = mx.optimizer.SGD{learning_rate = 0.1, wd = 0.1, param_idx2name = {[0] = 'fc_weight', [1] = 'fc_bias'}}
    o:set_attrs_from(sym)
    H.near(run(o, {1}, {1}, 1, 0)[1], {(1 - 0.005) - 0.05}, TOL)
    H.near(run(o, {1}, {1}, 1, 1)[1], {(1 - 0.02) - 0.1}, TOL)
    o:set_lr_mult({fc_weight = 1}) -- explicit tables win over attributes
    H.near(run(o, {1}, {1}, 1, 0)[1], {(1 - 0.01) - 0.1}, TOL)
  end)

  it('uses the lr_scheduler at the update count (learning_rate overrides its base_lr)', function()
    local s = mx.lr_scheduler.FactorScheduler{step = 1, factor = 0.5, base_lr = 7}
    local saved = mx.lr_scheduler.log
    mx.lr_scheduler.log = function() end
    local r = run(mx.optimizer.SGD{learning_rate = 1, lr_scheduler = s}, {0}, {1}, 3)
    mx.lr_scheduler.log = saved
    H.near({r[1][1], r[2][1], r[3][1]}, {-1, -1.5, -1.75}, TOL)
  end)

  it('updater states round-trip through get_states/set_states and a file', function()
    local opt = mx.optimizer.create('sgd', {learning_rate = 0.1, momentum = 0.9})
    local w, g = nd.array{1, 2}, nd.array{0.5, -1}
    local u = mx.optimizer.get_updater(opt)
    u(3, g, w); u(3, g, w)
    local blob = u:get_states()
    assert.same({'i3/0', 'i3/count', 'num_update', 'random_state'}, (function()
      local k = {}
      for name in pairs(blob) do k[#k + 1] = name end
      table.sort(k)
      return k
    end)())
    local path = os.tmpname()
    u:save_states(path)
    local w2 = w:copy()
    u(3, g, w)                     -- the original continues
    local opt2 = mx.optimizer.create('sgd', {learning_rate = 0.1, momentum = 0.9})
    local u2 = mx.optimizer.get_updater(opt2)
    u2:set_states(path)
    u2(3, g, w2)
    H.near(w2:toflat(), w:toflat(), 1e-7)
    assert.equal(3, opt2.num_update)
    local u3 = mx.optimizer.get_updater(mx.optimizer.create('sgd', {learning_rate = 0.1, momentum = 0.9}))
    u3:set_states(blob)
    assert.same(blob['i3/0']:toflat(), u3.states[3]:toflat())
    os.remove(path)
  end)

  it('hands the fused operator MXNet\'s input and parameter names, out = weight', function()
    local real = rawget(nd, 'prepare')
    local seen, prepared_name, prepared_params
    nd.prepare = function(name, params)
      prepared_name, prepared_params = name, params
      return setmetatable({set = function(self, k, v) params[k] = v return self end}, {__call = function(_, a)
        seen = a
        local p = params
        a.mom:set(a.mom * p.momentum - a.weight * (p.lr * p.wd) - a.grad * (p.lr * p.rescale_grad))
        a.out:set(a.weight + a.mom)
      end})
    end
    mx.optimizer.clear_prepared()
    local ok, err = pcall(function()
      local r = run(mx.optimizer.SGD{learning_rate = 0.1, momentum = 0.9, rescale_grad = 0.5}, {1, 2}, {0.4, -0.2}, 2)
      H.near(r[2], {1 - 0.02 - 0.038, 2 + 0.01 + 0.019}, TOL)
    end)
    nd.prepare = real
    mx.optimizer.clear_prepared()
    assert(ok, err)
    assert.equal('sgd_mom_update', prepared_name)
    assert.same({lr = 0.1, wd = 0, momentum = 0.9, rescale_grad = 0.5, clip_gradient = -1}, prepared_params)
    assert.equal(seen.weight, seen.out)
    assert.is_not_nil(seen.grad)
    assert.is_not_nil(seen.mom)
  end)

  it('runs steady updates without engine allocations (prepared fused calls)', function()
    local ffi = require 'ffi'
    local total = ffi.new('int64_t[1]')
    for _, name in ipairs {'sgd', 'nag', 'adam', 'rmsprop'} do
      local o = {learning_rate = 0.01, wd = 0.001}
      if name == 'sgd' or name == 'nag' then o.momentum = 0.9 end -- adam and rmsprop take none
      local opt = mx.optimizer.create(name, o)
      local updater = mx.optimizer.get_updater(opt)
      local w, g = mx.nd.ones {64}, mx.nd.full({64}, 0.5)
      updater(1, g, w) -- first step: states and the prepared call are made
      updater(1, g, w)
      mx.capi.C.lmx_debug_alloc_stats(nil, nil, total)
      local before = tonumber(total[0])
      for _ = 1, 50 do updater(1, g, w) end
      mx.capi.C.lmx_debug_alloc_stats(nil, nil, total)
      assert.equal(0, tonumber(total[0]) - before, name)
    end
  end)

  it('rejects unknown optimizer names, listing the known ones', function()
    H.raises(function() mx.optimizer.create('sgdd') end, 'unknown optimizer "sgdd"',
      'adadelta, adagrad, adam, adamax, dcasgd, ftml, ftrl, lamb, nadam, nag, rmsprop, sgd, sgld, signum')
  end)
end)

describe('mx.lr_scheduler', function()
  local lines
  local saved
  before_each(function()
    lines = {}
    saved = mx.lr_scheduler.log
    mx.lr_scheduler.log = function(m) lines[#lines + 1] = m end
  end)
  after_each(function() mx.lr_scheduler.log = saved end)

  it('FactorScheduler changes the rate once num_update passes count + step', function()
    local s = mx.lr_scheduler.FactorScheduler{step = 2, factor = 0.5, base_lr = 1, stop_factor_lr = 0.3}
    local rates = {}
    for n = 1, 6 do rates[n] = s(n) end
    assert.same({1, 1, 0.5, 0.5, 0.3, 0.3}, rates)
    assert.same({'Update[3]: Change learning rate to 5.00000e-01',
                 'Update[5]: now learning rate arrived at 3.00000e-01, will not change in the future'}, lines)
  end)

  it('FactorScheduler catches up when resumed at a later count', function()
    local s = mx.lr_scheduler.FactorScheduler{step = 10, factor = 0.1, base_lr = 1}
    assert.is_true(math.abs(s(35) - 0.001) < 1e-15)
    assert.equal(3, #lines)
  end)

  it('MultiFactorScheduler steps at each boundary', function()
    local s = mx.lr_scheduler.MultiFactorScheduler{step = {2, 4}, factor = 0.1, base_lr = 1}
    local rates = {}
    for n = 1, 6 do rates[n] = s(n) end
    H.near(rates, {1, 1, 0.1, 0.1, 0.01, 0.01}, 1e-12)
    assert.same({'Update[3]: Change learning rate to 1.00000e-01', 'Update[5]: Change learning rate to 1.00000e-02'}, lines)
  end)

  it('validates its arguments as MXNet does', function()
    H.raises(function() mx.lr_scheduler.FactorScheduler{step = 0} end, 'step must be greater or equal than 1 round')
    H.raises(function() mx.lr_scheduler.FactorScheduler{step = 1, factor = 2} end, 'factor must be no more than 1')
    H.raises(function() mx.lr_scheduler.MultiFactorScheduler{step = {3, 2}} end, 'increasing integer list')
  end)
end)
