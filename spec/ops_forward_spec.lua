-- Operator forward results against independent Lua references (matrix products,
-- convolution and pooling loops, softmax, batchnorm formulas, LSTM steps), known values
-- (SoftmaxOutput, optimizer updates), Dropout/BatchNorm modes, and the errors bad
-- parameters or shapes give. Runs every check in float32 and float64.
local mx = require 'luamx'
local H = require 'helpers'
local ops = require 'luamx.ndarray_ops'

local DTYPES = { float32 = 1e-5, float64 = 1e-12 }

local function rand_list(n, lo, hi)
  lo, hi = lo or -1, hi or 1
  local t = {}
  for i = 1, n do t[i] = lo + (hi - lo) * math.random() end
  return t
end

local function prod(s)
  local p = 1
  for _, d in ipairs(s) do p = p * d end
  return p
end

-- NDArray of shape s from a flat list.
local function arr(flat, s, dt)
  return mx.nd.array(flat, { dtype = dt }):reshape(s)
end

local function flat(a) return a:toflat() end

describe('ops forward: GEMM family', function()
  for dt, tol in pairs(DTYPES) do
    it('FullyConnected matches a matrix-multiply loop (' .. dt .. ')', function()
      math.randomseed(1)
      local N, K, M = 3, 5, 4
      local x, w, b = rand_list(N * K), rand_list(M * K), rand_list(M)
      local y = mx.nd.FullyConnected { data = arr(x, { N, K }, dt), weight = arr(w, { M, K }, dt),
        bias = arr(b, { M }, dt), num_hidden = M }
      local ref = {}
      for n = 0, N - 1 do
        for m = 0, M - 1 do
          local s = b[m + 1]
          for k = 0, K - 1 do s = s + x[n * K + k + 1] * w[m * K + k + 1] end
          ref[#ref + 1] = s
        end
      end
      assert.are.same({ N, M }, y.shape)
      H.near(flat(y), ref, tol)
      -- flatten: (N, 1, K) reads as (N, K); no_bias
      local y2 = mx.nd.FullyConnected { data = arr(x, { N, 1, K }, dt),
        weight = arr(w, { M, K }, dt), num_hidden = M, no_bias = true }
      for i = 1, #ref do ref[i] = ref[i] - b[(i - 1) % M + 1] end
      H.near(flat(y2), ref, tol)
    end)

    it('dot and batch_dot match loops, with transposes (' .. dt .. ')', function()
      math.randomseed(2)
      local a, b = rand_list(6), rand_list(6)
      local A, B = arr(a, { 2, 3 }, dt), arr(b, { 2, 3 }, dt)
      local y = mx.nd.op.dot(A, B, { transpose_b = true })
      local ref = {}
      for i = 0, 1 do for j = 0, 1 do
        local s = 0
        for k = 0, 2 do s = s + a[i * 3 + k + 1] * b[j * 3 + k + 1] end
        ref[#ref + 1] = s
      end end
      H.near(flat(y), ref, tol)
      local z = mx.nd.batch_dot(arr(a, { 2, 1, 3 }, dt), arr(b, { 2, 3, 1 }, dt))
      local r2 = { 0, 0 }
      for bi = 0, 1 do for k = 0, 2 do r2[bi + 1] = r2[bi + 1] + a[bi * 3 + k + 1] * b[bi * 3 + k + 1] end end
      H.near(flat(z), r2, tol)
    end)
  end
end)

-- Naive NCHW convolution: x (N,C,H,W), w (F,C/G,KH,KW).
local function conv_ref(x, xs, w, ws, b, stride, pad, groups)
  local N, C, Hh, W = xs[1], xs[2], xs[3], xs[4]
  local F, Cg, KH, KW = ws[1], ws[2], ws[3], ws[4]
  local OH = math.floor((Hh + 2 * pad[1] - KH) / stride[1]) + 1
  local OW = math.floor((W + 2 * pad[2] - KW) / stride[2]) + 1
  local out = {}
  local Fg = F / groups
  for n = 0, N - 1 do for f = 0, F - 1 do for oh = 0, OH - 1 do for ow = 0, OW - 1 do
    local g = math.floor(f / Fg)
    local s = b and b[f + 1] or 0
    for cg = 0, Cg - 1 do
      local c = g * Cg + cg
      for kh = 0, KH - 1 do for kw = 0, KW - 1 do
        local ih, iw = oh * stride[1] - pad[1] + kh, ow * stride[2] - pad[2] + kw
        if ih >= 0 and ih < Hh and iw >= 0 and iw < W then
          s = s + x[((n * C + c) * Hh + ih) * W + iw + 1] * w[((f * Cg + cg) * KH + kh) * KW + kw + 1]
        end
      end end
    end
    out[#out + 1] = s
  end end end end
  return out, { N, F, OH, OW }
end

local function pool_ref(x, xs, k, stride, pad, kind)
  local N, C, Hh, W = xs[1], xs[2], xs[3], xs[4]
  local OH = math.floor((Hh + 2 * pad[1] - k[1]) / stride[1]) + 1
  local OW = math.floor((W + 2 * pad[2] - k[2]) / stride[2]) + 1
  local out = {}
  for n = 0, N - 1 do for c = 0, C - 1 do for oh = 0, OH - 1 do for ow = 0, OW - 1 do
    local best, sum = -math.huge, 0
    for kh = 0, k[1] - 1 do for kw = 0, k[2] - 1 do
      local ih, iw = oh * stride[1] - pad[1] + kh, ow * stride[2] - pad[2] + kw
      if ih >= 0 and ih < Hh and iw >= 0 and iw < W then
        local v = x[((n * C + c) * Hh + ih) * W + iw + 1]
        best = math.max(best, v)
        sum = sum + v
      end
    end end
    out[#out + 1] = kind == 'max' and best or sum / (k[1] * k[2])
  end end end end
  return out, { N, C, OH, OW }
end

describe('ops forward: convolution and pooling', function()
  for dt, tol in pairs(DTYPES) do
    it('Convolution matches a naive loop: stride, pad, groups (' .. dt .. ')', function()
      math.randomseed(3)
      local xs, ws = { 2, 4, 5, 6 }, { 6, 2, 3, 2 }
      local x, w, b = rand_list(prod(xs)), rand_list(prod(ws)), rand_list(6)
      local y = mx.nd.Convolution { data = arr(x, xs, dt), weight = arr(w, ws, dt),
        bias = arr(b, { 6 }, dt), kernel = { 3, 2 }, num_filter = 6, num_group = 2,
        stride = { 2, 1 }, pad = { 1, 1 } }
      local ref, rs = conv_ref(x, xs, w, ws, b, { 2, 1 }, { 1, 1 }, 2)
      assert.are.same(rs, y.shape)
      H.near(flat(y), ref, tol * 10)
    end)

    it('Deconvolution is the transpose of Convolution (' .. dt .. ')', function()
      math.randomseed(4)
      -- <conv(x), y> == <x, deconv(y)> with the same weight
      local xs, ws = { 1, 2, 5, 5 }, { 3, 2, 3, 3 }
      local x, w = rand_list(prod(xs)), rand_list(prod(ws))
      local c = mx.nd.Convolution { data = arr(x, xs, dt), weight = arr(w, ws, dt),
        kernel = { 3, 3 }, num_filter = 3, stride = { 2, 2 }, no_bias = true }
      local ys = c.shape
      local yv = rand_list(prod(ys))
      local d = mx.nd.Deconvolution { data = arr(yv, ys, dt), weight = arr(w, ws, dt),
        kernel = { 3, 3 }, num_filter = 2, stride = { 2, 2 } }
      assert.are.same(xs, d.shape)
      local lhs, rhs = 0, 0
      local cf, df = flat(c), flat(d)
      for i = 1, #cf do lhs = lhs + cf[i] * yv[i] end
      for i = 1, #df do rhs = rhs + df[i] * x[i] end
      assert.is_true(math.abs(lhs - rhs) <= tol * 100 * math.max(1, math.abs(lhs)))
    end)

    it('Pooling max and avg match naive loops (' .. dt .. ')', function()
      math.randomseed(5)
      local xs = { 2, 3, 5, 5 }
      local x = rand_list(prod(xs))
      local y = mx.nd.Pooling { data = arr(x, xs, dt), kernel = { 2, 2 }, stride = { 2, 2 } }
      local ref, rs = pool_ref(x, xs, { 2, 2 }, { 2, 2 }, { 0, 0 }, 'max')
      assert.are.same(rs, y.shape)
      H.near(flat(y), ref, tol)
      local a = mx.nd.Pooling { data = arr(x, xs, dt), kernel = { 3, 3 }, stride = { 2, 2 },
        pad = { 1, 1 }, pool_type = 'avg' }
      local ra = pool_ref(x, xs, { 3, 3 }, { 2, 2 }, { 1, 1 }, 'avg')
      H.near(flat(a), ra, tol)
      local gp = mx.nd.Pooling { data = arr(x, xs, dt), global_pool = true, pool_type = 'avg' }
      assert.are.same({ 2, 3, 1, 1 }, gp.shape)
      local s = 0
      for i = 1, 25 do s = s + x[i] end
      H.near({ flat(gp)[1] }, { s / 25 }, tol)
    end)
  end
end)

describe('ops forward: softmax family and losses', function()
  for dt, tol in pairs(DTYPES) do
    it('softmax / log_softmax along an axis match the formula (' .. dt .. ')', function()
      math.randomseed(6)
      local x = rand_list(6, -3, 3)
      local y = mx.nd.softmax(arr(x, { 2, 3 }, dt), { axis = 0 })
      local ref = {}
      for j = 0, 2 do
        local a, b = x[j + 1], x[3 + j + 1]
        local m = math.max(a, b)
        local ea, eb = math.exp(a - m), math.exp(b - m)
        ref[j + 1], ref[3 + j + 1] = ea / (ea + eb), eb / (ea + eb)
      end
      H.near(flat(y), ref, tol)
      local ly = mx.nd.log_softmax(arr(x, { 2, 3 }, dt), { axis = 0 })
      for i = 1, 6 do ref[i] = math.log(ref[i]) end
      H.near(flat(ly), ref, tol * 10)
      -- huge inputs stay finite (max subtracted)
      local big = mx.nd.softmax(mx.nd.array({ 1000, 1001 }, { dtype = dt }))
      H.near(flat(big), { 1 / (1 + math.exp(1)), 1 / (1 + math.exp(-1)) }, tol)
    end)

    it('SoftmaxOutput gives the known values and out - onehot as gradient (' .. dt .. ')', function()
      local x = mx.nd.array({ { 1, 6, 4, 2 } }, { dtype = dt })
      local label = mx.nd.array({ 1 }, { dtype = dt })
      local y = mx.nd.SoftmaxOutput { data = x, label = label }
      local expect = { 0.005806628, 0.861780069, 0.116629249, 0.015784052 }
      H.near(flat(y), expect, 1e-6)
      local g = ops.backward('SoftmaxOutput', {}, { x, label }, { y })
      H.near(flat(g[1]), { expect[1], expect[2] - 1, expect[3], expect[4] }, 1e-6)
      assert.are.same({ 0 }, flat(g[2]))
      -- grad_scale and normalization='batch' over 2 rows
      local x2 = mx.nd.array({ { 1, 6, 4, 2 }, { 1, 6, 4, 2 } }, { dtype = dt })
      local l2 = mx.nd.array({ 1, 1 }, { dtype = dt })
      local p = { grad_scale = 2, normalization = 'batch' }
      local y2 = mx.nd.SoftmaxOutput { data = x2, label = l2, grad_scale = 2, normalization = 'batch' }
      local g2 = ops.backward('SoftmaxOutput', p, { x2, l2 }, { y2 })
      H.near({ flat(g2[1])[2] }, { expect[2] - 1 }, 1e-6)
      -- use_ignore: an ignored row gets no gradient
      local l3 = mx.nd.array({ 1, -1 }, { dtype = dt })
      local p3 = { use_ignore = true }
      local y3 = mx.nd.SoftmaxOutput(x2, l3, p3)
      local g3 = ops.backward('SoftmaxOutput', p3, { x2, l3 }, { y3 })
      H.near({ (table.unpack or unpack)(flat(g3[1]), 5, 8) }, { 0, 0, 0, 0 })
    end)

    it('LinearRegressionOutput is the identity with gradient (out - label)/num_output (' .. dt .. ')', function()
      local x = mx.nd.array({ { 1, 2 }, { 3, 4 } }, { dtype = dt })
      local l = mx.nd.array({ { 0, 0 }, { 1, 1 } }, { dtype = dt })
      local y = mx.nd.LinearRegressionOutput { data = x, label = l }
      assert.are.same({ 1, 2, 3, 4 }, flat(y))
      local g = ops.backward('LinearRegressionOutput', {}, { x, l }, { y })
      H.near(flat(g[1]), { 0.5, 1, 1, 1.5 }, tol)
      local m = mx.nd.MakeLoss(x, { grad_scale = 3, normalization = 'batch' })
      local gm = ops.backward('MakeLoss', { grad_scale = 3, normalization = 'batch' }, { x }, { m })
      assert.are.same({ 1.5, 1.5, 1.5, 1.5 }, flat(gm[1]))
    end)
  end
end)

describe('ops forward: normalization and dropout', function()
  for dt, tol in pairs(DTYPES) do
    it('BatchNorm uses batch stats and updates moving stats in training (' .. dt .. ')', function()
      local x = mx.nd.array({ { 1, 10 }, { 3, 20 }, { 5, 60 } }, { dtype = dt })
      local gamma = mx.nd.array({ 2, 1 }, { dtype = dt })
      local beta = mx.nd.array({ 0.5, 0 }, { dtype = dt })
      local mm = mx.nd.zeros({ 2 }, { dtype = dt })
      local mv = mx.nd.ones({ 2 }, { dtype = dt })
      local p = { fix_gamma = false, eps = 1e-3, momentum = 0.9 }
      local y = mx.nd.BatchNorm { data = x, gamma = gamma, beta = beta, moving_mean = mm,
        moving_var = mv, fix_gamma = false, eps = 1e-3, momentum = 0.9, is_train = true }
      -- channel 0: mean 3, biased var 8/3; channel 1: mean 30, var 1400/3
      local v0, v1 = 8 / 3, 1400 / 3
      local ref = {}
      local xs = { 1, 10, 3, 20, 5, 60 }
      for i = 0, 2 do
        ref[#ref + 1] = (xs[i * 2 + 1] - 3) / math.sqrt(v0 + 1e-3) * 2 + 0.5
        ref[#ref + 1] = (xs[i * 2 + 2] - 30) / math.sqrt(v1 + 1e-3)
      end
      H.near(flat(y), ref, tol * 10)
      H.near(flat(mm), { 0.1 * 3, 0.1 * 30 }, tol * 10)
      H.near(flat(mv), { 0.9 + 0.1 * v0, 0.9 + 0.1 * v1 }, tol * 10)
      -- inference: moving statistics, no update
      local yi = mx.nd.BatchNorm { data = x, gamma = gamma, beta = beta, moving_mean = mm,
        moving_var = mv, fix_gamma = false, eps = 1e-3 }
      local m, v = flat(mm), flat(mv)
      local r2 = {}
      for i = 0, 2 do
        r2[#r2 + 1] = (xs[i * 2 + 1] - m[1]) / math.sqrt(v[1] + 1e-3) * 2 + 0.5
        r2[#r2 + 1] = (xs[i * 2 + 2] - m[2]) / math.sqrt(v[2] + 1e-3)
      end
      H.near(flat(yi), r2, tol * 10)
      H.near(flat(mm), m)
      local _ = p
    end)

    it('Dropout is the identity in inference and repeatable under a seed (' .. dt .. ')', function()
      local x = mx.nd.ones({ 1000 }, { dtype = dt })
      assert.are.same(flat(x), flat(mx.nd.Dropout(x, { p = 0.5 })))
      mx.random.seed(42)
      local a = flat(mx.nd.Dropout(x, { p = 0.5, is_train = true }))
      mx.random.seed(42)
      local b = flat(mx.nd.Dropout(x, { p = 0.5, is_train = true }))
      assert.are.same(a, b)
      local zeros, twos = 0, 0
      for _, v in ipairs(a) do
        if v == 0 then zeros = zeros + 1 elseif v == 2 then twos = twos + 1 end
      end
      assert.are.equal(1000, zeros + twos)
      assert.is_true(zeros > 400 and zeros < 600)
      local c = flat(mx.nd.Dropout(x, { p = 0.5, mode = 'always' }))
      local z2 = 0
      for _, v in ipairs(c) do if v == 0 then z2 = z2 + 1 end end
      assert.is_true(z2 > 400 and z2 < 600)
    end)

    it('LayerNorm normalizes the last axis (' .. dt .. ')', function()
      local x = mx.nd.array({ { 1, 2, 3, 6 } }, { dtype = dt })
      local y = mx.nd.LayerNorm { data = x, gamma = mx.nd.ones({ 4 }, { dtype = dt }),
        beta = mx.nd.zeros({ 4 }, { dtype = dt }), eps = 0 }
      local sd = math.sqrt((4 + 1 + 0 + 9) / 4)
      H.near(flat(y), { -2 / sd, -1 / sd, 0, 3 / sd }, tol * 10)
    end)
  end
end)

describe('ops forward: optimizer updates', function()
  for dt, tol in pairs(DTYPES) do
    it('sgd / sgd_mom / adam / rmsprop / adagrad / nag give hand-computed values (' .. dt .. ')', function()
      local function A(t) return mx.nd.array(t, { dtype = dt }) end
      local w, g = A { 1, -2 }, A { 0.5, 4 }
      mx.nd.sgd_update { weight = w, grad = g, lr = 0.1, wd = 0.01, rescale_grad = 0.5,
        clip_gradient = 1, out = w }
      -- g' = clip(0.5*g, 1) = {0.25, 1}; w = (1 - 0.001) w - 0.1 g'
      H.near(flat(w), { 0.999 - 0.025, -1.998 - 0.1 }, tol)
      local w2, m2 = A { 1 }, A { 0.5 }
      mx.nd.sgd_mom_update { weight = w2, grad = A { 2 }, mom = m2, lr = 0.1, momentum = 0.9, out = w2 }
      -- mom = 0.9*0.5 - 0.1*2 = 0.25; w = 1.25
      H.near(flat(m2), { 0.25 }, tol)
      H.near(flat(w2), { 1.25 }, tol)
      local w3, mean, var = A { 1 }, A { 0 }, A { 0 }
      mx.nd.adam_update { weight = w3, grad = A { 2 }, mean = mean, var = var, lr = 0.01,
        beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8, out = w3 }
      -- mean = 0.2, var = 0.004; w = 1 - 0.01 * 0.2 / (sqrt(0.004) + 1e-8)
      H.near(flat(mean), { 0.2 }, tol)
      H.near(flat(var), { 0.004 }, tol)
      H.near(flat(w3), { 1 - 0.01 * 0.2 / (math.sqrt(0.004) + 1e-8) }, tol)
      local w4, n4 = A { 1 }, A { 1 }
      mx.nd.rmsprop_update { weight = w4, grad = A { 2 }, n = n4, lr = 0.01, gamma1 = 0.9,
        epsilon = 1e-8, out = w4 }
      -- n = 0.1*4 + 0.9*1 = 1.3; w = 1 - 0.01*2/sqrt(1.3 + 1e-8)
      H.near(flat(n4), { 1.3 }, tol)
      H.near(flat(w4), { 1 - 0.02 / math.sqrt(1.3 + 1e-8) }, tol)
      local w5, h5 = A { 1 }, A { 0 }
      mx.nd.adagrad_update { weight = w5, grad = A { 3 }, history = h5, lr = 0.1, epsilon = 1e-7,
        out = w5 }
      H.near(flat(h5), { 9 }, tol)
      H.near(flat(w5), { 1 - 0.1 * 3 / math.sqrt(9 + 1e-7) }, tol)
      local w6, m6 = A { 1 }, A { 0.5 }
      mx.nd.nag_mom_update { weight = w6, grad = A { 2 }, mom = m6, lr = 0.1, momentum = 0.9, out = w6 }
      -- mom = 0.45 + 2 = 2.45; w = 1 - 0.1*(0.9*2.45 + 2)
      H.near(flat(m6), { 2.45 }, tol)
      H.near(flat(w6), { 1 - 0.1 * (0.9 * 2.45 + 2) }, tol)
    end)
  end
end)

describe('ops forward: elementwise, broadcast, reduce, layout', function()
  it('broadcast ops, reductions and layout ops give exact small results', function()
    local a = mx.nd.array { { 1, 2, 3 }, { 4, 5, 6 } }
    local b = mx.nd.array { 10, 20, 30 }
    assert.are.same({ 11, 22, 33, 14, 25, 36 }, flat(mx.nd.broadcast_add(a, b)))
    assert.are.same({ 0, 0, 1, 1, 1, 1 }, flat(mx.nd.broadcast_greater(a, mx.nd.array { 2, 3, 2 }):reshape { 6 }))
    assert.are.same({ 6, 15 }, flat(mx.nd.sum(a, { axis = 1 })))
    assert.are.same({ 2.5, 3.5, 4.5 }, flat(mx.nd.mean(a, { axis = 0 })))
    assert.are.same({ 720 }, flat(mx.nd.prod(a)))
    assert.are.same({ 2, 2 }, flat(mx.nd.argmax(a, { axis = 1 })))
    assert.are.same({ 1, 4, 2, 5, 3, 6 }, flat(mx.nd.transpose(a)))
    assert.are.same({ 2, 3, 5, 6 }, flat(mx.nd.slice(a, { ['begin'] = { 0, 1 }, ['end'] = { 2, 3 } })))
    assert.are.same({ 1, 2, 3, 10, 20, 30 },
      flat(mx.nd.Concat(mx.nd.array { { 1, 2, 3 } }, b:reshape { 1, 3 }, { dim = 0 })))
    assert.are.same({ 4, 5, 6, 1, 2, 3 }, flat(mx.nd.take(a, mx.nd.array { 1, 0 })))
    assert.are.same({ 0, 1, 0, 1, 0, 0 }, flat(mx.nd.one_hot(mx.nd.array { 1, 0 }, { depth = 3 })))
    assert.are.same({ 1, 20, 3 }, flat(mx.nd.where(mx.nd.array { 1, 0, 1 }, mx.nd.array { 1, 2, 3 }, b)))
    assert.are.same({ 2, 2, 3 }, flat(mx.nd.clip(mx.nd.array { 1, 2, 3 }, { a_min = 2, a_max = 5 })))
    assert.are.same({ 3, 5, 7 }, flat(mx.nd.ElementWiseSum(mx.nd.array { 1, 2, 3 }, mx.nd.array { 2, 3, 4 })))
    assert.are.same({ 3, 6 }, flat(mx.nd._plus_scalar(mx.nd.array { 1, 4 }, { scalar = 2 })))
  end)
end)

describe('ops: bad parameters and shapes give errors, never a crash', function()
  it('names the operator, the argument, expected and actual', function()
    local x = mx.nd.ones { 2, 3 }
    H.raises(function() mx.nd.FullyConnected { data = x, weight = mx.nd.ones { 4, 2 },
      bias = mx.nd.ones { 4 }, num_hidden = 4 } end,
      "FullyConnected: input 'weight': expected shape (4,3), got (4,2)")
    H.raises(function() mx.nd.FullyConnected { data = x, weight = mx.nd.ones { 4, 3 },
      bias = mx.nd.ones { 4 }, num_hidden = 'abc' } end, "num_hidden")
    H.raises(function() mx.nd.Convolution { data = x, weight = mx.nd.ones { 1, 1, 3, 3 },
      bias = mx.nd.ones { 1 }, kernel = { 3, 3 }, num_filter = 1 } end, 'Convolution')
    H.raises(function() mx.nd.take(x, mx.nd.array { 5 }, { mode = 'raise' }) end,
      "take: input 'indices': index 5 at position 0 is out of range [0, 2)")
    H.raises(function() mx.nd.broadcast_add(x, mx.nd.ones { 4 }) end, 'broadcast_add')
    H.raises(function() mx.nd.Concat(x, mx.nd.ones { 3, 3 }, { dim = 1 }) end, 'Concat')
    H.raises(function() mx.nd.exp(mx.nd.ones({ 2 }, { dtype = 'int32' })) end,
      'exp: input \'data\': expected float32, float64, float16 or bfloat16 on the CPU, got int32')
  end)
end)

describe('ops forward: fused RNN', function()
  -- Lua reference of MXNet's packed layout: per layer Wx (4H, in), Wh (4H, H); then per
  -- layer bx (4H), bh (4H); gates i, f, g, o.
  local function lstm_ref(x, T, N, I, H, L, p, h0, c0)
    local function sig(v) return 1 / (1 + math.exp(-v)) end
    local ofs, W = 0, {}
    for l = 1, L do
      local ind = l == 1 and I or H
      W[l] = { wx = ofs, wh = ofs + 4 * H * ind, ind = ind }
      ofs = ofs + 4 * H * (ind + H)
    end
    for l = 1, L do W[l].bx = ofs; W[l].bh = ofs + 4 * H; ofs = ofs + 8 * H end
    local input = x -- [t][n][k]
    local hy, cy = {}, {}
    for l = 1, L do
      local w = W[l]
      local h, c, out = {}, {}, {}
      for n = 1, N do
        h[n], c[n] = {}, {}
        for j = 1, H do
          h[n][j] = h0[((l - 1) * N + n - 1) * H + j]
          c[n][j] = c0[((l - 1) * N + n - 1) * H + j]
        end
      end
      for t = 1, T do
        out[t] = {}
        for n = 1, N do
          local a = {}
          for q = 0, 4 * H - 1 do
            local s = p[w.bx + q + 1] + p[w.bh + q + 1]
            for k = 1, w.ind do s = s + p[w.wx + q * w.ind + k] * input[t][n][k] end
            for k = 1, H do s = s + p[w.wh + q * H + k] * h[n][k] end
            a[q + 1] = s
          end
          local nh, nc = {}, {}
          for j = 1, H do
            local i, f = sig(a[j]), sig(a[H + j])
            local g, o = math.tanh(a[2 * H + j]), sig(a[3 * H + j])
            nc[j] = f * c[n][j] + i * g
            nh[j] = o * math.tanh(nc[j])
          end
          h[n], c[n] = nh, nc
          out[t][n] = nh
        end
      end
      hy[l], cy[l] = h, c
      input = out
    end
    return input, hy, cy
  end

  for dt, tol in pairs(DTYPES) do
    it('lstm (2 layers, 2 steps) matches a Lua reference with the packed layout (' .. dt .. ')', function()
      math.randomseed(9)
      local T, N, I, HS, L = 2, 2, 3, 2, 2
      local np = 4 * HS * (I + HS) + 4 * HS * (HS + HS) + 2 * L * 4 * HS
      local xf, p = rand_list(T * N * I), rand_list(np, -0.5, 0.5)
      local h0, c0 = rand_list(L * N * HS), rand_list(L * N * HS)
      local x = {}
      for t = 1, T do
        x[t] = {}
        for n = 1, N do
          x[t][n] = {}
          for k = 1, I do x[t][n][k] = xf[((t - 1) * N + n - 1) * I + k] end
        end
      end
      local ref, hy = lstm_ref(x, T, N, I, HS, L, p, h0, c0)
      local res = mx.nd.RNN { data = arr(xf, { T, N, I }, dt), parameters = arr(p, { np }, dt),
        state = arr(h0, { L, N, HS }, dt), state_cell = arr(c0, { L, N, HS }, dt),
        mode = 'lstm', state_size = HS, num_layers = L, state_outputs = true }
      local rf = {}
      for t = 1, T do for n = 1, N do for j = 1, HS do rf[#rf + 1] = ref[t][n][j] end end end
      H.near(flat(res[1]), rf, tol * 10)
      local hf = {}
      for l = 1, L do for n = 1, N do for j = 1, HS do hf[#hf + 1] = hy[l][n][j] end end end
      H.near(flat(res[2]), hf, tol * 10)
    end)
  end
end)

describe('vectorised float32 exp family at the edges', function()
  local mx = require 'luamx'
  it('keeps NaN, saturates, and stays accurate over a wide range', function()
    local x = mx.nd.array {0 / 0, -1e30, 1e30, 0, -100, 100, -87, 88}
    local s = mx.nd.sigmoid(x):toflat()
    assert.is_true(s[1] ~= s[1])
    assert.is_true(s[2] >= 0 and s[2] < 1e-30)
    assert.are.same({1, 0.5}, {s[3], s[4]})
    assert.is_true(s[5] < 1e-30 and s[6] == 1)
    local t = mx.nd.tanh(x):toflat()
    assert.is_true(t[1] ~= t[1])
    assert.are.same({-1, 1, 0, -1, 1}, {t[2], t[3], t[4], t[5], t[6]})
    local e = mx.nd.exp(x):toflat()
    assert.is_true(e[1] ~= e[1])
    assert.is_true(math.abs(e[7] - math.exp(-87)) / math.exp(-87) < 1e-6)
    assert.is_true(math.abs(e[8] - math.exp(88)) / math.exp(88) < 1e-6)
    -- 2001 points in [-20, 20]: relative error within 2 ulp-ish of float32
    local xs = {}
    for i = 0, 2000 do xs[#xs + 1] = -20 + i * 0.02 end
    local xa = mx.nd.array(xs)
    xs = xa:toflat() -- the float32 values actually used
    local ex = mx.nd.exp(xa):toflat()
    local th = mx.nd.tanh(xa):toflat()
    for i, v in ipairs(xs) do
      assert.is_true(math.abs(ex[i] - math.exp(v)) <= 3e-7 * math.exp(v), 'exp ' .. v)
      local tv = (math.exp(2 * v) - 1) / (math.exp(2 * v) + 1)
      assert.is_true(math.abs(th[i] - tv) <= 3e-7 * math.max(math.abs(tv), 1e-3), 'tanh ' .. v)
    end
  end)
end)

describe('prepared operator calls (mx.nd.prepare)', function()
  local mx = require 'luamx'
  local ffi = require 'ffi'
  local H = require 'helpers'
  local total = H.total_allocs

  it('gives the same results as the one-off call, without allocating', function()
    local w1, g, m1 = mx.nd.array {1, 2, 3}, mx.nd.array {0.5, -1, 2}, mx.nd.zeros {3}
    local w2, m2 = w1:copy(), m1:copy()
    local upd = mx.nd.prepare('sgd_mom_update', {lr = 0.1, momentum = 0.9, wd = 0.01})
    upd{weight = w1, grad = g, mom = m1, out = w1}
    mx.nd.sgd_mom_update{weight = w2, grad = g, mom = m2, out = w2, lr = 0.1, momentum = 0.9, wd = 0.01}
    assert.are.same(w2:toflat(), w1:toflat())
    assert.are.same(m2:toflat(), m1:toflat())
    local args = {weight = w1, grad = g, mom = m1, out = w1}
    local before = total()
    for _ = 1, 100 do upd(args) end
    upd:set('lr', 0.05)
    upd(w1, g, m1, {out = w1})
    assert.are.equal(before, total())
    local r = mx.nd.prepare('relu')(mx.nd.array {-1, 2})
    assert.are.same({0, 2}, r:totable())
  end)

  it('names the op and parameter in its errors', function()
    local upd = mx.nd.prepare('sgd_update', {lr = 0.1})
    H.raises(function() upd{weight = mx.nd.ones {2}} end, "sgd_update: missing input 'grad'")
    H.raises(function() upd:set('clip_gradient', 'x') end, 'set clip_gradient: expected a number')
    H.raises(function() upd:set('nope', 1) end, "sgd_update: unknown parameter 'nope'")
    H.raises(function() return mx.nd.prepare('no_such_op') end, 'no_such_op')
    H.raises(function() return mx.nd.prepare('Activation', {act_type = 'relu'}):set('act_type', 1) end,
             "parameter 'act_type': not a numeric parameter")
  end)
end)

describe('reverse (flip)', function()
  local mx = require 'luamx'
  local H = require 'helpers'
  it("reverses along the given axes as MXNet's reverse", function()
    local a = mx.nd.array({{1, 2, 3}, {4, 5, 6}})
    assert.are.same({{4, 5, 6}, {1, 2, 3}}, mx.nd.reverse(a, {axis = {0}}):totable())
    assert.are.same({{3, 2, 1}, {6, 5, 4}}, mx.nd.reverse(a, {axis = {-1}}):totable())
    assert.are.same({{6, 5, 4}, {3, 2, 1}}, mx.nd.flip(a, {axis = {0, 1}}):totable())
    local x = mx.sym.Variable('x')
    local _, out = mx.sym.reverse{data = x, axis = {1}}:infer_shape{x = {2, 5, 3}}
    assert.are.same({2, 5, 3}, out[1])
    H.raises(function() mx.nd.reverse(a, {axis = {2}}) end, "reverse", "axis")
    H.raises(function() mx.nd.reverse(a, {axis = {0, 0}}) end, "parameter 'axis': axis 0 repeats")
  end)
end)
