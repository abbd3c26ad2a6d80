-- Issue 14's losses and small linear algebra: softmax_cross_entropy and
-- _contrib_div_sqrt_dim, SVMOutput, IdentityAttachKLSparseReg, _linalg_gemm and _linalg_gemm2
-- (aliases linalg_gemm, linalg_gemm2), khatri_rao.
--
-- softmax_cross_entropy (MXNet 1.9 src/operator/loss_binary_op.cc): data (batch, classes),
-- label (batch,) of class indices; the output (1,) is Σ_i -log(softmax(data[i])[label[i]]);
-- the data gradient is (softmax(data) - onehot(label)) * head gradient, the label's is 0.
-- MXNet's documented example is a test. _contrib_div_sqrt_dim (contrib/transformer.cc):
-- data / sqrt(data.shape[-1]) both ways. Forward and backward are checked against Lua
-- loops, in an executor, through JSON, in the help text; errors name op, argument,
-- expected and actual. On a GPU context (the simulator in CI) both run on gpu(0) and
-- must agree with the CPU.
local mx = require 'luamx'
local H = require 'helpers'
local ops = require 'luamx.ndarray_ops'
local help = require 'luamx.repl.help'

local DTYPES = { float32 = 1e-5, float64 = 1e-12 }

local function flat(a) return a:toflat() end

local function rand_list(n, lo, hi)
  local t = {}
  for i = 1, n do t[i] = lo + (hi - lo) * math.random() end
  return t
end

-- Rows of x (flat, n rows of k) -> softmax rows and the summed cross entropy.
local function sce_ref(x, labels, n, k)
  local p, loss = {}, 0
  for i = 0, n - 1 do
    local m = -math.huge
    for j = 1, k do m = math.max(m, x[i * k + j]) end
    local s = 0
    for j = 1, k do s = s + math.exp(x[i * k + j] - m) end
    for j = 1, k do p[i * k + j] = math.exp(x[i * k + j] - m) / s end
    loss = loss - math.log(p[i * k + labels[i + 1] + 1])
  end
  return loss, p
end

describe('softmax_cross_entropy', function()
  it('gives MXNet\'s documented value 0.4281871', function()
    local x = mx.nd.array { { 1, 2, 3 }, { 11, 7, 5 } }
    local y = mx.nd.softmax_cross_entropy(x, mx.nd.array { 2, 0 })
    assert.are.same({ 1 }, y.shape)
    H.near(flat(y), { 0.4281871 }, 1e-6)
  end)

  for dt, tol in pairs(DTYPES) do
    it('forward and backward match a Lua loop (' .. dt .. ')', function()
      math.randomseed(5)
      local n, k = 6, 7
      local x = rand_list(n * k, -3, 3)
      local labels = {}
      for i = 1, n do labels[i] = (i * 3) % k end
      local X = mx.nd.array(x, { dtype = dt }):reshape { n, k }
      local L = mx.nd.array(labels, { dtype = dt })
      local y = mx.nd.softmax_cross_entropy { data = X, label = L }
      local loss, p = sce_ref(x, labels, n, k)
      H.near(flat(y), { loss }, tol * 10)
      local g = 0.75
      local gr = ops.backward('softmax_cross_entropy', {}, { X, L }, { y },
        { mx.nd.array({ g }, { dtype = dt }) })
      local want = {}
      for i = 0, n - 1 do
        for j = 1, k do
          want[i * k + j] = (p[i * k + j] - (j - 1 == labels[i + 1] and 1 or 0)) * g
        end
      end
      H.near(flat(gr[1]), want, tol * 10)
      for _, v in ipairs(flat(gr[2])) do assert.are.equal(0, v) end
    end)
  end

  it('infers label (batch,) and output (1,), trains in an executor', function()
    local s = mx.sym.softmax_cross_entropy { data = mx.sym.Variable('data'),
      label = mx.sym.Variable('label'), name = 'ce' }
    assert.are.same({ 'data', 'label' }, s:list_arguments())
    local args, outs = s:infer_shape { data = { 4, 3 } }
    assert.are.same({ 4 }, args[2])
    assert.are.same({ { 1 } }, outs)
    local exe = s:simple_bind { data = { 2, 3 }, type_dict = { data = 'float64' } }
    exe.arg_dict.data:set { { 1, 2, 3 }, { 11, 7, 5 } }
    exe.arg_dict.label:set { 2, 0 }
    H.near(flat(exe:forward { is_train = true }[1]), { 0.4281871 }, 1e-6)
    exe:backward(mx.nd.array({ 2 }, { dtype = 'float64' }))
    local _, p = sce_ref({ 1, 2, 3, 11, 7, 5 }, { 2, 0 }, 2, 3)
    H.near(flat(exe.grad_dict.data), { 2 * p[1], 2 * p[2], 2 * (p[3] - 1), 2 * (p[4] - 1),
      2 * p[5], 2 * p[6] }, 1e-12)
    assert.are.same({ 0, 0 }, flat(exe.grad_dict.label))
  end)

  it('round-trips through JSON and has help text', function()
    local s = mx.sym.softmax_cross_entropy { data = mx.sym.Variable('d'),
      label = mx.sym.Variable('l'), name = 'ce' }
    local js = s:tojson()
    assert.truthy(js:find('"op": "softmax_cross_entropy"', 1, true))
    assert.are.equal(js, mx.sym.load_json(js):tojson())
    local text = help.op_text(mx, 'softmax_cross_entropy')
    assert.truthy(text:find('cross entropy of softmax output', 1, true))
    assert.truthy(text:find('label', 1, true))
  end)

  it('refuses bad shapes and labels, naming op, argument, expected and actual', function()
    local s = mx.sym.softmax_cross_entropy { data = mx.sym.Variable('data'),
      label = mx.sym.Variable('label'), name = 'ce' }
    H.raises(function() s:infer_shape { data = { 2, 3, 4 } } end,
      "softmax_cross_entropy 'ce'", "input 'data'", 'expected 2-D', 'got 3-D')
    H.raises(function() s:infer_shape { data = { 2, 3 }, label = { 3 } } end,
      "softmax_cross_entropy 'ce'", "input 'label'", 'expected shape (2,)', 'got (3,)')
    H.raises(function() s:infer_shape { data = { 2, 3 }, label = { 2, 1 } } end,
      "softmax_cross_entropy 'ce'", "input 'label'", 'expected 1-D', 'got 2-D')
    local x = mx.nd.ones { 2, 3 }
    H.raises(function() mx.nd.softmax_cross_entropy(x, mx.nd.array { 0, 3 }) end,
      'softmax_cross_entropy', "input 'label'", 'expected class indices in [0, 3)',
      'got 3 at row 1')
    H.raises(function() mx.nd.softmax_cross_entropy(x, mx.nd.array { -1, 0 }) end,
      'softmax_cross_entropy', "input 'label'", 'got -1 at row 0')
    H.raises(function()
      mx.nd.softmax_cross_entropy(mx.nd.ones({ 2, 3 }, { dtype = 'int32' }),
        mx.nd.array({ 0, 1 }, { dtype = 'int32' }))
    end, 'softmax_cross_entropy', "input 'data'", 'got int32')
    -- the array stays usable after a refused call
    H.near(flat(mx.nd.softmax_cross_entropy(x, mx.nd.array { 0, 2 })), { 2 * math.log(3) }, 1e-6)
  end)
end)

describe('_contrib_div_sqrt_dim', function()
  for _, dt in ipairs { 'float32', 'float64', 'float16' } do
    it('divides by sqrt(last dim) forward and backward (' .. dt .. ')', function()
      local tol = dt == 'float16' and 2e-3 or DTYPES[dt]
      math.randomseed(3)
      local s = { 2, 3, 9 }
      local x = rand_list(54, -2, 2)
      local X = mx.nd.array(x, { dtype = dt }):reshape(s)
      local xr = flat(X)
      local y = mx.nd._contrib_div_sqrt_dim(X)
      assert.are.same(s, y.shape)
      assert.are.equal(dt, y.dtype)
      local want = {}
      for i = 1, 54 do want[i] = xr[i] / 3 end
      H.near(flat(y), want, tol)
      local G = mx.nd.array(rand_list(54, -1, 1), { dtype = dt }):reshape(s)
      local gr = ops.backward('_contrib_div_sqrt_dim', {}, { X }, { y }, { G })
      local gw = {}
      for i, v in ipairs(flat(G)) do gw[i] = v / 3 end
      H.near(flat(gr[1]), gw, tol)
    end)
  end

  it('runs in an executor, round-trips through JSON and has help text', function()
    local s = mx.sym._contrib_div_sqrt_dim { data = mx.sym.Variable('q'), name = 'scale' }
    local exe = s:simple_bind { q = { 2, 4 }, type_dict = { q = 'float64' } }
    exe.arg_dict.q:set { { 2, 4, 6, 8 }, { -2, 0, 1, 3 } }
    H.near(flat(exe:forward { is_train = true }[1]), { 1, 2, 3, 4, -1, 0, 0.5, 1.5 }, 1e-12)
    exe:backward(mx.nd.array({ { 2, 2, 2, 2 }, { 4, 4, 4, 4 } }, { dtype = 'float64' }))
    H.near(flat(exe.grad_dict.q), { 1, 1, 1, 1, 2, 2, 2, 2 }, 1e-12)
    local js = s:tojson()
    assert.truthy(js:find('"op": "_contrib_div_sqrt_dim"', 1, true))
    assert.are.equal(js, mx.sym.load_json(js):tojson())
    assert.truthy(help.op_text(mx, '_contrib_div_sqrt_dim'):find('sqrt(data.shape[-1])', 1, true))
  end)

  it('refuses an integer array on the CPU, naming op and argument', function()
    H.raises(function() mx.nd._contrib_div_sqrt_dim(mx.nd.ones({ 2, 4 }, { dtype = 'int32' })) end,
      '_contrib_div_sqrt_dim', "input 'data'", 'got int32')
  end)
end)

-- MXNet's SVMOutput gradient of one output y for the labelled class or another.
local function svm_ref(y, is_label, margin, reg, linear)
  if linear then
    if is_label then return margin > y and -reg or 0 end
    return margin > -y and reg or 0
  end
  if is_label then return margin > y and -2 * (margin - y) * reg or 0 end
  return margin > -y and 2 * (margin + y) * reg or 0
end

describe('SVMOutput', function()
  it('has MXNet\'s parameters, defaults and label shape', function()
    local s = mx.sym.SVMOutput { data = mx.sym.Variable('data'), name = 'svm' }
    assert.are.same({ 'data', 'svm_label' }, s:list_arguments())
    local args, outs = s:infer_shape { data = { 2, 3, 4 } }
    assert.are.same({ 2, 3 }, args[2])
    assert.are.same({ { 2, 3, 4 } }, outs)
    local js = mx.sym.SVMOutput { data = mx.sym.Variable('d'), margin = 0.5, use_linear = true,
      name = 'svm' }:tojson()
    assert.truthy(js:find('"margin": "0.5"', 1, true))
    assert.truthy(js:find('"use_linear": "True"', 1, true))
    assert.are.equal(js, mx.sym.load_json(js):tojson())
    local text = help.op_text(mx, 'SVMOutput')
    for _, w in ipairs { 'margin', 'regularization_coefficient', 'use_linear', 'support vector' } do
      assert.truthy(text:find(w, 1, true), w)
    end
  end)

  it('gives hand-worked L2 and L1 gradients, identity forward', function()
    local x = mx.nd.array({ { 0.5, -2, 1.5 }, { 3, 0.25, -0.5 } }, { dtype = 'float64' })
    local l = mx.nd.array({ 0, 1 }, { dtype = 'float64' })
    local y = mx.nd.SVMOutput(x, l)
    assert.are.same(flat(x), flat(y))
    local g2 = ops.backward('SVMOutput', {}, { x, l }, { y })
    -- row 0: -2(1-0.5), 0 (1 > 2 is false), 2(1+1.5); row 1: 2(1+3), -2(1-0.25), 2(1-0.5)
    H.near(flat(g2[1]), { -1, 0, 5, 8, -1.5, 1 }, 1e-12)
    assert.are.same({ 0, 0 }, flat(g2[2]))
    local g1 = ops.backward('SVMOutput', { use_linear = true, regularization_coefficient = 3 },
      { x, l }, { y })
    H.near(flat(g1[1]), { -3, 0, 3, 3, -3, 3 }, 1e-12)
  end)

  for dt, tol in pairs(DTYPES) do
    it('matches MXNet\'s loops on 3-D data, margin and coefficient set (' .. dt .. ')', function()
      math.randomseed(21)
      local s, k = { 2, 3, 5 }, 5
      local x = rand_list(30, -2, 2)
      local labels = {}
      for i = 1, 6 do labels[i] = (i * 2) % k end
      local X = mx.nd.array(x, { dtype = dt }):reshape(s)
      local L = mx.nd.array(labels, { dtype = dt }):reshape { 2, 3 }
      local xr = flat(X)
      for _, linear in ipairs { false, true } do
        local p = { margin = 0.7, regularization_coefficient = 1.5, use_linear = linear }
        local y = mx.nd.SVMOutput { data = X, label = L, margin = 0.7,
          regularization_coefficient = 1.5, use_linear = linear }
        local gr = ops.backward('SVMOutput', p, { X, L }, { y })
        local want = {}
        for i = 0, 5 do
          for j = 0, k - 1 do
            want[i * k + j + 1] = svm_ref(xr[i * k + j + 1], j == labels[i + 1], 0.7, 1.5, linear)
          end
        end
        H.near(flat(gr[1]), want, tol)
      end
    end)
  end

  it('trains in an executor without a head gradient', function()
    local s = mx.sym.SVMOutput { data = mx.sym.Variable('data'), name = 'svm' }
    local exe = s:simple_bind { data = { 1, 3 }, type_dict = { data = 'float64' } }
    exe.arg_dict.data:set { { 0.5, -2, 1.5 } }
    exe.arg_dict.svm_label:set { 0 }
    H.near(flat(exe:forward { is_train = true }[1]), { 0.5, -2, 1.5 }, 0)
    exe:backward()
    H.near(flat(exe.grad_dict.data), { -1, 0, 5 }, 1e-12)
  end)

  it('refuses bad parameters and shapes, naming op, argument, expected and actual', function()
    H.raises(function() mx.sym.SVMOutput { data = mx.sym.Variable('d'), margin = 'wide' } end,
      'SVMOutput', "parameter 'margin'", 'wide')
    local s = mx.sym.SVMOutput { data = mx.sym.Variable('data'), name = 'svm' }
    H.raises(function() s:infer_shape { data = { 2, 3 }, svm_label = { 3 } } end,
      "SVMOutput 'svm'", "input 'label'", 'expected shape (2,)', 'got (3,)')
    H.raises(function()
      ops.backward('SVMOutput', {}, { mx.nd.ones { 2, 3 }, mx.nd.ones { 3 } },
        { mx.nd.ones { 2, 3 } })
    end, 'SVMOutput', "input 'label'", 'expected shape (2,)', 'got (3,)')
  end)
end)

describe('IdentityAttachKLSparseReg', function()
  local function kl_ref(x, n, k, avg, g, t, pen, mom)
    local m, gr = {}, {}
    for j = 1, k do
      local s = 0
      for i = 0, n - 1 do s = s + x[i * k + j] end
      m[j] = mom * avg[j] + (1 - mom) * s / n
    end
    for i = 0, n - 1 do
      for j = 1, k do gr[i * k + j] = g[i * k + j] + pen * (-t / m[j] + (1 - t) / (1 - m[j])) end
    end
    return m, gr
  end

  it('has MXNet\'s parameters, defaults, aux state and help text', function()
    local s = mx.sym.IdentityAttachKLSparseReg { data = mx.sym.Variable('data'), name = 'kl' }
    assert.are.same({ 'data' }, s:list_arguments())
    assert.are.same({ 'kl_moving_avg' }, s:list_auxiliary_states())
    local _, outs, aux = s:infer_shape { data = { 5, 3 } }
    assert.are.same({ { 5, 3 } }, outs)
    assert.are.same({ { 3 } }, aux)
    local js = mx.sym.IdentityAttachKLSparseReg { data = mx.sym.Variable('d'), penalty = 0.01,
      name = 'kl' }:tojson()
    assert.truthy(js:find('"penalty": "0.01"', 1, true))
    assert.are.equal(js, mx.sym.load_json(js):tojson())
    local text = help.op_text(mx, 'IdentityAttachKLSparseReg')
    for _, w in ipairs { 'sparseness_target', 'penalty', 'momentum', 'moving_avg', '0.001' } do
      assert.truthy(text:find(w, 1, true), w)
    end
  end)

  it('moves moving_avg and adds the KL penalty in backward (hand-worked)', function()
    local s = mx.sym.IdentityAttachKLSparseReg { data = mx.sym.Variable('data'), name = 'kl' }
    local exe = s:simple_bind { data = { 2, 2 }, type_dict = { data = 'float64' } }
    exe.arg_dict.data:set { { 0.2, 0.6 }, { 0.4, 0.8 } }
    exe.aux_dict.kl_moving_avg:set { 0.5, 0.5 }
    H.near(flat(exe:forward { is_train = true }[1]), { 0.2, 0.6, 0.4, 0.8 }, 0)
    assert.are.same({ 0.5, 0.5 }, flat(exe.aux_dict.kl_moving_avg)) -- forward leaves it
    exe:backward(mx.nd.ones({ 2, 2 }, { dtype = 'float64' }))
    -- means 0.3, 0.7 -> 0.9 * 0.5 + 0.1 * mean = 0.48, 0.52; gradient 1 + 0.001 *
    -- (-0.1 / m + 0.9 / (1 - m)) = 1.0015224359, 1.0016826923
    H.near(flat(exe.aux_dict.kl_moving_avg), { 0.48, 0.52 }, 1e-12)
    H.near(flat(exe.grad_dict.data), { 1.0015224359, 1.0016826923, 1.0015224359, 1.0016826923 },
      1e-10)
    exe:backward(mx.nd.ones({ 2, 2 }, { dtype = 'float64' }))
    H.near(flat(exe.aux_dict.kl_moving_avg), { 0.9 * 0.48 + 0.03, 0.9 * 0.52 + 0.07 }, 1e-12)
  end)

  for dt, tol in pairs(DTYPES) do
    it('matches MXNet\'s formula with parameters set (' .. dt .. ')', function()
      math.randomseed(17)
      local n, k = 5, 4
      local x, g, a0 = rand_list(n * k, 0.05, 0.95), rand_list(n * k, -1, 1), rand_list(k, 0.2, 0.8)
      local X = mx.nd.array(x, { dtype = dt }):reshape { n, k }
      local G = mx.nd.array(g, { dtype = dt }):reshape { n, k }
      local A = mx.nd.array(a0, { dtype = dt })
      local xr, gr0, ar = flat(X), flat(G), flat(A)
      local p = { sparseness_target = 0.3, penalty = 0.05, momentum = 0.6 }
      local y = ops.forward_all('IdentityAttachKLSparseReg', p, { X, A }, true)
      H.near(flat(y[1]), xr, 0)
      local res = ops.backward('IdentityAttachKLSparseReg', p, { X, A }, { y[1] }, { G })
      local m, want = kl_ref(xr, n, k, ar, gr0, 0.3, 0.05, 0.6)
      H.near(flat(A), m, tol)
      H.near(flat(res[1]), want, tol * 10)
    end)
  end

  it('refuses data it cannot average, naming op, argument, expected and actual', function()
    local s = mx.sym.IdentityAttachKLSparseReg { data = mx.sym.Variable('data'), name = 'kl' }
    H.raises(function() s:infer_shape { data = { 4 } } end,
      "IdentityAttachKLSparseReg 'kl'", "input 'data'", 'expected at least 2-D', 'got 1-D')
    H.raises(function()
      mx.sym.IdentityAttachKLSparseReg { data = mx.sym.Variable('d'), sparseness_target = 2 }
    end, 'IdentityAttachKLSparseReg', "parameter 'sparseness_target'", '2')
    local X = mx.nd.ones { 2, 3, 4 }
    H.raises(function()
      ops.backward('IdentityAttachKLSparseReg', {}, { X, mx.nd.ones { 3 } }, { X }, { X })
    end, 'IdentityAttachKLSparseReg', "input 'data'", 'expected (batch, units)', 'got 3-D')
  end)
end)

-- op(A) · op(B) for matrices stored as flat row-major tables (r x c), alpha times.
local function matmul(a, ar, ac, ta, b, br, bc, tb, alpha)
  local m, k = ta and ac or ar, ta and ar or ac
  local n = tb and br or bc
  local function A(i, j) return ta and a[(j - 1) * ac + i] or a[(i - 1) * ac + j] end
  local function B(i, j) return tb and b[(j - 1) * bc + i] or b[(i - 1) * bc + j] end
  local c = {}
  for i = 1, m do
    for j = 1, n do
      local s = 0
      for q = 1, k do s = s + A(i, q) * B(q, j) end
      c[(i - 1) * n + j] = alpha * s
    end
  end
  return c, m, n
end

describe('_linalg_gemm and _linalg_gemm2', function()
  it('give MXNet\'s documented examples, by name and alias', function()
    local A = mx.nd.ones { 2, 2 }
    local B = mx.nd.ones { 3, 2 }
    local C = mx.nd.ones { 2, 3 }
    local y = mx.nd.linalg_gemm { A = A, B = B, C = C, transpose_b = true, alpha = 2, beta = 10 }
    assert.are.same({ 2, 3 }, y.shape)
    H.near(flat(y), { 14, 14, 14, 14, 14, 14 }, 1e-6)
    H.near(flat(mx.nd._linalg_gemm2 { A = A, B = B, transpose_b = true, alpha = 2 }),
      { 4, 4, 4, 4, 4, 4 }, 1e-6)
    local Ab = mx.nd.array { { { 1, 1 } }, { { 0.1, 0.1 } } }
    local Cb = mx.nd.array { { { 10 } }, { { 0.01 } } }
    H.near(flat(mx.nd._linalg_gemm { A = Ab, B = Ab, C = Cb, transpose_b = true, alpha = 2,
      beta = 10 }), { 104, 0.14 }, 1e-6)
    H.near(flat(mx.nd.linalg_gemm2 { A = Ab, B = Ab, transpose_b = true, alpha = 2 }),
      { 4, 0.04 }, 1e-6)
  end)

  for dt, tol in pairs(DTYPES) do
    it('matches Lua loops with rows on axis 1 of 4-D tensors, forward and backward (' .. dt .. ')',
      function()
        math.randomseed(9)
        -- A (2, 3, 2, 4): rows on axis 1, cols last; B (2, 4, 2, 5); batch (outer 2, mid 2)
        local a, b = rand_list(48, -1, 1), rand_list(80, -1, 1)
        local A = mx.nd.array(a, { dtype = dt }):reshape { 2, 3, 2, 4 }
        local B = mx.nd.array(b, { dtype = dt }):reshape { 2, 4, 2, 5 }
        local ar, br = flat(A), flat(B)
        local y = mx.nd.linalg_gemm2 { A = A, B = B, axis = 1, alpha = 0.5 }
        assert.are.same({ 2, 3, 2, 5 }, y.shape)
        -- the matrix (o, q) of a (outer, rows, mid, cols) tensor, as a flat table
        local function get(t, rows, cols, o, q)
          local m = {}
          for i = 1, rows do
            for j = 1, cols do
              m[(i - 1) * cols + j] = t[((o * rows + i - 1) * 2 + q) * cols + j]
            end
          end
          return m
        end
        local want = {}
        for o = 0, 1 do
          for q = 0, 1 do
            local c = matmul(get(ar, 3, 4, o, q), 3, 4, false, get(br, 4, 5, o, q), 4, 5, false,
              0.5)
            for i = 1, 3 do
              for j = 1, 5 do want[((o * 3 + i - 1) * 2 + q) * 5 + j] = c[(i - 1) * 5 + j] end
            end
          end
        end
        H.near(flat(y), want, tol * 10)
        -- backward: dA = 0.5 G Bᵀ, dB = 0.5 Aᵀ G per matrix
        local g = rand_list(60, -1, 1)
        local G = mx.nd.array(g, { dtype = dt }):reshape { 2, 3, 2, 5 }
        local gr = ops.backward('_linalg_gemm2', { axis = 1, alpha = 0.5 }, { A, B }, { y }, { G })
        local gf = flat(G)
        local wa, wb = {}, {}
        for o = 0, 1 do
          for q = 0, 1 do
            local gm = get(gf, 3, 5, o, q)
            local da = matmul(gm, 3, 5, false, get(br, 4, 5, o, q), 4, 5, true, 0.5)
            local db = matmul(get(ar, 3, 4, o, q), 3, 4, true, gm, 3, 5, false, 0.5)
            for i = 1, 3 do
              for j = 1, 4 do wa[((o * 3 + i - 1) * 2 + q) * 4 + j] = da[(i - 1) * 4 + j] end
            end
            for i = 1, 4 do
              for j = 1, 5 do wb[((o * 4 + i - 1) * 2 + q) * 5 + j] = db[(i - 1) * 5 + j] end
            end
          end
        end
        H.near(flat(gr[1]), wa, tol * 10)
        H.near(flat(gr[2]), wb, tol * 10)
      end)
  end

  it('trains in an executor: C\'s gradient is beta times the head gradient', function()
    local s = mx.sym.linalg_gemm { A = mx.sym.Variable('a'), B = mx.sym.Variable('b'),
      C = mx.sym.Variable('c'), transpose_a = true, alpha = 2, beta = 3, name = 'g' }
    assert.are.same({ 'a', 'b', 'c' }, s:list_arguments())
    local args, outs = s:infer_shape { a = { 2, 3 }, b = { 2, 4 } }
    assert.are.same({ 3, 4 }, args[3])
    assert.are.same({ { 3, 4 } }, outs)
    local exe = s:simple_bind { a = { 2, 3 }, b = { 2, 4 }, type_dict = { a = 'float64' } }
    local a, b, c = rand_list(6, -1, 1), rand_list(8, -1, 1), rand_list(12, -1, 1)
    local function rows(t, r, n)
      local m = {}
      for i = 1, r do
        m[i] = {}
        for j = 1, n do m[i][j] = t[(i - 1) * n + j] end
      end
      return m
    end
    exe.arg_dict.a:set(rows(a, 2, 3))
    exe.arg_dict.b:set(rows(b, 2, 4))
    exe.arg_dict.c:set(rows(c, 3, 4))
    local want = matmul(a, 2, 3, true, b, 2, 4, false, 2)
    for i = 1, 12 do want[i] = want[i] + 3 * c[i] end
    H.near(flat(exe:forward { is_train = true }[1]), want, 1e-12)
    local g = rand_list(12, -1, 1)
    exe:backward(mx.nd.array(g, { dtype = 'float64' }):reshape { 3, 4 })
    local gc = {}
    for i = 1, 12 do gc[i] = 3 * g[i] end
    H.near(flat(exe.grad_dict.c), gc, 1e-12)
    -- dA = 2 · B · Gᵀ (ta): (2x4)(4x3)
    H.near(flat(exe.grad_dict.a), matmul(b, 2, 4, false, g, 3, 4, true, 2), 1e-12)
  end)

  it('stores MXNet\'s names in JSON, round-trips, and has help text', function()
    local s = mx.sym.linalg_gemm2 { A = mx.sym.Variable('a'), B = mx.sym.Variable('b'),
      transpose_a = true, axis = -3, name = 'mm' }
    local js = s:tojson()
    assert.truthy(js:find('"op": "_linalg_gemm2"', 1, true))
    assert.truthy(js:find('"axis": "-3"', 1, true))
    assert.are.equal(js, mx.sym.load_json(js):tojson())
    local alias = js:gsub('"_linalg_gemm2"', '"linalg_gemm2"')
    assert.are.equal(js, mx.sym.load_json(alias):tojson())
    local text = help.op_text(mx, '_linalg_gemm')
    for _, w in ipairs { 'general matrix multiplication and accumulation', 'transpose_a',
      'Scalar factor multiplied with C', 'axis' } do
      assert.truthy(text:find(w, 1, true), w)
    end
    assert.truthy(help.op_text(mx, 'linalg_gemm2'):find('general matrix multiplication:', 1, true))
  end)

  it('refuses mismatched shapes and a bad axis, naming op, argument, expected, actual', function()
    local s = mx.sym.linalg_gemm2 { A = mx.sym.Variable('a'), B = mx.sym.Variable('b'),
      name = 'mm' }
    H.raises(function() s:infer_shape { a = { 2, 3 }, b = { 4, 5 } } end,
      "_linalg_gemm2 'mm'", "input 'B'", 'expected 3 rows', 'got 4')
    H.raises(function() s:infer_shape { a = { 2, 2, 3 }, b = { 3, 3, 5 } } end,
      "_linalg_gemm2 'mm'", "input 'B'", 'expected dim 0 to be 2', 'got 3')
    H.raises(function() s:infer_shape { a = { 2, 3 }, b = { 3, 4, 1 } } end,
      "_linalg_gemm2 'mm'", "input 'B'", 'expected 2-D like', 'got 3-D')
    H.raises(function()
      mx.nd.linalg_gemm2 { A = mx.nd.ones { 2, 3 }, B = mx.nd.ones { 3, 2 }, axis = -1 }
    end, '_linalg_gemm2', "parameter 'axis'", 'that is not the last', 'got -1')
    H.raises(function()
      mx.nd.linalg_gemm { A = mx.nd.ones { 2, 3 }, B = mx.nd.ones { 3, 2 },
        C = mx.nd.ones { 3, 3 } }
    end, '_linalg_gemm', "input 'C'", 'expected shape (2,2)', 'got (3,3)')
    H.raises(function()
      mx.nd.linalg_gemm2 { A = mx.nd.ones({ 2, 3 }, { dtype = 'int32' }),
        B = mx.nd.ones({ 3, 2 }, { dtype = 'int32' }) }
    end, '_linalg_gemm2', "input 'A'", 'got int32')
  end)
end)

describe('khatri_rao', function()
  it('gives MXNet\'s documented example, with arg<i> inputs and num_args', function()
    local A = mx.nd.array { { 1, -1 }, { 2, -3 } }
    local B = mx.nd.array { { 1, 4 }, { 2, 5 }, { 3, 6 } }
    local C = mx.nd.khatri_rao(A, B)
    assert.are.same({ 6, 2 }, C.shape)
    H.near(flat(C), { 1, -4, 2, -5, 3, -6, 2, -12, 4, -15, 6, -18 }, 0)
    local s = mx.sym.khatri_rao(mx.sym.Variable('a'), mx.sym.Variable('b'), mx.sym.Variable('c'))
    assert.are.same({ 'a', 'b', 'c' }, s:list_arguments())
    local js = s:tojson()
    assert.truthy(js:find('"num_args": "3"', 1, true))
    assert.are.equal(js, mx.sym.load_json(js):tojson())
    local _, outs = s:infer_shape { a = { 2, 4 }, b = { 3, 4 }, c = { 5, 4 } }
    assert.are.same({ { 30, 4 } }, outs)
    assert.truthy(help.op_text(mx, 'khatri_rao'):find('Khatri-Rao product', 1, true))
  end)

  for dt, tol in pairs(DTYPES) do
    it('matches Lua loops for three factors, forward and backward (' .. dt .. ')', function()
      math.randomseed(13)
      local M, N = { 2, 3, 2 }, 3
      local f, X = {}, {}
      for i = 1, 3 do
        f[i] = rand_list(M[i] * N, -1, 1)
        X[i] = mx.nd.array(f[i], { dtype = dt }):reshape { M[i], N }
        f[i] = flat(X[i])
      end
      local y = mx.nd.khatri_rao(X[1], X[2], X[3])
      local want, row = {}, 0
      for r1 = 0, 1 do
        for r2 = 0, 2 do
          for r3 = 0, 1 do
            for k = 1, N do
              want[row * N + k] = f[1][r1 * N + k] * f[2][r2 * N + k] * f[3][r3 * N + k]
            end
            row = row + 1
          end
        end
      end
      H.near(flat(y), want, tol)
      local g = rand_list(12 * N, -1, 1)
      local G = mx.nd.array(g, { dtype = dt }):reshape { 12, N }
      local gf = flat(G)
      local gr = ops.backward('khatri_rao', { num_args = 3 }, X, { y }, { G })
      -- d/dX2[r2, k] = Σ_{r1, r3} g[(r1, r2, r3), k] · X1[r1, k] · X3[r3, k]
      local w2 = {}
      for r2 = 0, 2 do
        for k = 1, N do
          local acc = 0
          for r1 = 0, 1 do
            for r3 = 0, 1 do
              local q = ((r1 * 3 + r2) * 2 + r3) * N + k
              acc = acc + gf[q] * f[1][r1 * N + k] * f[3][r3 * N + k]
            end
          end
          w2[r2 * N + k] = acc
        end
      end
      H.near(flat(gr[2]), w2, tol * 10)
      assert.are.same({ 2, N }, gr[1].shape)
      assert.are.same({ 2, N }, gr[3].shape)
    end)
  end

  it('refuses matrices with other column counts or dims, naming op, argument and shapes', function()
    local s = mx.sym.khatri_rao(mx.sym.Variable('a'), mx.sym.Variable('b'))
    H.raises(function() s:infer_shape { a = { 2, 3 }, b = { 4, 5 } } end,
      'khatri_rao', "input 'arg1'", 'expected shape (4,3)', 'got (4,5)')
    H.raises(function() s:infer_shape { a = { 2, 3, 1 }, b = { 4, 3 } } end,
      'khatri_rao', "input 'arg0'", 'expected a 2-D matrix', 'got 3-D')
    H.raises(function() mx.nd.khatri_rao(mx.nd.ones { 2, 3 }, mx.nd.ones { 2, 2 }) end,
      'khatri_rao', "input 'arg1'", 'expected shape (2,3)', 'got (2,2)')
  end)
end)

describe('issue 14 losses on gpu(0)', function()
  if mx.context.num_gpus() == 0 then
    pending('no GPU context (mx.context.num_gpus() == 0): GPU checks skipped')
    return
  end
  local gpu = mx.gpu(0)

  local function both(t, shape, dtype)
    local a = mx.nd.array(t, { dtype = dtype }):reshape(shape)
    return a, a:copyto(gpu)
  end

  for dt, tol in pairs { float32 = 1e-5, float64 = 1e-12 } do
    it('softmax_cross_entropy agrees with the CPU (' .. dt .. ')', function()
      math.randomseed(8)
      local n, k = 37, 5
      local labels = {}
      for i = 1, n do labels[i] = (i * 2) % k end
      local Xc, Xg = both(rand_list(n * k, -4, 4), { n, k }, dt)
      local Lc, Lg = both(labels, { n }, dt)
      local yc = mx.nd.softmax_cross_entropy(Xc, Lc)
      local yg = mx.nd.softmax_cross_entropy(Xg, Lg)
      H.near(flat(yg:copyto(mx.cpu())), flat(yc), tol * 10)
      local gc = ops.backward('softmax_cross_entropy', {}, { Xc, Lc }, { yc },
        { mx.nd.array({ -1.5 }, { dtype = dt }) })
      local gg = ops.backward('softmax_cross_entropy', {}, { Xg, Lg }, { yg },
        { mx.nd.array({ -1.5 }, { dtype = dt, ctx = gpu }) })
      H.near(flat(gg[1]:copyto(mx.cpu())), flat(gc[1]), tol * 10)
      for _, v in ipairs(flat(gg[2]:copyto(mx.cpu()))) do assert.are.equal(0, v) end
    end)

    it('_contrib_div_sqrt_dim agrees with the CPU (' .. dt .. ')', function()
      local Xc, Xg = both(rand_list(60, -2, 2), { 3, 4, 5 }, dt)
      local yc, yg = mx.nd._contrib_div_sqrt_dim(Xc), mx.nd._contrib_div_sqrt_dim(Xg)
      H.near(flat(yg:copyto(mx.cpu())), flat(yc), tol)
      local Gc, Gg = both(rand_list(60, -1, 1), { 3, 4, 5 }, dt)
      local gc = ops.backward('_contrib_div_sqrt_dim', {}, { Xc }, { yc }, { Gc })
      local gg = ops.backward('_contrib_div_sqrt_dim', {}, { Xg }, { yg }, { Gg })
      H.near(flat(gg[1]:copyto(mx.cpu())), flat(gc[1]), tol)
    end)
  end

  it('softmax_cross_entropy runs in float16 and gives NaN for a label out of range', function()
    local x = mx.nd.array({ { 1, 2, 3 }, { 11, 7, 5 } }, { dtype = 'float16', ctx = gpu })
    local function lab(t) return mx.nd.array(t, { dtype = 'float16', ctx = gpu }) end
    local y = mx.nd.softmax_cross_entropy(x, lab { 2, 0 })
    H.near(flat(y:copyto(mx.cpu())), { 0.4281871 }, 2e-3)
    local bad = mx.nd.softmax_cross_entropy(x, lab { 2, 3 })
    local v = flat(bad:copyto(mx.cpu()))[1]
    assert.is_true(v ~= v, 'expected NaN, got ' .. tostring(v))
  end)
  it('SVMOutput agrees with the CPU (L2 and L1)', function()
    math.randomseed(4)
    local Xc, Xg = both(rand_list(40, -2, 2), { 8, 5 }, 'float32')
    local labels = {}
    for i = 1, 8 do labels[i] = i % 5 end
    local Lc, Lg = both(labels, { 8 }, 'float32')
    for _, linear in ipairs { false, true } do
      local p = { margin = 0.8, use_linear = linear }
      local yc = mx.nd.SVMOutput { data = Xc, label = Lc, margin = 0.8, use_linear = linear }
      local yg = mx.nd.SVMOutput { data = Xg, label = Lg, margin = 0.8, use_linear = linear }
      H.near(flat(yg:copyto(mx.cpu())), flat(yc), 0)
      local gc = ops.backward('SVMOutput', p, { Xc, Lc }, { yc })
      local gg = ops.backward('SVMOutput', p, { Xg, Lg }, { yg })
      H.near(flat(gg[1]:copyto(mx.cpu())), flat(gc[1]), 1e-6)
    end
  end)
  it('IdentityAttachKLSparseReg agrees with the CPU, moving_avg included', function()
    math.randomseed(6)
    local Xc, Xg = both(rand_list(30, 0.1, 0.9), { 6, 5 }, 'float64')
    local Gc, Gg = both(rand_list(30, -1, 1), { 6, 5 }, 'float64')
    local Ac, Ag = both(rand_list(5, 0.3, 0.7), { 5 }, 'float64')
    local p = { penalty = 0.02, momentum = 0.7 }
    local gc = ops.backward('IdentityAttachKLSparseReg', p, { Xc, Ac }, { Xc }, { Gc })
    local gg = ops.backward('IdentityAttachKLSparseReg', p, { Xg, Ag }, { Xg }, { Gg })
    H.near(flat(Ag:copyto(mx.cpu())), flat(Ac), 1e-12)
    H.near(flat(gg[1]:copyto(mx.cpu())), flat(gc[1]), 1e-12)
  end)
  for dt, tol in pairs { float32 = 1e-5, float64 = 1e-12 } do
    it('_linalg_gemm agrees with the CPU on rows at axis 0 (' .. dt .. ')', function()
      math.randomseed(12)
      local Ac, Ag = both(rand_list(36, -1, 1), { 3, 4, 3 }, dt)
      local Bc, Bg = both(rand_list(60, -1, 1), { 5, 4, 3 }, dt)
      -- op(A) = Aᵀ (3 x 3) and op(B) = Bᵀ (3 x 5) per matrix: C (3, 4, 5), mid 4
      local Cc, Cg = both(rand_list(60, -1, 1), { 3, 4, 5 }, dt)
      local p = { axis = 0, transpose_a = true, transpose_b = true, alpha = 1.5, beta = -0.5 }
      local function call(A, B, C)
        return mx.nd.linalg_gemm { A = A, B = B, C = C, axis = 0, transpose_a = true,
          transpose_b = true, alpha = 1.5, beta = -0.5 }
      end
      local yc, yg = call(Ac, Bc, Cc), call(Ag, Bg, Cg)
      H.near(flat(yg:copyto(mx.cpu())), flat(yc), tol * 10)
      local Gc, Gg = both(rand_list(60, -1, 1), yc.shape, dt)
      local gc = ops.backward('_linalg_gemm', p, { Ac, Bc, Cc }, { yc }, { Gc })
      local gg = ops.backward('_linalg_gemm', p, { Ag, Bg, Cg }, { yg }, { Gg })
      for i = 1, 3 do H.near(flat(gg[i]:copyto(mx.cpu())), flat(gc[i]), tol * 10) end
    end)
  end
  it('khatri_rao agrees with the CPU, forward and every factor\'s gradient', function()
    math.randomseed(14)
    local Ac, Ag = both(rand_list(8, -1, 1), { 2, 4 }, 'float64')
    local Bc, Bg = both(rand_list(12, -1, 1), { 3, 4 }, 'float64')
    local yc, yg = mx.nd.khatri_rao(Ac, Bc), mx.nd.khatri_rao(Ag, Bg)
    H.near(flat(yg:copyto(mx.cpu())), flat(yc), 1e-12)
    local Gc, Gg = both(rand_list(24, -1, 1), { 6, 4 }, 'float64')
    local gc = ops.backward('khatri_rao', { num_args = 2 }, { Ac, Bc }, { yc }, { Gc })
    local gg = ops.backward('khatri_rao', { num_args = 2 }, { Ag, Bg }, { yg }, { Gg })
    for i = 1, 2 do H.near(flat(gg[i]:copyto(mx.cpu())), flat(gc[i]), 1e-12) end
  end)
end)
