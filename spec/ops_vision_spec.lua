-- ops_vision_spec.lua — LRN, InstanceNorm, GroupNorm, L2Normalization, Pad and UpSampling
-- (issue 14): forward values against MXNet's documented examples and independent Lua
-- loops in float32 and float64, parameter defaults and visible outputs, shape inference,
-- JSON round trips, and the errors bad parameters and shapes give. Gradients are checked
-- by tests/test_gradcheck.c (finite differences, and the GPU against the CPU).
local mx = require 'luamx'
local H = require 'helpers'

local DTYPES = { float32 = 1e-5, float64 = 1e-12 }

local function arr(flat, s, dt) return mx.nd.array(flat, { dtype = dt }):reshape(s) end

local function rand_list(n)
  local t = {}
  for i = 1, n do t[i] = 2 * math.random() - 1 end
  return t
end

local function err(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok)
  return (tostring(e):gsub('^.-:%d+: ', ''))
end

-- flat index of (n, c, s) in an (N, C, S) layout, 1-based
local function at(C, S, n, c, s) return (n * C + c) * S + s + 1 end

describe('LRN', function()
  for dt, tol in pairs(DTYPES) do
    it('divides by (knorm + alpha/nsize * window sum of squares)^beta (' .. dt .. ')', function()
      math.randomseed(11)
      local N, C, S, nsize, alpha, beta, k = 2, 5, 3, 3, 0.3, 0.75, 2
      local x = rand_list(N * C * S)
      local y = mx.nd.LRN { data = arr(x, { N, C, 3, 1 }, dt), nsize = nsize, alpha = alpha,
        beta = beta, knorm = k }
      local ref = {}
      for n = 0, N - 1 do
        for c = 0, C - 1 do
          for s = 0, S - 1 do
            local sum = 0
            for j = math.max(0, c - 1), math.min(C - 1, c + 1) do
              sum = sum + x[at(C, S, n, j, s)] ^ 2
            end
            ref[at(C, S, n, c, s)] = x[at(C, S, n, c, s)] * (k + alpha / nsize * sum) ^ -beta
          end
        end
      end
      assert.are.same({ N, C, 3, 1 }, y.shape)
      H.near(y:toflat(), ref, tol)
    end)
  end

  it('has MXNet 1.9 defaults and a hidden tmp_norm output', function()
    local d = {}
    for _, p in ipairs(mx.op.info('LRN').params) do d[p.name] = p.default or 'REQUIRED' end
    assert.are.same({ alpha = '0.0001', beta = '0.75', knorm = '2', nsize = 'REQUIRED' }, d)
    local info = mx.op.info('LRN', { nsize = 3 })
    assert.are.same({ 'output', 'tmp_norm' }, info.outputs)
    assert.are.equal(1, info.num_visible_outputs)
    assert.truthy(info.doc:find('local response normalization', 1, true))
  end)

  it('refuses an even window and non-channel data', function()
    local x = mx.nd.ones({ 1, 4, 2, 2 })
    assert.are.equal("LRN: parameter 'nsize': expected an odd window width, got 4",
      err(mx.nd.LRN, { data = x, nsize = 4 }))
    assert.truthy(err(mx.nd.LRN, { data = mx.nd.ones({ 3 }), nsize = 3 })
      :find("input 'data': expected 2-D to 8-D data (N, C, ...), got (3,)", 1, true))
  end)
end)

-- mean and biased variance of list t
local function stats(t)
  local m, v = 0, 0
  for _, x in ipairs(t) do m = m + x end
  m = m / #t
  for _, x in ipairs(t) do v = v + (x - m) ^ 2 end
  return m, v / #t
end

describe('InstanceNorm and GroupNorm', function()
  for dt, tol in pairs(DTYPES) do
    it('InstanceNorm normalizes each (n, c) over its spatial positions (' .. dt .. ')', function()
      math.randomseed(12)
      local N, C, S, eps = 2, 3, 4, 1e-3
      local x, g, b = rand_list(N * C * S), { 0.5, -1, 2 }, { 0.1, 0.2, -0.3 }
      local y = mx.nd.InstanceNorm { data = arr(x, { N, C, 2, 2 }, dt), gamma = arr(g, { C }, dt),
        beta = arr(b, { C }, dt) }
      local ref = {}
      for n = 0, N - 1 do
        for c = 0, C - 1 do
          local row = {}
          for s = 0, S - 1 do row[#row + 1] = x[at(C, S, n, c, s)] end
          local m, v = stats(row)
          for s = 0, S - 1 do
            local q = at(C, S, n, c, s)
            ref[q] = (x[q] - m) / math.sqrt(v + eps) * g[c + 1] + b[c + 1]
          end
        end
      end
      H.near(y:toflat(), ref, tol * 10)
    end)

    it('GroupNorm normalizes channel groups, one gamma/beta per group (' .. dt .. ')', function()
      math.randomseed(13)
      local N, C, S, G, eps = 2, 4, 3, 2, 1e-5
      local x, g, b = rand_list(N * C * S), { 1.5, -0.5 }, { 0.25, 1 }
      local out = { mx.nd.GroupNorm { data = arr(x, { N, C, S }, dt), gamma = arr(g, { G }, dt),
        beta = arr(b, { G }, dt), num_groups = G, output_mean_var = true } }
      out = type(out[1]) == 'table' and not out[1].shape and out[1] or out
      local y, mean, std = out[1], out[2], out[3]
      assert.are.same({ N, G }, mean.shape)
      local ref, rm, rs = {}, {}, {}
      local per = C / G * S
      for n = 0, N - 1 do
        for grp = 0, G - 1 do
          local base = (n * G + grp) * per
          local row = {}
          for l = 1, per do row[l] = x[base + l] end
          local m, v = stats(row)
          rm[#rm + 1], rs[#rs + 1] = m, math.sqrt(v + eps)
          for l = 1, per do
            ref[base + l] = (x[base + l] - m) / math.sqrt(v + eps) * g[grp + 1] + b[grp + 1]
          end
        end
      end
      H.near(y:toflat(), ref, tol * 10)
      H.near(mean:toflat(), rm, tol)
      H.near(std:toflat(), rs, tol)
    end)
  end

  it('infer shapes, defaults and errors', function()
    local s = mx.sym.GroupNorm { data = mx.sym.Variable('x'), num_groups = 3, name = 'gn' }
    local args = s:infer_shape { x = { 2, 6, 4, 4 } }
    assert.are.same({ 2, 6, 4, 4 }, args[1])
    assert.are.same({ 3 }, args[2])
    assert.are.same({ 'x', 'gn_gamma', 'gn_beta' }, s:list_arguments())
    assert.are.same({ 'gn_output' }, s:list_outputs())
    local i = mx.sym.InstanceNorm { data = mx.sym.Variable('x'), name = 'in' }
    assert.are.same({ 5 }, (i:infer_shape { x = { 2, 5, 3 } })[2])
    local d = {}
    for _, p in ipairs(mx.op.info('InstanceNorm').params) do d[p.name] = p.default end
    assert.are.same({ eps = '0.001' }, d)
    assert.truthy(err(function() s:infer_shape { x = { 2, 4, 3 } } end)
      :find("GroupNorm 'gn': input 'data': 4 channels are not divisible by num_groups 3", 1, true))
    assert.truthy(err(function() i:infer_shape { x = { 2, 5 } } end)
      :find("InstanceNorm 'in': input 'data': expected 3-D to 8-D data (N, C, ...), got (2,5)",
        1, true))
  end)
end)

describe('L2Normalization', function()
  for dt, tol in pairs(DTYPES) do
    it('instance, channel and spatial modes (' .. dt .. ')', function()
      -- hand-worked: (3, 4) / 5; a zero row stays zero thanks to eps
      local y = mx.nd.L2Normalization { data = arr({ 3, 4, 0, 0, 6, 8 }, { 3, 2 }, dt) }
      H.near(y:toflat(), { 0.6, 0.8, 0, 0, 0.6, 0.8 }, math.max(tol, 1e-10))
      math.randomseed(14)
      local N, C, S, eps = 2, 3, 4, 1e-10
      local x = rand_list(N * C * S)
      local function ref(mode)
        local r = {}
        local function norm(idx)
          local s = 0
          for _, q in ipairs(idx) do s = s + x[q] ^ 2 end
          for _, q in ipairs(idx) do r[q] = x[q] / math.sqrt(s + eps) end
        end
        for n = 0, N - 1 do
          if mode == 'instance' then
            local idx = {}
            for c = 0, C - 1 do for s = 0, S - 1 do idx[#idx + 1] = at(C, S, n, c, s) end end
            norm(idx)
          elseif mode == 'channel' then
            for s = 0, S - 1 do
              local idx = {}
              for c = 0, C - 1 do idx[#idx + 1] = at(C, S, n, c, s) end
              norm(idx)
            end
          else
            for c = 0, C - 1 do
              local idx = {}
              for s = 0, S - 1 do idx[#idx + 1] = at(C, S, n, c, s) end
              norm(idx)
            end
          end
        end
        return r
      end
      for _, mode in ipairs { 'instance', 'channel', 'spatial' } do
        local z = mx.nd.L2Normalization { data = arr(x, { N, C, 2, 2 }, dt), mode = mode }
        H.near(z:toflat(), ref(mode), tol)
      end
    end)
  end

  it('hides its norm output, shaped per mode', function()
    local x = mx.sym.Variable('x')
    for mode, shape in pairs { instance = { 2 }, channel = { 2, 1, 4, 5 }, spatial = { 2, 3 } } do
      local s = mx.sym.L2Normalization { data = x, mode = mode, name = 'l2' }
      local _, outs = s:infer_shape { x = { 2, 3, 4, 5 } }
      assert.are.same({ { 2, 3, 4, 5 } }, outs)
      local info = mx.op.info('L2Normalization', { mode = mode })
      assert.are.equal(1, info.num_visible_outputs)
      assert.are.same({ 'output', 'norm' }, info.outputs)
      local _, o = mx.op.infer('L2Normalization', { mode = mode }, { { 2, 3, 4, 5 } })
      assert.are.same(shape, o[2])
    end
    assert.truthy(err(mx.nd.L2Normalization, { data = mx.nd.ones({ 2, 3 }), mode = 'spatial' })
      :find("input 'data': expected 3-D to 8-D data (N, C, ...), got (2,3)", 1, true))
    assert.truthy(err(mx.nd.L2Normalization, { data = mx.nd.ones({ 2, 3 }), mode = 'rows' })
      :find("L2Normalization: parameter 'mode'", 1, true))
  end)
end)

describe('Pad', function()
  -- MXNet's documentation example: x of shape (2, 2, 2, 3)
  local X = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
    11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22 }
  for dt, tol in pairs(DTYPES) do
    it('edge, constant and reflect give the documented values (' .. dt .. ')', function()
      local x = arr(X, { 2, 2, 2, 3 }, dt)
      local pw = { 0, 0, 0, 0, 1, 1, 1, 1 }
      local e = mx.nd.Pad { data = x, mode = 'edge', pad_width = pw }
      assert.are.same({ 2, 2, 4, 5 }, e.shape)
      local ef = e:toflat()
      H.near({ unpack(ef, 1, 20) },
        { 1, 1, 2, 3, 3, 1, 1, 2, 3, 3, 4, 4, 5, 6, 6, 4, 4, 5, 6, 6 }, tol)
      H.near({ unpack(ef, 61, 80) },
        { 17, 17, 18, 19, 19, 17, 17, 18, 19, 19, 20, 20, 21, 22, 22, 20, 20, 21, 22, 22 }, tol)
      local c = mx.nd.Pad { data = x, mode = 'constant', pad_width = pw, constant_value = 0 }
      H.near({ unpack(c:toflat(), 1, 20) },
        { 0, 0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 4, 5, 6, 0, 0, 0, 0, 0, 0 }, tol)
      local r = mx.nd.Pad { data = x, mode = 'reflect', pad_width = pw }
      H.near({ unpack(r:toflat(), 1, 20) },
        { 5, 4, 5, 6, 5, 2, 1, 2, 3, 2, 5, 4, 5, 6, 5, 2, 1, 2, 3, 2 }, tol)
      -- 5-D, asymmetric, constant value
      local z = mx.nd.Pad { data = arr({ 1, 2 }, { 1, 1, 1, 1, 2 }, dt), mode = 'constant',
        pad_width = { 0, 0, 0, 0, 1, 0, 0, 0, 0, 2 }, constant_value = -1 }
      assert.are.same({ 1, 1, 2, 1, 4 }, z.shape)
      H.near(z:toflat(), { -1, -1, -1, -1, 1, 2, -1, -1 }, tol)
    end)
  end

  it('keeps pad_width in JSON and refuses bad widths', function()
    local s = mx.sym.pad { data = mx.sym.Variable('x'), mode = 'reflect',
      pad_width = { 0, 0, 0, 0, 2, 2, 1, 1 }, name = 'p' }
    local js = s:tojson()
    assert.truthy(js:find('"op": "Pad"', 1, true))
    assert.truthy(js:find('"pad_width": "(0, 0, 0, 0, 2, 2, 1, 1)"', 1, true))
    assert.are.equal(js, mx.sym.load_json(js):tojson())
    local _, outs = s:infer_shape { x = { 1, 3, 4, 5 } }
    assert.are.same({ 1, 3, 8, 7 }, outs[1])
    assert.truthy(err(function() s:infer_shape { x = { 1, 3, 2, 5 } } end)
      :find("Pad 'p': parameter 'pad_width': reflect padding (2, 2) of axis 2 must be smaller "
        .. "than its size 2 in (1,3,2,5)", 1, true))
    assert.truthy(err(function() s:infer_shape { x = { 1, 3, 5 } } end)
      :find("Pad 'p': input 'data': expected 4-D or 5-D data, got (1,3,5)", 1, true))
    local x = mx.nd.ones({ 1, 1, 2, 2 })
    assert.are.equal("Pad: parameter 'pad_width': the first two axes (N, C) cannot be padded, "
      .. "expected zeros, got (0, 1, 0, 0)",
      err(mx.nd.Pad, { data = x, mode = 'edge', pad_width = { 0, 1, 0, 0, 1, 1, 1, 1 } }))
    assert.are.equal("Pad: parameter 'pad_width': expected 8 or 10 entries (a before/after pair "
      .. "per axis of 4-D or 5-D data), got 4",
      err(mx.nd.Pad, { data = x, mode = 'edge', pad_width = { 0, 0, 1, 1 } }))
    assert.truthy(err(mx.nd.Pad, { data = x, mode = 'edge', pad_width = 'abc' })
      :find("Pad: parameter 'pad_width': expected a tuple of at most 10 non-negative integers, "
        .. "got 'abc'", 1, true))
    assert.truthy(err(mx.nd.Pad, { data = x, pad_width = { 0, 0, 0, 0, 1, 1, 1, 1 } })
      :find("mode", 1, true))
  end)
end)

describe('UpSampling', function()
  for dt, tol in pairs(DTYPES) do
    it('nearest repeats pixels; concat and sum combine inputs (' .. dt .. ')', function()
      local a = arr({ 1, 2, 3, 4 }, { 1, 1, 2, 2 }, dt)
      local y = mx.nd.UpSampling(a, { scale = 2, sample_type = 'nearest', num_args = 1 })
      assert.are.same({ 1, 1, 4, 4 }, y.shape)
      H.near(y:toflat(), { 1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4 }, tol)
      -- a second input already at 4x4 is upsampled by 1
      local b = arr({ 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 }, { 1, 1, 4, 4 }, dt)
      local cat = mx.nd.UpSampling(a, b, { scale = 2, sample_type = 'nearest', num_args = 2 })
      assert.are.same({ 1, 2, 4, 4 }, cat.shape)
      local cf = cat:toflat()
      H.near({ unpack(cf, 17, 32) }, b:toflat(), tol)
      local sum = mx.nd.UpSampling(a, b, { scale = 2, sample_type = 'nearest', num_args = 2,
        multi_input_mode = 'sum' })
      local ref = {}
      for i = 1, 16 do ref[i] = cf[i] + cf[16 + i] end
      H.near(sum:toflat(), ref, tol)
    end)

    it('bilinear is the depthwise Deconvolution MXNet builds (' .. dt .. ')', function()
      math.randomseed(15)
      local C, s = 2, 2
      local x = arr(rand_list(2 * C * 3 * 3), { 2, C, 3, 3 }, dt)
      local w = arr(rand_list(C * 16), { C, 1, 4, 4 }, dt)
      local y = mx.nd.UpSampling(x, w, { scale = s, sample_type = 'bilinear', num_args = 2,
        num_filter = C })
      local d = mx.nd.Deconvolution { data = x, weight = w, kernel = { 4, 4 }, stride = { 2, 2 },
        pad = { 1, 1 }, num_filter = C, num_group = C, no_bias = true }
      assert.are.same({ 2, C, 6, 6 }, y.shape)
      H.near(y:toflat(), d:toflat(), tol)
    end)
  end

  it('names its inputs like MXNet, infers shapes and refuses mismatches', function()
    local a, b = mx.sym.Variable('a'), mx.sym.Variable('b')
    local s = mx.sym.UpSampling { a, b, scale = 2, sample_type = 'nearest', num_args = 2,
      name = 'up' }
    local _, outs = s:infer_shape { a = { 1, 2, 3, 3 }, b = { 1, 5, 6, 6 } }
    assert.are.same({ 1, 7, 6, 6 }, outs[1])
    local js = s:tojson()
    assert.are.equal(js, mx.sym.load_json(js):tojson())
    local bil = mx.sym.UpSampling { mx.sym.Variable('x'), scale = 3, sample_type = 'bilinear',
      num_args = 2, num_filter = 4, name = 'bu' }
    assert.are.same({ 'x', 'bu_weight' }, bil:list_arguments())
    local args, bouts = bil:infer_shape { x = { 2, 4, 5, 5 } }
    assert.are.same({ 4, 1, 5, 5 }, args[2])
    assert.are.same({ 2, 4, 15, 15 }, bouts[1])
    assert.truthy(err(function() s:infer_shape { a = { 1, 2, 3, 3 }, b = { 1, 5, 4, 4 } } end)
      :find("UpSampling 'up': input 'arg1': (1,5,4,4) does not upsample by a whole factor to "
        .. "the output (1, *, 6, 6)", 1, true))
    assert.truthy(err(function() bil:infer_shape { x = { 2, 3, 5, 5 } } end)
      :find("parameter 'num_filter': bilinear upsampling needs it equal to the channels of "
        .. "'data' (3), got 4", 1, true))
    assert.truthy(err(mx.nd.UpSampling, mx.nd.ones({ 1, 1, 2, 2 }), { scale = 2,
      sample_type = 'bilinear', num_args = 1 })
      :find("parameter 'num_args': bilinear upsampling takes 2 inputs (data, weight), got 1",
        1, true))
  end)
end)

describe('depthwise Convolution', function()
  for dt, tol in pairs(DTYPES) do
    it('matches one ordinary convolution per channel (' .. dt .. ')', function()
      math.randomseed(16)
      local N, C, m = 2, 3, 2
      local x = arr(rand_list(N * C * 6 * 5), { N, C, 6, 5 }, dt)
      local w = arr(rand_list(C * m * 9), { C * m, 1, 3, 3 }, dt)
      local b = arr(rand_list(C * m), { C * m }, dt)
      local p = { kernel = { 3, 3 }, stride = { 2, 1 }, pad = { 1, 1 }, dilate = { 1, 2 } }
      local y = mx.nd.Convolution { data = x, weight = w, bias = b, num_filter = C * m,
        num_group = C, kernel = p.kernel, stride = p.stride, pad = p.pad, dilate = p.dilate }
      local yf, per = y:toflat(), m * y.shape[3] * y.shape[4]
      for c = 0, C - 1 do
        -- channel c through the GEMM path (num_group 1) with its m filters
        local xc = mx.nd.slice_axis(x, { axis = 1, begin = c, ['end'] = c + 1 })
        local wc = mx.nd.slice_axis(w, { axis = 0, begin = c * m, ['end'] = (c + 1) * m })
        local bc = mx.nd.slice_axis(b, { axis = 0, begin = c * m, ['end'] = (c + 1) * m })
        local yc = mx.nd.Convolution { data = xc, weight = wc, bias = bc, num_filter = m,
          kernel = p.kernel, stride = p.stride, pad = p.pad, dilate = p.dilate }:toflat()
        for n = 0, N - 1 do
          local got = { unpack(yf, (n * C + c) * per + 1, (n * C + c + 1) * per) }
          H.near(got, { unpack(yc, n * per + 1, (n + 1) * per) }, tol * 10)
        end
      end
    end)
  end
end)

describe('depth_to_space, space_to_depth and Crop', function()
  for dt, tol in pairs(DTYPES) do
    it('give MXNet\'s documented values (' .. dt .. ')', function()
      -- MXNet's example: x = arange(24) as (1, 4, 2, 3), block_size 2
      local xs = {}
      for i = 0, 23 do xs[#xs + 1] = i end
      local x = arr(xs, { 1, 4, 2, 3 }, dt)
      local y = mx.nd.depth_to_space(x, { block_size = 2 })
      assert.are.same({ 1, 1, 4, 6 }, y.shape)
      H.near(y:toflat(), { 0, 6, 1, 7, 2, 8, 12, 18, 13, 19, 14, 20,
        3, 9, 4, 10, 5, 11, 15, 21, 16, 22, 17, 23 }, tol)
      local back = mx.nd.space_to_depth(y, { block_size = 2 })
      assert.are.same({ 1, 4, 2, 3 }, back.shape)
      H.near(back:toflat(), xs, tol)
      -- Crop: rows 1..2, columns 2..4 of a 4 x 6 plane; centred crop like a 2 x 3 array
      local p = {}
      for i = 0, 23 do p[#p + 1] = i end
      local img = arr(p, { 1, 1, 4, 6 }, dt)
      local c1 = mx.nd.Crop(img, { num_args = 1, h_w = { 2, 3 }, offset = { 1, 2 } })
      H.near(c1:toflat(), { 8, 9, 10, 14, 15, 16 }, tol)
      local c2 = mx.nd.Crop(img, mx.nd.zeros({ 1, 1, 2, 3 }, { dtype = dt }), { num_args = 2,
        center_crop = true })
      H.near(c2:toflat(), { 7, 8, 9, 13, 14, 15 }, tol)
    end)
  end

  it('names, infers and refuses bad shapes', function()
    local s = mx.sym.Crop { mx.sym.Variable('a'), mx.sym.Variable('b'), num_args = 2,
      name = 'crop' }
    assert.are.same({ 'a', 'b' }, s:list_arguments())
    assert.are.same({ 'data', 'crop_like' }, mx.op.info('Crop', { num_args = 2 }).inputs)
    local _, outs = s:infer_shape { a = { 2, 3, 8, 8 }, b = { 2, 5, 4, 6 } }
    assert.are.same({ 2, 3, 4, 6 }, outs[1])
    local js = s:tojson()
    assert.are.equal(js, mx.sym.load_json(js):tojson())
    assert.truthy(err(mx.nd.Crop, mx.nd.ones({ 1, 1, 4, 4 }), { num_args = 1, h_w = { 3, 3 },
      offset = { 2, 0 } }):find("Crop: input 'data': a (3, 3) crop at offset (2, 0) does not "
      .. "fit inside (1,1,4,4)", 1, true))
    assert.truthy(err(mx.nd.depth_to_space, mx.nd.ones({ 1, 6, 2, 2 }), { block_size = 2 })
      :find("depth_to_space: input 'data': 6 channels are not divisible by block_size^2 = 4",
        1, true))
    assert.truthy(err(mx.nd.space_to_depth, mx.nd.ones({ 1, 1, 3, 4 }), { block_size = 2 })
      :find("space_to_depth: input 'data': height and width of (1,1,3,4) must be divisible by "
        .. "block_size 2", 1, true))
  end)
end)
