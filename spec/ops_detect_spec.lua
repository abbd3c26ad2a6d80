-- ops_detect_spec.lua — the detection operators of issue 14 (MXNet 1.9's contrib names):
-- _contrib_box_nms (alias _contrib_box_non_maximum_suppression), _contrib_box_iou and
-- _contrib_bipartite_matching against the worked examples of MXNet's documentation;
-- _contrib_MultiBoxPrior, _contrib_MultiBoxTarget and _contrib_MultiBoxDetection (the SSD
-- heads) against values worked by hand from MXNet's rules (src/operator/contrib/
-- multibox_*.cc) and against a Lua re-implementation of the anchor grid; gradients as
-- MXNet defines them (box_nms moves each kept box's head gradient back to its input row,
-- the others are zero; finite differences in tests/test_gradcheck.c); symbols, shapes,
-- JSON round trips, help text; bad parameters and shapes with their messages; gpu(0)
-- against the CPU where there is one (the simulator in CI).
local mx = require 'luamx'
local H = require 'helpers'
local help = require 'luamx.repl.help'
local op = mx.nd.op

local function arr(t, dt) return mx.nd.array(t, { dtype = dt or 'float32' }) end
local TOL = { float32 = 1e-5, float64 = 1e-12 }

-- flattens nested tables
local function flat(t, out)
  out = out or {}
  if type(t) ~= 'table' then
    out[#out + 1] = t
    return out
  end
  for _, v in ipairs(t) do flat(v, out) end
  return out
end

local function near(a, want, tol)
  H.near(flat(getmetatable(a) == nil and a or a:totable()), flat(want), tol or 1e-5)
end

-- MXNet's box_nms example (src/operator/contrib/bounding_box.cc)
local NMS_X = { { 0, 0.5, 0.1, 0.1, 0.2, 0.2 }, { 1, 0.4, 0.1, 0.1, 0.2, 0.2 },
  { 0, 0.3, 0.1, 0.1, 0.14, 0.14 }, { 2, 0.6, 0.5, 0.5, 0.7, 0.8 } }
local NMS_P = { overlap_thresh = 0.1, coord_start = 2, score_index = 1, id_index = 0,
  force_suppress = true, in_format = 'corner', out_format = 'corner' }
local M1 = { -1, -1, -1, -1, -1, -1 }

describe('_contrib_box_nms (MXNet docs)', function()
  for _, dt in ipairs { 'float32', 'float64' } do
    it('keeps the best of overlapping boxes and passes their gradient back (' .. dt .. ')', function()
      local x = arr(NMS_X, dt)
      local y = op._contrib_box_nms(x, NMS_P)
      assert.are.equal(dt, y.dtype)
      assert.are.same({ 4, 6 }, y.shape)
      near(y, { { 2, 0.6, 0.5, 0.5, 0.7, 0.8 }, { 0, 0.5, 0.1, 0.1, 0.2, 0.2 }, M1, M1 }, TOL[dt])
      x:attach_grad()
      local og = arr({ { 0.1, 0.1, 0.1, 0.1, 0.1, 0.1 }, { 0.2, 0.2, 0.2, 0.2, 0.2, 0.2 },
        { 0.3, 0.3, 0.3, 0.3, 0.3, 0.3 }, { 0.4, 0.4, 0.4, 0.4, 0.4, 0.4 } }, dt)
      mx.autograd.record(function() return op._contrib_box_nms(x, NMS_P) end):backward(og)
      near(x.grad, { { 0.2, 0.2, 0.2, 0.2, 0.2, 0.2 }, { 0, 0, 0, 0, 0, 0 }, { 0, 0, 0, 0, 0, 0 },
        { 0.1, 0.1, 0.1, 0.1, 0.1, 0.1 } }, TOL[dt])
    end)
  end

  it('suppresses within a class only, filters by valid_thresh, background and topk', function()
    local x = arr(NMS_X)
    -- force_suppress off: box 1 (class 1) survives, box 2 (class 0) is suppressed by box 0
    local p = { overlap_thresh = 0.1, id_index = 0 }
    near(op._contrib_box_nms(x, p), { { 2, 0.6, 0.5, 0.5, 0.7, 0.8 },
      { 0, 0.5, 0.1, 0.1, 0.2, 0.2 }, { 1, 0.4, 0.1, 0.1, 0.2, 0.2 }, M1 })
    -- scores must exceed valid_thresh; background_id drops class 2
    near(op._contrib_box_nms(x, { overlap_thresh = 0.1, id_index = 0, valid_thresh = 0.45,
      background_id = 2 }), { { 0, 0.5, 0.1, 0.1, 0.2, 0.2 }, M1, M1, M1 })
    -- only the two best take part (topk): the others are dropped, not kept
    near(op._contrib_box_nms(x, { overlap_thresh = 0.9, topk = 2 }),
      { { 2, 0.6, 0.5, 0.5, 0.7, 0.8 }, { 0, 0.5, 0.1, 0.1, 0.2, 0.2 }, M1, M1 })
    -- topk 0 copies the input through
    near(op._contrib_box_nms(x, { topk = 0 }), NMS_X)
    -- the same through the alias, and with the default threshold 0.5 (IoU of box 0 and
    -- box 2 is 0.16: both kept)
    near(op._contrib_box_non_maximum_suppression(x, { id_index = 0, force_suppress = true }),
      { { 2, 0.6, 0.5, 0.5, 0.7, 0.8 }, { 0, 0.5, 0.1, 0.1, 0.2, 0.2 },
        { 0, 0.3, 0.1, 0.1, 0.14, 0.14 }, M1 })
  end)

  it('converts between corner and center encodings, batches leading dims', function()
    local x = arr({ { { 0.9, 0, 0, 2, 4 }, { 0.8, 1, 1, 3, 3 } },
      { { 0.1, 1, 1, 2, 2 }, { 0.7, 1, 1, 2, 2 } } })
    local y = op._contrib_box_nms(x, { coord_start = 1, score_index = 0, out_format = 'center' })
    -- batch 0: IoU (0,0,2,4)-(1,1,3,3) = 2 / 10 < 0.5, both kept; batch 1 identical boxes
    near(y, { { { 0.9, 1, 2, 2, 4 }, { 0.8, 2, 2, 2, 2 } },
      { { 0.7, 1.5, 1.5, 1, 1 }, { -1, -1, -1, -1, -1 } } })
    local c = op._contrib_box_nms(y, { coord_start = 1, score_index = 0, in_format = 'center',
      out_format = 'corner' })
    near(c, { { { 0.9, 0, 0, 2, 4 }, { 0.8, 1, 1, 3, 3 } },
      { { 0.7, 1, 1, 2, 2 }, { -1, -1, -1, -1, -1 } } })
  end)

  it('refuses bad indices and shapes, naming the parameter', function()
    local x = arr(NMS_X)
    H.raises(function() return op._contrib_box_nms(x, { score_index = 3 }) end,
      '_contrib_box_nms', "parameter 'score_index'", 'outside the coordinates [2, 5], got 3')
    H.raises(function() return op._contrib_box_nms(x, { coord_start = 4 }) end,
      '_contrib_box_nms', "parameter 'coord_start'", 'expected coordinates [4, 7]')
    H.raises(function() return op._contrib_box_nms(x, { id_index = 1 }) end,
      '_contrib_box_nms', "parameter 'id_index'", 'not score_index 1, got 1')
    H.raises(function() return op._contrib_box_nms(arr { 1, 2, 3, 4, 5 }) end,
      '_contrib_box_nms', "input 'data'", 'expected at least 2-D')
    H.raises(function() return op._contrib_box_nms(arr { { 1, 2, 3, 4 } }) end,
      '_contrib_box_nms', "input 'data'", 'box width of at least 5', 'got 4')
    H.raises(function() return op._contrib_box_nms(x, { in_format = 'edge' }) end,
      '_contrib_box_nms', "parameter 'in_format'", 'edge')
    near(op._contrib_box_nms(x, NMS_P), { { 2, 0.6, 0.5, 0.5, 0.7, 0.8 },
      { 0, 0.5, 0.1, 0.1, 0.2, 0.2 }, M1, M1 }) -- still usable
  end)
end)

describe('_contrib_box_iou (MXNet docs)', function()
  for _, dt in ipairs { 'float32', 'float64' } do
    it('gives the IoU of every pair (' .. dt .. ')', function()
      local x = arr({ { 0.5, 0.5, 1.0, 1.0 }, { 0.0, 0.0, 0.5, 0.5 } }, dt)
      local y = arr({ { 0.25, 0.25, 0.75, 0.75 } }, dt)
      local o = op._contrib_box_iou(x, y, { format = 'corner' })
      assert.are.same({ 2, 1 }, o.shape)
      near(o, { { 1 / 7 }, { 1 / 7 } }, TOL[dt])
      -- center encoding: (0.5, 0.5, 1, 1) is the corner box (0, 0, 1, 1)
      local c = op._contrib_box_iou(arr({ { 0.5, 0.5, 1, 1 } }, dt),
        arr({ { { 0, 0, 1, 1 }, { 0, 0, 0.5, 0.5 } }, { { 3, 3, 1, 1 }, { 0.5, 0, 1, 1 } } }, dt),
        { format = 'center' })
      assert.are.same({ 1, 2, 2 }, c.shape)
      -- against (0,0,1,1): (-0.5,-0.5,0.5,0.5) 0.25/1.75; (-0.25,-0.25,0.25,0.25)
      -- 0.0625/1.1875; (2.5,2.5,3.5,3.5) 0; (0,-0.5,1,0.5) 0.5/1.5
      near(c, { { { 0.25 / 1.75, 0.0625 / 1.1875 }, { 0, 0.5 / 1.5 } } }, TOL[dt])
    end)
  end

  it('has a zero gradient and checks its inputs', function()
    local x = arr { { 0, 0, 1, 1 } }
    x:attach_grad()
    mx.autograd.record(function() return op._contrib_box_iou(x, arr { { 0, 0, 2, 2 } }) end):backward()
    near(x.grad, { { 0, 0, 0, 0 } })
    H.raises(function() return op._contrib_box_iou(x, arr { { 0, 0, 2 } }) end,
      '_contrib_box_iou', "input 'rhs'", 'last dim of 4', 'last dim 3')
  end)
end)

describe('_contrib_bipartite_matching (MXNet docs)', function()
  for _, dt in ipairs { 'float32', 'float64' } do
    it('matches rows and columns greedily by score (' .. dt .. ')', function()
      local s = arr({ { 0.5, 0.6 }, { 0.1, 0.2 }, { 0.3, 0.4 } }, dt)
      local r = op._contrib_bipartite_matching(s, { threshold = 1e-12, is_ascend = false })
      assert.are.same({ 1, -1, 0 }, r[1]:totable())
      assert.are.same({ 2, 0 }, r[2]:totable())
      assert.are.equal(dt, r[1].dtype)
    end)
  end

  it('stops at the threshold, sorts ascending, limits with topk, batches', function()
    local s = arr { { { 0.5, 0.6 }, { 0.1, 0.2 }, { 0.3, 0.4 } }, { { 9, 1 }, { 2, 8 }, { 3, 4 } } }
    local r = op._contrib_bipartite_matching(s, { threshold = 0.45 })
    assert.are.same({ { 1, -1, -1 }, { 0, 1, -1 } }, r[1]:totable())
    assert.are.same({ { -1, 0 }, { 0, 1 } }, r[2]:totable())
    -- ascending: the smallest scores first, below the threshold
    r = op._contrib_bipartite_matching(s, { threshold = 5, is_ascend = true })
    -- item 0: 0.1 (1,0), then 0.4 (2,1); item 1: 1 (0,1), 2 (1,0)
    assert.are.same({ { -1, 0, 1 }, { 1, 0, -1 } }, r[1]:totable())
    -- topk = 1: MXNet checks the count after matching, so two pairs are matched
    r = op._contrib_bipartite_matching(s, { threshold = 0, topk = 1 })
    assert.are.same({ { 1, -1, 0 }, { 0, 1, -1 } }, r[1]:totable())
    H.raises(function() return op._contrib_bipartite_matching(s) end,
      '_contrib_bipartite_matching', "'threshold'")
  end)
end)

-- Lua twin of MXNet's MultiBoxPrior (multibox_prior.cc), for any grid
local function prior_ref(h, w, sizes, ratios, clip, steps, offsets)
  local sy, sx = steps[1], steps[2]
  if sy <= 0 or sx <= 0 then sy, sx = 1 / h, 1 / w end
  local out = {}
  local function push(cx, cy, bw, bh)
    local b = { cx - bw, cy - bh, cx + bw, cy + bh }
    for i = 1, 4 do
      if clip then b[i] = math.min(1, math.max(0, b[i])) end
      out[#out + 1] = b[i]
    end
  end
  for r = 0, h - 1 do
    for c = 0, w - 1 do
      local cy, cx = (r + offsets[1]) * sy, (c + offsets[2]) * sx
      for _, s in ipairs(sizes) do push(cx, cy, s * h / w / 2, s / 2) end
      for j = 2, #ratios do
        local q = math.sqrt(ratios[j])
        push(cx, cy, sizes[1] * h / w * q / 2, sizes[1] / q / 2)
      end
    end
  end
  return out
end

describe('_contrib_MultiBoxPrior', function()
  it('gives the worked anchors of a 2x2 grid', function()
    local a = op._contrib_MultiBoxPrior(mx.nd.zeros { 1, 3, 2, 2 }, { sizes = '(0.5, 0.25)',
      ratios = '(1, 2)' })
    assert.are.same({ 1, 12, 4 }, a.shape)
    local q = math.sqrt(2)
    local t = a:totable()[1]
    near(t[1], { 0, 0, 0.5, 0.5 })
    near(t[2], { 0.125, 0.125, 0.375, 0.375 })
    near(t[3], { 0.25 - 0.25 * q, 0.25 - 0.125 * q, 0.25 + 0.25 * q, 0.25 + 0.125 * q })
    near(t[12], { 0.75 - 0.25 * q, 0.75 - 0.125 * q, 0.75 + 0.25 * q, 0.75 + 0.125 * q })
  end)

  for _, dt in ipairs { 'float32', 'float64' } do
    it('matches the rule on rectangular grids, steps, offsets and clip (' .. dt .. ')', function()
      local cases = {
        { 3, 5, { 0.2, 0.4, 0.7 }, { 1, 2, 0.5, 3 }, false, { -1, -1 }, { 0.5, 0.5 } },
        { 4, 2, { 0.9 }, { 1, 0.25 }, true, { 0.3, 0.1 }, { 0, 1 } },
      }
      for _, k in ipairs(cases) do
        local a = op._contrib_MultiBoxPrior(mx.nd.zeros({ 2, 1, k[1], k[2] }, { dtype = dt }), {
          sizes = k[3], ratios = k[4], clip = k[5], steps = k[6], offsets = k[7] })
        assert.are.equal(dt, a.dtype)
        assert.are.same({ 1, k[1] * k[2] * (#k[3] + #k[4] - 1), 4 }, a.shape)
        near(a:toflat(), prior_ref(unpack(k)), 1e-6)
      end
    end)
  end

  it('refuses bad parameters and data, naming them', function()
    local d = mx.nd.zeros { 1, 1, 2, 2 }
    H.raises(function() return op._contrib_MultiBoxPrior(d, { steps = '(0.1,)' }) end,
      '_contrib_MultiBoxPrior', "parameter 'steps'", 'expected 2 values, got 1')
    H.raises(function() return op._contrib_MultiBoxPrior(d, { steps = '(0.1, -1)' }) end,
      '_contrib_MultiBoxPrior', "parameter 'steps'", 'both step_y and step_x')
    H.raises(function() return op._contrib_MultiBoxPrior(d, { offsets = '(0.5, 1.5)' }) end,
      '_contrib_MultiBoxPrior', "parameter 'offsets'", 'in [0, 1], got 1.5')
    H.raises(function() return op._contrib_MultiBoxPrior(d, { ratios = '(1, -2)' }) end,
      '_contrib_MultiBoxPrior', "parameter 'ratios'", '> 0, got -2')
    H.raises(function() return op._contrib_MultiBoxPrior(mx.nd.zeros { 1, 2, 2 }) end,
      '_contrib_MultiBoxPrior', "input 'data'", 'at least 4-D', 'got 3-D')
  end)
end)

-- Three anchors and one ground truth (class 1) whose IoU with anchor 0 is 0.16 / 0.29
local ANCH = { { { 0, 0, 0.5, 0.5 }, { 0.5, 0.5, 1, 1 }, { 0, 0.5, 0.5, 1 } } }
local LAB = { { { 1, 0.1, 0.1, 0.5, 0.6 }, { -1, -1, -1, -1, -1 } } }

describe('_contrib_MultiBoxTarget', function()
  for _, dt in ipairs { 'float32', 'float64' } do
    it('encodes the matched box and marks the rest negative (' .. dt .. ')', function()
      local pred = mx.nd.zeros({ 1, 2, 3 }, { dtype = dt })
      local t = op._contrib_MultiBoxTarget(arr(ANCH, dt), arr(LAB, dt), pred)
      assert.are.equal(3, #t)
      assert.are.same({ 1, 12 }, t[1].shape)
      assert.are.same({ 1, 3 }, t[3].shape)
      -- anchor center (0.25, 0.25) size 0.5; box center (0.3, 0.35) size (0.4, 0.5):
      -- (0.05 / 0.5 / 0.1, 0.1 / 0.5 / 0.1, log(0.8) / 0.2, log(1) / 0.2)
      near(t[1], { { 1, 2, math.log(0.8) / 0.2, 0, 0, 0, 0, 0, 0, 0, 0, 0 } }, 1e-5)
      near(t[2], { { 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0 } })
      near(t[3], { { 2, 0, 0 } })
    end)
  end

  it('mines the hardest negatives and ignores the others', function()
    -- background scores: anchor 1 confident (prob 0.73), anchor 2 not (0.27)
    local pred = arr { { { 0, 1, -1 }, { 0, 0, 0 } } }
    local t = op._contrib_MultiBoxTarget(arr(ANCH), arr(LAB), pred,
      { negative_mining_ratio = 1, ignore_label = -7 })
    near(t[3], { { 2, -7, 0 } })
    -- ratio 2: both negatives; an image without objects is all ignored
    t = op._contrib_MultiBoxTarget(arr(ANCH), arr(LAB), pred, { negative_mining_ratio = 2 })
    near(t[3], { { 2, 0, 0 } })
    t = op._contrib_MultiBoxTarget(arr(ANCH), arr { { { -1, -1, -1, -1, -1 } } }, pred)
    near(t[3], { { -1, -1, -1 } })
    near(t[2], { { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 } })
    -- a low overlap_threshold makes anchor 2 (IoU 0.0976) positive too, variances scale
    t = op._contrib_MultiBoxTarget(arr(ANCH), arr(LAB), pred,
      { overlap_threshold = 0.05, variances = '(1, 1, 1, 1)' })
    near(t[3], { { 2, 0, 2 } })
    -- anchor 2: center (0.25, 0.75) size 0.5 -> (0.05 / 0.5, -0.4 / 0.5, log 0.8, log 1)
    near({ t[1]:toflat()[9], t[1]:toflat()[10], t[1]:toflat()[11], t[1]:toflat()[12] },
      { 0.1, -0.8, math.log(0.8), 0 }, 1e-5)
  end)

  it('takes every candidate when mining asks for more negatives than there are', function()
    -- anchor 1 overlaps the box by 0.909: not positive at overlap_threshold 0.95, and no
    -- negative candidate either (overlap >= negative_mining_thresh); 3 negatives are asked
    -- for, 2 anchors qualify (MXNet aborts there; luamx takes both)
    local anc = arr { { { 0, 0, 0.5, 0.5 }, { 0, 0, 0.5, 0.55 }, { 0.5, 0.5, 1, 1 }, { 0, 0.5, 0.5, 1 } } }
    local t = op._contrib_MultiBoxTarget(anc, arr { { { 0, 0, 0, 0.5, 0.5 } } }, mx.nd.zeros { 1, 2, 4 },
      { overlap_threshold = 0.95, negative_mining_ratio = 3 })
    near(t[3], { { 1, -1, 0, 0 } })
  end)

  it('has zero gradients and refuses bad parameters and shapes', function()
    local pred = mx.nd.ones { 1, 2, 3 }
    pred:attach_grad()
    mx.autograd.record(function()
      return op._contrib_MultiBoxTarget(arr(ANCH), arr(LAB), pred)[1]
    end):backward()
    near(pred.grad, { { { 0, 0, 0 }, { 0, 0, 0 } } })
    H.raises(function()
      return op._contrib_MultiBoxTarget(arr(ANCH), arr(LAB), pred, { variances = '(1, 2)' })
    end, '_contrib_MultiBoxTarget', "parameter 'variances'", 'expected 4 values, got 2')
    H.raises(function()
      return op._contrib_MultiBoxTarget(arr(ANCH), arr(LAB), pred,
        { negative_mining_ratio = 3, negative_mining_thresh = 0 })
    end, '_contrib_MultiBoxTarget', "parameter 'negative_mining_thresh'", 'got 0')
    H.raises(function()
      return op._contrib_MultiBoxTarget(arr(ANCH), arr(LAB), mx.nd.ones { 1, 2, 4 })
    end, '_contrib_MultiBoxTarget', "input 'cls_pred'", 'expected (1, num_classes > 0, 3)',
      'got (1,2,4)')
    H.raises(function()
      return op._contrib_MultiBoxTarget(arr(ANCH), arr { { { 1, 0, 0, 1 } } }, pred)
    end, '_contrib_MultiBoxTarget', "input 'label'", 'width of at least 5')
  end)
end)

describe('_contrib_MultiBoxDetection', function()
  -- anchors 0 and 1 overlap with IoU 0.16 / 0.34 = 0.47
  local anc = { { { 0, 0, 0.5, 0.5 }, { 0.1, 0.1, 0.6, 0.6 }, { 0.6, 0.6, 0.9, 0.9 } } }
  -- classes: background, A, B; anchor 2's classes are below the threshold 0.01 (MXNet
  -- never compares with the background's own probability)
  local prob = { { { 0.1, 0.2, 0.99 }, { 0.6, 0.7, 0.005 }, { 0.3, 0.1, 0.005 } } }
  for _, dt in ipairs { 'float32', 'float64' } do
    it('decodes, sorts by score and suppresses per class (' .. dt .. ')', function()
      local loc = mx.nd.zeros({ 1, 12 }, { dtype = dt })
      local d = op._contrib_MultiBoxDetection(arr(prob, dt), loc, arr(anc, dt))
      assert.are.same({ 1, 3, 6 }, d.shape)
      near(d, { { { 0, 0.7, 0.1, 0.1, 0.6, 0.6 }, { 0, 0.6, 0, 0, 0.5, 0.5 }, M1 } }, TOL[dt])
      d = op._contrib_MultiBoxDetection(arr(prob, dt), loc, arr(anc, dt), { nms_threshold = 0.4 })
      near(d, { { { 0, 0.7, 0.1, 0.1, 0.6, 0.6 }, { -1, 0.6, 0, 0, 0.5, 0.5 }, M1 } }, TOL[dt])
    end)
  end

  it('applies offsets with variances, clip, threshold, nms_topk and force_suppress', function()
    -- anchor 0 moved by (1, 0) * 0.1 * 0.5 in x and scaled by exp(0.2 * log 2) in height
    local l = math.log(2) / 0.2
    local loc = arr { { 1, 0, 0, l, 0, 0, 0, 0, 0, 0, 0, 0 } }
    local p2 = arr { { { 0.1, 0.2, 0.99 }, { 0.6, 0.1, 0.005 }, { 0.3, 0.7, 0.005 } } }
    local d = op._contrib_MultiBoxDetection(p2, loc, arr(anc), { clip = false })
    near(d, { { { 1, 0.7, 0.1, 0.1, 0.6, 0.6 }, { 0, 0.6, 0.05, -0.25, 0.55, 0.75 }, M1 } })
    d = op._contrib_MultiBoxDetection(p2, loc, arr(anc))
    near(d, { { { 1, 0.7, 0.1, 0.1, 0.6, 0.6 }, { 0, 0.6, 0.05, 0, 0.55, 0.75 }, M1 } })
    -- different classes: only force_suppress removes the second (IoU 0.225 / 0.4)
    d = op._contrib_MultiBoxDetection(p2, loc, arr(anc), { force_suppress = true,
      nms_threshold = 0.3 })
    near(d:totable()[1][2], { -1, 0.6, 0.05, 0, 0.55, 0.75 })
    -- threshold above 0.65 drops anchor 0; nms_topk 1 keeps one, marking the next -1
    d = op._contrib_MultiBoxDetection(p2, loc, arr(anc), { threshold = 0.65 })
    near(d, { { { 1, 0.7, 0.1, 0.1, 0.6, 0.6 }, M1, M1 } })
    d = op._contrib_MultiBoxDetection(p2, loc, arr(anc), { nms_topk = 1 })
    assert.are.same({ -1, 1, 0.7 }, { d:totable()[1][2][1], d:totable()[1][1][1],
      math.floor(d:totable()[1][1][2] * 10 + 0.5) / 10 })
  end)

  it('has zero gradients and refuses mismatched inputs', function()
    local p = arr(prob)
    p:attach_grad()
    mx.autograd.record(function()
      return op._contrib_MultiBoxDetection(p, mx.nd.zeros { 1, 12 }, arr(anc))
    end):backward()
    near(p.grad, flat { 0, 0, 0, 0, 0, 0, 0, 0, 0 })
    H.raises(function() return op._contrib_MultiBoxDetection(p, mx.nd.zeros { 1, 8 }, arr(anc)) end,
      '_contrib_MultiBoxDetection', "input 'loc_pred'", 'expected (1,12), got (1,8)')
    H.raises(function()
      return op._contrib_MultiBoxDetection(p, mx.nd.zeros { 1, 12 }, arr(anc), { variances = '(1)' })
    end, '_contrib_MultiBoxDetection', "parameter 'variances'", 'expected 4 values, got 1')
  end)
end)

describe('detection symbols', function()
  it('infer shapes, run in an executor and round-trip through JSON', function()
    local data = mx.sym.Variable('data')
    local anchors = mx.sym._contrib_MultiBoxPrior { data = data, sizes = '(0.3, 0.6)',
      ratios = '(1, 2, 0.5)', name = 'anc' }
    local cls = mx.sym.Variable('cls')
    local loc = mx.sym.Variable('loc')
    local det = mx.sym._contrib_MultiBoxDetection { cls_prob = cls, loc_pred = loc,
      anchor = anchors, name = 'det' }
    local _, out = det:infer_shape { data = { 2, 8, 3, 3 }, cls = { 2, 4, 36 }, loc = { 2, 144 } }
    assert.are.same({ { 2, 36, 6 } }, out)
    local lab = mx.sym.Variable('label')
    local tgt = mx.sym._contrib_MultiBoxTarget { anchor = anchors, label = lab, cls_pred = cls,
      negative_mining_ratio = 3, name = 'tgt' }
    assert.are.same({ 'tgt_loc_target', 'tgt_loc_mask', 'tgt_cls_target' }, tgt:list_outputs())
    _, out = tgt:infer_shape { data = { 2, 8, 3, 3 }, cls = { 2, 4, 36 }, label = { 2, 5, 6 } }
    assert.are.same({ { 2, 144 }, { 2, 144 }, { 2, 36 } }, out)
    local nms = mx.sym._contrib_box_nms { data = mx.sym.Variable('b'), name = 'nms' }
    assert.are.same({ 'nms_output0' }, nms:list_outputs())
    for _, s in ipairs { det, tgt, nms } do
      local js = s:tojson()
      assert.are.equal(js, mx.sym.load_json(js):tojson())
    end
    assert.truthy(det:tojson():find('"op": "_contrib_MultiBoxDetection"', 1, true))
    assert.truthy(tgt:tojson():find('"negative_mining_ratio"', 1, true))
    local exe = nms:simple_bind { b = { 4, 6 } }
    exe.arg_dict.b:set(NMS_X)
    near(exe:forward { is_train = true }[1], { { 2, 0.6, 0.5, 0.5, 0.7, 0.8 },
      { 0, 0.5, 0.1, 0.1, 0.2, 0.2 }, { 0, 0.3, 0.1, 0.1, 0.14, 0.14 }, M1 })
    exe:backward(arr { { 1, 1, 1, 1, 1, 1 }, { 2, 2, 2, 2, 2, 2 }, { 3, 3, 3, 3, 3, 3 },
      { 4, 4, 4, 4, 4, 4 } })
    near(exe.grad_dict.b, { { 2, 2, 2, 2, 2, 2 }, { 0, 0, 0, 0, 0, 0 }, { 3, 3, 3, 3, 3, 3 },
      { 1, 1, 1, 1, 1, 1 } })
  end)

  it('documents every operator in the help text', function()
    -- the text is wrapped: compare with the line breaks as spaces
    local function text(name) return (help.op_text(mx, name):gsub('%s+', ' ')) end
    assert.truthy(text('_contrib_box_nms'):find('overlap_thresh', 1, true))
    assert.truthy(text('_contrib_box_nms'):find('[[2, 0.6, 0.5, 0.5, 0.7, 0.8], [0, 0.5, 0.1', 1, true))
    assert.truthy(text('_contrib_box_non_maximum_suppression'):find('overlap_thresh', 1, true))
    assert.truthy(text('_contrib_box_iou'):find('[[0.1428], [0.1428]]', 1, true))
    assert.truthy(text('_contrib_bipartite_matching'):find('x = [1, -1, 0], y = [2, 0]', 1, true))
    assert.truthy(text('_contrib_MultiBoxPrior'):find('sizes', 1, true))
    assert.truthy(text('_contrib_MultiBoxTarget'):find('hard negative mining', 1, true))
    assert.truthy(text('_contrib_MultiBoxDetection'):find('nms_topk', 1, true))
  end)
end)

describe('detection operators on gpu(0)', function()
  it('agree with the CPU', function()
    if mx.context.num_gpus() == 0 then return pending('no GPU context') end
    local g = mx.gpu(0)
    local function same(f, inputs, tol)
      local c = f(unpack(inputs))
      local gi = {}
      for i, a in ipairs(inputs) do gi[i] = a:copyto(g) end
      local d = f(unpack(gi))
      if type(c) ~= 'table' or c.shape then c, d = { c }, { d } end
      for i = 1, #c do
        assert.are.equal(g, d[i].context)
        H.near(c[i]:toflat(), d[i]:copyto(mx.cpu()):toflat(), tol or 1e-6)
      end
    end
    math.randomseed(7)
    local function rnd(shape, lo, hi)
      local n = 1
      for _, v in ipairs(shape) do n = n * v end
      local t = {}
      for i = 1, n do t[i] = lo + (hi - lo) * math.random() end
      return mx.nd.array(t):reshape(shape)
    end
    same(function(a) return op._contrib_box_nms(a, { overlap_thresh = 0.3, topk = 20 }) end,
      { rnd({ 3, 40, 6 }, 0, 1) })
    same(function(a, b) return op._contrib_box_iou(a, b) end, { rnd({ 5, 4 }, 0, 1), rnd({ 7, 4 }, 0, 1) })
    same(function(a) return op._contrib_bipartite_matching(a, { threshold = 0.2 }) end,
      { rnd({ 2, 6, 5 }, 0, 1) })
    same(function(a) return op._contrib_MultiBoxPrior(a, { sizes = '(0.2, 0.5)', ratios = '(1, 2, 0.5)' }) end,
      { mx.nd.zeros { 1, 1, 4, 3 } })
    local anc = op._contrib_MultiBoxPrior(mx.nd.zeros { 1, 1, 4, 4 }, { sizes = '(0.3, 0.5)', ratios = '(1, 2)' })
    local lab = mx.nd.array { { { 0, 0.1, 0.1, 0.4, 0.5 }, { 1, 0.5, 0.4, 0.9, 0.9 } },
      { { 2, 0.2, 0.6, 0.5, 0.95 }, { -1, -1, -1, -1, -1 } } }
    same(function(a, l, p) return op._contrib_MultiBoxTarget(a, l, p, { negative_mining_ratio = 3 }) end,
      { anc, lab, rnd({ 2, 4, 48 }, -1, 1) })
    same(function(p, l, a) return op._contrib_MultiBoxDetection(p, l, a, { nms_topk = 10 }) end,
      { mx.nd.softmax(rnd({ 2, 4, 48 }, -2, 2), { axis = 1 }), rnd({ 2, 192 }, -1, 1), anc })
    -- box_nms's gradient on the device
    local x = rnd({ 2, 10, 6 }, 0, 1)
    local w = rnd({ 2, 10, 6 }, -1, 1)
    local function grad(a, ww)
      a:attach_grad()
      mx.autograd.record(function() return op._contrib_box_nms(a, { overlap_thresh = 0.2 }) end):backward(ww)
      return a.grad
    end
    H.near(grad(x, w):toflat(), grad(x:copyto(g), w:copyto(g)):copyto(mx.cpu()):toflat(), 1e-6)
  end)
end)
