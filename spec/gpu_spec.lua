-- GPU arrays: run where a GPU is present, skip cleanly where none is (these machines).
local mx = require 'luamx'
local H = require 'helpers'

local has_gpu = mx.context.num_gpus() > 0

describe('gpu contexts', function()
  it('refuses a GPU that is not there, naming it', function()
    local n = mx.context.num_gpus()
    H.raises(function() return mx.gpu(n) end, ('gpu(%d)'):format(n))
    H.raises(function() return mx.nd.zeros({2}, {ctx = mx.gpu(n + 3)}) end, ('gpu(%d)'):format(n + 3))
  end)

  if not has_gpu then
    pending('no GPU on this machine: GPU array specs skipped')
    return
  end

  it('copies arrays to a GPU and back, across dtypes', function()
    local a = mx.nd.array {{1, 2}, {3, 4}}
    local g = a:copyto(mx.gpu(0))
    assert.are.equal(mx.gpu(0), g.context)
    assert.are.same({{1, 2}, {3, 4}}, g:totable())
    assert.are.same({{1, 2}, {3, 4}}, g:astype('float64'):copyto(mx.cpu()):totable())
    g:fill(5)
    assert.are.same({5, 5, 5, 5}, g:toflat())
    local z = mx.nd.zeros({3}, {ctx = mx.gpu(0), dtype = 'float16'})
    z:set {1, 2, 3}
    assert.are.same({1, 2, 3}, z:totable())
    assert.is_true(tostring(g):find('@gpu(0)', 1, true) ~= nil)
  end)

  it('refuses a data pointer for GPU arrays', function()
    H.raises(function() return mx.nd.ones({2}, {ctx = mx.gpu(0)}):data() end, 'only CPU arrays expose a pointer')
  end)

  it('saves GPU arrays through a CPU copy', function()
    local path = os.tmpname()
    mx.nd.save(path, {w = mx.nd.array({1, 2}, {ctx = mx.gpu(0)})})
    assert.are.same({1, 2}, mx.nd.load(path).w:totable())
    os.remove(path)
  end)
end)
