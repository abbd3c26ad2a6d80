--- bench/pool.lua — Pooling kernel benchmark (not a test; never run in CI).
--
--   env -u OPENBLAS_CORETYPE OMP_NUM_THREADS=2 luajit bench/pool.lua    (from the repo root)
--   env -u OPENBLAS_CORETYPE LUAMX_LIB=build-pool/libluamx.so luajit bench/pool.lua
--
-- Max pooling at the shapes of BENCHMARKS.md W2 (LeNet, batch 64: 2x2 stride 2 over
-- (64,20,24,24) and (64,50,8,8)), forward and backward, plus a few other shapes that take
-- the other paths (3x3 stride 2 padded: the general 2-D path; an odd 2x2 'full' case; a
-- 1-D 'same' case), and avg / sum pooling: 2x2 stride 2 (even and odd 'full'), 3x3
-- stride 2 padded and 3x3 stride 1 padded without the pad in the count (the general 2-D
-- avg/sum path, overlapping windows in the backward). Operators run through the imperative
-- API with preallocated outputs and gradients (req WRITE), so the times include one call's
-- dispatch (~a few µs). Each shape is measured alternately (fwd, bwd, fwd, bwd, ...:
-- 7 rounds) and the best round kept. Prints µs per call and GB/s of input read
-- (forward) / input + gradient traffic (backward). Set LUAMX_LIB to pick a build
-- (default: build/), OMP_NUM_THREADS to pick the threads. A case the library refuses
-- (an older build without 'same') prints its error instead.
local B = dofile((arg[0]:match('^(.-)[^/]*$') or './') .. 'common.lua')
local mx = B.mx
local ops = require 'luamx.ndarray_ops'
local now = B.now
local function times(...) return B.times(0.05, ...) end

local function prod(s)
  local p = 1
  for _, d in ipairs(s) do p = p * d end
  return p
end

local cases = {
  { 'W2 pool1 2x2/2 (64,20,24,24)', { 64, 20, 24, 24 }, { kernel = { 2, 2 }, stride = { 2, 2 } } },
  { 'W2 pool2 2x2/2 (64,50,8,8)', { 64, 50, 8, 8 }, { kernel = { 2, 2 }, stride = { 2, 2 } } },
  { '2x2/2 full (64,20,23,23)', { 64, 20, 23, 23 },
    { kernel = { 2, 2 }, stride = { 2, 2 }, pooling_convention = 'full' } },
  { '3x3/2 pad 1 (32,64,28,28)', { 32, 64, 28, 28 },
    { kernel = { 3, 3 }, stride = { 2, 2 }, pad = { 1, 1 } } },
  { 'avg 2x2/2 (64,20,24,24)', { 64, 20, 24, 24 },
    { kernel = { 2, 2 }, stride = { 2, 2 }, pool_type = 'avg' } },
  { 'sum 2x2/2 (64,20,24,24)', { 64, 20, 24, 24 },
    { kernel = { 2, 2 }, stride = { 2, 2 }, pool_type = 'sum' } },
  { 'avg 2x2/2 full (64,20,23,23)', { 64, 20, 23, 23 },
    { kernel = { 2, 2 }, stride = { 2, 2 }, pool_type = 'avg', pooling_convention = 'full' } },
  { 'avg 3x3/2 pad 1 (32,64,28,28)', { 32, 64, 28, 28 },
    { kernel = { 3, 3 }, stride = { 2, 2 }, pad = { 1, 1 }, pool_type = 'avg' } },
  { 'avg 3x3/1 pad 1 excl (32,64,28,28)', { 32, 64, 28, 28 },
    { kernel = { 3, 3 }, stride = { 1, 1 }, pad = { 1, 1 }, pool_type = 'avg',
      count_include_pad = false } },
  { '1-D same 3/2 (64,20,577)', { 64, 20, 577 },
    { kernel = { 3 }, stride = { 2 }, pooling_convention = 'same' } },
}

print(('threads %s, library %s'):format(os.getenv('OMP_NUM_THREADS') or 'default',
  os.getenv('LUAMX_LIB') or 'build/'))
print(('%-32s %10s %8s %10s %8s'):format('Pooling (float32)', 'fwd µs', 'GB/s', 'bwd µs', 'GB/s'))
local function bench_case(name, xs, p)
  mx.random.seed(1)
  local x = mx.random.uniform(-1, 1, xs)
  local args = { data = x }
  for k, v in pairs(p) do args[k] = v end
  local y = mx.nd.Pooling(args)
  args.out = y
  local g = mx.random.uniform(-1, 1, y.shape)
  local gx = mx.nd.zeros(xs)
  local tf, tb = times(
    function() mx.nd.Pooling(args) end,
    function() ops.backward('Pooling', p, { x }, { y }, { g }, { grads = { gx } }) end)
  local nx, ny = prod(xs), prod(y.shape)
  print(('%-32s %10.1f %8.1f %10.1f %8.1f'):format(name, tf * 1e6, (nx + ny) * 4 / tf * 1e-9,
    tb * 1e6, (2 * nx + 2 * ny) * 4 / tb * 1e-9))
  print(('RESULT pool %s fwd_us %.2f bwd_us %.2f'):format((name:gsub('%s', '_')), tf * 1e6,
    tb * 1e6))
end

for _, c in ipairs(cases) do
  local ok, err = pcall(bench_case, c[1], c[2], c[3])
  if not ok then print(('%-32s %s'):format(c[1], tostring(err):match('[^\n]*'))) end
end
