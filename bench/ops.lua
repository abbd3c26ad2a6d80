--- bench/ops.lua — operator kernel benchmark (not a test; never run in CI).
--
--   env -u OPENBLAS_CORETYPE luajit bench/ops.lua        (from the repo root, after building)
--
-- Prints, in one run: OpenBLAS sgemm GFLOP/s at the shapes the workloads use; then
-- FullyConnected (BENCHMARKS.md W1 layers) and Convolution (W2 layers) forward and
-- backward in GFLOP/s and as % of the sgemm rate at the equivalent GEMM shape; then
-- elementwise kernels in GB/s next to a plain copy; then the effect of
-- OPENBLAS_CORETYPE=Haswell and OMP_NUM_THREADS=1/2 on sgemm and FC (child processes).
-- Operators run through the imperative API with preallocated outputs. Each comparison is
-- measured alternately (op, reference, op, reference, ...: 7 rounds) and keeps the best
-- round of each, so load from other processes hits both sides alike. Set LUAMX_LIB to pick a build (default: build/).
local B = dofile((arg[0]:match('^(.-)[^/]*$') or './') .. 'common.lua')
local ffi = require 'ffi'
local mx = B.mx
local ops = require 'luamx.ndarray_ops'

ffi.cdef [[
void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a,
                 int lda, const float *b, int ldb, float beta, float *c, int ldc);
]]
local now = B.now
local function times(...) return B.times(0.03, ...) end
local function time(fn) return (times(fn)) end

local lib = mx.capi.lib
-- A closure running one sgemm C[m,n] = A[m,k] B (B [k,n], or [n,k] transposed when tb).
local function sgemm_fn(m, n, k, tb)
  local a, b, c = ffi.new('float[?]', m * k), ffi.new('float[?]', k * n), ffi.new('float[?]', m * n)
  for i = 0, m * k - 1 do a[i] = (i % 7) * 0.1 end
  for i = 0, k * n - 1 do b[i] = (i % 5) * 0.1 end
  return function()
    lib.cblas_sgemm(101, 111, tb and 112 or 111, m, n, k, 1, a, k, b, tb and k or n, 0, c, n)
  end
end
local function sgemm_time(m, n, k, tb) return time(sgemm_fn(m, n, k, tb)) end
local function gflops(flop, t) return flop / t * 1e-9 end

local function rand(shape)
  local a = mx.nd.zeros(shape)
  mx.random.seed(1)
  return mx.random.uniform(-1, 1, shape)
end

local probe = arg[1] == '--probe'

-- ---- sgemm -------------------------------------------------------------------------
local function sgemm_section()
  local shapes = {
    { 'W1 fc1 fwd 128x512x784', 128, 512, 784 }, { 'W1 fc2 fwd 128x512x512', 128, 512, 512 },
    { 'W1 fc1 dX 128x784x512', 128, 784, 512 }, { 'W1 fc1 dW 512x784x128', 512, 784, 128 },
    { 'W2 conv2 batched 50x4096x500', 50, 4096, 500 }, { 'W2 conv1 batched 20x36864x25', 20, 36864, 25 },
    { 'square 1024', 1024, 1024, 1024 },
  }
  print(('%-34s %10s'):format('OpenBLAS sgemm (m x n x k)', 'GFLOP/s'))
  local rate = {}
  for _, s in ipairs(shapes) do
    local t = sgemm_time(s[2], s[3], s[4])
    rate[s[1]] = gflops(2 * s[2] * s[3] * s[4], t)
    print(('%-34s %10.1f'):format(s[1], rate[s[1]]))
  end
  return rate
end

-- ---- FullyConnected (W1) ------------------------------------------------------------
local function fc_section(rate_of)
  local layers = { { 'fc1 784->512', 784, 512 }, { 'fc2 512->512', 512, 512 }, { 'fc3 512->10', 512, 10 } }
  local B = 128
  print(('\n%-22s %9s %9s %9s %9s %9s'):format('FullyConnected B=128', 'fwd GF/s', 'sgemm', '% sgemm',
    'bwd GF/s', '% sgemm'))
  local res = {}
  for _, L in ipairs(layers) do
    local K, M = L[2], L[3]
    local x, w, b, y = rand { B, K }, rand { M, K }, rand { M }, mx.nd.zeros { B, M }
    local g = rand { B, M }
    local p = { num_hidden = M }
    local grads = { mx.nd.zeros { B, K }, mx.nd.zeros { M, K }, mx.nd.zeros { M } }
    local s1, s2 = sgemm_fn(B, K, M), sgemm_fn(M, K, B)
    local tf, sf, tb, sb = times(
      function() mx.nd.FullyConnected { data = x, weight = w, bias = b, num_hidden = M, out = y } end,
      sgemm_fn(B, M, K, true),
      function() ops.backward('FullyConnected', p, { x, w, b }, { y }, { g }, { grads = grads }) end,
      function() s1(); s2() end)
    local f, bwd = gflops(2 * B * M * K, tf), gflops(4 * B * M * K, tb)
    res[#res + 1] = { L[1], f, bwd }
    print(('%-22s %9.1f %9.1f %8.0f%% %9.1f %8.0f%%'):format(L[1], f, gflops(2 * B * M * K, sf),
      100 * sf / tf, bwd, 100 * sb / tb))
  end
  return res
end

-- ---- Convolution (W2) -----------------------------------------------------------------
local function conv_section()
  local B = 64
  local layers = { { 'conv1 1x28x28 -> 20 5x5', 1, 28, 20 }, { 'conv2 20x12x12 -> 50 5x5', 20, 12, 50 } }
  print(('\n%-26s %9s %9s %9s %9s %9s'):format('Convolution B=64', 'fwd GF/s', 'sgemm', '% sgemm',
    'bwd GF/s', '% sgemm'))
  for _, L in ipairs(layers) do
    local C, S, F = L[2], L[3], L[4]
    local O = (S - 4) * (S - 4)
    local x, w, b = rand { B, C, S, S }, rand { F, C, 5, 5 }, rand { F }
    local y = mx.nd.zeros { B, F, S - 4, S - 4 }
    local g = rand { B, F, S - 4, S - 4 }
    local p = { kernel = { 5, 5 }, num_filter = F }
    local grads = { mx.nd.zeros { B, C, S, S }, mx.nd.zeros { F, C, 5, 5 }, mx.nd.zeros { F } }
    local flop = 2 * B * F * O * C * 25
    local s1, s2 = sgemm_fn(F, C * 25, B * O, true), sgemm_fn(C * 25, B * O, F)
    local tf, sg, tb, sgb = times(
      function() mx.nd.Convolution { data = x, weight = w, bias = b, kernel = { 5, 5 },
        num_filter = F, out = y } end,
      sgemm_fn(F, B * O, C * 25),
      function() ops.backward('Convolution', p, { x, w, b }, { y }, { g }, { grads = grads }) end,
      function() s1(); s2() end)
    print(('%-26s %9.1f %9.1f %8.0f%% %9.1f %8.0f%%'):format(L[1], gflops(flop, tf), gflops(flop, sg),
      100 * sg / tf, gflops(2 * flop, tb), 100 * sgb / tb))
  end
end

-- ---- elementwise ------------------------------------------------------------------------
-- Three sizes: 32M floats (128 MiB per array: past every cache, so the copy measures
-- memory bandwidth), 4M (16 MiB, in the last-level cache), 64K (256 KiB, in L2: the copy
-- runs at cache speed and the transcendental kernels are compute-bound there).
local function elementwise_section()
  for _, n in ipairs { 33554432, 4194304, 65536 } do
    local a, b, o = rand { n }, rand { n }, mx.nd.zeros { n }
    local pos = mx.nd.op._plus_scalar(rand { n }, { scalar = 2 })
    local a2, o2 = a:reshape { n / 256, 256 }, o:reshape { n / 256, 256 }
    local row, col = rand { 256 }, rand { n / 256, 1 }
    local ak, ok = a:reshape { n / 1024, 1024 }, o:reshape { n / 1024, 1024 }
    local s1, sr, sc = mx.nd.zeros { 1 }, mx.nd.zeros { n / 256 }, mx.nd.zeros { 256 }
    local copyf = function() mx.nd._copy(a, { out = o }) end
    print(('\nelementwise n=%d (%d KiB per array)   GB/s  copy GB/s  %% of copy'):format(n, n * 4 / 1024))
    local cases = {
      { 'relu', 8, function() mx.nd.relu(a, { out = o }) end },
      { '_mul_scalar', 8, function() mx.nd._mul_scalar(a, { scalar = 3, out = o }) end },
      { 'elemwise_add', 12, function() mx.nd.elemwise_add(a, b, { out = o }) end },
      { 'elemwise_mul', 12, function() mx.nd.elemwise_mul(a, b, { out = o }) end },
      { 'broadcast_add (n)+(n)', 12, function() mx.nd.broadcast_add(a, b, { out = o }) end },
      { 'sigmoid', 8, function() mx.nd.sigmoid(a, { out = o }) end },
      { 'tanh', 8, function() mx.nd.tanh(a, { out = o }) end },
      { 'sqrt', 8, function() mx.nd.sqrt(pos, { out = o }) end },
      { 'sgd_update (w,g in; w out)', 12, function() mx.nd.sgd_update { weight = o, grad = a, lr = 0.01, out = o } end },
      { 'broadcast_add (n/256,256)+(256)', 8, function() mx.nd.broadcast_add(a2, row, { out = o2 }) end },
      { 'broadcast_mul (n/256,256)*(n/256,1)', 8, function() mx.nd.broadcast_mul(a2, col, { out = o2 }) end },
      { 'softmax (n/1024,1024) axis -1', 8, function() mx.nd.softmax(ak, { out = ok }) end },
      { 'sum (all)', 4, function() mx.nd.sum(a, { out = s1 }) end },
      { 'sum axis=1 (n/256,256)', 4, function() mx.nd.sum(a2, { axis = 1, out = sr }) end },
      { 'sum axis=0 (n/256,256)', 4, function() mx.nd.sum(a2, { axis = 0, out = sc }) end },
    }
    for _, cse in ipairs(cases) do
      local t, tc = times(cse[3], copyf)
      local gbs, copy = cse[2] * n / t * 1e-9, 8 * n / tc * 1e-9
      print(('%-28s %8.1f %9.1f %8.0f%%'):format(cse[1], gbs, copy, 100 * gbs / copy))
    end
  end
end

if probe then
  -- child mode: sgemm 1024 and FC fc1 forward only, one line
  local t = sgemm_time(1024, 1024, 1024)
  local t2 = sgemm_time(128, 512, 784, true)
  local x, w, b, y = rand { 128, 784 }, rand { 512, 784 }, rand { 512 }, mx.nd.zeros { 128, 512 }
  local tf = time(function() mx.nd.FullyConnected { data = x, weight = w, bias = b, num_hidden = 512, out = y } end)
  print(('%.1f %.1f %.1f'):format(gflops(2 * 1024 ^ 3, t), gflops(2 * 128 * 512 * 784, t2),
    gflops(2 * 128 * 512 * 784, tf)))
  os.exit(0)
end

print(('luamx bench/ops  (OPENBLAS_CORETYPE=%s, OMP_NUM_THREADS=%s, library %s)\n'):format(
  os.getenv('OPENBLAS_CORETYPE') or 'unset', os.getenv('OMP_NUM_THREADS') or 'unset', mx.capi.path))
-- `luajit bench/ops.lua elementwise` (or sgemm, fc, conv) runs one section only.
local only = arg[1]
if only and only ~= 'sgemm' and only ~= 'fc' and only ~= 'conv' and only ~= 'elementwise' then
  error(('bench/ops.lua: unknown section %q (expected sgemm, fc, conv or elementwise)'):format(only))
end
if not only or only == 'sgemm' then sgemm_section() end
if not only or only == 'fc' then fc_section() end
if not only or only == 'conv' then conv_section() end
if not only or only == 'elementwise' then elementwise_section() end
if only then os.exit(0) end

print('\nEnvironment effects (child processes): sgemm 1024, sgemm 128x512x784, FC fc1 fwd GFLOP/s')
local self = arg[0]
for _, env in ipairs {
  'env -u OPENBLAS_CORETYPE', 'env OPENBLAS_CORETYPE=Haswell',
  'env -u OPENBLAS_CORETYPE OMP_NUM_THREADS=1', 'env -u OPENBLAS_CORETYPE OMP_NUM_THREADS=2',
} do
  local f = io.popen(env .. ' luajit ' .. self .. ' --probe 2>&1')
  local out = f:read('*a'):gsub('%s+$', '')
  f:close()
  print(('%-44s %s'):format(env, out))
end
