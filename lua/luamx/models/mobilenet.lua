--- luamx.models.mobilenet — MobileNet v1 and v2 as MXNet 1.9's
-- example/image-classification/symbols/mobilenet.py (get_symbol) and mobilenetv2.py build
-- them.
--
-- * v1: `conv_1`, then 13 depthwise/pointwise pairs `conv_<i>_dw`/`conv_<i>` (i = 2..14),
--   each conv (no bias) -> BatchNorm (fix_gamma) -> ReLU, named `<n>_conv2d`,
--   `<n>_batchnorm`, `<n>_relu`; a depthwise conv is a Convolution with num_group equal
--   to its channels. `alpha` in {0.25, 0.5, 0.75, 1}; `resolution` a multiple of 32.
-- * v2: inverted residual blocks `seq-<i>-block<j>` with `-exp`, `-depthwise`, `-linear`
--   units (conv `-conv2d`, BN `-batchnorm`, ReLU6 as `clip` named `-relu6`) and the sum
--   `<block>-shortcut`; the 1x1 expansion is built even where the factor is 1, as
--   mobilenetv2.py does. `multiplier` scales the widths.
local common = require 'luamx.models.common'
local raise = require('luamx.capi').raise

local M = {}

-- t (expansion), c (channels), n (blocks), s (stride of the first block)
local v2_blocks = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2}, {6, 96, 3, 1},
  {6, 160, 3, 2}, {6, 320, 1, 1}}

-- Python's round() on the x.5 cases that occur here rounds half to even
local function py_round(x)
  local f = math.floor(x)
  local d = x - f
  if d > 0.5 or (d == 0.5 and f % 2 == 1) then return f + 1 end
  return f
end

--- The builders of this file, bound to `mx` (luamx.models.init puts them in mx.models).
-- @param mx the luamx module table
-- @return a table name -> builder
function M.make(mx)
  local S = mx.sym

  local function v1_conv(data, nf, k, s, p, group, name)
    local c = S.Convolution{data = data, num_filter = nf, kernel = {k, k}, num_group = group,
      stride = {s, s}, pad = {p, p}, no_bias = true, name = name .. '_conv2d'}
    local b = S.BatchNorm{data = c, name = name .. '_batchnorm', fix_gamma = true}
    return S.Activation{data = b, act_type = 'relu', name = name .. '_relu'}
  end

  local function v2_unit(data, nf, k, s, p, group, act, prefix)
    local c = S.Convolution{data = data, num_filter = nf, kernel = {k, k}, num_group = group,
      stride = {s, s}, pad = {p, p}, no_bias = true, name = prefix .. '-conv2d'}
    local b = S.BatchNorm{data = c, name = prefix .. '-batchnorm', fix_gamma = false,
      use_global_stats = false, eps = 1e-5}
    if not act then return b end
    return S.clip{data = b, a_min = 0, a_max = 6, name = prefix .. '-relu6'}
  end

  local function v2_block(data, cin, cout, shortcut, s, t, prefix)
    local e = py_round(cin * t)
    local x = v2_unit(data, e, 1, 1, 0, 1, true, prefix .. '-exp')
    x = v2_unit(x, e, 3, s, 1, e, true, prefix .. '-depthwise')
    x = v2_unit(x, cout, 1, 1, 0, 1, false, prefix .. '-linear')
    if shortcut then return S.elemwise_add(data, x, {name = prefix .. '-shortcut'}) end
    return x
  end

  local R = {}
  --- MobileNet v1 as MXNet's symbols/mobilenet.py get_symbol builds it.
  -- @param opts `num_classes` (1000), `alpha` (1: one of 0.25, 0.5, 0.75, 1), `resolution`
  --   (224, a multiple of 32; the input is 3 x resolution x resolution)
  -- @return the network's SoftmaxOutput symbol
  -- @usage local net = mx.models.mobilenet{alpha = 0.25, num_classes = 10}
  function R.mobilenet(opts)
    local o = common.options('mobilenet', opts, {num_classes = 1000, alpha = 1, resolution = 224})
    common.positive_int('mobilenet', o, 'num_classes')
    common.one_of('mobilenet', o, 'alpha', {0.25, 0.5, 0.75, 1})
    common.positive_int('mobilenet', o, 'resolution')
    if o.resolution % 32 ~= 0 then
      raise(('mx.models.mobilenet: resolution must be a multiple of 32, got %d'):format(o.resolution))
    end
    local base = math.floor(32 * o.alpha)
    -- {depthwise channels, stride, pointwise multiplier} for conv_2 .. conv_14
    local plan = {{1, 1, 2}, {2, 2, 2}, {4, 1, 1}, {4, 2, 2}, {8, 1, 1}, {8, 2, 2}, {16, 1, 1},
      {16, 1, 1}, {16, 1, 1}, {16, 1, 1}, {16, 1, 1}, {16, 2, 2}, {32, 1, 1}}
    return common.fresh(mx, function()
      local x = v1_conv(S.Variable('data'), base, 3, 2, 1, 1, 'conv_1')
      for i, p in ipairs(plan) do
        local d = base * p[1]
        x = v1_conv(x, d, 3, p[2], 1, d, ('conv_%d_dw'):format(i + 1))
        x = v1_conv(x, d * p[3], 1, 1, 0, 1, ('conv_%d'):format(i + 1))
      end
      local ps = math.floor(o.resolution / 32)
      x = S.Pooling{data = x, kernel = {ps, ps}, stride = {1, 1}, pool_type = 'avg', name = 'global_pool'}
      x = S.Flatten{data = x, name = 'flatten'}
      x = S.FullyConnected{data = x, num_hidden = o.num_classes, name = 'fc'}
      return S.SoftmaxOutput{data = x, name = 'softmax'}
    end)
  end

  --- MobileNet v2 as MXNet's symbols/mobilenetv2.py get_symbol builds it (its 224 x 224
  -- configuration; the global pooling makes it run at any input size that is a multiple of 32).
  -- @param opts `num_classes` (1000), `multiplier` (1)
  -- @return the network's SoftmaxOutput symbol
  -- @usage local net = mx.models.mobilenet_v2{multiplier = 0.5, num_classes = 10}
  function R.mobilenet_v2(opts)
    local o = common.options('mobilenet_v2', opts, {num_classes = 1000, multiplier = 1})
    common.positive_int('mobilenet_v2', o, 'num_classes')
    local m = o.multiplier
    if type(m) ~= 'number' or m <= 0 then
      raise(('mx.models.mobilenet_v2: multiplier must be a positive number, got %s'):format(tostring(m)))
    end
    return common.fresh(mx, function()
      local first = py_round(32 * m)
      local x = v2_unit(S.Variable('data'), first, 3, 2, 1, 1, true, 'first-3x3-conv')
      local cin = first
      for i, b in ipairs(v2_blocks) do
        local t, c, n, s = b[1], py_round(b[2] * m), b[3], b[4]
        local prefix = ('seq-%d'):format(i - 1)
        x = v2_block(x, cin, c, false, s, t, prefix .. '-block0')
        for j = 1, n - 1 do x = v2_block(x, c, c, true, 1, t, ('%s-block%d'):format(prefix, j)) end
        cin = c
      end
      x = v2_unit(x, m > 1 and math.floor(1280 * m) or 1280, 1, 1, 0, 1, true, 'last-1x1-conv')
      x = S.Pooling{data = x, kernel = {7, 7}, stride = {1, 1}, pool_type = 'avg',
        name = 'global_pool', global_pool = true}
      x = S.Flatten{data = x, name = 'flatten'}
      x = S.FullyConnected{data = x, num_hidden = o.num_classes, name = 'fc'}
      return S.SoftmaxOutput{data = x, name = 'softmax'}
    end)
  end
  return R
end

return M
