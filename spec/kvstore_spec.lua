-- mx.kv: the local kvstore (src/exec/kvstore.c): push sums, pull broadcasts, the updater
-- runs once per push on the merged gradient, errors for unknown keys and for the types
-- this build cannot provide.
local mx = require 'luamx'
local H = require 'helpers'

local function flat(a) return a:toflat() end

describe('mx.kv', function()
  it('create: type, rank, num_workers', function()
    local kv = mx.kv.create('local')
    assert.are.equal('local', kv.type)
    assert.are.equal(0, kv.rank)
    assert.are.equal(1, kv.num_workers)
    assert.are.equal('device', mx.kv.create('device').type)
    assert.are.equal('local', mx.kv.create().type)
  end)

  it('push sums the values of every device; pull broadcasts the sum', function()
    local kv = mx.kv.create('local')
    kv:init('w', mx.nd.zeros{2, 2})
    kv:push('w', {mx.nd.ones{2, 2}, mx.nd.full({2, 2}, 2), mx.nd.array{{0.5, 1}, {1.5, 2}}})
    local a, b = mx.nd.zeros{2, 2}, mx.nd.zeros({2, 2}, {ctx = mx.cpu(1)})
    kv:pull('w', {a, b})
    assert.are.same({3.5, 4, 4.5, 5}, flat(a))
    assert.are.same({3.5, 4, 4.5, 5}, flat(b))
  end)

  it('init stores a copy; pull without push gives the initial value', function()
    local kv = mx.kv.create('device')
    local v = mx.nd.array{1, 2, 3}
    kv:init(3, v)
    v:fill(0)
    local out = mx.nd.zeros{3}
    kv:pull(3, out)
    assert.are.same({1, 2, 3}, flat(out))
  end)

  it('lists of keys and values', function()
    local kv = mx.kv.create('local')
    kv:init({'a', 'b'}, {mx.nd.ones{2}, mx.nd.full({2}, 5)})
    kv:push({'a', 'b'}, {{mx.nd.ones{2}, mx.nd.ones{2}}, {mx.nd.full({2}, 3)}})
    local oa, ob = mx.nd.zeros{2}, mx.nd.zeros{2}
    kv:pull({'a', 'b'}, {oa, ob})
    assert.are.same({2, 2}, flat(oa))
    assert.are.same({3, 3}, flat(ob))
  end)

  it('the updater runs once per push with the summed gradient and the stored weight', function()
    local kv = mx.kv.create('local')
    kv:init(7, mx.nd.array{10, 20})
    local calls = {}
    kv:_set_updater(function(key, grad, weight)
      calls[#calls + 1] = {key = key, grad = flat(grad), weight = flat(weight)}
      weight:set(weight - grad * 0.5)
    end)
    kv:push(7, {mx.nd.array{1, 2}, mx.nd.array{3, 4}})
    assert.are.same({{key = 7, grad = {4, 6}, weight = {10, 20}}}, calls)
    local outs = {mx.nd.zeros{2}, mx.nd.zeros{2}}
    kv:pull(7, outs)
    assert.are.same({8, 17}, flat(outs[1]))
    assert.are.same({8, 17}, flat(outs[2]))
    kv:push(7, mx.nd.array{2, 2})
    assert.are.equal(2, #calls)
    kv:pull(7, outs)
    assert.are.same({7, 16}, flat(outs[2]))
  end)

  it('set_optimizer: SGD on the merged gradient, then broadcast', function()
    local kv = mx.kv.create('local')
    kv:set_optimizer(mx.optimizer.create('sgd', {learning_rate = 0.25}))
    kv:init('fc_weight', mx.nd.array{1, 1, 1})
    kv:pushpull('fc_weight', {mx.nd.array{1, 2, 3}, mx.nd.array{3, 2, 1}}, {mx.nd.zeros{3}})
    local out = mx.nd.zeros{3}
    kv:pull('fc_weight', out)
    assert.are.same({0, 0, 0}, flat(out))
  end)

  it('an error in the updater fails the push with its message', function()
    local kv = mx.kv.create('local')
    kv:init('w', mx.nd.ones{2})
    kv:_set_updater(function() error('bad update') end)
    H.raises(function() kv:push('w', mx.nd.ones{2}) end, 'the updater failed for key w', 'bad update')
    kv:_set_updater(nil)
    kv:push('w', mx.nd.full({2}, 4))
    local out = mx.nd.zeros{2}
    kv:pull('w', out)
    assert.are.same({4, 4}, flat(out))
  end)

  it('unknown keys are errors naming the key', function()
    local kv = mx.kv.create('local')
    kv:init('w', mx.nd.ones{2})
    H.raises(function() kv:push('z', mx.nd.ones{2}) end,
      "kvstore 'local': push: key 'z' has not been initialized (call init first)")
    H.raises(function() kv:pull(4, mx.nd.ones{2}) end,
      "kvstore 'local': pull: key '4' has not been initialized")
    H.raises(function() kv:init('w', mx.nd.ones{2}) end, "init: key 'w' is already initialized")
  end)

  it('shape mismatches are errors with both shapes', function()
    local kv = mx.kv.create('local')
    kv:init('w', mx.nd.ones{2, 2})
    H.raises(function() kv:push('w', {mx.nd.ones{2, 2}, mx.nd.ones{4}}) end,
      "push: key 'w'", 'sum: value 2 has shape (4,), expected (2,2)')
    H.raises(function() kv:pull('w', mx.nd.ones{3}) end,
      "pull: key 'w', output 1: expected shape (2,2), got (3,)")
  end)

  it('nccl and dist_sync are refused, naming what is missing', function()
    H.raises(function() mx.kv.create('nccl') end, "kvstore 'nccl'", 'no NCCL support')
    H.raises(function() mx.kv.create('dist_sync') end, "kvstore 'dist_sync'", 'MPI launcher')
    H.raises(function() mx.kv.create('dist_device_sync') end, 'MPI launcher')
    H.raises(function() mx.kv.create('fancy') end, "unknown type 'fancy'")
  end)
end)
