--- bench/conv_algo.lua — 3x3 stride-1 convolutions on the two CPU paths: im2col + GEMM
--- against Winograd F(2x2, 3x3) and F(4x4, 3x3) (mx.runtime.conv_algo 'winograd2' and
--- 'winograd4'), at ResNet-18's CIFAR layers.
--
--   LUAMX_LIB=build-bench/libluamx.so luajit bench/conv_algo.lua [--batch 64] [--secs 0.05]
--
-- Each layer is a bound executor (Convolution with bias, pad 1); per path: the forward
-- (is_train false) and a training step's backward (data and weight gradients), timed
-- alternately (gemm, F2, F4, gemm, ...: 7 rounds, best of each). Prints effective
-- GFLOP/s (the direct convolution's 2·N·F·C·9·OH·OW per pass) and each Winograd tile's
-- speed-up over GEMM. Also prints `RESULT` lines. Not a test.
local dir = debug.getinfo(1, 'S').source:match('^@(.-)[^/\\]*$') or './'
dir = dir == '' and './' or dir
local B = dofile(dir .. 'common.lua')
local mx = B.mx
local o = B.args{batch = 64, secs = 0.05}

local layers = { -- C = F, H = W (ResNet-18 CIFAR stages)
  {64, 32}, {128, 16}, {256, 8}, {512, 4},
}

print(('# %s; batch %d; %d OpenMP threads'):format(mx.runtime.features().cpu or '?', o.batch,
  mx.runtime.features().threads))
print(('%-14s %8s %8s %8s %6s %6s   %8s %8s %8s %6s %6s'):format('layer', 'fwd gemm', 'F2',
  'F4', 'x F2', 'x F4', 'bwd gemm', 'F2', 'F4', 'x F2', 'x F4'))
for _, l in ipairs(layers) do
  local C, S = l[1], l[2]
  local s = mx.sym.Convolution{data = mx.sym.Variable('data'), kernel = {3, 3}, num_filter = C,
                               pad = {1, 1}, name = 'c'}
  local exe = s:simple_bind{data = {o.batch, C, S, S}}
  for _, a in pairs(exe.arg_dict) do B.fill_uniform(a, -0.5, 0.5, 7) end
  local og = mx.nd.zeros{o.batch, C, S, S}
  B.fill_uniform(og, -1, 1, 8)
  local function fwd(algo) return function() mx.runtime.conv_algo(algo) exe:forward{is_train = false} end end
  local function bwd(algo)
    return function() mx.runtime.conv_algo(algo) exe:forward{is_train = true} exe:backward(og) end
  end
  local f = {B.times(o.secs, fwd('gemm'), fwd('winograd2'), fwd('winograd4'))}
  local b = {B.times(o.secs, bwd('gemm'), bwd('winograd2'), bwd('winograd4'))}
  -- the training step timed forward + backward: its backward is that minus the forward
  for i = 1, 3 do b[i] = b[i] - f[i] end
  local flop = 2 * o.batch * C * C * 9 * S * S
  local gf = function(t) return flop / t * 1e-9 end
  local name = ('%dx%dx%d'):format(C, S, S)
  print(('%-14s %8.1f %8.1f %8.1f %5.2fx %5.2fx   %8.1f %8.1f %8.1f %5.2fx %5.2fx'):format(name,
    gf(f[1]), gf(f[2]), gf(f[3]), f[1] / f[2], f[1] / f[3], 2 * gf(b[1]), 2 * gf(b[2]),
    2 * gf(b[3]), b[1] / b[2], b[1] / b[3]))
  for i, t in ipairs{'f2', 'f4'} do
    B.result('conv_fwd_' .. t .. '_' .. name, 'speedup', f[1] / f[i + 1])
    B.result('conv_bwd_' .. t .. '_' .. name, 'speedup', b[1] / b[i + 1])
  end
  exe:free()
end
mx.runtime.conv_algo('auto')
