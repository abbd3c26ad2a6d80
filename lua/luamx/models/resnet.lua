--- luamx.models.resnet — ResNet v1 and v2 and ResNeXt, as MXNet 1.9's
-- example/image-classification/symbols/resnet-v1.py, resnet.py and resnext.py build them.
--
-- * v2 (`mx.models.resnet`, the default) is resnet.py's pre-activation network ("Identity
--   Mappings in Deep Residual Networks"): `bn_data` on the input, units
--   BN-ReLU-conv, the projection shortcut `_sc` taken from the unit's first ReLU, and a
--   final `bn1`/`relu1` before the pooling.
-- * v1 (`version = 1`) is resnet-v1.py: units conv-BN-ReLU, the shortcut `_conv1sc` + BN
--   `_sc`, the sum then `_relu3`; the stride sits on the unit's first convolution.
-- * ResNeXt is resnext.py: v1-style units with a grouped 3x3 (`num_group`, default 32)
--   and bottleneck width num_filter/2, BN `_sc_bn` on the shortcut, `bn_data` on the input.
-- Depths as the files allow: ImageNet form (height > 28, resp. > 32 for ResNeXt) 18, 34,
-- 50, 101, 152, 200, 269; CIFAR form 6n+2 below 164 (basic units) or 9n+2 from 164
-- (bottleneck units). The stem is the CIFAR 3x3 conv when height <= 32.
local common = require 'luamx.models.common'
local raise = require('luamx.capi').raise

local M = {}

local imagenet_units = {[18] = {2, 2, 2, 2}, [34] = {3, 4, 6, 3}, [50] = {3, 4, 6, 3},
  [101] = {3, 4, 23, 3}, [152] = {3, 8, 36, 3}, [200] = {3, 24, 36, 3}, [269] = {3, 30, 48, 8}}

-- The stage layout of get_symbol: units per stage, filter list, bottleneck or basic.
-- `small` is get_symbol's CIFAR test (height <= 28 in resnet*.py, <= 32 in resnext.py).
local function layout(who, depth, small)
  if small then
    local per
    if (depth - 2) % 9 == 0 and depth >= 164 then
      per = (depth - 2) / 9
      return {per, per, per}, {16, 64, 128, 256}, true
    elseif (depth - 2) % 6 == 0 and depth < 164 then
      per = (depth - 2) / 6
      return {per, per, per}, {16, 16, 32, 64}, false
    end
    raise(('mx.models.%s: num_layers for the CIFAR form must be 6n+2 below 164 or 9n+2 from 164, got %d')
      :format(who, depth))
  end
  local units = imagenet_units[depth]
  if not units then
    raise(('mx.models.%s: num_layers for the ImageNet form must be one of 18, 34, 50, 101, 152, 200, 269, got %d')
      :format(who, depth))
  end
  if depth >= 50 then return units, {64, 256, 512, 1024, 2048}, true end
  return units, {64, 64, 128, 256, 512}, false
end

--- The builders of this file, bound to `mx` (luamx.models.init puts them in mx.models).
-- @param mx the luamx module table
-- @return a table name -> builder
local function make(mx)
  local S = mx.sym
  local cfg -- bn_mom and workspace of the network being built

  local function conv(data, nf, k, s, p, name, group)
    return S.Convolution{data = data, num_filter = nf, kernel = {k, k}, stride = {s, s},
      pad = p and {p, p} or nil, num_group = group, no_bias = true, workspace = cfg.workspace,
      name = name}
  end
  -- resnet*.py give the shortcut convolution no pad argument
  local function conv_sc(data, nf, s, name)
    return S.Convolution{data = data, num_filter = nf, kernel = {1, 1}, stride = {s, s},
      no_bias = true, workspace = cfg.workspace, name = name}
  end
  local function bn(data, name)
    return S.BatchNorm{data = data, fix_gamma = false, eps = 2e-5, momentum = cfg.bn_mom, name = name}
  end
  local function relu(data, name) return S.Activation{data = data, act_type = 'relu', name = name} end

  local function unit_v2(data, nf, s, dim_match, name, bottle)
    if bottle then
      local q = math.floor(nf * 0.25)
      local act1 = relu(bn(data, name .. '_bn1'), name .. '_relu1')
      local c1 = conv(act1, q, 1, 1, 0, name .. '_conv1')
      local c2 = conv(relu(bn(c1, name .. '_bn2'), name .. '_relu2'), q, 3, s, 1, name .. '_conv2')
      local c3 = conv(relu(bn(c2, name .. '_bn3'), name .. '_relu3'), nf, 1, 1, 0, name .. '_conv3')
      local sc = dim_match and data or conv_sc(act1, nf, s, name .. '_sc')
      return c3 + sc
    end
    local act1 = relu(bn(data, name .. '_bn1'), name .. '_relu1')
    local c1 = conv(act1, nf, 3, s, 1, name .. '_conv1')
    local c2 = conv(relu(bn(c1, name .. '_bn2'), name .. '_relu2'), nf, 3, 1, 1, name .. '_conv2')
    local sc = dim_match and data or conv_sc(act1, nf, s, name .. '_sc')
    return c2 + sc
  end

  local function unit_v1(data, nf, s, dim_match, name, bottle)
    local out
    if bottle then
      local q = math.floor(nf * 0.25)
      local a1 = relu(bn(conv(data, q, 1, s, 0, name .. '_conv1'), name .. '_bn1'), name .. '_relu1')
      local a2 = relu(bn(conv(a1, q, 3, 1, 1, name .. '_conv2'), name .. '_bn2'), name .. '_relu2')
      out = bn(conv(a2, nf, 1, 1, 0, name .. '_conv3'), name .. '_bn3')
    else
      local a1 = relu(bn(conv(data, nf, 3, s, 1, name .. '_conv1'), name .. '_bn1'), name .. '_relu1')
      out = bn(conv(a1, nf, 3, 1, 1, name .. '_conv2'), name .. '_bn2')
    end
    local sc = dim_match and data or bn(conv_sc(data, nf, s, name .. '_conv1sc'), name .. '_sc')
    return relu(out + sc, name .. '_relu3')
  end

  local function unit_x(data, nf, s, dim_match, name, bottle, group)
    local out
    if bottle then
      local h = math.floor(nf * 0.5)
      local a1 = relu(bn(conv(data, h, 1, 1, 0, name .. '_conv1'), name .. '_bn1'), name .. '_relu1')
      local a2 = relu(bn(conv(a1, h, 3, s, 1, name .. '_conv2', group), name .. '_bn2'), name .. '_relu2')
      out = bn(conv(a2, nf, 1, 1, 0, name .. '_conv3'), name .. '_bn3')
    else
      local a1 = relu(bn(conv(data, nf, 3, s, 1, name .. '_conv1'), name .. '_bn1'), name .. '_relu1')
      out = bn(conv(a1, nf, 3, 1, 1, name .. '_conv2'), name .. '_bn2')
    end
    local sc = dim_match and data or bn(conv_sc(data, nf, s, name .. '_sc'), name .. '_sc_bn')
    return relu(out + sc, name .. '_relu')
  end

  local function body(kind, o, units, filters, bottle, height)
    local data = S.Variable('data')
    if kind ~= 'resnext' then data = S.identity{data = data, name = 'id'} end
    if kind ~= 'v1' then
      data = S.BatchNorm{data = data, fix_gamma = true, eps = 2e-5, momentum = cfg.bn_mom, name = 'bn_data'}
    end
    local x
    if height <= 32 then
      x = conv(data, filters[1], 3, 1, 1, 'conv0')
      if kind == 'v1' then x = bn(x, 'bn0') end
    else
      x = conv(data, filters[1], 7, 2, 3, 'conv0')
      x = relu(bn(x, 'bn0'), 'relu0')
      x = S.Pooling{data = x, kernel = {3, 3}, stride = {2, 2}, pad = {1, 1}, pool_type = 'max'}
    end
    local unit = kind == 'v1' and unit_v1 or kind == 'v2' and unit_v2 or unit_x
    for i = 1, #units do
      local s = i == 1 and 1 or 2
      x = unit(x, filters[i + 1], s, false, ('stage%d_unit1'):format(i), bottle, o.num_group)
      for j = 2, units[i] do
        x = unit(x, filters[i + 1], 1, true, ('stage%d_unit%d'):format(i, j), bottle, o.num_group)
      end
    end
    if kind == 'v2' then x = relu(bn(x, 'bn1'), 'relu1') end
    x = S.Pooling{data = x, global_pool = true, kernel = {7, 7}, pool_type = 'avg', name = 'pool1'}
    x = S.Flatten{data = x}
    x = S.FullyConnected{data = x, num_hidden = o.num_classes, name = 'fc1'}
    return S.SoftmaxOutput{data = x, name = 'softmax'}
  end

  local function build(who, kind, opts, extra)
    local defaults = {num_layers = 50, num_classes = 1000, image_shape = {3, 224, 224},
      bn_mom = 0.9, conv_workspace = 256}
    for k, v in pairs(extra or {}) do defaults[k] = v end
    local o = common.options(who, opts, defaults)
    local depth = common.positive_int(who, o, 'num_layers')
    common.positive_int(who, o, 'num_classes')
    common.positive_int(who, o, 'conv_workspace')
    if kind == 'resnext' then common.positive_int(who, o, 'num_group') end
    if type(o.bn_mom) ~= 'number' then
      raise(('mx.models.%s: bn_mom must be a number, got %s'):format(who, tostring(o.bn_mom)))
    end
    local _, height = common.image_shape(who, o)
    local units, filters, bottle = layout(who, depth, height <= (kind == 'resnext' and 32 or 28))
    cfg = {bn_mom = o.bn_mom, workspace = o.conv_workspace}
    return common.fresh(mx, function() return body(kind, o, units, filters, bottle, height) end)
  end

  local R = {}
  --- ResNet as MXNet's symbols/resnet.py (v2, pre-activation) or resnet-v1.py builds it.
  -- @param opts `num_layers` (50), `num_classes` (1000), `image_shape` ({3, 224, 224}: a
  --   height up to 28 selects the CIFAR form), `version` (2, or 1), `bn_mom` (0.9),
  --   `conv_workspace` (256)
  -- @return the network's SoftmaxOutput symbol
  -- @usage local net = mx.models.resnet{num_layers = 20, num_classes = 10, image_shape = {3, 28, 28}}
  function R.resnet(opts)
    local o, version = opts, 2
    if type(opts) == 'table' then
      o = {}
      for k, v in pairs(opts) do o[k] = v end
      if o.version ~= nil then version, o.version = o.version, nil end
    end
    if version ~= 1 and version ~= 2 then
      raise(('mx.models.resnet: version must be 1 or 2, got %s'):format(tostring(version)))
    end
    return build('resnet', version == 1 and 'v1' or 'v2', o)
  end
  --- ResNeXt as MXNet's symbols/resnext.py builds it.
  -- @param opts `num_layers` (50), `num_classes` (1000), `image_shape` ({3, 224, 224}: a
  --   height up to 32 selects the CIFAR form), `num_group` (32), `bn_mom` (0.9),
  --   `conv_workspace` (256)
  -- @return the network's SoftmaxOutput symbol
  function R.resnext(opts) return build('resnext', 'resnext', opts, {num_group = 32}) end
  return R
end
M.make = make

return M
