--- spec/models_torch_spec.lua — mx.models networks against PyTorch.
--
-- For the small networks of the zoo (DenseNet-121 at growth rate 4, SqueezeNet without dropout): luamx binds the network for training, fills its
-- parameters and a batch with random values, runs forward and backward, and saves the
-- symbol JSON, the parameters, the outputs and the gradients (float32, a text manifest);
-- spec/models_torch_ref.py runs the same JSON with PyTorch (its own definition of each
-- operator) from the same parameters and reports the largest difference of the outputs
-- and of every gradient. Pending without Debian's python3-torch.
local mx = require 'luamx'
local nd = mx.nd
local H = require 'helpers'

local src = os.getenv('LUAMX_SOURCE_DIR') or '.'

local function have_torch()
  return os.execute('/usr/bin/python3 -c "import torch" >/dev/null 2>&1') == 0
end

local function write_case(dir, net, shape, classes, tamper, seed)
  mx.random.seed(seed or 11)
  local exe = net:simple_bind{ctx = mx.cpu(), data = shape}
  -- variance-preserving weights (uniform with variance 1/fan_in), so gradients stay of
  -- order one through the depth and one relative tolerance fits every layer
  for _, name in ipairs(exe:list_arguments()) do
    local a = exe.arg_dict[name]
    if name == 'data' then
      a:set(nd.random.uniform(-1, 1, a.shape))
    elseif name:match('_gamma$') then
      a:set(nd.random.uniform(0.8, 1.2, a.shape))
    elseif name:match('_beta$') or name:match('_bias$') then
      a:set(nd.random.uniform(-0.1, 0.1, a.shape))
    elseif name ~= 'softmax_label' then
      local s = math.sqrt(3 / (a.size / a.shape[1]))
      a:set(nd.random.uniform(-s, s, a.shape))
    end
  end
  for _, name in ipairs(exe:list_auxiliary_states()) do
    exe.aux_dict[name]:fill(name:match('_moving_var$') and 1 or 0)
  end
  local labels = {}
  for i = 1, shape[1] do labels[i] = (i - 1) % classes end
  exe.arg_dict.softmax_label:set(nd.array(labels))
  -- the pass/stop pattern of every ReLU and clip in luamx's forward: the reference applies
  -- these, so an input within float32 rounding of a corner routes its gradient the same
  -- way on both sides (see compare_all)
  local kinked = {}
  for op, name in net:tojson():gmatch('"op": "([^"]+)",%s*"name": "([^"]+)"') do
    if op == 'Activation' or op == 'clip' then kinked[name .. '_output'] = name end
  end
  local masks = {}
  exe:set_monitor_callback(function(name, arr)
    if kinked[name] then masks[#masks + 1] = {kinked[name], arr:copy()} end
  end)
  exe:forward{is_train = true}
  exe:set_monitor_callback(nil)
  exe:backward()
  local js = assert(io.open(dir .. '/symbol.json', 'w'))
  js:write(net:tojson())
  js:close()
  local w = H.array_writer(dir)
  local put = w.put
  for _, name in ipairs(exe:list_arguments()) do put('arg', name, exe.arg_dict[name]) end
  for _, name in ipairs(exe:list_auxiliary_states()) do put('aux', name, exe.aux_dict[name]) end
  for _, m in ipairs(masks) do put('act', m[1], m[2]) end
  put('out', 'output', exe.outputs[1])
  for _, name in ipairs(exe:list_arguments()) do
    if name ~= 'data' and name ~= 'softmax_label' then
      local g = exe.grad_dict[name]
      put('grad', name, name == tamper and g * 1.01 or g)
    end
  end
  w.close()
end

-- The networks compared: label, builder, input shape, classes, tolerance.
local cases = {
  {'resnet-20 v2, CIFAR form, batch 4 at 3x16x16', function()
    return mx.models.resnet{num_layers = 20, num_classes = 10, image_shape = {3, 28, 28}} end,
    {4, 3, 16, 16}, 10, 1e-3},
  -- 64x64: stage 4 works on 2x2 maps, so its BatchNorms see 8 values (at 32x32, batch 2,
  -- they would see 2, where BN's gradient is ill-conditioned and float32 rounding dominates)
  {'resnet-18 v1, ImageNet form, batch 2 at 3x64x64', function()
    return mx.models.resnet{num_layers = 18, version = 1, num_classes = 10} end, {2, 3, 64, 64}, 10, 1e-3},
  -- 64x64 (not 32x32) for both MobileNets: the last layers work on 2x2 maps, so their
  -- BatchNorms see 16 values, not the batch's 4, where float32 rounding is amplified
  {'mobilenet alpha 0.25, batch 4 at 3x64x64', function()
    return mx.models.mobilenet{alpha = 0.25, resolution = 64, num_classes = 4} end, {4, 3, 64, 64}, 4, 1e-3},
  {'mobilenet_v2 multiplier 0.25, batch 4 at 3x64x64', function()
    return mx.models.mobilenet_v2{multiplier = 0.25, num_classes = 4} end, {4, 3, 64, 64}, 4, 1e-3},
  {'inception_bn small form, batch 2 at 3x28x28', function()
    return mx.models.inception_bn{num_classes = 4, image_shape = {3, 28, 28}} end, {2, 3, 28, 28}, 4, 1e-3},
  {'densenet-121 growth 4 without dropout, batch 2 at 3x64x64', function()
    return mx.models.densenet{growth_rate = 4, num_classes = 4, drop_out = 0} end, {2, 3, 64, 64}, 4,
    1e-3},
  -- SqueezeNet 1.1 without its dropout (pooling_convention 'full': torch's ceil_mode)
  {'squeezenet 1.1 without dropout, batch 2 at 3x64x64', function()
    return mx.models.squeezenet{version = '1.1', num_classes = 4, dropout = 0} end, {2, 3, 64, 64}, 4,
    1e-3},
  {'squeezenet 1.0 without dropout, batch 2 at 3x64x64', function()
    return mx.models.squeezenet{version = '1.0', num_classes = 4, dropout = 0} end, {2, 3, 64, 64}, 4,
    1e-3},
  -- the control: one gradient of the first case off by 1% must be caught
  {'control: resnet-20 with one gradient scaled by 1.01', function()
    return mx.models.resnet{num_layers = 20, num_classes = 10, image_shape = {3, 28, 28}} end,
    {4, 3, 16, 16}, 10, 1e-3, 'stage2_unit1_conv1_weight'},
}

-- Writes every case, runs the reference once; returns per case {kind .. ' ' .. name =
-- {err, max}, kink = distance} and the reference's output. Where a ReLU/clip input lies
-- within float32 rounding of its corner, luamx's float32 forward and the float64
-- reference may fall on different sides and route that element's gradient differently
-- (seen with MobileNet v2, ResNet-18 and Inception-BN under other OpenBLAS kernels, with
-- luamx on the CPU and the simulated GPU agreeing): so the reference applies luamx's own
-- pass/stop pattern (the `act` arrays). Max-pooling windows are not pinned that way; the
-- closest kink the reference saw (ReLU/clip corner or max-pooling near tie, in float64)
-- is printed with each result to explain a failure should one appear.
local function compare_all()
  local root = os.tmpname()
  os.remove(root)
  local dirs = {}
  for i, c in ipairs(cases) do
    dirs[i] = ('%s/case%d'):format(root, i)
    assert(os.execute('mkdir -p ' .. dirs[i]) == 0)
    write_case(dirs[i], c[2](), c[3], c[4], c[6], 11)
  end
  local p = io.popen(('/usr/bin/python3 %s/spec/models_torch_ref.py %s 2>&1'):format(src,
    table.concat(dirs, ' ')))
  local text = p:read('*a')
  p:close()
  os.execute('rm -rf ' .. root)
  local res = {}
  for i, d in ipairs(dirs) do
    local pat = d:gsub('%p', '%%%0')
    res[i] = {}
    for kind, name, err, ref in text:gmatch('cmp ' .. pat .. ' (%a+) (%S+) (%S+) (%S+)') do
      -- 'nan' is no Lua number: it counts as the largest difference
      res[i][kind .. ' ' .. name] = {tonumber(err) or math.huge, tonumber(ref) or 0}
    end
    res[i].kink = tonumber(text:match('kink ' .. pat .. ' (%S+)'))
  end
  return res, text
end

-- Every output and gradient within rtol of the largest magnitude of its reference, where
-- that magnitude is floored at 1e-3 of the largest gradient in the network: some
-- gradients are zero in exact arithmetic (a bias or a BN beta whose output feeds a
-- training-mode BatchNorm, through a convolution or not, which removes any shift), so
-- both sides hold only rounding noise there.
local function check(label, net, res, rtol)
  assert(next(res), label .. ': the PyTorch reference compared nothing')
  local kink = res.kink
  res.kink = nil
  local top = 0
  for key, r in pairs(res) do if key:match('^grad ') then top = math.max(top, r[2]) end end
  local worst, at = 0, nil
  local ngrad = 0
  for key, r in pairs(res) do
    local rel = r[1] / math.max(r[2], 1e-3 * top, 1e-12)
    if rel > worst then worst, at = rel, key end
    if key:match('^grad ') then ngrad = ngrad + 1 end
  end
  assert.is_truthy(res['out output'], label .. ': no output compared')
  local nparams = #net:list_arguments() - 2
  assert.equal(nparams, ngrad)
  print(('  %s: output and %d gradients, worst relative difference %.2g (%s); closest kink %s')
    :format(label, ngrad, worst, tostring(at), tostring(kink)))
  assert(worst < rtol, ('%s: %s differs from PyTorch by %.3g of its largest value'):format(label, at, worst))
end

describe('mx.models against PyTorch', function()
  if not have_torch() then
    pending('PyTorch (Debian python3-torch) is not installed')
    return
  end

  local results, text
  setup(function() results, text = compare_all() end)

  for i, c in ipairs(cases) do
    it(c[1], function()
      assert(results[i] and next(results[i]), 'the PyTorch reference printed nothing usable: ' .. text)
      if c[6] then
        H.raises(function() check(c[1], c[2](), results[i], c[5]) end, 'grad ' .. c[6],
          'differs from PyTorch')
      else
        check(c[1], c[2](), results[i], c[5])
      end
    end)
  end
end)
