-- The training API around the optimizers: MXNet 1.9's schedulers (FactorScheduler's
-- positional factor, Poly, Cosine, warm-up), initializers (MSRAPrelu, Orthogonal,
-- Bilinear, Load), metrics (MCC, NLL, PearsonCorrelation, PCC, Loss, custom from a Lua
-- function), both calling forms of every public constructor of lr_scheduler,
-- initializer, metric and io, and mx.nd.BatchNorm's aux states given positionally.
-- Expected numbers are derived by hand from MXNet's documented formulas (shown inline).
local mx = require 'luamx'
local H = require 'helpers'

local LS = mx.lr_scheduler

local function quiet(fn)
  local log = LS.log
  LS.log = function() end
  local ok, err = pcall(fn)
  LS.log = log
  if not ok then error(err, 0) end
end

describe('lr_scheduler', function()
  it('FactorScheduler(step, factor) decays positionally (it used to ignore factor)', function()
    quiet(function()
      local s = LS.FactorScheduler(2, 0.5)
      assert.equal(0.01, s(1))
      assert.equal(0.01, s(2))
      assert.equal(0.005, s(3))
      assert.equal(0.0025, s(5))
      local k = LS.FactorScheduler{step = 2, factor = 0.5}
      local m = LS.FactorScheduler(2, {factor = 0.5})
      for _, n in ipairs{1, 3, 5, 9} do assert.equal(k(n), LS.FactorScheduler(2, 0.5)(n)); assert.equal(k(n), m(n)) end
      -- stop_factor_lr and base_lr positionally, then warm-up by keyword
      local w = LS.FactorScheduler(1, 0.1, 0.001, 1, {warmup_steps = 2, warmup_begin_lr = 0.5})
      assert.equal(0.5, w(0))
      assert.equal(0.75, w(1))
      assert.equal(0.001, w(10))
    end)
  end)

  it('MultiFactorScheduler(step, factor, base_lr) positionally', function()
    quiet(function()
      local s = LS.MultiFactorScheduler({2, 4}, 0.1, 1)
      assert.equal(1, s(2))
      H.near({s(3), s(5)}, {0.1, 0.01}, 1e-12)
    end)
  end)

  it('PolyScheduler: warm-up, then final + (base - final)*(1 - (n - w)/(max - w))^pwr', function()
    local s = LS.PolyScheduler(10, 0.1, 2, 0.01, 2, 0.02)
    -- linear warm-up 0.02 -> 0.1 over 2 steps; then 0.01 + 0.09*(1 - (n-2)/8)^2
    H.near({s(0), s(1), s(2), s(6), s(10), s(12)}, {0.02, 0.06, 0.1, 0.0325, 0.01, 0.01}, 1e-12)
    local k = LS.PolyScheduler{max_update = 10, base_lr = 0.1, pwr = 2, final_lr = 0.01, warmup_steps = 2,
                               warmup_begin_lr = 0.02}
    H.near({k(6)}, {0.0325}, 1e-12)
  end)

  it('CosineScheduler: final + (base - final)*(1 + cos(pi*(n - w)/(max - w)))/2', function()
    local s = LS.CosineScheduler(10, 0.1)
    H.near({s(0), s(5), s(10), s(20)}, {0.1, 0.05, 0, 0}, 1e-12)
    local c = LS.CosineScheduler{max_update = 12, base_lr = 1, final_lr = 0.5, warmup_steps = 2,
                                 warmup_begin_lr = 0.25, warmup_mode = 'constant'}
    -- constant warm-up, then over 10 steps: at n = 7, cos(pi/2) = 0 -> 0.5 + 0.5/2
    H.near({c(1), c(2), c(7)}, {0.25, 1, 0.75}, 1e-12)
  end)

  it('rejects bad arguments, naming them', function()
    H.raises(function() LS.PolyScheduler(0) end, 'mx.lr_scheduler.PolyScheduler: maximum number of updates must be strictly positive')
    H.raises(function() LS.CosineScheduler(2.5) end, 'mx.lr_scheduler.CosineScheduler: max_update must be an integer, got 2.5')
    H.raises(function() LS.FactorScheduler(2, 0.5, 1e-8, 0.01, 0, 0, 'linear', 'extra') end,
      'mx.lr_scheduler.FactorScheduler: takes at most 7 positional arguments')
    H.raises(function() LS.FactorScheduler(2, 1.5) end, 'factor must be no more than 1')
    H.raises(function() LS.CosineScheduler(10, 0.1, 0, 0, 0, 'cubic') end, "warmup_mode must be 'linear' or 'constant'")
  end)

  it('drives an optimizer, decaying from its own base_lr as MXNet 1.9 (base_lr_orig)', function()
    local opt = mx.optimizer.SGD{lr_scheduler = LS.CosineScheduler(4, 0.2)}
    local w = mx.nd.array{1}
    local upd = mx.optimizer.get_updater(opt)
    upd(0, mx.nd.array{1}, w) -- num_update 1: lr = 0.2*(1 + cos(pi/4))/2
    H.near(w:toflat(), {1 - 0.2 * (1 + math.cos(math.pi / 4)) / 2}, 1e-6)
    -- an optimizer learning_rate overwrites base_lr, which Poly/Cosine do not read after
    -- construction (MXNet 1.9's base_lr_orig)
    local p = LS.PolyScheduler(4, 0.2, 1)
    mx.optimizer.SGD{learning_rate = 0.1, lr_scheduler = p}
    H.near({p(2)}, {0.1}, 1e-12) -- 0.2*(1 - 2/4)
  end)
end)

describe('initializers', function()
  it('MSRAPrelu(factor_type, slope) is Xavier gaussian with magnitude 2/(1+slope^2)', function()
    local a, b = mx.init.MSRAPrelu('in', 0), mx.init.MSRAPrelu{factor_type = 'in', slope = 0}
    assert.equal('gaussian', a.rnd_type)
    assert.equal(2, a.magnitude)
    assert.equal(b.magnitude, a.magnitude)
    assert.equal(2 / (1 + 0.0625), mx.init.MSRAPrelu().magnitude)
    assert.equal('avg', mx.init.MSRAPrelu().factor_type)
    mx.random.seed(3)
    local w = mx.nd.zeros{200, 50}
    a('fc_weight', w)
    local v, s = w:toflat(), 0
    for i = 1, #v do s = s + v[i] * v[i] end
    H.near({math.sqrt(s / #v)}, {math.sqrt(2 / 50)}, 0.01) -- std sqrt(magnitude/fan_in)
    assert.equal('["msraprelu", {"factor_type": "in", "slope": 0}]', a:dumps())
    assert.equal('msraprelu', mx.init.create(a:dumps())._name)
  end)

  local function gram(w, rows)
    local s = w.shape
    local n, m = s[1], w.size / s[1]
    local v = w:toflat()
    local k = rows and n or m
    local g = {}
    for i = 1, k do
      for j = 1, k do
        local d = 0
        for l = 1, (rows and m or n) do
          if rows then d = d + v[(i - 1) * m + l] * v[(j - 1) * m + l]
          else d = d + v[(l - 1) * m + i] * v[(l - 1) * m + j] end
        end
        g[#g + 1] = d
      end
    end
    return g, k
  end
  local function scaled_identity(k, s)
    local t = {}
    for i = 1, k do for j = 1, k do t[#t + 1] = (i == j) and s or 0 end end
    return t
  end

  it('Orthogonal(scale, rand_type): orthonormal rows (out <= in) or columns, times scale', function()
    local w = mx.nd.zeros{4, 3, 2}
    mx.init.Orthogonal(2, 'normal')('conv_weight', w)
    local g, k = gram(w, true)
    H.near(g, scaled_identity(k, 4), 1e-5)
    local tall = mx.nd.zeros{5, 3}
    mx.init.Orthogonal{scale = 1}('fc_weight', tall)
    g, k = gram(tall, false)
    assert.equal(3, k)
    H.near(g, scaled_identity(3, 1), 1e-5)
    H.raises(function() mx.init.Orthogonal(1, 'cauchy') end, "mx.init.Orthogonal: rand_type must be 'uniform' or 'normal', got cauchy")
    H.raises(function() mx.init.Orthogonal()('v_weight', mx.nd.zeros{4}) end, 'must have at least 2 dims')
  end)

  it('Bilinear(): the bilinear upsampling kernel', function()
    local w = mx.nd.zeros{1, 2, 4, 4}
    mx.init.Bilinear()('up_weight', w)
    -- f = 2, c = 0.75: 1 - |x/2 - 0.75| = 0.25, 0.75, 0.75, 0.25 along each axis
    local r = {0.25, 0.75, 0.75, 0.25}
    local want = {}
    for _ = 1, 2 do for y = 1, 4 do for x = 1, 4 do want[#want + 1] = r[y] * r[x] end end end
    H.near(w:toflat(), want, 1e-7)
    H.raises(function() mx.init.Bilinear()('up_weight', mx.nd.zeros{4, 4}) end, 'must be 4-D')
  end)

  it('Load(param, default_init, verbose): by name, arg:/aux: prefixes dropped, else the default', function()
    local path = os.tmpname()
    mx.nd.save(path, {['arg:fc_weight'] = mx.nd.array{{1, 2}, {3, 4}}, ['aux:bn_moving_mean'] = mx.nd.array{5, 6}})
    local lines = {}
    local init = mx.init.Load(path, mx.init.Constant(9), true)
    mx.init.Load.log = function(s) lines[#lines + 1] = s end
    local w, m, b = mx.nd.zeros{2, 2}, mx.nd.zeros{2}, mx.nd.zeros{3}
    init('fc_weight', w)
    init('bn_moving_mean', m)
    init('fc_bias', b)
    os.remove(path)
    H.near(w:toflat(), {1, 2, 3, 4}, 0)
    H.near(m:toflat(), {5, 6}, 0)
    H.near(b:toflat(), {0, 0, 0}, 0) -- default_init: Constant's rule for a bias is 0
    assert.are.same({'Initialized fc_weight by loading', 'Initialized bn_moving_mean by loading',
                     'Initialized fc_bias by default'}, lines)
    local k = mx.init.Load{param = {fc_weight = mx.nd.array{{1, 2}, {3, 4}}}}
    H.raises(function() k('fc_weight', mx.nd.zeros{3}) end,
      'Parameter fc_weight cannot be initialized from loading. Shape mismatch, target (3) vs loaded (2, 2)')
    H.raises(function() k('other_weight', mx.nd.zeros{3}) end,
      'Cannot Initialize other_weight. Not found in loaded param and no default Initializer is provided.')
    H.raises(function() mx.init.Load(5) end, 'mx.init.Load: param must be a file name or a name -> NDArray table, got number')
  end)

  it('every constructor takes MXNet\'s positional order and a keyword table', function()
    local pairs_ = {
      {mx.init.Uniform(0.5), mx.init.Uniform{scale = 0.5}},
      {mx.init.Normal(0.5), mx.init.Normal{sigma = 0.5}},
      {mx.init.Constant(3), mx.init.Constant{value = 3}},
      {mx.init.Xavier('gaussian', 'in', 2), mx.init.Xavier{rnd_type = 'gaussian', factor_type = 'in', magnitude = 2}},
      {mx.init.LSTMBias(2), mx.init.LSTMBias{forget_bias = 2}},
      {mx.init.Orthogonal(2, 'normal'), mx.init.Orthogonal{scale = 2, rand_type = 'normal'}},
      {mx.init.MSRAPrelu('out', 0.5), mx.init.MSRAPrelu{factor_type = 'out', slope = 0.5}},
    }
    for _, p in ipairs(pairs_) do assert.equal(p[2]:dumps(), p[1]:dumps()) end
    local u = mx.init.Uniform(1)
    local a = mx.init.Mixed({'.*bias', '.*'}, {mx.init.Zero(), u})
    local b = mx.init.Mixed{patterns = {'.*bias', '.*'}, initializers = {mx.init.Zero(), u}}
    assert.are.same(a.patterns, b.patterns)
    H.raises(function() mx.init.Uniform(1, 2) end, 'mx.init.Uniform: takes at most 1 positional arguments (scale), got 2')
  end)
end)

describe('metrics', function()
  local function preds2(cls)
    local t = {}
    for i, c in ipairs(cls) do t[i] = c == 1 and {0.2, 0.8} or {0.7, 0.3} end
    return mx.nd.array(t)
  end
  local LAB = {1, 0, 1, 1, 0, 0}
  local PRED = {1, 0, 0, 1, 1, 0} -- tp 2, tn 2, fp 1, fn 1

  it('MCC: (tp*tn - fp*fn)/sqrt((tp+fp)(tp+fn)(tn+fp)(tn+fn))', function()
    local m = mx.metric.create('mcc')
    m:update({mx.nd.array(LAB)}, {preds2(PRED)})
    local name, v = m:get()
    assert.equal('mcc', name)
    H.near({v}, {(2 * 2 - 1 * 1) / math.sqrt(3 * 3 * 3 * 3)}, 1e-12)
    -- macro averages per update call; micro pools: a perfect batch then this one
    local macro, micro = mx.metric.MCC(), mx.metric.MCC{average = 'micro'}
    for _, mm in ipairs{macro, micro} do
      mm:update({mx.nd.array{1, 0}}, {preds2{1, 0}})
      mm:update({mx.nd.array(LAB)}, {preds2(PRED)})
    end
    H.near({select(2, macro:get())}, {(1 + 1 / 3) / 2}, 1e-12)
    -- pooled: tp 3, tn 3, fp 1, fn 1 -> (9 - 1)/sqrt(4^4)
    H.near({select(2, micro:get())}, {8 / 16}, 1e-12)
    H.raises(function() m:update({mx.nd.array{0, 1, 2}}, {mx.nd.array{{1, 0}, {0, 1}, {1, 0}}}) end,
      'MCC currently only supports binary classification, got 3 classes')
  end)

  it('NegativeLogLikelihood: mean of -log(p[label] + eps)', function()
    local m = mx.metric.create('nll_loss')
    m:update({mx.nd.array{1, 1}}, {mx.nd.array{{0.2, 0.8}, {0.6, 0.4}}})
    local name, v = m:get()
    assert.equal('nll-loss', name)
    H.near({v}, {-(math.log(0.8) + math.log(0.4)) / 2}, 1e-7)
    H.raises(function() m:update({mx.nd.array{1, 1, 1}}, {mx.nd.array{{0.2, 0.8}, {0.6, 0.4}}}) end,
      'NegativeLogLikelihood: 3 labels but 2 predictions')
  end)

  it('PearsonCorrelation: macro and micro (one batch: the sample correlation)', function()
    -- label 1..4, pred {2, 4, 5, 9}: sxy = 11, sxx = 5, syy = 26
    local r = 11 / math.sqrt(5 * 26)
    for _, avg in ipairs{'macro', 'micro'} do
      local m = mx.metric.PearsonCorrelation{average = avg}
      m:update({mx.nd.array{1, 2, 3, 4}}, {mx.nd.array{2, 4, 5, 9}})
      H.near({select(2, m:get())}, {r}, 1e-7)
    end
    local m = mx.metric.create('pearsonr')
    m:update({mx.nd.array{1, 2, 3, 4}}, {mx.nd.array{2, 4, 5, 9}})
    m:update({mx.nd.array{1, 2}}, {mx.nd.array{2, 1}})
    H.near({select(2, m:get())}, {(r - 1) / 2}, 1e-7)
    -- micro over the same two batches: MXNet's running sums give the correlation of the
    -- six pairs pooled (labels {1,2,3,4,1,2}, mean 13/6; preds {2,4,5,9,2,1}, mean 23/6:
    -- sxy = 91/6, syy = 41/6, sxx = 257/6)
    m = mx.metric.PearsonCorrelation{average = 'micro'}
    m:update({mx.nd.array{1, 2, 3, 4}}, {mx.nd.array{2, 4, 5, 9}})
    m:update({mx.nd.array{1, 2}}, {mx.nd.array{2, 1}})
    H.near({select(2, m:get())}, {91 / math.sqrt(41 * 257)}, 1e-7)
  end)

  it('PCC: multiclass MCC of the confusion matrix', function()
    local m = mx.metric.create('pcc')
    m:update({mx.nd.array(LAB)}, {preds2(PRED)})
    H.near({select(2, m:get())}, {1 / 3}, 1e-12) -- binary PCC is MCC
    local p = mx.metric.PCC()
    -- 3 classes (the matrix grows): labels 0,1,2,0,1,2 predicted 0,1,2,1,1,0:
    -- n = 6, rows x = {2, 3, 1}, columns y = {2, 2, 2}, trace 4:
    -- (4*6 - (4 + 6 + 2)) / sqrt((2*4 + 3*3 + 1*5) * (3 * 2*4)) = 12 / sqrt(22 * 24)
    p:update({mx.nd.array{0, 1, 2, 0, 1, 2}}, {mx.nd.array{0, 1, 2, 1, 1, 0}})
    H.near({select(2, p:get())}, {12 / math.sqrt(22 * 24)}, 1e-12)
    p:reset_local()
    assert.is_true(select(2, p:get()) ~= select(2, p:get())) -- NaN when empty
    H.near({select(2, p:get_global())}, {12 / math.sqrt(22 * 24)}, 1e-12)
  end)

  it('Loss: the mean of the outputs, labels ignored', function()
    local m = mx.metric.create('loss')
    m:update(nil, {mx.nd.array{1, 2, 3}, mx.nd.array{{4}}})
    assert.equal(2.5, select(2, m:get()))
    m:update({}, mx.nd.array{10})
    assert.equal(4, select(2, m:get()))
  end)

  it('create() of a Lua function is a CustomMetric; np() gives the function Lua tables', function()
    local m = mx.metric.create(function(label, pred)
      return (pred - label):abs():sum():tonumber(), label.size
    end, {name = 'abs-err'})
    m:update({mx.nd.array{1, 2}}, {mx.nd.array{2, 4}})
    assert.are.same({'abs-err', 1.5}, {m:get()})
    local n = mx.metric.np(function(label, pred)
      assert.are.same({2, 1}, pred.shape)
      return pred[1] + pred[2] - label[1] - label[2]
    end, 'diff')
    n:update({mx.nd.array{{1}, {1}}}, {mx.nd.array{{3}, {4}}})
    assert.are.same({'diff', 5}, {n:get()})
    local c = mx.metric.CustomMetric(function() return 1 end, 'one')
    assert.equal('one', c.name)
    H.raises(function() mx.metric.CustomMetric(3) end, 'CustomMetric: feval must be a function, got number')
  end)

  it('every constructor takes MXNet\'s positional order and a keyword table', function()
    local cases = {
      {mx.metric.Accuracy(2, 'acc2'), mx.metric.Accuracy{axis = 2, name = 'acc2'}, {'axis', 'name'}},
      {mx.metric.TopKAccuracy(3), mx.metric.TopKAccuracy{top_k = 3}, {'top_k', 'name'}},
      {mx.metric.CrossEntropy(1e-5, 'ce'), mx.metric.CrossEntropy{eps = 1e-5, name = 'ce'}, {'eps', 'name'}},
      {mx.metric.Perplexity(-1), mx.metric.Perplexity{ignore_label = -1}, {'ignore_label', 'name'}},
      {mx.metric.MSE('m'), mx.metric.MSE{name = 'm'}, {'name'}},
      {mx.metric.F1('f', nil, nil, 'micro'), mx.metric.F1{name = 'f', average = 'micro'}, {'name', 'average'}},
      {mx.metric.MCC('m', nil, nil, 'micro'), mx.metric.MCC{name = 'm', average = 'micro'}, {'name', 'average'}},
      {mx.metric.NegativeLogLikelihood(1e-3), mx.metric.NegativeLogLikelihood{eps = 1e-3}, {'eps', 'name'}},
      {mx.metric.PearsonCorrelation('p', nil, nil, 'micro'), mx.metric.PearsonCorrelation{name = 'p', average = 'micro'}, {'name', 'average'}},
      {mx.metric.PCC('q'), mx.metric.PCC{name = 'q'}, {'name'}},
      {mx.metric.Loss('l'), mx.metric.Loss{name = 'l'}, {'name'}},
      {mx.metric.create('top_k_accuracy', 4), mx.metric.TopKAccuracy{top_k = 4}, {'top_k'}},
    }
    for _, c in ipairs(cases) do
      for _, k in ipairs(c[3]) do assert.equal(c[2][k], c[1][k], k) end
    end
    local comp = mx.metric.CompositeEvalMetric({'acc', 'mse'}, 'both')
    assert.equal('both', comp.name)
    assert.equal(2, #comp.metrics)
    H.raises(function() mx.metric.Accuracy(1, 'a', nil, nil, 5) end,
      'mx.metric.Accuracy: takes at most 4 positional arguments')
  end)
end)

describe('io constructors', function()
  it('NDArrayIter(data, label, batch_size, shuffle, last_batch_handle) and the keyword table', function()
    local x, y = mx.nd.arange(0, 10):reshape{5, 2}, mx.nd.arange(0, 5)
    local a = mx.io.NDArrayIter(x, y, 2, false, 'discard')
    local b = mx.io.NDArrayIter{data = x, label = y, batch_size = 2, last_batch_handle = 'discard'}
    local na, nb = 0, 0
    for batch in a do na = na + 1; assert.equal(2, batch.data[1].shape[1]) end
    for _ in b do nb = nb + 1 end
    assert.equal(2, na)
    assert.equal(nb, na)
    assert.are.same(b.provide_data[1].shape, a.provide_data[1].shape)
  end)
  it('DataBatch(data, label, pad, index, bucket_key) and DataDesc(name, shape, dtype, layout)', function()
    local d = mx.nd.zeros{2, 3}
    local a = mx.io.DataBatch({d}, {d}, 1, nil, 7)
    assert.equal(1, a.pad)
    assert.equal(7, a.bucket_key)
    assert.equal(d, a.label[1])
    local b = mx.io.DataBatch{data = {d}, pad = 1, bucket_key = 7}
    assert.equal(b.pad, a.pad)
    local desc = mx.io.DataDesc('x', {2, 3}, 'float16', 'NC')
    assert.are.same({'x', {2, 3}, 'float16', 'NC'}, {desc.name, desc.shape, desc.dtype, desc.layout})
    H.raises(function() mx.io.DataBatch(5) end, 'mx.io.DataBatch: expected a table of fields or the data list, got number')
  end)
end)

describe('mx.nd.BatchNorm with aux states given positionally', function()
  it('equals the named form, updating moving_mean / moving_var in place in training', function()
    local x = mx.nd.array{{1, 2}, {3, 6}, {5, 4}}
    local function args() return mx.nd.array{1, 2}, mx.nd.array{0, 1}, mx.nd.array{0.5, 0.5}, mx.nd.array{1, 1} end
    local g1, b1, m1, v1 = args()
    local y1 = mx.nd.BatchNorm(x, g1, b1, m1, v1, {is_train = true, fix_gamma = false, momentum = 0.5})
    local g2, b2, m2, v2 = args()
    local y2 = mx.nd.BatchNorm(x, {gamma = g2, beta = b2, moving_mean = m2, moving_var = v2,
                                   is_train = true, fix_gamma = false, momentum = 0.5})
    H.near(y1:toflat(), y2:toflat(), 1e-6)
    -- moving_mean = 0.5*0.5 + 0.5*batch mean {3, 4}
    H.near(m1:toflat(), {1.75, 2.25}, 1e-6)
    H.near(m1:toflat(), m2:toflat(), 1e-7)
    H.near(v1:toflat(), v2:toflat(), 1e-7)
    H.raises(function() mx.nd.BatchNorm(x, g1, b1, m1, v1, v1) end,
      'mx.nd.BatchNorm: 6 arrays given, the op takes 3 inputs and 2 aux states')
    H.raises(function() mx.nd.BatchNorm(x, g1, b1, m1) end, "mx.nd.BatchNorm: aux state 'moving_var' missing (give all or none)")
  end)
end)
