-- The engine allocator's block cache as the array pool of eager code (issue 15): the
-- arrays, tape nodes and views a recorded step makes come back, once the collector has
-- returned the previous step's garbage, from the blocks that garbage freed, so a steady
-- eager training step makes no engine allocation. It must be invisible otherwise: the
-- same numbers with the cache on and off, and a kept block is only handed out after
-- its array is gone (a live result never shares memory with a later one).
local ffi = require 'ffi'
local mx = require 'luamx'
local H = require 'helpers'
local C = mx.capi.C
local nn = mx.gluon.nn

-- switches the cache (1 on, 0 off and emptied); returns the previous setting
local function cache(on)
  local was = ffi.new('int[1]')
  assert(C.lmx_debug_alloc_cache(on, was, nil, nil, nil) == 0)
  return was[0]
end

local function hits()
  local h = ffi.new('int64_t[1]')
  C.lmx_debug_alloc_cache(-1, nil, h, nil, nil)
  return tonumber(h[0])
end

-- A small MLP (the W1 shape scaled down) with fixed starting values, its data and one
-- eager training step (record, backward, Trainer with momentum).
local function setup()
  local net = nn.Sequential():add(nn.Dense(32, {activation = 'relu', in_units = 20}),
    nn.Dense(16, {activation = 'relu', in_units = 32}), nn.Dense(5, {in_units = 16}))
  net:initialize(mx.init.Zero())
  for i, p in ipairs(net:collect_params():list()) do
    local a = p:data()
    local n = a.size
    local vals = {}
    for j = 1, n do vals[j] = math.sin(i * 7 + j * 0.37) * 0.3 end
    a:set(mx.nd.array(vals):reshape(a.shape))
  end
  local trainer = mx.gluon.Trainer(net:collect_params(), 'sgd', {learning_rate = 0.1, momentum = 0.9})
  local xs = {}
  for j = 1, 8 * 20 do xs[j] = math.cos(j * 0.11) end
  local x = mx.nd.array(xs):reshape{8, 20}
  local y = mx.nd.array{0, 1, 2, 3, 4, 0, 1, 2}
  local function step()
    local out = mx.autograd.record(function() return mx.nd.SoftmaxOutput(net(x), y) end)
    out:backward()
    trainer:step(8)
  end
  return net, step
end

local function params_of(net)
  local res = {}
  for i, p in ipairs(net:collect_params():list()) do res[i] = p:data():toflat() end
  return res
end

describe('the allocator block cache (array pool)', function()
  local was
  before_each(function() was = cache(1) end)
  after_each(function() cache(was) end)

  it('a steady eager training step makes no engine allocation', function()
    local net, step = setup()
    for _ = 1, 3 do step() end
    for s = 1, 5 do
      H.full_gc() -- the previous step's garbage back in the cache
      local before, h0 = H.total_allocs(), hits()
      step()
      local made = H.total_allocs() - before
      assert(made == 0, ('step %d: %d engine allocations'):format(s, made))
      local reused = hits() - h0
      assert(reused > 20, ('step %d: only %d blocks from the cache'):format(s, reused))
    end
    -- without the cache the same step allocates (the measure above can fail)
    cache(0)
    H.full_gc()
    local before = H.total_allocs()
    step()
    local made = H.total_allocs() - before
    assert(made > 20, ('a step with the cache off made %d allocations'):format(made))
    assert.is_true(#params_of(net) == 6)
  end)

  it('trains to the same parameters with the cache on and off', function()
    local function run(on)
      cache(on)
      local net, step = setup()
      for _ = 1, 6 do
        step()
        collectgarbage('collect') -- arrays die between steps: their blocks are reused
      end
      return params_of(net)
    end
    local off, on = run(0), run(1)
    for i = 1, #off do H.near(on[i], off[i]) end -- bitwise equal
  end)

  it('never hands out the memory of a live array', function()
    local x = mx.nd.array{0.5, -1, 2, 0.25}
    x:attach_grad()
    local kept = mx.autograd.record(function() return mx.nd.tanh(x * 2) end)
    local want = kept:toflat()
    local addr = tostring(ffi.cast('uintptr_t', kept:data()))
    for round = 1, 20 do
      local v = mx.autograd.record(function()
        local t = x
        for _ = 1, 10 do t = mx.nd.tanh(t * 0.5) + 1 end
        return t
      end)
      v:backward()
      for _ = 1, 10 do
        local u = mx.nd.tanh(x) -- same shape and dtype as kept
        assert(tostring(ffi.cast('uintptr_t', u:data())) ~= addr,
          ('round %d: a new array got the memory of a live one'):format(round))
        u:fill(-7)
      end
      collectgarbage('collect')
      H.near(kept:toflat(), want)
    end
    -- and the kept result still differentiates
    kept:backward()
    local g = x.grad:toflat()
    for i, v in ipairs{0.5, -1, 2, 0.25} do
      local t = math.tanh(2 * v)
      assert(math.abs(g[i] - 2 * (1 - t * t)) < 1e-5, ('grad %d: %g'):format(i, g[i]))
    end
  end)

  it('lmx_debug_alloc_cache names a bad setting', function()
    assert.are_not.equal(0, C.lmx_debug_alloc_cache(5, nil, nil, nil, nil))
    assert.truthy(ffi.string(C.lmx_last_error()):find('lmx_debug_alloc_cache: on must be -1, 0 or 1, got 5', 1, true))
    -- switching off gives every kept block back
    collectgarbage('collect')
    cache(0)
    local n = ffi.new('int64_t[2]')
    C.lmx_debug_alloc_cache(-1, nil, nil, n, n + 1)
    assert.are.equal(0, tonumber(n[0]))
    assert.are.equal(0, tonumber(n[1]))
  end)
end)
