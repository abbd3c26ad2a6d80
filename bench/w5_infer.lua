--- bench/w5_infer.lua — W5 of BENCHMARKS.md: inference of W1's MLP and W2's LeNet at
--- batch 1 and batch 128 (forward is_train = false on an executor bound once with
--- grad_req 'null'; the output is SoftmaxOutput's probabilities).
--
--   LUAMX_LIB=build-bench/libluamx.so luajit bench/w5_infer.lua [--seconds 1] [--fc_blas]
--
-- Prints RESULT W5 mlp_b1_samples_per_s, mlp_b128_samples_per_s, lenet_b1_samples_per_s,
-- lenet_b128_samples_per_s (and mlp_b1_us, lenet_b1_us: latency of one forward).
local dir = debug.getinfo(1, 'S').source:match('^@(.-)[^/\\]*$') or './'
local B = dofile((dir == '' and './' or dir) .. 'common.lua')
local mx = B.mx
-- --only mlp_b1 runs one case (for profiling); --fc_blas runs FullyConnected on the
-- sgemm at batch 1 too (mx.runtime.fc_force_blas), the path before gemv.c, to compare
local o = B.args{seconds = 1.0, only = '', fc_blas = false}
if o.fc_blas then mx.runtime.fc_force_blas(true) end

local function bench(name, net, shape)
  local batch = shape[1]
  if o.only ~= '' and o.only ~= ('%s_b%d'):format(name, batch) then return end
  local exe = net:simple_bind{ctx = mx.cpu(), data = shape, softmax_label = {batch}, grad_req = 'null'}
  B.init_params(exe, {data = true, softmax_label = true})
  B.fill_uniform(exe.arg_dict.data, 0, 1, 99)
  local f = {is_train = false}
  local function fwd() exe:forward(f) end
  -- calibrate the step count to about o.seconds
  local one = B.time_steps(fwd, 3, 5)
  local steps = math.max(10, math.floor(o.seconds / one))
  local dt = B.time_steps(fwd, 5, steps)
  B.result('W5', ('%s_b%d_samples_per_s'):format(name, batch), batch / dt)
  if batch == 1 then B.result('W5', ('%s_b1_us'):format(name), dt * 1e6) end
end
bench('mlp', B.mlp(), {1, 784})
bench('mlp', B.mlp(), {128, 784})
bench('lenet', B.lenet(), {1, 1, 28, 28})
bench('lenet', B.lenet(), {128, 1, 28, 28})
