-- ops_sampling_spec.lua — GridGenerator, BilinearSampler, SpatialTransformer, ROIPooling,
-- _contrib_ROIAlign and _contrib_PSROIPooling (issue 14): forward values against MXNet's documented examples
-- and closed forms (bilinear interpolation reproduces a linear function exactly, so
-- ROIAlign of a plane a y + b x gives the plane at each bin's centre) in float32 and
-- float64, the rois' zero gradient and ROIPooling's gradient at its argmax, defaults,
-- hidden outputs, shape inference, JSON round trips, and the errors bad parameters and
-- shapes give. Gradients are checked by tests/test_gradcheck.c (finite differences, and
-- the GPU against the CPU); a SpatialTransformer network trains a few steps at the end.
local mx = require 'luamx'
local H = require 'helpers'

local DTYPES = { float32 = 1e-5, float64 = 1e-12 }

local function arr(flat, s, dt) return mx.nd.array(flat, { dtype = dt }):reshape(s) end

local function err(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok)
  return (tostring(e):gsub('^.-:%d+: ', ''))
end

local function defaults(op)
  local d = {}
  for _, p in ipairs(mx.op.info(op).params) do d[p.name] = p.default or 'REQUIRED' end
  return d
end

-- MXNet's BilinearSampler example image (1, 1, 4, 4)
local X4 = { 1, 4, 3, 6, 1, 8, 8, 9, 0, 4, 1, 5, 1, 0, 1, 3 }

describe('GridGenerator', function()
  for dt, tol in pairs(DTYPES) do
    it('maps the target pixels through theta, and adds a warp flow (' .. dt .. ')', function()
      -- identity theta over (2, 3): x = -1, 0, 1 per row, y = -1 then 1
      local g = mx.nd.GridGenerator { data = arr({ 1, 0, 0, 0, 1, 0 }, { 1, 6 }, dt),
        transform_type = 'affine', target_shape = { 2, 3 } }
      assert.are.same({ 1, 2, 2, 3 }, g.shape)
      H.near(g:toflat(), { -1, 0, 1, -1, 0, 1, -1, -1, -1, 1, 1, 1 }, tol)
      -- theta (0.5, 0.25, 0.1, -1, 2, 0.3): x' = 0.5 x + 0.25 y + 0.1, y' = -x + 2 y + 0.3
      local t = mx.nd.GridGenerator { data = arr({ 0.5, 0.25, 0.1, -1, 2, 0.3 }, { 1, 6 }, dt),
        transform_type = 'affine', target_shape = { 2, 3 } }
      local want = {}
      for k = 0, 1 do
        for _, y in ipairs { -1, 1 } do
          for _, x in ipairs { -1, 0, 1 } do
            want[#want + 1] = k == 0 and 0.5 * x + 0.25 * y + 0.1 or -x + 2 * y + 0.3
          end
        end
      end
      H.near(t:toflat(), want, tol)
      -- warp: (flow_x + w) 2 / (W - 1) - 1, (flow_y + h) 2 / (H - 1) - 1 over (3, 2)
      local flow = { 1, 0, 0.5, -1, 0, 2, 0, 0, 1, 1, -0.5, 0 }
      local w = mx.nd.GridGenerator { data = arr(flow, { 1, 2, 3, 2 }, dt),
        transform_type = 'warp' }
      H.near(w:toflat(), { 1, 1, 0, -1, -1, 5, -1, -1, 1, 1, 0.5, 1 }, tol)
    end)
  end

  it('has MXNet 1.9 parameters, round-trips JSON and refuses bad shapes', function()
    assert.are.same({ transform_type = 'REQUIRED', target_shape = '(0, 0)' },
      defaults('GridGenerator'))
    local s = mx.sym.GridGenerator { data = mx.sym.Variable('theta'), transform_type = 'affine',
      target_shape = { 5, 7 }, name = 'gg' }
    local _, outs = s:infer_shape { theta = { 3, 6 } }
    assert.are.same({ { 3, 2, 5, 7 } }, outs)
    local js = s:tojson()
    assert.are.equal(js, mx.sym.load_json(js):tojson())
    assert.truthy(js:find('"transform_type": "affine"', 1, true))
    local w = mx.sym.GridGenerator { data = mx.sym.Variable('flow'), transform_type = 'warp' }
    _, outs = w:infer_shape { flow = { 2, 2, 4, 3 } }
    assert.are.same({ { 2, 2, 4, 3 } }, outs)
    assert.are.equal("GridGenerator: parameter 'target_shape': expected (H, W) with both above "
      .. "0, got (0,0)", err(mx.nd.GridGenerator, { data = mx.nd.ones({ 1, 6 }),
        transform_type = 'affine' }))
    assert.truthy(err(mx.nd.GridGenerator, { data = mx.nd.ones({ 2, 4 }),
      transform_type = 'affine', target_shape = { 2, 2 } })
      :find("GridGenerator: input 'data': an affine transform needs (N, 6), got (2,4)", 1, true))
    assert.truthy(err(mx.nd.GridGenerator, { data = mx.nd.ones({ 1, 3, 2, 2 }),
      transform_type = 'warp' }):find("input 'data': a warp flow needs 2 channels (N, 2, H, W), "
      .. "got (1,3,2,2)", 1, true))
    assert.truthy(err(mx.nd.GridGenerator, { data = mx.nd.ones({ 1, 6 }),
      transform_type = 'perspective' }):find("parameter 'transform_type'", 1, true))
  end)
end)

describe('BilinearSampler', function()
  for dt, tol in pairs(DTYPES) do
    it('gives MXNet\'s documented zoom and shift examples (' .. dt .. ')', function()
      local x = arr(X4, { 1, 1, 4, 4 }, dt)
      -- Example 1: affine [[2, 0, 0], [0, 2, 0]] zooms out (zeros outside)
      local grid = mx.nd.GridGenerator { data = arr({ 2, 0, 0, 0, 2, 0 }, { 1, 6 }, dt),
        transform_type = 'affine', target_shape = { 4, 4 } }
      local out = mx.nd.BilinearSampler { data = x, grid = grid }
      assert.are.same({ 1, 1, 4, 4 }, out.shape)
      H.near(out:toflat(), { 0, 0, 0, 0, 0, 3.5, 6.5, 0, 0, 1.25, 2.5, 0, 0, 0, 0, 0 }, tol)
      -- Example 2: a warp flow of x + 1 shifts the data left by a pixel
      local flow = {}
      for i = 1, 16 do flow[i] = 1 end
      for i = 17, 32 do flow[i] = 0 end
      local g2 = mx.nd.GridGenerator { data = arr(flow, { 1, 2, 4, 4 }, dt),
        transform_type = 'warp' }
      local o2 = mx.nd.BilinearSampler(x, g2)
      H.near(o2:toflat(), { 4, 3, 6, 0, 8, 8, 9, 0, 4, 1, 5, 0, 0, 1, 3, 0 }, tol)
    end)

    it('interpolates between the four neighbours and reads zeros outside (' .. dt .. ')',
      function()
        -- (x, y) = (0.25, -0.5) normalised on a 3 x 3 plane: pixel (1.25, 0.5)
        local x = arr({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 30, 40, 50, 60, 70, 80, 90 },
          { 1, 2, 3, 3 }, dt)
        local grid = arr({ 0.25, -1.5, -0.5, 1.2 }, { 1, 2, 1, 2 }, dt)
        local out = mx.nd.BilinearSampler(x, grid)
        -- point 1: rows 0/1 half each, columns 1/2 at 0.75/0.25
        local p1 = 0.5 * (0.75 * 2 + 0.25 * 3) + 0.5 * (0.75 * 5 + 0.25 * 6)
        -- point 2: x = -0.5 pixel (column -1 outside, weight 0.5 on column 0), y = 2.2:
        -- rows 2 (0.8) and 3 (outside)
        local p2 = 0.8 * 0.5 * 7
        H.near(out:toflat(), { p1, p2, 10 * p1, 10 * p2 }, tol * 10)
      end)
  end

  it('names its inputs, infers the output and refuses bad grids', function()
    assert.are.same({ cudnn_off = 'None' }, defaults('BilinearSampler'))
    local s = mx.sym.BilinearSampler { mx.sym.Variable('d'), mx.sym.Variable('g'), name = 'bs' }
    assert.are.same({ 'd', 'g' }, s:list_arguments())
    assert.are.same({ 'data', 'grid' }, mx.op.info('BilinearSampler').inputs)
    local _, outs = s:infer_shape { d = { 2, 3, 8, 8 }, g = { 2, 2, 5, 6 } }
    assert.are.same({ 2, 3, 5, 6 }, outs[1])
    local js = s:tojson()
    assert.are.equal(js, mx.sym.load_json(js):tojson())
    assert.truthy(err(mx.nd.BilinearSampler, mx.nd.ones({ 2, 3, 4, 4 }), mx.nd.ones({ 2, 3, 4, 4 }))
      :find("BilinearSampler: input 'grid': expected (2, 2, H, W) for data (2,3,4,4), got "
        .. "(2,3,4,4)", 1, true))
    assert.truthy(err(mx.nd.BilinearSampler, mx.nd.ones({ 3, 4, 4 }), mx.nd.ones({ 1, 2, 4, 4 }))
      :find("input 'data': expected 4-D data (N, C, H, W), got (3,4,4)", 1, true))
    assert.truthy(err(mx.nd.BilinearSampler, mx.nd.ones({ 1, 1, 2, 2 }),
      mx.nd.ones({ 1, 2, 2, 2 }, { dtype = 'float64' }))
      :find("BilinearSampler: input 'grid': expected float32, got float64", 1, true))
  end)
end)

describe('SpatialTransformer', function()
  for dt, tol in pairs(DTYPES) do
    it('is GridGenerator (affine) then BilinearSampler (' .. dt .. ')', function()
      math.randomseed(21)
      local d, l = {}, {}
      for i = 1, 2 * 3 * 5 * 6 do d[i] = 2 * math.random() - 1 end
      for i = 1, 12 do l[i] = 1.2 * math.random() - 0.6 end
      local data, loc = arr(d, { 2, 3, 5, 6 }, dt), arr(l, { 2, 6 }, dt)
      local y = mx.nd.SpatialTransformer { data = data, loc = loc, target_shape = { 4, 3 },
        transform_type = 'affine', sampler_type = 'bilinear' }
      assert.are.same({ 2, 3, 4, 3 }, y.shape)
      local g = mx.nd.GridGenerator { data = loc, transform_type = 'affine',
        target_shape = { 4, 3 } }
      H.near(y:toflat(), mx.nd.BilinearSampler(data, g):toflat(), tol)
      -- the identity transform over the data's own size returns the data
      local id = mx.nd.SpatialTransformer { data = data, loc = arr({ 1, 0, 0, 0, 1, 0, 1, 0, 0,
        0, 1, 0 }, { 2, 6 }, dt), target_shape = { 5, 6 }, transform_type = 'affine',
        sampler_type = 'bilinear' }
      H.near(id:toflat(), d, tol * 10)
    end)
  end

  it('infers loc, round-trips JSON and refuses bad parameters', function()
    assert.are.same({ target_shape = '(0, 0)', transform_type = 'REQUIRED',
      sampler_type = 'REQUIRED', cudnn_off = 'None' }, defaults('SpatialTransformer'))
    local s = mx.sym.SpatialTransformer { data = mx.sym.Variable('data'), target_shape = { 4, 4 },
      transform_type = 'affine', sampler_type = 'bilinear', name = 'stn' }
    assert.are.same({ 'data', 'stn_loc' }, s:list_arguments())
    local args, outs = s:infer_shape { data = { 2, 3, 8, 8 } }
    assert.are.same({ 2, 6 }, args[2])
    assert.are.same({ 2, 3, 4, 4 }, outs[1])
    local js = s:tojson()
    assert.are.equal(js, mx.sym.load_json(js):tojson())
    assert.truthy(js:find('"target_shape": "(4, 4)"', 1, true))
    assert.truthy(err(mx.nd.SpatialTransformer, { data = mx.nd.ones({ 1, 1, 4, 4 }),
      loc = mx.nd.ones({ 1, 6 }), transform_type = 'affine', sampler_type = 'nearest',
      target_shape = { 2, 2 } }):find("SpatialTransformer: parameter 'sampler_type'", 1, true))
    assert.truthy(err(mx.nd.SpatialTransformer, { data = mx.nd.ones({ 2, 1, 4, 4 }),
      loc = mx.nd.ones({ 2, 4 }), transform_type = 'affine', sampler_type = 'bilinear',
      target_shape = { 2, 2 } }):find("input 'loc': expected (2, 6) (an affine matrix per image "
      .. "of data (2,1,4,4)), got (2,4)", 1, true))
  end)
end)

-- (1, 1, 8, 6) of 0..47, MXNet's ROIPooling example
local function x48(dt)
  local t = {}
  for i = 0, 47 do t[#t + 1] = i end
  return arr(t, { 1, 1, 8, 6 }, dt)
end

describe('ROIPooling', function()
  for dt, tol in pairs(DTYPES) do
    it('gives MXNet\'s documented example (' .. dt .. ')', function()
      local x, rois = x48(dt), arr({ 0, 0, 0, 4, 4 }, { 1, 5 }, dt)
      local y = mx.nd.ROIPooling { data = x, rois = rois, pooled_size = { 2, 2 },
        spatial_scale = 1 }
      assert.are.same({ 1, 1, 2, 2 }, y.shape)
      H.near(y:toflat(), { 14, 16, 26, 28 }, tol)
      local y2 = mx.nd.ROIPooling(x, rois, { pooled_size = { 2, 2 }, spatial_scale = 0.7 })
      H.near(y2:toflat(), { 7, 9, 19, 21 }, tol)
    end)
  end

  it('sends the gradient to each bin\'s max, none to the rois, zeros ignored rois', function()
    local x = x48('float64')
    -- roi 2 belongs to batch 1 (outside a batch of 1) and roi 3 to batch -1: both ignored
    local rois = arr({ 0, 0, 0, 4, 4, 0, 1, 1, 2, 2, 1, 0, 0, 4, 4, -1, 0, 0, 4, 4 }, { 4, 5 },
      'float64')
    x:attach_grad()
    rois:attach_grad()
    local w = arr({ 1, 2, 3, 4, 10, 20, 30, 40, 5, 5, 5, 5, 7, 7, 7, 7 }, { 4, 1, 2, 2 },
      'float64')
    local y
    mx.autograd.record(function()
      y = mx.nd.ROIPooling { data = x, rois = rois, pooled_size = { 2, 2 }, spatial_scale = 1 }
      return mx.nd.sum(y * w)
    end):backward()
    -- roi 1 covers rows/columns 1..2: every bin is one pixel (7, 8, 13, 14 -> 7 8 / 13 14)
    H.near(y:toflat(), { 14, 16, 26, 28, 7, 8, 13, 14, 0, 0, 0, 0, 0, 0, 0, 0 }, 1e-12)
    local g = {}
    for i = 1, 48 do g[i] = 0 end
    g[15], g[17], g[27], g[29] = 1, 2, 3, 4
    g[8], g[9], g[14], g[15] = 10, 20, 30, 40 + 1
    H.near(x.grad:toflat(), g, 1e-12)
    H.near(rois.grad:toflat(), mx.nd.zeros({ 20 }):toflat(), 0)
  end)

  it('has MXNet 1.9 parameters, a hidden maxidx and shape errors', function()
    assert.are.same({ pooled_size = 'REQUIRED', spatial_scale = 'REQUIRED' },
      defaults('ROIPooling'))
    local info = mx.op.info('ROIPooling', { pooled_size = { 2, 2 }, spatial_scale = 1 })
    assert.are.same({ 'data', 'rois' }, info.inputs)
    assert.are.same({ 'output', 'maxidx' }, info.outputs)
    assert.are.equal(1, info.num_visible_outputs)
    local s = mx.sym.ROIPooling { mx.sym.Variable('feat'), mx.sym.Variable('rois'),
      pooled_size = { 7, 7 }, spatial_scale = 0.0625, name = 'pool' }
    local _, outs = s:infer_shape { feat = { 2, 16, 20, 30 }, rois = { 10, 5 } }
    assert.are.same({ { 10, 16, 7, 7 } }, outs)
    local js = s:tojson()
    assert.are.equal(js, mx.sym.load_json(js):tojson())
    assert.truthy(err(mx.nd.ROIPooling, mx.nd.ones({ 1, 1, 4, 4 }), mx.nd.ones({ 2, 4 }),
      { pooled_size = { 2, 2 }, spatial_scale = 1 })
      :find("ROIPooling: input 'rois': expected (R, 5) rows of (batch index, x1, y1, x2, y2), "
        .. "got (2,4)", 1, true))
    assert.truthy(err(mx.nd.ROIPooling, mx.nd.ones({ 1, 1, 4, 4 }), mx.nd.ones({ 2, 5 }),
      { pooled_size = { 2, 2 }, spatial_scale = 2 }):find("parameter 'spatial_scale'", 1, true))
    assert.are.equal("ROIPooling: parameter 'pooled_size': expected (h, w) with both above 0, "
      .. "got (2,0)", err(mx.nd.ROIPooling, mx.nd.ones({ 1, 1, 4, 4 }), mx.nd.ones({ 2, 5 }),
        { pooled_size = { 2, 0 }, spatial_scale = 1 }))
  end)
end)

-- data (N, C, H, W) with value 100 k + 10 h + w in channel k (a plane per channel)
local function planes(N, C, Hh, W, dt)
  local t = {}
  for _ = 1, N do
    for k = 0, C - 1 do
      for h = 0, Hh - 1 do
        for w = 0, W - 1 do t[#t + 1] = 100 * k + 10 * h + w end
      end
    end
  end
  return arr(t, { N, C, Hh, W }, dt)
end

describe('_contrib_ROIAlign', function()
  for dt, tol in pairs(DTYPES) do
    it('gives a linear plane at the bin centres, aligned half a pixel earlier (' .. dt .. ')',
      function()
        local x = planes(2, 2, 6, 7, dt)
        -- roi (1, 2, 1, 5, 3) at scale 1: x 2..5, y 1..3; 2 x 3 bins of (1, 1)
        local rois = arr({ 1, 2, 1, 5, 3, 0, 2, 2, 4, 4 }, { 2, 5 }, dt)
        local y = mx.nd._contrib_ROIAlign { data = x, rois = rois, pooled_size = { 2, 3 },
          spatial_scale = 1 }
        assert.are.same({ 2, 2, 2, 3 }, y.shape)
        local want = {}
        local function roi(x1, y1, x2, y2, off)
          local bw, bh = (x2 - x1) / 3, (y2 - y1) / 2
          for k = 0, 1 do
            for ph = 0, 1 do
              for pw = 0, 2 do
                local cy, cx = y1 - off + (ph + 0.5) * bh, x1 - off + (pw + 0.5) * bw
                want[#want + 1] = 100 * k + 10 * cy + cx
              end
            end
          end
        end
        roi(2, 1, 5, 3, 0)
        roi(2, 2, 4, 4, 0)
        H.near(y:toflat(), want, tol * 100)
        -- aligned: the same rois shifted by half a pixel, sample_ratio 2
        local ya = mx.nd._contrib_ROIAlign { data = x, rois = rois, pooled_size = { 2, 3 },
          spatial_scale = 1, aligned = true, sample_ratio = 2 }
        want = {}
        roi(2, 1, 5, 3, 0.5)
        roi(2, 2, 4, 4, 0.5)
        H.near(ya:toflat(), want, tol * 100)
      end)

    it('pools position-sensitively and zeros ignored rois (' .. dt .. ')', function()
      local x = planes(1, 8, 5, 5, dt)
      -- 2 x 2 bins of 2 output channels: bin (ph, pw) of channel c reads (c 2 + ph) 2 + pw
      local rois = arr({ 0, 0, 0, 4, 4, 3, 0, 0, 4, 4, -1, 1, 1, 2, 2 }, { 3, 5 }, dt)
      local y = mx.nd._contrib_ROIAlign { data = x, rois = rois, pooled_size = { 2, 2 },
        spatial_scale = 0.5, position_sensitive = true }
      assert.are.same({ 3, 2, 2, 2 }, y.shape)
      local want = {}
      for c = 0, 1 do
        for ph = 0, 1 do
          for pw = 0, 1 do
            -- roi 0..2 at scale 0.5, bins of 1: centres 0.5, 1.5
            want[#want + 1] = 100 * ((c * 2 + ph) * 2 + pw) + 10 * (ph + 0.5) + (pw + 0.5)
          end
        end
      end
      for _ = 1, 16 do want[#want + 1] = 0 end
      H.near(y:toflat(), want, tol * 100)
    end)
  end

  it('averages the bilinear samples of a roi reaching outside the data', function()
    -- one 2 x 2 plane, roi (0, -1, -1, 3, 3): a single bin with a 4 x 4 sample grid at
    -- -0.5, 0.5, 1.5, 2.5 per axis; -0.5 clamps to 0, 1.5 to 1 (past H - 1), 2.5 (past H)
    -- reads nothing
    local x = arr({ 1, 2, 3, 4 }, { 1, 1, 2, 2 }, 'float64')
    local y = mx.nd._contrib_ROIAlign(x, arr({ 0, -1, -1, 3, 3 }, { 1, 5 }, 'float64'),
      { pooled_size = { 1, 1 }, spatial_scale = 1 })
    local function f(yy, xx) -- bilinear on the 2 x 2 plane: zero past H (W), else clamped
      if yy > 2 or xx > 2 then return 0 end
      yy, xx = math.min(math.max(yy, 0), 1), math.min(math.max(xx, 0), 1)
      return 1 + 2 * yy + xx
    end
    local s = 0
    for _, yy in ipairs { -0.5, 0.5, 1.5, 2.5 } do
      for _, xx in ipairs { -0.5, 0.5, 1.5, 2.5 } do s = s + f(yy, xx) end
    end
    H.near(y:toflat(), { s / 16 }, 1e-12)
  end)

  it('sends rois no gradient and data the bilinear weights', function()
    local x = mx.nd.zeros({ 1, 1, 3, 3 }, { dtype = 'float64' })
    local rois = arr({ 0, 0.5, 0.5, 1.5, 1.5 }, { 1, 5 }, 'float64')
    x:attach_grad()
    rois:attach_grad()
    mx.autograd.record(function()
      return mx.nd.sum(mx.nd._contrib_ROIAlign { data = x, rois = rois, pooled_size = { 1, 1 },
        spatial_scale = 1, sample_ratio = 1 } * 4)
    end):backward()
    -- one sample at (1, 1): all weight on pixel (1, 1)
    H.near(x.grad:toflat(), { 0, 0, 0, 0, 4, 0, 0, 0, 0 }, 1e-12)
    H.near(rois.grad:toflat(), { 0, 0, 0, 0, 0 }, 0)
  end)

  it('has MXNet 1.9 parameters, round-trips JSON and refuses bad shapes', function()
    assert.are.same({ pooled_size = 'REQUIRED', spatial_scale = 'REQUIRED', sample_ratio = '-1',
      position_sensitive = 'False', aligned = 'False' }, defaults('_contrib_ROIAlign'))
    local s = mx.sym._contrib_ROIAlign { mx.sym.Variable('feat'), mx.sym.Variable('rois'),
      pooled_size = { 7, 7 }, spatial_scale = 0.0625, sample_ratio = 2, aligned = true,
      name = 'align' }
    local _, outs = s:infer_shape { feat = { 2, 16, 20, 30 }, rois = { 10, 5 } }
    assert.are.same({ { 10, 16, 7, 7 } }, outs)
    local js = s:tojson()
    assert.are.equal(js, mx.sym.load_json(js):tojson())
    assert.truthy(js:find('"op": "_contrib_ROIAlign"', 1, true))
    assert.truthy(err(mx.nd._contrib_ROIAlign, mx.nd.ones({ 1, 6, 4, 4 }), mx.nd.ones({ 1, 5 }),
      { pooled_size = { 2, 2 }, spatial_scale = 1, position_sensitive = true })
      :find("_contrib_ROIAlign: input 'data': position_sensitive needs channels divisible by "
        .. "pooled_size's 2 x 2, got (1,6,4,4)", 1, true))
    assert.truthy(err(mx.nd._contrib_ROIAlign, mx.nd.ones({ 1, 1, 4, 4 }), mx.nd.ones({ 1, 5 }),
      { pooled_size = { 2, 2 }, spatial_scale = 1, sample_ratio = 65 })
      :find("_contrib_ROIAlign: parameter 'sample_ratio'", 1, true))
    assert.truthy(err(mx.nd._contrib_ROIAlign, mx.nd.ones({ 4, 4 }), mx.nd.ones({ 1, 5 }),
      { pooled_size = { 2, 2 }, spatial_scale = 1 })
      :find("input 'data': expected 4-D data (N, C, H, W), got (4,4)", 1, true))
  end)

  it('survives hostile rois: huge, NaN and infinite numbers give finite outputs', function()
    local x = planes(1, 1, 4, 4, 'float32')
    local rois = arr({ 0, -1e30, -1e30, 1e30, 1e30, 0, 0 / 0, 0, 2, 2, 0, 0, 0, 1 / 0, 2,
      1e9, 0, 0, 2, 2 }, { 4, 5 }, 'float32')
    for _, op in ipairs { '_contrib_ROIAlign', 'ROIPooling' } do
      local y = mx.nd[op](x, rois, { pooled_size = { 2, 2 }, spatial_scale = 1 }):toflat()
      for i = 1, #y do assert.is_true(y[i] == y[i] and math.abs(y[i]) < 1e6) end
      for i = 5, 16 do assert.are.equal(0, y[i]) end
    end
  end)
end)

describe('_contrib_PSROIPooling', function()
  for dt, tol in pairs(DTYPES) do
    it('averages each bin of its own channel, corners rounded then scaled (' .. dt .. ')',
      function()
        local x = planes(1, 8, 6, 6, dt)
        -- roi (0, 0, 0, 3, 3) at scale 1: x, y in [0, 4), 2 x 2 bins of 2 x 2 pixels;
        -- roi (0, 1, 1, 4, 6) at 0.5 (second call): [0.5, 2.5) x [0.5, 3.5), bins of 1 x 1.5
        -- give windows rows [0, 2), [2, 4) and columns [0, 2), [1, 3)
        local y = mx.nd._contrib_PSROIPooling { data = x, rois = arr({ 0, 0, 0, 3, 3 }, { 1, 5 },
          dt), spatial_scale = 1, output_dim = 2, pooled_size = 2 }
        local y2 = mx.nd._contrib_PSROIPooling { data = x, rois = arr({ 0, 1, 1, 4, 6, -1, 0, 0,
          3, 3 }, { 2, 5 }, dt), spatial_scale = 0.5, output_dim = 2, pooled_size = 2 }
        assert.are.same({ 1, 2, 2, 2 }, y.shape)
        assert.are.same({ 2, 2, 2, 2 }, y2.shape)
        local want, want2 = {}, {}
        for c = 0, 1 do
          for ph = 0, 1 do
            for pw = 0, 1 do
              local ch = (c * 2 + ph) * 2 + pw -- bin (ph, pw) of output channel c
              want[#want + 1] = 100 * ch + 10 * (2 * ph + 0.5) + (2 * pw + 0.5)
              want2[#want2 + 1] = 100 * ch + 10 * (2 * ph + 0.5) + (pw + 0.5)
            end
          end
        end
        for _ = 1, 8 do want2[#want2 + 1] = 0 end -- the ignored roi (batch -1)
        H.near(y:toflat(), want, tol * 100)
        H.near(y2:toflat(), want2, tol * 100)
      end)
  end

  it('has MXNet 1.9 parameters, round-trips JSON and refuses too few channels', function()
    assert.are.same({ spatial_scale = 'REQUIRED', output_dim = 'REQUIRED',
      pooled_size = 'REQUIRED', group_size = '0' }, defaults('_contrib_PSROIPooling'))
    local s = mx.sym._contrib_PSROIPooling { mx.sym.Variable('feat'), mx.sym.Variable('rois'),
      spatial_scale = 0.0625, output_dim = 3, pooled_size = 7, name = 'ps' }
    local _, outs = s:infer_shape { feat = { 1, 147, 20, 30 }, rois = { 6, 5 } }
    assert.are.same({ { 6, 3, 7, 7 } }, outs)
    local js = s:tojson()
    assert.are.equal(js, mx.sym.load_json(js):tojson())
    assert.truthy(err(mx.nd._contrib_PSROIPooling, mx.nd.ones({ 1, 7, 4, 4 }),
      mx.nd.ones({ 1, 5 }), { spatial_scale = 1, output_dim = 2, pooled_size = 2 })
      :find("_contrib_PSROIPooling: input 'data': expected at least output_dim x group_size^2 = "
        .. "2 x 2^2 channels, got (1,7,4,4)", 1, true))
  end)
end)

describe('the sampling and ROI ops on gpu(0)', function()
  if mx.context.num_gpus() == 0 then
    pending('no GPU context (mx.context.num_gpus() == 0): skipped')
    return
  end
  local gpu = mx.gpu(0)

  it('give MXNet\'s examples there and refuse float16, naming the op', function()
    local x = mx.nd.array(X4, { ctx = gpu }):reshape({ 1, 1, 4, 4 })
    local grid = mx.nd.GridGenerator { data = mx.nd.array({ 2, 0, 0, 0, 2, 0 }, { ctx = gpu })
      :reshape({ 1, 6 }), transform_type = 'affine', target_shape = { 4, 4 } }
    H.near(mx.nd.BilinearSampler(x, grid):copyto(mx.cpu()):toflat(),
      { 0, 0, 0, 0, 0, 3.5, 6.5, 0, 0, 1.25, 2.5, 0, 0, 0, 0, 0 }, 1e-5)
    local y = mx.nd.ROIPooling(x48('float32'):copyto(gpu), mx.nd.array({ 0, 0, 0, 4, 4 },
      { ctx = gpu }):reshape({ 1, 5 }), { pooled_size = { 2, 2 }, spatial_scale = 0.7 })
    H.near(y:copyto(mx.cpu()):toflat(), { 7, 9, 19, 21 }, 1e-5)
    H.raises(function()
      mx.nd._contrib_ROIAlign(mx.nd.ones({ 1, 1, 4, 4 }, { ctx = gpu, dtype = 'float16' }),
        mx.nd.ones({ 1, 5 }, { ctx = gpu, dtype = 'float16' }), { pooled_size = { 2, 2 },
          spatial_scale = 1 })
    end, "_contrib_ROIAlign: input 'data': expected float32 or float64 on the GPU, got float16")
  end)
end)

describe('a SpatialTransformer network', function()
  it('learns to move blobs onto their targets (the loss falls)', function()
    -- images of one Gaussian blob each; targets the same blobs moved by (-1, +0.5)
    -- pixels; the localisation net is one FullyConnected layer (zero weights, identity
    -- bias), trained by plain SGD through SpatialTransformer's loc gradient
    local N, S = 8, 8
    local function blob(cx, cy, s, out)
      for h = 0, S - 1 do
        for w = 0, S - 1 do
          out[#out + 1] = math.exp(-((w - cx) ^ 2 + (h - cy) ^ 2) / (2 * s * s))
        end
      end
    end
    math.randomseed(5)
    local xs, ts = {}, {}
    for _ = 1, N do
      local cx, cy, s = 2 + 3 * math.random(), 2 + 3 * math.random(), 1 + math.random()
      blob(cx, cy, s, xs)
      blob(cx - 1, cy + 0.5, s, ts)
    end
    local x, target = arr(xs, { N, 1, S, S }, 'float32'), arr(ts, { N, 1, S, S }, 'float32')
    local w, b = mx.nd.zeros({ 6, S * S }), mx.nd.array({ 1, 0, 0, 0, 1, 0 })
    w:attach_grad()
    b:attach_grad()
    local losses = {}
    for step = 1, 10 do
      local loss
      mx.autograd.record(function()
        local loc = mx.nd.FullyConnected { data = x, weight = w, bias = b, num_hidden = 6 }
        local y = mx.nd.SpatialTransformer { data = x, loc = loc, target_shape = { S, S },
          transform_type = 'affine', sampler_type = 'bilinear' }
        loss = mx.nd.sum(mx.nd.square(y - target)) / N
        return loss
      end):backward()
      losses[step] = loss:toflat()[1]
      w:set(w - w.grad * 0.002)
      b:set(b - b.grad * 0.002)
    end
    assert.is_true(losses[10] < 0.1 * losses[1], table.concat(losses, ' '))
    for i = 2, 10 do assert.is_true(losses[i] < losses[1]) end
  end)
end)
