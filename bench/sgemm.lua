--- bench/sgemm.lua — the physical limit for BENCHMARKS.md's "% of the sgemm bound": the
--- OpenBLAS sgemm rate (GFLOP/s) at each training workload's GEMM shapes (forward and
--- backward, as im2col GEMMs for LeNet's convolutions), measured with cblas_sgemm of the
--- very OpenBLAS library libluamx.so loaded (found in /proc/self/maps), in the same
--- process setting (threads, OPENBLAS_CORETYPE) as the workloads.
--
--   LUAMX_LIB=build-bench/libluamx.so luajit bench/sgemm.lua [--seconds 0.3]
--
-- Prints RESULT SGEMM <W1|W2|W3|large>_gflops and RESULT <id> bound_per_s (samples/s or
-- tokens/s) = rate / the workload's MFLOP per sample (BENCHMARKS.md: W1 3.21, W2 13.2,
-- W3 15.8 per token).
local dir = debug.getinfo(1, 'S').source:match('^@(.-)[^/\\]*$') or './'
local B = dofile((dir == '' and './' or dir) .. 'common.lua')
local ffi = require 'ffi'
local o = B.args{seconds = 0.6}

local path
for line in io.lines('/proc/self/maps') do
  local p = line:match('(/%S*libopenblas[^/%s]*%.so[%.%d]*)$') or line:match('(/%S*libopenblasp?%-r[%d%.]+%.so)$')
  if p then path = p; break end
end
assert(path, 'libopenblas is not mapped: is libluamx.so linked against OpenBLAS?')
B.info('sgemm from %s', path)
ffi.cdef [[
void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a,
                 int lda, const float *b, int ldb, float beta, float *c, int ldc);
char *openblas_get_config(void);
char *openblas_get_corename(void);
int openblas_get_num_threads(void);
]]
local blas = ffi.load(path)
pcall(function() B.info('OpenBLAS: %s, core %s, %d threads', ffi.string(blas.openblas_get_config()),
  ffi.string(blas.openblas_get_corename()), blas.openblas_get_num_threads()) end)

local bufs = {}
local function buf(i, n)
  local b = bufs[i]
  if not b or b.n < n then
    b = {p = ffi.new('float[?]', n), n = n}
    for j = 0, n - 1 do b.p[j] = (j % 7) * 0.01 end
    bufs[i] = b
  end
  return b.p
end

-- one GEMM: C(m x n) = op(A) op(B), op = transpose when ta/tb (row-major)
local function gemm(m, n, k, ta, tb)
  local a, b, c = buf(1, m * k), buf(2, k * n), buf(3, m * n)
  blas.cblas_sgemm(101, ta and 112 or 111, tb and 112 or 111, m, n, k, 1, a, ta and m or k,
    b, tb and k or n, 0, c, n)
end

--- rate over a list of {m, n, k, ta, tb, count}: total flops / total time
local function rate(list)
  local flops = 0
  for _, g in ipairs(list) do flops = flops + 2 * g[1] * g[2] * g[3] * (g[6] or 1) end
  local function once()
    for _, g in ipairs(list) do for _ = 1, g[6] or 1 do gemm(g[1], g[2], g[3], g[4], g[5]) end end
  end
  local one = B.time_steps(once, 2, 3)
  local reps = math.max(3, math.floor(o.seconds / 3 / one))
  -- the limit is the best rate: the fastest of three timings (load only slows it down)
  local dt = math.huge
  for _ = 1, 3 do local t = B.time_steps(once, 1, reps); dt = math.min(dt, t) end
  return flops / dt / 1e9, flops
end

local T, F = true, false
-- W1, batch 128: forward, weight gradients, input gradients (not for the data)
local w1 = {{128, 512, 784, F, T}, {128, 512, 512, F, T}, {128, 10, 512, F, T},
            {512, 784, 128, T, F}, {512, 512, 128, T, F}, {10, 512, 128, T, F},
            {128, 512, 512, F, F}, {128, 512, 10, F, F}}
-- W2, batch 64: convolutions as im2col GEMMs over the batch (cols 25 x 64*576, 500 x 64*64)
local w2 = {{20, 64 * 576, 25, F, F}, {50, 64 * 64, 500, F, F}, {64, 500, 800, F, T}, {64, 10, 500, F, T},
            {20, 25, 64 * 576, F, T}, {50, 500, 64 * 64, F, T}, {500, 800, 64, T, F}, {10, 500, 64, T, F},
            {500, 64 * 64, 50, T, F}, {64, 800, 500, F, F}, {64, 500, 10, F, F}}
-- W3, batch 32, mean length 35 (1120 tokens): per layer the input projection over all steps,
-- the recurrent one per step; the decoder over all steps; forward and backward
local nt, ts = 32 * 35, 35
local w3 = {{nt, 800, 200, F, T}, {32, 800, 200, F, T, 2 * ts}, {nt, 10000, 200, F, T},
            {800, 200, nt, T, F, 2}, {800, 200, 32, T, F, 2 * ts},
            {nt, 200, 800, F, F}, {32, 200, 800, F, F, 2 * ts}, {10000, 200, nt, T, F},
            {nt, 200, 10000, F, F}}
-- two of the LSTM's input projections in the forward pass
w3[1][6] = 2
local r1 = rate(w1)
local r2 = rate(w2)
local r3 = rate(w3)
local rl = rate({{2048, 2048, 2048, F, F}})
B.result('SGEMM', 'W1_gflops', r1)
B.result('SGEMM', 'W2_gflops', r2)
B.result('SGEMM', 'W3_gflops', r3)
B.result('SGEMM', 'large_gflops', rl)
B.result('W1', 'bound_per_s', r1 * 1e3 / 3.21)
B.result('W2', 'bound_per_s', r2 * 1e3 / 13.2)
B.result('W3a', 'bound_per_s', r3 * 1e3 / 15.8)
B.result('W3b', 'bound_per_s', r3 * 1e3 / 15.8)
