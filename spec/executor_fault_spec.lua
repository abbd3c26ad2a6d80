-- Fault injection over bind, simple_bind, reshape, forward and backward: fail host
-- allocation N for N = 1, 2, ... until the whole sequence succeeds. Every failure must
-- be a clean Lua error that says "out of memory", and after collection the allocator's
-- live-block count must be back where it started (nothing leaks on any failure path).
local ffi = require 'ffi'
local mx = require 'luamx'
local H = require 'helpers'
local C = mx.capi.C

local function net()
  local data = mx.sym.Variable('data')
  local fc = mx.sym.FullyConnected{data = data, num_hidden = 6, name = 'fc'}
  local act = mx.sym.Activation{data = fc, act_type = 'tanh', name = 'act'}
  local fc2 = mx.sym.FullyConnected{data = act, num_hidden = 3, name = 'fc2'}
  return mx.sym.SoftmaxOutput{data = fc2 + fc2, name = 'softmax'}
end

local total_allocs = H.total_allocs

--- Runs body under "fail allocation n" for n = 1, 2, ... until it completes without
-- reaching allocation n; returns the number of failing runs. The live-block count is taken before prepare() and compared
-- once everything the run made is garbage (symbols keep the strings of their last
-- listing, so the comparison is only meaningful after they are collected too).
local function inject(prepare, body)
  local n, failures = 0, 0
  prepare() -- warm up process-wide state (name counters, context cache)
  while true do
    n = n + 1
    H.full_gc()
    local live = H.live_blocks()
    local state = prepare()
    local t0 = total_allocs()
    C.lmx_debug_alloc_fail_at(n)
    local ok, err = pcall(body, state)
    -- a run that absorbed failure n (bind's tensor sharing is skipped when its
    -- allocation fails) goes on to n + 1; the run is complete when allocation n never
    -- happened: fewer than n - 1 made, or n - 1 made and the next one (a probe) fails
    local made = total_allocs() - t0
    local reached = not ok or made >= n
    if ok and made == n - 1 then reached = pcall(mx.nd.zeros, {1}) end
    C.lmx_debug_alloc_fail_at(0)
    state = nil
    H.full_gc()
    assert.are.equal(live, H.live_blocks(), ('allocation %d leaked'):format(n))
    if ok and not reached then return failures, n end
    if not ok then
      failures = failures + 1
      assert.truthy(tostring(err):find('out of memory', 1, true),
                    ('allocation %d: error %q does not mention out of memory'):format(n, tostring(err)))
    end
    assert.is_true(n < 5000, 'no success after 5000 injected failures')
  end
end

local function args()
  return {data = mx.nd.ones{2, 4}, fc_weight = mx.nd.ones{6, 4}, fc_bias = mx.nd.zeros{6},
          fc2_weight = mx.nd.ones{3, 6}, fc2_bias = mx.nd.zeros{3},
          softmax_label = mx.nd.array{0, 1}}
end

describe('out of memory during', function()
  it('bind, forward and backward: every failure is clean and leaks nothing', function()
    local failures = inject(function()
      return {sym = net(), args = args(),
              grads = {fc_weight = mx.nd.zeros{6, 4}, fc2_weight = mx.nd.zeros{3, 6}}}
    end, function(s)
      local exe = s.sym:bind{args = s.args, args_grad = s.grads}
      exe:forward{is_train = true}
      exe:backward()
    end)
    assert.is_true(failures > 20, 'bind made only ' .. failures .. ' allocations')
  end)

  it('simple_bind with group2ctx', function()
    local failures = inject(function() return net() end, function(sym)
      local exe = sym:simple_bind{data = {2, 4}, group2ctx = {g = mx.cpu(1)}}
      exe:forward{is_train = true}
      exe:backward()
    end)
    assert.is_true(failures > 20)
  end)

  it('reshape', function()
    local failures = inject(function() return net():simple_bind{data = {4, 4}} end, function(exe)
      local small = exe:reshape{data = {2, 4}, softmax_label = {2}}
      small:forward{is_train = true}
      small:backward()
    end)
    assert.is_true(failures > 10)
  end)

  it('and a successful step afterwards allocates nothing', function()
    local exe = net():bind{args = args(), args_grad = {fc_weight = mx.nd.zeros{6, 4}}}
    exe:forward{is_train = true}
    exe:backward()
    local before = total_allocs()
    C.lmx_debug_alloc_fail_at(1) -- any allocation in the step would fail it
    local ok, err = pcall(function()
      exe:forward{is_train = true}
      exe:backward()
    end)
    C.lmx_debug_alloc_fail_at(0)
    assert.is_true(ok, tostring(err))
    assert.are.equal(before, total_allocs())
  end)
end)
