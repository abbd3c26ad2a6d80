-- The whole training path on gpu(n) against the CPU: W1 (MLP), W2 (LeNet) and W3 (LSTM
-- language model, fused and unrolled cells, through BucketingModule) of BENCHMARKS.md at
-- small sizes train from the same start on cpu(0) and on gpu(0) and must agree step by
-- step; two GPU contexts through the 'device' kvstore match one context on the whole
-- batch; steady training steps on the GPU allocate nothing in the engine; group2ctx mixes
-- cpu and gpu nodes in one graph; parameters copy across devices and checkpoints save
-- from GPU arrays; out-of-memory is reported with its figures and recovered from.
-- Runs wherever a GPU context exists: on a real GPU, and in CI under the CUDA simulator
-- (-DLUAMX_CUDA=SIM, two simulated GPUs). Skipped with a message elsewhere.
local mx = require 'luamx'
local H = require 'helpers'
local G = require 'gpu_helpers'

if G.skip_without_gpu('GPU training') then return end
local ngpu = mx.context.num_gpus()

local S = mx.sym
local ramp, batch_of, max_rel = G.ramp, G.batch_of, G.max_rel

local function mlp()
  local x = S.FullyConnected{data = S.Variable('data'), num_hidden = 32, name = 'fc1'}
  x = S.Activation{data = x, act_type = 'relu', name = 'relu1'}
  x = S.FullyConnected{data = x, num_hidden = 16, name = 'fc2'}
  x = S.Activation{data = x, act_type = 'relu', name = 'relu2'}
  x = S.FullyConnected{data = x, num_hidden = 10, name = 'fc3'}
  return S.SoftmaxOutput{data = x, name = 'softmax'}
end

local function lenet()
  local x = S.Convolution{data = S.Variable('data'), kernel = {5, 5}, num_filter = 4, name = 'conv1'}
  x = S.Activation{data = x, act_type = 'tanh', name = 'tanh1'}
  x = S.Pooling{data = x, pool_type = 'max', kernel = {2, 2}, stride = {2, 2}, name = 'pool1'}
  x = S.Convolution{data = x, kernel = {3, 3}, num_filter = 6, name = 'conv2'}
  x = S.BatchNorm{data = x, name = 'bn2'}
  x = S.Activation{data = x, act_type = 'tanh', name = 'tanh2'}
  x = S.Pooling{data = x, pool_type = 'avg', kernel = {2, 2}, stride = {2, 2}, name = 'pool2'}
  x = S.Flatten{data = x, name = 'flatten'}
  x = S.FullyConnected{data = x, num_hidden = 20, name = 'fc1'}
  x = S.Activation{data = x, act_type = 'tanh', name = 'tanh3'}
  x = S.FullyConnected{data = x, num_hidden = 10, name = 'fc2'}
  return S.SoftmaxOutput{data = x, name = 'softmax'}
end

-- Trains `net` for `steps` on `ctxs` from `params` (arg, aux); returns per-step outputs
-- (copied to the CPU) and the final parameters.
local function train(net, ctxs, batch, params, steps, kv)
  local outs = {}
  local arg, aux, mod = G.train(net, ctxs, batch, params, steps, kv, function(mod, s)
    outs[s] = mod:get_outputs()[1]:copyto(mx.cpu())
  end)
  return outs, arg, aux, mod
end

local function agree(net, batch, steps, tol)
  local p = G.start_params(net, batch, 11)
  local co, ca = train(net, mx.cpu(), batch, p, steps)
  local go, ga = train(net, mx.gpu(0), batch, p, steps)
  for s = 1, steps do
    assert.is_true(max_rel(go[s], co[s]) < tol, ('step %d outputs differ'):format(s))
  end
  for name, w in pairs(ca) do
    assert.is_true(max_rel(ga[name], w) < tol, ('parameter %s differs'):format(name))
  end
end

describe('training on gpu(0) matches the CPU', function()
  it('W1: MLP', function()
    agree(mlp(), batch_of(ramp({8, 20}, 1), ramp({8}, 0, 10)), 4, 1e-3)
  end)

  it('W2: LeNet with BatchNorm and both pooling kinds', function()
    agree(lenet(), batch_of(ramp({4, 1, 16, 16}, 2), ramp({4}, 3, 10)), 3, 1e-3)
  end)

  for _, mode in ipairs {'fused', 'cell'} do
    it('W3: bucketing LSTM language model, ' .. mode, function()
      local V, N = 30, 3
      local function sym_gen(len)
        local embed = S.Embedding{data = S.Variable('data'), input_dim = V, output_dim = 8, name = 'embed'}
        local out
        if mode == 'fused' then
          out = mx.rnn.FusedRNNCell(8, 2, 'lstm', false, 'lstm_'):unroll(len, embed, nil, 'NTC', true)
        else
          local stack = mx.rnn.SequentialRNNCell()
          for i = 0, 1 do stack:add(mx.rnn.LSTMCell(8, ('lstm_l%d_'):format(i))) end
          out = stack:unroll(len, embed, nil, 'NTC', true)
        end
        local pred = S.FullyConnected{data = S.Reshape{data = out, shape = {-1, 8}}, num_hidden = V, name = 'pred'}
        pred = S.SoftmaxOutput{data = pred, label = S.Reshape{data = S.Variable('softmax_label'), shape = {-1}},
                               name = 'softmax'}
        return pred, {'data'}, {'softmax_label'}
      end
      local batches = {}
      for i, len in ipairs {3, 5} do
        batches[i] = mx.io.DataBatch{data = {ramp({N, len}, i, V)}, label = {ramp({N, len}, i + 5, V)},
          bucket_key = len, provide_data = {mx.io.DataDesc('data', {N, len})},
          provide_label = {mx.io.DataDesc('softmax_label', {N, len})}}
      end
      local function module(ctx)
        local mod = mx.mod.BucketingModule{sym_gen = sym_gen, default_bucket_key = 5, context = ctx}
        mod:bind{data_shapes = batches[2].provide_data, label_shapes = batches[2].provide_label}
        return mod
      end
      local start = module(mx.cpu())
      mx.random.seed(5)
      start:init_params{initializer = mx.init.Xavier{magnitude = 2}}
      local p0 = start:get_params()
      local function run(ctx)
        local mod = module(ctx)
        mod:init_params{arg_params = p0, force_init = true}
        mod:init_optimizer{optimizer = 'sgd', optimizer_params = {learning_rate = 0.5, rescale_grad = 1 / N}}
        local outs = {}
        for s = 1, 4 do
          mod:forward_backward(batches[s % 2 + 1])
          mod:update()
          outs[s] = mod:get_outputs()[1]:copyto(mx.cpu())
        end
        return outs, (mod:get_params())
      end
      local cpu_out, cp = run(mx.cpu())
      local gpu_out, gp = run(mx.gpu(0))
      for s = 1, 4 do
        assert.is_true(max_rel(gpu_out[s], cpu_out[s]) < 2e-3, ('step %d outputs differ'):format(s))
      end
      for name, w in pairs(cp) do
        assert.is_true(max_rel(gp[name], w) < 2e-3, ('parameter %s differs'):format(name))
      end
    end)
  end
end)

describe('several GPU contexts', function()
  it("two contexts through the 'device' kvstore match one context on the whole batch", function()
    local net, batch = mlp(), batch_of(ramp({8, 20}, 4), ramp({8}, 1, 10))
    local p = G.start_params(net, batch, 11)
    local two = {mx.gpu(0), mx.gpu(ngpu > 1 and 1 or 0)}
    local _, a2 = train(net, two, batch, p, 3, 'device')
    local _, a1 = train(net, mx.gpu(0), batch, p, 3)
    for name, w in pairs(a1) do
      assert.is_true(max_rel(a2[name], w) < 1e-4, ('parameter %s differs'):format(name))
    end
  end)
end)

describe('the engine on the GPU', function()
  -- after 3 warm-up steps, 10 training steps make no host allocation in the engine
  local function assert_steady(exe)
    local fwd = {is_train = true}
    for _ = 1, 3 do exe:forward(fwd); exe:backward() end
    mx.nd.waitall()
    H.full_gc()
    local a0 = H.total_allocs()
    for _ = 1, 10 do exe:forward(fwd); exe:backward() end
    mx.nd.waitall()
    assert.are.equal(a0, H.total_allocs())
  end

  it('steady training steps allocate nothing in the engine', function()
    local net, batch = mlp(), batch_of(ramp({8, 20}, 1):copyto(mx.gpu(0)), ramp({8}, 0, 10):copyto(mx.gpu(0)))
    local exe = net:simple_bind{ctx = mx.gpu(0), data = {8, 20}, softmax_label = {8}}
    batch.data[1]:copyto(exe.arg_dict.data)
    batch.label[1]:copyto(exe.arg_dict.softmax_label)
    assert_steady(exe)
  end)

  it('steady float16 training steps allocate nothing either (the simulated GEMM too)', function()
    -- float16 FullyConnected runs cuBLAS's GemmEx; the simulator widens to float32 in
    -- per-device scratch that only grows, so after the first steps nothing is allocated
    local x = S.FullyConnected{data = S.Variable('data'), num_hidden = 16, name = 'fc1'}
    x = S.Activation{data = x, act_type = 'relu', name = 'relu1'}
    x = S.FullyConnected{data = x, num_hidden = 4, name = 'fc2'}
    local net = S.MakeLoss{data = S.sum{data = x}}
    local exe = net:simple_bind{ctx = mx.gpu(0), data = {8, 20}, type_dict = {data = 'float16'}}
    for name, a in pairs(exe.arg_dict) do
      assert.are.equal('float16', a.dtype, name)
      a:set(ramp(a.shape, 1):astype('float16'))
    end
    assert_steady(exe)
  end)

  it('group2ctx puts nodes on cpu and gpu in one graph and copies between them', function()
    local x = S.Variable('data')
    local y = S.FullyConnected{data = x, num_hidden = 6, name = 'fc', attr = {ctx_group = 'dev'}}
    y = S.Activation{data = y, act_type = 'tanh', name = 'act'}
    local exe = y:simple_bind{ctx = mx.cpu(), data = {3, 5}, group2ctx = {dev = mx.gpu(0)}}
    local ref = y:simple_bind{ctx = mx.cpu(), data = {3, 5}}
    for name, a in pairs(ref.arg_dict) do
      local v = ramp(a.shape, #name)
      v:copyto(a); v:copyto(exe.arg_dict[name])
    end
    exe:forward{is_train = true}; ref:forward{is_train = true}
    assert.is_true(max_rel(exe.outputs[1], ref.outputs[1]) < 1e-5)
    exe:backward(mx.nd.ones({3, 6})); ref:backward(mx.nd.ones({3, 6}))
    assert.is_true(max_rel(exe.grad_dict.fc_weight, ref.grad_dict.fc_weight) < 1e-5)
  end)

  it('copies parameters across devices and saves checkpoints from GPU arrays', function()
    local net, batch = mlp(), batch_of(ramp({4, 20}, 1), ramp({4}, 0, 10))
    local p = G.start_params(net, batch, 11)
    local _, arg, aux, mod = train(net, mx.gpu(0), batch, p, 2)
    local prefix = os.tmpname()
    mod:save_checkpoint(prefix, 1)
    local _, larg = mx.model.load_checkpoint(prefix, 1)
    for name, w in pairs(arg) do assert.is_true(max_rel(larg[name], w) == 0, name) end
    local cpu = net:simple_bind{ctx = mx.cpu(), data = {4, 20}, softmax_label = {4}}
    local gpu = net:simple_bind{ctx = mx.gpu(0), data = {4, 20}, softmax_label = {4}}
    for name, w in pairs(arg) do w:copyto(gpu.arg_dict[name]) end
    cpu:copy_params_from(gpu.arg_dict, aux)
    for name, w in pairs(arg) do assert.is_true(max_rel(cpu.arg_dict[name], w) == 0, name) end
    os.remove(prefix .. '-symbol.json'); os.remove(prefix .. '-0001.params'); os.remove(prefix)
  end)

  it('reports out-of-memory naming the bytes and the device, and recovers', function()
    local free, total = mx.context.gpu_memory_info(0)
    local want = math.floor(total / 4) + 1024 ^ 3 -- more floats than the device has bytes
    H.raises(function() return mx.nd.empty({want}, {ctx = mx.gpu(0)}) end, 'gpu(0)', 'out of memory')
    local a = mx.nd.ones({1000}, {ctx = mx.gpu(0)})
    assert.are.equal(1000, mx.nd.sum(a):asscalar())
    assert.is_true(free > 0)
  end)
end)
