--- spec/gpu_models_spec.lua — zoo networks on a GPU against the CPU: the same parameters
--- and batch, one training forward and backward on each device, the outputs and every
--- parameter gradient compared. Under the CUDA simulator (-DLUAMX_CUDA=SIM) this runs
--- the GPU kernels' source on the host; skipped where no GPU context exists.
--
-- Parameters are drawn with a variance-preserving scale (uniform with variance 1/fan_in),
-- so gradients stay of order one through the depth and a relative tolerance means the
-- same thing on every layer. Gradients that are zero in exact arithmetic (a BN beta or a
-- bias feeding a training-mode BatchNorm) are compared against a floor of 1e-3 of the
-- network's largest gradient, as in spec/models_torch_spec.lua.
local mx = require 'luamx'
local G = require 'gpu_helpers'
local nd = mx.nd

if G.skip_without_gpu('zoo networks on a GPU') then return end

local function bind(net, shape, ctx)
  mx.random.seed(5)
  local exe = net:simple_bind{ctx = ctx, data = shape}
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
  for i = 1, shape[1] do labels[i] = (i - 1) % 4 end
  exe.arg_dict.softmax_label:set(nd.array(labels))
  exe:forward{is_train = true}
  exe:backward()
  return exe
end

local function flat(a) return a:as_in_context(mx.cpu()):toflat() end

local function compare(label, build, shape, rtol)
  local a = bind(build(), shape, mx.cpu())
  local b = bind(build(), shape, mx.gpu(0))
  local names = {}
  for _, n in ipairs(a:list_arguments()) do
    if n ~= 'data' and n ~= 'softmax_label' then names[#names + 1] = n end
  end
  local top = 0
  for _, n in ipairs(names) do
    for _, v in ipairs(flat(a.grad_dict[n])) do top = math.max(top, math.abs(v)) end
  end
  local worst, at = 0, nil
  local function diff(key, x, y)
    local m, e = 0, 0
    for i = 1, #x do
      m = math.max(m, math.abs(x[i]))
      e = math.max(e, math.abs(x[i] - y[i]))
    end
    local r = e / math.max(m, 1e-3 * top, 1e-12)
    if r ~= r then r = math.huge end
    if r > worst then worst, at = r, key end
  end
  diff('output', flat(a.outputs[1]), flat(b.outputs[1]))
  for _, n in ipairs(names) do diff('grad ' .. n, flat(a.grad_dict[n]), flat(b.grad_dict[n])) end
  print(('  %s: output and %d gradients, worst relative difference %.2g (%s)'):format(label, #names,
    worst, tostring(at)))
  assert(worst < rtol, ('%s: %s differs between cpu and gpu(0) by %.3g'):format(label, at, worst))
end

describe('zoo networks on gpu(0) against the CPU', function()
  it('ResNet-20 v2, CIFAR form, batch 4 at 3x16x16', function()
    compare('resnet-20', function()
      return mx.models.resnet{num_layers = 20, num_classes = 4, image_shape = {3, 28, 28}}
    end, {4, 3, 16, 16}, 1e-3)
  end)

  it('MobileNet v1 (alpha 0.25), batch 4 at 3x64x64', function()
    compare('mobilenet 0.25', function()
      return mx.models.mobilenet{alpha = 0.25, resolution = 64, num_classes = 4}
    end, {4, 3, 64, 64}, 1e-3)
  end)

  it('MobileNet v2 (multiplier 0.25), batch 4 at 3x64x64', function()
    compare('mobilenet_v2 0.25', function()
      return mx.models.mobilenet_v2{multiplier = 0.25, num_classes = 4}
    end, {4, 3, 64, 64}, 1e-3)
  end)
end)
