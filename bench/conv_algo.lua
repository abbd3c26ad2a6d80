--- bench/conv_algo.lua — 3x3 stride-1 convolutions on the two CPU paths: im2col + GEMM
--- against Winograd F(2x2, 3x3) (mx.runtime.conv_algo), at ResNet-18's CIFAR layers.
--
--   LUAMX_LIB=build-bench/libluamx.so luajit bench/conv_algo.lua [--batch 64] [--secs 0.05]
--
-- Each layer is a bound executor (Convolution with bias, pad 1); per path: the forward
-- (is_train false) and a training step's backward (data and weight gradients), timed
-- alternately (gemm, winograd, gemm, ...: 7 rounds, best of each). Prints effective
-- GFLOP/s (the direct convolution's 2·N·F·C·9·OH·OW per pass) and the speed-up. Also
-- prints `RESULT` lines. Not a test.
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
print(('%-18s %9s %9s %7s   %9s %9s %7s'):format('layer', 'fwd gemm', 'wino', 'x', 'bwd gemm',
  'wino', 'x'))
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
  local fg, fw = B.times(o.secs, fwd('gemm'), fwd('winograd'))
  local bg, bw = B.times(o.secs, bwd('gemm'), bwd('winograd'))
  -- the training step timed forward + backward: its backward is that minus the forward
  bg, bw = bg - fg, bw - fw
  local flop = 2 * o.batch * C * C * 9 * S * S
  local gf = function(t) return flop / t * 1e-9 end
  local name = ('%dx%dx%d'):format(C, S, S)
  print(('%-18s %9.1f %9.1f %6.2fx   %9.1f %9.1f %6.2fx'):format(name, gf(fg), gf(fw), fg / fw,
    2 * gf(bg), 2 * gf(bw), bg / bw))
  B.result('conv_fwd_' .. name, 'speedup', fg / fw)
  B.result('conv_bwd_' .. name, 'speedup', bg / bw)
  exe:free()
end
mx.runtime.conv_algo('auto')
