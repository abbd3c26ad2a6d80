-- spec/metric_spec.lua — mx.metric: every metric against hand-computed values.
local mx = require 'luamx'
local H = require 'helpers'
local nd = mx.nd

local function near(a, b, tol) return math.abs(a - b) <= (tol or 1e-6) end

describe('mx.metric', function()
  it('Accuracy takes the argmax along axis 1 and accumulates', function()
    local m = mx.metric.create('acc')
    local pred = nd.array{{0.3, 0.7}, {0.6, 0.4}, {0.1, 0.9}}
    m:update({nd.array{1, 1, 1}}, {pred})
    local name, v = m:get()
    assert.equal('accuracy', name)
    assert.equal(2 / 3, v)
    m:update({nd.array{1, 0, 1}}, {pred})
    assert.equal(5 / 6, select(2, m:get()))
    m:reset_local()
    assert.is_true(select(2, m:get()) ~= select(2, m:get())) -- NaN when empty
    assert.equal(5 / 6, select(2, m:get_global()))
    m:reset()
    assert.is_true(select(2, m:get_global()) ~= select(2, m:get_global()))
  end)

  it('Accuracy compares label-shaped predictions directly and skips ignore_label', function()
    local m = mx.metric.Accuracy()
    m:update({nd.array{0, 1, 1}}, {nd.array{0, 1, 2}})
    assert.equal(2 / 3, select(2, m:get()))
    local ig = mx.metric.Accuracy{ignore_label = 0}
    ig:update({nd.array{1, 0, 1}}, {nd.array{{0.3, 0.7}, {0.9, 0.1}, {0.8, 0.2}}})
    assert.equal(0.5, select(2, ig:get()))
    assert.equal(2, ig.num_inst)
  end)

  it('TopKAccuracy counts a label among the top k scores', function()
    local m = mx.metric.create('top_k_accuracy', {top_k = 2})
    m:update({nd.array{2, 2, 0}}, {nd.array{{0.1, 0.5, 0.4}, {0.6, 0.3, 0.1}, {0.2, 0.2, 0.6}}})
    local name, v = m:get()
    assert.equal('top_k_accuracy_2', name)
    assert.equal(2 / 3, v)
  end)

  it('CrossEntropy is the mean of -log(p[label] + eps)', function()
    local m = mx.metric.create('ce')
    m:update({nd.array{1, 0}}, {nd.array{{0.25, 0.75}, {0.5, 0.5}}})
    local name, v = m:get()
    assert.equal('cross-entropy', name)
    assert.is_true(near(v, (-math.log(0.75) - math.log(0.5)) / 2, 1e-9))
  end)

  it("Perplexity is exp of the mean -log p over labels that are not ignored", function()
    local pred = nd.array{{0.25, 0.5, 0.25}, {0.5, 0.25, 0.25}, {0.125, 0.125, 0.75}}
    local m = mx.metric.Perplexity(0)
    m:update({nd.array{1, 0, 2}}, {pred})
    local name, v = m:get()
    assert.equal('perplexity', name)
    assert.is_true(near(v, math.exp((-math.log(0.5) - math.log(0.75)) / 2), 1e-9))
    assert.equal(2, m.num_inst)
    local all = mx.metric.create('perplexity')
    all:update({nd.array{1, 0, 2}}, {pred})
    assert.is_true(near(select(2, all:get()), (0.5 * 0.5 * 0.75) ^ (-1 / 3), 1e-9))
  end)

  it('MSE, MAE and RMSE average per (label, pred) pair', function()
    local labels, preds = {nd.array{1, 2, 3}, nd.array{0, 0}}, {nd.array{1.5, 2, 2}, nd.array{1, 1}}
    local mse, mae, rmse = mx.metric.create('mse'), mx.metric.create('mae'), mx.metric.create('rmse')
    for _, m in ipairs{mse, mae, rmse} do m:update(labels, preds) end
    assert.is_true(near(select(2, mse:get()), (1.25 / 3 + 1) / 2, 1e-12))
    assert.is_true(near(select(2, mae:get()), (0.5 + 1) / 2, 1e-12))
    assert.is_true(near(select(2, rmse:get()), (math.sqrt(1.25 / 3) + 1) / 2, 1e-12))
    assert.equal('rmse', (rmse:get()))
  end)

  it("F1 averages per update ('macro') or pools counts ('micro')", function()
    local p1 = nd.array{{0.2, 0.8}, {0.3, 0.7}, {0.9, 0.1}, {0.4, 0.6}} -- predicts 1, 1, 0, 1
    local l1 = nd.array{1, 0, 1, 1}
    local p2, l2 = nd.array{{0.1, 0.9}, {0.7, 0.3}}, nd.array{0, 0}
    local macro, micro = mx.metric.create('f1'), mx.metric.F1{average = 'micro'}
    for _, m in ipairs{macro, micro} do
      m:update({l1}, {p1})
      m:update({l2}, {p2})
    end
    assert.is_true(near(select(2, macro:get()), (2 / 3 + 0) / 2, 1e-12))
    assert.is_true(near(select(2, micro:get()), 4 / 7, 1e-12))
    H.raises(function() macro:update({nd.array{0, 1, 2}}, {nd.array{{1, 0}, {0, 1}, {1, 0}}}) end,
      'F1 currently only supports binary classification')
  end)

  it('CompositeEvalMetric returns arrays, get_name_value pairs', function()
    local m = mx.metric.create({'acc', 'ce'})
    m:update({nd.array{1, 0}}, {nd.array{{0.25, 0.75}, {0.375, 0.625}}})
    local names, values = m:get()
    assert.same({'accuracy', 'cross-entropy'}, names)
    assert.equal(0.5, values[1])
    assert.is_true(near(values[2], (-math.log(0.75) - math.log(0.375)) / 2, 1e-9))
    local nv = m:get_name_value()
    assert.equal(2, #nv)
    assert.equal('cross-entropy', nv[2][1])
    assert.equal(values[2], nv[2][2])
  end)

  it('custom metrics take a function(label, pred) returning value or sum, count', function()
    local m = mx.metric.create(function(label, pred) return label:toflat()[1] + pred:toflat()[1], 2 end, {name = 'mine'})
    m:update({nd.array{3}, nd.array{1}}, {nd.array{2}, nd.array{4}})
    local name, v = m:get()
    assert.equal('mine', name)
    assert.equal((5 + 5) / 4, v)
  end)

  it('rejects unknown names and mismatched inputs', function()
    H.raises(function() mx.metric.create('acuracy') end, 'unknown metric "acuracy"', 'acc, accuracy', 'perplexity', 'rmse')
    H.raises(function() mx.metric.create('acc'):update({nd.array{1}}, {}) end,
      'shape of labels 1 does not match shape of predictions 0')
    H.raises(function() mx.metric.create('mse'):update({nd.array{1, 0}}, {nd.array{{0.2, 0.8}, {0.4, 0.6}}}) end,
      'mse: 2 labels but 4 predictions')
  end)
end)
