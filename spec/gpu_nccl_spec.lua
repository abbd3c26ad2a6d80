-- The 'nccl' kvstore (src/exec/kv_nccl.c): gradients of several GPU contexts summed by
-- NCCL all-reduces, small keys fused into buckets and large ones one by one. Module
-- training with context {gpu(0), gpu(1)} through 'nccl' matches 'device' and one context
-- on the whole batch; pushpull of fused and large keys of several dtypes gives the known
-- sums on every device; several contexts on one GPU ({gpu(0), gpu(0), gpu(1)},
-- {gpu(0), gpu(1), gpu(1), gpu(0)}) are summed on each GPU first, then all-reduced, in
-- pushpull and in Module training; values all on one GPU and CPU contexts take the
-- front's sum; a missing NCCL and a failing all-reduce are reported with their causes.
-- Runs wherever a GPU context exists: on a real GPU (with libnccl2 installed), and in CI
-- under the CUDA simulator (-DLUAMX_CUDA=SIM: two simulated GPUs and a simulated NCCL,
-- kernels/cuda/sim/sim_nccl.cc). Skipped with a message elsewhere. With one GPU the
-- two contexts are both gpu(0), so the duplicate-device path runs instead.
local mx = require 'luamx'
local H = require 'helpers'
local G = require 'gpu_helpers'

if G.skip_without_gpu("the 'nccl' kvstore") then return end
local ngpu = mx.context.num_gpus()

local S = mx.sym
local ramp, batch_of, max_rel, train = G.ramp, G.batch_of, G.max_rel, G.train
local g0, g1 = mx.gpu(0), mx.gpu(ngpu > 1 and 1 or 0)

local function mlp()
  local x = S.FullyConnected{data = S.Variable('data'), num_hidden = 32, name = 'fc1'}
  x = S.Activation{data = x, act_type = 'relu', name = 'relu1'}
  x = S.FullyConnected{data = x, num_hidden = 10, name = 'fc2'}
  return S.SoftmaxOutput{data = x, name = 'softmax'}
end

-- runs `script` in a fresh luajit with `env` set; returns its output
local function child(env, script)
  local p = io.popen(("%s luajit -e %q 2>&1"):format(env, script))
  local out = p:read('*a')
  p:close()
  return out
end

describe("the 'nccl' kvstore", function()
  it('is created by name, rank 0 of 1 worker', function()
    local kv = mx.kv.create('nccl')
    assert.are.equal('nccl', kv.type)
    assert.are.equal(0, kv.rank)
    assert.are.equal(1, kv.num_workers)
    kv:barrier()
  end)

  it('pushpull: fused small keys and a large key of several dtypes give the sums everywhere', function()
    local kv = mx.kv.create('nccl')
    local big = 300000 -- 1.2 MB of float32: over the 1 MiB bucket cap, reduced alone
    local shapes = {a = {3}, b = {2, 2}, c = {4}, h = {3}, big = {big}}
    local dt = {a = 'float32', b = 'float64', c = 'int32', h = 'float16', big = 'float32'}
    local keys = {'a', 'b', 'c', 'h', 'big'}
    for _, k in ipairs(keys) do kv:init(k, mx.nd.zeros(shapes[k], {dtype = dt[k]})) end
    local vals = {
      {mx.nd.array({1, 2, 3}, {ctx = g0}), mx.nd.array({10, 20, 30}, {ctx = g1})},
      {mx.nd.array({1, 2, 3, 4}, {ctx = g0, dtype = 'float64'}):reshape{2, 2},
       mx.nd.array({0.5, 0.5, 0.5, 0.5}, {ctx = g1, dtype = 'float64'}):reshape{2, 2}},
      {mx.nd.array({1, -2, 3, 100}, {ctx = g0, dtype = 'int32'}),
       mx.nd.array({6, 7, -8, 9}, {ctx = g1, dtype = 'int32'})},
      {mx.nd.array({0.5, 1, -2}, {ctx = g0, dtype = 'float16'}),
       mx.nd.array({0.25, 1, 4}, {ctx = g1, dtype = 'float16'})},
      {mx.nd.ones({big}, {ctx = g0}), mx.nd.full({big}, 2, {ctx = g1})},
    }
    local outs = {}
    for i, k in ipairs(keys) do
      outs[i] = {mx.nd.zeros(shapes[k], {ctx = g0, dtype = dt[k]}),
                 mx.nd.zeros(shapes[k], {ctx = g1, dtype = dt[k]})}
    end
    for _ = 1, 2 do -- the second push reuses the communicator and buffers
      kv:pushpull(keys, vals, outs)
      for d = 1, 2 do
        assert.are.same({11, 22, 33}, outs[1][d]:totable())
        assert.are.same({{1.5, 2.5}, {3.5, 4.5}}, outs[2][d]:totable())
        assert.are.same({7, 5, -5, 109}, outs[3][d]:totable())
        assert.are.same({0.75, 2, 2}, outs[4][d]:totable())
        assert.are.equal(3 * big, mx.nd.sum(outs[5][d]):asscalar())
        assert.are.equal('int32', outs[3][d].dtype)
      end
    end
    -- the pushed arrays are left as they were
    assert.are.same({10, 20, 30}, vals[1][2]:totable())
  end)

  it('runs the updater once per key on the summed gradient', function()
    local kv = mx.kv.create('nccl')
    kv:init({'w', 'v'}, {mx.nd.ones{4}, mx.nd.zeros{2}})
    kv:set_optimizer(mx.optimizer.SGD{learning_rate = 0.5, rescale_grad = 1})
    local gw = {mx.nd.full({4}, 1, {ctx = g0}), mx.nd.full({4}, 3, {ctx = g1})}
    local gv = {mx.nd.array({1, 2}, {ctx = g0}), mx.nd.array({3, 4}, {ctx = g1})}
    local ow = {mx.nd.zeros({4}, {ctx = g0}), mx.nd.zeros({4}, {ctx = g1})}
    local ov = {mx.nd.zeros({2}, {ctx = g0}), mx.nd.zeros({2}, {ctx = g1})}
    kv:pushpull({'w', 'v'}, {gw, gv}, {ow, ov})
    assert.are.same({-1, -1, -1, -1}, ow[2]:totable())
    assert.are.same({-2, -3}, ov[1]:totable())
  end)

  it('several contexts per GPU: summed on each GPU, then all-reduced, on every context', function()
    if ngpu < 2 then return pending('needs two GPUs: on one GPU every context is gpu(0)') end
    local kv = mx.kv.create('nccl')
    local big = 300000 -- over the bucket cap: reduced alone, from the local sums
    local shapes = {a = {3}, c = {2}, h = {2}, big = {big}}
    local dt = {a = 'float32', c = 'int32', h = 'float16', big = 'float32'}
    local keys = {'a', 'c', 'h', 'big'}
    for _, k in ipairs(keys) do kv:init(k, mx.nd.zeros(shapes[k], {dtype = dt[k]})) end
    for _, ctxs in ipairs{{g0, g0, g1}, {g0, g1, g1, g0}} do
      local function vals(k, f)
        local t = {}
        for i, ctx in ipairs(ctxs) do t[i] = f(i, ctx) end
        return t
      end
      local v = {
        vals('a', function(i, ctx) return mx.nd.array({i, 10 * i, 100 * i}, {ctx = ctx}) end),
        vals('c', function(i, ctx) return mx.nd.array({i, -i}, {ctx = ctx, dtype = 'int32'}) end),
        vals('h', function(i, ctx) return mx.nd.array({0.5 * i, 1}, {ctx = ctx, dtype = 'float16'}) end),
        vals('big', function(i, ctx) return mx.nd.full({big}, i, {ctx = ctx}) end),
      }
      local outs = {}
      for j, k in ipairs(keys) do
        outs[j] = vals(k, function(_, ctx) return mx.nd.zeros(shapes[k], {ctx = ctx, dtype = dt[k]}) end)
      end
      local n = #ctxs
      local tri = n * (n + 1) / 2 -- 1 + 2 + ... + n
      for _ = 1, 2 do -- the second push reuses the communicator and the buffers
        kv:pushpull(keys, v, outs)
        for d = 1, n do
          assert.are.same({tri, 10 * tri, 100 * tri}, outs[1][d]:totable())
          assert.are.same({tri, -tri}, outs[2][d]:totable())
          assert.are.same({0.5 * tri, n}, outs[3][d]:totable())
          assert.are.equal(tri * big, mx.nd.sum(outs[4][d]):asscalar())
          assert.is_true(ctxs[d] == outs[1][d].context)
        end
      end
      -- the pushed arrays are left as they were (the local sums go to scratch buffers)
      assert.are.same({2, 20, 200}, v[1][2]:totable())
      assert.are.equal(n * big, mx.nd.sum(v[4][n]):asscalar())
    end
  end)

  it('values all on one GPU and CPU contexts take the front sum', function()
    local kv = mx.kv.create('nccl')
    kv:init({'x', 'y', 'z'}, {mx.nd.zeros{2}, mx.nd.zeros{2}, mx.nd.zeros{2}})
    local o = function(ctx) return mx.nd.zeros({2}, {ctx = ctx}) end
    -- gpu(0) twice (and gpu(1)): the local sum, then NCCL
    local dup = {mx.nd.array({1, 2}, {ctx = g0}), mx.nd.array({3, 4}, {ctx = g0}),
                 mx.nd.array({5, 6}, {ctx = g1})}
    local cpu = {mx.nd.array{1, 1}, mx.nd.array{2, 2}, mx.nd.array{3, 3}}
    local two = {mx.nd.array({1, 1}, {ctx = g0}), mx.nd.array({1, 1}, {ctx = g1}),
                 mx.nd.array({1, 1}, {ctx = g1})}
    local outs = {{o(g0), o(g0), o(g1)}, {o(mx.cpu()), o(mx.cpu()), o(mx.cpu())},
                  {o(g0), o(g1), o(g1)}}
    kv:pushpull({'x', 'y', 'z'}, {dup, cpu, two}, {outs[1], outs[2], outs[3]})
    assert.are.same({9, 12}, outs[1][3]:totable())
    assert.are.same({6, 6}, outs[2][1]:totable())
    assert.are.same({3, 3}, outs[3][1]:totable())
    -- every value on gpu(0): no communicator of one rank, the device sums them
    local one = {mx.nd.array({1, 2}, {ctx = g0}), mx.nd.array({3, 4}, {ctx = g0})}
    local oo = {o(g0), o(g0)}
    kv:pushpull('x', one, oo)
    assert.are.same({4, 6}, oo[2]:totable())
  end)

  it('reports wrong shapes and dtypes as the sum does, naming the key', function()
    local kv = mx.kv.create('nccl')
    kv:init('w', mx.nd.zeros{2})
    H.raises(function() kv:push('w', {mx.nd.zeros({2}, {ctx = g0}), mx.nd.zeros({3}, {ctx = g1})}) end,
      "kvstore 'nccl': push: key 'w'", 'value 2 has shape (3,), expected (2,)')
    H.raises(function()
      kv:push('w', {mx.nd.zeros({2}, {ctx = g0}), mx.nd.zeros({2}, {ctx = g1, dtype = 'float64'})})
    end, "key 'w'", 'value 2 has dtype float64, expected float32')
  end)

  -- Runs `body` in a fresh luajit with `env` set, after `mx` and a new 'nccl' kvstore `kv`;
  -- `body` leaves pcall's results in `ok, err`. Returns the child's "ok err" output, or nil
  -- with the test marked pending when the push succeeded (a real NCCL is installed: the
  -- LUAMX_SIM_NCCL* variables apply to the simulator only).
  local function failing_push(env, body)
    local out = child(env, "local mx = require 'luamx'\nlocal kv = mx.kv.create('nccl')\n" .. body ..
      "\nio.write(tostring(ok), ' ', tostring(err))\n")
    if not out:find('^true') then return out end
    pending(('a real NCCL is installed: %s applies to the simulator only'):format(env:match('^[%w_]+')))
    return nil
  end

  it('a missing NCCL names the library and the package (simulator)', function()
    if ngpu < 2 then return pending('needs two GPUs: one GPU never opens NCCL') end
    local out = failing_push('LUAMX_SIM_NCCL=missing', [[
      kv:init('w', mx.nd.zeros{2})
      local ok, err = pcall(kv.push, kv, 'w', {mx.nd.ones({2}, {ctx = mx.gpu(0)}),
                                               mx.nd.ones({2}, {ctx = mx.gpu(1)})})
    ]])
    if not out then return end
    assert.truthy(out:find("kvstore 'nccl': push: NCCL (libnccl.so.2", 1, true), out)
    assert.truthy(out:find('install the package libnccl2', 1, true), out)
  end)

  it('a failing all-reduce names the call, the GPUs and NCCL\'s message (simulator)', function()
    if ngpu < 2 then return pending('needs two GPUs: one GPU never opens NCCL') end
    local out = failing_push('LUAMX_SIM_NCCL_FAIL=2', [[
      kv:init({'a', 'b'}, {mx.nd.zeros{2}, mx.nd.zeros{2}})
      local function v() return {mx.nd.ones({2}, {ctx = mx.gpu(0)}), mx.nd.ones({2}, {ctx = mx.gpu(1)})} end
      local ok, err = pcall(kv.push, kv, {'a', 'b'}, {v(), v()})
    ]])
    if not out then return end
    assert.truthy(out:find("kvstore 'nccl': push: a bucket of 2 keys ('a', ...)", 1, true), out)
    assert.truthy(out:find('NCCL: ncclAllReduce on gpu(0),gpu(1) failed: unhandled system error', 1, true), out)
  end)

  it('several contexts on one GPU go through NCCL too: its failure is reported (simulator)', function()
    if ngpu < 2 then return pending('needs two GPUs: one GPU never opens NCCL') end
    local out = failing_push('LUAMX_SIM_NCCL_FAIL=2', [[
      kv:init('w', mx.nd.zeros{2})
      local g0, g1 = mx.gpu(0), mx.gpu(1)
      local ok, err = pcall(kv.push, kv, 'w', {mx.nd.ones({2}, {ctx = g0}),
        mx.nd.ones({2}, {ctx = g1}), mx.nd.ones({2}, {ctx = g1}), mx.nd.ones({2}, {ctx = g0})})
    ]])
    if not out then return end
    assert.truthy(out:find("kvstore 'nccl': push: key 'w'", 1, true), out)
    assert.truthy(out:find('NCCL: ncclAllReduce on gpu(0),gpu(1) failed: unhandled system error', 1, true), out)
  end)
end)

describe("the 'nccl' kvstore under allocation failures", function()
  local ffi = require 'ffi'
  local C = mx.capi.C
  after_each(function() C.lmx_debug_alloc_fail_at(0) end)

  local function live_blocks()
    local n = ffi.new('int64_t[1]')
    C.lmx_debug_alloc_stats(n, nil, nil)
    return tonumber(n[0])
  end
  local function full_gc() collectgarbage('collect'); collectgarbage('collect') end

  it('a first push failing at its Nth allocation fails cleanly, then works; nothing leaks', function()
    local function two(shape, a, b)
      return {mx.nd.full(shape, a, {ctx = g0}), mx.nd.full(shape, b, {ctx = g1})}
    end
    local vals = {two({3}, 1, 2), two({5}, 3, 4), two({300000}, 1, 1)}
    local outs = {two({3}, 0, 0), two({5}, 0, 0), two({300000}, 0, 0)}
    local keys = {'s', 't', 'big'}
    local function store()
      local kv = mx.kv.create('nccl')
      kv:init(keys, {mx.nd.zeros{3}, mx.nd.zeros{5}, mx.nd.zeros{300000}})
      return kv
    end
    store():pushpull(keys, vals, outs) -- warm up what a process makes once
    full_gc()
    local before = live_blocks()
    local kv = store()
    local n = 0
    while true do
      n = n + 1
      assert(n < 200, 'the push never succeeded')
      C.lmx_debug_alloc_fail_at(n)
      local ok, err = pcall(kv.pushpull, kv, keys, vals, outs)
      C.lmx_debug_alloc_fail_at(0)
      if ok then break end
      assert.truthy(tostring(err):find('out of memory', 1, true), tostring(err))
    end
    assert.is_true(n > 1, 'no allocation was ever made, so nothing was tested')
    assert.are.same({3, 3, 3}, outs[1][2]:totable())
    assert.are.same({7, 7, 7, 7, 7}, outs[2][1]:totable())
    assert.are.equal(600000, mx.nd.sum(outs[3][2]):asscalar())
    kv = nil -- luacheck: ignore
    full_gc()
    assert.are.equal(before, live_blocks())
  end)
end)

describe("Module with two GPU contexts and kvstore 'nccl'", function()
  it("matches 'device' and one context on the whole batch", function()
    local net, batch = mlp(), batch_of(ramp({8, 20}, 4), ramp({8}, 1, 10))
    local p = G.start_params(net, batch, 5)
    local two = {g0, g1}
    local an = train(net, two, batch, p, 3, 'nccl')
    local ad = train(net, two, batch, p, 3, 'device')
    local a1 = train(net, g0, batch, p, 3)
    for name, w in pairs(a1) do
      assert.is_true(max_rel(an[name], ad[name]) < 1e-5, ('parameter %s: nccl vs device'):format(name))
      assert.is_true(max_rel(an[name], w) < 1e-4, ('parameter %s: nccl vs one context'):format(name))
    end
  end)

  for _, ctxs in ipairs{{g0, g0, g1}, {g0, g1, g1, g0}} do
    local names = {}
    for i, c in ipairs(ctxs) do names[i] = tostring(c) end
    local what = '{' .. table.concat(names, ', ') .. '}'
    it(("with contexts %s matches 'device' and one context on the whole batch"):format(what), function()
      local net, batch = mlp(), batch_of(ramp({12, 20}, 6), ramp({12}, 5, 10))
      local p = G.start_params(net, batch, 7)
      local an = train(net, ctxs, batch, p, 3, 'nccl')
      local ad = train(net, ctxs, batch, p, 3, 'device')
      local a1 = train(net, g0, batch, p, 3)
      for name, w in pairs(a1) do
        assert.is_true(max_rel(an[name], ad[name]) < 1e-5, ('parameter %s: nccl vs device'):format(name))
        assert.is_true(max_rel(an[name], w) < 1e-4, ('parameter %s: nccl vs one context'):format(name))
      end
    end)
  end

  it('also with the updates on the devices (MXNET_UPDATE_ON_KVSTORE=0: push, then pull the sums)', function()
    local ffi = require 'ffi'
    pcall(ffi.cdef, 'int setenv(const char *, const char *, int); int unsetenv(const char *);')
    local net, batch = mlp(), batch_of(ramp({8, 20}, 2), ramp({8}, 3, 10))
    local p = G.start_params(net, batch, 5)
    ffi.C.setenv('MXNET_UPDATE_ON_KVSTORE', '0', 1)
    local ok, an = pcall(train, net, {g0, g1}, batch, p, 3, 'nccl')
    ffi.C.unsetenv('MXNET_UPDATE_ON_KVSTORE')
    assert(ok, an)
    local a1 = train(net, g0, batch, p, 3)
    for name, w in pairs(a1) do
      assert.is_true(max_rel(an[name], w) < 1e-4, ('parameter %s: nccl vs one context'):format(name))
    end
  end)
end)
