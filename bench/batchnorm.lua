--- bench/batchnorm.lua — BatchNorm training (batch statistics) forward and backward at
--- the planes of the model zoo (not a test; never run in CI).
--
--   env -u OPENBLAS_CORETYPE OMP_NUM_THREADS=2 LUAMX_LIB=build-bench/libluamx.so luajit bench/batchnorm.lua
--   OMP_NUM_THREADS=2 /usr/bin/python3 bench/torch/batchnorm.py          # the same in PyTorch
--
-- ResNet-18's CIFAR stages at batch 64 (64x32x32 down to 512x4x4) and MobileNet v2's
-- 7x7 and 14x14 planes at batch 32, through a bound executor (BatchNorm with gamma, eps
-- 1e-3, is_train true): forward, then backward with a fixed head gradient, measured
-- alternately (7 rounds of about 50 ms each, best kept). `exe:backward{head}` first copies
-- the head gradient into the executor (inside a network the gradient is already there),
-- so a copy of that size is timed alongside and the backward is also shown without it.
-- Prints µs per call and the GB/s of the passes' traffic over the data (forward: x read
-- twice, y written; backward: x and the head gradient read twice, the data gradient
-- written), and RESULT lines.
local dir = debug.getinfo(1, 'S').source:match('^@(.-)[^/\\]*$') or './'
local B = dofile((dir == '' and './' or dir) .. 'common.lua')
local mx = B.mx

local shapes = {
  {64, 64, 32, 32}, {64, 128, 16, 16}, {64, 256, 8, 8}, {64, 512, 4, 4},
  {32, 160, 7, 7}, {32, 96, 14, 14},
}

print(('# %s, %d OpenMP threads'):format(mx.runtime.features().cpu or '?',
  mx.runtime.features().threads))
for _, sh in ipairs(shapes) do
  local s = mx.sym.BatchNorm{data = mx.sym.Variable('data'), fix_gamma = false, eps = 1e-3,
                             name = 'bn'}
  local exe = s:simple_bind{data = sh}
  B.fill_uniform(exe.arg_dict.data, -1, 3, 1)
  exe.arg_dict.bn_gamma:fill(1.5)
  local head = mx.nd.zeros(sh)
  B.fill_uniform(head, -1, 1, 2)
  local function fwd() exe:forward{is_train = true}; mx.nd.waitall() end
  local function bwd() exe:backward{head}; mx.nd.waitall() end
  local dst = mx.nd.zeros(sh)
  local function copy() head:copyto(dst); mx.nd.waitall() end
  fwd()
  local tf, tb, tc = B.times(0.05, fwd, bwd, copy)
  local n = sh[1] * sh[2] * sh[3] * sh[4]
  local id = table.concat(sh, 'x')
  print(('%-16s forward %8.1f µs (%5.1f GB/s)   backward %8.1f µs, less the copy %8.1f µs (%5.1f GB/s)'):format(
    id, tf * 1e6, 12 * n / tf / 1e9, tb * 1e6, (tb - tc) * 1e6, 20 * n / (tb - tc) / 1e9))
  B.result('BN_' .. id, 'fwd_us', tf * 1e6)
  B.result('BN_' .. id, 'bwd_us', tb * 1e6)
  B.result('BN_' .. id, 'bwd_less_copy_us', (tb - tc) * 1e6)
  exe:free()
end
