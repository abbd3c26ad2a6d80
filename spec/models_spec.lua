--- spec/models_spec.lua — mx.models: the classic MXNet symbol zoo.
--
-- For each builder: the output shape and the parameter count at the standard input (the
-- counts are the published figures of the same architectures where those exist, and
-- derivations from them written out beside the expectation where MXNet's builder
-- differs), names, attributes and operator counts as MXNet's Python builder gives them,
-- a JSON round trip, and for the small configurations a training bind with a few
-- forward/backward/SGD steps on a fixed batch, whose memory plan (debug_str) is printed
-- against the naive sum. Networks whose operators this build lacks are `pending`.
local mx = require 'luamx'
local H = require 'helpers'
local nd = mx.nd

local function count_ops(sym)
  local counts, nodes = {}, {}
  local json = sym:tojson()
  for op, name in json:gmatch('"op": "([^"]+)",%s*"name": "([^"]+)"') do
    counts[op] = (counts[op] or 0) + 1
    nodes[name] = op
  end
  return counts, nodes
end

-- the attrs object of node `name` in sym's JSON, as a Lua table
local function attrs_of(sym, name)
  local json = sym:tojson()
  local at = json:find('"name": "' .. name:gsub('%-', '%%-') .. '",', 1)
  assert(at, 'no node named ' .. name)
  local next_node = json:find('"op":', at) or #json
  local block = json:sub(at, next_node)
  local body = block:match('"attrs": (%b{})')
  local out = {}
  if body then for k, v in body:gmatch('"([^"]+)": "([^"]*)"') do out[k] = v end end
  return out
end

local function has_op(name)
  for _, n in ipairs(mx.op.list()) do if n == name then return true end end
  return false
end

local function shape_and_count(net, shape)
  local _, out = net:infer_shape{data = shape}
  return out[1], mx.models.num_params(net, {data = shape})
end

-- Binds net for training at `shape`, runs `steps` SGD steps on one fixed random batch,
-- returns the cross-entropy of each step's forward and the executor.
local function train_steps(net, shape, classes, steps, lr)
  mx.random.seed(7)
  local exe = net:simple_bind{ctx = mx.cpu(), data = shape}
  -- fan-in scaling (He): Xavier's fan_out counts every channel of a depthwise kernel,
  -- which makes those weights tiny and, through the BatchNorm after them, their
  -- gradients huge (MobileNet then rises on the first step at any usable rate)
  local init = mx.init.Xavier{rnd_type = 'gaussian', factor_type = 'in', magnitude = 2}
  for _, name in ipairs(exe:list_arguments()) do
    if name ~= 'data' and name ~= 'softmax_label' then init(mx.init.InitDesc(name), exe.arg_dict[name]) end
  end
  for _, name in ipairs(exe:list_auxiliary_states()) do
    exe.aux_dict[name]:fill(name:match('_moving_var$') and 1 or 0)
  end
  local n = shape[1]
  exe.arg_dict.data:set(nd.random.uniform(-1, 1, shape))
  local labels = {}
  for i = 1, n do labels[i] = (i - 1) % classes end
  exe.arg_dict.softmax_label:set(nd.array(labels))
  local opt = mx.optimizer.create('sgd', {learning_rate = lr or 0.01, momentum = 0.9,
    rescale_grad = 1 / n})
  local upd = mx.optimizer.get_updater(opt)
  local losses = {}
  for step = 1, steps do
    exe:forward{is_train = true}
    local p = exe.outputs[1]:totable()
    local loss = 0
    for i = 1, n do loss = loss - math.log(math.max(p[i][labels[i] + 1], 1e-30)) end
    losses[step] = loss / n
    exe:backward()
    for i, name in ipairs(exe:list_arguments()) do
      if name ~= 'data' and name ~= 'softmax_label' then upd(i, exe.grad_dict[name], exe.arg_dict[name]) end
    end
  end
  return losses, exe
end

local function report_memory(label, exe)
  local plan = exe:debug_str():match('(Memory plan: [^\n]*)')
  assert(plan, 'debug_str has no memory plan line')
  local planned, naive = plan:match('Memory plan: (%d+) bytes in %d+ blocks for %d+ entries %(naive sum (%d+) bytes%)')
  planned, naive = tonumber(planned), tonumber(naive)
  assert(planned and naive, 'unexpected memory plan line: ' .. plan)
  print(('  %s: %s (%.0f%% of the naive sum)'):format(label, plan, 100 * planned / naive))
  return planned, naive
end

local function check_training(label, net, shape, classes, lr)
  local losses, exe = train_steps(net, shape, classes, 6, lr)
  for _, l in ipairs(losses) do assert(l == l and l < math.huge, label .. ': loss is not finite') end
  -- A few momentum steps on one random batch are noisy (BatchNorm over small batches,
  -- BLAS rounding decides the order of close steps), so the check is that some step
  -- lowered the loss below the first one: a gradient of the wrong sign, or updates that
  -- do not reach the weights, leave every later loss at or above it. The gradients
  -- themselves are compared with PyTorch in spec/models_torch_spec.lua.
  local best = math.huge
  for i = 2, #losses do best = math.min(best, losses[i]) end
  assert(best < losses[1],
    ('%s: no step lowered the loss: %s'):format(label, table.concat(losses, ', ')))
  local planned, naive = report_memory(label, exe)
  assert(planned < naive, label .. ': the plan shares no memory')
end

describe('mx.models', function()
  it('lists its builders and builds by name', function()
    assert.same({'alexnet', 'densenet', 'googlenet', 'inception_bn', 'inception_v3', 'lstm_ocr', 'mobilenet',
      'mobilenet_v2', 'resnet', 'resnext', 'seq2seq', 'squeezenet', 'ssd', 'transformer_encoder', 'vgg'}, mx.models.list())
    local net = mx.models.get_symbol('vgg', {num_layers = 11})
    assert.same({1, 1000}, (shape_and_count(net, {1, 3, 224, 224})))
    H.raises(function() mx.models.get_symbol('lenet5') end, 'mx.models.get_symbol', 'one of', 'got lenet5')
  end)

  it('every builder\'s JSON loads back to the same JSON, and builds the same twice', function()
    -- the builders whose defaults do not make a classifier (spec/models_seq_spec.lua has more)
    local opts = {seq2seq = {src_vocab = 10, tgt_vocab = 12, src_len = 5, tgt_len = 4},
      transformer_encoder = {num_layers = 2, num_classes = 4}, lstm_ocr = {seq_len = 10, loss_type = 'none'}}
    for _, name in ipairs(mx.models.list()) do
      if name ~= 'alexnet' or has_op('LRN') then
        local json = mx.models.get_symbol(name, opts[name]):tojson()
        assert.equal(json, mx.sym.load_json(json):tojson(), name)
        assert.equal(json, mx.models.get_symbol(name, opts[name]):tojson(), name)
        -- the classifiers end in SoftmaxOutput 'softmax'; SSD's heads are checked in
        -- spec/models_detect_spec.lua
        assert.truthy(json:find(name == 'ssd' and '"name": "cls_prob"' or '"name": "softmax"', 1, true), name)
      end
    end
  end)

  it('rejects bad options, naming the builder, the option and what it got', function()
    H.raises(function() mx.models.resnet{num_layers = 42} end, 'mx.models.resnet', 'num_layers',
      '18, 34, 50', 'got 42')
    H.raises(function() mx.models.resnet{num_layers = 21, image_shape = {3, 28, 28}} end,
      'mx.models.resnet', 'CIFAR form', '6n+2', 'got 21')
    H.raises(function() mx.models.resnet{depth = 50} end, 'mx.models.resnet', 'unknown option "depth"')
    H.raises(function() mx.models.resnet{version = 3} end, 'mx.models.resnet', 'version', 'got 3')
    H.raises(function() mx.models.resnet{image_shape = {3, 224}} end, 'image_shape', 'got {3, 224}')
    H.raises(function() mx.models.vgg{num_layers = 12} end, 'mx.models.vgg', 'num_layers', 'got 12')
    H.raises(function() mx.models.mobilenet{alpha = 0.3} end, 'mx.models.mobilenet', 'alpha', 'got 0.3')
    H.raises(function() mx.models.mobilenet{resolution = 100} end, 'multiple of 32', 'got 100')
    H.raises(function() mx.models.mobilenet_v2{multiplier = -1} end, 'multiplier', 'got -1')
    H.raises(function() mx.models.resnext('x') end, 'mx.models.resnext', 'expected a table', 'got string')
    H.raises(function() mx.models.num_params(mx.models.vgg(), nil) end, 'mx.models.num_params', 'got nil')
    -- the builders still work after an error
    assert.same({1, 10}, (shape_and_count(mx.models.resnet{num_layers = 20, num_classes = 10,
      image_shape = {3, 28, 28}}, {1, 3, 28, 28})))
  end)

  describe('ResNet v1 (resnet-v1.py)', function()
    it('has the published parameter counts at 3x224x224', function()
      -- torchvision's ResNet-50/101/152 counts: the same layers (the stride sits on another
      -- conv of the unit, which moves no parameter); BN gamma/beta counted, moving stats not
      local expect = {[50] = 25557032, [101] = 44549160, [152] = 60192808}
      for depth, n in pairs(expect) do
        local out, params = shape_and_count(mx.models.resnet{num_layers = depth, version = 1}, {2, 3, 224, 224})
        assert.same({2, 1000}, out)
        assert.equal(n, params)
      end
      -- ResNet-18: torchvision's 11,689,512 plus the projection shortcut MXNet's builder gives
      -- stage 1's first unit (dim_match is false there): 64*64 weights + BN gamma/beta 128
      local _, p18 = shape_and_count(mx.models.resnet{num_layers = 18, version = 1}, {1, 3, 224, 224})
      assert.equal(11689512 + 64 * 64 + 128, p18)
    end)

    it('names and orders the unit as resnet-v1.py does', function()
      local net = mx.models.resnet{num_layers = 50, version = 1}
      local counts, nodes = count_ops(net)
      assert.equal(53, counts.Convolution)      -- conv0 + 16 units x 3 + 4 shortcuts
      assert.equal(53, counts.BatchNorm)
      assert.equal(16, counts.elemwise_add)
      assert.equal('_copy', nodes.id)
      assert.equal('BatchNorm', nodes.stage1_unit1_sc)
      assert.equal('Convolution', nodes.stage1_unit1_conv1sc)
      assert.equal('Activation', nodes.stage4_unit3_relu3)
      assert.is_nil(nodes.bn_data)
      assert.same({kernel = '(1, 1)', no_bias = 'True', num_filter = '128', pad = '(0, 0)',
        stride = '(2, 2)', workspace = '256'}, attrs_of(net, 'stage2_unit1_conv1'))
    end)
  end)

  describe('ResNet v2 (resnet.py, pre-activation)', function()
    it('ResNet-50 at 3x224x224: shape, names, attributes', function()
      local net = mx.models.resnet{num_layers = 50}
      local out, params, aux = shape_and_count(net, {1, 3, 224, 224})
      assert.same({1, 1000}, out)
      -- v1's 25,557,032 with the BN layers moved: + bn_data (6) + the final bn1 (4096) +
      -- the unit BNs on their inputs instead of their outputs, - v1's shortcut BNs
      assert.equal(25549486, params)
      assert.equal(45574, aux)
      local args = net:list_arguments()
      assert.same({'data', 'bn_data_gamma', 'bn_data_beta', 'conv0_weight', 'bn0_gamma', 'bn0_beta',
        'stage1_unit1_bn1_gamma', 'stage1_unit1_bn1_beta', 'stage1_unit1_conv1_weight'},
        {unpack(args, 1, 9)})
      assert.same({'fc1_weight', 'fc1_bias', 'softmax_label'}, {unpack(args, #args - 2)})
      local counts, nodes = count_ops(net)
      assert.equal(16, counts.elemwise_add)
      assert.equal('elemwise_add', nodes._plus0)
      assert.equal('elemwise_add', nodes._plus15)
      assert.equal('Pooling', nodes.pooling0)
      assert.equal('Flatten', nodes.flatten0)
      assert.same({eps = '2e-05', fix_gamma = 'True', momentum = '0.9'}, attrs_of(net, 'bn_data'))
      assert.same({kernel = '(7, 7)', no_bias = 'True', num_filter = '64', pad = '(3, 3)',
        stride = '(2, 2)', workspace = '256'}, attrs_of(net, 'conv0'))
      assert.same({kernel = '(1, 1)', no_bias = 'True', num_filter = '256', stride = '(1, 1)',
        workspace = '256'}, attrs_of(net, 'stage1_unit1_sc'))
      assert.same({global_pool = 'True', kernel = '(7, 7)', pool_type = 'avg'}, attrs_of(net, 'pool1'))
      -- the same JSON back from a load
      assert.equal(net:tojson(), mx.sym.load_json(net:tojson()):tojson())
    end)

    it('names are those of a fresh process, whatever was built before', function()
      local a = mx.models.resnet{num_layers = 18}:tojson()
      mx.sym.FullyConnected{data = mx.sym.Variable('x'), num_hidden = 2} -- uses the global counters
      assert.equal(a, mx.models.resnet{num_layers = 18}:tojson())
    end)

    it('ResNet-20 CIFAR form: count by hand, and a few training steps', function()
      local net = mx.models.resnet{num_layers = 20, num_classes = 10, image_shape = {3, 28, 28}}
      -- bn_data 6 + conv0 432 + stage1 3*(2*2304+64)+256 + stage2 (4608+9216+96+512) +
      -- 2*(2*9216+128) + stage3 (18432+36864+192+2048) + 2*(2*36864+256) + bn1 128 + fc 650
      local out, params = shape_and_count(net, {1, 3, 28, 28})
      assert.same({1, 10}, out)
      assert.equal(272544, params)
      local counts = count_ops(net)
      assert.equal(22, counts.Convolution)
      assert.equal(20, counts.BatchNorm)
      assert.equal(9, counts.elemwise_add)
      check_training('resnet-20 cifar, batch 8 at 3x16x16', net, {8, 3, 16, 16}, 10)
      -- the control: with a zero learning rate no step can lower the loss
      H.raises(function() check_training('resnet-20, lr 0', net, {8, 3, 16, 16}, 10, 0) end,
        'resnet-20, lr 0: no step lowered the loss')
    end)

    it('the deep forms at their standard inputs', function()
      for _, depth in ipairs({18, 34, 101, 152}) do
        local out = shape_and_count(mx.models.resnet{num_layers = depth}, {1, 3, 224, 224})
        assert.same({1, 1000}, out)
      end
      local _, p164 = shape_and_count(mx.models.resnet{num_layers = 164, num_classes = 10,
        image_shape = {3, 28, 28}}, {1, 3, 28, 28})
      assert.is_true(p164 > 1.6e6 and p164 < 1.8e6) -- the paper's ResNet-164: 1.7M
    end)
  end)

  describe('ResNeXt (resnext.py)', function()
    it('ResNeXt-50 32x4d: count, grouped convolutions', function()
      local net = mx.models.resnext{num_layers = 50}
      local out, params = shape_and_count(net, {1, 3, 224, 224})
      assert.same({1, 1000}, out)
      assert.equal(25028904 + 6, params) -- torchvision's resnext50_32x4d + bn_data's gamma/beta
      assert.same({kernel = '(3, 3)', no_bias = 'True', num_filter = '128', num_group = '32',
        pad = '(1, 1)', stride = '(1, 1)', workspace = '256'}, attrs_of(net, 'stage1_unit1_conv2'))
      local _, nodes = count_ops(net)
      assert.equal('BatchNorm', nodes.stage1_unit1_sc_bn)
      assert.equal('Activation', nodes.stage4_unit3_relu)
    end)

    it('trains a few steps in a small CIFAR form', function()
      -- the CIFAR form below 164 layers has basic units (resnext.py groups only bottlenecks)
      local net = mx.models.resnext{num_layers = 20, num_classes = 4, image_shape = {3, 32, 32}}
      local _, nodes = count_ops(net)
      assert.equal('BatchNorm', nodes.stage2_unit1_sc_bn)
      check_training('resnext-20 cifar, batch 4 at 3x8x8', net, {4, 3, 8, 8}, 4)
    end)
  end)

  describe('VGG (vgg.py)', function()
    it('has the published parameter counts', function()
      local cases = {{11, false, 132863336}, {16, false, 138357544}, {16, true, 138365992}}
      for _, c in ipairs(cases) do
        local net = mx.models.vgg{num_layers = c[1], batch_norm = c[2]}
        local out, params = shape_and_count(net, {1, 3, 224, 224})
        assert.same({1, 1000}, out)
        assert.equal(c[3], params)
      end
      local counts, nodes = count_ops(mx.models.vgg{num_layers = 19})
      assert.equal(16, counts.Convolution)
      assert.equal('Dropout', nodes.drop7)
      assert.equal('Pooling', nodes.pool5)
    end)
  end)

  describe('MobileNet', function()
    it('v1 (mobilenet.py): Keras\'s trainable count, depthwise groups', function()
      local net = mx.models.mobilenet{}
      local out, params, aux = shape_and_count(net, {1, 3, 224, 224})
      assert.same({1, 1000}, out)
      assert.equal(4231976, params) -- MobileNet 1.0-224 trainable parameters
      assert.equal(21888, aux)      -- and its BN moving statistics
      local a = attrs_of(net, 'conv_14_dw_conv2d')
      assert.equal('1024', a.num_group)
      assert.equal('1024', a.num_filter)
      assert.equal('True', attrs_of(net, 'conv_14_dw_batchnorm').fix_gamma)
    end)

    -- 64x64, batch 8, as for v2 below: at 32x32 the last layers' BatchNorms see only the
    -- batch's values and whether 6 fixed-rate steps end lower depends on BLAS rounding
    it('v1 at alpha 0.25, resolution 64: a few training steps', function()
      local net = mx.models.mobilenet{alpha = 0.25, resolution = 64, num_classes = 4}
      check_training('mobilenet 0.25, batch 8 at 3x64x64', net, {8, 3, 64, 64}, 4)
    end)

    it('v2 (mobilenetv2.py): count, names, ReLU6 as clip', function()
      local net = mx.models.mobilenet_v2{}
      local out, params = shape_and_count(net, {1, 3, 224, 224})
      assert.same({1, 1000}, out)
      -- torchvision's mobilenet_v2 (3,504,872) skips the first block's 1x1 expansion
      -- where t = 1; mobilenetv2.py builds it: 32*32 weights + BN gamma/beta 64
      assert.equal(3504872 + 32 * 32 + 64, params)
      local counts, nodes = count_ops(net)
      assert.equal(10, counts.elemwise_add)
      assert.equal('elemwise_add', nodes['seq-1-block1-shortcut'])
      assert.equal('clip', nodes['seq-6-block0-depthwise-relu6'])
      assert.same({a_max = '6', a_min = '0'}, attrs_of(net, 'first-3x3-conv-relu6'))
      assert.equal('960', attrs_of(net, 'seq-6-block0-depthwise-conv2d').num_group)
      assert.equal(net:tojson(), mx.sym.load_json(net:tojson()):tojson())
    end)

    -- at 32x32 the last blocks work on 1x1 maps, where each BatchNorm normalises just the
    -- batch's 4 values and the loss surface is too sharp for a few fixed-rate steps
    it('v2 at multiplier 0.25, 64x64: a few training steps', function()
      local net = mx.models.mobilenet_v2{multiplier = 0.25, num_classes = 4}
      check_training('mobilenet_v2 0.25, batch 8 at 3x64x64', net, {8, 3, 64, 64}, 4)
    end)
  end)

  describe('Inception', function()
    it('GoogLeNet (googlenet.py): 6,998,552 parameters at 3x256x256, and MXNet\'s error at 224', function()
      local net = mx.models.googlenet()
      -- the file keeps MXNet's 'valid' pooling, so at 224 the 7x7 pooling meets a 6x6 map
      -- and fails in the node MXNet names (apache/mxnet issue 5714: pooling4)
      H.raises(function() net:infer_shape{data = {1, 3, 224, 224}} end, 'pooling4', 'kernel size 7',
        'exceeds input size 6')
      local out, params, aux = shape_and_count(net, {1, 3, 256, 256})
      assert.same({1, 1000}, out)
      assert.equal(6998552, params) -- the paper's main tower (conv with bias, no auxiliary heads)
      assert.equal(0, aux)
      local counts, nodes = count_ops(net)
      assert.equal(9, counts.Concat)
      assert.equal('Pooling', nodes.max_pool_in4e_pool)
      assert.equal('Concat', nodes.ch_concat_in5b_chconcat)
      assert.equal('4', attrs_of(net, 'ch_concat_in3a_chconcat').num_args)
      assert.equal('FullyConnected', nodes.fullyconnected0)
    end)

    it('Inception-BN (inception-bn.py): count, eps as Python writes 1e-10 + 1e-5', function()
      local net = mx.models.inception_bn()
      local out, params = shape_and_count(net, {1, 3, 224, 224})
      assert.same({1, 1000}, out)
      -- summed by hand over the file's blocks: conv weights and biases, BN gamma and beta, fc
      assert.equal(11295240, params)
      assert.same({eps = '1.0000100000000001e-05', fix_gamma = 'False', momentum = '0.9'},
        attrs_of(net, 'bn_3c_double_3x3_1'))
      local _, nodes = count_ops(net)
      assert.equal('Pooling', nodes.avg_pool_4a_pool)
      assert.equal('Pooling', nodes.max_pool_5b_pool)
    end)

    it('Inception-BN\'s small form at 3x28x28: a few training steps', function()
      local net = mx.models.inception_bn{num_classes = 4, image_shape = {3, 28, 28}}
      local _, nodes = count_ops(net)
      assert.equal('Concat', nodes.in4e_ch_concat)
      check_training('inception_bn small, batch 2 at 3x28x28', net, {2, 3, 28, 28}, 2)
    end)

    it('Inception-v3 (inception-v3.py) at 3x299x299', function()
      local net = mx.models.inception_v3()
      local out, params, aux = shape_and_count(net, {1, 3, 299, 299})
      assert.same({1, 1000}, out)
      -- Keras's InceptionV3 has 23,851,784 parameters of which 34,432 are BN moving
      -- statistics (2 per channel: 17,216 channels) and its BNs have no gamma; MXNet's have
      -- one per channel and the same moving statistics
      assert.equal(23851784 - 17216, params)
      assert.equal(34432, aux)
      assert.same({kernel = '(3, 3)', no_bias = 'True', num_filter = '192', pad = '(0, 0)',
        stride = '(2, 2)'}, attrs_of(net, 'mixed_8_tower_1_conv_3_conv2d'))
      local _, nodes = count_ops(net)
      assert.equal('Pooling', nodes.max_pool_mixed_10_pool)
      assert.equal('6', attrs_of(net, 'ch_concat_mixed_9_chconcat').num_args)
    end)
  end)

  describe('DenseNet (densenet.py)', function()
    it('has torchvision\'s counts plus bn_data\'s gamma and beta', function()
      for depth, n in pairs({[121] = 7978856, [169] = 14149480, [201] = 20013928}) do
        local out, params = shape_and_count(mx.models.densenet{num_layers = depth}, {1, 3, 224, 224})
        assert.same({1, 1000}, out)
        assert.equal(n + 6, params)
      end
      local net = mx.models.densenet()
      local counts, nodes = count_ops(net)
      assert.equal(58, counts.Concat)                -- 6 + 12 + 24 + 16 units
      assert.equal(2 * 58 + 3, counts.Dropout)       -- two per unit, one per transition
      assert.equal('Dropout', nodes.DBstage4_unit16_dp2)
      assert.equal('Pooling', nodes.TBstage3_pool3)
      assert.same({global_pool = 'False', kernel = '(2, 2)', pool_type = 'avg', stride = '(2, 2)'},
        attrs_of(net, 'TBstage1_pool1'))
      assert.equal('128', attrs_of(net, 'TBstage1_conv1').num_filter) -- floor((64 + 6*32) / 2)
      H.raises(function() mx.models.densenet{reduction = 2} end, 'mx.models.densenet', 'reduction', 'got 2')
    end)

    it('trains a few steps at growth rate 4, batch 4 at 3x64x64', function()
      local net = mx.models.densenet{growth_rate = 4, num_classes = 4, drop_out = 0}
      local counts = count_ops(net)
      assert.is_nil(counts.Dropout)
      check_training('densenet-121 growth 4, batch 4 at 3x64x64', net, {4, 3, 64, 64}, 4)
    end)
  end)

  describe('AlexNet (alexnet.py)', function()
    if not has_op('LRN') then
      it('builds when the LRN operator is registered', function()
        H.raises(function() mx.models.alexnet() end, 'mx.models.alexnet', 'operator LRN')
      end)
      pending('AlexNet needs the LRN operator, which this build does not register')
      return
    end
    -- alexnet.py has no channel groups: Caffe's grouped AlexNet has 60,965,224
    -- parameters, and ungrouping conv2/conv4/conv5 adds 307,200 + 663,552 + 442,368 =
    -- 62,378,344 at 227x227. At 224x224 the last pooling gives 5x5, not 6x6, so fc6 has
    -- 6,400 inputs instead of 9,216: 11,534,336 fewer, 50,844,008.
    it('has 62,378,344 parameters at 227x227 (Caffe\'s AlexNet ungrouped) and 50,844,008 at 224x224', function()
      local net = mx.models.alexnet()
      local out227, params227 = shape_and_count(net, {1, 3, 227, 227})
      assert.same({1, 1000}, out227)
      assert.equal(62378344, params227)
      local out, params = shape_and_count(net, {1, 3, 224, 224})
      assert.same({1, 1000}, out)
      assert.equal(50844008, params)
      local _, nodes = count_ops(net)
      assert.equal('LRN', nodes.lrn1)
      assert.equal('FullyConnected', nodes.fullyconnected2)
    end)
  end)
end)
