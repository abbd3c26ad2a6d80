-- spec/bucketing_memory_spec.lua — what every bucket of an LSTM language model costs the
-- whole engine (every byte the engine's allocator holds: parameters, gradients, the shared
-- pool, symbols, plans, steps, arrays) against the largest bucket alone; that those bytes
-- come back when the module goes; monitors on executors whose intermediates' arrays are
-- made only when a monitor is installed; and training through BucketingModule giving the
-- very parameters (bit for bit) that a Module of each bucket on its own gives.
local mx = require 'luamx'
local H = require 'helpers'
local nd = mx.nd

mx.logging.set_level('error')

-- W3 of BENCHMARKS.md with LSTMCell (the unrolled graph, whose metadata grows with the
-- length): embedding E, L LSTM layers of E, FC V + SoftmaxOutput at every step.
local function lstm_gen(V, E, L)
  return function(T)
    local embed = mx.sym.Embedding{data = mx.sym.Variable('data'), input_dim = V, output_dim = E, name = 'embed'}
    local stack = mx.rnn.SequentialRNNCell()
    for i = 0, L - 1 do stack:add(mx.rnn.LSTMCell(E, ('lstm_l%d_'):format(i))) end
    stack:reset()
    local outputs = stack:unroll(T, embed, nil, 'NTC', true)
    local pred = mx.sym.FullyConnected{data = mx.sym.Reshape{data = outputs, shape = {-1, E}}, num_hidden = V, name = 'pred'}
    local label = mx.sym.Reshape{data = mx.sym.Variable('softmax_label'), shape = {-1}}
    return mx.sym.SoftmaxOutput{data = pred, label = label, name = 'softmax'}, {'data'}, {'softmax_label'}
  end
end

local function shapes(N, T) return {{'data', {N, T}}}, {{'softmax_label', {N, T}}} end

-- Engine bytes of the default bucket (80, the largest) bound alone with its parameters,
-- then with the seven others (10 .. 70) bound as well.
local function eight_buckets(N, V)
  H.full_gc()
  local b0 = H.live_bytes()
  local mod = mx.mod.BucketingModule{sym_gen = lstm_gen(V, 200, 2), default_bucket_key = 80, logger = false}
  local d, l = shapes(N, 80)
  mod:bind{data_shapes = d, label_shapes = l}
  mod:init_params{initializer = mx.init.Xavier{}}
  H.full_gc()
  local alone = H.live_bytes() - b0
  for T = 10, 70, 10 do mod:switch_bucket(T, shapes(N, T)) end
  assert.equal(8, #mod._bucket_order)
  H.full_gc()
  return alone, H.live_bytes() - b0, b0, mod
end

describe('bucketing memory, whole engine', function()
  -- The target is 1.1x the largest bucket alone. What each bucket keeps is sym_gen's
  -- symbol, its plan's node tables (trimmed to size at bind), its steps and one kernel
  -- argument (tensor) per entry, the steps naming theirs by entry id: about 30 KB per
  -- time step of this model. AMD EPYC Zen 5: 1.084x at batch 4 and 1.060x at batch 64;
  -- before, 1.12x and 1.10x (each bucket also kept the copy of its graph that
  -- common-subexpression elimination makes, 88-byte tensors per step argument and its
  -- plan tables' room to grow), and 1.21x before the executor dropped its bind-time
  -- tables, monitor names and intermediates' views. The bounds are the figures reached.
  it('eight LSTM buckets at batch 4 (vocabulary 10000) cost at most 1.09x the largest alone', function()
    local alone, all = eight_buckets(4, 10000)
    assert.is_true(alone > 0)
    assert.is_true(all <= 1.09 * alone,
      ('all buckets %d bytes, the largest alone %d: %.4fx'):format(all, alone, all / alone))
  end)

  it('eight LSTM buckets at batch 64 (vocabulary 2000) cost at most 1.07x the largest alone', function()
    local alone, all = eight_buckets(64, 2000)
    assert.is_true(all <= 1.07 * alone,
      ('all buckets %d bytes, the largest alone %d: %.4fx'):format(all, alone, all / alone))
  end)

  it('every byte and block comes back when the module goes, after training and a monitor', function()
    local function run()
      local mod = mx.mod.BucketingModule{sym_gen = lstm_gen(20, 8, 2), default_bucket_key = 6, logger = false}
      local d, l = shapes(2, 6)
      mod:bind{data_shapes = d, label_shapes = l}
      mod:init_params{initializer = mx.init.Xavier{}}
      mod:init_optimizer{optimizer = 'sgd', optimizer_params = {learning_rate = 0.1}}
      local mon = mx.monitor.Monitor(1)
      for i, T in ipairs {3, 6, 4, 3} do
        if i == 3 then mod:install_monitor(mon) end -- buckets 3 and 6 already bound, 4 not yet
        local ids = {}
        for k = 1, 2 * T do ids[k] = (k * 7 + i) % 20 end
        local x = nd.array(ids):reshape{2, T}
        mon:tic()
        mod:forward_backward(mx.io.DataBatch{data = {x}, label = {x}, bucket_key = T,
          provide_data = {mx.io.DataDesc('data', {2, T})}, provide_label = {mx.io.DataDesc('softmax_label', {2, T})}})
        mod:update()
        local stats = mon:toc()
        if i >= 3 then assert.is_true(#stats > 100, 'monitored values: ' .. #stats) end
      end
    end
    -- A compiled trace can keep the last Lua objects it saw (a symbol of sym_gen) alive
    -- until it is flushed: flush before counting, so only the engine's own references count.
    local function settle() jit.flush(); H.full_gc() end
    run() -- first use of everything (name counters, kernel tables) out of the count
    settle()
    local blocks0, bytes0 = H.live_blocks(), H.live_bytes()
    run()
    settle()
    assert.equal(blocks0, H.live_blocks())
    assert.equal(bytes0, H.live_bytes())
  end)
end)

describe('executor intermediates made for a monitor', function()
  local gen = lstm_gen(12, 6, 2)
  local function bound(sym, T)
    local exe = sym:simple_bind{ctx = mx.cpu(), grad_req = 'write', data = {2, T}, softmax_label = {2, T}}
    for i, a in ipairs(exe.arg_arrays) do
      local t = {}
      for k = 1, a.size do t[k] = ((k * 7 + i * 3) % 11) / 10 - 0.5 end
      a:set(nd.array(t):reshape(a.shape))
    end
    exe.arg_dict.data:set(nd.array{{1, 5, 7, 2}, {11, 3, 0, 9}})
    exe.arg_dict.softmax_label:set(nd.array{{2, 4, 6, 8}, {10, 1, 3, 5}})
    return exe
  end

  it('a monitor installed after bind sees every internal output, equal to get_internals()', function()
    local sym = gen(4)
    local ref = bound(sym:get_internals(), 4)
    ref:forward(false)
    local want = {}
    for i, name in ipairs(sym:get_internals():list_outputs()) do want[name] = ref.outputs[i]:toflat() end
    local exe = bound(sym, 4)
    local seen = {}
    exe:set_monitor_callback(function(name, arr)
      if want[name] and not seen[name] then seen[name] = arr:toflat() end
    end)
    exe:forward(false)
    local internal = 0 -- the names of the graph that runs (common subexpressions merged)
    for _, name in ipairs(exe:get_optimized_symbol():get_internals():list_outputs()) do
      if want[name] and name:match('_output%d*$') and not name:match('^softmax') then
        internal = internal + 1
        assert.truthy(seen[name], name)
        H.near(seen[name], want[name])
      end
    end
    assert.is_true(internal > 40, 'internal outputs compared: ' .. internal)
  end)
end)

describe('training through BucketingModule', function()
  local V = 12
  local gen = lstm_gen(V, 6, 2)
  local function batch(T, seed)
    local d, l = {}, {}
    for i = 1, 2 do
      d[i], l[i] = {}, {}
      for t = 1, T do d[i][t] = (i * 3 + t * 5 + seed) % V; l[i][t] = (i + t * 7 + seed) % V end
    end
    return mx.io.DataBatch{data = {nd.array(d)}, label = {nd.array(l)}, bucket_key = T,
      provide_data = {mx.io.DataDesc('data', {2, T})}, provide_label = {mx.io.DataDesc('softmax_label', {2, T})}}
  end
  local function init_params()
    local sym = gen(6)
    local exe = sym:simple_bind{ctx = mx.cpu(), grad_req = 'null', data = {2, 6}, softmax_label = {2, 6}}
    local out = {}
    for i, name in ipairs(sym:list_arguments()) do
      if name ~= 'data' and name ~= 'softmax_label' then
        local a = exe.arg_arrays[i]
        local t = {}
        for k = 1, a.size do t[k] = ((k * 7 + i * 5) % 13) / 13 - 0.45 end
        out[name] = nd.array(t):reshape(a.shape)
      end
    end
    return out
  end
  local opt = {optimizer = 'sgd', optimizer_params = {learning_rate = 0.2, rescale_grad = 0.5}}

  it('gives bit for bit the parameters a Module per bucket gives, step after step', function()
    local seq = {6, 3, 5, 6, 3, 4, 5}
    local mod = mx.mod.BucketingModule{sym_gen = gen, default_bucket_key = 6, logger = false}
    mod:bind{data_shapes = {{'data', {2, 6}}}, label_shapes = {{'softmax_label', {2, 6}}}}
    mod:init_params{arg_params = init_params()}
    mod:init_optimizer(opt)
    local params = init_params()
    for i, T in ipairs(seq) do
      mod:forward_backward(batch(T, i)); mod:update()
      local single = mx.mod.Module{symbol = gen(T), logger = false}
      single:bind{data_shapes = {{'data', {2, T}}}, label_shapes = {{'softmax_label', {2, T}}}}
      single:init_params{arg_params = params}
      single:init_optimizer(opt)
      single:forward_backward(batch(T, i)); single:update()
      params = single:get_params()
    end
    local got = mod:get_params()
    local names = 0
    for name, arr in pairs(params) do
      names = names + 1
      H.near(got[name]:toflat(), arr:toflat()) -- no tolerance: equal
    end
    assert.equal(11, names)
  end)
end)
