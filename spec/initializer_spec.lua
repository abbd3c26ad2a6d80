-- spec/initializer_spec.lua — mx.init: name rules, __init__ attributes, Xavier bounds,
-- repeatability under mx.random.seed, Mixed, JSON forms.
local mx = require 'luamx'
local H = require 'helpers'
local nd = mx.nd

local function all(arr, pred)
  for _, v in ipairs(arr:toflat()) do if not pred(v) then return false end end
  return true
end
local function const(v) return function(x) return x == v end end

describe('mx.init', function()
  it('applies MXNet name rules: bias/beta/moving_mean 0, gamma/moving_var 1, weight by rule', function()
    local init = mx.init.Constant(5)
    local cases = {fc_bias = 0, bn_gamma = 1, bn_beta = 0, bn_moving_mean = 0, bn_moving_var = 1,
                   fc_weight = 5, q_min = 0, q_max = 1, bn_moving_inv_var = 0}
    for name, expect in pairs(cases) do
      local a = nd.full({2, 3}, -7)
      init(name, a)
      assert.is_true(all(a, const(expect)), name)
    end
    H.raises(function() init('something', nd.zeros{2}) end, 'Unknown initialization pattern for something')
  end)

  it('lets the __init__ attribute override the name rule (JSON and bare names)', function()
    local a = nd.zeros{2, 2}
    mx.init.Uniform(0.1)(mx.init.InitDesc('fc_bias', {__init__ = '["constant", {"value": 2}]'}), a)
    assert.is_true(all(a, const(2)))
    mx.init.Zero()({name = 'x_weight', attrs = {__init__ = 'ones'}}, a)
    assert.is_true(all(a, const(1)))
    mx.init.Zero():init_array({name = 'x', attrs = {__init__ = mx.init.Constant(3):dumps()}}, a)
    assert.is_true(all(a, const(3)))
    H.raises(function() mx.init.Zero()({name = 'w', attrs = {__init__ = '["nosuch", {}]'}}, a) end,
      'unknown initializer "nosuch"', 'xavier')
    H.raises(function() mx.init.Zero()({name = 'w', attrs = {__init__ = '["constant", {"value": }]'}}, a) end,
      'bad __init__ JSON')
  end)

  it('reads the __init__ a symbol variable carries (mx.sym.Variable{init=})', function()
    local v = mx.sym.Variable('fc_bias', {init = mx.init.Constant(2)})
    local attrs = v:attr_dict().fc_bias
    assert.equal('["constant", {"value": 2}]', attrs.__init__)
    local a = nd.zeros{3}
    mx.init.Xavier()(mx.init.InitDesc('fc_bias', attrs), a)
    assert.same({2, 2, 2}, a:toflat())
  end)

  it('writes dumps() in MXNet\'s form and reads it back', function()
    assert.equal('["constant", {"value": 2}]', mx.init.Constant(2):dumps())
    assert.equal('["xavier", {"factor_type": "in", "magnitude": 2.34, "rnd_type": "uniform"}]',
      mx.init.Xavier{factor_type = 'in', magnitude = 2.34}:dumps())
    local x = mx.init.create(mx.init.Xavier{rnd_type = 'gaussian', magnitude = 2}:dumps())
    assert.equal('gaussian', x.rnd_type)
    assert.equal(2, x.magnitude)
    assert.equal('["lstmbias", {"forget_bias": 1}]', mx.init.LSTMBias():dumps())
  end)

  it('Uniform and Normal draw repeatably under mx.random.seed', function()
    local function draw(init)
      mx.random.seed(42)
      local a = nd.zeros{50, 4}
      init('w_weight', a)
      return a:toflat()
    end
    local u1, u2 = draw(mx.init.Uniform(0.5)), draw(mx.init.Uniform(0.5))
    assert.same(u1, u2)
    local lo, hi = math.huge, -math.huge
    for _, v in ipairs(u1) do lo, hi = math.min(lo, v), math.max(hi, v) end
    assert.is_true(lo >= -0.5 and hi <= 0.5 and hi - lo > 0.5)
    local n1, n2 = draw(mx.init.Normal(0.01)), draw(mx.init.Normal(0.01))
    assert.same(n1, n2)
    local s = 0
    for _, v in ipairs(n1) do s = s + v * v end
    assert.is_true(math.sqrt(s / #n1) < 0.02)
  end)

  it('Xavier scales by fan-in / fan-out / their average (conv kernels included)', function()
    local x = mx.init.Xavier{factor_type = 'in', magnitude = 2.34}
    assert.equal(math.sqrt(2.34 / (3 * 5 * 5)), x:scale_for('c', {8, 3, 5, 5}))
    assert.equal(math.sqrt(3 / ((20 + 10) / 2)), mx.init.Xavier():scale_for('w', {10, 20}))
    assert.equal(math.sqrt(3 / 10), mx.init.Xavier{factor_type = 'out'}:scale_for('w', {10, 20}))
    mx.random.seed(1)
    local a = nd.zeros{100, 8}
    mx.init.Xavier{factor_type = 'in', magnitude = 3}('fc_weight', a)
    local bound = math.sqrt(3 / 8)
    local hi = 0
    for _, v in ipairs(a:toflat()) do hi = math.max(hi, math.abs(v)) end
    assert.is_true(hi <= bound and hi > 0.9 * bound)
    H.raises(function() mx.init.Xavier()('fc_weight', nd.zeros{4}) end,
      'Xavier initializer cannot be applied to vector fc_weight')
    H.raises(function() mx.init.Xavier{factor_type = 'mean'} end, "factor_type must be 'avg', 'in' or 'out', got mean")
  end)

  it('LSTMBias sets the forget-gate quarter', function()
    local b = nd.full({8}, 9)
    mx.init.Xavier()({name = 'lstm_i2h_bias', attrs = {__init__ = mx.init.LSTMBias{forget_bias = 2.5}:dumps()}}, b)
    assert.same({0, 0, 2.5, 2.5, 0, 0, 0, 0}, b:toflat())
  end)

  it('Mixed picks the first matching pattern and applies its name rules', function()
    local init = mx.init.Mixed({'^conv', '.*'}, {mx.init.Constant(3), mx.init.Constant(4)})
    local a, b, c = nd.zeros{2}, nd.zeros{2}, nd.zeros{2}
    init('conv1_weight', a)
    init('fc1_weight', b)
    init('conv1_bias', c)
    assert.same({3, 3}, a:toflat())
    assert.same({4, 4}, b:toflat())
    assert.same({0, 0}, c:toflat())
    local strict = mx.init.Mixed({'fc'}, {mx.init.One()})
    H.raises(function() strict('conv_weight', a) end, 'Parameter name conv_weight did not match any pattern')
  end)
end)
