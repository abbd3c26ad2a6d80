--- bench/gpu/train.lua — training throughput of one workload on a GPU context (or any
--- context), through mx.mod.Module / BucketingModule exactly as a user trains: forward,
--- backward and the optimizer update per step, synthetic data already on the device.
--- Not a test: it asserts nothing about time.
--
--   luajit bench/gpu/train.lua --workload w1|w2|w3a|w3b|r50|w4 [--dtype float16]
--          [--batch N] [--steps N] [--warmup N] [--ctx gpu|cpu] [--ndev 1] [--image 224]
--
-- Defaults are the GPU-sized batches of issue 10: W1 1024, W2 512, W3 128, ResNet-50 64.
-- Prints RESULT <id> samples_per_s (tokens_per_s for W3), the model's training FLOP per
-- sample, engine allocations per step and, for W4, µs per op on the device's stream.
local dir = debug.getinfo(1, 'S').source:match('^@(.-)[^/\\]*$') or './'
if dir == '' then dir = './' end
local B = dofile(dir .. '../common.lua')
local mx = B.mx
local o = B.args{workload = 'w1', dtype = 'float32', batch = 0, steps = 30, warmup = 5,
                 ctx = 'gpu', ndev = 1, image = 224, classes = 1000, vocab = 10000}

local ctxs = {}
for i = 0, o.ndev - 1 do ctxs[#ctxs + 1] = o.ctx == 'gpu' and mx.gpu(i) or mx.cpu(i) end
local defaults = {w1 = 1024, w2 = 512, w3a = 128, w3b = 128, r50 = 64, w4 = 16}
local batch = o.batch > 0 and o.batch or assert(defaults[o.workload], 'unknown --workload')
-- training FLOP per sample (per token for W3): BENCHMARKS.md's counts; ResNet-50 is
-- 4.09 GMAC forward at 224x224, times 2 FLOP per MAC, times 3 for forward + backward.
local flop = {w1 = 3.21e6, w2 = 13.2e6, w3a = 15.8e6, w3b = 15.8e6,
              r50 = 3 * 2 * 4.09e9 * (o.image / 224) ^ 2}

-- synthetic arrays on the first context (uniform data, integer labels)
local function device_array(shape, fill)
  local a = mx.nd.empty(shape)
  fill(a)
  return a:copyto(ctxs[1])
end

local function run_module(mod, batches, key_of)
  local n = 0
  local function step()
    n = n + 1
    local b = batches[key_of(n)]
    mod:forward_backward(b)
    mod:update()
  end
  local dt, allocs = B.time_steps(step, o.warmup, o.steps)
  return dt, allocs
end

local id = o.workload:upper() .. (o.dtype == 'float16' and '-fp16' or '')
if o.workload == 'w4' then
  -- W4: a chain of 1000 tiny elementwise ops bound once; time per op on the stream
  local x = mx.sym.Variable('data')
  for i = 1, 1000 do
    local k = i % 3
    x = k == 1 and x * 0.9 or k == 2 and x + 0.1 or mx.sym.tanh(x)
  end
  local exe = x:simple_bind{ctx = ctxs[1], data = {batch}, grad_req = 'write'}
  local train = {is_train = true}
  local dt = B.time_steps(function() exe:forward(train) end, o.warmup, o.steps * 10)
  local fb = B.time_steps(function() exe:forward(train); exe:backward(mx.nd.ones({batch}, ctxs[1])) end,
                          o.warmup, o.steps)
  B.result(id, 'us_per_op_fwd', dt / 1000 * 1e6)
  B.result(id, 'us_per_op_fwd_bwd', fb / 2000 * 1e6)
  return
end

local mod, batches, key_of, per = nil, {}, function() return 1 end, batch
local opt = {learning_rate = 0.01, momentum = 0.9, rescale_grad = 1 / batch}
if o.dtype == 'float16' then opt.multi_precision = true end
if o.workload == 'w3a' or o.workload == 'w3b' then
  local V, E, H, N = o.vocab, 200, 200, batch
  local buckets = {10, 20, 30, 40, 50, 60}
  local function sym_gen(len)
    local data, label = mx.sym.Variable('data'), mx.sym.Variable('softmax_label')
    local embed = mx.sym.Embedding{data = data, input_dim = V, output_dim = E, name = 'embed'}
    local outputs
    if o.workload == 'w3a' then
      outputs = mx.rnn.FusedRNNCell(H, 2, 'lstm', false, 'lstm_'):unroll(len, embed, nil, 'NTC', true)
    else
      local stack = mx.rnn.SequentialRNNCell()
      for i = 0, 1 do stack:add(mx.rnn.LSTMCell(H, ('lstm_l%d_'):format(i))) end
      outputs = stack:unroll(len, embed, nil, 'NTC', true)
    end
    local pred = mx.sym.Reshape{data = outputs, shape = {-1, H}}
    pred = mx.sym.FullyConnected{data = pred, num_hidden = V, name = 'pred'}
    pred = mx.sym.SoftmaxOutput{data = pred, label = mx.sym.Reshape{data = label, shape = {-1}},
                                name = 'softmax'}
    return pred, {'data'}, {'softmax_label'}
  end
  for i, len in ipairs(buckets) do
    local d = device_array({N, len}, function(a) B.fill_int(a, V - 1, 100 + i) end)
    local l = device_array({N, len}, function(a) B.fill_int(a, V - 1, 200 + i) end)
    batches[i] = mx.io.DataBatch{data = {d + 1}, label = {l + 1}, bucket_key = len,
      provide_data = {mx.io.DataDesc('data', {N, len})},
      provide_label = {mx.io.DataDesc('softmax_label', {N, len})}}
  end
  mod = mx.mod.BucketingModule{sym_gen = sym_gen, default_bucket_key = 60, context = ctxs}
  mod:bind{data_shapes = batches[6].provide_data, label_shapes = batches[6].provide_label}
  local seq = 0
  key_of = function() seq = seq % 6 + 1; return seq end
  per = N * 35  -- tokens per step: the mean length of the six buckets
else
  local net, shape, nclass
  if o.workload == 'w1' then net, shape, nclass = B.mlp(), {batch, 784}, 10
  elseif o.workload == 'w2' then net, shape, nclass = B.lenet(), {batch, 1, 28, 28}, 10
  elseif o.workload == 'r50' then
    net = dofile(dir .. 'resnet.lua')(mx, {num_classes = o.classes, dtype = o.dtype})
    shape, nclass = {batch, 3, o.image, o.image}, o.classes
  else error('unknown --workload ' .. o.workload, 0) end
  local d = device_array(shape, function(a) B.fill_uniform(a, 0, 1, 12345) end)
  local l = device_array({batch}, function(a) B.fill_int(a, nclass, 777) end)
  batches[1] = mx.io.DataBatch{data = {d}, label = {l},
    provide_data = {mx.io.DataDesc('data', shape)},
    provide_label = {mx.io.DataDesc('softmax_label', {batch})}}
  mod = mx.mod.Module{symbol = net, context = ctxs}
  mod:bind{data_shapes = batches[1].provide_data, label_shapes = batches[1].provide_label}
end
mod:init_params{initializer = mx.init.Xavier{factor_type = 'in', magnitude = 2.34}}
mod:init_optimizer{optimizer = 'sgd', optimizer_params = opt}

local dt, allocs = run_module(mod, batches, key_of)
local unit = (o.workload == 'w3a' or o.workload == 'w3b') and 'tokens_per_s' or 'samples_per_s'
B.result(id, unit, per / dt)
B.result(id, 'train_flop_per_sample', flop[o.workload])
B.result(id, 'tflops', per / dt * flop[o.workload] / 1e12)
B.result(id, 'allocs_per_step', allocs)
