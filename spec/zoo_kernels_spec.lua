-- The model zoo's fast CPU paths in float32 against the same computation in float64
-- (whose gradients test_gradcheck checks against finite differences): BatchNorm's
-- vectorised statistics and gradients (long planes by rows, lanes flushed across rows and
-- inside a row; planes under 128 by blocks of channels; data far from zero, req add), the
-- direct depthwise convolution (MobileNet's 3x3 stride 1 and
-- 2 through the register path and the phase plane, dilation, the tap-by-tap path for other
-- kernels and oversized strided planes, the row-accumulator and the wide-row weight
-- gradient paths, several filters per channel), and clip (ReLU6) forward and gradient. Each runs forward and backward through
-- luamx.ndarray_ops with req write and req add.
local mx = require 'luamx'
local ops = require 'luamx.ndarray_ops'

describe('zoo kernels: float32 agrees with float64', function()
  math.randomseed(14)

  local function size(shape)
    local n = 1
    for _, d in ipairs(shape) do n = n * d end
    return n
  end
  local function rand(shape, lo, hi)
    lo, hi = lo or -1, hi or 1
    local v = {}
    for i = 1, size(shape) do v[i] = lo + (hi - lo) * math.random() end
    return v
  end
  local function arr(v, shape, dtype) return mx.nd.array(v, {dtype = dtype}):reshape(shape) end
  local function flat(a) return a:astype('float64'):toflat() end
  -- |a - b| <= tol * (scale of the array) elementwise: float32 rounding of long sums
  local function close(what, a, b, tol)
    assert.are.equal(#a, #b, what .. ': sizes')
    local scale = 0
    for i = 1, #b do scale = math.max(scale, math.abs(b[i])) end
    for i = 1, #a do
      local ok = math.abs(a[i] - b[i]) <= tol * (1 + scale)
      assert(ok, ('%s element %d: float32 %.9g, float64 %.9g'):format(what, i, a[i], b[i]))
    end
  end

  -- forward + backward of op in both dtypes; inputs {v, shape}; with add, the gradients
  -- accumulate onto given arrays (req 3)
  local function agree(op, params, inputs, add, tol)
    local res = {}
    local head = nil
    for run, dtype in ipairs {'float64', 'float32'} do
      local list, grads, reqs = {}, {}, {}
      for i, a in ipairs(inputs) do
        list[i] = arr(a.v, a.shape, dtype)
        if add then
          grads[i] = arr(a.g, a.shape, dtype)
          reqs[i] = 3
        end
      end
      local outs = ops.forward_all(op, params, list, true)
      head = head or rand(outs[1].shape)
      local g = ops.backward(op, params, list, outs, {arr(head, outs[1].shape, dtype)},
        add and {reqs = reqs, grads = grads} or nil)
      res[run] = {out = flat(outs[1]), grads = g}
    end
    close(op .. ' output', res[2].out, res[1].out, tol)
    for i = 1, #inputs do
      if res[1].grads[i] then
        close(op .. ' gradient ' .. i, flat(res[2].grads[i]), flat(res[1].grads[i]), tol)
      end
    end
  end

  local function inputs(shapes, ranges)
    local t = {}
    for i, s in ipairs(shapes) do
      local r = ranges and ranges[i] or {-1, 1}
      t[i] = {v = rand(s, r[1], r[2]), shape = s, g = rand(s)}
    end
    return t
  end

  it('BatchNorm training: long planes, data off zero, write and add', function()
    for _, c in ipairs {
      {{4, 8, 9, 13}, {3, 5}},     -- inner 117: lanes and a remainder, mean 4
      {{2, 3, 112}, {-1, 1}},
      {{32, 5, 7, 7}, {0, 6}},     -- MobileNet's last stages: short planes, many images
      {{80, 3, 4, 4}, {-2, 4}},    -- blocks of channels: the lanes flushed across images
      {{70, 2, 1, 48}, {1, 2}},    -- blocks, one channel each
      {{130, 3, 2, 2}, {-1, 3}},   -- blocks of 4-float planes
      {{2, 2, 30, 71}, {2, 5}},    -- rows: a row longer than one flush, flushed inside it
      {{20, 3, 1, 151}, {-1, 2}},  -- rows: 32- and 16-wide steps, 7 left, flushes across rows
    } do
      local s, C = c[1], c[1][2]
      for _, add in ipairs {false, true} do
        agree('BatchNorm', {fix_gamma = false, eps = 1e-3},
          inputs({s, {C}, {C}}, {c[2], {0.5, 1.5}, {-1, 1}}), add, 2e-4)
      end
    end
  end)

  -- BatchNorm training in plain Lua doubles: output and the gradients of data, gamma, beta
  local function bn_ref(x, s, gam, bet, head, eps)
    local N, C, inner = s[1], s[2], size(s) / (s[1] * s[2])
    local y, gx, gg, gb = {}, {}, {}, {}
    for c = 1, C do
      local idx = {}
      for n = 0, N - 1 do
        for i = 1, inner do idx[#idx + 1] = (n * C + c - 1) * inner + i end
      end
      local m, v = 0, 0
      for _, k in ipairs(idx) do m = m + x[k] end
      m = m / #idx
      for _, k in ipairs(idx) do v = v + (x[k] - m) ^ 2 end
      local is = 1 / math.sqrt(v / #idx + eps)
      local sg, sgx = 0, 0
      for _, k in ipairs(idx) do
        local xh = (x[k] - m) * is
        y[k] = xh * gam[c] + bet[c]
        sg, sgx = sg + head[k], sgx + head[k] * xh
      end
      gg[c], gb[c] = sgx, sg
      for _, k in ipairs(idx) do
        local xh = (x[k] - m) * is
        gx[k] = gam[c] * is * (head[k] - sg / #idx - xh * sgx / #idx)
      end
    end
    return y, gx, gg, gb
  end

  -- An independent check of what float32 and float64 share (the lane and flush logic):
  -- against bn_ref, on both paths (rows from 128 floats a plane, blocks below).
  it('BatchNorm training agrees with a plain Lua reference', function()
    for _, c in ipairs {
      {{80, 3, 4, 4}, {-2, 4}}, {{70, 2, 1, 48}, {1, 2}}, {{130, 3, 2, 2}, {-1, 3}},
      {{2, 2, 30, 71}, {2, 5}}, {{3, 2, 9, 13}, {-1, 1}}, {{20, 3, 1, 151}, {-1, 2}},
      -- blocks of channels image by image (planes under 128): full and partial blocks,
      -- flushed across images (130 > 64), one-element planes, a 16x16 plane on the rows
      {{70, 9, 1, 48}, {1, 2}}, {{20, 11, 3, 3}, {-1, 3}}, {{130, 40, 2, 2}, {2, 4}},
      {{67, 13}, {-3, 1}}, {{3, 5, 16, 16}, {0, 2}},
    } do
      local s, C = c[1], c[1][2]
      local x, gam, bet = rand(s, c[2][1], c[2][2]), rand({C}, 0.5, 1.5), rand({C})
      local head = rand(s)
      local list = {arr(x, s, 'float32'), arr(gam, {C}, 'float32'), arr(bet, {C}, 'float32')}
      local params = {fix_gamma = false, eps = 1e-3}
      local outs = ops.forward_all('BatchNorm', params, list, true)
      local g = ops.backward('BatchNorm', params, list, outs, {arr(head, s, 'float32')})
      local y, gx, gg, gb = bn_ref(x, s, gam, bet, head, 1e-3)
      local what = 'BatchNorm ' .. table.concat(s, 'x')
      close(what .. ' output', flat(outs[1]), y, 1e-4)
      close(what .. ' data gradient', flat(g[1]), gx, 1e-4)
      close(what .. ' gamma gradient', flat(g[2]), gg, 1e-4)
      close(what .. ' beta gradient', flat(g[3]), gb, 1e-4)
    end
  end)

  it('BatchNorm with the moving statistics (inference) and fix_gamma', function()
    local s = {3, 4, 6, 11}
    local x = arr(rand(s, 2, 3), s, 'float32')
    local mm, mv = arr(rand({4}, 2, 3), {4}, 'float32'), arr(rand({4}, 0.5, 2), {4}, 'float32')
    local g, b = arr(rand({4}), {4}, 'float32'), arr(rand({4}), {4}, 'float32')
    local y = mx.nd.BatchNorm {data = x, gamma = g, beta = b, moving_mean = mm, moving_var = mv,
      fix_gamma = true, eps = 1e-3}
    local xs, m, v, bs, ys = flat(x), flat(mm), flat(mv), flat(b), flat(y)
    local ref = {}
    for i = 1, #xs do
      local c = math.floor((i - 1) / 66) % 4 + 1
      ref[i] = (xs[i] - m[c]) / math.sqrt(v[c] + 1e-3) + bs[c]
    end
    close('BatchNorm inference', ys, ref, 1e-5)
  end)

  it('depthwise Convolution: 3x3 stride 1 and 2, wide rows, two filters per channel', function()
    for _, c in ipairs {
      {{2, 4, 9, 37}, {kernel = '(3, 3)', num_filter = 4, num_group = 4, pad = '(1, 1)', no_bias = true}},
      {{2, 4, 11, 23}, {kernel = '(3, 3)', num_filter = 4, num_group = 4, pad = '(1, 1)', stride = '(2, 2)'}},
      {{1, 2, 3, 470}, {kernel = '(3, 3)', num_filter = 2, num_group = 2, pad = '(1, 1)'}},
      {{1, 2, 3, 933}, {kernel = '(3, 3)', num_filter = 2, num_group = 2, pad = '(1, 1)', stride = '(1, 2)'}},
      {{2, 3, 6, 20}, {kernel = '(3, 3)', num_filter = 6, num_group = 3, dilate = '(2, 2)', pad = '(2, 1)'}},
      {{1, 2, 9, 11}, {kernel = '(3, 3)', num_filter = 4, num_group = 2, dilate = '(2, 2)', stride = '(2, 2)', pad = '(2, 1)'}},
      -- a strided plane over the phase buffer (64 KiB): the tap-by-tap strided loops
      {{1, 2, 3, 5600}, {kernel = '(3, 3)', num_filter = 2, num_group = 2, pad = '(1, 1)', stride = '(1, 2)', no_bias = true}},
      {{2, 3, 4, 9}, {kernel = '(1, 3)', num_filter = 3, num_group = 3, pad = '(0, 1)'}},
    } do
      local s, p = c[1], c[2]
      local kh, kw = p.kernel:match('%((%d+), (%d+)')
      local shapes = {s, {p.num_filter, math.floor(s[2] / p.num_group), tonumber(kh), tonumber(kw)}}
      if not p.no_bias then shapes[3] = {p.num_filter} end
      for _, add in ipairs {false, true} do agree('Convolution', p, inputs(shapes), add, 1e-4) end
    end
  end)

  it('clip (ReLU6): one-pass forward; gradient passes inside [a_min, a_max] only, write and add', function()
    for _, add in ipairs {false, true} do
      agree('clip', {a_min = 0, a_max = 6}, inputs({{3, 1000}}, {{-2, 8}}), add, 1e-6)
    end
    -- and exactly, forward in one pass and gradient: 0 outside, the head inside
    for _, dt in ipairs {'float32', 'float64'} do
      local x = arr({-1, 0, 3, 6, 7, 2.5}, {6}, dt)
      local out = ops.forward_all('clip', {a_min = 0, a_max = 6}, {x}, true)
      assert.are.same({0, 0, 3, 6, 6, 2.5}, flat(out[1]))
      local g = ops.backward('clip', {a_min = 0, a_max = 6}, {x}, out,
        {arr({1, 2, 3, 4, 5, 6}, {6}, dt)})
      assert.are.same({0, 2, 3, 4, 0, 6}, flat(g[1]))
    end
  end)
end)
