-- The GPU kernels of the indexing, sequence, Activation and Dropout operators beyond
-- what spec/gpu_ops_spec.lua's generic comparison reaches: index edge cases (out of
-- range, negative, fractional) in every take mode, Embedding's scatter gradient with
-- repeated indices over rows wider than a block (bit-identical to the CPU), float16
-- (against the CPU in float32, which has no float16 kernels), Dropout in training (the
-- GPU draws its own masks: checked by their properties and by reproducibility from a
-- seed), req ADD, and error messages. Skips with a message when there is no GPU context.
local mx = require 'luamx'
local ops = require 'luamx.ndarray_ops'
local H = require 'helpers'

describe('indexing, sequence, Activation and Dropout kernels on gpu(0)', function()
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
  local function flat(a) return a:copyto(mx.cpu()):toflat() end
  local function close(what, x, y, rtol)
    assert.are.equal(#x, #y, what .. ': sizes')
    for i = 1, #x do
      local ok = math.abs(x[i] - y[i]) <= rtol * math.max(1, math.abs(x[i]))
      assert(ok, ('%s element %d: cpu %.9g, gpu %.9g'):format(what, i, x[i], y[i]))
    end
  end
  local function same(what, x, y)
    assert.are.equal(#x, #y, what .. ': sizes')
    for i = 1, #x do
      assert(x[i] == y[i], ('%s element %d: cpu %.9g, gpu %.9g'):format(what, i, x[i], y[i]))
    end
  end
  -- forward on cpu and gpu (float32 inputs on the cpu, dtype on the gpu)
  local function both(op, params, list, dtype, train)
    local c, g = {}, {}
    for i, a in ipairs(list) do
      c[i] = arr(a.v, a.shape, a.int and 'int32' or 'float32')
      g[i] = arr(a.v, a.shape, a.int and 'int32' or (dtype or 'float32'), gpu)
    end
    return c, g, ops.forward_all(op, params, c, train), ops.forward_all(op, params, g, train)
  end

  math.randomseed(5)

  it('take: out-of-range, negative and fractional indices in clip and wrap mode', function()
    local idx = {0, 4, -1, 7, -8, 2.7, 1, -3.5, 12}
    for _, mode in ipairs {'clip', 'wrap'} do
      for axis = 0, 1 do
        local a = {v = rand(4 * 5 * 3, -1, 1), shape = {4, 5, 3}}
        local _, _, oc, og = both('take', {axis = axis, mode = mode},
                                  {a, {v = idx, shape = {3, 3}}})
        same(('take %s axis %d'):format(mode, axis), oc[1]:toflat(), flat(og[1]))
      end
    end
  end)

  it('take mode=raise: the GPU clamps and reports the bad index at the next wait', function()
    local a = {v = rand(6 * 2, -1, 1), shape = {6, 2}}
    local ix = {v = {1, 9, 2}, shape = {3}}
    local c, g = both('take', {mode = 'clip'}, {a, ix})
    H.raises(function() ops.forward_all('take', {mode = 'raise'}, c) end,
             'index 9 at position 1 is out of range [0, 6)')
    -- the call itself only queues the kernel; the wait reports it, naming what the CPU does
    local raised = ops.forward_all('take', {mode = 'raise'}, g)
    H.raises(function() raised[1]:wait_to_read() end, 'take:', "input 'indices'",
             'index 9 at position 1 is out of range [0, 6)', 'gpu(0)')
    -- reported once: the output holds clip's values and the device goes on
    local clip = ops.forward_all('take', {mode = 'clip'}, c)
    same('raise on the gpu', clip[1]:toflat(), flat(raised[1]))
    -- a copy to the host and waitall report it too
    local r2 = ops.forward_all('take', {mode = 'raise'}, g)
    H.raises(function() r2[1]:toflat() end, 'index 9 at position 1')
    ops.forward_all('take', {mode = 'raise'}, g)
    H.raises(function() mx.nd.waitall() end, 'index 9 at position 1')
    -- valid indices report nothing; negative ones and other index dtypes are caught
    local ok = ops.forward_all('take', {mode = 'raise'}, {g[1], arr({0, 5}, {2}, nil, gpu)})
    same('valid raise', {c[1]:toflat()[1], c[1]:toflat()[2], c[1]:toflat()[11],
                         c[1]:toflat()[12]}, flat(ok[1]))
    ops.forward_all('take', {mode = 'raise'}, {g[1], arr({3, -2}, {2}, 'int64', gpu)})
    H.raises(function() mx.nd.waitall() end, 'index -2 at position 1 is out of range [0, 6)')
    -- a bound executor names its node
    local sym = mx.sym.take {a = mx.sym.Variable('a'), indices = mx.sym.Variable('i'),
                             mode = 'raise', name = 'tk'}
    local exe = sym:simple_bind {ctx = gpu, a = {6, 2}, i = {3}}
    exe.arg_dict.a:set(mx.nd.array(a.v):reshape {6, 2})
    exe.arg_dict.i:set({0, 6, 1})
    exe:forward()
    H.raises(function() exe.outputs[1]:toflat() end, "take 'tk'",
             'index 6 at position 1 is out of range [0, 6)')
  end)

  it('softmax use_length: an out-of-range length is reported at the next wait', function()
    local x = arr(rand(3 * 4, -1, 1), {3, 4}, nil, gpu)
    for _, op in ipairs {'softmax', 'log_softmax'} do
      local len = arr({4, 5, 2}, {3}, 'int32', gpu)
      local o = ops.forward_all(op, {use_length = true}, {x, len})
      H.raises(function() o[1]:wait_to_read() end, op .. ':', "input 'length'",
               'element 1 is 5, expected a length in [0, 4]')
      len = arr({0, 4, -1}, {3}, 'int64', gpu)
      ops.forward_all(op, {use_length = true}, {x, len})
      H.raises(function() mx.nd.waitall() end, 'element 2 is -1, expected a length in [0, 4]')
      ops.forward_all(op, {use_length = true}, {x, arr({0, 4, 3}, {3}, 'int32', gpu)})
      mx.nd.waitall()
    end
  end)

  it('Embedding: repeated indices, rows wider than a block, req add; float32 bit for bit', function()
    local V, D, N = 7, 300, 40
    local ids = {}
    for i = 1, N do ids[i] = math.floor(math.random() * V) end
    ids[3], ids[9] = 9, -2 -- clipped
    local list = {{v = ids, shape = {4, 10}}, {v = rand(V * D, -1, 1), shape = {V, D}}}
    local params = {input_dim = V, output_dim = D}
    local c, g, oc, og = both('Embedding', params, list)
    same('Embedding forward', oc[1]:toflat(), flat(og[1]))
    local head = rand(N * D, -1, 1)
    local hc, hg = arr(head, {4, 10, D}), arr(head, {4, 10, D}, nil, gpu)
    local gc = ops.backward('Embedding', params, c, oc, {hc}, {reqs = {0, 1}})
    local gg = ops.backward('Embedding', params, g, og, {hg}, {reqs = {0, 1}})
    same('Embedding weight gradient', gc[2]:toflat(), flat(gg[2]))
    -- req add into an existing gradient
    local base = rand(V * D, -1, 1)
    local ac = ops.backward('Embedding', params, c, oc, {hc},
                            {reqs = {0, 3}, grads = {nil, arr(base, {V, D})}})
    local ag = ops.backward('Embedding', params, g, og, {hg},
                            {reqs = {0, 3}, grads = {nil, arr(base, {V, D}, nil, gpu)}})
    same('Embedding weight gradient, req add', ac[2]:toflat(), flat(ag[2]))
  end)

  it('float16 on the GPU follows the float32 CPU result', function()
    local x = {v = rand(3 * 4 * 5, -2, 2), shape = {3, 4, 5}}
    local len = {v = {2, 0, 4.9, 3}, shape = {4}}
    local cases = {
      {'Activation', {act_type = 'tanh'}, {x}},
      {'Activation', {act_type = 'softrelu'}, {x}},
      {'take', {axis = 1, mode = 'wrap'}, {x, {v = {3, -1, 5, 0}, shape = {2, 2}}}},
      {'SequenceMask', {use_sequence_length = true, value = -1}, {x, len}},
      {'SequenceLast', {use_sequence_length = true}, {x, len}},
      {'SequenceReverse', {use_sequence_length = true}, {x, len}},
      {'where', {}, {{v = {1, 0, 2}, shape = {3}}, x, {v = rand(60, -1, 1), shape = {3, 4, 5}}}},
    }
    for _, k in ipairs(cases) do
      local c, g, oc, og = both(k[1], k[2], k[3], 'float16')
      assert.are.equal('float16', og[1].dtype)
      close(k[1] .. ' forward', oc[1]:toflat(), flat(og[1]:astype('float32')), 2e-3)
      local n = #oc[1]:toflat()
      local head = rand(n, -1, 1)
      local reqs = {}
      for i = 1, #c do reqs[i] = (k[1] == 'take' and i == 2 or k[1]:find('Sequence') and i == 2)
                                 and 0 or 1 end
      local gc = ops.backward(k[1], k[2], c, oc, {arr(head, oc[1].shape)}, {reqs = reqs})
      local gg = ops.backward(k[1], k[2], g, og, {arr(head, oc[1].shape, 'float16', gpu)},
                              {reqs = reqs})
      for i = 1, #c do
        if reqs[i] == 1 then
          close(('%s gradient %d'):format(k[1], i), gc[i]:toflat(),
                flat(gg[i]:astype('float32')), 4e-3)
        end
      end
    end
  end)

  it('SequenceLast / SequenceMask: bad lengths are clamped into the data', function()
    local x = {v = rand(5 * 3 * 2, -1, 1), shape = {5, 3, 2}}
    local len = {v = {0, 99, -4}, shape = {3}}
    for _, op in ipairs {'SequenceLast', 'SequenceMask', 'SequenceReverse'} do
      local _, _, oc, og = both(op, {use_sequence_length = true}, {x, len})
      same(op, oc[1]:toflat(), flat(og[1]))
    end
  end)

  it('Dropout in training: masks of 0 and 1/(1-p), shared along axes, same seed same mask', function()
    local p, n = 0.3, 4000
    local x = arr(rand(n, 0.5, 1.5), {40, 100}, nil, gpu)
    mx.random.seed(3)
    local o = ops.forward_all('Dropout', {p = p}, {x}, true)
    local xs, ys, ms = flat(x), flat(o[1]), flat(o[2])
    local zeros = 0
    for i = 1, n do
      assert(ms[i] == 0 or math.abs(ms[i] - 1 / (1 - p)) < 1e-6, 'mask value ' .. ms[i])
      assert(math.abs(ys[i] - xs[i] * ms[i]) < 1e-5, 'output = data * mask')
      if ms[i] == 0 then zeros = zeros + 1 end
    end
    assert(math.abs(zeros / n - p) < 0.04, ('dropped fraction %g for p %g'):format(zeros / n, p))
    mx.random.seed(3)
    same('mask after the same seed', ms, flat(ops.forward_all('Dropout', {p = p}, {x}, true)[2]))
    local other = flat(ops.forward_all('Dropout', {p = p}, {x}, true)[2])
    local differ = false
    for i = 1, n do differ = differ or other[i] ~= ms[i] end
    assert(differ, 'the next call draws a fresh mask')
    -- backward: head * mask
    local head = rand(n, -1, 1)
    local gx = ops.backward('Dropout', {p = p}, {x}, o, {arr(head, {40, 100}, nil, gpu)})
    local gs = flat(gx[1])
    for i = 1, n do assert(math.abs(gs[i] - head[i] * ms[i]) < 1e-5, 'gradient = head * mask') end
    -- axes: the mask is constant along axis 1
    local m2 = flat(ops.forward_all('Dropout', {p = 0.5, axes = '(1,)'}, {x}, true)[2])
    for r = 0, 39 do
      for j = 2, 100 do assert(m2[r * 100 + j] == m2[r * 100 + 1], 'shared along axis 1') end
    end
    -- p = 1 drops everything, as on the CPU
    local all = ops.forward_all('Dropout', {p = 1}, {x}, true)
    local ay, am = flat(all[1]), flat(all[2])
    for i = 1, n do assert(ay[i] == 0 and am[i] == 0, 'p = 1 drops') end
    -- outside training: the identity with a mask of ones
    local e = ops.forward_all('Dropout', {p = p}, {x}, false)
    same('inference output', xs, flat(e[1]))
  end)

  it('reports bad input with the operator and the argument', function()
    local x = arr({1, 2, 3, 4}, {4}, nil, gpu)
    H.raises(function() ops.forward_all('Embedding', {input_dim = 4, output_dim = 1}, {x, x}) end,
             'Embedding', "input 'weight'", 'got (4,)')
    local xi = arr({1, 2, 3, 4}, {2, 2}, 'int32', gpu)
    H.raises(function() ops.forward_all('Activation', {act_type = 'relu'}, {xi}) end,
             "input 'data'", 'int32')
    H.raises(function() ops.forward_all('SequenceLast', {}, {arr({}, {0, 2}, nil, gpu)}) end,
             'empty sequence axis')
    H.raises(function() ops.forward_all('take', {}, {arr({}, {0, 2}, nil, gpu), x}) end,
             'cannot take from an empty axis')
  end)
end)
