--- bench/autograd.lua — eager training and dispatch with mx.autograd (issue 15's speed
--- goals), next to luamx's symbolic W1 and PyTorch eager. A benchmark, not a test.
--
--   LUAMX_LIB=build-bench/libluamx.so luajit bench/autograd.lua [--steps 100] [--torch]
--
-- W1 eager: the MLP 784-512-512-10 of bench/w1_mlp.lua, batch 128, SGD lr 0.1 momentum
-- 0.9, written with mx.gluon (nn.Dense x3, Trainer) and trained under
-- mx.autograd.record; W1 symbolic: bench/w1_mlp.lua's executor in the same process.
-- W4 eager: bench/w4_dispatch.lua's chain (x*0.9, x+0.1, tanh(x), 1000 ops on 16
-- floats) as mx.nd calls: not recording, recording, recording + backward.
-- --torch also runs bench/torch/w1_mlp.py and bench/torch/w4_dispatch.py with
-- /usr/bin/python3 (python3-torch) and prints their RESULT lines.
-- Prints RESULT lines: W1eager train_samples_per_s, W1sym train_samples_per_s,
-- W4eager us_per_op_plain / us_per_op_record / us_per_op_record_bwd.
local dir = debug.getinfo(1, 'S').source:match('^@(.-)[^/\\]*$') or './'
local B = dofile((dir == '' and './' or dir) .. 'common.lua')
local mx = B.mx
local o = B.args{steps = 100, warmup = 5, batch = 128, ops = 1000, n = 16, chain_steps = 200,
  torch = false}

-- W1, eager
local nn = mx.gluon.nn
local net = nn.Sequential():add(nn.Dense(512, {activation = 'relu', in_units = 784}),
  nn.Dense(512, {activation = 'relu', in_units = 512}), nn.Dense(10, {in_units = 512}))
net:initialize(mx.init.Xavier())
local trainer = mx.gluon.Trainer(net:collect_params(), 'sgd', {learning_rate = 0.1, momentum = 0.9})
local x, y = mx.nd.zeros{o.batch, 784}, mx.nd.zeros{o.batch}
B.fill_uniform(x, 0, 1, 3)
B.fill_int(y, 10, 4)
local function eager_step()
  local out = mx.autograd.record(function() return mx.nd.SoftmaxOutput(net(x), y) end)
  out:backward()
  trainer:step(o.batch)
end
local dt = B.time_steps(eager_step, o.warmup, o.steps)
B.result('W1eager', 'train_samples_per_s', o.batch / dt)

-- W1, symbolic (the executor of bench/w1_mlp.lua)
local _, step = B.train_exe(B.mlp(), {o.batch, 784}, 10, 0.1, 0.9)
local dts = B.time_steps(step, o.warmup, o.steps)
B.result('W1sym', 'train_samples_per_s', o.batch / dts)

-- W4's chain, eager
local x0 = mx.nd.zeros{o.n}
B.fill_uniform(x0, -1, 1, 5)
x0:attach_grad()
local function chain(v)
  for i = 1, o.ops do
    local k = i % 3
    if k == 1 then v = v * 0.9 elseif k == 2 then v = v + 0.1 else v = mx.nd.tanh(v) end
  end
  return v
end
local plain = B.time_steps(function() chain(x0) end, 5, o.chain_steps)
local rec = B.time_steps(function() mx.autograd.record(function() return chain(x0) end) end, 5, o.chain_steps)
local head = mx.nd.ones{o.n}
local recb = B.time_steps(function()
  mx.autograd.record(function() return chain(x0) end):backward(head)
end, 5, o.chain_steps)
B.result('W4eager', 'us_per_op_plain', plain / o.ops * 1e6)
B.result('W4eager', 'us_per_op_record', rec / o.ops * 1e6)
B.result('W4eager', 'us_per_op_record_bwd', recb / o.ops * 1e6)

if o.torch then
  for s, steps in pairs({['w1_mlp.py'] = o.steps, ['w4_dispatch.py'] = o.chain_steps}) do
    local p = assert(io.popen(('/usr/bin/python3 %storch/%s --steps %d 2>&1'):format(dir, s, steps)))
    for line in p:lines() do
      if line:match('^RESULT') then print((line:gsub('^RESULT (%S+)', 'RESULT torch_%1'))) end
    end
    p:close()
  end
end
