-- spec/bucketing_module_spec.lua — mx.mod.BucketingModule: switching buckets, sym_gen
-- called once per key, parameters / gradients / optimizer shared between buckets, grad_req
-- 'add' accumulating across buckets, the memory of all buckets against the largest alone,
-- checkpoints, and bad sym_gen results.
local mx = require 'luamx'
local H = require 'helpers'
local nd = mx.nd

mx.logging.set_level('error')

local V, E, N = 8, 4, 2 -- vocabulary, embedding, batch

-- A bucket of length T: embed -> (N*T, E) -> FC V -> softmax; the parameters do not
-- depend on T, so every bucket shares them.
local calls
local function sym_gen(T)
  calls[T] = (calls[T] or 0) + 1
  local embed = mx.sym.Embedding{data = mx.sym.Variable('data'), input_dim = V, output_dim = E, name = 'embed'}
  local pred = mx.sym.FullyConnected{data = mx.sym.Reshape{data = embed, shape = {-1, E}}, num_hidden = V, name = 'pred'}
  local label = mx.sym.Reshape{data = mx.sym.Variable('softmax_label'), shape = {-1}}
  return mx.sym.SoftmaxOutput{data = pred, label = label, name = 'softmax'}, {'data'}, {'softmax_label'}
end

local function batch_of(T, seed)
  local d, l = {}, {}
  for i = 1, N do
    d[i], l[i] = {}, {}
    for t = 1, T do
      d[i][t] = (i * 3 + t * 5 + seed) % V
      l[i][t] = (i + t * 7 + seed) % V
    end
  end
  return mx.io.DataBatch{data = {nd.array(d)}, label = {nd.array(l)}, bucket_key = T,
    provide_data = {mx.io.DataDesc('data', {N, T})}, provide_label = {mx.io.DataDesc('softmax_label', {N, T})}}
end

local function params()
  local w, b = {}, {}
  for i = 1, V do
    w[i] = {}
    for j = 1, E do w[i][j] = ((i * 7 + j * 3) % 11) / 10 - 0.5 end
    b[i] = (i % 3) / 10
  end
  local emb = {}
  for i = 1, V do
    emb[i] = {}
    for j = 1, E do emb[i][j] = ((i * 5 + j) % 7) / 7 - 0.4 end
  end
  return {embed_weight = nd.array(emb), pred_weight = nd.array(w), pred_bias = nd.array(b)}
end

local function bucketing(default_key, grad_req)
  calls = {}
  local mod = mx.mod.BucketingModule{sym_gen = sym_gen, default_bucket_key = default_key, logger = false}
  mod:bind{data_shapes = {{'data', {N, default_key}}}, label_shapes = {{'softmax_label', {N, default_key}}},
           grad_req = grad_req}
  mod:init_params{arg_params = params()}
  return mod
end

local function grads_of(mod)
  local out = {}
  local g = mod._curr_module._exec_group
  for i, name in ipairs(g.param_names) do out[name] = g.grad_arrays[i][1]:toflat() end
  return out
end

describe('mx.mod.BucketingModule', function()
  it('switches buckets on forward and calls sym_gen once per key', function()
    local mod = bucketing(6)
    assert.same({[6] = 1}, calls)
    for _, T in ipairs {3, 6, 3, 5, 5, 3} do
      mod:forward(batch_of(T, 1), false)
      assert.equal(T, mod.bucket_key)
      assert.same({N * T, V}, mod:get_outputs()[1].shape)
      assert.same({N, T}, mod.data_shapes[1].shape)
    end
    assert.same({[6] = 1, [3] = 1, [5] = 1}, calls)
    mod:switch_bucket(4, {{'data', {N, 4}}}, {{'softmax_label', {N, 4}}})
    assert.equal(4, mod.bucket_key)
    assert.same({'softmax_output'}, mod.output_names)
  end)

  it('every bucket computes with the same parameters as a Module on that bucket alone', function()
    local mod = bucketing(6)
    for _, T in ipairs {3, 6} do
      mod:forward(batch_of(T, 2), false)
      local sym = sym_gen(T)
      local single = mx.mod.Module{symbol = sym, logger = false}
      single:bind{data_shapes = {{'data', {N, T}}}, label_shapes = {{'softmax_label', {N, T}}}, for_training = false}
      single:init_params{arg_params = params()}
      single:forward(batch_of(T, 2), false)
      H.near(mod:get_outputs()[1]:toflat(), single:get_outputs()[1]:toflat(), 1e-6)
    end
  end)

  it('shares parameters and optimizer state: an update in one bucket is seen by all', function()
    local mod = bucketing(6)
    mod:init_optimizer{optimizer = 'sgd', optimizer_params = {learning_rate = 0.5, momentum = 0.9}}
    mod:forward_backward(batch_of(3, 3))
    mod:update()
    local after = mod:get_params().pred_bias:toflat()
    assert.is_true(math.abs(after[1] - 0) > 1e-4) -- the bias moved
    mod:forward(batch_of(6, 3), false)
    local w6 = mod._curr_module._exec_group.param_arrays[3][1]:toflat()
    H.near(w6, after, 1e-7)
    assert.equal(mod._buckets[6]._updater, mod._buckets[3]._updater)
    -- a bucket bound after init_optimizer borrows it too
    mod:forward_backward(batch_of(2, 3))
    assert.equal(mod._buckets[6]._updater, mod._buckets[2]._updater)
  end)

  it('grad_req add accumulates gradients across buckets', function()
    local ga, gb = {}, {}
    for _, pair in ipairs {{3, ga}, {5, gb}} do
      local m = bucketing(6)
      m:forward_backward(batch_of(pair[1], 4))
      for k, v in pairs(grads_of(m)) do pair[2][k] = v end
    end
    local mod = bucketing(6, 'add')
    mod:forward_backward(batch_of(3, 4))
    H.near(grads_of(mod).pred_weight, ga.pred_weight, 1e-6)
    mod:forward_backward(batch_of(5, 4))
    local sum = {}
    for i, v in ipairs(ga.pred_weight) do sum[i] = v + gb.pred_weight[i] end
    H.near(grads_of(mod).pred_weight, sum, 1e-5)
    local bsum = {}
    for i, v in ipairs(ga.pred_bias) do bsum[i] = v + gb.pred_bias[i] end
    H.near(grads_of(mod).pred_bias, bsum, 1e-5)
  end)

  it('all buckets bound use at most 1.1x the memory pool of the largest bucket alone', function()
    local function pool_bytes(mod)
      local text = mod._buckets[mod.default_bucket_key]._exec_group.execs[1]:debug_str()
      return tonumber(text:match('pool (%d+) bytes'))
    end
    local alone = bucketing(60)
    alone:forward_backward(batch_of(60, 5))
    local single = pool_bytes(alone)
    assert.is_true(single > 0)
    local mod = bucketing(60)
    for _, T in ipairs {10, 20, 30, 40, 50, 60} do mod:forward_backward(batch_of(T, 5)) end
    assert.equal(6, #mod._bucket_order)
    assert.is_true(pool_bytes(mod) <= 1.1 * single,
      ('pool of all buckets %d bytes, the largest alone %d'):format(pool_bytes(mod), single))
  end)

  it('checkpoints: params, one symbol per bucket, the bucket keys, optimizer state', function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute('mkdir -p ' .. dir))
    local prefix = dir .. '/lm'
    local mod = bucketing(6)
    mod:init_optimizer{optimizer = 'sgd', optimizer_params = {learning_rate = 0.5, momentum = 0.9}}
    for _, T in ipairs {3, 6} do mod:forward_backward(batch_of(T, 6)); mod:update() end
    mod:save_checkpoint(prefix, 2, true)
    for _, f in ipairs {'-0002.params', '-3-symbol.json', '-6-symbol.json', '.buckets', '-0002.states'} do
      local h = io.open(prefix .. f, 'rb')
      assert.truthy(h, prefix .. f)
      h:close()
    end
    assert.same({3, 6}, mx.mod.BucketingModule.load_bucket_keys(prefix))
    local raw = nd.load(prefix .. '.buckets')
    assert.equal('int32', raw[1].dtype)
    -- uninterrupted: one more step on bucket 3
    mod:forward_backward(batch_of(3, 7)); mod:update()
    mod:forward(batch_of(3, 8), false)
    local want = mod:get_outputs()[1]:toflat()
    -- resumed
    local back = mx.mod.BucketingModule.load(prefix, 2, sym_gen, 6, true, {logger = false})
    back:bind{data_shapes = {{'data', {N, 6}}}, label_shapes = {{'softmax_label', {N, 6}}}}
    back:init_optimizer{optimizer = 'sgd', optimizer_params = {learning_rate = 0.5, momentum = 0.9}}
    back:forward_backward(batch_of(3, 7)); back:update()
    back:forward(batch_of(3, 8), false)
    H.near(back:get_outputs()[1]:toflat(), want, 1e-6)
    os.execute('rm -rf ' .. dir)
  end)

  it('fit trains over several buckets and logs per epoch', function()
    local batches = {}
    for k = 1, 8 do batches[k] = batch_of(({3, 5, 6})[k % 3 + 1], k) end
    local it = {provide_data = {mx.io.DataDesc('data', {N, 6})},
                provide_label = {mx.io.DataDesc('softmax_label', {N, 6})}, i = 0}
    function it:next() self.i = self.i + 1 return batches[self.i] end
    function it:reset() self.i = 0 end
    local lines = {}
    calls = {}
    mx.random.seed(11)
    local mod = mx.mod.BucketingModule{sym_gen = sym_gen, default_bucket_key = 6,
                                       logger = function(_, msg) lines[#lines + 1] = msg end}
    mod:fit(it, {eval_metric = mx.metric.Perplexity(), num_epoch = 4, optimizer_params = {learning_rate = 0.2},
                 initializer = mx.init.Xavier()})
    local p0 = tonumber(lines[1]:match('Train%-perplexity=([%d.]+)'))
    local p2 = tonumber(lines[7]:match('Train%-perplexity=([%d.]+)'))
    assert.truthy(p0 and p2, table.concat(lines, '\n'))
    assert.is_true(p2 < p0, table.concat(lines, '\n'))
    assert.same({[6] = 1, [3] = 1, [5] = 1}, calls)
  end)

  it('a monitor installed before a bucket is created also watches that bucket', function()
    local mod = bucketing(6)
    local mon = mx.monitor.Monitor(1, nil, '^pred')
    mod:install_monitor(mon)
    mon:tic()
    mod:forward(batch_of(3, 9), false) -- bucket 3 is created now
    local names = {}
    for _, e in ipairs(mon:toc()) do names[e.name] = true end
    assert.is_true(names.pred_output)
    assert.is_true(names.pred_weight)
    assert.equal(mon, mod._monitor)
  end)

  it('state inputs: set_states and get_states on the current bucket', function()
    local function gen(T)
      local embed = mx.sym.Embedding{data = mx.sym.Variable('data'), input_dim = V, output_dim = E, name = 'embed'}
      local x = mx.sym.broadcast_add(mx.sym.Reshape{data = embed, shape = {-1, E}}, mx.sym.Variable('s', {shape = {1, E}}))
      local pred = mx.sym.FullyConnected{data = x, num_hidden = V, name = 'pred'}
      local label = mx.sym.Reshape{data = mx.sym.Variable('softmax_label'), shape = {-1}}
      return mx.sym.SoftmaxOutput{data = pred, label = label, name = 'softmax'}, {'data'}, {'softmax_label'}
    end
    local mod = mx.mod.BucketingModule{sym_gen = gen, default_bucket_key = 6, state_names = {'s'}, logger = false}
    mod:bind{data_shapes = {{'data', {N, 6}}}, label_shapes = {{'softmax_label', {N, 6}}}}
    mod:init_params{arg_params = params()}
    assert.same({'embed_weight', 'pred_weight', 'pred_bias'}, mod._curr_module._param_names)
    mod:forward(batch_of(3, 1), false)
    local before = mod:get_outputs()[1]:toflat()
    mod:set_states(nil, 0.25)
    assert.same({0.25, 0.25, 0.25, 0.25}, mod:get_states()[1][1]:toflat())
    mod:forward(batch_of(3, 1), false)
    local after = mod:get_outputs()[1]:toflat()
    assert.is_true(math.abs(after[1] - before[1]) > 1e-6)
  end)

  it('rejects a sym_gen that does not return a Symbol, naming the key', function()
    H.raises(function()
      mx.mod.BucketingModule{sym_gen = function() return 'net' end, default_bucket_key = 7}
    end, 'BucketingModule: sym_gen(7) must return a Symbol (then data_names, label_names), got string',
      'bucketing_module_spec.lua')
    local mod = mx.mod.BucketingModule{default_bucket_key = 6, logger = false, sym_gen = function(T)
      if T == 4 then return nil end
      return sym_gen(T)
    end}
    mod:bind{data_shapes = {{'data', {N, 6}}}, label_shapes = {{'softmax_label', {N, 6}}}}
    mod:init_params{arg_params = params()}
    H.raises(function() mod:forward(batch_of(4, 1)) end, 'sym_gen(4) must return a Symbol', 'got nil')
    H.raises(function() mx.mod.BucketingModule{sym_gen = sym_gen} end,
      'mx.mod.BucketingModule: default_bucket_key is required')
    H.raises(function() mx.mod.BucketingModule{sym_gen = 'f', default_bucket_key = 1} end,
      'sym_gen must be a function')
  end)
end)
