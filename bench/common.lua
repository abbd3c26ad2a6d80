--- bench/common.lua — shared helpers for the luamx benchmark scripts (not a test; no
--- assertions). Loaded by bench/w*.lua through `dofile(<this dir>/common.lua)`, so the
--- scripts run from any working directory; the repository root is found relative to
--- this file.
--
--   local B = dofile(dir .. 'common.lua')
--   local mx = B.mx
--   local opts = B.args{steps = 50, warmup = 5}     -- --steps 100 --warmup 3 on the command line
--   local t0 = B.now(); ...; B.result('W1', 'train_samples_per_s', v)
--
-- RESULT lines are `RESULT <id> <metric> <value>`; bench/run.sh greps them.
local ffi = require 'ffi'

local here = debug.getinfo(1, 'S').source:match('^@(.-)[^/\\]*$') or './'
if here == '' then here = './' end
local root = here .. '..'
package.path = root .. '/lua/?.lua;' .. root .. '/lua/?/init.lua;' .. package.path

local B = {}
B.root = root

ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } lmxb_timespec;
int clock_gettime(int clk, lmxb_timespec *ts);
]]
local ts = ffi.new('lmxb_timespec')
-- LUAMX_BENCH_CLOCK=cpu: the process's CPU time (CLOCK_PROCESS_CPUTIME_ID) instead of the
-- monotonic clock, for comparing variants on a machine other jobs load (with
-- OMP_NUM_THREADS=1, so that CPU time is the single thread's work)
local clock_id = os.getenv('LUAMX_BENCH_CLOCK') == 'cpu' and 2 or 1
--- seconds, monotonic clock (or CPU time, see LUAMX_BENCH_CLOCK)
function B.now()
  ffi.C.clock_gettime(clock_id, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

--- VmRSS, VmHWM of this process in MB (from /proc/self/status).
function B.rss()
  local f = io.open('/proc/self/status', 'r')
  if not f then return 0, 0 end
  local s = f:read('*a'); f:close()
  local rss = tonumber(s:match('VmRSS:%s*(%d+)')) or 0
  local hwm = tonumber(s:match('VmHWM:%s*(%d+)')) or 0
  return rss / 1024, hwm / 1024
end

local base_rss = B.rss()  -- before luamx is loaded
B.mx = require 'luamx'
B.mx.logging.set_level('warning')
io.stdout:setvbuf('line')

--- RSS right after `require 'luamx'` (the process baseline M1 compares against).
B.base_rss = B.rss()
B.pre_rss = base_rss

--- command-line options: --name value (numbers stay numbers), --flag for booleans
function B.args(defaults)
  local o = {}
  for k, v in pairs(defaults) do o[k] = v end
  local i = 1
  while arg and arg[i] do
    local k = arg[i]:match('^%-%-([%w_-]+)$')
    if not k or o[k] == nil then error('unknown option ' .. tostring(arg[i]), 0) end
    if type(o[k]) == 'boolean' then o[k] = true; i = i + 1
    else
      local v = arg[i + 1]
      o[k] = type(o[k]) == 'number' and assert(tonumber(v), '--' .. k .. ' needs a number') or v
      i = i + 2
    end
  end
  return o
end

function B.result(id, metric, value)
  print(('RESULT %s %s %.6g'):format(id, metric, value))
end

function B.info(fmt, ...)
  io.stderr:write(('# ' .. fmt .. '\n'):format(...))
end

--- engine heap allocation counter (lmx_debug_alloc_stats total_allocs)
local C = require('luamx.capi').C
local a1, a2, a3 = ffi.new('int64_t[1]'), ffi.new('int64_t[1]'), ffi.new('int64_t[1]')
function B.allocs()
  C.lmx_debug_alloc_stats(a1, a2, a3)
  return tonumber(a3[0]), tonumber(a1[0]), tonumber(a2[0])
end

--- uniform fill of an NDArray in place through its data pointer (fast, deterministic:
--- a 32-bit LCG seeded per call, so torch's scripts can use the same generator).
function B.fill_uniform(a, lo, hi, seed)
  local p = ffi.cast('float *', a:data())
  local x = seed or 1
  for i = 0, a.size - 1 do
    x = (1103515245 * x + 12345) % 2147483648
    p[i] = lo + (hi - lo) * (x / 2147483648)
  end
end

--- integer labels 0..n-1 (stored as float) in place
function B.fill_int(a, n, seed)
  local p = ffi.cast('float *', a:data())
  local x = seed or 1
  for i = 0, a.size - 1 do
    x = (1103515245 * x + 12345) % 2147483648
    p[i] = math.floor(x / 2147483648 * n)
  end
end

--- initialise every parameter of an executor: weights uniform(+-sqrt(6/(fan_in+fan_out)))
--- (Xavier), biases 0. `skip` names the inputs (data, labels).
function B.init_params(exe, skip)
  local seed = 7
  for name, a in pairs(exe.arg_dict) do
    if not skip[name] then
      if name:match('_bias$') then a:fill(0)
      else
        local sh = a.shape
        local fan_out, fan_in = sh[1], a.size / sh[1]
        local s = math.sqrt(6 / (fan_in + fan_out))
        seed = seed + 1
        B.fill_uniform(a, -s, s, seed)
      end
    end
  end
end

--- Pre-built fused SGD-momentum updates for every argument with a gradient. Returns a
--- function that runs one update over all of them, plus the parameter names.
--- Convention: mx.nd.sgd_mom_update{weight=, grad=, mom=, out=weight, lr=, momentum=,
--- wd=, rescale_grad=} (MXNet's), as lua/luamx/optimizer.lua calls it.
function B.sgd_updater(exe, lr, momentum, rescale, skip)
  local mx = B.mx
  local jobs, names = {}, {}
  for name, g in pairs(exe.grad_dict) do
    if g and not skip[name] then
      local w = exe.arg_dict[name]
      local m = mx.nd.zeros(w.shape)
      jobs[#jobs + 1] = {weight = w, grad = g, mom = m, out = w, lr = lr, momentum = momentum,
                         wd = 0, rescale_grad = rescale}
      names[#names + 1] = name
    end
  end
  local upd = mx.nd.sgd_mom_update
  return function()
    for i = 1, #jobs do upd(jobs[i]) end
  end, names
end

--- W1's network: 784 -> FC 512 -> ReLU -> FC 512 -> ReLU -> FC 10 -> SoftmaxOutput
function B.mlp()
  local S = B.mx.sym
  local x = S.Variable('data')
  x = S.FullyConnected{data = x, num_hidden = 512, name = 'fc1'}
  x = S.Activation{data = x, act_type = 'relu', name = 'relu1'}
  x = S.FullyConnected{data = x, num_hidden = 512, name = 'fc2'}
  x = S.Activation{data = x, act_type = 'relu', name = 'relu2'}
  x = S.FullyConnected{data = x, num_hidden = 10, name = 'fc3'}
  return S.SoftmaxOutput{data = x, name = 'softmax'}
end

--- W2's network: LeNet (MXNet's example/image-classification/symbols/lenet.py)
function B.lenet()
  local S = B.mx.sym
  local x = S.Variable('data')
  x = S.Convolution{data = x, kernel = {5, 5}, num_filter = 20, name = 'conv1'}
  x = S.Activation{data = x, act_type = 'tanh', name = 'tanh1'}
  x = S.Pooling{data = x, pool_type = 'max', kernel = {2, 2}, stride = {2, 2}, name = 'pool1'}
  x = S.Convolution{data = x, kernel = {5, 5}, num_filter = 50, name = 'conv2'}
  x = S.Activation{data = x, act_type = 'tanh', name = 'tanh2'}
  x = S.Pooling{data = x, pool_type = 'max', kernel = {2, 2}, stride = {2, 2}, name = 'pool2'}
  x = S.Flatten{data = x, name = 'flatten'}
  x = S.FullyConnected{data = x, num_hidden = 500, name = 'fc1'}
  x = S.Activation{data = x, act_type = 'tanh', name = 'tanh3'}
  x = S.FullyConnected{data = x, num_hidden = 10, name = 'fc2'}
  return S.SoftmaxOutput{data = x, name = 'softmax'}
end

--- Binds `net` for training at `data_shape` (data and label without gradients), fills
--- synthetic data / labels / parameters, and returns exe, step(), update-only function.
function B.train_exe(net, data_shape, nclass, lr, momentum)
  local mx = B.mx
  local batch = data_shape[1]
  local skip = {data = true, softmax_label = true}
  local req = {}  -- a name table: names left out get 'null'
  for _, n in ipairs(net:list_arguments()) do req[n] = skip[n] and 'null' or 'write' end
  local exe = net:simple_bind{ctx = mx.cpu(), data = data_shape, softmax_label = {batch}, grad_req = req}
  B.init_params(exe, skip)
  B.fill_uniform(exe.arg_dict.data, 0, 1, 12345)
  B.fill_int(exe.arg_dict.softmax_label, nclass, 777)
  local update = B.sgd_updater(exe, lr, momentum, 1 / batch, skip)
  local fwd = {is_train = true}
  local function step()
    exe:forward(fwd)
    exe:backward()
    update()
  end
  return exe, step, update
end

--- Times `fn` (one step) after `warmup` calls: returns seconds per step (total over
--- `steps`), and the engine allocations counted over the timed steps.
function B.time_steps(fn, warmup, steps)
  for _ = 1, warmup do fn() end
  B.mx.nd.waitall()
  collectgarbage(); collectgarbage()
  local a0 = B.allocs()
  local t0 = B.now()
  for _ = 1, steps do fn() end
  B.mx.nd.waitall()
  local dt = B.now() - t0
  local a1 = B.allocs()
  return dt / steps, (a1 - a0) / steps
end

--- Repetitions of fn that take about `secs` seconds.
function B.reps_for(fn, secs)
  fn()
  local t0, n = B.now(), 0
  repeat fn(); n = n + 1 until B.now() - t0 > 0.01
  return math.max(1, math.floor(n * secs / (B.now() - t0)))
end

--- Best seconds per call of each function, measured alternately (A B C A B C ...) over
--- 7 rounds of about `secs` per function, so a disturbance from other processes hits
--- every side alike. Returns one time per function.
function B.times(secs, ...)
  local fns, reps, best = { ... }, {}, {}
  for i, f in ipairs(fns) do reps[i], best[i] = B.reps_for(f, secs), math.huge end
  for _ = 1, 7 do
    for i, f in ipairs(fns) do
      local s = B.now()
      for _ = 1, reps[i] do f() end
      best[i] = math.min(best[i], (B.now() - s) / reps[i])
    end
  end
  return (table.unpack or unpack)(best)
end

return B
