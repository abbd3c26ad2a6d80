-- Bad input from Lua: every failure is a Lua error with a message naming what is wrong,
-- and the objects involved stay usable afterwards.
local mx = require 'luamx'
local H = require 'helpers'

describe('bad input', function()
  local a
  before_each(function() a = mx.nd.array {{1, 2}, {3, 4}} end)
  after_each(function() assert.are.same({{1, 2}, {3, 4}}, a:totable()) end)

  it('rejects shapes that do not broadcast', function()
    H.raises(function() return a + mx.nd.ones {3} end, 'add: shapes (2,2) and (3,) cannot be broadcast together')
    H.raises(function() return a * mx.nd.ones {2, 3} end, 'multiply: shapes (2,2) and (2,3)')
  end)

  it('rejects mixed dtypes and contexts', function()
    H.raises(function() return a + a:astype('float64') end, 'add: operands have different dtypes (float32 and float64)')
    H.raises(function() return a + a:copyto(mx.cpu(1)) end, 'add: operands are on different contexts (cpu(0) and cpu(1))')
  end)

  it('rejects misaligned dot products and bad dtypes', function()
    H.raises(function() return mx.nd.dot(a, mx.nd.ones {3, 2}) end, 'dot: shapes (2,2) and (3,2) are not aligned')
    H.raises(function() return mx.nd.dot(a:astype('int32'), a:astype('int32')) end, 'dot: dtype int32 is not supported')
  end)

  it('rejects negative and absurd dimensions', function()
    H.raises(function() return mx.nd.zeros {2, -1} end, 'NDArray: dim 2 must be >= 0, got -1')
    H.raises(function() return mx.nd.zeros {2 ^ 40, 2 ^ 40} end, 'shape is too large')
    H.raises(function() return mx.nd.zeros {1, 1, 1, 1, 1, 1, 1, 1, 1} end, 'at most 8 dims are supported, got 9')
    H.raises(function() return mx.nd.zeros {1.5} end, 'shape[1] must be an integer, got 1.5')
    H.raises(function() return mx.nd.zeros {2 ^ 20, 2 ^ 20, 2 ^ 10} end, 'out of memory allocating an array of shape (1048576,1048576,1024) float32')
  end)

  it('never positions an error inside luamx when the caller tail-called it', function()
    local chunk = loadstring('return mx.nd.dot(mx.nd.ones {2, 3}, mx.nd.ones {2, 3})', '=stdin')
    setfenv(chunk, {mx = mx})
    local ok, err = pcall(coroutine.wrap(chunk))
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find('dot: shapes (2,3) and (2,3)', 1, true), err)
    assert.is_falsy(tostring(err):find('capi.lua', 1, true), err)
  end)

  it('rejects bad reshapes and slices', function()
    H.raises(function() return a:reshape {3, 2} end, 'reshape: cannot reshape array of shape (2,2) (size 4) to (3,2) (size 6)')
    H.raises(function() return a:reshape {-1, -1} end, 'reshape: only one dim may be -1')
    H.raises(function() return a:reshape {3, -1} end, 'reshape: cannot infer dim 2')
    H.raises(function() return a:slice(2, 3) end, 'slice: rows 2..3 are out of range for an array of 2 rows (positions count from 1')
    H.raises(function() return a:slice(0, 1) end, 'slice: rows 0..1 are out of range')
  end)

  it('rejects non-numeric and ragged tables', function()
    H.raises(function() return mx.nd.array {{1, 'x'}} end, 'element [1][2] must be a number, got string "x"')
    H.raises(function() return mx.nd.array {{1, 2}, {3}} end, 'element [2] has 1 entries, expected 2')
    H.raises(function() return mx.nd.array {{1, 2}, 3} end, 'element [2] must be a table of 2 entries')
    H.raises(function() return mx.nd.array 'abc' end, 'expected a (nested) table of numbers, got string')
    H.raises(function() a:set {{1, 2, 3}} end, "set: table of shape {1,3} does not match the array's shape {2,2}")
    H.raises(function() a:set {{1, true}, {3, 4}} end, 'element [1][2] must be a number, got boolean')
  end)

  it('rejects unknown dtypes and contexts', function()
    H.raises(function() return mx.nd.zeros({2}, {dtype = 'float128'}) end, "unknown dtype 'float128' (expected one of float32")
    H.raises(function() return a:astype('complex') end, "unknown dtype 'complex'")
    local n = mx.context.num_gpus()  -- 0 without a GPU; simulated GPUs in the SIM build
    H.raises(function() return mx.gpu(n) end, ('gpu(%d)'):format(n))
    H.raises(function() return mx.cpu(-1) end, 'context cpu(-1): device id must be in 0..255')
    H.raises(function() return mx.nd.zeros({2}, {ctx = 'tpu'}) end, 'expected a context such as mx.cpu(0), got tpu')
  end)

  it('rejects bad arithmetic operands', function()
    H.raises(function() return a + 'x' end, 'arithmetic on an NDArray and a string')
    H.raises(function() return a + {} end, 'arithmetic on an NDArray and a table')
    H.raises(function() return a:tonumber() end, 'tonumber: the array has 4 elements, expected 1')
    H.raises(function() return a:fill('x') end, 'fill: value must be a number, got string')
  end)

  it('rejects freed handles', function()
    local b = mx.nd.ones {2}
    b:free()
    H.raises(function() return b.shape end, 'NDArray has been freed')
    H.raises(function() return b + 1 end, 'NDArray has been freed')
    H.raises(function() return a + b end, 'NDArray has been freed')
    H.raises(function() return mx.nd.dot(b, b) end, 'NDArray has been freed')
  end)

  it('rejects bad random parameters and seeds', function()
    H.raises(function() return mx.nd.random.uniform(1, 0, {2}) end, 'random.uniform: low (1) must be <= high (0)')
    H.raises(function() return mx.nd.random.normal(0, -1, {2}) end, 'random.normal: std must be >= 0, got -1')
    H.raises(function() return mx.nd.random.normal(0, 1, {2}, {dtype = 'int32'}) end, 'random.normal: dtype must be float16, bfloat16, float32 or float64, got int32')
    H.raises(function() mx.random.seed(-1) end, 'seed must be a non-negative integer')
  end)

  it('reports errors at the caller\'s line', function()
    local line = debug.getinfo(1, 'l').currentline
    local err = H.raises(function() return a + mx.nd.ones {3} end, 'cannot be broadcast')
    assert.is_truthy(err:find('errors_spec.lua:' .. (line + 1) .. ':', 1, true), err)
    err = H.raises(function() local r = a:reshape {5}; return r end, 'cannot reshape')
    assert.is_truthy(err:find('errors_spec.lua:' .. (line + 3) .. ':', 1, true), err)
    err = H.raises(function() local r = mx.nd.zeros {-1}; return r end, 'must be >= 0')
    assert.is_truthy(err:find('errors_spec.lua:' .. (line + 5) .. ':', 1, true), err)
  end)
end)
