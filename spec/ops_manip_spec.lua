-- ops_manip_spec.lua — the tensor-manipulation operators of issue 14 (tile, repeat, stack,
-- broadcast_to / broadcast_axis (broadcast_axes) / broadcast_like, reshape_like,
-- slice_like, diag, shape_array, size_array): forward values from the examples of
-- MXNet 1.9's documentation of each operator, in float32, float64 and int32; gradients
-- against sums worked by hand (the finite-difference checks are tests/test_gradcheck.c's);
-- JSON round trips; bad parameters and shapes with their messages; and the load error of
-- an operator luamx does not have (a plugin op, Custom without a registered op_type).
local mx = require 'luamx'
local H = require 'helpers'
local op = mx.nd.op

local function arr(t, dt) return mx.nd.array(t, { dtype = dt or 'float32' }) end

local function err(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, 'expected an error')
  return tostring(e)
end

local X = { { 1, 2 }, { 3, 4 } }

describe('tile and repeat (MXNet docs)', function()
  for _, dt in ipairs { 'float32', 'float64', 'int32' } do
    it('tile promotes reps or data by prepending 1s (' .. dt .. ')', function()
      local x = arr(X, dt)
      assert.are.same({ { 1, 2, 1, 2, 1, 2 }, { 3, 4, 3, 4, 3, 4 }, { 1, 2, 1, 2, 1, 2 },
        { 3, 4, 3, 4, 3, 4 } }, op.tile(x, { reps = { 2, 3 } }):totable())
      assert.are.same({ { 1, 2, 1, 2 }, { 3, 4, 3, 4 } }, op.tile(x, { reps = { 2 } }):totable())
      local y = op.tile(x, { reps = { 2, 2, 3 } })
      assert.are.same({ 2, 4, 6 }, y.shape)
      local plane = { { 1, 2, 1, 2, 1, 2 }, { 3, 4, 3, 4, 3, 4 }, { 1, 2, 1, 2, 1, 2 },
        { 3, 4, 3, 4, 3, 4 } }
      assert.are.same({ plane, plane }, y:totable())
      assert.are.equal(dt, y.dtype)
    end)
    it('repeat flattens without an axis, repeats along one otherwise (' .. dt .. ')', function()
      local x = arr(X, dt)
      assert.are.same({ 1, 1, 2, 2, 3, 3, 4, 4 }, op['repeat'](x, { repeats = 2 }):totable())
      assert.are.same({ { 1, 1, 2, 2 }, { 3, 3, 4, 4 } },
        op['repeat'](x, { repeats = 2, axis = 1 }):totable())
      assert.are.same({ { 1, 2 }, { 1, 2 }, { 3, 4 }, { 3, 4 } },
        op['repeat'](x, { repeats = 2, axis = 0 }):totable())
      assert.are.same({ { 1, 1, 2, 2 }, { 3, 3, 4, 4 } },
        op['repeat'](x, { repeats = 2, axis = -1 }):totable())
    end)
  end

  it('sum their gradients over the replicas', function()
    local x = arr(X, 'float64')
    x:attach_grad()
    -- weights 1..24 over the (4, 6) output
    local w = mx.nd.arange(1, 25, 1, { dtype = 'float64' }):reshape { 4, 6 }
    mx.autograd.record(function() return mx.nd.sum(op.tile(x, { reps = { 2, 3 } }) * w) end)
      :backward()
    -- x[0][0] feeds (r, c) for r in {0, 2}, c in {0, 2, 4}: weights 1+3+5 + 13+15+17;
    -- x[1][0] rows 1 and 3: 7+9+11 + 19+21+23
    assert.are.same({ { 54, 60 }, { 90, 96 } }, x.grad:totable())
    w = mx.nd.arange(1, 13, 1, { dtype = 'float64' }):reshape { 2, 6 }
    mx.autograd.record(function()
      return mx.nd.sum(op['repeat'](x, { repeats = 3, axis = 1 }) * w)
    end):backward()
    assert.are.same({ { 6, 15 }, { 24, 33 } }, x.grad:totable())
  end)

  it('reject bad reps and repeats, naming the operator and the parameter', function()
    local x = arr(X)
    H.raises(function() return op.tile(x, { reps = { 2, 0 } }) end,
      "tile", "parameter 'reps': expected positive entries, got 0 at position 1")
    H.raises(function() return op['repeat'](x, { repeats = 0 }) end, "repeat", "repeats")
    H.raises(function() return op['repeat'](x, { repeats = 2, axis = 2 }) end,
      "repeat", "parameter 'axis': axis 2 is out of range for 2-D input")
    assert.are.same({ 2, 2 }, x.shape) -- still usable
  end)
end)

describe('stack (MXNet docs)', function()
  it('joins along a new axis, with its gradient split back', function()
    local x, y = arr({ 1, 2 }, 'float64'), arr({ 3, 4 }, 'float64')
    assert.are.same({ { 1, 2 }, { 3, 4 } }, op.stack(x, y):totable())
    assert.are.same({ { 1, 3 }, { 2, 4 } }, op.stack(x, y, { axis = 1 }):totable())
    assert.are.same({ { 1, 3 }, { 2, 4 } }, op.stack(x, y, { axis = -1 }):totable())
    x:attach_grad()
    y:attach_grad()
    local w = arr({ { 1, 2 }, { 3, 4 } }, 'float64')
    mx.autograd.record(function() return mx.nd.sum(op.stack(x, y, { axis = 1 }) * w) end)
      :backward()
    assert.are.same({ 1, 3 }, x.grad:totable())
    assert.are.same({ 2, 4 }, y.grad:totable())
  end)
  it('refuses inputs of different shapes', function()
    H.raises(function() return op.stack(arr { 1, 2 }, arr { 1, 2, 3 }) end,
      'stack', "input 'arg1'", 'expected shape (2,), got (3,)')
  end)
end)

describe('broadcast_to, broadcast_axis, broadcast_like (MXNet docs)', function()
  it('broadcast_to replicates dims of size 1; 0 keeps a dim', function()
    assert.are.same({ { 1, 2, 3 }, { 1, 2, 3 } },
      op.broadcast_to(arr { { 1, 2, 3 } }, { shape = { 2, 3 } }):totable())
    local y = op.broadcast_to(mx.nd.zeros { 2, 1, 3 }, { shape = { 0, 2, 0 } })
    assert.are.same({ 2, 2, 3 }, y.shape)
    H.raises(function() return op.broadcast_to(arr { { 1, 2, 3 } }, { shape = { 2, 4 } }) end,
      'broadcast_to', 'input shape (1,3) cannot be broadcast to size 4 on axis 1')
    H.raises(function() return op.broadcast_to(arr { { 1, 2, 3 } }, { shape = { 3 } }) end,
      'broadcast_to', "parameter 'shape': expected 2 dims like input 'data' (1,3), got (3,)")
  end)
  it('broadcast_axis and its alias broadcast_axes', function()
    local x = arr { { { 1 }, { 2 } } }
    assert.are.same({ { { 1, 1, 1 }, { 2, 2, 2 } } },
      op.broadcast_axis(x, { axis = 2, size = 3 }):totable())
    local both = { { { 1, 1, 1 }, { 2, 2, 2 } }, { { 1, 1, 1 }, { 2, 2, 2 } } }
    assert.are.same(both, op.broadcast_axis(x, { axis = { 0, 2 }, size = { 2, 3 } }):totable())
    assert.are.same(both, op.broadcast_axes(x, { axis = { 0, 2 }, size = { 2, 3 } }):totable())
    assert.are.equal('broadcast_axis', mx.op.info('broadcast_axes').name)
    H.raises(function() return op.broadcast_axis(x, { axis = 1, size = 3 }) end,
      'broadcast_axis', 'axis 1 to broadcast must have size 1, got 2')
    H.raises(function() return op.broadcast_axis(x, { axis = { 0, 2 }, size = { 3 } }) end,
      'broadcast_axis', "parameters 'axis' and 'size': expected the same length, got 2 and 1")
  end)
  it('broadcast_like, whole and by axes; rhs gets a zero gradient', function()
    local a, b = arr({ { 1, 2, 3 } }, 'float64'), arr({ { 5, 6, 7 }, { 7, 8, 9 } }, 'float64')
    assert.are.same({ { 1, 2, 3 }, { 1, 2, 3 } }, op.broadcast_like(a, b):totable())
    assert.are.same({ 9, 9, 9, 9, 9 }, op.broadcast_like(arr { 9 }, arr { 1, 2, 3, 4, 5 },
      { lhs_axes = { 0 }, rhs_axes = { -1 } }):totable())
    a:attach_grad()
    b:attach_grad()
    local w = arr({ { 1, 2, 3 }, { 10, 20, 30 } }, 'float64')
    mx.autograd.record(function() return mx.nd.sum(op.broadcast_like(a, b) * w) end):backward()
    assert.are.same({ { 11, 22, 33 } }, a.grad:totable())
    assert.are.same({ { 0, 0, 0 }, { 0, 0, 0 } }, b.grad:totable())
    H.raises(function() return op.broadcast_like(a, b, { lhs_axes = { 0 } }) end,
      'broadcast_like', "'lhs_axes' and 'rhs_axes': expected both None or of the same length")
  end)
end)

describe('reshape_like, slice_like, diag (MXNet docs)', function()
  it('reshape_like, whole and with begin/end', function()
    local x = arr { { 1, 2, 3 }, { 4, 5, 6 } }
    assert.are.same({ { 1, 2 }, { 3, 4 }, { 5, 6 } },
      op.reshape_like(x, mx.nd.zeros { 3, 2 }):totable())
    assert.are.same({ 15, 2, 7 }, op.reshape_like(mx.nd.zeros { 30, 7 }, mx.nd.zeros { 15, 2, 4 },
      { lhs_begin = 0, lhs_end = 1, rhs_begin = 0, rhs_end = 2 }).shape)
    assert.are.same({ 15 }, op.reshape_like(mx.nd.zeros { 3, 5 }, mx.nd.zeros { 1, 15, 4 },
      { lhs_begin = 0, lhs_end = 2, rhs_begin = 1, rhs_end = 2 }).shape)
    H.raises(function() return op.reshape_like(x, mx.nd.zeros { 4, 2 }) end, 'reshape_like',
      "cannot reshape dims [0, 2) of input 'lhs' (2,3) (6 elements) like dims [0, 2) of "
      .. "input 'rhs' (4,2) (8 elements)")
    H.raises(function() return op.reshape_like(x, x, { lhs_begin = 3 }) end, 'reshape_like',
      "parameters 'lhs_begin' and 'lhs_end'")
  end)
  it('slice_like on all axes and on some; its gradient scatters', function()
    local x = arr({ { 1, 2, 3, 4 }, { 5, 6, 7, 8 }, { 9, 10, 11, 12 } }, 'float64')
    local y = mx.nd.zeros({ 2, 3 }, { dtype = 'float64' })
    assert.are.same({ { 1, 2, 3 }, { 5, 6, 7 } }, op.slice_like(x, y):totable())
    assert.are.same({ { 1, 2, 3 }, { 5, 6, 7 } }, op.slice_like(x, y, { axes = { 0, 1 } }):totable())
    assert.are.same({ { 1, 2, 3, 4 }, { 5, 6, 7, 8 } }, op.slice_like(x, y, { axes = { 0 } }):totable())
    assert.are.same({ { 1, 2, 3 }, { 5, 6, 7 }, { 9, 10, 11 } },
      op.slice_like(x, y, { axes = { -1 } }):totable())
    x:attach_grad()
    mx.autograd.record(function() return mx.nd.sum(op.slice_like(x, y) * 2) end):backward()
    assert.are.same({ { 2, 2, 2, 0 }, { 2, 2, 2, 0 }, { 0, 0, 0, 0 } }, x.grad:totable())
    H.raises(function() return op.slice_like(y, x) end, 'slice_like',
      "input 'shape_like' (3,4) is larger than input 'data' (2,3) on axis 0")
  end)
  it('diag extracts (2-D, n-D) and builds (1-D)', function()
    local x = arr { { 1, 2, 3 }, { 4, 5, 6 } }
    assert.are.same({ 1, 5 }, op.diag(x):totable())
    assert.are.same({ 2, 6 }, op.diag(x, { k = 1 }):totable())
    assert.are.same({ 4 }, op.diag(x, { k = -1 }):totable())
    local v = arr { 1, 2, 3 }
    assert.are.same({ { 1, 0, 0 }, { 0, 2, 0 }, { 0, 0, 3 } }, op.diag(v):totable())
    assert.are.same({ { 0, 1, 0, 0 }, { 0, 0, 2, 0 }, { 0, 0, 0, 3 }, { 0, 0, 0, 0 } },
      op.diag(v, { k = 1 }):totable())
    assert.are.same({ { 0, 0, 0, 0 }, { 1, 0, 0, 0 }, { 0, 2, 0, 0 }, { 0, 0, 3, 0 } },
      op.diag(v, { k = -1 }):totable())
    local t = arr { { { 1, 2 }, { 3, 4 } }, { { 5, 6 }, { 7, 8 } } }
    assert.are.same({ { 1, 7 }, { 2, 8 } }, op.diag(t):totable())
    assert.are.same({ { 3 }, { 4 } }, op.diag(t, { k = 1 }):totable())
    assert.are.same({ { 1, 4 }, { 5, 8 } }, op.diag(t, { axis1 = -2, axis2 = -1 }):totable())
    H.raises(function() return op.diag(x, { axis1 = 1, axis2 = -1 }) end, 'diag',
      "parameters 'axis1' and 'axis2': expected different axes, got 1 for both")
    H.raises(function() return op.diag(x, { k = 3 }) end, 'diag',
      "parameter 'k': diagonal 3 of input 'data' (2,3) on axes 0 and 1 is empty")
  end)
  it('shape_array and size_array write int64', function()
    local x = arr { { 1, 2, 3, 4 }, { 5, 6, 7, 8 } }
    local s, n = op.shape_array(x), op.size_array(x)
    assert.are.same({ 2, 4 }, s:totable())
    assert.are.equal('int64', s.dtype)
    assert.are.same({ 8 }, n:totable())
    assert.are.equal('int64', n.dtype)
  end)
end)

describe('symbols of the manipulation operators', function()
  it('infer shapes and survive a JSON round trip', function()
    local a, b = mx.sym.Variable('a'), mx.sym.Variable('b')
    local cases = {
      { mx.sym.tile(a, { reps = { 2, 3 } }), { a = { 2, 2 } }, { 4, 6 } },
      { mx.sym['repeat'](a, { repeats = 2, axis = 0 }), { a = { 2, 2 } }, { 4, 2 } },
      { mx.sym.stack(a, b, { axis = 1 }), { a = { 3, 4 } }, { 3, 2, 4 } },
      { mx.sym.broadcast_to(a, { shape = { 0, 5 } }), { a = { 2, 1 } }, { 2, 5 } },
      { mx.sym.broadcast_axes(a, { axis = 1, size = 4 }), { a = { 2, 1 } }, { 2, 4 } },
      { mx.sym.broadcast_like(a, b), { a = { 1, 3 }, b = { 2, 3 } }, { 2, 3 } },
      { mx.sym.reshape_like(a, b), { a = { 2, 3 }, b = { 6 } }, { 6 } },
      { mx.sym.slice_like(a, b, { axes = { 1 } }), { a = { 2, 5 }, b = { 1, 3 } }, { 2, 3 } },
      { mx.sym.diag(a, { k = -1 }), { a = { 4 } }, { 5, 5 } },
      { mx.sym.shape_array(a), { a = { 2, 3, 4 } }, { 3 } },
      { mx.sym.size_array(a), { a = { 2, 3, 4 } }, { 1 } },
    }
    for _, c in ipairs(cases) do
      local s, shapes, want = c[1], c[2], c[3]
      local _, outs = s:infer_shape(shapes)
      assert.are.same(want, outs[1])
      local json = s:tojson()
      local back = mx.sym.load_json(json)
      assert.are.equal(json, back:tojson())
      local _, outs2 = back:infer_shape(shapes)
      assert.are.same(want, outs2[1])
    end
    -- stack infers its inputs from the output's other inputs
    local args = mx.sym.stack(a, b):infer_shape { a = { 3 } }
    assert.are.same({ { 3 }, { 3 } }, args)
  end)
end)

describe('loading an operator luamx does not have', function()
  local function graph(opname, params)
    return ('{"nodes": [{"op": "null", "name": "x", "inputs": []}, {"op": "%s", "name": "n1", '
      .. '"attrs": %s, "inputs": [[0, 0, 0]]}], "arg_nodes": [0], "heads": [[1, 0, 0]], '
      .. '"attrs": {"mxnet_version": ["int", 10901]}}'):format(opname, params or '{}')
  end
  it('names the node and the operator, and says it is not supported', function()
    local e = err(mx.sym.load_json, graph('NoSuchOp'))
    assert.is_truthy(e:find("node 1 'n1': unknown operator 'NoSuchOp': it is not supported", 1, true), e)
  end)
  it('says that a plugin operator is one (WarpCTC)', function()
    local e = err(mx.sym.load_json, graph('WarpCTC', '{"label_length": "4", "input_length": "8"}'))
    assert.is_truthy(e:find("node 1 'n1': operator 'WarpCTC' is not supported: it is an MXNet "
      .. "plugin operator (plugin/warpctc", 1, true), e)
  end)
  it('says that a Custom op_type is not registered', function()
    local e = err(mx.sym.load_json, graph('Custom', '{"op_type": "never_registered_op"}'))
    assert.is_truthy(e:find('never_registered_op', 1, true), e)
    assert.is_truthy(e:find('Custom', 1, true), e)
    assert.is_truthy(e:find('not registered', 1, true), e)
  end)
end)

describe('_split_v2, argmax_channel and the generators (MXNet docs)', function()
  local x = arr({ { { 1 }, { 2 } }, { { 3 }, { 4 } }, { { 5 }, { 6 } } }, 'float64')
  it('_split_v2 by sections and at indices', function()
    local y = op._split_v2(x, { sections = 2, axis = 1, indices = {} })
    assert.are.same({ { { 1 } }, { { 3 } }, { { 5 } } }, y[1]:totable())
    assert.are.same({ { { 2 } }, { { 4 } }, { { 6 } } }, y[2]:totable())
    local z = op._split_v2(x, { sections = 3, axis = 0, indices = {} })
    assert.are.equal(3, #z)
    assert.are.same({ { { 3 }, { 4 } } }, z[2]:totable())
    local w = op._split_v2(x, { indices = { 0, 1 }, axis = 0 })
    assert.are.same({ 1, 2, 1 }, w[1].shape)
    assert.are.same({ { { 3 }, { 4 } }, { { 5 }, { 6 } } }, w[2]:totable())
    local s = op._split_v2(x, { sections = 2, axis = 1, indices = {}, squeeze_axis = true })
    assert.are.same({ { 1 }, { 3 }, { 5 } }, s[1]:totable())
    H.raises(function() return op._split_v2(x, { indices = { 0, 4 }, axis = 0 }) end,
      '_split_v2', "parameter 'indices': index 4 is past the end of the split axis of size 3")
    H.raises(function() return op._split_v2(x, { sections = 2, axis = 0, indices = {} }) end,
      '_split_v2', 'the split axis of size 3 is not divisible by sections 2')
    H.raises(function() return op._split_v2(x, { indices = { 2, 1 } }) end,
      '_split_v2', "parameter 'indices': expected non-negative, non-decreasing indices")
  end)
  it('_split_v2 sends each output gradient back to its slice', function()
    local a = arr({ 1, 2, 3, 4, 5 }, 'float64')
    a:attach_grad()
    mx.autograd.record(function()
      local p = op._split_v2(a, { indices = { 0, 2 }, axis = 0 })
      return mx.nd.sum(p[1] * 3) + mx.nd.sum(p[2] * 5)
    end):backward()
    assert.are.same({ 3, 3, 5, 5, 5 }, a.grad:totable())
  end)
  it('argmax_channel', function()
    assert.are.same({ 2, 2 }, op.argmax_channel(arr { { 0, 1, 2 }, { 3, 4, 5 } }):totable())
    assert.are.same({ { 0, 1 } }, op.argmax_channel(arr { { { 7, 1 }, { 0, 9 } } }):totable())
  end)
  it('_arange (arange) with stop None, step, repeat and dtype', function()
    assert.are.same({ 0, 1, 2 }, op._arange { start = 3 }:totable())
    assert.are.same({ 2, 3, 4, 5 }, op._arange { start = 2, stop = 6 }:totable())
    assert.are.same({ 2, 4 }, op._arange { start = 2, stop = 6, step = 2 }:totable())
    assert.are.same({ 2, 2, 3.5, 3.5, 5, 5 },
      op._arange { start = 2, stop = 6, step = 1.5, ['repeat'] = 2 }:totable())
    local i = op.arange { start = 2, stop = 6, step = 2, ['repeat'] = 3, dtype = 'int32' }
    assert.are.same({ 2, 2, 2, 4, 4, 4 }, i:totable())
    assert.are.equal('int32', i.dtype)
    assert.are.same({ 6, 4.5, 3 }, op._arange { start = 6, stop = 2, step = -1.5 }:totable())
    H.raises(function() return op._arange { start = 2, stop = 1 } end,
      '_arange', 'invalid range (start=2, stop=1, step=1)')
    H.raises(function() return op._arange { start = 2, stop = 5, step = 0 } end,
      '_arange', "parameter 'step': must not be 0")
  end)
  it('_eye (eye) with M and k', function()
    assert.are.same({ { 1, 0 }, { 0, 1 } }, op._eye { N = 2 }:totable())
    assert.are.same({ { 0, 1, 0 }, { 0, 0, 1 } }, op.eye { N = 2, M = 3, k = 1 }:totable())
    assert.are.same({ { 0, 0 }, { 1, 0 }, { 0, 1 } }, op._eye { N = 3, M = 2, k = -1 }:totable())
    assert.are.same({ { 0, 0 }, { 0, 0 } }, op._eye { N = 2, k = 5 }:totable())
    assert.are.equal('float64', op._eye { N = 2, dtype = 'float64' }.dtype)
  end)
  it('_contrib_arange_like, whole and along an axis', function()
    local a = arr { { 1, 2, 3 }, { 4, 5, 6 } }
    assert.are.same({ { 0, 1, 2 }, { 3, 4, 5 } }, op._contrib_arange_like(a):totable())
    assert.are.same({ 0, 1, 2 }, op._contrib_arange_like(a, { axis = -1 }):totable())
    assert.are.same({ { 1, 1, 1.5 }, { 1.5, 2, 2 } },
      op._contrib_arange_like(a, { start = 1, step = 0.5, ['repeat'] = 2 }):totable())
  end)
end)

describe('pick and cumsum (MXNet docs)', function()
  local x = { { 1, 2 }, { 3, 4 }, { 5, 6 } }
  for _, dt in ipairs { 'float32', 'float64', 'int32' } do
    it('pick along an axis, keepdims, clip and wrap (' .. dt .. ')', function()
      local a = arr(x, dt)
      assert.are.same({ 1, 4 }, op.pick(a, arr { 0, 1 }, { axis = 0 }):totable())
      assert.are.same({ 1, 4, 5 }, op.pick(a, arr { 0, 1, 0 }, { axis = 1 }):totable())
      assert.are.same({ { 1 }, { 4 }, { 5 } },
        op.pick(a, arr { 0, 1, 0 }, { axis = 1, keepdims = true }):totable())
      assert.are.same({ 2, 3, 5 }, op.pick(a, arr { 2, -1, -2 }, { axis = 1 }):totable())
      assert.are.same({ 1, 4, 5 },
        op.pick(a, arr { 2, -1, -2 }, { axis = 1, mode = 'wrap' }):totable())
    end)
  end
  it('pick sends the gradient to the picked elements; the index gets zeros', function()
    local a, i = arr(x, 'float64'), arr({ 1, 0, 1 }, 'float64')
    a:attach_grad()
    i:attach_grad()
    local w = arr({ 10, 20, 30 }, 'float64')
    mx.autograd.record(function() return mx.nd.sum(op.pick(a, i, { axis = 1 }) * w) end)
      :backward()
    assert.are.same({ { 0, 10 }, { 20, 0 }, { 0, 30 } }, a.grad:totable())
    assert.are.same({ 0, 0, 0 }, i.grad:totable())
    H.raises(function() return op.pick(a, arr { 0, 1 }, { axis = 1 }) end,
      'pick', "input 'index'", 'expected shape (3,), got (2,)')
    H.raises(function() return op.pick(a, i, { mode = 'raise' }) end, 'pick', "parameter 'mode'")
  end)
  it('cumsum flattened, along an axis, in another dtype; _np_cumsum is an alias', function()
    local a = arr({ { 1, 2, 3 }, { 4, 5, 6 } }, 'int32')
    assert.are.same({ 1, 3, 6, 10, 15, 21 }, op.cumsum(a):totable())
    assert.are.same({ { 1, 2, 3 }, { 5, 7, 9 } }, op.cumsum(a, { axis = 0 }):totable())
    assert.are.same({ { 1, 3, 6 }, { 4, 9, 15 } }, op._np_cumsum(a, { axis = 1 }):totable())
    local f = op.cumsum(a, { axis = 1, dtype = 'float64' })
    assert.are.equal('float64', f.dtype)
    assert.are.equal('int32', op.cumsum(a).dtype)
    assert.are.equal('cumsum', mx.op.info('_np_cumsum').name)
    local g = arr({ 1, 2, 3, 4 }, 'float64')
    g:attach_grad()
    local w = arr({ 1, 10, 100, 1000 }, 'float64')
    mx.autograd.record(function() return mx.nd.sum(op.cumsum(g) * w) end):backward()
    assert.are.same({ 1111, 1110, 1100, 1000 }, g.grad:totable())
    H.raises(function() return op.cumsum(a, { axis = 2 }) end,
      'cumsum', "parameter 'axis': axis 2 is out of range for 2-D input")
  end)
end)

describe('gather_nd and scatter_nd (MXNet docs)', function()
  it('gather_nd picks elements or slices', function()
    assert.are.same({ 2, 3, 0 },
      op.gather_nd(arr { { 0, 1 }, { 2, 3 } }, arr { { 1, 1, 0 }, { 0, 1, 0 } }):totable())
    local d = arr { { { 1, 2 }, { 3, 4 } }, { { 5, 6 }, { 7, 8 } } }
    assert.are.same({ { 3, 4 }, { 5, 6 } }, op.gather_nd(d, arr { { 0, 1 }, { 1, 0 } }):totable())
    -- negative indices count from the end
    assert.are.same({ { 7, 8 } }, op.gather_nd(d, arr { { -1 }, { -1 } }):totable())
  end)
  it('scatter_nd writes into zeros of `shape`', function()
    assert.are.same({ { 0, 0 }, { 2, 3 } }, op.scatter_nd(arr { 2, 3, 0 },
      arr { { 1, 1, 0 }, { 0, 1, 0 } }, { shape = { 2, 2 } }):totable())
    local y = op.scatter_nd(arr { { { 1, 2 }, { 3, 4 } }, { { 5, 6 }, { 7, 8 } } },
      arr { { 0, 1 }, { 1, 1 } }, { shape = { 2, 2, 2, 2 } })
    local z = { { 0, 0 }, { 0, 0 } }
    assert.are.same({ { z, { { 1, 2 }, { 3, 4 } } }, { z, { { 5, 6 }, { 7, 8 } } } }, y:totable())
    H.raises(function() return op.scatter_nd(arr { 1, 2 }, arr { { 0, 1 } }, { shape = { 2, 2 } }) end,
      'scatter_nd', "input 'data'", 'expected shape (2,2), got (2,)')
  end)
  it('gather_nd sums the gradient of repeated positions; indices get zeros', function()
    local d, i = arr({ 1, 2, 3 }, 'float64'), arr({ { 2, 0, 2 } }, 'float64')
    d:attach_grad()
    i:attach_grad()
    local w = arr({ 1, 10, 100 }, 'float64')
    mx.autograd.record(function() return mx.nd.sum(op.gather_nd(d, i) * w) end):backward()
    assert.are.same({ 10, 0, 101 }, d.grad:totable())
    assert.are.same({ { 0, 0, 0 } }, i.grad:totable())
  end)
end)

describe('batch_take (MXNet docs)', function()
  it('takes one element per row, clipping, with int32 indices', function()
    local x = arr { { 1, 2 }, { 3, 4 }, { 5, 6 } }
    local i = mx.nd.array({ 0, 1, 0 }, { dtype = 'int32' })
    assert.are.same({ 1, 4, 5 }, op.batch_take(x, i):totable())
    local far = mx.nd.array({ 5, -3, 1 }, { dtype = 'int32' })
    assert.are.same({ 2, 3, 6 }, op.batch_take(x, far):totable())
    H.raises(function() return op.batch_take(x, arr { 0, 1, 0 }) end,
      'batch_take', "input 'indices'", 'expected int32, got float32')
    H.raises(function() return op.batch_take(x, mx.nd.array({ 0, 1 }, { dtype = 'int32' })) end,
      'batch_take', "input 'indices' has 2 elements, expected one per row of input 'a' (3)")
  end)
  it('gives the same values on gpu(0) (the other ops: gpu_ops_spec)', function()
    if mx.context.num_gpus() == 0 then return pending('no GPU context') end
    local x = mx.nd.arange(0, 24):reshape { 6, 4 }
    local i = mx.nd.array({ 3, 0, 7, -2, 1, 2 }, { dtype = 'int32' })
    local g = op.batch_take(x:copyto(mx.gpu(0)), i:copyto(mx.gpu(0)))
    assert.are.equal(mx.gpu(0), g.context)
    assert.are.same({ 3, 4, 11, 12, 17, 22 }, g:copyto(mx.cpu()):totable())
    assert.are.same(op.batch_take(x, i):totable(), g:copyto(mx.cpu()):totable())
  end)
end)
