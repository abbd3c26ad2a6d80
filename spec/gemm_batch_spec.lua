-- Strided batched products (kernels/cpu/gemm_batch.c) through _linalg_gemm2: a batch of
-- small products (below the size gemm.c runs on one thread) goes over the OpenMP threads,
-- one product per thread at a time, when no parallel region is open. Checked against a
-- double loop, with either transpose, and against the same products taken one at a time
-- (bit for bit: each product is computed whole by one thread either way). Also the Winograd
-- convolution's products at batch 1 (one chunk, its 36 products split the same way)
-- against im2col + GEMM.
local mx = require 'luamx'
local H = require 'helpers'

local rand = H.uniform

-- C[b] = alpha op(A[b]) op(B[b]), row-major, by loops
local function ref(a, b, nb, m, n, k, ta, tb, alpha)
  local c = {}
  for q = 0, nb - 1 do
    for i = 0, m - 1 do
      for j = 0, n - 1 do
        local s = 0
        for l = 0, k - 1 do
          local av = ta and a[q * m * k + l * m + i + 1] or a[q * m * k + i * k + l + 1]
          local bv = tb and b[q * k * n + j * k + l + 1] or b[q * k * n + l * n + j + 1]
          s = s + av * bv
        end
        c[q * m * n + i * n + j + 1] = alpha * s
      end
    end
  end
  return c
end

describe('batched products (linalg_gemm2) split over the threads', function()
  local nb, m, n, k = 24, 40, 36, 48 -- 69k multiply-adds each, 1.7M in all
  for _, tt in ipairs{{false, false}, {true, false}, {false, true}} do
    local ta, tb = tt[1], tt[2]
    it(('match a double loop and the products one by one (transpose_a %s, transpose_b %s)')
      :format(tostring(ta), tostring(tb)), function()
      local a, b = rand(nb * m * k, 11), rand(nb * k * n, 12)
      local A = mx.nd.array(a):reshape(ta and {nb, k, m} or {nb, m, k})
      local B = mx.nd.array(b):reshape(tb and {nb, n, k} or {nb, k, n})
      local y = mx.nd.linalg_gemm2{A = A, B = B, transpose_a = ta, transpose_b = tb, alpha = 0.5}
      assert.are.same({nb, m, n}, y.shape)
      H.near(y:toflat(), ref(a, b, nb, m, n, k, ta, tb, 0.5), 1e-5)
      local flat = y:toflat()
      for q = 0, nb - 1, 7 do
        local one = mx.nd.linalg_gemm2{A = A[q + 1]:reshape(ta and {1, k, m} or {1, m, k}),
                                       B = B[q + 1]:reshape(tb and {1, n, k} or {1, k, n}),
                                       transpose_a = ta, transpose_b = tb, alpha = 0.5}:toflat()
        for i = 1, m * n do
          assert.are.equal(flat[q * m * n + i], one[i], 'product ' .. q .. ' element ' .. i)
        end
      end
    end)
  end

  it('Winograd at batch 1 (one chunk) agrees with im2col + GEMM', function()
    local before = mx.runtime.features().kernels.conv.algo
    finally(function() mx.runtime.conv_algo(before) end)
    local x = mx.nd.array(rand(64 * 16 * 16, 13)):reshape{1, 64, 16, 16}
    local w = mx.nd.array(rand(64 * 64 * 9, 14)):reshape{64, 64, 3, 3}
    local function conv()
      return mx.nd.Convolution{data = x, weight = w, kernel = {3, 3}, num_filter = 64,
                               pad = {1, 1}, no_bias = true}:toflat()
    end
    mx.runtime.conv_algo('gemm')
    local g = conv()
    for _, algo in ipairs{'winograd2', 'winograd4'} do
      mx.runtime.conv_algo(algo)
      H.near(conv(), g, 5e-5)
    end
  end)
end)
