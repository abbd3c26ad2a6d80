-- cuBLASLt against cuBLAS and the CPU for FullyConnected on gpu(0)
-- (kernels/cuda/blaslt.cu, chosen by kernels/cuda/blaslt_args.c's lmx_lt_choose): the
-- forward with the bias epilogue, the backward with BGRADB (the bias gradient fused with
-- the weight gradient), without a bias, with req add (where BGRADB cannot write the bias
-- gradient and the column sum runs), in float32 and float16. Each case runs with
-- LUAMX_CUBLASLT=0 (cuBLAS), 1 (cuBLASLt for every product) and auto, on the device and
-- on the CPU, and all must agree to the dtype's tolerance. A Module trained a few steps
-- with each mode ends with the same parameters; a bad LUAMX_CUBLASLT is an error naming
-- the operator and the variable.
-- On a real GPU this runs cuBLASLt itself; under the simulator (-DLUAMX_CUDA=SIM) the
-- derived cuBLASLt calls run through blaslt.cu's emulation (OpenBLAS and the bias kernels
-- with exactly the derived operands), so the derivation is checked end to end. An
-- executor's debug_str must name the path each node ran ("Kernel: cuBLASLt (BIAS)",
-- "Kernel: cuBLAS (LUAMX_CUBLASLT=0)", ...) in each mode. Skips with a message without a
-- GPU context.
local mx = require 'luamx'
local ops = require 'luamx.ndarray_ops'
local ffi = require 'ffi'
local H = require 'helpers'
local G = require 'gpu_helpers'

if G.skip_without_gpu('cuBLASLt') then return end
pcall(ffi.cdef, 'int setenv(const char *, const char *, int); int unsetenv(const char *);')

local gpu = mx.gpu(0)
local MODES = {'0', '1', 'auto'}
local TOL = {float32 = 1e-4, float16 = 2e-2}

-- runs f with LUAMX_CUBLASLT=mode, restoring the variable's absence after
local function with_mode(mode, f, ...)
  ffi.C.setenv('LUAMX_CUBLASLT', mode, 1)
  local ok, r = pcall(f, ...)
  ffi.C.unsetenv('LUAMX_CUBLASLT')
  assert(ok, r)
  return r
end

local function size(shape)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  return n
end
local function values(shape, k)
  local v = {}
  for i = 1, size(shape) do v[i] = math.sin(i * 0.61 + k) end
  return v
end
local function flat(a) return a:astype('float32'):copyto(mx.cpu()):toflat() end
local function close(what, x, y, tol)
  assert.are.equal(#x, #y, what .. ': sizes')
  for i = 1, #x do
    local ok = math.abs(x[i] - y[i]) <= tol * (1 + math.max(math.abs(x[i]), math.abs(y[i])))
    assert(ok, ('%s element %d: %.9g vs %.9g'):format(what, i, x[i], y[i]))
  end
end

-- forward and backward of FullyConnected on ctx in dtype; reqs per input (1 write,
-- 3 add onto the given starting gradients)
local function fc_run(ctx, dtype, p, shapes, reqs)
  local function arr(v, shape) return mx.nd.array(v, {dtype = dtype, ctx = ctx}):reshape(shape) end
  local ins, grads = {}, {}
  for i, s in ipairs(shapes) do
    ins[i] = arr(values(s, i), s)
    grads[i] = arr(values(s, 10 + i), s)
  end
  local outs = ops.forward_all('FullyConnected', p, ins, true)
  local head = arr(values(outs[1].shape, 7), outs[1].shape)
  local g = ops.backward('FullyConnected', p, ins, outs, {head}, {reqs = reqs, grads = grads})
  local r = {flat(outs[1])}
  for i = 1, #shapes do r[i + 1] = g[i] and flat(g[i]) or false end
  return r
end

local function agree(dtype, p, shapes, reqs)
  local want = fc_run(mx.cpu(), 'float32', p, shapes, reqs)
  local got = {}
  for _, mode in ipairs(MODES) do
    got[mode] = with_mode(mode, fc_run, gpu, dtype, p, shapes, reqs)
    for i, w in ipairs(want) do
      if w then
        close(('%s LUAMX_CUBLASLT=%s, %s vs cpu'):format(dtype, mode, i == 1 and 'output' or
          'gradient ' .. (i - 1)), got[mode][i], w, TOL[dtype])
      end
    end
  end
  for i, w in ipairs(got['0']) do
    if w then close(dtype .. ' cuBLASLt vs cuBLAS ' .. i, got['1'][i], w, TOL[dtype]) end
  end
end

describe('FullyConnected through cuBLASLt on gpu(0)', function()
  for _, dtype in ipairs {'float32', 'float16'} do
    it(dtype .. ': bias epilogue forward and BGRADB backward agree with cuBLAS and the CPU', function()
      agree(dtype, {num_hidden = 24}, {{16, 40}, {24, 40}, {24}}, {1, 1, 1})
      -- flatten of a 3-D input, odd sizes
      agree(dtype, {num_hidden = 7}, {{5, 3, 3}, {7, 9}, {7}}, {1, 1, 1})
    end)

    it(dtype .. ': no bias, req add, and the bias gradient alone', function()
      agree(dtype, {num_hidden = 12, no_bias = true}, {{8, 20}, {12, 20}}, {1, 1})
      agree(dtype, {num_hidden = 12}, {{8, 20}, {12, 20}, {12}}, {3, 3, 3}) -- add: no BGRADB
      agree(dtype, {num_hidden = 12}, {{8, 20}, {12, 20}, {12}}, {3, 1, 1}) -- data adds
      agree(dtype, {num_hidden = 12}, {{8, 20}, {12, 20}, {12}}, {0, 0, 1}) -- bias only
      agree(dtype, {num_hidden = 12}, {{8, 20}, {12, 20}, {12}}, {1, 0, 3})
    end)
  end

  it('a Module trained with each mode ends with the same parameters', function()
    local S = mx.sym
    local x = S.FullyConnected{data = S.Variable('data'), num_hidden = 16, name = 'fc1'}
    x = S.Activation{data = x, act_type = 'relu'}
    x = S.FullyConnected{data = x, num_hidden = 5, name = 'fc2'}
    local net = S.SoftmaxOutput{data = x, name = 'softmax'}
    local batch = G.batch_of(G.ramp({12, 10}, 3), G.ramp({12}, 2, 5))
    local p = G.start_params(net, batch, 11)
    local res = {}
    for _, mode in ipairs(MODES) do res[mode] = with_mode(mode, G.train, net, gpu, batch, p, 3) end
    local cpu = G.train(net, mx.cpu(), batch, p, 3)
    for name, w in pairs(cpu) do
      for _, mode in ipairs(MODES) do
        assert.is_true(G.max_rel(res[mode][name], w) < 1e-4,
          ('parameter %s with LUAMX_CUBLASLT=%s vs cpu'):format(name, mode))
      end
    end
  end)

  -- The executor's debug_str says per node which path ran ("Kernel:" line, written by the
  -- glue src/ops/cuda/nn_fc.c): so a cuBLASLt path that always stepped aside, which would
  -- make the comparisons above compare cuBLAS with cuBLAS, fails here.
  it('debug_str names cuBLASLt or cuBLAS per node, forward and backward, in each mode', function()
    local S = mx.sym
    local d = S.Variable('data')
    local h = S.FullyConnected{data = d, num_hidden = 16, name = 'fcb'}
    local y = S.FullyConnected{data = h, num_hidden = 8, no_bias = true, name = 'fcn'}
    -- a float32 forward whose reduction (40) is at least 16 times its rows (2): cuBLAS in
    -- auto, as measured on an H100 (kernels/cuda/blaslt_args.h)
    local l = S.FullyConnected{data = S.Variable('long'), num_hidden = 3, name = 'fcl'}
    local net = S.Group{S.MakeLoss(S.sum(y)), S.MakeLoss(S.sum(l))}
    local lt, cu = 'cuBLASLt', 'cuBLAS (LUAMX_CUBLASLT=0)'
    local auto_off = 'cuBLAS (auto: no epilogue to fuse)'
    local long_k = 'cuBLAS (auto: a float32 forward with a long reduction (k >= 16 m), faster through cuBLAS)'
    local function bwd(data, weight)
      return ('data gradient: %s; weight gradient: %s'):format(data, weight)
    end
    local want = {
      ['0'] = {fcb = {cu, bwd(cu, cu)}, fcn = {cu, bwd(cu, cu)}, fcl = {cu, bwd(cu, cu)}},
      ['1'] = {fcb = {lt .. ' (BIAS)', bwd(lt .. ' (no epilogue)', lt .. ' (BGRADB)')},
               fcn = {lt .. ' (no epilogue)', bwd(lt .. ' (no epilogue)', lt .. ' (no epilogue)')},
               fcl = {lt .. ' (BIAS)', bwd(lt .. ' (no epilogue)', lt .. ' (BGRADB)')}},
      auto = {fcb = {lt .. ' (BIAS)', bwd(auto_off, lt .. ' (BGRADB)')},
              fcn = {auto_off, bwd(auto_off, auto_off)},
              fcl = {long_k, bwd(auto_off, lt .. ' (BGRADB)')}},
    }
    for _, mode in ipairs(MODES) do
      local text = with_mode(mode, function()
        local exe = net:simple_bind{ctx = gpu, grad_req = 'write', data = {6, 10}, long = {2, 40}}
        for _, a in pairs(exe.arg_dict) do a:fill(0.25) end
        exe:forward{is_train = true}
        exe:backward()
        mx.nd.waitall()
        return exe:debug_str()
      end)
      for name, notes in pairs(want[mode]) do
        assert.are.equal(notes[1], G.kernel_line(text, 'FullyConnected', name),
          ('LUAMX_CUBLASLT=%s: forward of %s'):format(mode, name))
        assert.are.equal(notes[2], G.kernel_line(text, '_backward_FullyConnected', name .. '_backward'),
          ('LUAMX_CUBLASLT=%s: backward of %s'):format(mode, name))
      end
    end
  end)

  it('a bad LUAMX_CUBLASLT names the operator and the variable; fine again after', function()
    local a = mx.nd.ones({2, 3}, {ctx = gpu})
    local w = mx.nd.ones({4, 3}, {ctx = gpu})
    local b = mx.nd.zeros({4}, {ctx = gpu})
    ffi.C.setenv('LUAMX_CUBLASLT', 'fast', 1)
    local ok, err = pcall(H.raises, function()
      mx.nd.FullyConnected{data = a, weight = w, bias = b, num_hidden = 4}
    end, 'FullyConnected', "environment LUAMX_CUBLASLT: expected 0, 1 or auto, got 'fast'")
    ffi.C.unsetenv('LUAMX_CUBLASLT')
    assert(ok, err)
    local y = mx.nd.FullyConnected{data = a, weight = w, bias = b, num_hidden = 4}
    assert.are.same({{3, 3, 3, 3}, {3, 3, 3, 3}}, y:totable())
  end)
end)
