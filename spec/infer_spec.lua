-- infer_spec.lua — shape and dtype inference on symbols: forward and backward
-- propagation, partial inference, __shape__/__dtype__ seeds, MXNet's "nil, nil, nil"
-- when not enough is known, and error messages naming op, node, input and shapes.
local mx = require 'luamx'
local sym = mx.sym

local function err(f, ...)
  local ok, e = pcall(f, ...)
  assert(not ok, 'expected an error')
  return tostring(e)
end

local function mlp(data)
  data = data or sym.Variable('data')
  local fc1 = sym.FullyConnected{data = data, name = 'fc1', num_hidden = 128}
  local act1 = sym.Activation{data = fc1, name = 'relu1', act_type = 'relu'}
  local fc2 = sym.FullyConnected{data = act1, name = 'fc2', num_hidden = 10}
  return sym.SoftmaxOutput{data = fc2, name = 'softmax'}
end

describe('infer_shape', function()
  it('infers forward from the data shape', function()
    local net = mlp()
    local args, outs, aux = net:infer_shape{data = {32, 784}}
    assert.are.same({{32, 784}, {128, 784}, {128}, {10, 128}, {10}, {32}}, args)
    assert.are.same({{32, 10}}, outs)
    assert.are.same({}, aux)
  end)

  it('accepts shapes by position in list_arguments order', function()
    local args, outs = mlp():infer_shape{{8, 20}}
    assert.are.same({128, 20}, args[2])
    assert.are.same({{8, 10}}, outs)
  end)

  it('infers backward from outputs to inputs', function()
    local a, b = sym.Variable('a'), sym.Variable('b')
    local c = sym.elemwise_add(a, sym.Activation{data = b, act_type = 'relu', name = 'r'})
    local args, outs = c:infer_shape{a = {2, 3}}
    assert.are.same({{2, 3}, {2, 3}}, args)
    assert.are.same({{2, 3}}, outs)
  end)

  it('gives aux state shapes', function()
    local x = sym.Variable('x')
    local bn = sym.BatchNorm{data = x, name = 'bn'}
    local args, outs, aux = bn:infer_shape{x = {4, 3, 5, 5}}
    assert.are.same({{4, 3, 5, 5}, {3}, {3}}, args)
    assert.are.same({{4, 3, 5, 5}}, outs)
    assert.are.same({{3}, {3}}, aux)
    local args2 = bn:infer_shape{bn_moving_mean = {3}, x = {4, 3, 5, 5}}
    assert.are.same({3}, args2[2])
  end)

  it('leaves unknowns empty in partial mode and keeps 0 dims', function()
    local net = mlp()
    local args, outs, aux = net:infer_shape_partial{}
    assert.are.same({{}, {}, {}, {}, {}, {}}, args)
    assert.are.same({{}}, outs)
    assert.are.same({}, aux)
    args, outs = net:infer_shape_partial{data = {0, 784}}
    assert.are.same({{0, 784}, {128, 784}, {128}, {10, 128}, {10}, {0}}, args)
    assert.are.same({{0, 10}}, outs)
  end)

  it('raises an error naming the unknown arguments when not enough is known', function()
    local a, b = sym.Variable('a'), sym.Variable('b')
    local fc = sym.FullyConnected{data = a, name = 'fc', num_hidden = 4}
    local net = fc + b
    local ok, msg = pcall(function() return net:infer_shape{} end)
    assert.is_false(ok)
    msg = msg:gsub('^[^:]*:%d+: ', '')
    assert.are.equal('Cannot decide shape for the following arguments (0s in shape means ' ..
                     'unknown dimensions). Consider providing them as input:\n' ..
                     '\ta: ()\n\tfc_weight: ()\n\tfc_bias: ()\n\tb: ()', msg)
  end)

  it('seeds variables from __shape__', function()
    local net = mlp(sym.Variable('data', {shape = {8, 100}}))
    local args, outs = net:infer_shape{}
    assert.are.same({8, 100}, args[1])
    assert.are.same({{8, 10}}, outs)
    local partial = sym.Variable('d', {shape = {0, 5}})
    local a2, o2 = sym.FullyConnected{data = partial, num_hidden = 2, name = 'f'}:infer_shape_partial{}
    assert.are.same({{0, 5}, {2, 5}, {2}}, a2)
    assert.are.same({{0, 2}}, o2)
    -- a given shape wins over __shape__
    assert.are.same({3, 100}, (net:infer_shape{data = {3, 100}})[1])
  end)

  it('names op, node, input and both shapes on a contradiction', function()
    local e = err(function() return mlp():infer_shape{data = {32, 784}, fc1_weight = {64, 784}} end)
    assert.truthy(e:find("FullyConnected 'fc1': input 'weight': expected shape (128,784), got (64,784)",
                         1, true))
    local a, b = sym.Variable('a'), sym.Variable('b')
    e = err(function() return (a + b):infer_shape{a = {2, 3}, b = {3, 2}} end)
    assert.truthy(e:find("elemwise_add '_plus", 1, true))
    assert.truthy(e:find('(2,3)', 1, true) and e:find('(3,2)', 1, true))
  end)

  it('rejects unknown names and bad shapes', function()
    local net = mlp()
    assert.truthy(err(net.infer_shape, net, {nope = {1}}):find(
      "infer_shape: 'nope' is not an argument or auxiliary state; candidates: data, " ..
      'fc1_weight, fc1_bias, fc2_weight, fc2_bias, softmax_label', 1, true))
    assert.truthy(err(net.infer_shape, net, {data = {2, -1}}):find(
      "infer_shape: shape of 'data': dim 2 must be a non-negative integer, got -1", 1, true))
    assert.truthy(err(net.infer_shape, net, {{1, 2}, {3, 4}, {5}, {1}, {1}, {1}, {1}}):find(
      'infer_shape: 7 positional values given but the symbol has 6 arguments', 1, true))
  end)
end)

describe('infer_type', function()
  it('propagates dtypes forward and backward', function()
    local args, outs, aux = mlp():infer_type{data = 'float64'}
    assert.are.same({'float64', 'float64', 'float64', 'float64', 'float64', 'float64'}, args)
    assert.are.same({'float64'}, outs)
    assert.are.same({}, aux)
    local a, b = sym.Variable('a'), sym.Variable('b')
    local args2 = (a + b):infer_type{b = 'float16'}
    assert.are.same({'float16', 'float16'}, args2)
  end)

  it('seeds from __dtype__ and raises when a type stays unknown', function()
    local a, b = sym.Variable('a', {dtype = 'int32'}), sym.Variable('b')
    assert.are.same({'int32', 'int32'}, (a * b):infer_type{})
    local net = sym.Variable('c') + b
    local ok, msg = pcall(function() return net:infer_type{} end)
    assert.is_false(ok)
    msg = msg:gsub('^[^:]*:%d+: ', '')
    assert.are.equal('Cannot decide type for the following arguments. Consider providing ' ..
                     'them as input:\n\tc\n\tb', msg)
    local p = (sym.Variable('c') + b):infer_type_partial{}
    assert.are.same({false, false}, p)
  end)

  it('names the node on a dtype conflict', function()
    local a, b = sym.Variable('a'), sym.Variable('b')
    local e = err(function() return (a + b):infer_type{a = 'float32', b = 'float64'} end)
    assert.truthy(e:find("elemwise_add '_plus", 1, true))
    assert.truthy(e:find('float32', 1, true) and e:find('float64', 1, true))
  end)
end)
