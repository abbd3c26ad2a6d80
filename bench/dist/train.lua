--- bench/dist/train.lua — W1 (MLP, batch 128 per worker) and W3a (LSTM LM with bucketing,
--- batch 32 per worker) trained through Module / BucketingModule with kvstore = dist_sync
--- under mpirun, or 'local' as one plain process. Synthetic data, fixed seeds; every worker
--- runs the same bucket sequence. Rank 0 prints
---   RESULT <W1|W3a> <workers> <global samples (tokens) per second> <update share of a step>
--- (the update share includes the all-reduce and the wait for the slower worker)
--- Usage: [mpirun -np 2] luajit bench/dist/train.lua W1|W3a [steps]
local dir = debug.getinfo(1, 'S').source:match('^@(.-)[^/\\]*$') or './'
local B = dofile((dir == '' and './' or dir) .. '../common.lua')
local mx = B.mx
local which, steps = arg[1] or 'W1', tonumber(arg[2]) or (arg[1] == 'W3a' and 12 or 60)

local probe = mx.kv.create('dist_sync')
local rank, workers = probe.rank, probe.num_workers
probe:free()
local kvtype = workers > 1 and 'dist_sync' or 'local'
mx.logging.set_level('error')

local mod, batches, seq, per_step
if which == 'W1' then
  local N = 128
  local d, l = mx.nd.empty{N, 784}, mx.nd.empty{N}
  B.fill_uniform(d, 0, 1, 12345 + rank); B.fill_int(l, 10, 777 + rank)
  local batch = mx.io.DataBatch{data = {d}, label = {l}}
  mod = mx.mod.Module{symbol = B.mlp(), logger = false}
  mod:bind{data_shapes = {{'data', {N, 784}}}, label_shapes = {{'softmax_label', {N}}}}
  batches, seq, per_step = {batch}, {}, function() return N end
  for i = 1, 1000 do seq[i] = 1 end
else
  local V, E, H, N = 10000, 200, 200, 32
  local buckets = {10, 20, 30, 40, 50, 60}
  local function sym_gen(len)
    local embed = mx.sym.Embedding{data = mx.sym.Variable('data'), input_dim = V, output_dim = E, name = 'embed'}
    local cell = mx.rnn.FusedRNNCell(H, 2, 'lstm', false, 'lstm_')
    local outputs = cell:unroll(len, embed, nil, 'NTC', true)
    local pred = mx.sym.FullyConnected{data = mx.sym.Reshape{data = outputs, shape = {-1, H}}, num_hidden = V, name = 'pred'}
    local label = mx.sym.Reshape{data = mx.sym.Variable('softmax_label'), shape = {-1}}
    return mx.sym.SoftmaxOutput{data = pred, label = label, name = 'softmax'}, {'data'}, {'softmax_label'}
  end
  batches = {}
  for i, len in ipairs(buckets) do
    local d, l = mx.nd.empty({N, len}), mx.nd.empty({N, len})
    B.fill_int(d, V - 1, 100 + i + 10 * rank); B.fill_int(l, V - 1, 200 + i + 10 * rank)
    batches[i] = mx.io.DataBatch{data = {d + 1}, label = {l + 1}, bucket_key = len,
      provide_data = {mx.io.DataDesc('data', {N, len})}, provide_label = {mx.io.DataDesc('softmax_label', {N, len})}}
  end
  mod = mx.mod.BucketingModule{sym_gen = sym_gen, default_bucket_key = 60, logger = false}
  mod:bind{data_shapes = batches[6].provide_data, label_shapes = batches[6].provide_label}
  local x = 4242
  seq = {}
  for i = 1, 1000 do
    x = (1103515245 * x + 12345) % 2147483648
    seq[i] = math.floor(x / 2147483648 * #buckets) + 1
  end
  for i = 1, 6 do seq[i] = i end -- warm-up binds every bucket
  per_step = function(b) return N * b.bucket_key end
end
mx.random.seed(1)
mod:init_params{initializer = mx.init.Xavier()}
mod:init_optimizer{kvstore = kvtype, optimizer = 'sgd',
                   optimizer_params = {learning_rate = 0.01, momentum = 0.9}}
local warm = which == 'W1' and 10 or 8
for i = 1, warm do mod:forward_backward(batches[seq[i]]); mod:update() end
mx.nd.waitall()
local kv = mod._kvstore or (mod._curr_module and mod._curr_module._kvstore)
if kv then kv:barrier() end
local t0, done, tu = B.now(), 0, 0
for i = warm + 1, warm + steps do
  local b = batches[seq[i]]
  mod:forward_backward(b)
  local t1 = B.now()
  mod:update()
  tu = tu + B.now() - t1
  done = done + per_step(b)
end
mx.nd.waitall()
if kv then kv:barrier() end
local dt = B.now() - t0
if rank == 0 then
  local m = mod._curr_module or mod
  print(('RESULT %s %d %.1f %.3f %s'):format(which, workers, done * workers / dt, tu / dt,
                                             m._overlap and 'on' or 'off'))
end
