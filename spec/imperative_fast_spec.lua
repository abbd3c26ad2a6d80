-- The fast paths of eager code (issue 15): mx.nd.<Op> calls find their prepared call
-- through a per-op lookup tree instead of rebuilding a key string, and backward writes a
-- write-variable's gradient straight into x.grad when nothing else uses that array. Both
-- must be invisible: the same results and errors as the general path, the same gradients
-- whatever aliasing the caller sets up, and no engine allocation for a repeated call
-- whose outputs are given.
local ffi = require 'ffi'
local mx = require 'luamx'
local H = require 'helpers'

local function flat(a) return a:toflat() end

describe('mx.nd.<Op> fast calls', function()
  it('give the same results for any order of the keyword table and every argument form', function()
    local x = mx.nd.array{{-1, 2}, {3, -4}}
    local w = mx.nd.array{{1, 0}, {0, 1}, {1, 1}}
    local b = mx.nd.array{0.5, -0.5, 1}
    -- one table built in two insertion orders, positional and named inputs
    local t1 = {data = x, weight = w, bias = b, num_hidden = 3}
    local t2 = {}
    t2.num_hidden = 3; t2.bias = b; t2.weight = w; t2.data = x
    local want = {-0.5, 1.5, 2, 3.5, -4.5, 0}
    H.near(flat(mx.nd.FullyConnected(t1)), want)
    H.near(flat(mx.nd.FullyConnected(t2)), want)
    H.near(flat(mx.nd.FullyConnected(x, w, b, {num_hidden = 3})), want)
    H.near(flat(mx.nd.FullyConnected(x, {weight = w, bias = b, num_hidden = 3})), want)
    -- a scalar parameter that changes every call, NaN included
    for _, s in ipairs {0.5, 2, -3, 0.5} do
      H.near(flat(mx.nd._mul_scalar(x, {scalar = s})), {-s, 2 * s, 3 * s, -4 * s})
    end
    local n = flat(mx.nd._plus_scalar(x, {scalar = 0 / 0}))
    for i = 1, 4 do assert(n[i] ~= n[i], 'NaN scalar: element ' .. i .. ' is ' .. n[i]) end
    -- list parameters, `out` (one array or a list), several outputs
    H.near(flat(mx.nd.transpose(x, {axes = {1, 0}})), {-1, 3, 2, -4})
    local o = mx.nd.zeros{2, 2}
    assert(mx.nd.relu(x, {out = o}) == o)
    H.near(flat(o), {0, 2, 3, 0})
    assert(mx.nd.relu(x, {out = {o}}) == o)
    local parts = mx.nd.SliceChannel(x, {num_outputs = 2, axis = 0})
    assert(#parts == 2)
    H.near(flat(parts[2]), {3, -4})
  end)

  it('raise the general path\'s errors, naming the op and the argument', function()
    local x = mx.nd.array{1, 2}
    H.raises(function() mx.nd.Activation(x, {act_type = 'nope'}) end, 'Activation', 'act_type')
    H.raises(function() mx.nd.tanh(x, x) end, 'mx.nd.tanh', '2 arrays given', 'takes 1 inputs')
    H.raises(function() mx.nd.tanh() end, 'mx.nd.tanh', "missing input 'data'")
    H.raises(function() mx.nd._mul_scalar(x, {scalar = setmetatable({}, {})}) end,
      'mx.nd._mul_scalar', "parameter 'scalar'")
    H.raises(function() mx.nd.tanh(x, {[2] = 3}) end, 'mx.nd.tanh', 'entry [2]')
    for _ = 1, 2 do -- also once the op's parameterless call is known
      H.raises(function() mx.nd.tanh(x, {foo = print}) end, 'mx.nd.tanh', "parameter 'foo'",
        'a number, string, boolean or list')
    end
    H.raises(function() mx.nd.relu(x, {out = mx.nd.zeros{3}}) end, 'relu', 'output 0',
      'expected (2,)')
    local freed = mx.nd.array{1}
    freed:free()
    H.raises(function() mx.nd.tanh(freed) end, 'freed')
    -- and the calls still work afterwards
    H.near(flat(mx.nd.Activation(x, {act_type = 'relu'})), {1, 2})
  end)

  it('allocate nothing in the engine when repeated with every output given', function()
    local x, o = mx.nd.array{-1, 2, 3}, mx.nd.zeros{3}
    local args = {act_type = 'relu', out = o}
    mx.nd.Activation(x, args)
    mx.nd._mul_scalar(x, {scalar = 0.25, out = o})
    local before = H.total_allocs()
    for _ = 1, 50 do
      mx.nd.Activation(x, args)
      mx.nd._mul_scalar(x, {scalar = 0.25, out = o})
    end
    assert(H.total_allocs() == before, ('%d engine allocations in 100 calls'):format(
      H.total_allocs() - before))
    H.near(flat(o), {-0.25, 0.5, 0.75})
  end)
end)

describe('engine allocations of eager calls', function()
  -- the budget issue 15 brought it to: an unrecorded call on a small host array allocates
  -- one block (its result's header, storage header and data); a recorded one adds the
  -- tape node (its saved-array lists inside) and the node's view of the result. Counted with the
  -- allocator's block cache off (with it on, these come from freed blocks once the
  -- collector has returned some: spec/autograd_pool_spec.lua)
  local function allocs_per_call(fn, n)
    local before = H.total_allocs()
    for _ = 1, n do fn() end
    return (H.total_allocs() - before) / n
  end
  local was = ffi.new('int[1]')
  before_each(function() mx.capi.C.lmx_debug_alloc_cache(0, was, nil, nil, nil) end)
  after_each(function() mx.capi.C.lmx_debug_alloc_cache(was[0], nil, nil, nil, nil) end)

  it('are 1 per unrecorded and 3 per recorded unary call', function()
    local x = mx.nd.array{0.5, -1, 2}
    x:attach_grad()
    mx.nd.tanh(x)
    assert.are.equal(1, allocs_per_call(function() mx.nd.tanh(x) end, 20))
    local v = mx.autograd.record(function() return mx.nd.tanh(x) end)
    local per = mx.autograd.record(function()
      return allocs_per_call(function() v = mx.nd.tanh(v) end, 20)
    end)
    assert.are.equal(3, per)
    v:backward() -- and the chain still differentiates: d tanh^21(x)
    local y, d = {0.5, -1, 2}, {1, 1, 1}
    for _ = 1, 21 do
      for i = 1, 3 do
        local t = math.tanh(y[i])
        d[i], y[i] = d[i] * (1 - t * t), t
      end
    end
    H.near(flat(x.grad), d, 1e-5)
  end)
end)

describe('backward into x.grad', function()
  it('writes the gradient into the array x.grad returned before backward', function()
    local x = mx.nd.array{1, 2, 3}
    x:attach_grad()
    local g = x.grad
    mx.autograd.record(function() return mx.nd.sum(x * x + mx.nd.sin(x)) end):backward()
    local c = {}
    for i, v in ipairs {1, 2, 3} do c[i] = 2 * v + math.cos(v) end
    H.near(flat(g), c, 1e-6)
    -- a second step overwrites (grad_req write), also when nothing reaches x
    local y = mx.nd.array{1, 1, 1}
    y:attach_grad()
    mx.autograd.record(function() return mx.nd.sum(x * 3 + mx.nd.BlockGrad(x) + y) end):backward()
    H.near(flat(g), {3, 3, 3})
  end)

  it('stays right when x.grad is itself an input of the recorded graph', function()
    -- q = sum(x . G) with G = x.grad: dq/dx = ones . G^T, read from G while it is written
    local x = mx.nd.array{{1, 2}, {3, 4}}
    x:attach_grad()
    local G = x.grad
    mx.nd.array{{1, 2}, {3, 5}}:copyto(G)
    mx.autograd.record(function() return mx.nd.sum(mx.nd.dot(x, G)) end):backward()
    H.near(flat(G), {3, 8, 3, 8})
  end)

  it('keeps the last variable\'s gradient when variables share one gradient array', function()
    local a, b = mx.nd.array{1, 1}, mx.nd.array{1, 1}
    local G = mx.nd.zeros{2}
    mx.autograd.mark_variables({a, b}, {G, G})
    mx.autograd.record(function() return mx.nd.sum(a * 2 + b * 3) end):backward()
    H.near(flat(G), {3, 3})
  end)

  it('adds for grad_req add and leaves a shared head gradient intact', function()
    local x = mx.nd.array{1, 2}
    x:attach_grad('add')
    for _ = 1, 2 do mx.autograd.record(function() return mx.nd.sum(x * x) end):backward() end
    H.near(flat(x.grad), {4, 8})
    -- the head gradient is z.grad itself: dz = head . W^T reads it while z's is made
    local z, W = mx.nd.array{{1, 2}}, mx.nd.array{{1, 2}, {3, 4}}
    z:attach_grad()
    local head = z.grad
    mx.nd.array{{10, 20}}:copyto(head)
    mx.autograd.record(function() return mx.nd.dot(z, W) end):backward(head)
    H.near(flat(z.grad), {50, 110})
  end)
end)
