--- spec/models_detect_spec.lua — mx.models.squeezenet and mx.models.ssd.
--
-- SqueezeNet 1.0 / 1.1: output shapes and parameter counts at 224x224 (torchvision's
-- published counts of the same architectures: 1,248,424 and 1,235,496), the node names,
-- the pooling rounding and a few training steps on a fixed batch. SSD (MXNet's
-- example/ssd): the shape of every head (the 8,732 anchors of SSD300 with the
-- VGG16-reduced backbone, the tiny backbone's 1,488 at 32x32), the training group's
-- outputs, the deploy symbol, a JSON round trip, and a few SGD steps on a tiny synthetic
-- detection set (one bright square per image, its box and class the label) where the
-- loss falls.
local mx = require 'luamx'
local H = require 'helpers'
local nd = mx.nd

-- the output shapes of sym given those of the inputs it has among `inputs`
local function shapes_of(sym, inputs)
  local given = {}
  for _, name in ipairs(sym:list_arguments()) do given[name] = inputs[name] end
  local _, out = sym:infer_shape(given)
  return out
end

describe('mx.models.squeezenet', function()
  it('gives 1000 classes with torchvision\'s parameter counts at 224x224', function()
    for version, count in pairs { ['1.0'] = 1248424, ['1.1'] = 1235496 } do
      local net = mx.models.squeezenet { version = version }
      assert.same({ { 1, 1000 } }, shapes_of(net, { data = { 1, 3, 224, 224 } }))
      assert.equal(count, (mx.models.num_params(net, { data = { 1, 3, 224, 224 } })))
    end
  end)

  it('names its layers as Caffe SqueezeNet and rounds the poolings up', function()
    local net = mx.models.squeezenet { version = '1.1', num_classes = 10 }
    local args = net:list_arguments()
    assert.equal('conv1_weight', args[2])
    local inner = net:get_internals()
    -- 1.1 at 224: conv1 3x3/2 -> 111, pool1 (3x3/2, full) -> 55, fire2..3 -> pool3 27,
    -- pool5 13, conv10 13x13 to 10 classes, pool10 global
    for name, want in pairs { pool1_output = { 1, 64, 55, 55 }, fire3_concat_output = { 1, 128, 55, 55 },
      pool3_output = { 1, 128, 27, 27 }, pool5_output = { 1, 256, 13, 13 },
      fire9_concat_output = { 1, 512, 13, 13 }, conv10_relu_output = { 1, 10, 13, 13 },
      pool10_output = { 1, 10, 1, 1 } } do
      assert.same({ want }, shapes_of(inner[name], { data = { 1, 3, 224, 224 } }), name)
    end
    -- 1.0: conv1 7x7/2 96 filters -> 109, pool1 -> 54; dropout 0 leaves drop9 out
    local v0 = mx.models.squeezenet { dropout = 0 }
    assert.same({ { 1, 96, 54, 54 } }, shapes_of(v0:get_internals().pool1_output, { data = { 1, 3, 224, 224 } }))
    assert.falsy(v0:tojson():find('"drop9"', 1, true))
    assert.truthy(mx.models.squeezenet():tojson():find('"name": "drop9"', 1, true))
    H.raises(function() mx.models.squeezenet { version = '1.2' } end, 'mx.models.squeezenet', 'version',
      '1.0, 1.1', 'got 1.2')
    H.raises(function() mx.models.squeezenet { dropout = 1 } end, 'mx.models.squeezenet', 'dropout', 'got 1')
  end)

  it('trains: a few SGD steps on a fixed batch lower the loss', function()
    mx.random.seed(5)
    local net = mx.models.squeezenet { version = '1.1', num_classes = 4, dropout = 0 }
    local shape = { 4, 3, 48, 48 }
    local exe = net:simple_bind { ctx = mx.cpu(), data = shape }
    local init = mx.init.Xavier { rnd_type = 'gaussian', factor_type = 'in', magnitude = 2 }
    for _, name in ipairs(exe:list_arguments()) do
      if name ~= 'data' and name ~= 'softmax_label' then init(mx.init.InitDesc(name), exe.arg_dict[name]) end
    end
    exe.arg_dict.data:set(nd.random.uniform(-1, 1, shape))
    exe.arg_dict.softmax_label:set(nd.array { 0, 1, 2, 3 })
    local opt = mx.optimizer.create('sgd', { learning_rate = 0.02, momentum = 0.9, rescale_grad = 1 / 4 })
    local upd = mx.optimizer.get_updater(opt)
    local losses = {}
    for step = 1, 8 do
      exe:forward { is_train = true }
      local p = exe.outputs[1]:totable()
      local l = 0
      for i = 1, 4 do l = l - math.log(math.max(p[i][i], 1e-30)) end
      losses[step] = l / 4
      exe:backward()
      for i, name in ipairs(exe:list_arguments()) do
        if name ~= 'data' and name ~= 'softmax_label' then upd(i, exe.grad_dict[name], exe.arg_dict[name]) end
      end
    end
    local best = math.huge
    for i = 2, #losses do best = math.min(best, losses[i]) end
    assert(best < losses[1], 'no step lowered the loss: ' .. table.concat(losses, ', '))
  end)
end)

describe('mx.models.ssd', function()
  it('has SSD300\'s 8,732 anchors and heads with the VGG16-reduced backbone', function()
    local net = mx.models.ssd { num_classes = 20 }
    assert.same({ 'cls_prob_output', 'loc_loss_output', 'cls_label_output', 'det_out_output' },
      net:list_outputs())
    local inner = net:get_internals()
    local inputs = { data = { 2, 3, 300, 300 }, label = { 2, 3, 5 } }
    assert.same({ { 1, 8732, 4 } }, shapes_of(inner.multibox_anchors_output, inputs))
    assert.same({ { 2, 8732 * 4 } }, shapes_of(inner.multibox_loc_pred_output, inputs))
    assert.same({ { 2, 21, 8732 } }, shapes_of(inner.multibox_cls_pred_output, inputs))
    -- the feature maps: 38, 19, 10, 5, 3, 1
    for name, hw in pairs { relu4_3_output = 38, relu7_output = 19, multi_feat_2_conv_3x3_relu_output = 10,
      multi_feat_3_conv_3x3_relu_output = 5, multi_feat_4_conv_3x3_relu_output = 3,
      multi_feat_5_conv_3x3_relu_output = 1 } do
      assert.equal(hw, shapes_of(inner[name], inputs)[1][3], name)
    end
    assert.same({ { 2, 21, 8732 }, { 2, 8732 * 4 }, { 2, 8732 }, { 2, 8732, 6 } }, shapes_of(net, inputs))
    -- the scale of relu4_3's L2 normalisation: one per channel, initialised to 20
    local js = net:tojson()
    assert.truthy(js:find('"name": "relu4_3_scale"', 1, true))
    assert.truthy(js:find('"relu4_3_norm"', 1, true))
    assert.equal(js, mx.sym.load_json(js):tojson())
    local dep = mx.models.ssd { num_classes = 20, mode = 'deploy' }
    assert.same({ 'detection_output' }, dep:list_outputs())
    assert.same({ { 1, 8732, 6 } }, shapes_of(dep, { data = { 1, 3, 300, 300 } }))
    H.raises(function() mx.models.ssd { network = 'resnet' } end, 'mx.models.ssd', 'network', 'got resnet')
    H.raises(function() mx.models.ssd { nms_thresh = 0 } end, 'mx.models.ssd', 'nms_thresh', 'got 0')
  end)

  it('trains the tiny backbone on a synthetic detection set: the loss falls', function()
    local N, classes = 8, 2
    local net = mx.models.ssd { network = 'tiny', num_classes = classes }
    local inputs = { data = { N, 3, 32, 32 }, label = { N, 1, 5 } }
    assert.same({ { 1, 1488, 4 } }, shapes_of(net:get_internals().multibox_anchors_output, inputs))
    mx.random.seed(3)
    local exe = net:simple_bind { ctx = mx.cpu(), data = inputs.data, label = inputs.label }
    local init = mx.init.Xavier { rnd_type = 'gaussian', factor_type = 'in', magnitude = 2 }
    for _, name in ipairs(exe:list_arguments()) do
      local a = exe.arg_dict[name]
      if name:match('_scale$') then a:fill(20)
      elseif name:match('_bias$') then a:fill(0)
      elseif name ~= 'data' and name ~= 'label' then init(mx.init.InitDesc(name), a) end
    end
    -- each image: a bright square of class (i % 2) in one of four places, the rest dark
    local img, lab = {}, {}
    local places = { { 2, 2 }, { 16, 4 }, { 6, 17 }, { 18, 18 } }
    for i = 1, N do
      local p, side = places[(i - 1) % 4 + 1], 10 + (i % 3)
      local cls = i % 2
      local im = {}
      for c = 1, 3 do
        im[c] = {}
        for y = 1, 32 do
          im[c][y] = {}
          for x = 1, 32 do
            local inside = x > p[1] and x <= p[1] + side and y > p[2] and y <= p[2] + side
            im[c][y][x] = inside and (c == cls + 1 and 1 or 0.3) or -0.5
          end
        end
      end
      img[i] = im
      lab[i] = { { cls, p[1] / 32, p[2] / 32, (p[1] + side) / 32, (p[2] + side) / 32 } }
    end
    exe.arg_dict.data:set(img)
    exe.arg_dict.label:set(lab)
    local opt = mx.optimizer.create('sgd', { learning_rate = 0.05, momentum = 0.9, wd = 0.0005,
      rescale_grad = 1 / N })
    local upd = mx.optimizer.get_updater(opt)
    local function loss()
      local p, t = exe.outputs[1]:totable(), exe.outputs[3]:totable()
      local l, n = 0, 0
      for i = 1, N do
        for a = 1, #t[i] do
          local k = t[i][a]
          if k >= 0 then l, n = l - math.log(math.max(p[i][k + 1][a], 1e-30)), n + 1 end
        end
      end
      local loc, npos = 0, 0
      for i, row in ipairs(exe.outputs[2]:totable()) do
        for _, v in ipairs(row) do loc = loc + v end
        for _, k in ipairs(t[i]) do if k > 0 then npos = npos + 1 end end
      end
      assert(npos > 0, 'no anchor matched a box')
      return l / n + loc / npos
    end
    local losses = {}
    for step = 1, 12 do
      exe:forward { is_train = true }
      losses[step] = loss()
      exe:backward()
      for i, name in ipairs(exe:list_arguments()) do
        if name ~= 'data' and name ~= 'label' then upd(i, exe.grad_dict[name], exe.arg_dict[name]) end
      end
    end
    for _, l in ipairs(losses) do assert(l == l and l < math.huge, 'loss is not finite') end
    print(('  ssd tiny: loss %s'):format(table.concat(losses, ', ')))
    assert(losses[#losses] < 0.8 * losses[1], 'the loss did not fall: ' .. table.concat(losses, ', '))
    -- the detections: rows [class, score, box] with scores in (0, 1] first, -1 rows after
    local det = exe.outputs[4]:totable()
    assert.equal(1488, #det[1])
    assert.is_true(det[1][1][2] > 0 and det[1][1][2] <= 1)
  end)
end)
