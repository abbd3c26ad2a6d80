-- Depthwise convolution (num_group == channels) on a GPU runs the direct kernels of
-- kernels/cuda/conv.cu where cuDNN does not take it, not im2col with a 1 x K product per
-- channel: the node's note says "own depthwise kernels (<why not cuDNN>)", and the output
-- and the data, weight and bias gradients (write and add) equal the CPU's for 1-D, 2-D
-- and 3-D geometries with stride, padding, dilation, channel multipliers and kernels
-- larger than the CPU's direct limit (64 taps), in float32, float64 and float16.
local mx = require 'luamx'
local G = require 'gpu_helpers'

if G.skip_without_gpu('depthwise convolution on a GPU') then return end

local cases = {
  {'2-D 3x3, pad 1', {2, 4, 7, 6}, {kernel = {3, 3}, pad = {1, 1}, num_filter = 4}},
  {'2-D 3x3, stride 2, dilation 2, two filters per channel, no bias', {2, 4, 9, 8},
    {kernel = {3, 3}, stride = {2, 2}, dilate = {2, 2}, pad = {2, 1}, num_filter = 8, no_bias = true}},
  {'1-D kernel 5, stride 2, pad 2', {3, 3, 11}, {kernel = {5}, stride = {2}, pad = {2}, num_filter = 3}},
  {'3-D 3x3x3, pad 1', {1, 2, 4, 5, 3}, {kernel = {3, 3, 3}, pad = {1, 1, 1}, num_filter = 2}},
  {'2-D 9x9 (81 taps: the CPU takes its GEMM path)', {1, 3, 10, 10}, {kernel = {9, 9}, pad = {4, 4}, num_filter = 3}},
}

-- output and gradients of a depthwise Convolution on ctx, with head gradient and inputs
-- from ramps; req 'add' runs backward twice over gradients filled with 0.25
local function run(ctx, dtype, shape, p, req)
  local prm = {data = mx.sym.Variable('data'), num_group = shape[2], name = 'dw'}
  for k, v in pairs(p) do prm[k] = v end
  local net = mx.sym.Convolution(prm)
  local exe = net:simple_bind{ctx = ctx, grad_req = req, type_dict = {data = dtype}, data = shape}
  for i, name in ipairs(exe:list_arguments()) do
    exe.arg_dict[name]:set(G.ramp(exe.arg_dict[name].shape, i):astype(dtype))
    if req == 'add' then exe.grad_dict[name]:fill(0.25) end
  end
  local head = G.ramp(exe.outputs[1].shape, 9):astype(dtype)
  exe:forward{is_train = true}
  exe:backward{head:copyto(ctx)}
  if req == 'add' then exe:forward{is_train = true} exe:backward{head:copyto(ctx)} end
  mx.nd.waitall()
  local r = {output = exe.outputs[1]:copyto(mx.cpu())}
  for name, g in pairs(exe.grad_dict) do r[name] = g:copyto(mx.cpu()) end
  return r, exe:debug_str()
end

-- largest |a - b| over the largest |b| (the float16 inputs are rounded, so elements near
-- zero carry relative errors of any size)
local function rel_err(a, b)
  local x, y = a:astype('float32'):toflat(), b:astype('float32'):toflat()
  assert.are.equal(#x, #y)
  local diff, top = 0, 1e-30
  for i = 1, #x do diff, top = math.max(diff, math.abs(x[i] - y[i])), math.max(top, math.abs(y[i])) end
  return diff / top
end

describe('depthwise convolution on gpu(0)', function()
  for _, c in ipairs(cases) do
    for _, dtype in ipairs {'float32', 'float64', 'float16'} do
      for _, req in ipairs {'write', 'add'} do
        it(('%s, %s, grad_req %s: output and gradients equal the CPU\'s'):format(c[1], dtype, req), function()
          local gpu, text = run(mx.gpu(0), dtype, c[2], c[3], req)
          local cpu = run(mx.cpu(), dtype == 'float16' and 'float32' or dtype, c[2], c[3], req)
          local tol = ({float32 = 1e-5, float64 = 1e-12, float16 = 5e-3})[dtype]
          local n = 0
          for name, ref in pairs(cpu) do
            local worst = rel_err(gpu[name], ref)
            assert(worst <= tol, ('%s differs from the CPU by %.3g (tolerance %g)'):format(name, worst, tol))
            n = n + 1
          end
          assert.are.equal(c[3].no_bias and 3 or 4, n)
          local fwd = G.kernel_line(text, 'Convolution', 'dw')
          local bwd = G.kernel_line(text, '_backward_Convolution', 'dw_backward')
          for _, note in ipairs {fwd, bwd} do
            assert(note == 'cuDNN' or note:find('^own depthwise kernels %(') , note)
          end
        end)
      end
    end
  end

  it('a grouped convolution that is not depthwise keeps the im2col path', function()
    local _, text = run(mx.gpu(0), 'float32', {2, 4, 6, 6}, {kernel = {3, 3}, num_filter = 4, num_group = 2}, 'write')
    local note = G.kernel_line(text, 'Convolution', 'dw')
    assert(note == 'cuDNN' or (note:find('^own kernels %(') and not note:find('depthwise', 1, true)), note)
  end)
end)
