--- spec/ndarray_fluent_spec.lua — NDArray fluent methods from the registry, a[i]
--- indexing and assignment, asscalar, and their error messages.
local mx = require 'luamx'
local H = require 'helpers'

describe('NDArray fluent methods', function()
  local a = mx.nd.arange(0, 6):reshape {2, 3}

  it('reduce, map and transpose as the mx.nd functions do', function()
    assert.are.equal(15, a:sum():asscalar())
    assert.are.equal(2.5, a:mean():asscalar())
    assert.are.equal(5, a:max():asscalar())
    assert.are.equal(0, a:min():asscalar())
    assert.are.same({2, 2}, a:argmax {axis = 1}:totable())
    assert.are.same({3, 12}, a:sum {axis = 1}:totable())
    assert.are.same({{0, 3}, {1, 4}, {2, 5}}, a:transpose():totable())
    H.near(a:exp():toflat(), mx.nd.exp(a):toflat(), 0)
  end)

  it('are installed only for names the registry has', function()
    local ops = {}
    for _, n in ipairs(mx.op.list()) do ops[n] = true end
    local installed = require('luamx.ndarray_ops').fluent_installed
    assert.is_true(#installed >= 20)
    for _, n in ipairs(installed) do assert.is_function(mx.nd.NDArray[n], n) end
  end)

  it('report errors at the caller with the operator name', function()
    H.raises(function() return a:sum {axis = 5} end, 'sum')
  end)
end)

describe('NDArray indexing', function()
  it('a[i] is row i (1-based) without the first axis, negative from the end', function()
    local a = mx.nd.arange(0, 6):reshape {2, 3}
    assert.are.same({0, 1, 2}, a[1]:totable())
    assert.are.same({3, 4, 5}, a[-1]:totable())
    assert.are.same({3}, a[2].shape)
    assert.are.same({{0, 1, 2}, {3, 4, 5}}, a[{1, 2}]:totable())
    local v = mx.nd.array {10, 20, 30}
    assert.are.same({1}, v[2].shape)
    assert.are.equal(20, v[2]:asscalar())
  end)

  it('a[i] is a view: assignment writes through', function()
    local a = mx.nd.zeros {2, 3}
    a[2] = {7, 8, 9}
    assert.are.same({{0, 0, 0}, {7, 8, 9}}, a:totable())
    a[1] = 1
    assert.are.same({1, 1, 1}, a[1]:totable())
    a[{1, 2}] = mx.nd.ones {2, 3} * 4
    assert.are.same({{4, 4, 4}, {4, 4, 4}}, a:totable())
  end)

  it('out-of-range positions are errors in the user\'s numbering', function()
    local a = mx.nd.zeros {2, 3}
    H.raises(function() return a[3] end, 'NDArray index: rows 3..3 are out of range for an array of 2 rows',
      'positions count from 1')
    H.raises(function() return a[0] end, 'rows 0..0 are out of range')
    H.raises(function() a[5] = 1 end, 'NDArray assignment: rows 5..5 are out of range')
    H.raises(function() return a[1.5] end, 'positions must be integers')
    H.raises(function() return a:slice(0, 1) end, 'slice: rows 0..1 are out of range')
  end)

  it('asscalar and tonumber name themselves', function()
    local a = mx.nd.zeros {2}
    H.raises(function() return a:asscalar() end, 'asscalar: the array has 2 elements, expected 1')
    H.raises(function() return a:tonumber() end, 'tonumber: the array has 2 elements, expected 1')
  end)
end)
