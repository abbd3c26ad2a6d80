-- The float32 GEMM library choice (kernels/cpu/gemm_route.c): the rule as a plain
-- function (shape, threads, mode, oneDNN's presence in; library out), the mode override
-- (mx.runtime.gemm_mode and LUAMX_GEMM in a fresh process), its errors, and the products
-- on each path against a double-precision loop (forward and both gradients of
-- FullyConnected: the (0,1), (0,0) and (1,0) transposes, with beta = 1 for the bias).
local mx = require 'luamx'
local H = require 'helpers'

local choice = mx.runtime.gemm_choice

describe('mx.runtime.gemm_choice (the rule, a pure function)', function()
  local function c(m, n, k, ta, tb, extra)
    local t = {m = m, n = n, k = k, ta = ta, tb = tb, mode = 'auto', dnnl = true, threads = 1,
               avx512 = true}
    for key, v in pairs(extra or {}) do t[key] = v end
    return choice(t)
  end

  it('sends the workloads\' products with batch 32-128 to oneDNN', function()
    assert.are.equal('dnnl', c(128, 512, 784, false, true))   -- W1 forward
    assert.are.equal('dnnl', c(128, 10, 512, false, true))    -- W1 last layer forward
    assert.are.equal('dnnl', c(512, 784, 128, true, false))   -- W1 weight gradient
    assert.are.equal('dnnl', c(32, 800, 200, false, true))    -- LSTM recurrent product
    assert.are.equal('dnnl', c(20, 25, 36864, false, true))   -- LeNet conv1 weight gradient
  end)

  it('keeps OpenBLAS where it measured faster: tiny k, tiny m, tiny n with small m, huge', function()
    assert.are.equal('openblas', c(128, 512, 10, false, false))  -- k = 10
    assert.are.equal('openblas', c(10, 512, 128, true, false))   -- m = 10
    assert.are.equal('openblas', c(64, 10, 500, false, true))    -- n = 10, m = 64
    assert.are.equal('openblas', c(1120, 10000, 200, false, true)) -- 2.2e9 multiply-adds
    assert.are.equal('dnnl', c(17, 17, 17, false, false))        -- just above the edges
  end)

  it('without AVX-512, keeps OpenBLAS for untransposed B rows of a multiple of 256 floats on one thread', function()
    local no = {avx512 = false}
    assert.are.equal('openblas', c(128, 512, 512, false, false, no))  -- W1 data gradient
    assert.are.equal('openblas', c(512, 512, 128, true, false, no))   -- W1 weight gradient
    assert.are.equal('openblas', c(128, 512, 128, false, false, no))  -- Winograd forward
    assert.are.equal('dnnl', c(128, 512, 512, false, false))          -- with AVX-512
    assert.are.equal('dnnl', c(500, 4096, 50, true, false, no))       -- k < 64
    assert.are.equal('dnnl', c(128, 512, 784, false, true, no))       -- B transposed
    assert.are.equal('dnnl', c(64, 800, 500, false, false, no))       -- 800 rows
    -- split over threads, oneDNN wins those too (ResNet-18's batch-1 im2col products)
    local two = {avx512 = false, threads = 2}
    assert.are.equal('dnnl', c(128, 512, 512, false, false, two))
    assert.are.equal('dnnl', c(512, 512, 128, true, false, two))
    assert.are.equal('dnnl', c(128, 256, 1152, false, false, two))
    assert.are.equal('openblas', c(128, 256, 1152, false, false, no))
  end)

  it('keeps OpenBLAS without oneDNN, for float64 and in mode openblas', function()
    assert.are.equal('openblas', c(128, 512, 784, false, true, {dnnl = false}))
    assert.are.equal('openblas', c(128, 512, 784, false, true, {dtype = 'float64'}))
    assert.are.equal('openblas', c(128, 512, 784, false, true, {mode = 'openblas'}))
  end)

  it('sends every float32 product to oneDNN in mode dnnl, if oneDNN runs', function()
    assert.are.equal('dnnl', c(128, 512, 10, false, false, {mode = 'dnnl'}))
    assert.are.equal('dnnl', c(1120, 10000, 200, false, true, {mode = 'dnnl'}))
    assert.are.equal('openblas', c(128, 512, 10, false, false, {mode = 'dnnl', dnnl = false}))
    assert.are.equal('openblas', c(128, 512, 10, false, false, {mode = 'dnnl', dtype = 'float64'}))
  end)

  it('names the function, the argument, what was expected and what was got', function()
    H.raises(function() choice(3) end, 'mx.runtime.gemm_choice', 'expected a table', 'number')
    H.raises(function() choice{m = 1, n = 2} end, 'mx.runtime.gemm_choice', "field 'k'",
             'integer >= 0', 'nil')
    H.raises(function() choice{m = -1, n = 2, k = 3} end, "field 'm'", '-1')
    H.raises(function() choice{m = 1, n = 2, k = 3, mode = 'mkl'} end, 'lmx_cpu_gemm_choice',
             "argument 'mode'", "'auto', 'openblas' or 'dnnl'", "got 'mkl'")
    H.raises(function() choice{m = 1, n = 2, k = 3, dtype = 'int8'} end, "field 'dtype'", 'int8')
  end)
end)

describe('mx.runtime.gemm_mode', function()
  local before
  setup(function() before = mx.runtime.features().kernels.gemm.mode end)
  teardown(function() mx.runtime.gemm_mode(before) end)

  it('sets the mode that features() reports, and is the default of gemm_choice', function()
    assert.are.equal('openblas', mx.runtime.gemm_mode('openblas'))
    local g = mx.runtime.features().kernels.gemm
    assert.are.equal('openblas', g.mode)
    assert.are.equal('openblas', g.float32)
    assert.truthy(g.source:find('gemm_mode', 1, true), g.source)
    assert.are.equal('openblas', choice{m = 128, n = 512, k = 784, tb = true, dnnl = true})
    assert.are.equal('auto', mx.runtime.gemm_mode('auto'))
    assert.are.equal('dnnl', choice{m = 128, n = 512, k = 784, tb = true, dnnl = true})
    assert.truthy(tostring(mx.runtime.features()):find('GEMM', 1, true))
  end)

  it('rejects an unknown mode and keeps the one in force', function()
    mx.runtime.gemm_mode('auto')
    H.raises(function() mx.runtime.gemm_mode('blis') end, 'lmx_cpu_gemm_set_mode',
             "argument 'mode'", "got 'blis'")
    H.raises(function() mx.runtime.gemm_mode(1) end, 'mx.runtime.gemm_mode', 'argument 1', 'number')
    assert.are.equal('auto', mx.runtime.features().kernels.gemm.mode)
  end)
end)

-- FullyConnected forward and backward against a double-precision loop, at shapes each
-- library gets in auto mode, in every mode.
local function fc_check(N, K, M)
  math.randomseed(N * 7 + K * 3 + M)
  local function rand(n)
    local t = {}
    for i = 1, n do t[i] = math.random() - 0.5 end
    return t
  end
  local x, w, b, og = rand(N * K), rand(M * K), rand(M), rand(N * M)
  local X, W = mx.nd.array(x):reshape{N, K}, mx.nd.array(w):reshape{M, K}
  local B, OG = mx.nd.array(b), mx.nd.array(og):reshape{N, M}
  X:attach_grad()
  W:attach_grad()
  local y = mx.autograd.record(function()
    return mx.nd.FullyConnected{data = X, weight = W, bias = B, num_hidden = M}
  end)
  y:backward(OG)
  local ry, rgx, rgw = {}, {}, {}
  for n = 0, N - 1 do
    for m = 0, M - 1 do
      local s = b[m + 1]
      for k = 0, K - 1 do s = s + x[n * K + k + 1] * w[m * K + k + 1] end
      ry[n * M + m + 1] = s
    end
    for k = 0, K - 1 do
      local s = 0
      for m = 0, M - 1 do s = s + og[n * M + m + 1] * w[m * K + k + 1] end
      rgx[n * K + k + 1] = s
    end
  end
  for m = 0, M - 1 do
    for k = 0, K - 1 do
      local s = 0
      for n = 0, N - 1 do s = s + og[n * M + m + 1] * x[n * K + k + 1] end
      rgw[m * K + k + 1] = s
    end
  end
  H.near(y:toflat(), ry, 2e-5)
  H.near(X.grad:toflat(), rgx, 2e-5)
  H.near(W.grad:toflat(), rgw, 2e-5)
end

describe('float32 products on each path', function()
  local before
  setup(function() before = mx.runtime.features().kernels.gemm.mode end)
  teardown(function() mx.runtime.gemm_mode(before) end)
  for _, mode in ipairs{'openblas', 'dnnl', 'auto'} do
    it('FullyConnected forward and gradients match a double loop in mode ' .. mode, function()
      if mode ~= 'openblas' and not mx.runtime.features().kernels.gemm.dnnl then
        pending('oneDNN does not run here: ' .. mx.runtime.features().kernels.gemm.dnnl_status)
        return
      end
      mx.runtime.gemm_mode(mode)
      fc_check(64, 100, 48)  -- oneDNN in auto mode
      fc_check(40, 12, 30)   -- k = 12: OpenBLAS in auto mode
      fc_check(64, 40, 10)   -- n = 10
      fc_check(64, 100, 48)  -- again: the cached primitive
    end)
  end
end)

-- A fresh process reads LUAMX_GEMM.
local function child(env)
  local script = [[
    local g = require('luamx').runtime.features().kernels.gemm
    io.write(g.mode, '|', g.source)
  ]]
  local p = io.popen(('env %s luajit -e %q 2>&1'):format(env, script))
  local out = p:read('*a')
  p:close()
  local mode, source = out:match('^(%S+)|(.*)$')
  assert.truthy(mode, out)
  return mode, source
end

describe('LUAMX_GEMM in a fresh process', function()
  it('forces a mode, and an unknown value leaves auto and says so', function()
    local mode, source = child('LUAMX_GEMM=openblas')
    assert.are.equal('openblas', mode)
    assert.are.equal('LUAMX_GEMM', source)
    mode, source = child('LUAMX_GEMM=dnnl')
    assert.are.equal('dnnl', mode)
    -- a sanitizer build (ctest preloads ASan) keeps OpenBLAS unless asked (gemm_route.c)
    local default = (os.getenv('LD_PRELOAD') or ''):find('asan', 1, true) and 'openblas' or 'auto'
    mode, source = child('LUAMX_GEMM=mkl')
    assert.are.equal(default, mode)
    assert.truthy(source:find('not understood', 1, true), source)
    mode, source = child('-u LUAMX_GEMM')
    assert.are.equal(default, mode)
    assert.truthy(source:find('unset', 1, true), source)
  end)

  it('runs every product on OpenBLAS, correctly, when oneDNN cannot be loaded', function()
    local script = [[
      package.path = ']] .. package.path .. [[' .. ';' .. package.path
      local mx = require 'luamx'
      local g = mx.runtime.features().kernels.gemm
      local a = mx.nd.array{{1, 2, 3}, {4, 5, 6}}
      local d = mx.nd.dot(a, a:transpose()):toflat()
      io.write(tostring(g.dnnl), '|', g.float32, '|', table.concat(d, ','), '|', g.dnnl_status)
    ]]
    local p = io.popen(('env LUAMX_GEMM=dnnl LUAMX_DNNL_LIB=/nonexistent/libdnnl.so.2 luajit -e %q 2>&1')
      :format(script))
    local out = p:read('*a')
    p:close()
    local dnnl, f32, d, status = out:match('^(%S+)|(%S+)|(%S+)|(.*)$')
    assert.are.equal('false', dnnl, out)
    assert.are.equal('openblas', f32)
    assert.are.equal('14,32,32,77', d)
    assert.truthy(status:find('/nonexistent/libdnnl.so.2 could not be loaded', 1, true), status)
  end)
end)
