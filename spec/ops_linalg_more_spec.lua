-- Issue 14's linalg operators beyond gemm (MXNet 1.9 src/operator/tensor/la_op.cc):
-- _linalg_extractdiag, _linalg_makediag, _linalg_extracttrian, _linalg_maketrian,
-- _linalg_sumlogdiag, _linalg_potrf, _linalg_potri, _linalg_trmm, _linalg_trsm,
-- _linalg_syrk, _linalg_inverse, _linalg_det and _linalg_slogdet (the CPU on LAPACK /
-- BLAS, the GPU on own kernels and cuBLAS), with the
-- aliases linalg_<x> and the namespaces mx.nd.linalg / mx.sym.linalg (and contrib).
--
-- MXNet's documented examples are tests; batched random cases are checked against Lua
-- loops (products with the masked triangle, B Bᵀ = A for the Cholesky factor, A · potri =
-- I); potrf's symmetric gradient against finite differences over symmetric pairs (the
-- other gradients are in tests/gradcheck_cases.h); JSON, help text and errors naming op,
-- argument, expected and actual. On a GPU context (the simulator in CI) every one must
-- agree with the CPU, forward and backward.
local mx = require 'luamx'
local H = require 'helpers'
local ops = require 'luamx.ndarray_ops'
local help = require 'luamx.repl.help'

local function flat(a) return a:toflat() end

local function rand_list(n, lo, hi)
  local t = {}
  for i = 1, n do t[i] = lo + (hi - lo) * math.random() end
  return t
end

-- row-major n x n helpers on flat 1-based tables
local function mm(a, b, n, m, k) -- a [n, m] · b [m, k]
  local c = {}
  for i = 0, n - 1 do
    for j = 0, k - 1 do
      local s = 0
      for l = 0, m - 1 do s = s + a[i * m + l + 1] * b[l * k + j + 1] end
      c[i * k + j + 1] = s
    end
  end
  return c
end

local function tr(a, r, c) -- a [r, c] -> [c, r]
  local t = {}
  for i = 0, r - 1 do
    for j = 0, c - 1 do t[j * r + i + 1] = a[i * c + j + 1] end
  end
  return t
end

local function tri(a, n, lower) -- keep one triangle (diagonal included)
  local t = {}
  for i = 0, n - 1 do
    for j = 0, n - 1 do
      local keep = lower and j <= i or (not lower and j >= i)
      t[i * n + j + 1] = keep and a[i * n + j + 1] or 0
    end
  end
  return t
end

-- a random symmetric positive-definite n x n matrix: M Mᵀ + n I
local function spd(n)
  local m = rand_list(n * n, -1, 1)
  local a = mm(m, tr(m, n, n), n, n, n)
  for i = 0, n - 1 do a[i * n + i + 1] = a[i * n + i + 1] + n end
  return a
end

local function sub(t, first, count)
  local s = {}
  for i = 1, count do s[i] = t[first + i - 1] end
  return s
end

describe('linalg diagonals and triangles', function()
  it('give MXNet\'s documented examples, by name and alias', function()
    local A = mx.nd.array { { 1, 2 }, { 3, 4 } }
    H.near(flat(mx.nd.linalg_extractdiag(A)), { 1, 4 }, 0)
    H.near(flat(mx.nd._linalg_extractdiag(A, { offset = 1 })), { 2 }, 0)
    local B = mx.nd.array { { { 1, 2 }, { 3, 4 } }, { { 5, 6 }, { 7, 8 } } }
    H.near(flat(mx.nd.linalg_extractdiag(B)), { 1, 4, 5, 8 }, 0)
    local d = mx.nd.array { 1, 2 }
    H.near(flat(mx.nd.linalg_makediag(d)), { 1, 0, 0, 2 }, 0)
    local d1 = mx.nd._linalg_makediag(d, { offset = 1 })
    assert.are.same({ 3, 3 }, d1.shape)
    H.near(flat(d1), { 0, 1, 0, 0, 0, 2, 0, 0, 0 }, 0)
    H.near(flat(mx.nd.linalg_makediag(mx.nd.array { { 1, 2 }, { 3, 4 } })),
      { 1, 0, 0, 2, 3, 0, 0, 4 }, 0)
    H.near(flat(mx.nd.linalg_extracttrian(A)), { 1, 3, 4 }, 0)
    H.near(flat(mx.nd.linalg_extracttrian(A, { lower = false })), { 1, 2, 4 }, 0)
    H.near(flat(mx.nd.linalg_extracttrian(A, { offset = 1 })), { 2 }, 0)
    H.near(flat(mx.nd.linalg_extracttrian(A, { offset = -1 })), { 3 }, 0)
    local t = mx.nd.array { 1, 2, 3 }
    H.near(flat(mx.nd.linalg_maketrian(t)), { 1, 0, 2, 3 }, 0)
    H.near(flat(mx.nd.linalg_maketrian(t, { lower = false })), { 1, 2, 0, 3 }, 0)
    H.near(flat(mx.nd.linalg_maketrian(t, { offset = 1 })), { 0, 1, 2, 0, 0, 3, 0, 0, 0 }, 0)
    H.near(flat(mx.nd._linalg_maketrian(t, { offset = -1 })), { 0, 0, 0, 1, 0, 0, 2, 3, 0 }, 0)
    H.near(flat(mx.nd.linalg_sumlogdiag(mx.nd.array { { 1, 1 }, { 1, 7 } })), { 1.9459101 }, 1e-6)
    local s = mx.nd.linalg_sumlogdiag(mx.nd.array { { { 1, 1 }, { 1, 7 } },
      { { 3, 0 }, { 0, 17 } } })
    assert.are.same({ 2 }, s.shape)
    H.near(flat(s), { 1.9459101, 3.9318256 }, 1e-6)
  end)

  it('round-trips: extract after make is the identity, batched, every packing', function()
    math.randomseed(21)
    for _, p in ipairs { { offset = 0 }, { offset = 2 }, { offset = -1 },
      { offset = 0, lower = false } } do
      local v = mx.nd.array(rand_list(2 * 3 * 6, -1, 1), { dtype = 'float64' }):reshape { 2, 3, 6 }
      local M = mx.nd.linalg_maketrian(v, p)
      local k = math.abs(p.offset)
      assert.are.same({ 2, 3, 3 + k, 3 + k }, M.shape)
      H.near(flat(mx.nd.linalg_extracttrian(M, p)), flat(v), 0)
      local dp = { offset = p.offset }
      local D = mx.nd.linalg_makediag(v, dp)
      H.near(flat(mx.nd.linalg_extractdiag(D, dp)), flat(v), 0)
      -- the other entries are zero: the matrix sums equal the vectors' sums
      local sv, sm = 0, 0
      for _, x in ipairs(flat(v)) do sv = sv + x end
      for _, x in ipairs(flat(M)) do sm = sm + x end
      assert.is_true(math.abs(sv - sm) < 1e-12)
    end
  end)

  it('gives the gradients as the adjoint copies, and sumlogdiag\'s g / A_ii', function()
    local A = mx.nd.array({ { 2, 5 }, { 7, 4 } }, { dtype = 'float64' })
    local y = mx.nd.linalg_extracttrian(A)
    local g = ops.backward('_linalg_extracttrian', {}, { A }, { y },
      { mx.nd.array({ 10, 20, 30 }, { dtype = 'float64' }) })
    H.near(flat(g[1]), { 10, 0, 20, 30 }, 0)
    local s = mx.nd.linalg_sumlogdiag(A)
    local gs = ops.backward('_linalg_sumlogdiag', {}, { A }, { s },
      { mx.nd.array({ 3 }, { dtype = 'float64' }) })
    H.near(flat(gs[1]), { 1.5, 0, 0, 0.75 }, 1e-15)
  end)

  it('stores MXNet\'s names in JSON, round-trips, and has help text', function()
    local s = mx.sym.linalg_maketrian { A = mx.sym.Variable('a'), offset = -2, lower = false,
      name = 'mt' }
    local js = s:tojson()
    assert.truthy(js:find('"op": "_linalg_maketrian"', 1, true))
    assert.truthy(js:find('"offset": "-2"', 1, true))
    assert.truthy(js:find('"lower": "False"', 1, true))
    assert.are.equal(js, mx.sym.load_json(js):tojson())
    local alias = js:gsub('"_linalg_maketrian"', '"linalg_maketrian"')
    assert.are.equal(js, mx.sym.load_json(alias):tojson())
    local _, outs = s:infer_shape { a = { 4, 10 } }
    assert.are.same({ { 4, 6, 6 } }, outs)
    for op, w in pairs { _linalg_extractdiag = 'diagonal', _linalg_makediag = 'diagonal',
      _linalg_extracttrian = 'triangular', _linalg_maketrian = 'triangular',
      _linalg_sumlogdiag = 'logarithms' } do
      assert.truthy(help.op_text(mx, op):find(w, 1, true), op)
    end
    assert.truthy(help.op_text(mx, '_linalg_extracttrian'):find('Only relevant when offset=0', 1,
      true))
  end)

  it('refuses bad shapes, offsets and dtypes, naming op, argument, expected, actual', function()
    local s = mx.sym.linalg_extractdiag { A = mx.sym.Variable('a'), offset = 3, name = 'ed' }
    H.raises(function() s:infer_shape { a = { 2, 3, 3 } } end,
      "_linalg_extractdiag 'ed'", "parameter 'offset'", 'expected |offset| < 3', 'got 3')
    H.raises(function() mx.nd.linalg_extracttrian(mx.nd.ones { 2, 3 }) end,
      '_linalg_extracttrian', "input 'A'", 'expected square matrices', 'got 2 x 3')
    H.raises(function() mx.nd.linalg_sumlogdiag(mx.nd.ones { 3 }) end,
      '_linalg_sumlogdiag', "input 'A'", 'at least 2-D', 'got 1-D')
    H.raises(function() mx.nd.linalg_maketrian(mx.nd.ones { 2, 5 }) end,
      '_linalg_maketrian', "input 'A'", 'expected a last dim m(m+1)/2', 'got 5')
    H.raises(function() mx.nd.linalg_makediag(mx.nd.ones({ 3 }, { dtype = 'int32' })) end,
      '_linalg_makediag', "input 'A'", 'got int32')
    H.raises(function() mx.nd.linalg_makediag(mx.nd.ones { 3 }, { offset = 'x' }) end,
      '_linalg_makediag', "parameter 'offset'")
  end)
end)

describe('namespaces mx.nd.linalg, mx.nd.contrib, mx.sym.linalg, mx.sym.contrib', function()
  it('file _linalg_<x> and _contrib_<x> under linalg.<x> and contrib.<x>', function()
    assert.are.equal(mx.nd._linalg_potrf, mx.nd.linalg.potrf)
    assert.are.equal(mx.nd._linalg_gemm2, mx.nd.linalg.gemm2)
    assert.are.equal(mx.nd._contrib_div_sqrt_dim, mx.nd.contrib.div_sqrt_dim)
    assert.is_nil(mx.nd.linalg.FullyConnected)
    -- a symbol made through a namespace is named after the function it was called by, as
    -- MXNet's front end names it: contrib.MultiBoxPrior -> multiboxprior0, linalg.potrf ->
    -- potrf0 (the underscored name gives _linalg_potrf0)
    mx.name.NameManager():with(function()
      local a = mx.sym.Variable('a')
      assert.are.equal('potrf0', mx.sym.linalg.potrf { A = a }.name)
      assert.are.equal('potrf1', mx.sym.linalg.potrf(a).name)
      assert.are.equal('_linalg_potrf0', mx.sym._linalg_potrf(a).name)
      assert.are.equal('div_sqrt_dim0', mx.sym.contrib.div_sqrt_dim(a, {}).name)
      assert.are.equal('mine', mx.sym.contrib.div_sqrt_dim { data = a, name = 'mine' }.name)
      local js = mx.sym.linalg.extracttrian { A = a }:tojson()
      assert.truthy(js:find('"op": "_linalg_extracttrian",%s*"name": "extracttrian0"'), js)
    end)
    assert.are.equal('p_potrf0', mx.name.Prefix('p_'):with(function()
      return mx.sym.linalg.potrf(mx.sym.Variable('a')).name
    end))
    local ns = require 'luamx.namespaces'
    assert.are.same({ 'linalg', 'potrf' }, { ns.split('_linalg_potrf') })
    assert.is_nil(ns.split('linalg_potrf'))
    assert.is_nil(ns.split('_contrib_'))
    H.near(flat(mx.nd.linalg.makediag(mx.nd.array { 1, 2 })), { 1, 0, 0, 2 }, 0)
  end)
end)

describe('linalg Cholesky and triangular operators', function()
  it('give MXNet\'s documented examples, by name and alias', function()
    local A = mx.nd.array { { 4, 1 }, { 1, 4.25 } }
    local L = mx.nd.linalg_potrf(A)
    H.near(flat(L), { 2, 0, 0.5, 2 }, 1e-6)
    H.near(flat(mx.nd._linalg_potri(L)), { 0.265625, -0.0625, -0.0625, 0.25 }, 1e-6)
    local T = mx.nd.array { { 1, 0 }, { 1, 1 } }
    H.near(flat(mx.nd.linalg_trmm(T, mx.nd.ones { 2, 3 }, { alpha = 2 })),
      { 2, 2, 2, 4, 4, 4 }, 1e-6)
    local B = mx.nd.array { { 2, 2, 2 }, { 4, 4, 4 } }
    H.near(flat(mx.nd.linalg_trsm(T, B, { alpha = 0.5 })), { 1, 1, 1, 1, 1, 1 }, 1e-6)
    local S = mx.nd.array { { 1, 2, 3 }, { 4, 5, 6 } }
    H.near(flat(mx.nd.linalg_syrk(S, { alpha = 1, transpose = false })), { 14, 32, 32, 77 }, 1e-5)
    H.near(flat(mx.nd._linalg_syrk(S, { transpose = true })),
      { 17, 22, 27, 22, 29, 36, 27, 36, 45 }, 1e-5)
  end)

  for _, dt in ipairs { 'float32', 'float64' } do
    local tol = dt == 'float32' and 1e-4 or 1e-10
    it('potrf and potri factor and invert batches, lower and upper (' .. dt .. ')', function()
      math.randomseed(30)
      local n, a = 4, {}
      for b = 1, 3 do
        for _, x in ipairs(spd(n)) do a[#a + 1] = x end
      end
      local A = mx.nd.array(a, { dtype = dt }):reshape { 3, n, n }
      for _, lower in ipairs { true, false } do
        local F = flat(mx.nd.linalg_potrf(A, { lower = lower }))
        local X = flat(mx.nd.linalg_potri(mx.nd.linalg_potrf(A, { lower = lower }),
          { lower = lower }))
        for b = 0, 2 do
          local f = sub(F, b * n * n + 1, n * n)
          H.near(f, tri(f, n, lower), 0) -- the other triangle is zero
          local prod = lower and mm(f, tr(f, n, n), n, n, n) or mm(tr(f, n, n), f, n, n, n)
          H.near(prod, sub(a, b * n * n + 1, n * n), tol * 10)
          local id = mm(sub(a, b * n * n + 1, n * n), sub(X, b * n * n + 1, n * n), n, n, n)
          local want = {}
          for i = 0, n - 1 do
            for j = 0, n - 1 do want[i * n + j + 1] = i == j and 1 or 0 end
          end
          H.near(id, want, tol * 10)
        end
      end
    end)

    it('trmm and trsm match the masked products for every side and transpose (' .. dt .. ')',
      function()
        math.randomseed(31)
        for _, right in ipairs { false, true } do
          for _, trans in ipairs { false, true } do
            for _, lower in ipairs { true, false } do
              local n, m, k = 3, right and 2 or 3, right and 3 or 2
              local a = rand_list(n * n, 0.5, 1.5)
              local b = rand_list(m * k, -1, 1)
              local A = mx.nd.array(a, { dtype = dt }):reshape { 1, n, n }
              local B = mx.nd.array(b, { dtype = dt }):reshape { 1, m, k }
              local p = { rightside = right, transpose = trans, lower = lower, alpha = -1.5 }
              local t = tri(a, n, lower)
              if trans then t = tr(t, n, n) end
              local want = right and mm(b, t, m, n, k) or mm(t, b, n, n, k)
              for i = 1, #want do want[i] = -1.5 * want[i] end
              local C = mx.nd.linalg_trmm(A, B, p)
              H.near(flat(C), want, tol * 10)
              -- trsm undoes trmm: op(T)^-1 (α op(T) B) / α = B
              local back = mx.nd.linalg_trsm(A, C, { rightside = right, transpose = trans,
                lower = lower, alpha = 1 / -1.5 })
              H.near(flat(back), b, tol * 100)
            end
          end
        end
      end)
  end

  it('potrf\'s gradient is MXNet\'s symmetric one: finite differences over symmetric pairs',
    function()
      math.randomseed(32)
      local n = 3
      local a = spd(n)
      local g = rand_list(n * n, -1, 1)
      for _, lower in ipairs { true, false } do
        local A = mx.nd.array(a, { dtype = 'float64' }):reshape { n, n }
        local G = mx.nd.array(g, { dtype = 'float64' }):reshape { n, n }
        local y = mx.nd.linalg_potrf(A, { lower = lower })
        local dA = flat(ops.backward('_linalg_potrf', { lower = lower }, { A }, { y }, { G })[1])
        local function loss(t)
          local f = flat(mx.nd.linalg_potrf(mx.nd.array(t, { dtype = 'float64' }):reshape { n, n },
            { lower = lower }))
          local s = 0
          for i = 1, #f do s = s + f[i] * g[i] end
          return s
        end
        local h = 1e-6
        for i = 0, n - 1 do
          for j = 0, i do
            local p, q = {}, {}
            for e = 1, #a do p[e], q[e] = a[e], a[e] end
            for _, e in ipairs { i * n + j + 1, j * n + i + 1 } do
              p[e] = a[e] + h
              q[e] = a[e] - h
            end
            local fd = (loss(p) - loss(q)) / (2 * h)
            local an = i == j and dA[i * n + i + 1] or dA[i * n + j + 1] + dA[j * n + i + 1]
            assert.is_true(math.abs(fd - an) < 1e-6 + 1e-5 * math.abs(fd),
              ('(%d,%d): finite differences %g, gradient %g'):format(i, j, fd, an))
          end
        end
        H.near(dA, tr(dA, n, n), 1e-12) -- symmetric
      end
    end)

  it('trains trsm in an executor and stores MXNet\'s names in JSON, with help text', function()
    local s = mx.sym.linalg_trsm { A = mx.sym.Variable('a'), B = mx.sym.Variable('b'),
      rightside = true, alpha = 2, name = 'ts' }
    local js = s:tojson()
    assert.truthy(js:find('"op": "_linalg_trsm"', 1, true))
    assert.truthy(js:find('"rightside": "True"', 1, true))
    assert.are.equal(js, mx.sym.load_json(js):tojson())
    local _, outs = s:infer_shape { a = { 2, 3, 3 }, b = { 2, 4, 3 } }
    assert.are.same({ { 2, 4, 3 } }, outs)
    local exe = s:simple_bind { a = { 2, 2 }, b = { 1, 2 }, type_dict = { a = 'float64' } }
    exe.arg_dict.a:set { { 2, 0 }, { 1, 4 } }
    exe.arg_dict.b:set { { 4, 8 } }
    -- X A = 2 B = (8, 16): 4 x2 = 16, 2 x1 + x2 = 8, so X = (2, 4)
    H.near(flat(exe:forward { is_train = true }[1]), { 2, 4 }, 1e-12)
    exe:backward(mx.nd.array({ { 1, 0 } }, { dtype = 'float64' }))
    -- dB = 2 G A^-T = 2 (0.5, -0.125) = (1, -0.25); dA = -(1/2) Cᵀ dB = -Cᵀ G A^-T,
    -- [[-1, 0.25], [-2, 0.5]], masked to the lower triangle
    H.near(flat(exe.grad_dict.b), { 1, -0.25 }, 1e-12)
    H.near(flat(exe.grad_dict.a), { -1, 0, -2, 0.5 }, 1e-12)
    for op, w in pairs { _linalg_potrf = 'Cholesky factorization', _linalg_potri = 'inversion',
      _linalg_trmm = 'triangular matrix', _linalg_trsm = 'Solves matrix equation',
      _linalg_syrk = 'transpose' } do
      local text = help.op_text(mx, op)
      assert.truthy(text:find(w, 1, true), op)
    end
    assert.truthy(help.op_text(mx, '_linalg_trsm'):find('rightside', 1, true))
  end)

  it('refuses bad inputs, naming op, argument, expected, actual; arrays stay usable', function()
    local A = mx.nd.array { { 1, 2 }, { 2, 1 } } -- symmetric, not positive definite
    H.raises(function() mx.nd.linalg_potrf(A) end, '_linalg_potrf', "input 'A'",
      'expected symmetric positive-definite', 'got matrix 0')
    H.near(flat(A), { 1, 2, 2, 1 }, 0)
    H.raises(function() mx.nd.linalg_potri(mx.nd.zeros { 2, 2 }) end, '_linalg_potri',
      "input 'A'", 'non-zero diagonal', 'got factor 0')
    H.raises(function() mx.nd.linalg_potrf(mx.nd.ones { 2, 3 }) end, '_linalg_potrf',
      "input 'A'", 'expected square matrices', 'got 2 x 3')
    H.raises(function() mx.nd.linalg_trmm(mx.nd.ones { 2, 2 }, mx.nd.ones { 3, 2 }) end,
      '_linalg_trmm', "input 'B'", 'expected 2 rows', 'got 3')
    H.raises(function()
      mx.nd.linalg_trsm(mx.nd.ones { 2, 2 }, mx.nd.ones { 2, 3 }, { rightside = true })
    end, '_linalg_trsm', "input 'B'", 'expected 2 columns', 'got 3')
    H.raises(function() mx.nd.linalg_trsm(mx.nd.ones { 2, 2, 2 }, mx.nd.ones { 3, 2, 2 }) end,
      '_linalg_trsm', "input 'B'", 'expected dim 0 to be 2', 'got 3')
    H.raises(function() mx.nd.linalg_syrk(mx.nd.ones({ 2, 2 }, { dtype = 'int32' })) end,
      '_linalg_syrk', "input 'A'", 'got int32')
    H.raises(function() mx.nd.linalg_syrk(mx.nd.ones { 2 }) end, '_linalg_syrk', "input 'A'",
      'at least 2-D', 'got 1-D')
  end)
end)

describe('linalg inverse, det and slogdet', function()
  it('give MXNet\'s documented examples, by name and alias', function()
    local A = mx.nd.array { { 1, 4 }, { 2, 3 } }
    H.near(flat(mx.nd.linalg_inverse(A)), { -0.6, 0.8, 0.4, -0.2 }, 1e-6)
    H.near(flat(mx.nd._linalg_det(A)), { -5 }, 1e-5)
    local r = mx.nd.linalg_slogdet(mx.nd.array { { 2, 3 }, { 1, 4 } })
    H.near(flat(r[1]), { 1 }, 0)
    H.near(flat(r[2]), { 1.609438 }, 1e-6)
    assert.are.equal(mx.nd._linalg_slogdet, mx.nd.linalg.slogdet)
  end)

  for _, dt in ipairs { 'float32', 'float64' } do
    local tol = dt == 'float32' and 1e-4 or 1e-10
    it('inverts and takes determinants of batches against Lua (' .. dt .. ')', function()
      math.randomseed(60)
      local n, B = 3, 4
      local a = rand_list(B * n * n, -1, 1)
      for b = 0, B - 1 do -- keep them well conditioned: add 2 I
        for i = 0, n - 1 do a[b * n * n + i * n + i + 1] = a[b * n * n + i * n + i + 1] + 2 end
      end
      -- one negative determinant: swap two rows of matrix 1
      for j = 1, n do
        local k0, k1 = n * n + j, n * n + n + j
        a[k0], a[k1] = a[k1], a[k0]
      end
      local A = mx.nd.array(a, { dtype = dt }):reshape { B, n, n }
      local X = flat(mx.nd.linalg_inverse(A))
      local d = flat(mx.nd.linalg_det(A))
      local sl = mx.nd.linalg_slogdet(A)
      local sg, la = flat(sl[1]), flat(sl[2])
      for b = 0, B - 1 do
        local m = sub(a, b * n * n + 1, n * n)
        local want = {}
        for i = 0, n - 1 do
          for j = 0, n - 1 do want[i * n + j + 1] = i == j and 1 or 0 end
        end
        H.near(mm(m, sub(X, b * n * n + 1, n * n), n, n, n), want, tol * 10)
        local det = m[1] * (m[5] * m[9] - m[6] * m[8]) - m[2] * (m[4] * m[9] - m[6] * m[7])
          + m[3] * (m[4] * m[8] - m[5] * m[7])
        assert.is_true(math.abs(d[b + 1] - det) < tol * 10 * math.abs(det),
          ('det %g, Lua %g'):format(d[b + 1], det))
        assert.are.equal(det < 0 and -1 or 1, sg[b + 1])
        assert.is_true(math.abs(la[b + 1] - math.log(math.abs(det))) < tol * 10)
      end
      assert.are.equal(-1, sg[2])
    end)
  end

  it('gives singular matrices det 0, slogdet (0, -inf), zero gradients; inverse refuses',
    function()
    local A = mx.nd.array({ { { 1, 2 }, { 2, 4 } }, { { 2, 0 }, { 0, 3 } } },
      { dtype = 'float64' })
    local d = mx.nd.linalg_det(A)
    H.near(flat(d), { 0, 6 }, 1e-12)
    local sl = ops.forward_all('_linalg_slogdet', {}, { A }, true)
    assert.are.same({ 0, 1 }, flat(sl[1]))
    assert.are.equal(-math.huge, flat(sl[2])[1])
    local G = mx.nd.array({ 1, 1 }, { dtype = 'float64' })
    local gd = flat(ops.backward('_linalg_det', {}, { A }, { d }, { G })[1])
    -- matrix 0: zero; matrix 1: det · A^-T = 6 · diag(1/2, 1/3) = diag(3, 2)
    H.near(gd, { 0, 0, 0, 0, 3, 0, 0, 2 }, 1e-12)
    local gs = flat(ops.backward('_linalg_slogdet', {}, { A }, sl, { G, G })[1])
    H.near(gs, { 0, 0, 0, 0, 0.5, 0, 0, 1 / 3 }, 1e-12)
    H.raises(function() mx.nd.linalg_inverse(A) end, '_linalg_inverse', "input 'A'",
      'expected invertible matrices', 'got matrix 0 that is singular')
    H.raises(function() mx.nd.linalg_det(mx.nd.ones { 2, 3 }) end, '_linalg_det',
      "input 'A'", 'expected square matrices', 'got 2 x 3')
    H.raises(function() mx.nd.linalg_slogdet(mx.nd.ones({ 2, 2 }, { dtype = 'int32' })) end,
      '_linalg_slogdet', "input 'A'", 'got int32')
    local s = mx.sym.linalg_slogdet { A = mx.sym.Variable('a'), name = 'sl' }
    assert.are.same({ 'sl_sign', 'sl_logabsdet' }, s:list_outputs())
    local js = s:tojson()
    assert.truthy(js:find('"op": "_linalg_slogdet"', 1, true))
    assert.are.equal(js, mx.sym.load_json(js):tojson())
    local _, outs = s:infer_shape { a = { 2, 5, 4, 4 } }
    assert.are.same({ { 2, 5 }, { 2, 5 } }, outs)
    for op, w in pairs { _linalg_inverse = 'inverse of a matrix', _linalg_det = 'determinant',
      _linalg_slogdet = 'sign and log' } do
      assert.truthy(help.op_text(mx, op):find(w, 1, true), op)
    end
  end)
end)

describe('linalg operators on gpu(0)', function()
  if mx.context.num_gpus() == 0 then
    pending('no GPU context (mx.context.num_gpus() == 0): GPU checks skipped')
    return
  end
  local gpu = mx.gpu(0)
  local CASES = {
    { '_linalg_extractdiag', { offset = -1 }, { 2, 4, 4 } },
    { '_linalg_makediag', { offset = 2 }, { 3, 5 } },
    { '_linalg_extracttrian', { offset = 1 }, { 2, 4, 4 } },
    { '_linalg_extracttrian', { lower = false }, { 3, 3 } },
    { '_linalg_maketrian', { offset = -1 }, { 2, 6 } },
    { '_linalg_maketrian', { lower = false }, { 10 } },
    { '_linalg_sumlogdiag', {}, { 2, 3, 3 } },
  }
  for _, cs in ipairs(CASES) do
    local op, p, shape = cs[1], cs[2], cs[3]
    for _, dt in ipairs { 'float32', 'float64' } do
      it(op .. ' agrees with the CPU, forward and backward (' .. dt .. ')', function()
        math.randomseed(#op)
        local n = 1
        for _, d in ipairs(shape) do n = n * d end
        local Ac = mx.nd.array(rand_list(n, 0.5, 2), { dtype = dt }):reshape(shape)
        local Ag = Ac:copyto(gpu)
        local args = function(A)
          local t = { A = A }
          for k, v in pairs(p) do t[k] = v end
          return t
        end
        local yc, yg = mx.nd[op](args(Ac)), mx.nd[op](args(Ag))
        H.near(flat(yg:copyto(mx.cpu())), flat(yc), dt == 'float32' and 1e-6 or 1e-14)
        local m = 1
        for _, d in ipairs(yc.shape) do m = m * d end
        local Gc = mx.nd.array(rand_list(m, -1, 1), { dtype = dt }):reshape(yc.shape)
        local gc = ops.backward(op, p, { Ac }, { yc }, { Gc })
        local gg = ops.backward(op, p, { Ag }, { yg }, { Gc:copyto(gpu) })
        H.near(flat(gg[1]:copyto(mx.cpu())), flat(gc[1]), dt == 'float32' and 1e-6 or 1e-14)
      end)
    end
  end

  -- potrf / potri / trmm / trsm / syrk: well-conditioned inputs, every flag combination
  local function spd_batch(b, n)
    local t = {}
    for _ = 1, b do
      for _, x in ipairs(spd(n)) do t[#t + 1] = x end
    end
    return t
  end
  for _, dt in ipairs { 'float32', 'float64' } do
    local tol = dt == 'float32' and 2e-4 or 1e-10
    local function both(t, shape)
      local a = mx.nd.array(t, { dtype = dt }):reshape(shape)
      return a, a:copyto(gpu)
    end
    local function call(op, x, p)
      local t = { A = x[1], B = x[2] }
      for k, v in pairs(p) do t[k] = v end
      return mx.nd[op](t)
    end
    local function agree(op, p, xc, xg, oshape)
      local yc, yg = call(op, xc, p), call(op, xg, p)
      H.near(flat(yg:copyto(mx.cpu())), flat(yc), tol)
      local n = 1
      for _, d in ipairs(oshape or yc.shape) do n = n * d end
      local Gc, Gg = both(rand_list(n, -1, 1), yc.shape)
      local gc = ops.backward(op, p, xc, { yc }, { Gc })
      local gg = ops.backward(op, p, xg, { yg }, { Gg })
      for i = 1, #xc do H.near(flat(gg[i]:copyto(mx.cpu())), flat(gc[i]), tol * 10) end
    end
    it('potrf and potri agree with the CPU, lower and upper (' .. dt .. ')', function()
      math.randomseed(40)
      local Ac, Ag = both(spd_batch(2, 4), { 2, 4, 4 })
      for _, lower in ipairs { true, false } do
        agree('_linalg_potrf', { lower = lower }, { Ac }, { Ag })
        local Lc = mx.nd.linalg_potrf(Ac, { lower = lower })
        agree('_linalg_potri', { lower = lower }, { Lc }, { Lc:copyto(gpu) })
      end
    end)
    it('trmm, trsm and syrk agree with the CPU for every flag (' .. dt .. ')', function()
      math.randomseed(41)
      for _, right in ipairs { false, true } do
        for _, trans in ipairs { false, true } do
          for _, lower in ipairs { true, false } do
            local Ac, Ag = both(rand_list(2 * 9, 0.5, 1.5), { 2, 3, 3 })
            local shape = right and { 2, 4, 3 } or { 2, 3, 4 }
            local Bc, Bg = both(rand_list(24, -1, 1), shape)
            local p = { rightside = right, transpose = trans, lower = lower, alpha = 0.75 }
            agree('_linalg_trmm', p, { Ac, Bc }, { Ag, Bg })
            agree('_linalg_trsm', p, { Ac, Bc }, { Ag, Bg })
          end
        end
        local Sc, Sg = both(rand_list(24, -1, 1), { 2, 3, 4 })
        agree('_linalg_syrk', { transpose = right, alpha = -1.5 }, { Sc }, { Sg })
      end
    end)
  end

  for _, dt in ipairs { 'float32', 'float64' } do
    it('inverse, det and slogdet agree with the CPU, forward and backward (' .. dt .. ')',
      function()
        math.randomseed(61)
        local n, B = 3, 3
        local a = rand_list(B * n * n, -1, 1)
        for b = 0, B - 1 do
          for i = 0, n - 1 do a[b * n * n + i * n + i + 1] = a[b * n * n + i * n + i + 1] + 2 end
        end
        local tol = dt == 'float32' and 1e-4 or 1e-10
        local Ac = mx.nd.array(a, { dtype = dt }):reshape { B, n, n }
        local Ag = Ac:copyto(gpu)
        for _, op in ipairs { '_linalg_inverse', '_linalg_det', '_linalg_slogdet' } do
          local oc = ops.forward_all(op, {}, { Ac }, true)
          local og = ops.forward_all(op, {}, { Ag }, true)
          local gc, gg = {}, {}
          for i = 1, #oc do
            H.near(flat(og[i]:copyto(mx.cpu())), flat(oc[i]), tol)
            local m = 1
            for _, d in ipairs(oc[i].shape) do m = m * d end
            gc[i] = mx.nd.array(rand_list(m, -1, 1), { dtype = dt }):reshape(oc[i].shape)
            gg[i] = gc[i]:copyto(gpu)
          end
          local dc = ops.backward(op, {}, { Ac }, oc, gc)
          local dg = ops.backward(op, {}, { Ag }, og, gg)
          H.near(flat(dg[1]:copyto(mx.cpu())), flat(dc[1]), tol * 10)
        end
      end)
  end

  it('inverse on the GPU reports a singular matrix', function()
    local A = mx.nd.array({ { { 4, 0 }, { 0, 1 } }, { { 1, 2 }, { 2, 4 } } }):copyto(gpu)
    H.raises(function() mx.nd.linalg_inverse(A):copyto(mx.cpu()) end, '_linalg_inverse',
      "input 'A'", 'expected invertible matrices', 'got matrix 1 that is singular')
  end)

  it('potrf on the GPU reports a matrix that is not positive definite', function()
    local A = mx.nd.array({ { { 4, 0 }, { 0, 1 } }, { { 1, 2 }, { 2, 1 } } }):copyto(gpu)
    H.raises(function() mx.nd.linalg_potrf(A):copyto(mx.cpu()) end, '_linalg_potrf',
      "input 'A'", 'expected symmetric positive-definite', 'got matrix 1')
  end)
end)
