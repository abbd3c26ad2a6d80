--- bench/w4_dispatch.lua — W4 of BENCHMARKS.md: dispatch overhead. A chain of 1000 tiny
--- elementwise ops (x*0.9, x+0.1, tanh(x), repeated) on 16 floats, bound once.
--
--   LUAMX_LIB=build-bench/libluamx.so luajit bench/w4_dispatch.lua [--steps 2000]
--
-- Prints RESULT W4 us_per_op_fwd (forward, is_train = true, gradient bound for the input),
-- us_per_op_fwd_bwd (forward + backward with a head gradient of ones), us_per_op_nograd
-- (an executor bound with grad_req 'null', forward is_train = false).
local dir = debug.getinfo(1, 'S').source:match('^@(.-)[^/\\]*$') or './'
local B = dofile((dir == '' and './' or dir) .. 'common.lua')
local mx = B.mx
local o = B.args{steps = 2000, warmup = 50, ops = 1000, n = 16}

local x = mx.sym.Variable('data')
for i = 1, o.ops do
  local k = i % 3
  if k == 1 then x = x * 0.9
  elseif k == 2 then x = x + 0.1
  else x = mx.sym.tanh(x) end
end
local exe = x:simple_bind{ctx = mx.cpu(), data = {o.n}, grad_req = 'write'}
B.fill_uniform(exe.arg_dict.data, -1, 1, 5)
local nog = x:simple_bind{ctx = mx.cpu(), data = {o.n}, grad_req = 'null'}
B.fill_uniform(nog.arg_dict.data, -1, 1, 5)
local head = mx.nd.ones({o.n})
local train, infer = {is_train = true}, {is_train = false}

local fwd = B.time_steps(function() exe:forward(train) end, o.warmup, o.steps)
local fb, allocs = B.time_steps(function() exe:forward(train); exe:backward(head) end, o.warmup, o.steps)
local ng = B.time_steps(function() nog:forward(infer) end, o.warmup, o.steps)
-- sanity: the executor really ran the chain (element 1 recomputed in Lua)
local v = exe.arg_dict.data:totable()[1]
for i = 1, o.ops do
  local k = i % 3
  if k == 1 then v = v * 0.9 elseif k == 2 then v = v + 0.1 else v = math.tanh(v) end
end
exe:forward(train)
B.info('W4 check: chain value %.6f, executor %.6f', v, exe.outputs[1]:totable()[1])
B.result('W4', 'us_per_op_fwd', fwd / o.ops * 1e6)
B.result('W4', 'us_per_op_fwd_bwd', fb / o.ops * 1e6)
B.result('W4', 'us_per_op_nograd', ng / o.ops * 1e6)
B.result('W4', 'allocs_per_step', allocs)
