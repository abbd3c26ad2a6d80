-- float16 and bfloat16 FullyConnected, Convolution, Deconvolution, Pooling and Activation
-- on the CPU. The float32-staging path (every op, and bfloat16 FullyConnected with the
-- AVX512_BF16 kernel forced off) widens exactly, runs the float32 code and rounds once,
-- so its results are compared bit for bit with the float32 operator on the widened
-- values, rounded once (a second rounding, or a float64 detour, would show). The
-- AVX512_BF16 kernel sums in another order: it is checked against a float64 reference
-- within bfloat16 rounding plus float32 summation error, and against the fallback.
-- tests/test_lowp_fc.c checks that kernel's edges in C; the float32/float64 code both
-- paths share is gradient-checked by finite differences in tests/test_gradcheck.c.
local ffi = require 'ffi'
local mx = require 'luamx'
local H = require 'helpers'
local ops = require 'luamx.ndarray_ops'

local function flat(a) return a:toflat() end

local seed = 7
local function rand(shape, lo, hi, dt)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  local t = {}
  for i = 1, n do
    seed = (seed * 1103515245 + 12345) % 2147483648
    t[i] = lo + (hi - lo) * seed / 2147483648
  end
  return mx.nd.array(t, {dtype = dt}):reshape(shape)
end

local function widen(list)
  local t = {}
  for i, a in ipairs(list) do t[i] = a:astype('float32') end
  return t
end

local function call(op, inputs, params)
  local args = {unpack(inputs)}
  args[#args + 1] = params
  return mx.nd[op](unpack(args))
end

-- forward and backward of op in dt against float32 on the widened inputs, rounded once
local function same_as_float32(dt, op, params, inputs, gshape)
  local y = call(op, inputs, params)
  assert.are.equal(dt, y.dtype)
  local y32 = call(op, widen(inputs), params)
  assert.are.same(flat(y32:astype(dt)), flat(y), op .. ' forward')
  local g = rand(gshape or y.shape, -1, 1, dt)
  local gs = ops.backward(op, params, inputs, {y}, {g})
  -- a backward that reads the output (tanh, sigmoid, max pooling) reads the rounded one
  local ws = ops.backward(op, params, widen(inputs), {y:astype('float32')}, {g:astype('float32')})
  for i = 1, #inputs do
    assert.are.equal(dt, gs[i].dtype)
    assert.are.same(flat(ws[i]:astype(dt)), flat(gs[i]), op .. ' gradient ' .. i)
  end
  return y, gs
end

describe('float16/bfloat16 layers on the CPU (float32 staging)', function()
  local before
  setup(function() before = mx.runtime.bf16_force_fallback(true) end)
  teardown(function() mx.runtime.bf16_force_fallback(false) end)

  for _, dt in ipairs {'float16', 'bfloat16'} do
    it(dt .. ': FullyConnected with bias, no_bias and flatten = false', function()
      local x, w, b = rand({5, 3, 4}, -2, 2, dt), rand({7, 12}, -1, 1, dt), rand({7}, -1, 1, dt)
      same_as_float32(dt, 'FullyConnected', {num_hidden = 7}, {x, w, b})
      same_as_float32(dt, 'FullyConnected', {num_hidden = 7, no_bias = true}, {x, w})
      local w4 = rand({7, 4}, -1, 1, dt)
      local y = same_as_float32(dt, 'FullyConnected', {num_hidden = 7, flatten = false}, {x, w4, b})
      assert.are.same({5, 3, 7}, y.shape)
    end)

    it(dt .. ': Convolution (groups, stride, pad, depthwise) and Deconvolution', function()
      local x = rand({2, 4, 7, 6}, -2, 2, dt)
      same_as_float32(dt, 'Convolution', {kernel = {3, 3}, num_filter = 6, pad = {1, 1}},
        {x, rand({6, 4, 3, 3}, -1, 1, dt), rand({6}, -1, 1, dt)})
      same_as_float32(dt, 'Convolution', {kernel = {2, 3}, num_filter = 4, num_group = 2,
        stride = {2, 1}, no_bias = true}, {x, rand({4, 2, 2, 3}, -1, 1, dt)})
      same_as_float32(dt, 'Convolution', {kernel = {3, 3}, num_filter = 4, num_group = 4},
        {x, rand({4, 1, 3, 3}, -1, 1, dt), rand({4}, -1, 1, dt)})
      same_as_float32(dt, 'Deconvolution', {kernel = {3, 3}, num_filter = 3, stride = {2, 2},
        no_bias = false},
        {x, rand({4, 3, 3, 3}, -1, 1, dt), rand({3}, -1, 1, dt)})
    end)

    it(dt .. ': Pooling (max, avg, global) and Activation', function()
      local x = rand({2, 3, 6, 5}, -3, 3, dt)
      same_as_float32(dt, 'Pooling', {kernel = {2, 2}, stride = {2, 2}, pool_type = 'max'}, {x})
      same_as_float32(dt, 'Pooling', {kernel = {3, 3}, pool_type = 'avg', pad = {1, 1}}, {x})
      same_as_float32(dt, 'Pooling', {kernel = {1, 1}, global_pool = true, pool_type = 'avg'}, {x})
      for _, act in ipairs {'relu', 'tanh', 'sigmoid', 'softrelu'} do
        same_as_float32(dt, 'Activation', {act_type = act}, {x})
      end
    end)

    it(dt .. ': accumulating gradients widen the old value and round the sum once', function()
      local x, w, b = rand({3, 10}, -2, 2, dt), rand({4, 10}, -1, 1, dt), rand({4}, -1, 1, dt)
      local p = {num_hidden = 4}
      local y = mx.nd.FullyConnected(x, w, b, p)
      local g = rand({3, 4}, -1, 1, dt)
      local old = rand({4, 10}, -3, 3, dt)
      local acc = old:copy()
      ops.backward('FullyConnected', p, {x, w, b}, {y}, {g},
        {grads = {nil, acc, nil}, reqs = {0, 3, 0}})
      local d = flat(ops.backward('FullyConnected', p, widen {x, w, b}, {y:astype('float32')},
        {g:astype('float32')})[2])
      local o32, f32, want = flat(old:astype('float32')), ffi.new('float[1]'), {}
      for i = 1, #d do
        f32[0] = o32[i] + d[i]
        want[i] = f32[0]
      end
      assert.are.same(flat(mx.nd.array(want):astype(dt)), flat(acc))
    end)
  end

  it('names the dtype an op does not take, and the argument that differs', function()
    local x = mx.nd.array({{1, 2}}, {dtype = 'int32'})
    H.raises(function()
      mx.nd.FullyConnected(x, mx.nd.ones({3, 2}, {dtype = 'int32'}),
        mx.nd.ones({3}, {dtype = 'int32'}), {num_hidden = 3})
    end, 'FullyConnected', "input 'data'", 'expected float32, float64, float16 or bfloat16',
      'got int32')
    local h = mx.nd.ones({1, 2}, {dtype = 'bfloat16'})
    H.raises(function()
      mx.nd.FullyConnected(h, mx.nd.ones({3, 2}, {dtype = 'float16'}),
        mx.nd.ones({3}, {dtype = 'bfloat16'}), {num_hidden = 3})
    end, "FullyConnected: input 'weight': expected bfloat16, got float16")
    -- the ops outside this family still name their dtypes
    H.raises(function() mx.nd.BatchNorm(rand({2, 3, 2, 2}, -1, 1, 'bfloat16'),
      mx.nd.ones({3}, {dtype = 'bfloat16'}), mx.nd.zeros({3}, {dtype = 'bfloat16'}),
      mx.nd.zeros({3}, {dtype = 'bfloat16'}), mx.nd.ones({3}, {dtype = 'bfloat16'})) end,
      "BatchNorm: input 'data': expected float32 or float64 on the CPU, got bfloat16")
    -- and the arrays stay usable
    assert.are.same({2, 2, 2}, flat(mx.nd.FullyConnected {data = h, weight = mx.nd.ones({3, 2},
      {dtype = 'bfloat16'}), num_hidden = 3, no_bias = true}))
  end)
end)

describe('bfloat16 FullyConnected on AVX512_BF16', function()
  after_each(function() mx.runtime.bf16_force_fallback(false) end)

  it('is what mx.runtime.features reports, and the switch forces the fallback', function()
    local f = mx.runtime.features()
    local fast = f.isa.avx512_bf16 and f.isa.avx512f and f.isa.avx512bw
    assert.are.equal(fast and 'avx512_bf16' or 'float32', f.kernels.bf16_fc)
    assert.is_truthy(tostring(f):find('bfloat16 FullyConnected: ' .. f.kernels.bf16_fc, 1, true))
    assert.are.equal('float32', mx.runtime.bf16_force_fallback(true))
    assert.are.equal('float32', mx.runtime.features().kernels.bf16_fc)
    assert.are.equal(f.kernels.bf16_fc, mx.runtime.bf16_force_fallback(false))
    H.raises(function() mx.runtime.bf16_force_fallback('yes') end,
      'mx.runtime.bf16_force_fallback', 'argument 1', 'expected a boolean', 'got string')
  end)

  -- y[r, c] against sum over p of term(r, c, p) (+ extra(r, c)) in float64, within
  -- bfloat16 rounding (half an ulp: up to 2^-8 relative) plus twice float32's summation
  -- bound
  local function check_sums(Y, rows, cols, kk, term, extra, what)
    for r = 0, rows - 1 do
      for c = 0, cols - 1 do
        local ref, mag = 0, 0
        if extra then ref = extra(r, c); mag = math.abs(ref) end
        for p = 0, kk - 1 do
          local t = term(r, c, p)
          ref, mag = ref + t, mag + math.abs(t)
        end
        local tol = math.abs(ref) * 2 ^ -8 + 2 * (kk + 2) * 2 ^ -24 * mag
        local got = Y[r * cols + c + 1]
        assert(math.abs(got - ref) <= tol,
          ('%s (%d, %d): %.9g vs %.9g'):format(what, r, c, got, ref))
      end
    end
  end

  it('both paths meet a float64 reference within bfloat16 rounding, both ways', function()
    local m, k, n = 9, 77, 13
    local x, w, b = rand({m, k}, -2, 2, 'bfloat16'), rand({n, k}, -1, 1, 'bfloat16'),
      rand({n}, -1, 1, 'bfloat16')
    local g = rand({m, n}, -1, 1, 'bfloat16')
    local X, W, B, G = flat(x), flat(w), flat(b), flat(g)
    local p = {num_hidden = n}
    local function run()
      local y = mx.nd.FullyConnected(x, w, b, p)
      local Y = flat(y)
      check_sums(Y, m, n, k, function(i, j, q) return X[i * k + q + 1] * W[j * k + q + 1] end,
        function(_, j) return B[j + 1] end, 'output')
      local gs = ops.backward('FullyConnected', p, {x, w, b}, {y}, {g})
      local GX, GW, GB = flat(gs[1]), flat(gs[2]), flat(gs[3])
      check_sums(GX, m, k, n, function(i, q, j) return G[i * n + j + 1] * W[j * k + q + 1] end,
        nil, 'data gradient')
      check_sums(GW, n, k, m, function(j, q, i) return G[i * n + j + 1] * X[i * k + q + 1] end,
        nil, 'weight gradient')
      check_sums(GB, 1, n, m, function(_, j, i) return G[i * n + j + 1] end, nil, 'bias gradient')
      return Y, GW
    end
    local fast = mx.runtime.features().kernels.bf16_fc == 'avx512_bf16'
    local yf, gwf = run()
    mx.runtime.bf16_force_fallback(true)
    local ys, gws = run()
    -- the fallback is the float32 result rounded once
    assert.are.same(flat(mx.nd.FullyConnected(x:astype('float32'), w:astype('float32'),
      b:astype('float32'), p):astype('bfloat16')), ys)
    if not fast then return pending('no AVX512_BF16 on this CPU: one path checked') end
    -- the paths sum in different orders: mostly equal, otherwise one bfloat16 step apart
    for _, pair in ipairs {{yf, ys}, {gwf, gws}} do
      local a, c, differ = pair[1], pair[2], 0
      for i = 1, #a do
        if a[i] ~= c[i] then
          differ = differ + 1
          local big = math.max(math.abs(a[i]), math.abs(c[i]))
          assert(math.abs(a[i] - c[i]) <= big * 2 ^ -7 + 1e-3, i)
        end
      end
      assert(differ < #a / 4, differ)
    end
  end)
end)

describe('float16/bfloat16 in an executor', function()
  -- data (float32) -> Cast -> FC -> relu -> FC -> Cast float32 -> SoftmaxOutput
  local function net(dt)
    local s = mx.sym.Variable('data')
    if dt ~= 'float32' then s = mx.sym.Cast {data = s, dtype = dt} end
    s = mx.sym.FullyConnected {data = s, num_hidden = 16, name = 'fc1'}
    s = mx.sym.Activation {data = s, act_type = 'relu'}
    s = mx.sym.FullyConnected {data = s, num_hidden = 4, name = 'fc2'}
    if dt ~= 'float32' then s = mx.sym.Cast {data = s, dtype = 'float32'} end
    return mx.sym.SoftmaxOutput {data = s, name = 'softmax'}
  end
  local function pool_bytes(exe)
    local planned, pool = exe:debug_str():match('Memory plan: (%d+) bytes.-pool (%d+) bytes')
    return tonumber(planned), tonumber(pool)
  end

  it('sizes a staging workspace only for low-precision layers', function()
    -- type_dict: the data is float32 and the rest is inferred (MXNet's simple_bind)
    local e32 = net('float32'):simple_bind {ctx = mx.cpu(), data = {8, 10},
                                            type_dict = {data = 'float32'}}
    local planned, pool = pool_bytes(e32)
    assert.are.equal(planned, pool) -- float32: no workspace at all
    for _, dt in ipairs {'float16', 'bfloat16'} do
      local e = net(dt):simple_bind {ctx = mx.cpu(), data = {8, 10}, type_dict = {data = 'float32'}}
      assert.are.equal(dt, e.arg_dict.fc1_weight.dtype)
      local pl, po = pool_bytes(e)
      -- the largest staged call: fc1's backward, float32 twins of data, weight, bias,
      -- output, output gradient and the three input gradients
      local need = 4 * 2 * (8 * 10 + 16 * 10 + 16 + 8 * 16)
      assert(po - pl >= need, ('%s: workspace %d < %d'):format(dt, po - pl, need))
      for k, a in pairs(e.arg_dict) do
        if k ~= 'softmax_label' then a:set(rand(a.shape, -0.5, 0.5, 'float32'):astype(a.dtype)) end
      end
      e.arg_dict.softmax_label:set(mx.nd.array {0, 1, 2, 3, 0, 1, 2, 3})
      e:forward(true)
      e:backward()
      local out = flat(e.outputs[1])
      for i = 1, #out do assert(out[i] > 0 and out[i] < 1, out[i]) end
      assert.are.equal(dt, e.grad_dict.fc1_weight.dtype)
    end
  end)

  it('trains a LeNet-shaped net (Convolution, tanh, Pooling, Flatten, FC) near float32', function()
    local function lenet(dt)
      local s = mx.sym.Variable('data')
      if dt ~= 'float32' then s = mx.sym.Cast {data = s, dtype = dt} end
      s = mx.sym.Convolution {data = s, kernel = {3, 3}, num_filter = 4, pad = {1, 1}, name = 'c1'}
      s = mx.sym.Activation {data = s, act_type = 'tanh'}
      -- avg: max pooling routes the gradient to one of the ties that 8-bit tanh outputs
      -- make common, so its gradients may legitimately differ from float32's
      s = mx.sym.Pooling {data = s, kernel = {2, 2}, stride = {2, 2}, pool_type = 'avg'}
      s = mx.sym.Flatten {data = s}
      s = mx.sym.FullyConnected {data = s, num_hidden = 5, name = 'f1'}
      if dt ~= 'float32' then s = mx.sym.Cast {data = s, dtype = 'float32'} end
      return mx.sym.SoftmaxOutput {data = s, name = 'softmax'}
    end
    local values = {}
    local function run(dt)
      local e = lenet(dt):simple_bind {ctx = mx.cpu(), data = {3, 1, 8, 8},
                                       type_dict = {data = 'float32'}}
      local names = {}
      for k in pairs(e.arg_dict) do names[#names + 1] = k end
      table.sort(names) -- the same values in every process
      for _, k in ipairs(names) do
        local a = e.arg_dict[k]
        values[k] = values[k] or (k == 'softmax_label' and mx.nd.array {0, 3, 4}
          or rand(a.shape, -0.5, 0.5, 'float32'))
        a:set(values[k]:astype(a.dtype))
      end
      e:forward(true)
      e:backward()
      return e
    end
    local ref = run('float32')
    for _, dt in ipairs {'float16', 'bfloat16'} do
      local e = run(dt)
      for _, k in ipairs {'c1_weight', 'c1_bias', 'f1_weight', 'f1_bias'} do
        assert.are.equal(dt, e.grad_dict[k].dtype)
        local got, want = flat(e.grad_dict[k]:astype('float32')), flat(ref.grad_dict[k])
        local big = 0
        for i = 1, #want do big = math.max(big, math.abs(want[i])) end
        for i = 1, #want do -- bfloat16 keeps 8 bits: a few roundings along the way
          assert(math.abs(got[i] - want[i]) <= 0.03 * big, ('%s %s[%d]: %g vs %g'):format(
            dt, k, i, got[i], want[i]))
        end
      end
    end
  end)
end)
