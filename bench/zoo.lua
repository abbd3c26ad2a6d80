--- bench/zoo.lua — the model zoo against PyTorch, side by side in one interleaved run:
--- Z1 ResNet-18 (CIFAR form: mx.models.resnet v2 at 3x32x32, whose stem is the 3x3
--- convolution without pooling) training at batch 64, Z2 MobileNet v2 (1.0) training at
--- batch 32 on 3x224x224, and both networks' inference at batch 1.
--
--   LUAMX_LIB=build-bench/libluamx.so luajit bench/zoo.lua [--rounds 3] [--steps 5]
--       [--warmup 2] [--infer-steps 20] [--only z1|z2] [--no-torch]
--
-- PyTorch runs the very same network: bench/torch/zoo.py builds it from the symbol JSON
-- this script writes (one torch.nn.functional call per node, parameters as nn.Parameters,
-- BatchNorm with running statistics), so both sides train the same layers with SGD
-- (lr 0.01, momentum 0.9, gradients over the batch mean). Rounds alternate luamx and
-- PyTorch (A B A B ...); the table shows medians and the ratio luamx / PyTorch (> 1:
-- luamx faster). Prints `RESULT <side>_<id> <metric> <value>` lines too. Not a test.
-- Figures from a machine shared with other jobs are not comparable between runs.
local dir = debug.getinfo(1, 'S').source:match('^@(.-)[^/\\]*$') or './'
dir = dir == '' and './' or dir
local B = dofile(dir .. 'common.lua')
local mx = B.mx
local o = B.args{rounds = 3, steps = 5, warmup = 2, ['infer-steps'] = 20, only = '', ['no-torch'] = false}

local works = {
  {id = 'Z1', what = 'ResNet-18 CIFAR form', batch = 64, shape = {3, 32, 32}, classes = 10,
   net = function() return mx.models.resnet{num_layers = 18, num_classes = 10, image_shape = {3, 32, 32}} end},
  {id = 'Z2', what = 'MobileNet v2 224', batch = 32, shape = {3, 224, 224}, classes = 1000,
   net = function() return mx.models.mobilenet_v2{} end},
}

local function with_batch(shape, n) return {n, shape[1], shape[2], shape[3]} end

-- luamx: samples/s of training at the work's batch, and of inference at batch 1
local function run_luamx(w)
  local net = w.net()
  local exe, step = B.train_exe(net, with_batch(w.shape, w.batch), w.classes, 0.01, 0.9)
  for name, a in pairs(exe.aux_dict) do a:fill(name:match('_moving_var$') and 1 or 0) end
  local dt = B.time_steps(step, o.warmup, o.steps)
  exe:free()
  local inf = net:simple_bind{ctx = mx.cpu(), data = with_batch(w.shape, 1), grad_req = 'null'}
  B.init_params(inf, {data = true, softmax_label = true})
  for name, a in pairs(inf.aux_dict) do a:fill(name:match('_moving_var$') and 1 or 0) end
  B.fill_uniform(inf.arg_dict.data, 0, 1, 99)
  local fwd = {is_train = false}
  local di = B.time_steps(function() inf:forward(fwd) end, o.warmup, o['infer-steps'])
  inf:free()
  return w.batch / dt, 1 / di
end

-- PyTorch's BLAS environment, as bench/run.sh gives it: the OpenBLAS kernel luamx runs
-- (OPENBLAS_CORETYPE) and Debian's OpenMP build of OpenBLAS, which shares PyTorch's
-- OpenMP pool. With the default pthreads build next to that pool, PyTorch's batch-1
-- inference on 2 threads ran 3.5x slower than on one (both pools spinning on 2 cores).
local function torch_env()
  local env = 'OPENBLAS_CORETYPE=' .. mx.runtime.features().blas.corename
  for _, d in ipairs({'/usr/lib/x86_64-linux-gnu/openblas-openmp', '/usr/lib/openblas-openmp'}) do
    if io.open(d .. '/libopenblas.so.0') then
      local ld = os.getenv('LD_LIBRARY_PATH')
      return env .. ' LD_LIBRARY_PATH=' .. d .. (ld and ld ~= '' and ':' .. ld or '')
    end
  end
  return env
end
local TORCH_ENV = torch_env()
B.info('PyTorch runs with %s', TORCH_ENV)

local function run_torch(w, json_path)
  local cmd = ('env %s /usr/bin/python3 %storch/zoo.py --json %s --batch %d --shape %s ' ..
    '--classes %d --steps %d --warmup %d --infer_steps %d 2>&1'):format(TORCH_ENV, dir,
    json_path, w.batch, table.concat(w.shape, ','), w.classes, o.steps, o.warmup, o['infer-steps'])
  local p = assert(io.popen(cmd))
  local text = p:read('*a')
  p:close()
  local train = tonumber(text:match('RESULT %S+ train_samples_per_s (%S+)'))
  local infer = tonumber(text:match('RESULT %S+ infer1_samples_per_s (%S+)'))
  if not train then io.stderr:write('bench/zoo.lua: PyTorch side failed:\n' .. text .. '\n') end
  return train, infer
end

local have_torch = not o['no-torch'] and os.execute('/usr/bin/python3 -c "import torch" >/dev/null 2>&1') == 0
local function median(t)
  local s = {}
  for i, v in ipairs(t) do s[i] = v end
  table.sort(s)
  if #s == 0 then return nil end
  return #s % 2 == 1 and s[(#s + 1) / 2] or (s[#s / 2] + s[#s / 2 + 1]) / 2
end

local rows = {}
for _, w in ipairs(works) do
  if o.only == '' or o.only:lower() == w.id:lower() then
    local json_path = os.tmpname()
    local f = assert(io.open(json_path, 'w'))
    f:write(w.net():tojson())
    f:close()
    local r = {w = w, lt = {}, li = {}, tt = {}, ti = {}}
    for round = 1, o.rounds do
      local first_luamx = round % 2 == 1
      for side = 1, 2 do
        if (side == 1) == first_luamx then
          local t, i = run_luamx(w)
          r.lt[#r.lt + 1], r.li[#r.li + 1] = t, i
          B.result('luamx_' .. w.id, 'train_samples_per_s', t)
          B.result('luamx_' .. w.id, 'infer1_samples_per_s', i)
        elseif have_torch then
          local t, i = run_torch(w, json_path)
          if t then
            r.tt[#r.tt + 1], r.ti[#r.ti + 1] = t, i
            B.result('torch_' .. w.id, 'train_samples_per_s', t)
            B.result('torch_' .. w.id, 'infer1_samples_per_s', i)
          end
        end
      end
    end
    os.remove(json_path)
    rows[#rows + 1] = r
  end
end

print(('\n%-34s %12s %12s %8s'):format('workload (samples/s, medians)', 'luamx', 'PyTorch', 'ratio'))
for _, r in ipairs(rows) do
  for _, k in ipairs({{'train batch ' .. r.w.batch, r.lt, r.tt}, {'inference batch 1', r.li, r.ti}}) do
    local a, b = median(k[2]), median(k[3])
    print(('%-34s %12.1f %12s %8s'):format(r.w.id .. ' ' .. r.w.what .. ', ' .. k[1], a,
      b and ('%.1f'):format(b) or '-', b and ('%.2f'):format(a / b) or '-'))
  end
end
