--- luamx.models.inception — GoogLeNet and Inception-BN as MXNet 1.9's
-- example/image-classification/symbols/googlenet.py and inception-bn.py build them.
--
-- * GoogLeNet: conv (with bias) + ReLU factories `conv_<n>`/`relu_<n>`, inception blocks
--   `in3a` .. `in5b` whose branches are `<b>_1x1`, `<b>_3x3_reduce`, `<b>_3x3`,
--   `<b>_5x5_reduce`, `<b>_5x5`, `max_pool_<b>_pool`, `<b>_proj`, joined by
--   `ch_concat_<b>_chconcat`; the stem's poolings are automatic (`pooling0` ...). The
--   file has no LRN, unlike the paper.
-- * Inception-BN: the same factories with BatchNorm `bn_<n>` (eps 1e-10 + 1e-5), the
--   A blocks with a double 3x3 branch (`<b>_double_3x3_0`, `_1`), the B (reduction)
--   blocks `3c` and `4e`; at a height up to 28 the file's small CIFAR network of
--   `SimpleFactory`/`DownsampleFactory` blocks instead.
local common = require 'luamx.models.common'

local M = {}

--- The builders of this file, bound to `mx` (luamx.models.init puts them in mx.models).
-- @param mx the luamx module table
-- @return a table name -> builder
function M.make(mx)
  local S = mx.sym
  local R = {}

  local function concat(list, name)
    local args = {unpack(list)}
    args[#args + 1] = {name = name}
    return S.Concat(unpack(args))
  end

  -- googlenet.py's ConvFactory: conv -> relu
  local function gconv(data, nf, k, s, p, name, suffix)
    suffix = suffix or ''
    local c = S.Convolution{data = data, num_filter = nf, kernel = {k, k}, stride = {s, s},
      pad = {p, p}, name = ('conv_%s%s'):format(name, suffix)}
    return S.Activation{data = c, act_type = 'relu', name = ('relu_%s%s'):format(name, suffix)}
  end

  local function g_inception(data, n1, n3r, n3, n5r, n5, pool, proj, name)
    local c1 = gconv(data, n1, 1, 1, 0, name .. '_1x1')
    local c3 = gconv(gconv(data, n3r, 1, 1, 0, name .. '_3x3', '_reduce'), n3, 3, 1, 1, name .. '_3x3')
    local c5 = gconv(gconv(data, n5r, 1, 1, 0, name .. '_5x5', '_reduce'), n5, 5, 1, 2, name .. '_5x5')
    local p = S.Pooling{data = data, kernel = {3, 3}, stride = {1, 1}, pad = {1, 1}, pool_type = pool,
      name = ('%s_pool_%s_pool'):format(pool, name)}
    local cp = gconv(p, proj, 1, 1, 0, name .. '_proj')
    return concat({c1, c3, c5, cp}, ('ch_concat_%s_chconcat'):format(name))
  end

  --- GoogLeNet as MXNet's symbols/googlenet.py builds it (input 3 x 224 x 224).
  -- @param opts `num_classes` (1000)
  -- @return the network's SoftmaxOutput symbol
  -- @usage local net = mx.models.googlenet{num_classes = 10}
  function R.googlenet(opts)
    local o = common.options('googlenet', opts, {num_classes = 1000})
    common.positive_int('googlenet', o, 'num_classes')
    return common.fresh(mx, function()
      local function maxpool(x) return S.Pooling{data = x, kernel = {3, 3}, stride = {2, 2}, pool_type = 'max'} end
      local x = gconv(S.Variable('data'), 64, 7, 2, 3, 'conv1')
      x = maxpool(x)
      x = gconv(x, 64, 1, 1, 0, 'conv2')
      x = maxpool(gconv(x, 192, 3, 1, 1, 'conv3'))
      x = g_inception(x, 64, 96, 128, 16, 32, 'max', 32, 'in3a')
      x = g_inception(x, 128, 128, 192, 32, 96, 'max', 64, 'in3b')
      x = maxpool(x)
      x = g_inception(x, 192, 96, 208, 16, 48, 'max', 64, 'in4a')
      x = g_inception(x, 160, 112, 224, 24, 64, 'max', 64, 'in4b')
      x = g_inception(x, 128, 128, 256, 24, 64, 'max', 64, 'in4c')
      x = g_inception(x, 112, 144, 288, 32, 64, 'max', 64, 'in4d')
      x = g_inception(x, 256, 160, 320, 32, 128, 'max', 128, 'in4e')
      x = maxpool(x)
      x = g_inception(x, 256, 160, 320, 32, 128, 'max', 128, 'in5a')
      x = g_inception(x, 384, 192, 384, 48, 128, 'max', 128, 'in5b')
      x = S.Pooling{data = x, kernel = {7, 7}, stride = {1, 1}, pool_type = 'avg'}
      x = S.Flatten{data = x}
      x = S.FullyConnected{data = x, num_hidden = o.num_classes}
      return S.SoftmaxOutput{data = x, name = 'softmax'}
    end)
  end

  -- inception-bn.py's ConvFactory: conv -> BN -> relu
  local function bconv(data, nf, k, s, p, name, suffix)
    suffix = suffix or ''
    local c = S.Convolution{data = data, num_filter = nf, kernel = {k, k}, stride = {s, s},
      pad = {p, p}, name = ('conv_%s%s'):format(name, suffix)}
    local b = S.BatchNorm{data = c, fix_gamma = false, eps = 1e-10 + 1e-5, momentum = 0.9,
      name = ('bn_%s%s'):format(name, suffix)}
    return S.Activation{data = b, act_type = 'relu', name = ('relu_%s%s'):format(name, suffix)}
  end

  local function block_a(data, n1, n3r, n3, nd3r, nd3, pool, proj, name)
    local c1 = bconv(data, n1, 1, 1, 0, name .. '_1x1')
    local c3 = bconv(bconv(data, n3r, 1, 1, 0, name .. '_3x3', '_reduce'), n3, 3, 1, 1, name .. '_3x3')
    local cd = bconv(data, nd3r, 1, 1, 0, name .. '_double_3x3', '_reduce')
    cd = bconv(cd, nd3, 3, 1, 1, name .. '_double_3x3_0')
    cd = bconv(cd, nd3, 3, 1, 1, name .. '_double_3x3_1')
    local p = S.Pooling{data = data, kernel = {3, 3}, stride = {1, 1}, pad = {1, 1}, pool_type = pool,
      name = ('%s_pool_%s_pool'):format(pool, name)}
    local cp = bconv(p, proj, 1, 1, 0, name .. '_proj')
    return concat({c1, c3, cd, cp}, ('ch_concat_%s_chconcat'):format(name))
  end

  local function block_b(data, n3r, n3, nd3r, nd3, name)
    local c3 = bconv(bconv(data, n3r, 1, 1, 0, name .. '_3x3', '_reduce'), n3, 3, 2, 1, name .. '_3x3')
    local cd = bconv(data, nd3r, 1, 1, 0, name .. '_double_3x3', '_reduce')
    cd = bconv(cd, nd3, 3, 1, 1, name .. '_double_3x3_0')
    cd = bconv(cd, nd3, 3, 2, 1, name .. '_double_3x3_1')
    local p = S.Pooling{data = data, kernel = {3, 3}, stride = {2, 2}, pad = {1, 1}, pool_type = 'max',
      name = ('max_pool_%s_pool'):format(name)}
    return concat({c3, cd, p}, ('ch_concat_%s_chconcat'):format(name))
  end

  local function downsample(data, ch3, name)
    local c = bconv(data, ch3, 3, 2, 1, name .. '_conv')
    local p = S.Pooling{data = data, name = name .. '_pool', kernel = {3, 3}, stride = {2, 2},
      pad = {1, 1}, pool_type = 'max'}
    return concat({c, p}, name .. '_ch_concat')
  end

  local function simple(data, ch1, ch3, name)
    local c1 = bconv(data, ch1, 1, 1, 0, name .. '_1x1')
    local c3 = bconv(data, ch3, 3, 1, 1, name .. '_3x3')
    return concat({c1, c3}, name .. '_ch_concat')
  end

  --- Inception-BN as MXNet's symbols/inception-bn.py builds it.
  -- @param opts `num_classes` (1000), `image_shape` ({3, 224, 224}; a height up to 28
  --   selects the file's small CIFAR network, which expects 28 x 28)
  -- @return the network's SoftmaxOutput symbol
  -- @usage local net = mx.models.inception_bn{num_classes = 10, image_shape = {3, 28, 28}}
  function R.inception_bn(opts)
    local o = common.options('inception_bn', opts, {num_classes = 1000, image_shape = {3, 224, 224}})
    common.positive_int('inception_bn', o, 'num_classes')
    local _, height = common.image_shape('inception_bn', o)
    return common.fresh(mx, function()
      local x = S.Variable('data')
      if height <= 28 then
        x = bconv(x, 96, 3, 1, 1, '1')
        x = simple(x, 32, 32, 'in3a')
        x = simple(x, 32, 48, 'in3b')
        x = downsample(x, 80, 'in3c')
        x = simple(x, 112, 48, 'in4a')
        x = simple(x, 96, 64, 'in4b')
        x = simple(x, 80, 80, 'in4c')
        x = simple(x, 48, 96, 'in4d')
        x = downsample(x, 96, 'in4e')
        x = simple(x, 176, 160, 'in5a')
        x = simple(x, 176, 160, 'in5b')
        x = S.Pooling{data = x, pool_type = 'avg', kernel = {7, 7}, name = 'global_pool'}
      else
        x = bconv(x, 64, 7, 2, 3, '1')
        x = S.Pooling{data = x, kernel = {3, 3}, stride = {2, 2}, name = 'pool_1', pool_type = 'max'}
        x = bconv(x, 64, 1, 1, 0, '2_red')
        x = bconv(x, 192, 3, 1, 1, '2')
        x = S.Pooling{data = x, kernel = {3, 3}, stride = {2, 2}, name = 'pool_2', pool_type = 'max'}
        x = block_a(x, 64, 64, 64, 64, 96, 'avg', 32, '3a')
        x = block_a(x, 64, 64, 96, 64, 96, 'avg', 64, '3b')
        x = block_b(x, 128, 160, 64, 96, '3c')
        x = block_a(x, 224, 64, 96, 96, 128, 'avg', 128, '4a')
        x = block_a(x, 192, 96, 128, 96, 128, 'avg', 128, '4b')
        x = block_a(x, 160, 128, 160, 128, 160, 'avg', 128, '4c')
        x = block_a(x, 96, 128, 192, 160, 192, 'avg', 128, '4d')
        x = block_b(x, 128, 192, 192, 256, '4e')
        x = block_a(x, 352, 192, 320, 160, 224, 'avg', 128, '5a')
        x = block_a(x, 352, 192, 320, 192, 224, 'max', 128, '5b')
        x = S.Pooling{data = x, kernel = {7, 7}, stride = {1, 1}, name = 'global_pool', pool_type = 'avg'}
      end
      x = S.Flatten{data = x}
      x = S.FullyConnected{data = x, num_hidden = o.num_classes}
      return S.SoftmaxOutput{data = x, name = 'softmax'}
    end)
  end
  return R
end

return M
