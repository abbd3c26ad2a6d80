--- luamx.models.squeezenet — SqueezeNet 1.0 and 1.1 (Iandola et al., 2016) as MXNet
-- 1.9's Gluon model zoo defines them (python/mxnet/gluon/model_zoo/vision/squeezenet.py;
-- MXNet's symbol zoo has no SqueezeNet), written with the symbol API.
--
-- * 1.0: a 7x7/2 convolution of 96 filters, then fire modules 2-9 with max-poolings
--   (3x3/2, rounding up: pooling_convention 'full', Gluon's ceil_mode) after conv1,
--   fire4 and fire8; 1.1: a 3x3/2 convolution of 64 filters and the poolings after
--   conv1, fire3 and fire5 (2.4x less computation, the same accuracy).
-- * A fire module: a 1x1 "squeeze" convolution and ReLU, then 1x1 and 3x3 (pad 1)
--   "expand" convolutions, each with a ReLU, concatenated along the channels.
-- * The classifier: Dropout (`dropout`, 0.5), a 1x1 convolution to `num_classes`, ReLU, a
--   global average pooling (Gluon's 13x13 average pooling at 224x224 inputs) and Flatten,
--   then SoftmaxOutput `softmax` as the other builders of the zoo.
-- Names follow the original Caffe SqueezeNet: `conv1`, `fire2_squeeze1x1`,
-- `fire2_expand1x1`, `fire2_expand3x3`, `fire2_concat`, `pool1`, `drop9`, `conv10`,
-- `pool10`; ReLUs are `<conv>_relu`.
local common = require 'luamx.models.common'

local M = {}

-- fire modules (squeeze, expand 1x1, expand 3x3) and the poolings (after conv1 = 1, after
-- fire<i> = i) of each version
local versions = {
  ['1.0'] = {conv1 = {96, 7}, pools = {[1] = true, [4] = true, [8] = true}},
  ['1.1'] = {conv1 = {64, 3}, pools = {[1] = true, [3] = true, [5] = true}},
}
local fires = {{16, 64, 64}, {16, 64, 64}, {32, 128, 128}, {32, 128, 128}, {48, 192, 192},
  {48, 192, 192}, {64, 256, 256}, {64, 256, 256}}

--- The builders of this file, bound to `mx` (luamx.models.init puts them in mx.models).
-- @param mx the luamx module table
-- @return a table name -> builder
function M.make(mx)
  local S = mx.sym
  local R = {}

  --- SqueezeNet 1.0 or 1.1 as MXNet's Gluon model zoo defines it (input 3 x 224 x 224; any
  -- size from 3 x 32 x 32 up works, the last pooling being global).
  -- @param opts `version` ('1.0': '1.0' or '1.1'), `num_classes` (1000), `dropout` (0.5,
  --   the probability of the Dropout before conv10; 0 leaves it out)
  -- @return the network's SoftmaxOutput symbol
  -- @usage local net = mx.models.squeezenet{version = '1.1', num_classes = 10}
  function R.squeezenet(opts)
    local o = common.options('squeezenet', opts, {version = '1.0', num_classes = 1000, dropout = 0.5})
    common.one_of('squeezenet', o, 'version', {'1.0', '1.1'})
    common.positive_int('squeezenet', o, 'num_classes')
    if type(o.dropout) ~= 'number' or o.dropout < 0 or o.dropout >= 1 then
      require('luamx.capi').raise(('mx.models.squeezenet: dropout must be a number in [0, 1), got %s')
        :format(tostring(o.dropout)))
    end
    local v = versions[o.version]
    return common.fresh(mx, function()
      local function conv(x, name, filters, k, stride, pad)
        x = S.Convolution{data = x, kernel = {k, k}, stride = {stride, stride}, pad = {pad, pad},
          num_filter = filters, name = name}
        return S.Activation{data = x, act_type = 'relu', name = name .. '_relu'}
      end
      local function pool(x, i)
        return S.Pooling{data = x, pool_type = 'max', kernel = {3, 3}, stride = {2, 2},
          pooling_convention = 'full', name = 'pool' .. i}
      end
      local x = conv(S.Variable('data'), 'conv1', v.conv1[1], v.conv1[2], 2, 0)
      x = pool(x, 1)
      for i, f in ipairs(fires) do
        local id = i + 1
        local name = 'fire' .. id
        local sq = conv(x, name .. '_squeeze1x1', f[1], 1, 1, 0)
        local e1 = conv(sq, name .. '_expand1x1', f[2], 1, 1, 0)
        local e3 = conv(sq, name .. '_expand3x3', f[3], 3, 1, 1)
        x = S.Concat(e1, e3, {dim = 1, name = name .. '_concat'})
        if v.pools[id] then x = pool(x, id) end
      end
      if o.dropout > 0 then x = S.Dropout{data = x, p = o.dropout, name = 'drop9'} end
      x = conv(x, 'conv10', o.num_classes, 1, 1, 0)
      x = S.Pooling{data = x, pool_type = 'avg', global_pool = true, kernel = {1, 1}, name = 'pool10'}
      x = S.Flatten{data = x, name = 'flatten'}
      return S.SoftmaxOutput{data = x, name = 'softmax'}
    end)
  end
  return R
end

return M
