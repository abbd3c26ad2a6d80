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

  it('nccl exists in CUDA builds and is refused elsewhere; dist_async is refused', function()
    local ok, kv = pcall(mx.kv.create, 'nccl')
    if ok then -- a CUDA build (spec/gpu_nccl_spec.lua tests the store)
      assert.are.equal('nccl', kv.type)
    else
      assert.truthy(tostring(kv):find("kvstore 'nccl': this build has no NCCL support", 1, true), kv)
      assert.are.equal(0, mx.context.num_gpus())
    end
    H.raises(function() mx.kv.create('dist_async') end, "kvstore 'dist_async'",
      "use 'dist_sync' or 'dist_device_sync'")
    H.raises(function() mx.kv.create('fancy') end, "unknown type 'fancy'")
  end)

  it('rank, num_workers and barrier come from the engine', function()
    local kv = mx.kv.create('local')
    assert.are.equal(0, kv.rank)
    assert.are.equal(1, kv.num_workers)
    kv:barrier()
    kv:check_consistency('batches', 3)
    H.raises(function() kv:check_consistency('batches', 1.5) end, 'value must be an integer')
  end)

  it('the C pushpull checks its arguments, naming them', function()
    local ffi = require 'ffi'
    local C = mx.capi.C
    local kv = mx.kv.create('local')
    kv:init('w', mx.nd.ones{2})
    local keys = ffi.new('const char *[1]', {'w'})
    local function msg() return ffi.string(C.lmx_last_error()) end
    assert.are_not.equal(0, C.lmx_kvstore_pushpull(kv._h, 1, keys, nil, 0, nil, 0))
    assert.truthy(msg():find('values and outs are both NULL', 1, true), msg())
    local vals = ffi.new('lmx_ndarray *[1]')
    assert.are_not.equal(0, C.lmx_kvstore_pushpull(kv._h, 1, keys, vals, 1, nil, 0))
    assert.truthy(msg():find("key 'w': value 1 is NULL", 1, true), msg())
    assert.are_not.equal(0, C.lmx_kvstore_pushpull(kv._h, -1, keys, vals, 1, nil, 0))
    assert.truthy(msg():find('negative count', 1, true), msg())
    local r = ffi.new('int[1]')
    assert.are_not.equal(0, C.lmx_kvstore_rank(nil, r))
    assert.truthy(msg():find("lmx_kvstore_rank: argument 'kv' must not be NULL", 1, true), msg())
  end)

  it('gradient compression is refused with a message', function()
    local kv = mx.kv.create('local')
    H.raises(function() kv:set_gradient_compression{type = '2bit'} end,
      'set_gradient_compression', 'not implemented')
  end)

  it('a list of keys is one pushpull: summed over devices, updated once per key', function()
    local kv = mx.kv.create('device')
    kv:init({'a', 'b'}, {mx.nd.zeros{2}, mx.nd.zeros{3}})
    local calls = {}
    kv:set_updater(function(k, g, w) calls[#calls + 1] = k; w:set(w + g) end)
    local ga = {mx.nd.array{1, 2}, mx.nd.array{10, 20}}
    local gb = {mx.nd.array{1, 1, 1}, mx.nd.array{2, 2, 2}}
    local oa, ob = {mx.nd.zeros{2}, mx.nd.zeros{2}}, {mx.nd.zeros{3}, mx.nd.zeros{3}}
    kv:pushpull({'a', 'b'}, {ga, gb}, {oa, ob})
    assert.are.same({'a', 'b'}, calls)
    assert.are.same({11, 22}, oa[2]:totable())
    assert.are.same({3, 3, 3}, ob[1]:totable())
  end)

  it('sums every dtype (ints wrap as C integers, float16 through float32)', function()
    for _, dt in ipairs{'float32', 'float64', 'float16', 'uint8', 'int32', 'int8', 'int64'} do
      local kv = mx.kv.create('local')
      kv:init(1, mx.nd.zeros({3}, {dtype = dt}))
      local v = {mx.nd.array({1, 2, 3}, {dtype = dt}), mx.nd.array({4, 5, 6}, {dtype = dt})}
      local out = mx.nd.zeros({3}, {dtype = dt})
      kv:pushpull(1, v, out)
      assert.are.same({5, 7, 9}, out:totable(), dt)
      assert.are.equal(dt, out.dtype)
    end
  end)

  it('optimizer states go through the engine hook', function()
    local kv = mx.kv.create('local')
    kv:init(0, mx.nd.ones{2})
    H.raises(function() kv:save_optimizer_states('/nonexistent/x') end, 'call set_optimizer first')
    kv:set_optimizer(mx.optimizer.SGD{learning_rate = 0.1, momentum = 0.9})
    kv:push(0, mx.nd.ones{2})
    local f = os.tmpname()
    kv:save_optimizer_states(f)
    kv:load_optimizer_states(f)
    os.remove(f)
    H.raises(function() kv:load_optimizer_states('/nonexistent/states') end, 'loading optimizer states')
  end)

  it("dist_sync outside mpirun is a working store of one worker", function()
    local kv = mx.kv.create('dist_sync')
    assert.are.equal('dist_sync', kv.type)
    assert.are.equal(0, kv.rank)
    assert.are.equal(1, kv.num_workers)
    kv:init('w', mx.nd.array{1, 2})
    kv:set_optimizer(mx.optimizer.SGD{learning_rate = 1, rescale_grad = 1})
    local out = mx.nd.zeros{2}
    kv:pushpull('w', {mx.nd.array{1, 1}, mx.nd.array{0.5, 0.5}}, out)
    assert.are.same({-0.5, 0.5}, out:totable())
    kv:barrier()
    local kd = mx.kv.create('dist_device_sync')
    assert.are.equal(1, kd.num_workers)
  end)

  it('a dist store whose MPI plugin is missing says what to install', function()
    local script = [[
      local mx = require 'luamx'
      local ok, err = pcall(mx.kv.create, 'dist_sync')
      io.write(tostring(ok), ' ', tostring(err))
    ]]
    local cmd = ("LUAMX_MPI_PLUGIN=/nonexistent/libluamx_mpi.so luajit -e %q 2>&1"):format(script)
    local p = io.popen(cmd)
    local out = p:read('*a')
    p:close()
    assert.truthy(out:find('false', 1, true), out)
    assert.truthy(out:find('cannot load the MPI plugin /nonexistent/libluamx_mpi.so', 1, true), out)
    assert.truthy(out:find('apt-get install openmpi-bin libopenmpi-dev', 1, true), out)
  end)
end)
