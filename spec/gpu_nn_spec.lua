-- The GPU kernels of the softmax family, the loss outputs and LeakyReLU beyond what
-- spec/gpu_ops_spec.lua's generic comparison reaches: rows much longer than a block and
-- many rows (the block-per-row path), inner axes, float16 against the float32 CPU,
-- SoftmaxOutput's ignore_label with 'valid' normalisation counted on the device, rrelu in
-- training (slopes from the GPU generator: checked by range, use and reproducibility),
-- use_length's out-of-range lengths (refused on the CPU; clamped on the GPU and reported at
-- the next wait). Skips with
-- a message when there is no GPU context.
local mx = require 'luamx'
local ops = require 'luamx.ndarray_ops'
local H = require 'helpers'

describe('softmax, loss and LeakyReLU kernels on gpu(0)', function()
  if mx.context.num_gpus() == 0 then
    pending('no GPU context (mx.context.num_gpus() == 0): GPU kernel specs skipped')
    return
  end
  local gpu = mx.gpu(0)

  local function rand(n, lo, hi)
    local v = {}
    for i = 1, n do v[i] = lo + (hi - lo) * math.random() end
    return v
  end
  local function arr(flat, shape, dtype, ctx)
    return mx.nd.array(flat, {dtype = dtype or 'float32', ctx = ctx}):reshape(shape)
  end
  local function flat(a) return a:astype('float32'):copyto(mx.cpu()):toflat() end
  local function close(what, x, y, rtol)
    assert.are.equal(#x, #y, what .. ': sizes')
    for i = 1, #x do
      local ok = math.abs(x[i] - y[i]) <= rtol * math.max(1, math.abs(x[i]))
      assert(ok, ('%s element %d: cpu %.9g, gpu %.9g'):format(what, i, x[i], y[i]))
    end
  end
  local function size(shape)
    local n = 1
    for _, d in ipairs(shape) do n = n * d end
    return n
  end
  -- forward and backward of op on cpu (float32) and gpu (dtype); inputs {v=, shape=, int=}
  local function agree(op, params, list, dtype, rtol, reqs)
    local c, g = {}, {}
    for i, a in ipairs(list) do
      local dt = a.int and 'int32' or 'float32'
      c[i] = arr(a.v, a.shape, dt)
      g[i] = arr(a.v, a.shape, a.int and 'int32' or dtype, gpu)
    end
    local oc, og = ops.forward_all(op, params, c, true), ops.forward_all(op, params, g, true)
    close(op .. ' forward', oc[1]:toflat(), flat(og[1]), rtol)
    local head = rand(size(oc[1].shape), -1, 1)
    local gc = ops.backward(op, params, c, oc, {arr(head, oc[1].shape)}, {reqs = reqs})
    local gg = ops.backward(op, params, g, og, {arr(head, oc[1].shape, dtype, gpu)}, {reqs = reqs})
    for i = 1, #list do
      if (reqs or {})[i] ~= 0 then close(op .. ' gradient ' .. i, gc[i]:toflat(), flat(gg[i]), rtol) end
    end
  end

  math.randomseed(9)

  it('softmax and log_softmax: long rows, many rows, inner axes, float32 and float16', function()
    for _, dtype in ipairs {'float32', 'float16'} do
      local rtol = dtype == 'float16' and 4e-3 or 2e-5
      for _, case in ipairs {
        {'softmax', {}, {3, 1500}},
        {'log_softmax', {}, {300, 7}},
        {'softmax', {axis = 1, temperature = 3}, {2, 40, 5}},
        {'log_softmax', {axis = 0}, {33, 4}},
        {'SoftmaxActivation', {mode = 'channel'}, {2, 6, 3, 2}},
      } do
        local shape = case[3]
        agree(case[1], case[2], {{v = rand(size(shape), -5, 5), shape = shape}}, dtype, rtol)
      end
    end
  end)

  it('SoftmaxOutput: ignore_label with valid normalisation, multi_output, float16', function()
    local labels = {}
    for i = 1, 12 do labels[i] = i % 3 == 0 and 2 or math.floor(math.random() * 5) end
    for _, dtype in ipairs {'float32', 'float16'} do
      local rtol = dtype == 'float16' and 4e-3 or 2e-5
      agree('SoftmaxOutput', {use_ignore = true, ignore_label = 2, normalization = 'valid',
                              grad_scale = 1.5},
            {{v = rand(12 * 5, -3, 3), shape = {12, 5}}, {v = labels, shape = {12}}}, dtype,
            rtol, {1, 0})
      agree('SoftmaxOutput', {multi_output = true, normalization = 'valid', smooth_alpha = 0.2},
            {{v = rand(3 * 5 * 4, -3, 3), shape = {3, 5, 4}}, {v = labels, shape = {3, 4}}},
            dtype, rtol, {1, 0})
    end
  end)

  it('the regression outputs and MakeLoss in float16', function()
    local x, y = rand(24, -2, 2), rand(24, -2, 2)
    for _, op in ipairs {'LinearRegressionOutput', 'LogisticRegressionOutput', 'MAERegressionOutput'} do
      agree(op, {grad_scale = 2}, {{v = x, shape = {4, 6}}, {v = y, shape = {4, 6}}}, 'float16',
            4e-3, {1, 0})
    end
    agree('MakeLoss', {normalization = 'valid', valid_thresh = 0.3}, {{v = x, shape = {4, 6}}},
          'float16', 4e-3)
  end)

  it('rrelu in training: slopes in [lower, upper) drawn per element, reproducible from a seed', function()
    local n, lo, hi = 3000, 0.1, 0.4
    local x = arr(rand(n, -2, 2), {30, 100}, nil, gpu)
    local p = {act_type = 'rrelu', lower_bound = lo, upper_bound = hi}
    mx.random.seed(4)
    local o = ops.forward_all('LeakyReLU', p, {x}, true)
    local xs, ys, ms = flat(x), flat(o[1]), flat(o[2])
    local distinct = {}
    for i = 1, n do
      assert(ms[i] >= lo - 1e-7 and ms[i] < hi + 1e-7, 'slope ' .. ms[i])
      local want = xs[i] > 0 and xs[i] or ms[i] * xs[i]
      assert(math.abs(ys[i] - want) < 1e-5, 'output uses the slope')
      distinct[ms[i]] = true
    end
    local count = 0
    for _ in pairs(distinct) do count = count + 1 end
    assert(count > n / 2, 'one slope per element')
    mx.random.seed(4)
    close('slopes after the same seed', ms, flat(ops.forward_all('LeakyReLU', p, {x}, true)[2]), 0)
    local head = rand(n, -1, 1)
    local gx = flat(ops.backward('LeakyReLU', p, {x}, o, {arr(head, {30, 100}, nil, gpu)})[1])
    for i = 1, n do
      local want = ys[i] > 0 and head[i] or ms[i] * head[i]
      assert(math.abs(gx[i] - want) < 1e-5, 'gradient uses the slope')
    end
  end)

  it('use_length: a length beyond the axis fails on the CPU, is clamped and reported on the GPU', function()
    local x = {v = rand(2 * 5, -1, 1), shape = {2, 5}}
    local len = {v = {7, 3}, shape = {2}, int = true}
    local c = {arr(x.v, x.shape), arr(len.v, len.shape, 'int32')}
    H.raises(function() ops.forward_all('softmax', {use_length = true}, c) end,
             "input 'length': element 0 is 7, expected a length in [0, 5]")
    local g = {arr(x.v, x.shape, nil, gpu), arr(len.v, len.shape, 'int32', gpu)}
    local out = ops.forward_all('softmax', {use_length = true}, g)[1]
    H.raises(function() out:wait_to_read() end,
             "softmax: input 'length': element 0 is 7, expected a length in [0, 5]", 'gpu(0)')
    local og = flat(out)
    local full = ops.forward_all('softmax', {use_length = true},
                                 {c[1], arr({5, 3}, {2}, 'int32')})[1]:toflat()
    close('clamped length', full, og, 2e-6)
  end)

  it('reports bad input with the operator and the argument', function()
    local xi = arr({1, 2, 3, 4}, {2, 2}, 'int32', gpu)
    H.raises(function() ops.forward_all('softmax', {}, {xi}) end, 'softmax', "input 'data'", 'int32')
    local x = arr({1, 2, 3, 4}, {2, 2}, nil, gpu)
    H.raises(function() ops.forward_all('softmax', {temperature = 0}, {x}) end,
             "parameter 'temperature': must not be 0")
    H.raises(function()
      ops.forward_all('softmax', {use_length = true}, {x, arr({1, 1}, {2}, nil, gpu)})
    end, "input 'length': expected int32 or int64, got float32")
  end)
end)
