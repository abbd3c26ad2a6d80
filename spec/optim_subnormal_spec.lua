-- spec/optim_subnormal_spec.lua — the optimizers' updates flush subnormal numbers to zero
-- (kernels/cpu/cpu_par.h, LMX_PAR_FOR_FTZ: a momentum decaying through the subnormal
-- range made W1's updates 4x slower), on the serial and the parallel path, in float32 and
-- float64, and leave every other kernel's arithmetic as it was (the mode is restored).
local mx = require 'luamx'

local TINY32, TINY64 = 1e-39, 1e-310 -- subnormal in float32 / float64
local BIG = 300000 -- past LMX_OMP_MIN (262144): the update runs on every thread

local function full(n, v, dt) return mx.nd.ones({n}, {dtype = dt or "float32"}) * v end

describe('optimizer updates and subnormal numbers', function()
  it('sgd_mom_update: a subnormal momentum with a zero gradient becomes 0', function()
    for _, n in ipairs{3, BIG} do
      local w, g, m = full(n, 1), full(n, 0), full(n, TINY32)
      assert.is_true(m:toflat()[1] > 0, 'the test value is not subnormal in float32')
      mx.nd.sgd_mom_update{weight = w, grad = g, mom = m, lr = 0.1, momentum = 0.9, out = w}
      local mf, wf = m:toflat(), w:toflat()
      for _, i in ipairs{1, math.floor(n / 2) + 1, n} do -- both threads' halves on the parallel path
        assert.are.equal(0, mf[i], ('momentum element %d of %d'):format(i, n))
        assert.are.equal(1, wf[i])
      end
    end
  end)

  it('adam_update and float64: subnormal moments become 0', function()
    local w, g, mean, var = full(4, 1), full(4, 0), full(4, TINY32), full(4, TINY32)
    mx.nd.adam_update{weight = w, grad = g, mean = mean, var = var, lr = 0.01, out = w}
    assert.are.same({0, 0, 0, 0}, mean:toflat())
    assert.are.same({0, 0, 0, 0}, var:toflat())
    local w64, m64 = full(2, 1, 'float64'), full(2, TINY64, 'float64')
    assert.is_true(m64:toflat()[1] > 0)
    mx.nd.sgd_mom_update{weight = w64, grad = full(2, 0, 'float64'), mom = m64, lr = 0.1,
                         momentum = 0.5, out = w64}
    assert.are.same({0, 0}, m64:toflat())
  end)

  it('keeps normal values exact: momentum 0.5 of 2^-100 is 2^-101', function()
    local w, m = full(2, 1), full(2, 2 ^ -100)
    mx.nd.sgd_mom_update{weight = w, grad = full(2, 0), mom = m, lr = 0.1, momentum = 0.5, out = w}
    assert.are.same({2 ^ -101, 2 ^ -101}, m:toflat())
  end)

  it('restores the mode: other kernels still make subnormals after an update', function()
    for _, n in ipairs{3, BIG} do
      local w, m = full(n, 1), full(n, TINY32)
      mx.nd.sgd_mom_update{weight = w, grad = full(n, 0), mom = m, lr = 0.1, momentum = 0.9,
                           out = w}
      local half = (full(n, TINY32) * 0.5):toflat()
      for _, i in ipairs{1, math.floor(n / 2) + 1, n} do
        assert.is_true(half[i] > 0 and half[i] < 1e-39,
                       ('element %d of %d: %g'):format(i, n, half[i]))
      end
    end
  end)
end)
