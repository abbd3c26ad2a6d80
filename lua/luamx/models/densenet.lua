--- luamx.models.densenet — DenseNet as MXNet 1.9's
-- example/image-classification/symbols/densenet.py builds it (input 3 x 224 x 224).
--
-- `bn_data` on the input, the stem `conv0`/`bn0`/`relu0` and a max pooling, then dense
-- blocks `DBstage<i>` whose units `DBstage<i>_unit<j>` are BN-ReLU-conv 1x1 (4 x growth) -
-- BN-ReLU-conv 3x3 (growth), each followed by a Dropout (`_dp1`, `_dp2`) when `drop_out`
-- is above 0 and joined to the block's running input by `DBstage<i>_concat<j>`;
-- transitions `TBstage<i>` (BN-ReLU-conv 1x1 to floor(channels x reduction), Dropout,
-- 2x2 average pooling `TBstage<i>_pool<i>`); the head `bn1`/`relu1`/`pool1`/`fc1`.
local common = require 'luamx.models.common'
local raise = require('luamx.capi').raise

local M = {}

local depths = {[121] = {6, 12, 24, 16}, [161] = {6, 12, 36, 24}, [169] = {6, 12, 32, 32},
  [201] = {6, 12, 48, 32}, [264] = {6, 12, 64, 48}}

--- The builders of this file, bound to `mx` (luamx.models.init puts them in mx.models).
-- @param mx the luamx module table
-- @return a table name -> builder
function M.make(mx)
  local S = mx.sym
  local R = {}

  --- DenseNet as MXNet's symbols/densenet.py builds it (input 3 x 224 x 224).
  -- @param opts `num_layers` (121: one of 121, 161, 169, 201, 264), `num_classes` (1000),
  --   `growth_rate` (32), `reduction` (0.5), `drop_out` (0.2), `bottle_neck` (true),
  --   `bn_mom` (0.9), `workspace` (512)
  -- @return the network's SoftmaxOutput symbol
  -- @usage local net = mx.models.densenet{num_layers = 121}
  function R.densenet(opts)
    local o = common.options('densenet', opts, {num_layers = 121, num_classes = 1000, growth_rate = 32,
      reduction = 0.5, drop_out = 0.2, bottle_neck = true, bn_mom = 0.9, workspace = 512})
    common.one_of('densenet', o, 'num_layers', {121, 161, 169, 201, 264})
    common.positive_int('densenet', o, 'num_classes')
    common.positive_int('densenet', o, 'growth_rate')
    common.positive_int('densenet', o, 'workspace')
    common.one_of('densenet', o, 'bottle_neck', {true, false})
    for _, k in ipairs({'reduction', 'drop_out', 'bn_mom'}) do
      if type(o[k]) ~= 'number' or o[k] < 0 or o[k] > 1 then
        raise(('mx.models.densenet: %s must be a number in [0, 1], got %s'):format(k, tostring(o[k])))
      end
    end
    local units, g = depths[o.num_layers], o.growth_rate
    local function bn(x, name)
      return S.BatchNorm{data = x, fix_gamma = false, eps = 2e-5, momentum = o.bn_mom, name = name}
    end
    local function relu(x, name) return S.Activation{data = x, act_type = 'relu', name = name} end
    local function conv(x, nf, k, p, name)
      return S.Convolution{data = x, num_filter = nf, kernel = {k, k}, stride = {1, 1}, pad = {p, p},
        no_bias = true, workspace = o.workspace, name = name}
    end
    local function drop(x, name)
      if o.drop_out > 0 then return S.Dropout{data = x, p = o.drop_out, name = name} end
      return x
    end
    local function unit(x, name)
      local a1 = relu(bn(x, name .. '_bn1'), name .. '_relu1')
      if not o.bottle_neck then return drop(conv(a1, g, 3, 1, name .. '_conv1'), name .. '_dp1') end
      local c1 = drop(conv(a1, math.floor(g * 4), 1, 0, name .. '_conv1'), name .. '_dp1')
      local a2 = relu(bn(c1, name .. '_bn2'), name .. '_relu2')
      return drop(conv(a2, g, 3, 1, name .. '_conv2'), name .. '_dp2')
    end
    local function block(n, x, name)
      for j = 1, n do
        x = S.Concat(x, unit(x, ('%s_unit%d'):format(name, j)), {name = ('%s_concat%d'):format(name, j)})
      end
      return x
    end
    return common.fresh(mx, function()
      local x = S.BatchNorm{data = S.Variable('data'), fix_gamma = true, eps = 2e-5, momentum = o.bn_mom,
        name = 'bn_data'}
      x = S.Convolution{data = x, num_filter = g * 2, kernel = {7, 7}, stride = {2, 2}, pad = {3, 3},
        no_bias = true, name = 'conv0', workspace = o.workspace}
      x = relu(bn(x, 'bn0'), 'relu0')
      x = S.Pooling{data = x, kernel = {3, 3}, stride = {2, 2}, pad = {1, 1}, pool_type = 'max'}
      local ch = 2 * g
      for i = 1, 3 do
        x = block(units[i], x, 'DBstage' .. i)
        ch = math.floor((ch + units[i] * g) * o.reduction)
        local name = 'TBstage' .. i
        x = relu(bn(x, name .. '_bn1'), name .. '_relu1')
        x = drop(S.Convolution{data = x, num_filter = ch, kernel = {1, 1}, stride = {1, 1}, pad = {0, 0},
          no_bias = true, workspace = o.workspace, name = name .. '_conv1'}, name .. '_dp1')
        x = S.Pooling{data = x, global_pool = false, kernel = {2, 2}, stride = {2, 2}, pool_type = 'avg',
          name = ('%s_pool%d'):format(name, i)}
      end
      x = block(units[4], x, 'DBstage4')
      x = relu(bn(x, 'bn1'), 'relu1')
      x = S.Pooling{data = x, global_pool = true, kernel = {7, 7}, pool_type = 'avg', name = 'pool1'}
      x = S.Flatten{data = x}
      x = S.FullyConnected{data = x, num_hidden = o.num_classes, name = 'fc1'}
      return S.SoftmaxOutput{data = x, name = 'softmax'}
    end)
  end
  return R
end

return M
