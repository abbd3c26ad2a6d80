--- bench/soak.lua — a long run that shows whether memory stays flat (a benchmark, not a
--- test: it prints, it asserts nothing).
--
-- Trains W1 (BENCHMARKS.md: MLP 784-512-512-10, batch 128, SGD lr 0.1 momentum 0.9) and
-- W3a (the bucketing LSTM LM of bench/w3_lstm.lua: vocabulary 10000, embedding 200,
-- 2x200 fused LSTM, batch 32, buckets 10..60) through the user-level API a long training
-- job uses: mx.mod.Module / BucketingModule, forward_backward, update, update_metric, an
-- NDArrayIter (W1; reset every epoch) or a bucket sequence (W3), for --steps steps each.
-- Every --every steps (after a full garbage collection, so Lua's GC timing does not show
-- up as growth) it samples VmRSS and the engine allocator's live blocks and bytes
-- (lmx_debug_alloc_stats), prints the curve, and at the end says whether each stayed
-- flat after the first epoch: growth from the first sample at or after the end of epoch
-- 1 to the last sample within --rss_tol MB (RSS) and --live_tol live blocks.
--
--   nice luajit bench/soak.lua                       -- 100,000 steps each (hours)
--   nice luajit bench/soak.lua --steps 5000 --every 500 --only w1
--
-- Prints `RESULT SOAK_<W> <metric> <value>` lines (rss_first_epoch_mb, rss_last_mb,
-- rss_growth_mb, live_blocks_first_epoch, live_blocks_last, live_growth_blocks,
-- live_bytes_growth, flat (1/0), steps, steps_per_epoch, seconds).
local dir = debug.getinfo(1, 'S').source:match('^@(.-)[^/\\]*$') or './'
local B = dofile((dir == '' and './' or dir) .. 'common.lua')
local mx = B.mx
local o = B.args{steps = 100000, every = 1000, only = 'both', rss_tol = 4, live_tol = 16,
                 w1_samples = 6400, w3_epoch = 60, vocab = 10000}

local function live()
  collectgarbage(); collectgarbage()
  local _, blocks, bytes = B.allocs()
  return blocks, bytes
end

-- Runs `step` o.steps times, sampling every o.every steps; epoch = steps per epoch.
local function soak(id, step, epoch)
  local samples = {}
  local t0 = B.now()
  local function sample(n)
    local blocks, bytes = live()
    local rss = B.rss()
    samples[#samples + 1] = {n = n, rss = rss, blocks = blocks, bytes = bytes}
    B.info('%s step %7d  epoch %6.2f  RSS %8.1f MB  live blocks %8d  live bytes %12d  %.0f s',
      id, n, n / epoch, rss, blocks, bytes, B.now() - t0)
  end
  sample(0)
  for n = 1, o.steps do
    step(n)
    if n % o.every == 0 or n == o.steps then sample(n) end
  end
  local dt = B.now() - t0
  local first
  for _, s in ipairs(samples) do
    if s.n >= epoch then first = s break end
  end
  local last = samples[#samples]
  first = first or last
  local rss_growth, live_growth = last.rss - first.rss, last.blocks - first.blocks
  local flat = rss_growth <= o.rss_tol and live_growth <= o.live_tol
  B.info('%s: after epoch 1 (step %d) to step %d: RSS %+.1f MB, live blocks %+d, live bytes %+d: %s',
    id, first.n, last.n, rss_growth, live_growth, last.bytes - first.bytes,
    flat and 'flat' or 'GROWING')
  B.result(id, 'steps', o.steps)
  B.result(id, 'steps_per_epoch', epoch)
  B.result(id, 'seconds', dt)
  B.result(id, 'rss_first_epoch_mb', first.rss)
  B.result(id, 'rss_last_mb', last.rss)
  B.result(id, 'rss_growth_mb', rss_growth)
  B.result(id, 'live_blocks_first_epoch', first.blocks)
  B.result(id, 'live_blocks_last', last.blocks)
  B.result(id, 'live_growth_blocks', live_growth)
  B.result(id, 'live_bytes_growth', last.bytes - first.bytes)
  B.result(id, 'flat', flat and 1 or 0)
end

local function w1()
  local N = 128
  local x, y = mx.nd.empty({o.w1_samples, 784}), mx.nd.empty({o.w1_samples})
  B.fill_uniform(x, 0, 1, 12345)
  B.fill_int(y, 10, 777)
  local it = mx.io.NDArrayIter{data = x, label = y, batch_size = N, last_batch_handle = 'discard'}
  local mod = mx.mod.Module{symbol = B.mlp(), logger = false}
  mod:bind{data_shapes = it.provide_data, label_shapes = it.provide_label}
  mod:init_params{initializer = mx.init.Xavier()}
  mod:init_optimizer{optimizer = 'sgd', optimizer_params = {learning_rate = 0.1, momentum = 0.9}}
  local metric = mx.metric.create('acc')
  local epoch = math.floor(o.w1_samples / N)
  soak('SOAK_W1', function()
    local batch = it:next()
    if not batch then
      it:reset()
      metric:reset()
      batch = it:next()
    end
    mod:forward_backward(batch)
    mod:update()
    mod:update_metric(metric, batch.label)
  end, epoch)
end

local function w3()
  local V, E, H, N = o.vocab, 200, 200, 32
  local buckets = {10, 20, 30, 40, 50, 60}
  local function sym_gen(len)
    local embed = mx.sym.Embedding{data = mx.sym.Variable('data'), input_dim = V, output_dim = E, name = 'embed'}
    local outputs = mx.rnn.FusedRNNCell(H, 2, 'lstm', false, 'lstm_'):unroll(len, embed, nil, 'NTC', true)
    local pred = mx.sym.FullyConnected{data = mx.sym.Reshape{data = outputs, shape = {-1, H}}, num_hidden = V, name = 'pred'}
    local label = mx.sym.Reshape{data = mx.sym.Variable('softmax_label'), shape = {-1}}
    return mx.sym.SoftmaxOutput{data = pred, label = label, name = 'softmax'}, {'data'}, {'softmax_label'}
  end
  local batches = {}
  for i, len in ipairs(buckets) do
    local d, l = mx.nd.empty({N, len}), mx.nd.empty({N, len})
    B.fill_int(d, V - 1, 100 + i); B.fill_int(l, V - 1, 200 + i)
    batches[len] = mx.io.DataBatch{data = {d + 1}, label = {l + 1}, bucket_key = len,
      provide_data = {mx.io.DataDesc('data', {N, len})}, provide_label = {mx.io.DataDesc('softmax_label', {N, len})}}
  end
  local mod = mx.mod.BucketingModule{sym_gen = sym_gen, default_bucket_key = 60, logger = false}
  mod:bind{data_shapes = batches[60].provide_data, label_shapes = batches[60].provide_label}
  mod:init_params{initializer = mx.init.Xavier{factor_type = 'in', magnitude = 2.34}}
  mod:init_optimizer{optimizer = 'sgd', optimizer_params = {learning_rate = 0.01, momentum = 0.9, rescale_grad = 1 / N}}
  local metric = mx.metric.Perplexity(0)
  local x = 4242
  soak('SOAK_W3', function(n)
    x = (1103515245 * x + 12345) % 2147483648
    local b = batches[buckets[math.floor(x / 2147483648 * #buckets) + 1]]
    if n % o.w3_epoch == 1 then metric:reset() end
    mod:forward_backward(b)
    mod:update()
    mod:update_metric(metric, b.label)
  end, o.w3_epoch)
end

B.info('soak: %d steps per workload, a sample every %d steps', o.steps, o.every)
if o.only == 'both' or o.only == 'w1' then w1() end
if o.only == 'both' or o.only == 'w3' then w3() end
