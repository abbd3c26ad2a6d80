-- Cases from a hostile-input campaign (issue 16), engine-level: sizes that overflow behind
-- a zero dim, objects freed from their own callbacks, FFI buffers filled from user tables,
-- and inputs that used to give silently wrong results. Each is refused with a message that
-- names the function, the argument, what was expected and what was got; the objects
-- involved stay usable.
local ffi = require 'ffi'
local mx = require 'luamx'
local H = require 'helpers'
local C = mx.capi.C

local MAXSIZE = '576460752303423487' -- INT64_MAX / 16, the largest element count

describe('shape sizes never overflow', function()
  it('a zero dim does not hide an overflowing product of the other dims', function()
    H.raises(function() return mx.nd.zeros {0, 2 ^ 62, 4} end,
      'NDArray: shape is too large (dim 2 = 4611686018427387904 makes the product of the nonzero '
        .. 'dims exceed ' .. MAXSIZE .. ')')
    H.raises(function() return mx.nd.zeros {0, 2 ^ 40, 2 ^ 20} end,
      'NDArray: shape is too large (dim 3 = 1048576 makes the product of the nonzero dims')
    H.raises(function() return mx.nd.zeros {2 ^ 62, 0} end, 'NDArray: shape is too large (dim 1')
    -- still fine: zero-size arrays whose other dims are reasonable
    local z = mx.nd.zeros {0, 2 ^ 20, 4}
    assert.are.same({0, 1048576, 4}, z.shape)
    assert.are.equal(0, z.size)
  end)

  it('a reduction dropping the zero dim of a large empty array fails to allocate, not wraps', function()
    local z = mx.nd.zeros {0, 2 ^ 29, 2 ^ 29}
    H.raises(function() return mx.nd.sum(z, {axis = 0}) end,
      'out of memory allocating an array of shape (536870912,536870912) float32')
    assert.are.same({0, 2 ^ 29, 2 ^ 29}, z.shape)
  end)

  it('reshape checks the product of the new dims', function()
    local a = mx.nd.array {{1, 2, 3}, {4, 5, 6}}
    H.raises(function() return a:reshape {2 ^ 62, 0} end,
      'reshape: shape is too large (dim 1 = 4611686018427387904 makes the product of the dims exceed')
    H.raises(function() return a:reshape {2 ^ 58, 0} end, 'reshape: shape is too large (dim 2 = 3')
    H.raises(function() return a:reshape {-1, 2 ^ 60} end, 'reshape: shape is too large (dim 2')
    assert.are.same({{1, 2, 3}, {4, 5, 6}}, a:totable())
  end)

  it('broadcasting two valid empty shapes can overflow and is refused', function()
    local x, y = mx.nd.zeros {2 ^ 40, 1, 0}, mx.nd.zeros {1, 2 ^ 40, 0}
    H.raises(function() return mx.nd.broadcast_add(x, y) end, 'broadcast_add', 'shape is too large')
    H.raises(function() return x + y end, 'shape is too large')
  end)

  it('shape inference refuses derived shapes that overflow, naming the operator', function()
    H.raises(function() return mx.op.infer('broadcast_add', {}, {{2 ^ 40, 1, 0}, {1, 2 ^ 40, 0}}) end,
      "broadcast_add: output 'output': shape is too large")
    H.raises(function() return mx.op.infer('Concat', {num_args = 2, dim = 0}, {{2 ^ 58}, {2 ^ 58}}) end,
      'Concat: the sizes on dim 0 add up to more than ' .. MAXSIZE)
    H.raises(function() return mx.op.infer('Reshape', {shape = {-4, 2 ^ 40, 2 ^ 40}}, {{8}}) end,
      "Reshape: parameter 'shape': -4 split does not match the dim (input shape (8,))")
    H.raises(function()
      return mx.op.infer('Deconvolution', {kernel = {1}, stride = {2 ^ 30}, num_filter = 1},
        {{1, 1, 2 ^ 40}, {}})
    end, 'Deconvolution: output size on spatial dim 0 is too large (stride 1073741824 times input size')
    H.raises(function()
      return mx.op.infer('Convolution', {kernel = {1}, pad = {2 ^ 40}, num_filter = 1}, {{1, 1, 4}})
    end, "Convolution: parameter 'pad': entry 0 must be in [0, 1073741824], got 1099511627776")
    H.raises(function()
      return mx.op.infer('Pooling', {kernel = {2}, pad = {2 ^ 40}}, {{1, 1, 4}})
    end, "Pooling: parameter 'pad': entries must be <= 1073741824, got 1099511627776")
    H.raises(function()
      return mx.op.infer('FullyConnected', {num_hidden = 2 ^ 20}, {{2, 2 ^ 40}, {}, {}})
    end, "FullyConnected: input 'weight': shape is too large")
  end)

  it('symbol shape inference refuses them too', function()
    local s = mx.sym.broadcast_add(mx.sym.Variable 'x', mx.sym.Variable 'y')
    H.raises(function() return s:infer_shape {x = {2 ^ 40, 1, 0}, y = {1, 2 ^ 40, 0}} end,
      'broadcast_add', 'shape is too large')
  end)

  it('a .params record with such dims is refused', function()
    local function u32(v) return ffi.string(ffi.new('uint32_t[1]', v), 4) end
    local function i32(v) return ffi.string(ffi.new('int32_t[1]', v), 4) end
    local function u64(v) return ffi.string(ffi.new('uint64_t[1]', v), 8) end
    local function i64(v) return ffi.string(ffi.new('int64_t[1]', v), 8) end
    local rec = u32(0xF993FAC9) .. i32(0) .. i32(3) .. i64(0) .. i64(2 ^ 62) .. i64(4)
      .. i32(1) .. i32(0) .. i32(0)
    local bytes = u64(0x112) .. u64(0) .. u64(1) .. rec .. u64(0)
    local out = ffi.new('lmx_ndlist *[1]')
    local rc = C.lmx_ndarray_load_buffer(bytes, #bytes, 'zero.params', out)
    assert.are.equal(tonumber(C.LMX_ERR_FORMAT), rc)
    assert.are.equal('zero.params: array 0: shape (0,4611686018427387904,4) is too large (the '
      .. 'product of its nonzero dims exceeds ' .. MAXSIZE .. ')', ffi.string(C.lmx_last_error()))
    local path = os.tmpname()
    local f = assert(io.open(path, 'wb'))
    f:write(bytes)
    f:close()
    H.raises(function() return mx.nd.load(path) end, 'array 0: shape (0,4611686018427387904,4) is too large')
    os.remove(path)
  end)
end)

describe('IDX files', function()
  it('an IDX file with no images but huge image dims is refused with its name', function()
    local function be32(n)
      return string.char(math.floor(n / 16777216) % 256, math.floor(n / 65536) % 256,
        math.floor(n / 256) % 256, n % 256)
    end
    local img, lab = os.tmpname(), os.tmpname()
    local f = assert(io.open(img, 'wb'))
    f:write('\0\0\8\3' .. be32(0) .. be32(2 ^ 32 - 1) .. be32(2 ^ 32 - 1))
    f:close()
    f = assert(io.open(lab, 'wb'))
    f:write('\0\0\8\1' .. be32(0))
    f:close()
    H.raises(function() return mx.io.MNISTIter {image = img, label = lab, batch_size = 2} end,
      'mx.io.MNISTIter: image file ' .. img .. ': images of 4294967295x4294967295 pixels are too '
        .. 'large (at most 2^31)')
    os.remove(img)
    os.remove(lab)
  end)
end)

describe('freeing an object from its own callback', function()
  local function bound()
    local x = mx.sym.Variable 'x'
    local y = mx.sym.Activation {data = mx.sym.FullyConnected {data = x, num_hidden = 2, name = 'fc'},
                                 act_type = 'relu', name = 'act'}
    local e = y:simple_bind {x = {1, 3}}
    e.arg_arrays[1]:set {{1, 2, 3}}
    e.arg_arrays[2]:set {{1, 0, 0}, {0, 1, 0}}
    return e
  end

  it('an executor freed from its monitor callback is refused, and stays usable', function()
    local e = bound()
    local calls = 0
    e:set_monitor_callback(function()
      calls = calls + 1
      e:free()
    end)
    H.raises(function() e:forward() end, 'monitor callback', 'Executor:free: cannot free the '
      .. 'executor while its forward or backward is running (called from a monitor callback or '
      .. 'a custom operator)')
    assert.is_true(calls >= 1)
    e:set_monitor_callback(nil)
    assert.are.same({{1, 2}}, e:forward()[1]:totable())
    e:free()
    H.raises(function() e:forward() end, 'freed')
  end)

  it('replacing the monitor callback from inside it is refused', function()
    local e = bound()
    e:set_monitor_callback(function() e:set_monitor_callback(function() end) end)
    H.raises(function() e:forward() end, 'Executor:set_monitor_callback: cannot replace the '
      .. 'monitor callback while its forward or backward is running')
    e:set_monitor_callback(nil)
    assert.are.same({{1, 2}}, e:forward()[1]:totable())
  end)

  it('backward holds the same guard', function()
    local e = bound()
    e:forward {is_train = true}
    e:set_monitor_callback(function() e:free() end)
    H.raises(function() e:backward(mx.nd.ones {1, 2}) end, 'Executor:free: cannot free the executor')
    e:set_monitor_callback(nil)
    e:backward(mx.nd.ones {1, 2})
    assert.are.same({{1, 2, 3}, {1, 2, 3}}, e.grad_arrays[2]:totable())
  end)

  it('a custom operator may free the arrays of the call it runs in', function()
    local victim
    mx.operator.register('hostile_free_input', {
      infer_shape = function(_, s) return s, {s[1]}, {} end,
      create_operator = function()
        return {
          forward = function(self, _, req, in_data, out_data)
            if victim then victim:free() end -- the caller's only reference
            self:assign(out_data[1], req[1], in_data[1] * 2)
          end,
          backward = function(self, req, out_grad, _, _, in_grad)
            if victim then victim:free() end
            self:assign(in_grad[1], req[1], out_grad[1] * 2)
          end,
        }
      end,
    })
    mx.operator.register('hostile_free_in_infer', {
      infer_shape = function(_, s)
        if victim then victim:free() end
        return s, {s[1]}, {}
      end,
      create_operator = function()
        return {forward = function(self, _, req, in_data, out_data)
          self:assign(out_data[1], req[1], in_data[1] + 1)
        end}
      end,
    })
    local x = mx.nd.array {1, 2, 3}
    victim = x
    assert.are.same({2, 4, 6}, mx.nd.Custom(x, {op_type = 'hostile_free_input'}):totable())
    H.raises(function() return x:totable() end, 'freed')
    x = mx.nd.array {1, 2, 3}
    victim = x
    assert.are.same({2, 3, 4}, mx.nd.Custom(x, {op_type = 'hostile_free_in_infer'}):totable())
    local out = mx.nd.zeros {3}
    victim = out
    mx.nd.Custom(mx.nd.array {1, 1, 1}, {op_type = 'hostile_free_input', out = out})
    x = mx.nd.array {1, 2, 3}
    x:attach_grad()
    victim = nil
    local y = mx.autograd.record(function() return mx.nd.Custom(x, {op_type = 'hostile_free_input'}) end)
    local g = mx.nd.ones {3}
    victim = g
    y:backward(g)
    assert.are.same({2, 2, 2}, x.grad:totable())
  end)

  it('an autograd.Function may free the head and variables of the backward it runs in', function()
    local victims = {}
    local Twice = mx.autograd.Function {
      forward = function(_, x) return x * 2 end,
      backward = function(_, dy)
        for _, v in ipairs(victims) do v:free() end
        return dy * 2
      end,
    }
    local x = mx.nd.array {1, 2, 3}
    x:attach_grad()
    local z = mx.autograd.record(function() return mx.nd.sum(Twice()(x) * 3) end)
    local grad = x.grad
    victims = {z, x}
    z:backward()
    assert.are.same({6, 6, 6}, grad:totable())
    H.raises(function() return z:totable() end, 'freed')
  end)

  it('a kvstore freed or re-armed from its updater is refused, and stays usable', function()
    local kv = mx.kv.create('local')
    kv:init('w', mx.nd.ones {2})
    kv:_set_updater(function() kv:free() end)
    H.raises(function() kv:push('w', mx.nd.ones {2}) end, 'the updater failed for key w',
      'kvstore:free: cannot run inside the store\'s own updater')
    kv:_set_updater(function() kv:_set_updater(nil) end)
    H.raises(function() kv:push('w', mx.nd.ones {2}) end, 'kvstore:_set_updater: cannot run inside')
    kv:_set_updater(function() kv:push('w', mx.nd.ones {2}) end)
    H.raises(function() kv:push('w', mx.nd.ones {2}) end, 'kvstore:push: cannot run inside')
    kv:_set_updater(function(_, grad, weight) weight:set(weight + grad) end)
    kv:push('w', mx.nd.full({2}, 3))
    local out = mx.nd.zeros {2}
    kv:pull('w', out)
    assert.are.same({4, 4}, out:totable())
    kv:free()
  end)

  it('an executor group cannot be reshaped from its monitor callback', function()
    local data = mx.sym.Variable 'data'
    local net = mx.sym.SoftmaxOutput {data = mx.sym.FullyConnected {data = data, num_hidden = 3, name = 'fc'},
                                      name = 'softmax'}
    local g = mx.executor_manager.DataParallelExecutorGroup {symbol = net, contexts = {mx.cpu()},
      data_shapes = {{'data', {2, 4}}}, label_shapes = {{'softmax_label', {2}}},
      param_names = {'fc_weight', 'fc_bias'}, for_training = true}
    local mon = {install = function(_, target)
      target:set_monitor_callback(function()
        g:reshape({{'data', {4, 4}}}, {{'softmax_label', {4}}})
      end)
    end}
    g:install_monitor(mon)
    local batch = {data = {mx.nd.ones {2, 4}}, label = {mx.nd.zeros {2}}}
    H.raises(function() g:forward(batch, true) end, 'DataParallelExecutorGroup:reshape: cannot run '
      .. 'while the group\'s forward or backward is running')
  end)
end)

describe('FFI buffers filled from user tables are bounded', function()
  it('mx.op.infer refuses more dims than the engine holds', function()
    local ones = {}
    for i = 1, 20 do ones[i] = 1 end
    H.raises(function() return mx.op.infer('relu', {}, {ones}) end,
      "mx.op.infer('relu'): shape of input 1 has 20 dims; at most 8 are supported")
    H.raises(function() return mx.op.infer('relu', {}, {{2, 1.5}}) end,
      "mx.op.infer('relu'): shape of input 1: dim 2 must be an integer in [0, 2^62], got 1.5")
    H.raises(function() return mx.op.infer('relu', {}, {{2, nil, 3}}) end,
      "mx.op.infer('relu'): shape of input 1 has a hole: entry 2 is nil but entry 3 is set")
    H.raises(function() return mx.op.infer('relu', {}, 'x') end,
      "mx.op.infer('relu'): shapes must be a list of shapes, got string")
    local _, outs = mx.op.infer('relu', {}, {{2, 3}})
    assert.are.same({{2, 3}}, outs)
  end)

  it('Executor:reshape and the bucketing pool check their shapes', function()
    local e = mx.sym.Variable('x'):simple_bind {x = {2, 3}}
    local nine = {1, 1, 1, 1, 1, 1, 1, 1, 1}
    H.raises(function() return e:reshape {x = nine} end, "reshape: shape of 'x' has 9 dims; at most 8")
    H.raises(function() return e:reshape {x = {2.5, 4}} end,
      "reshape: shape of 'x': dim 1 must be an integer in [0, 2^62], got 2.5")
    H.raises(function() return e:reshape {x = 'big'} end,
      "reshape: shape of 'x' must be a table of integers such as {2, 3}, got string")
    local pool = mx.bucketing.new(1, function() return mx.sym.Variable 'x' end,
      {data_shapes = {{'x', {2, 3}}}})
    H.raises(function() pool:switch(2, {{'x', {2, nil, 3}}}) end,
      "bucketing:switch: shape of 'x' has a hole")
  end)
end)

describe('no silently wrong results', function()
  local function csv(text)
    local p = os.tmpname()
    local f = assert(io.open(p, 'w'))
    f:write(text)
    f:close()
    return p
  end

  it('CSVIter converts values into float16 and bfloat16 batches', function()
    local d, l = csv('1,2,3\n-0.5,65504,0.25\n'), csv('1\n2\n')
    for _, dt in ipairs {'float16', 'bfloat16', 'float64', 'int32'} do
      local it = mx.io.CSVIter {data_csv = d, label_csv = l, data_shape = {3}, batch_size = 2, dtype = dt}
      local b = it:next()
      assert.are.equal(dt, b.data[1].dtype)
      local want = {{1, 2, 3}, {-0.5, 65504, 0.25}}
      if dt == 'bfloat16' then want[2][2] = 65536 end -- 8 significant bits
      if dt == 'int32' then want[2] = {0, 65504, 0} end
      assert.are.same(want, b.data[1]:totable())
      assert.are.same({1, 2}, b.label[1]:totable())
    end
    os.remove(d)
    os.remove(l)
  end)

  it('mx.nd.array refuses tables with holes', function()
    H.raises(function() return mx.nd.array {1, nil, 3} end,
      'mx.nd.array: element [2] is nil (a hole before entry 3); every entry must be a number')
    H.raises(function() return mx.nd.array {{1, 2}, {3, nil, 5}} end, 'mx.nd.array: element [2][2] is nil')
    H.raises(function() return mx.nd.array {nil, 2} end, 'mx.nd.array: element [1] is nil')
    local b = mx.nd.zeros {3}
    H.raises(function() b:set {1, nil, 3} end, 'set: element [2] is nil')
    assert.are.same({0, 0, 0}, b:totable())
    assert.are.same({1, 3}, mx.nd.array({1, 3}):totable())
  end)

  it('slices and reshapes refuse non-integers', function()
    local a = mx.nd.array {{1, 2}, {3, 4}}
    H.raises(function() return a:slice(1.5, 2) end, 'slice: positions must be integers, as a[2] or '
      .. 'a[{2, 4}], got 1.5 and 2')
    H.raises(function() return a:reshape {2.5, 4} end, 'reshape: shape[1] must be an integer, got 2.5')
    H.raises(function() return mx.nd.reshape {data = a, shape = {2.5, 4}} end, 'Reshape',
      "parameter 'shape'", '2.5')
    assert.are.same({{1, 2}, {3, 4}}, a:totable())
  end)

  it('Dropout and other range-checked float parameters refuse NaN', function()
    local x = mx.nd.ones {4}
    H.raises(function() return mx.nd.Dropout(x, {p = 0 / 0}) end, 'Dropout', "parameter 'p'",
      'is out of range [0, 1]')
    H.raises(function() return mx.sym.Dropout {data = mx.sym.Variable 'x', p = 0 / 0} end,
      "parameter 'p'", 'out of range')
    H.raises(function()
      return mx.op.infer('RNN', {p = 0 / 0, state_size = 2, num_layers = 1, mode = 'lstm'}, {})
    end, 'RNN', "parameter 'p'", 'is out of range [0, 1]')
    local upd = mx.nd.prepare('Dropout', {p = 0.5})
    H.raises(function() upd:set('p', 0 / 0) end, "parameter 'p'", 'is out of range [0, 1]')
    assert.are.same({1, 1, 1, 1}, mx.nd.Dropout(x, {p = 0}):totable())
  end)
end)
