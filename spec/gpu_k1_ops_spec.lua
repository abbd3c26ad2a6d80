-- K1's CUDA kernels through the engine on gpu(0) (the simulator in CI, a real GPU where
-- present): error messages of the CUDA glue, Philox draws repeating under mx.random.seed,
-- float16 conversions bit-equal to the CPU's, deterministic reductions, float16
-- elementwise and broadcast ops against the CPU's float32 on the same rounded inputs,
-- optimizer updates. Every op's forward/backward agreement is spec/gpu_ops_spec.lua's
-- (and test_gradcheck --agree). Skips with a message when there is no GPU context.
local mx = require 'luamx'
local H = require 'helpers'

describe('K1 kernels on gpu(0)', function()
  if mx.context.num_gpus() == 0 then
    pending('no GPU context (mx.context.num_gpus() == 0): K1 GPU kernel specs skipped')
    return
  end
  local gpu = mx.gpu(0)

  local function on(ctx, t, dtype) return mx.nd.array(t, {ctx = ctx, dtype = dtype}) end

  it('names op, argument, device and dtypes in errors', function()
    H.raises(function() mx.nd.exp(mx.nd.ones({2}, {ctx = gpu, dtype = 'int32'})) end,
      "exp: input 'data': expected float32, float64 or float16 on the GPU, got int32")
    H.raises(function() mx.nd.sum(mx.nd.ones({2}, {ctx = gpu, dtype = 'int8'})) end,
      "sum: input 'data': expected float32, float64 or float16 on the GPU, got int8")
    H.raises(function()
      mx.nd.broadcast_add(mx.nd.ones({2, 3}, {ctx = gpu}), mx.nd.ones({4}, {ctx = gpu}))
    end, 'broadcast_add')
  end)

  it('draws the same Philox numbers after the same seed, fresh ones after', function()
    mx.random.seed(7)
    local a = mx.nd.random.uniform(-1, 2, {3, 5}, {ctx = gpu}):toflat()
    local b = mx.nd.random.uniform(-1, 2, {3, 5}, {ctx = gpu}):toflat()
    mx.random.seed(7)
    local a2 = mx.nd.random.uniform(-1, 2, {3, 5}, {ctx = gpu}):toflat()
    assert.are.same(a, a2)
    local same = 0
    for i = 1, #a do
      assert.is_true(a[i] >= -1 and a[i] < 2)
      if a[i] == b[i] then same = same + 1 end
    end
    assert.is_true(same < 2, 'consecutive draws repeat')
    mx.random.seed(7)
    local z = mx.nd.random.normal(1, 2, {4096}, {ctx = gpu, dtype = 'float64'}):toflat()
    local m, v = 0, 0
    for i = 1, #z do m = m + z[i] end
    m = m / #z
    for i = 1, #z do v = v + (z[i] - m) ^ 2 end
    v = v / #z
    assert.is_true(math.abs(m - 1) < 0.15 and math.abs(v - 4) < 0.4, ('mean %g var %g'):format(m, v))
  end)

  it('converts to and from float16 exactly as the CPU does', function()
    local vals = {0, -0.0, 1 / 3, 65504, 65520, 1e-8, 6e-8, -2.5, 1e30, 0.1, 2049, 4097}
    local c = on(mx.cpu(), vals):astype('float16'):astype('float64'):toflat()
    local g = on(gpu, vals):astype('float16'):astype('float64'):toflat()
    assert.are.same(c, g)
    local ic = on(mx.cpu(), {-3.7, 300, 1e10, -1e10}):astype('int8'):toflat()
    local ig = on(gpu, {-3.7, 300, 1e10, -1e10}):astype('int8'):toflat()
    assert.are.same(ic, ig)
  end)

  it('reduces deterministically and agrees with the CPU', function()
    mx.random.seed(3)
    local x = mx.nd.random.uniform(-1, 1, {37, 1000}, {ctx = mx.cpu()})
    local xg = x:copyto(gpu)
    for _, axis in ipairs {0, 1} do
      local s1 = mx.nd.sum(xg, {axis = axis}):toflat()
      local s2 = mx.nd.sum(xg, {axis = axis}):toflat()
      assert.are.same(s1, s2)
      H.near(s1, mx.nd.sum(x, {axis = axis}):toflat(), 1e-4)
    end
    H.near(mx.nd.max(xg):toflat(), mx.nd.max(x):toflat(), 0)
    H.near(mx.nd.argmin(xg, {axis = 1}):toflat(), mx.nd.argmin(x, {axis = 1}):toflat(), 0)
  end)

  it('computes float16 elementwise and broadcast ops in float', function()
    local a = on(mx.cpu(), {{0.5, -1.25, 3}, {2, 0.1, -7}}):astype('float16')
    local b = on(mx.cpu(), {1.5, 2, -0.75}):astype('float16')
    local ref = mx.nd.broadcast_mul(a:astype('float32'), b:astype('float32'))
    local got = mx.nd.broadcast_mul(a:copyto(gpu), b:copyto(gpu))
    assert.are.equal('float16', got.dtype)
    H.near(got:astype('float32'):toflat(), ref:astype('float16'):astype('float32'):toflat(), 0)
    local e = mx.nd.tanh(a:copyto(gpu)):astype('float32'):toflat()
    H.near(e, mx.nd.tanh(a:astype('float32')):toflat(), 2e-3)
  end)

  it('updates weights with momentum like the CPU, in place', function()
    local w = on(mx.cpu(), {1, -2, 3, 0.5})
    local g = on(mx.cpu(), {0.1, 0.2, -0.3, 4})
    local m = on(mx.cpu(), {0, 0.1, 0, -0.2})
    local wg, gg, mg = w:copyto(gpu), g:copyto(gpu), m:copyto(gpu)
    local function upd(w_, g_, m_)
      mx.nd.sgd_mom_update {weight = w_, grad = g_, mom = m_, lr = 0.1, momentum = 0.9,
        wd = 0.01, rescale_grad = 0.5, clip_gradient = 1, out = w_}
    end
    upd(w, g, m)
    upd(wg, gg, mg)
    assert.is_true(math.abs(w:toflat()[1] - 1) > 1e-3, 'the update changed nothing')
    H.near(wg:toflat(), w:toflat(), 1e-6)
    H.near(mg:toflat(), m:toflat(), 1e-6)
  end)
end)
