--- bench/w3_lstm.lua — W3 of BENCHMARKS.md: LSTM language model with bucketing. Vocabulary
--- 10000, embedding 200, 2 LSTM layers of 200, FC 10000 + SoftmaxOutput at every step,
--- batch 32, sequence lengths drawn uniformly from buckets {10,...,60}, trained through
--- mx.mod.BucketingModule (forward_backward + update; SGD lr 0.01 momentum 0.9,
--- rescale 1/batch; Xavier init). Synthetic token ids, fixed seed.
--
--   LUAMX_LIB=build-bench/libluamx.so luajit bench/w3_lstm.lua --mode fused   -- W3a: RNN op
--   LUAMX_LIB=build-bench/libluamx.so luajit bench/w3_lstm.lua --mode cell    -- W3b: LSTMCell unrolled
--
-- Prints RESULT W3a|W3b train_tokens_per_s; M1: the shared memory pool after binding the
-- largest bucket alone and after all six buckets (and their ratio), the same for every
-- byte the engine allocates (parameters, optimizer state, symbols, plans, steps), RSS above the
-- process baseline (after require 'luamx'), engine allocations per step.
local dir = debug.getinfo(1, 'S').source:match('^@(.-)[^/\\]*$') or './'
local B = dofile((dir == '' and './' or dir) .. 'common.lua')
local mx = B.mx
local o = B.args{steps = 30, warmup = 8, batch = 32, mode = 'fused', vocab = 10000, embed = 200,
                 hidden = 200, layers = 2}
local id = o.mode == 'fused' and 'W3a' or 'W3b'
local V, E, H, L, N = o.vocab, o.embed, o.hidden, o.layers, o.batch
local buckets = {10, 20, 30, 40, 50, 60}

local function sym_gen(len)
  local data = mx.sym.Variable('data')
  local label = mx.sym.Variable('softmax_label')
  local embed = mx.sym.Embedding{data = data, input_dim = V, output_dim = E, name = 'embed'}
  local outputs
  if o.mode == 'fused' then
    local cell = mx.rnn.FusedRNNCell(H, L, 'lstm', false, 'lstm_')
    outputs = cell:unroll(len, embed, nil, 'NTC', true)
  else
    local stack = mx.rnn.SequentialRNNCell()
    for i = 0, L - 1 do stack:add(mx.rnn.LSTMCell(H, ('lstm_l%d_'):format(i))) end
    stack:reset()
    outputs = stack:unroll(len, embed, nil, 'NTC', true)
  end
  local pred = mx.sym.Reshape{data = outputs, shape = {-1, H}}
  pred = mx.sym.FullyConnected{data = pred, num_hidden = V, name = 'pred'}
  label = mx.sym.Reshape{data = label, shape = {-1}}
  pred = mx.sym.SoftmaxOutput{data = pred, label = label, name = 'softmax'}
  return pred, {'data'}, {'softmax_label'}
end

-- one synthetic batch per bucket (ids 1..V-1), built once
local batches = {}
for i, len in ipairs(buckets) do
  local d, l = mx.nd.empty({N, len}), mx.nd.empty({N, len})
  B.fill_int(d, V - 1, 100 + i); B.fill_int(l, V - 1, 200 + i)
  batches[len] = mx.io.DataBatch{data = {d + 1}, label = {l + 1}, bucket_key = len,
    provide_data = {mx.io.DataDesc('data', {N, len})},
    provide_label = {mx.io.DataDesc('softmax_label', {N, len})}}
end

local mod = mx.mod.BucketingModule{sym_gen = sym_gen, default_bucket_key = 60, context = mx.cpu()}
mod:bind{data_shapes = batches[60].provide_data, label_shapes = batches[60].provide_label}
mod:init_params{initializer = mx.init.Xavier{factor_type = 'in', magnitude = 2.34}}
mod:init_optimizer{optimizer = 'sgd',
                   optimizer_params = {learning_rate = 0.01, momentum = 0.9, rescale_grad = 1 / N}}
local function pool_bytes()
  local exe = mod._buckets[60]._exec_group.execs[1]
  local _, _, pool = exe:memory()
  return pool
end
-- the largest bucket alone, trained a step so everything it needs exists
mod:forward_backward(batches[60]); mod:update()
local pool_one, rss_one = pool_bytes(), B.rss()
local function engine_bytes() -- every byte the engine's allocator holds
  collectgarbage(); collectgarbage()
  local _, _, bytes = B.allocs()
  return bytes
end
local engine_one = engine_bytes()
-- bucket sequence: uniform draws from an LCG (the torch script draws the same keys)
local x, seq = 4242, {}
for i = 1, o.warmup + o.steps do
  x = (1103515245 * x + 12345) % 2147483648
  seq[i] = buckets[math.floor(x / 2147483648 * #buckets) + 1]
end
-- warm-up binds every bucket
for _, len in ipairs(buckets) do
  mod:forward_backward(batches[len]); mod:update()
  B.info('after bucket %d: RSS %.0f MB, pool %.1f MB', len, B.rss(), pool_bytes() / 2^20)
end
for i = 1, o.warmup do mod:forward_backward(batches[seq[i]]); mod:update() end
mx.nd.waitall()
collectgarbage(); collectgarbage()
local a0 = B.allocs()
local t0, tokens = B.now(), 0
for i = o.warmup + 1, o.warmup + o.steps do
  local b = batches[seq[i]]
  mod:forward_backward(b); mod:update()
  tokens = tokens + N * b.bucket_key
end
mx.nd.waitall()
local dt = B.now() - t0
local allocs = (B.allocs() - a0) / o.steps
B.result(id, 'train_tokens_per_s', tokens / dt)
B.result(id, 'allocs_per_step', allocs)
local pool_all = pool_bytes()
local engine_all = engine_bytes()
local rss, hwm = B.rss()
B.result('M1', id .. '_pool_largest_bytes', pool_one)
B.result('M1', id .. '_pool_all_bytes', pool_all)
B.result('M1', id .. '_all_over_largest', pool_all / pool_one)
B.result('M1', id .. '_engine_largest_bytes', engine_one)
B.result('M1', id .. '_engine_all_bytes', engine_all)
B.result('M1', id .. '_engine_all_over_largest', engine_all / engine_one)
B.result(id, 'rss_largest_mb', rss_one)
B.result(id, 'rss_mb', rss)
B.result(id, 'hwm_mb', hwm)
B.result(id, 'base_rss_mb', B.base_rss)
B.result(id, 'rss_above_base_mb', hwm - B.base_rss)
