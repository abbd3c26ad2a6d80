--- luamx.models.classic — AlexNet and VGG as MXNet 1.9's
-- example/image-classification/symbols/alexnet.py and vgg.py build them.
--
-- * AlexNet: the single-tower network (96-256-384-384-256 filters, LRN after the first
--   two poolings) with MXNet's automatic names (`convolution0`, `lrn0`, `fullyconnected2`,
--   ...); only `softmax` is named. It needs the `LRN` operator: the builder says so when
--   this build of luamx does not register it.
-- * VGG 11/13/16/19, with `batch_norm` a BatchNorm after every convolution: `conv<i>_<j>`,
--   `bn<i>_<j>`, `relu<i>_<j>`, `pool<i>`, then `fc6`/`fc7` (4096, ReLU, Dropout 0.5) and `fc8`.
local common = require 'luamx.models.common'

local M = {}

local vgg_spec = {[11] = {{1, 1, 2, 2, 2}, {64, 128, 256, 512, 512}},
  [13] = {{2, 2, 2, 2, 2}, {64, 128, 256, 512, 512}},
  [16] = {{2, 2, 3, 3, 3}, {64, 128, 256, 512, 512}},
  [19] = {{2, 2, 4, 4, 4}, {64, 128, 256, 512, 512}}}

--- The builders of this file, bound to `mx` (luamx.models.init puts them in mx.models).
-- @param mx the luamx module table
-- @return a table name -> builder
function M.make(mx)
  local S = mx.sym
  local R = {}

  --- AlexNet as MXNet's symbols/alexnet.py builds it (input 3 x 224 x 224). Needs the
  -- `LRN` operator.
  -- @param opts `num_classes` (1000)
  -- @return the network's SoftmaxOutput symbol
  -- @usage local net = mx.models.alexnet{num_classes = 10}
  function R.alexnet(opts)
    local o = common.options('alexnet', opts, {num_classes = 1000})
    common.positive_int('alexnet', o, 'num_classes')
    common.require_ops(mx, 'alexnet', {'LRN'})
    return common.fresh(mx, function()
      local function relu(x) return S.Activation{data = x, act_type = 'relu'} end
      local function maxpool(x) return S.Pooling{data = x, pool_type = 'max', kernel = {3, 3}, stride = {2, 2}} end
      local function lrn(x) return S.LRN{data = x, alpha = 0.0001, beta = 0.75, knorm = 1, nsize = 5} end
      local x = S.Variable('data')
      x = lrn(maxpool(relu(S.Convolution{data = x, kernel = {11, 11}, stride = {4, 4}, num_filter = 96})))
      x = lrn(maxpool(relu(S.Convolution{data = x, kernel = {5, 5}, pad = {2, 2}, num_filter = 256})))
      x = relu(S.Convolution{data = x, kernel = {3, 3}, pad = {1, 1}, num_filter = 384})
      x = relu(S.Convolution{data = x, kernel = {3, 3}, pad = {1, 1}, num_filter = 384})
      x = maxpool(relu(S.Convolution{data = x, kernel = {3, 3}, pad = {1, 1}, num_filter = 256}))
      x = S.Flatten{data = x}
      x = S.Dropout{data = relu(S.FullyConnected{data = x, num_hidden = 4096}), p = 0.5}
      x = S.Dropout{data = relu(S.FullyConnected{data = x, num_hidden = 4096}), p = 0.5}
      x = S.FullyConnected{data = x, num_hidden = o.num_classes}
      return S.SoftmaxOutput{data = x, name = 'softmax'}
    end)
  end

  --- VGG as MXNet's symbols/vgg.py builds it (input 3 x 224 x 224).
  -- @param opts `num_layers` (16: one of 11, 13, 16, 19), `num_classes` (1000),
  --   `batch_norm` (false)
  -- @return the network's SoftmaxOutput symbol
  -- @usage local net = mx.models.vgg{num_layers = 11, batch_norm = true}
  function R.vgg(opts)
    local o = common.options('vgg', opts, {num_layers = 16, num_classes = 1000, batch_norm = false})
    common.one_of('vgg', o, 'num_layers', {11, 13, 16, 19})
    common.positive_int('vgg', o, 'num_classes')
    common.one_of('vgg', o, 'batch_norm', {true, false})
    local layers, filters = vgg_spec[o.num_layers][1], vgg_spec[o.num_layers][2]
    return common.fresh(mx, function()
      local x = S.Variable('data')
      for i, n in ipairs(layers) do
        for j = 1, n do
          x = S.Convolution{data = x, kernel = {3, 3}, pad = {1, 1}, num_filter = filters[i],
            name = ('conv%d_%d'):format(i, j)}
          if o.batch_norm then x = S.BatchNorm{data = x, name = ('bn%d_%d'):format(i, j)} end
          x = S.Activation{data = x, act_type = 'relu', name = ('relu%d_%d'):format(i, j)}
        end
        x = S.Pooling{data = x, pool_type = 'max', kernel = {2, 2}, stride = {2, 2}, name = ('pool%d'):format(i)}
      end
      x = S.Flatten{data = x, name = 'flatten'}
      for _, k in ipairs({6, 7}) do
        x = S.FullyConnected{data = x, num_hidden = 4096, name = 'fc' .. k}
        x = S.Activation{data = x, act_type = 'relu', name = 'relu' .. k}
        x = S.Dropout{data = x, p = 0.5, name = 'drop' .. k}
      end
      x = S.FullyConnected{data = x, num_hidden = o.num_classes, name = 'fc8'}
      return S.SoftmaxOutput{data = x, name = 'softmax'}
    end)
  end
  return R
end

return M
