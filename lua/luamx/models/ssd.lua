--- luamx.models.ssd — the Single Shot MultiBox Detector as MXNet 1.9's example/ssd builds
-- it (symbol/symbol_builder.py, common.py, vgg16_reduced.py, symbol_factory.py).
--
-- * The backbone: `vgg16_reduced` (VGG-16 with pool5 3x3/1 and fc6/fc7 as a dilated 3x3
--   and a 1x1 convolution of 1024 filters, `conv<i>_<j>`, `relu<i>_<j>`, `pool<i>`, `fc6`,
--   `relu6`, `fc7`, `relu7`) at 300x300 with MXNet's settings for it; or `tiny`, a
--   three-convolution backbone (`conv1`-`conv3`, 16/32/32 filters) for tests and small
--   experiments at 32x32 and up.
-- * multi_layer_feature: the backbone layers named in from_layers, then extra layers (a 1x1
--   convolution to max(min_filter, n/2) and a 3x3 one of n filters with the layer's stride
--   and pad, `multi_feat_<k>_conv_1x1_conv` / `_relu`, `multi_feat_<k>_conv_3x3_...`).
-- * multibox_layer, per feature layer: L2Normalization with a learned per-channel scale
--   (`<layer>_scale`, initialised to the normalization value) where asked, a 3x3
--   convolution for the box offsets (`<layer>_loc_pred_conv`) and one for the class scores
--   (`<layer>_cls_pred_conv`, num_classes + 1 with the background), each transposed to
--   NHWC and flattened, and _contrib_MultiBoxPrior anchors (`<layer>_anchors`);
--   concatenated into `multibox_loc_pred` (batch, anchors * 4), `multibox_cls_pred`
--   (batch, classes + 1, anchors) and `multibox_anchors` (1, anchors, 4).
-- * mode 'train' (MXNet's get_symbol_train): _contrib_MultiBoxTarget `multibox_target`
--   (overlap 0.5, hard negative mining at 3 negatives per positive below overlap 0.5),
--   SoftmaxOutput `cls_prob` over the class targets (ignore -1, normalization 'valid'),
--   smooth_l1 `loc_loss_` of the masked offset errors with MakeLoss `loc_loss`, and the
--   monitors `cls_label` and `det_out` (_contrib_MultiBoxDetection `detection`) with zero
--   gradient scale: outputs {cls_prob, loc_loss, cls_label, det_out}; the inputs `data`
--   and `label` (batch, objects, 5: class, xmin, ymin, xmax, ymax in [0, 1], -1 rows pad).
--   mode 'deploy' (get_symbol): softmax `cls_prob` over the classes and `detection`.
local common = require 'luamx.models.common'
local raise = require('luamx.capi').raise

local M = {}

local function r3(x) return x / 3 end

-- MXNet's symbol_factory settings of each backbone
local configs = {
  vgg16_reduced = {
    from_layers = {'relu4_3', 'relu7', '', '', '', ''},
    num_filters = {512, -1, 512, 256, 256, 256},
    strides = {-1, -1, 2, 2, 1, 1},
    pads = {-1, -1, 1, 1, 0, 0},
    sizes = {{.1, .141}, {.2, .272}, {.37, .447}, {.54, .619}, {.71, .79}, {.88, .961}},
    ratios = {{1, 2, .5}, {1, 2, .5, 3, r3(1)}, {1, 2, .5, 3, r3(1)}, {1, 2, .5, 3, r3(1)},
      {1, 2, .5}, {1, 2, .5}},
    normalizations = {20, -1, -1, -1, -1, -1},
    steps = {8 / 300, 16 / 300, 32 / 300, 64 / 300, 100 / 300, 300 / 300},
    min_filter = 128, data_shape = 300,
  },
  tiny = {
    from_layers = {'relu2', 'relu3', '', ''},
    num_filters = {32, -1, 32, 32},
    strides = {-1, -1, 2, 2},
    pads = {-1, -1, 1, 1},
    sizes = {{.1, .141}, {.2, .272}, {.37, .447}, {.54, .619}},
    ratios = {{1, 2, .5}, {1, 2, .5, 3, r3(1)}, {1, 2, .5}, {1, 2, .5}},
    normalizations = {20, -1, -1, -1},
    steps = {},
    min_filter = 16, data_shape = 32,
  },
}

-- "(a, b, c)" with the shortest exact decimal of each number
local function tuple(list)
  local s = {}
  for i, v in ipairs(list) do s[i] = ('%.17g'):format(v) end
  return '(' .. table.concat(s, ', ') .. ')'
end

--- The builders of this file, bound to `mx` (luamx.models.init puts them in mx.models).
-- @param mx the luamx module table
-- @return a table name -> builder
function M.make(mx)
  local S = mx.sym
  local R = {}

  local function conv(x, name, filters, k, pad, stride, dilate)
    x = S.Convolution{data = x, kernel = {k, k}, pad = {pad, pad}, stride = {stride, stride},
      dilate = dilate and {dilate, dilate} or nil, num_filter = filters, name = name}
    return x
  end

  local function vgg16_reduced()
    local x = S.Variable('data')
    local blocks = {{64, 2}, {128, 2}, {256, 3}, {512, 3}, {512, 3}}
    for i, b in ipairs(blocks) do
      for j = 1, b[2] do
        x = conv(x, ('conv%d_%d'):format(i, j), b[1], 3, 1, 1)
        x = S.Activation{data = x, act_type = 'relu', name = ('relu%d_%d'):format(i, j)}
      end
      if i < 5 then
        x = S.Pooling{data = x, pool_type = 'max', kernel = {2, 2}, stride = {2, 2},
          pooling_convention = i == 3 and 'full' or nil, name = 'pool' .. i}
      else
        x = S.Pooling{data = x, pool_type = 'max', kernel = {3, 3}, stride = {1, 1}, pad = {1, 1},
          name = 'pool5'}
      end
    end
    x = conv(x, 'fc6', 1024, 3, 6, 1, 6)
    x = S.Activation{data = x, act_type = 'relu', name = 'relu6'}
    x = conv(x, 'fc7', 1024, 1, 0, 1)
    return S.Activation{data = x, act_type = 'relu', name = 'relu7'}
  end

  local function tiny()
    local x = S.Variable('data')
    for i, f in ipairs({16, 32, 32}) do
      x = conv(x, 'conv' .. i, f, 3, 1, 1)
      x = S.Activation{data = x, act_type = 'relu', name = 'relu' .. i}
      if i < 3 then x = S.Pooling{data = x, pool_type = 'max', kernel = {2, 2}, stride = {2, 2}, name = 'pool' .. i} end
    end
    return x
  end

  -- common.py's multi_layer_feature
  local function multi_layer_feature(body, c)
    local internals = body:get_internals()
    local layers = {}
    for k, from in ipairs(c.from_layers) do
      if from ~= '' then
        layers[#layers + 1] = internals[from .. '_output']
      else
        local n, s, p = c.num_filters[k], c.strides[k], c.pads[k]
        local n1 = math.max(c.min_filter, math.floor(n / 2))
        local pre = ('multi_feat_%d_conv_'):format(k - 1)
        local x = S.Convolution{data = layers[#layers], kernel = {1, 1}, pad = {0, 0}, stride = {1, 1},
          num_filter = n1, name = pre .. '1x1_conv'}
        x = S.Activation{data = x, act_type = 'relu', name = pre .. '1x1_relu'}
        x = S.Convolution{data = x, kernel = {3, 3}, pad = {p, p}, stride = {s, s}, num_filter = n,
          name = pre .. '3x3_conv'}
        layers[#layers + 1] = S.Activation{data = x, act_type = 'relu', name = pre .. '3x3_relu'}
      end
    end
    return layers
  end

  -- common.py's multibox_layer: loc_preds, cls_preds, anchor_boxes
  local function multibox_layer(layers, num_classes, c)
    local locs, clss, anchors = {}, {}, {}
    local channels = {}
    for i, n in ipairs(c.num_filters) do channels[i] = n end
    for k, layer in ipairs(layers) do
      local name = layer.name
      if c.normalizations[k] > 0 then
        layer = S.L2Normalization{data = layer, mode = 'channel', name = name .. '_norm'}
        local scale = S.Variable(name .. '_scale', {shape = {1, table.remove(channels, 1), 1, 1},
          init = mx.init.Constant(c.normalizations[k]), attr = {__wd_mult__ = '0.1'}})
        layer = S.broadcast_mul{lhs = scale, rhs = layer}
      end
      local na = #c.sizes[k] - 1 + #c.ratios[k]
      local function head(kind, filters)
        local bias = S.Variable(('%s_%s_pred_conv_bias'):format(name, kind),
          {init = mx.init.Constant(0), attr = {__lr_mult__ = '2.0'}})
        local x = S.Convolution{data = layer, bias = bias, kernel = {3, 3}, stride = {1, 1},
          pad = {1, 1}, num_filter = filters, name = ('%s_%s_pred_conv'):format(name, kind)}
        return S.Flatten{data = S.transpose{data = x, axes = {0, 2, 3, 1}}}
      end
      locs[k] = head('loc', na * 4)
      clss[k] = head('cls', na * num_classes)
      local step = c.steps[k] and tuple({c.steps[k], c.steps[k]}) or '(-1.0, -1.0)'
      anchors[k] = S.Flatten{data = S._contrib_MultiBoxPrior{data = layer, sizes = tuple(c.sizes[k]),
        ratios = tuple(c.ratios[k]), clip = false, steps = step, name = name .. '_anchors'}}
    end
    local function concat(list, name)
      local args = {unpack(list)}
      args[#args + 1] = {dim = 1, name = name}
      return S.Concat(unpack(args))
    end
    local loc_preds = concat(locs, 'multibox_loc_pred')
    local cls_preds = S.Reshape{data = concat(clss), shape = {0, -1, num_classes}}
    cls_preds = S.transpose{data = cls_preds, axes = {0, 2, 1}, name = 'multibox_cls_pred'}
    local anchor_boxes = S.Reshape{data = concat(anchors), shape = {0, -1, 4}, name = 'multibox_anchors'}
    return loc_preds, cls_preds, anchor_boxes
  end

  --- SSD as MXNet's example/ssd builds it (symbol_builder.get_symbol_train / get_symbol).
  -- @param opts `network` ('vgg16_reduced': or 'tiny'), `num_classes` (20, without the
  --   background), `mode` ('train': or 'deploy'), `nms_thresh` (0.5), `force_suppress`
  --   (false), `nms_topk` (400)
  -- @return the training group {cls_prob, loc_loss, cls_label, det_out}, or the detection
  --   symbol in deploy mode
  -- @usage local net = mx.models.ssd{network = 'tiny', num_classes = 3}
  function R.ssd(opts)
    local o = common.options('ssd', opts, {network = 'vgg16_reduced', num_classes = 20, mode = 'train',
      nms_thresh = 0.5, force_suppress = false, nms_topk = 400})
    common.one_of('ssd', o, 'network', {'vgg16_reduced', 'tiny'})
    common.one_of('ssd', o, 'mode', {'train', 'deploy'})
    common.positive_int('ssd', o, 'num_classes')
    common.one_of('ssd', o, 'force_suppress', {true, false})
    if type(o.nms_thresh) ~= 'number' or not (o.nms_thresh > 0 and o.nms_thresh <= 1) then
      raise(('mx.models.ssd: nms_thresh must be a number in (0, 1], got %s'):format(tostring(o.nms_thresh)))
    end
    if type(o.nms_topk) ~= 'number' or o.nms_topk % 1 ~= 0 then
      raise(('mx.models.ssd: nms_topk must be an integer (-1: no limit), got %s'):format(tostring(o.nms_topk)))
    end
    common.require_ops(mx, 'ssd', {'_contrib_MultiBoxPrior', '_contrib_MultiBoxTarget',
      '_contrib_MultiBoxDetection', 'L2Normalization', 'smooth_l1'})
    local c = configs[o.network]
    return common.fresh(mx, function()
      local body = o.network == 'tiny' and tiny() or vgg16_reduced()
      local layers = multi_layer_feature(body, c)
      local loc_preds, cls_preds, anchor_boxes = multibox_layer(layers, o.num_classes + 1, c)
      local function detection(cls_prob)
        return S._contrib_MultiBoxDetection{cls_prob = cls_prob, loc_pred = loc_preds,
          anchor = anchor_boxes, name = 'detection', nms_threshold = o.nms_thresh,
          force_suppress = o.force_suppress, variances = '(0.1, 0.1, 0.2, 0.2)', nms_topk = o.nms_topk}
      end
      if o.mode == 'deploy' then
        return detection(S.softmax{data = cls_preds, axis = 1, name = 'cls_prob'})
      end
      local tmp = S._contrib_MultiBoxTarget{anchor = anchor_boxes, label = S.Variable('label'),
        cls_pred = cls_preds, overlap_threshold = 0.5, ignore_label = -1, negative_mining_ratio = 3,
        minimum_negative_samples = 0, negative_mining_thresh = 0.5, variances = '(0.1, 0.1, 0.2, 0.2)',
        name = 'multibox_target'}
      local loc_target, loc_mask, cls_target = tmp[1], tmp[2], tmp[3]
      local cls_prob = S.SoftmaxOutput{data = cls_preds, label = cls_target, ignore_label = -1,
        use_ignore = true, grad_scale = 1, multi_output = true, normalization = 'valid', name = 'cls_prob'}
      local loc_loss_ = S.smooth_l1{data = loc_mask * (loc_preds - loc_target), scalar = 1.0,
        name = 'loc_loss_'}
      local loc_loss = S.MakeLoss{data = loc_loss_, grad_scale = 1, normalization = 'valid', name = 'loc_loss'}
      local cls_label = S.MakeLoss{data = cls_target, grad_scale = 0, name = 'cls_label'}
      local det = S.MakeLoss{data = detection(cls_prob), grad_scale = 0, name = 'det_out'}
      return S.Group{cls_prob, loc_loss, cls_label, det}
    end)
  end
  return R
end

return M
