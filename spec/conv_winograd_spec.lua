-- The Winograd path of float32 Convolution, F(2x2, 3x3) and F(4x4, 3x3)
-- (kernels/cpu/winograd*.c, src/ops/cpu/conv_wino.c): forward, data and weight gradients
-- against a direct double-precision loop (odd and even sizes, padding 0 to 2, with and
-- without bias, batches that split into chunks unevenly, planes larger than a transform's
-- group, batch 1 with every transform and im2col split over the threads), gradients added
-- (grad_req 'add') and each gradient alone, the automatic choice of path and tile, the mode
-- (mx.runtime.conv_algo, LUAMX_CONV) and its errors. F(4x4) rounds more (its ±2 points),
-- so its tolerance is 5e-5 where F(2x2)'s is 1e-5.
local mx = require 'luamx'
local H = require 'helpers'

local rand = H.uniform

-- y, and the gradients of sum(y · og), of a 3x3 convolution with stride 1, by loops
local function reference(cs, x, w, b, og)
  local N, C, F, Hh, W, ph, pw = cs.N, cs.C, cs.F, cs.H, cs.W, cs.ph, cs.pw
  local OH, OW = Hh + 2 * ph - 2, W + 2 * pw - 2
  local y, gx, gw, gb = {}, {}, {}, {}
  for i = 1, N * C * Hh * W do gx[i] = 0 end
  for i = 1, F * C * 9 do gw[i] = 0 end
  for f = 1, F do gb[f] = 0 end
  for n = 0, N - 1 do
    for f = 0, F - 1 do
      for oy = 0, OH - 1 do
        for ox = 0, OW - 1 do
          local s = b and b[f + 1] or 0
          local yi = ((n * F + f) * OH + oy) * OW + ox + 1
          local g = og[yi]
          gb[f + 1] = gb[f + 1] + g
          for c = 0, C - 1 do
            for ky = 0, 2 do
              local iy = oy + ky - ph
              if iy >= 0 and iy < Hh then
                for kx = 0, 2 do
                  local ix = ox + kx - pw
                  if ix >= 0 and ix < W then
                    local xi = ((n * C + c) * Hh + iy) * W + ix + 1
                    local wi = ((f * C + c) * 3 + ky) * 3 + kx + 1
                    s = s + x[xi] * w[wi]
                    gx[xi] = gx[xi] + g * w[wi]
                    gw[wi] = gw[wi] + g * x[xi]
                  end
                end
              end
            end
          end
          y[yi] = s
        end
      end
    end
  end
  return y, gx, gw, gb, OH, OW
end

local function arrays(cs)
  local x = rand(cs.N * cs.C * cs.H * cs.W, 1 + cs.N + cs.H)
  local w = rand(cs.F * cs.C * 9, 2 + cs.C)
  local b = not cs.no_bias and rand(cs.F, 3) or nil
  return x, w, b
end

-- forward and both gradients through mx.nd under autograd
local function run_nd(cs, x, w, b, og, OH, OW)
  local X = mx.nd.array(x):reshape{cs.N, cs.C, cs.H, cs.W}
  local Wt = mx.nd.array(w):reshape{cs.F, cs.C, 3, 3}
  local B = b and mx.nd.array(b) or nil
  X:attach_grad()
  Wt:attach_grad()
  if B then B:attach_grad() end
  local y = mx.autograd.record(function()
    return mx.nd.Convolution{data = X, weight = Wt, bias = B, kernel = {3, 3}, num_filter = cs.F,
                             pad = {cs.ph, cs.pw}, no_bias = B == nil}
  end)
  y:backward(mx.nd.array(og):reshape{cs.N, cs.F, OH, OW})
  return y:toflat(), X.grad:toflat(), Wt.grad:toflat(), B and B.grad:toflat()
end

local cases = {
  {N = 2, C = 3, F = 4, H = 7, W = 6, ph = 1, pw = 1},              -- odd output rows
  {N = 1, C = 2, F = 5, H = 5, W = 9, ph = 0, pw = 0, no_bias = true}, -- odd columns, no pad
  {N = 3, C = 4, F = 2, H = 6, W = 5, ph = 2, pw = 1},              -- pad 2
  {N = 5, C = 16, F = 17, H = 8, W = 8, ph = 1, pw = 1},            -- 16+ channels, few tiles
  {N = 2, C = 1, F = 1, H = 3, W = 3, ph = 0, pw = 0},              -- one output pixel
  {N = 2, C = 3, F = 3, H = 4, W = 40, ph = 1, pw = 1},             -- many tiles per row
  {N = 3, C = 2, F = 2, H = 34, W = 33, ph = 1, pw = 0},            -- a group per image
  -- batch 1 with 32k+ values per transform and per im2col: each is split over the threads
  -- (the filters in blocks of 64, the last one partial); im2col + GEMM checked too
  {N = 1, C = 48, F = 43, H = 18, W = 17, ph = 1, pw = 1, algos = {'gemm', 'winograd2', 'winograd4'}},
}
local tol = {gemm = 1e-5, winograd2 = 1e-5, winograd4 = 5e-5}

describe('Winograd convolution (float32, 3x3, stride 1)', function()
  local before
  setup(function() before = mx.runtime.features().kernels.conv.algo end)
  teardown(function() mx.runtime.conv_algo(before) end)

  for _, cs in ipairs(cases) do
    for _, algo in ipairs(cs.algos or {'winograd2', 'winograd4'}) do
      local name = ('%s N=%d C=%d F=%d %dx%d pad %d,%d%s'):format(algo, cs.N, cs.C, cs.F, cs.H,
        cs.W, cs.ph, cs.pw, cs.no_bias and ' no bias' or '')
      it('forward and gradients match a double loop: ' .. name, function()
        mx.runtime.conv_algo(algo)
        local x, w, b = arrays(cs)
        local OH, OW = cs.H + 2 * cs.ph - 2, cs.W + 2 * cs.pw - 2
        local og = rand(cs.N * cs.F * OH * OW, 4)
        local ry, rgx, rgw, rgb = reference(cs, x, w, b, og)
        local y, gx, gw, gb = run_nd(cs, x, w, b, og, OH, OW)
        H.near(y, ry, tol[algo])
        H.near(gx, rgx, tol[algo])
        H.near(gw, rgw, tol[algo])
        if b then H.near(gb, rgb, tol[algo]) end
      end)
    end
  end

  it('runs instead of im2col + GEMM (results differ from it by rounding only)', function()
    local cs = {N = 8, C = 16, F = 16, H = 16, W = 16, ph = 1, pw = 1}
    local x, w, b = arrays(cs)
    local og = rand(cs.N * cs.F * 256, 4)
    mx.runtime.conv_algo('gemm')
    local y1, gx1, gw1 = run_nd(cs, x, w, b, og, 16, 16)
    mx.runtime.conv_algo('winograd')
    local y2, gx2, gw2 = run_nd(cs, x, w, b, og, 16, 16)
    H.near(y2, y1, 5e-5)
    H.near(gx2, gx1, 5e-5)
    H.near(gw2, gw1, 5e-5)
    local differ = false
    for i = 1, #y1 do differ = differ or y1[i] ~= y2[i] end
    assert.is_true(differ, 'Winograd and GEMM outputs are bit-identical: Winograd did not run')
    -- 4 images a chunk (at most 2 threads: 8 / 2), 16 tiles of 4x4 each: 64 >= 32, so F(4x4)
    mx.runtime.conv_algo('winograd4')
    assert.are.same(y2, (run_nd(cs, x, w, b, og, 16, 16)))
    mx.runtime.conv_algo('winograd2')
    local y3 = run_nd(cs, x, w, b, og, 16, 16)
    H.near(y3, y1, 1e-5)
    differ = false
    for i = 1, #y1 do differ = differ or y3[i] ~= y2[i] end
    assert.is_true(differ, 'F(2x2) and F(4x4) outputs are bit-identical: one tile did not run')
    -- auto: 16+ channels, chunks of 2+ images of 64 tiles of 2x2 (128+ a product): Winograd
    mx.runtime.conv_algo('auto')
    assert.are.same(y2, (run_nd(cs, x, w, b, og, 16, 16)))
  end)

  it("takes F(2x2) when a chunk has fewer than 32 tiles of 4x4 ('winograd')", function()
    local cs = cases[4] -- 5 images of 4 tiles of 4x4: chunks of at most 20 tiles
    local x, w, b = arrays(cs)
    local og = rand(cs.N * cs.F * 64, 4)
    mx.runtime.conv_algo('winograd2')
    local y2 = run_nd(cs, x, w, b, og, 8, 8)
    mx.runtime.conv_algo('winograd')
    assert.are.same(y2, (run_nd(cs, x, w, b, og, 8, 8)))
  end)

  -- auto's choice for case cs: Winograd (F(2x2): these chunks hold < 32 tiles of 4x4) when a
  -- chunk (the batch over the threads, at most 512 tiles) holds min_tiles tiles of 2x2
  local function auto_is(cs, OH, OW)
    local tiles = math.ceil(OH / 2) * math.ceil(OW / 2)
    local t = mx.runtime.features().threads
    local nb = math.min(math.ceil(512 / tiles), math.ceil(cs.N / t))
    return nb * tiles >= mx.runtime.conv_min_tiles() and 'winograd2' or 'gemm'
  end

  it('auto leaves products of fewer than conv_min_tiles tiles to im2col + GEMM', function()
    -- 5 images of 16 tiles: chunks of 48 (2 threads) or 80 (1 thread); one image of 64
    for _, cs in ipairs{cases[4], {N = 1, C = 16, F = 17, H = 16, W = 16, ph = 1, pw = 1}} do
      local x, w, b = arrays(cs)
      local og = rand(cs.N * cs.F * cs.H * cs.W, 4)
      local want = auto_is(cs, cs.H, cs.W)
      mx.runtime.conv_algo(want == 'gemm' and 'winograd2' or 'gemm')
      local other = run_nd(cs, x, w, b, og, cs.H, cs.W)
      mx.runtime.conv_algo(want)
      local y1 = run_nd(cs, x, w, b, og, cs.H, cs.W)
      mx.runtime.conv_algo('auto')
      assert.are.same(y1, (run_nd(cs, x, w, b, og, cs.H, cs.W)))
      local differ = false
      for i = 1, #y1 do differ = differ or y1[i] ~= other[i] end
      assert.is_true(differ, 'GEMM and Winograd outputs are bit-identical: the check is void')
    end
  end)

  it('conv_min_tiles: 64 tiles with AVX-512, 128 without; this CPU\'s in features', function()
    assert.are.equal(64, mx.runtime.conv_min_tiles(true))
    assert.are.equal(128, mx.runtime.conv_min_tiles(false))
    local f = mx.runtime.features()
    assert.are.equal(f.isa.avx512f and 64 or 128, mx.runtime.conv_min_tiles())
    assert.are.equal(mx.runtime.conv_min_tiles(), f.kernels.conv.min_tiles)
    mx.runtime.conv_algo('auto')
    assert.truthy(mx.runtime.features().kernels.conv.winograd:find(
      ('%d+ 2x2 tiles a chunk'):format(f.kernels.conv.min_tiles), 1, true))
    local ok, err = pcall(mx.runtime.conv_min_tiles, 'yes')
    assert.is_false(ok)
    assert.truthy(tostring(err):find("mx.runtime.conv_min_tiles: argument 1: expected a "
                                     .. "boolean or nil, got string", 1, true))
  end)

  it('adds into the gradients (grad_req add) and computes either gradient alone', function()
    mx.runtime.conv_algo('winograd4')
    local cs = cases[1]
    local x, w, b = arrays(cs)
    local og = rand(cs.N * cs.F * 7 * 6, 4)
    local _, rgx, rgw = reference(cs, x, w, b, og)
    local s = mx.sym.Convolution{data = mx.sym.Variable('data'), kernel = {3, 3}, num_filter = cs.F,
                                 pad = {1, 1}, name = 'c'}
    for _, req in ipairs{{data = 'add', c_weight = 'add', c_bias = 'add'},
                         {data = 'write', c_weight = 'null', c_bias = 'null'},
                         {data = 'null', c_weight = 'write', c_bias = 'null'}} do
      local exe = s:simple_bind{data = {cs.N, cs.C, cs.H, cs.W}, grad_req = req}
      exe.arg_dict.data:set(mx.nd.array(x):reshape{cs.N, cs.C, cs.H, cs.W})
      exe.arg_dict.c_weight:set(mx.nd.array(w):reshape{cs.F, cs.C, 3, 3})
      exe.arg_dict.c_bias:set(mx.nd.array(b))
      local times = req.data == 'add' and 2 or 1
      if times == 2 then
        exe.grad_dict.data:fill(0)
        exe.grad_dict.c_weight:fill(0)
      end
      for _ = 1, times do
        exe:forward{is_train = true}
        exe:backward(mx.nd.array(og):reshape{cs.N, cs.F, 7, 6})
      end
      local function scaled(t)
        local r = {}
        for i = 1, #t do r[i] = t[i] * times end
        return r
      end
      if req.data ~= 'null' then H.near(exe.grad_dict.data:toflat(), scaled(rgx), 1e-5) end
      if req.c_weight ~= 'null' then H.near(exe.grad_dict.c_weight:toflat(), scaled(rgw), 1e-5) end
      exe:free()
    end
  end)

  it('leaves float64, strides, dilation and groups to im2col + GEMM (bit-identical there)', function()
    local X = mx.nd.random.uniform(-1, 1, {2, 4, 6, 6})
    local W = mx.nd.random.uniform(-1, 1, {4, 4, 3, 3})
    local Wg = mx.nd.random.uniform(-1, 1, {4, 2, 3, 3})
    local function all(x, w)
      return {mx.nd.Convolution{data = x, weight = w, kernel = {3, 3}, num_filter = 4, no_bias = true,
                                stride = {2, 2}, pad = {1, 1}},
              mx.nd.Convolution{data = x, weight = w, kernel = {3, 3}, num_filter = 4, no_bias = true,
                                dilate = {2, 2}, pad = {2, 2}},
              mx.nd.Convolution{data = x, weight = Wg, kernel = {3, 3}, num_filter = 4, no_bias = true,
                                num_group = 2, pad = {1, 1}},
              mx.nd.Convolution{data = x:astype('float64'), weight = w:astype('float64'),
                                kernel = {3, 3}, num_filter = 4, no_bias = true, pad = {1, 1}}}
    end
    mx.runtime.conv_algo('gemm')
    local a = all(X, W)
    mx.runtime.conv_algo('winograd')
    local b = all(X, W)
    for i = 1, #a do assert.are.same(a[i]:toflat(), b[i]:toflat()) end
  end)
end)

describe('mx.runtime.conv_algo', function()
  local before
  setup(function() before = mx.runtime.features().kernels.conv.algo end)
  teardown(function() mx.runtime.conv_algo(before) end)

  it('sets the algorithm that features() reports', function()
    assert.are.equal('gemm', mx.runtime.conv_algo('gemm'))
    local cv = mx.runtime.features().kernels.conv
    assert.are.equal('gemm', cv.algo)
    assert.truthy(cv.source:find('conv_algo', 1, true), cv.source)
    assert.truthy(tostring(mx.runtime.features()):find('CONV', 1, true))
    assert.are.equal('winograd2', mx.runtime.conv_algo('winograd2'))
    assert.truthy(mx.runtime.features().kernels.conv.winograd:find('F(2x2,3x3)', 1, true))
    assert.are.equal('auto', mx.runtime.conv_algo('auto'))
    assert.truthy(mx.runtime.features().kernels.conv.winograd:find('F(4x4,3x3)', 1, true))
  end)

  it('rejects an unknown algorithm and keeps the one in force', function()
    mx.runtime.conv_algo('auto')
    H.raises(function() mx.runtime.conv_algo('fft') end, 'lmx_cpu_conv_set_algo',
             "argument 'algo'", "'auto', 'gemm', 'winograd', 'winograd2' or 'winograd4'",
             "got 'fft'")
    H.raises(function() mx.runtime.conv_algo(3) end, 'mx.runtime.conv_algo', 'argument 1', 'number')
    assert.are.equal('auto', mx.runtime.features().kernels.conv.algo)
  end)

  it('starts from LUAMX_CONV in a fresh process, and says when it is not understood', function()
    local lib = os.getenv('LUAMX_LIB') and ('LUAMX_LIB=' .. os.getenv('LUAMX_LIB') .. ' ') or ''
    local function algo_in(env)
      local p = io.popen(lib .. env .. [[ luajit -e "local mx = require 'luamx'
        local c = mx.runtime.features().kernels.conv print(c.algo .. '|' .. c.source)" 2>&1]])
      local out = p:read('*a')
      p:close()
      return out
    end
    assert.truthy(algo_in('LUAMX_CONV=gemm'):find('gemm|LUAMX_CONV', 1, true))
    assert.truthy(algo_in('LUAMX_CONV=winograd'):find('winograd|LUAMX_CONV', 1, true))
    assert.truthy(algo_in('LUAMX_CONV=winograd4'):find('winograd4|LUAMX_CONV', 1, true))
    local bad = algo_in('LUAMX_CONV=fast')
    assert.truthy(bad:find('auto|LUAMX_CONV not understood', 1, true), bad)
  end)
end)
