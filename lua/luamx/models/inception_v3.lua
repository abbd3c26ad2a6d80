--- luamx.models.inception_v3 — Inception-v3 as MXNet 1.9's
-- example/image-classification/symbols/inception-v3.py builds it (input 3 x 299 x 299).
--
-- Every convolution is the file's `Conv`: conv (no bias, pad and stride always given) ->
-- BatchNorm (fix_gamma) -> ReLU, named `<n>_conv2d`, `<n>_batchnorm`, `<n>_relu`. The
-- blocks `mixed` .. `mixed_10` are the file's Inception7A..E with towers `<b>_tower`,
-- `<b>_tower_1`, `<b>_tower_2`, poolings `<type>_pool_<b>_pool` and joins
-- `ch_concat_<b>_chconcat`; `mixed_10` pools with max, as the file does.
local common = require 'luamx.models.common'

local M = {}

--- The builders of this file, bound to `mx` (luamx.models.init puts them in mx.models).
-- @param mx the luamx module table
-- @return a table name -> builder
function M.make(mx)
  local S = mx.sym

  local function concat(list, name)
    local args = {unpack(list)}
    args[#args + 1] = {name = name}
    return S.Concat(unpack(args))
  end

  -- k, p, s: {h, w} pairs (default 1x1, pad 0, stride 1)
  local function conv(data, nf, name, suffix, k, p, s)
    local n = name .. (suffix or '')
    local c = S.Convolution{data = data, num_filter = nf, kernel = k or {1, 1}, stride = s or {1, 1},
      pad = p or {0, 0}, no_bias = true, name = n .. '_conv2d'}
    local b = S.BatchNorm{data = c, name = n .. '_batchnorm', fix_gamma = true}
    return S.Activation{data = b, act_type = 'relu', name = n .. '_relu'}
  end
  local function pool(data, ptype, name, pad, stride)
    return S.Pooling{data = data, kernel = {3, 3}, stride = stride or {1, 1}, pad = pad,
      pool_type = ptype, name = ('%s_pool_%s_pool'):format(ptype, name)}
  end
  local k3, k5, k17, k71, k13, k31 = {3, 3}, {5, 5}, {1, 7}, {7, 1}, {1, 3}, {3, 1}
  local p0, p1, p2, p03, p30, p01, p10 = {0, 0}, {1, 1}, {2, 2}, {0, 3}, {3, 0}, {0, 1}, {1, 0}
  local s2 = {2, 2}

  local function block_a(x, n1, n3r, n31, n32, n5r, n5, ptype, proj, name)
    local t1 = conv(x, n1, name .. '_conv')
    local t5 = conv(conv(x, n5r, name .. '_tower', '_conv'), n5, name .. '_tower', '_conv_1', k5, p2)
    local t3 = conv(x, n3r, name .. '_tower_1', '_conv')
    t3 = conv(t3, n31, name .. '_tower_1', '_conv_1', k3, p1)
    t3 = conv(t3, n32, name .. '_tower_1', '_conv_2', k3, p1)
    local cp = conv(pool(x, ptype, name, p1), proj, name .. '_tower_2', '_conv')
    return concat({t1, t5, t3, cp}, ('ch_concat_%s_chconcat'):format(name))
  end

  local function block_b(x, n3, nr, n1, n2, name)
    local t3 = conv(x, n3, name .. '_conv', nil, k3, p0, s2)
    local td = conv(x, nr, name .. '_tower', '_conv')
    td = conv(td, n1, name .. '_tower', '_conv_1', k3, p1, {1, 1})
    td = conv(td, n2, name .. '_tower', '_conv_2', k3, p0, s2)
    local p = S.Pooling{data = x, kernel = {3, 3}, stride = s2, pad = p0, pool_type = 'max',
      name = ('max_pool_%s_pool'):format(name)}
    return concat({t3, td, p}, ('ch_concat_%s_chconcat'):format(name))
  end

  local function block_c(x, n1, d7r, d71, d72, q7r, q71, q72, q73, q74, ptype, proj, name)
    local t1 = conv(x, n1, name .. '_conv', nil, {1, 1})
    local td = conv(x, d7r, name .. '_tower', '_conv')
    td = conv(td, d71, name .. '_tower', '_conv_1', k17, p03)
    td = conv(td, d72, name .. '_tower', '_conv_2', k71, p30)
    local tq = conv(x, q7r, name .. '_tower_1', '_conv')
    tq = conv(tq, q71, name .. '_tower_1', '_conv_1', k71, p30)
    tq = conv(tq, q72, name .. '_tower_1', '_conv_2', k17, p03)
    tq = conv(tq, q73, name .. '_tower_1', '_conv_3', k71, p30)
    tq = conv(tq, q74, name .. '_tower_1', '_conv_4', k17, p03)
    local cp = conv(pool(x, ptype, name, p1), proj, name .. '_tower_2', '_conv', {1, 1})
    return concat({t1, td, tq, cp}, ('ch_concat_%s_chconcat'):format(name))
  end

  local function block_d(x, n3r, n3, d7r, d71, d72, d73, ptype, name)
    local t3 = conv(x, n3r, name .. '_tower', '_conv')
    t3 = conv(t3, n3, name .. '_tower', '_conv_1', k3, p0, s2)
    local td = conv(x, d7r, name .. '_tower_1', '_conv')
    td = conv(td, d71, name .. '_tower_1', '_conv_1', k17, p03)
    td = conv(td, d72, name .. '_tower_1', '_conv_2', k71, p30)
    td = conv(td, d73, name .. '_tower_1', '_conv_3', k3, nil, s2)
    local p = S.Pooling{data = x, kernel = {3, 3}, stride = s2, pool_type = ptype,
      name = ('%s_pool_%s_pool'):format(ptype, name)}
    return concat({t3, td, p}, ('ch_concat_%s_chconcat'):format(name))
  end

  local function block_e(x, n1, d3r, d31, d32, q3r, q3, q31, q32, ptype, proj, name)
    local t1 = conv(x, n1, name .. '_conv', nil, {1, 1})
    local td = conv(x, d3r, name .. '_tower', '_conv')
    local tda = conv(td, d31, name .. '_tower', '_mixed_conv', k13, p01)
    local tdb = conv(td, d32, name .. '_tower', '_mixed_conv_1', k31, p10)
    local tq = conv(x, q3r, name .. '_tower_1', '_conv')
    tq = conv(tq, q3, name .. '_tower_1', '_conv_1', k3, p1)
    local tqa = conv(tq, q31, name .. '_tower_1', '_mixed_conv', k13, p01)
    local tqb = conv(tq, q32, name .. '_tower_1', '_mixed_conv_1', k31, p10)
    local cp = conv(pool(x, ptype, name, p1), proj, name .. '_tower_2', '_conv', {1, 1})
    return concat({t1, tda, tdb, tqa, tqb, cp}, ('ch_concat_%s_chconcat'):format(name))
  end

  local R = {}
  --- Inception-v3 as MXNet's symbols/inception-v3.py builds it (input 3 x 299 x 299).
  -- @param opts `num_classes` (1000)
  -- @return the network's SoftmaxOutput symbol
  -- @usage local net = mx.models.inception_v3{num_classes = 10}
  function R.inception_v3(opts)
    local o = common.options('inception_v3', opts, {num_classes = 1000})
    common.positive_int('inception_v3', o, 'num_classes')
    return common.fresh(mx, function()
      local x = S.identity{data = S.Variable('data'), name = 'id'}
      x = conv(x, 32, 'conv', nil, k3, nil, s2)
      x = conv(x, 32, 'conv_1', nil, k3)
      x = conv(x, 64, 'conv_2', nil, k3, p1)
      x = S.Pooling{data = x, kernel = {3, 3}, stride = s2, pool_type = 'max', name = 'pool'}
      x = conv(x, 80, 'conv_3', nil, {1, 1})
      x = conv(x, 192, 'conv_4', nil, k3)
      x = S.Pooling{data = x, kernel = {3, 3}, stride = s2, pool_type = 'max', name = 'pool1'}
      x = block_a(x, 64, 64, 96, 96, 48, 64, 'avg', 32, 'mixed')
      x = block_a(x, 64, 64, 96, 96, 48, 64, 'avg', 64, 'mixed_1')
      x = block_a(x, 64, 64, 96, 96, 48, 64, 'avg', 64, 'mixed_2')
      x = block_b(x, 384, 64, 96, 96, 'mixed_3')
      x = block_c(x, 192, 128, 128, 192, 128, 128, 128, 128, 192, 'avg', 192, 'mixed_4')
      x = block_c(x, 192, 160, 160, 192, 160, 160, 160, 160, 192, 'avg', 192, 'mixed_5')
      x = block_c(x, 192, 160, 160, 192, 160, 160, 160, 160, 192, 'avg', 192, 'mixed_6')
      x = block_c(x, 192, 192, 192, 192, 192, 192, 192, 192, 192, 'avg', 192, 'mixed_7')
      x = block_d(x, 192, 320, 192, 192, 192, 192, 'max', 'mixed_8')
      x = block_e(x, 320, 384, 384, 384, 448, 384, 384, 384, 'avg', 192, 'mixed_9')
      x = block_e(x, 320, 384, 384, 384, 448, 384, 384, 384, 'max', 192, 'mixed_10')
      x = S.Pooling{data = x, kernel = {8, 8}, stride = {1, 1}, pool_type = 'avg', name = 'global_pool'}
      x = S.Flatten{data = x, name = 'flatten'}
      x = S.FullyConnected{data = x, num_hidden = o.num_classes, name = 'fc1'}
      return S.SoftmaxOutput{data = x, name = 'softmax'}
    end)
  end
  return R
end

return M
