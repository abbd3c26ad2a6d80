-- float32 FullyConnected forward at batch 1 (and a few rows with large weights) on the
-- CPU: luamx's streaming dot products (kernels/cpu/gemv.c, AVX-512F or AVX2) against the
-- sgemm path (mx.runtime.fc_force_blas) and a float64 reference, on random shapes: k
-- below, at and past multiples of 16, rows not multiples of the kernel's blocks, m from 1
-- to 9, with and without bias; an executor's batch-1 forward on both paths; the switch,
-- the report in mx.runtime.features() and the switch's errors. Tolerance: twice float32's
-- summation bound, (k + 2) * 2^-24 of the sum of |terms|, as tests/test_gemv.c (which
-- also checks req add, the AVX2 kernel on AVX-512 machines and thread-count independence).
local mx = require 'luamx'
local H = require 'helpers'

local seed = 11
local function rnd()
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed / 2147483648 * 2 - 1
end

local function rand_list(n)
  local t = {}
  for i = 1, n do t[i] = rnd() end
  return t
end

-- y[r][c] against float64 sums of the same float32 values
local function check_ref(y, x, w, b, m, k, n, what)
  for r = 0, m - 1 do
    for c = 0, n - 1 do
      local ref, mag = 0, 0
      for p = 0, k - 1 do
        local t = x[r * k + p + 1] * w[c * k + p + 1]
        ref, mag = ref + t, mag + math.abs(t)
      end
      if b then ref, mag = ref + b[c + 1], mag + math.abs(b[c + 1]) end
      local tol = 2 * (k + 2) * 2 ^ -24 * mag + 2 ^ -126
      local got = y[r * n + c + 1]
      if not (math.abs(got - ref) <= tol) then
        error(('%s: y[%d][%d] = %.9g, float64 reference %.9g (tolerance %.3g)'):format(
          what, r, c, got, ref, tol))
      end
    end
  end
end

describe('float32 FullyConnected at batch 1', function()
  local f = mx.runtime.features()
  local best = f.isa.avx512f and 'avx512f' or (f.isa.avx2 and f.isa.fma) and 'avx2' or 'blas'
  after_each(function() mx.runtime.fc_force_blas(false) end)

  it('reports its kernel, and the switch forces the sgemm and back', function()
    assert.are.equal(best, f.kernels.fc_small)
    assert.is_truthy(tostring(f):find('float32 FullyConnected at batch 1: ' .. best, 1, true))
    assert.are.equal('blas', mx.runtime.fc_force_blas(true))
    assert.are.equal('blas', mx.runtime.features().kernels.fc_small)
    assert.are.equal(best, mx.runtime.fc_force_blas(false))
    assert.are.equal(best, mx.runtime.features().kernels.fc_small)
  end)

  it('rejects a switch that is not a boolean, naming the function and the argument', function()
    H.raises(function() mx.runtime.fc_force_blas(1) end,
      'mx.runtime.fc_force_blas', 'argument 1', 'expected a boolean', 'got number')
    H.raises(function() mx.runtime.fc_force_blas() end,
      'mx.runtime.fc_force_blas', 'argument 1', 'expected a boolean', 'got nil')
    assert.are.equal(best, mx.runtime.features().kernels.fc_small) -- unchanged
  end)

  -- {m, k, n}: m = 1 at every tail of k, then a few rows with m·n·k >= 2^20 (the kernel)
  -- and below it (the sgemm either way)
  local shapes = {{1, 1, 1}, {1, 15, 7}, {1, 16, 16}, {1, 17, 9}, {1, 100, 33},
                  {1, 784, 512}, {1, 512, 10}, {1, 800, 500}, {3, 784, 512},
                  {5, 523, 401}, {9, 333, 350}, {2, 30, 7}}
  for _, s in ipairs(shapes) do
    local m, k, n = s[1], s[2], s[3]
    for _, bias in ipairs{true, false} do
      it(('agrees with the sgemm and float64: m=%d k=%d n=%d bias=%s'):format(m, k, n,
          tostring(bias)), function()
        local xl, wl = rand_list(m * k), rand_list(n * k)
        local bl = bias and rand_list(n) or nil
        local x = mx.nd.array(xl):reshape{m, k}
        local w = mx.nd.array(wl):reshape{n, k}
        -- the float32 values the kernels see
        local xf, wf = x:toflat(), w:toflat()
        local params = {num_hidden = n, no_bias = not bias}
        local args = bias and {x, w, mx.nd.array(bl), params} or {x, w, params}
        local bf = bias and args[3]:toflat() or nil
        local fast = mx.nd.FullyConnected(unpack(args))
        assert.are.same({m, n}, fast.shape)
        mx.runtime.fc_force_blas(true)
        local slow = mx.nd.FullyConnected(unpack(args))
        mx.runtime.fc_force_blas(false)
        check_ref(fast:toflat(), xf, wf, bf, m, k, n, 'kernel ' .. best)
        check_ref(slow:toflat(), xf, wf, bf, m, k, n, 'sgemm')
      end)
    end
  end

  it('runs an executor\'s batch-1 forward of an MLP like the sgemm does', function()
    local net = mx.sym.Variable('data')
    net = mx.sym.FullyConnected(net, {num_hidden = 512, name = 'fc1'})
    net = mx.sym.Activation(net, {act_type = 'relu'})
    net = mx.sym.FullyConnected(net, {num_hidden = 10, name = 'fc2'})
    local exe = net:simple_bind{ctx = mx.cpu(), data = {1, 784}, grad_req = 'null'}
    for name, a in pairs(exe.arg_dict) do
      a:set(mx.nd.array(rand_list(a.size)):reshape(a.shape))
      assert.is_truthy(name)
    end
    exe:forward{is_train = false}
    local fast = exe.outputs[1]:toflat()
    mx.runtime.fc_force_blas(true)
    exe:forward{is_train = false}
    local slow = exe.outputs[1]:toflat()
    assert.are.equal(10, #fast)
    for i = 1, 10 do
      -- both within summation error of the same sums: 512 + 784 terms of size <= 1 each
      assert.is_true(math.abs(fast[i] - slow[i]) <= 4 * 800 * 2 ^ -24 * 512,
        ('output %d: kernel %.9g, sgemm %.9g'):format(i, fast[i], slow[i]))
    end
  end)
end)
