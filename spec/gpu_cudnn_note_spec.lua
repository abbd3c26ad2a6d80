-- The executor's debug_str says, for each Convolution, Pooling and BatchNorm node bound on
-- a GPU, which implementation ran and why ("Kernel: cuDNN" or "Kernel: own kernels
-- (<reason>)"), forward and backward. The simulator build has no cuDNN, so there every
-- note must give that reason; a real build with cuDNN shows "cuDNN" or the refusal /
-- switch that sent the node to the own kernels. FullyConnected names its GEMM path
-- (cuBLASLt or cuBLAS). A CPU executor prints no such line.
local mx = require 'luamx'

local kernel_line = require('gpu_helpers').kernel_line

local function net()
  local d = mx.sym.Variable('data')
  local c = mx.sym.Convolution{data = d, kernel = {3, 3}, num_filter = 4, pad = {1, 1}, name = 'conv'}
  local c2 = mx.sym.Convolution{data = d, kernel = {3, 3}, num_filter = 4, pad = {1, 1},
                                cudnn_off = true, name = 'conv_off'}
  local dc = mx.sym.Deconvolution{data = c2, kernel = {3, 3}, pad = {1, 1}, num_filter = 4, name = 'deconv'}
  local b = mx.sym.BatchNorm{data = c + dc, name = 'bn'}
  local p = mx.sym.Pooling{data = b, kernel = {2, 2}, stride = {2, 2}, pool_type = 'max', name = 'pool'}
  local ps = mx.sym.Pooling{data = b, kernel = {2, 2}, stride = {2, 2}, pool_type = 'sum', name = 'psum'}
  local fc = mx.sym.FullyConnected{data = p + ps, num_hidden = 3, name = 'fc'}
  return mx.sym.MakeLoss(mx.sym.sum(fc))
end

local function run(ctx)
  local exe = net():simple_bind{ctx = ctx, data = {2, 3, 6, 6}}
  for _, a in pairs(exe.arg_dict) do a:fill(0.5) end
  exe:forward{is_train = true}
  exe:backward()
  mx.nd.waitall()
  return exe:debug_str()
end

describe('debug_str names the kernel path', function()
  it('a CPU executor prints no Kernel line', function()
    local text = run(mx.cpu())
    assert.is_nil(text:find('\nKernel:', 1, true), text)
  end)

  if mx.context.num_gpus() == 0 then
    pending('no GPU context (mx.context.num_gpus() == 0): the GPU notes are skipped')
    return
  end

  it('Convolution, Pooling and BatchNorm on gpu(0), forward and backward', function()
    local text = run(mx.gpu(0))
    local built = not text:find('cuDNN not built', 1, true)
    local notes = {}
    for _, n in ipairs {'conv', 'conv_off', 'deconv', 'bn', 'pool', 'psum'} do
      local op = ({conv = 'Convolution', conv_off = 'Convolution', deconv = 'Deconvolution',
                   bn = 'BatchNorm', pool = 'Pooling', psum = 'Pooling'})[n]
      notes[n] = {kernel_line(text, op, n), kernel_line(text, '_backward_' .. op, n .. '_backward')}
      for i, note in ipairs(notes[n]) do
        assert(note, ('%s %s has no Kernel line:\n%s'):format(n, i == 1 and 'forward' or 'backward', text))
      end
    end
    -- the switch of the node is named first, in every build
    for _, note in ipairs(notes.conv_off) do assert.are.equal('own kernels (cudnn_off=True)', note) end
    -- FullyConnected names its GEMM path (spec/gpu_blaslt_spec.lua checks each mode); with
    -- LUAMX_CUBLASLT unset (auto) a float32 forward of 2 rows over a reduction at least 16
    -- times as long stays on cuBLAS, and the bias gradient's epilogue takes cuBLASLt
    if not os.getenv('LUAMX_CUBLASLT') then
      assert.are.equal('cuBLAS (auto: a float32 forward with a long reduction (k >= 16 m), ' ..
                       'faster through cuBLAS)', kernel_line(text, 'FullyConnected', 'fc'))
      local bwd = kernel_line(text, '_backward_FullyConnected', 'fc_backward')
      assert.is_truthy(bwd and bwd:find('^data gradient: cuBLAS %(auto: no epilogue to fuse%); ' ..
                                        'weight gradient: cuBLASLt %(BGRADB%)$'), bwd)
    end
    if not built then
      -- the simulator (or a build without cudnn.h): the reason is the build itself
      for _, n in ipairs {'conv', 'deconv', 'bn', 'pool', 'psum'} do
        for _, note in ipairs(notes[n]) do
          assert.is_truthy(note == 'own kernels (cuDNN not built: the CUDA simulator has no cuDNN)' or
                           note == 'own kernels (cuDNN not built: cudnn.h was not found at build time)', note)
        end
      end
      return
    end
    -- a build with cuDNN: refusals carry cudnn_args.c's reason, the rest runs cuDNN unless
    -- the library is off or missing
    for _, note in ipairs(notes.deconv) do
      assert.are.equal('own kernels (cuDNN refuses: Deconvolution runs on the own path)', note)
    end
    for _, note in ipairs(notes.psum) do
      assert.is_truthy(note:find('pool_type sum has no cuDNN mode', 1, true) or note:find('cuDNN off:', 1, true), note)
    end
    for _, n in ipairs {'conv', 'bn', 'pool'} do
      for _, note in ipairs(notes[n]) do
        assert.is_truthy(note == 'cuDNN' or note:find('^own kernels %(cuDNN off: '), note)
      end
    end
  end)
end)
