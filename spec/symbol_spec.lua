-- symbol_spec.lua — mx.sym: composition, automatic names, auto variables, listing
-- orders, attributes and scopes, Group, internals, children, output selection,
-- metamethods, debug_str, and error messages (MXNet 1.9 semantics, MXNET-SEMANTICS §3).
local mx = require 'luamx'
local sym = mx.sym

local function err(f, ...)
  local ok, e = pcall(f, ...)
  assert(not ok, 'expected an error')
  return tostring(e)
end

local function mlp()
  local data = sym.Variable('data')
  local fc1 = sym.FullyConnected{data = data, name = 'fc1', num_hidden = 128}
  local act1 = sym.Activation{data = fc1, name = 'relu1', act_type = 'relu'}
  local fc2 = sym.FullyConnected{data = act1, name = 'fc2', num_hidden = 64}
  return fc2, fc1
end

describe('mx.sym composition and naming', function()
  before_each(function() sym.reset_names() end)

  it('gives automatic names with a counter per hint', function()
    local x = sym.Variable('x')
    local a = sym.FullyConnected{data = x, num_hidden = 4}
    local b = sym.FullyConnected{data = a, num_hidden = 4}
    local c = sym.Activation{data = b, act_type = 'relu'}
    assert.are.equal('fullyconnected0', a.name)
    assert.are.equal('fullyconnected1', b.name)
    assert.are.equal('activation0', c.name)
    assert.are.same({'x', 'fullyconnected0_weight', 'fullyconnected0_bias',
                     'fullyconnected1_weight', 'fullyconnected1_bias'}, c:list_arguments())
    sym.reset_names()
    assert.are.equal('fullyconnected0', sym.FullyConnected{data = x, num_hidden = 1}.name)
  end)

  it('names aliases by the name they were called by', function()
    local x = sym.Variable('x')
    local s = sym.split{data = x, num_outputs = 2}
    assert.are.equal('split0', s.name)
    assert.are.equal('SliceChannel', s:attr('op_name'))
  end)

  it('creates missing inputs as <name>_<input> variables carrying the op attributes', function()
    local x = sym.Variable('x')
    local fc = sym.FullyConnected{data = x, name = 'fc1', num_hidden = 128, lr_mult = 2,
                                  attr = {__mood__ = 'calm'}}
    assert.are.same({'x', 'fc1_weight', 'fc1_bias'}, fc:list_arguments())
    local d = fc:attr_dict()
    assert.are.same({num_hidden = '128', __lr_mult__ = '2', lr_mult = '2', __mood__ = 'calm'},
                    d.fc1_weight)
    assert.are.same(d.fc1_weight, d.fc1_bias)
    assert.is_nil(d.x)
    assert.are.equal('2', fc:attr('lr_mult'))
  end)

  it('lists arguments, outputs, aux states and inputs in MXNet order', function()
    local a, b, d = sym.Variable('a'), sym.Variable('b'), sym.Variable('d')
    local e = d + (a + b)
    assert.are.same({'d', 'a', 'b'}, e:list_arguments())
    assert.are.same({'_plus1_output'}, e:list_outputs())
    local fc2 = mlp()
    assert.are.same({'data', 'fc1_weight', 'fc1_bias', 'fc2_weight', 'fc2_bias'},
                    fc2:list_arguments())
    local x = sym.Variable('x')
    local bn = sym.BatchNorm{data = x, name = 'bn'}
    local out = sym.FullyConnected{data = bn, name = 'fc', num_hidden = 3} +
                sym.BatchNorm{data = sym.Variable('y'), name = 'bn2'}
    assert.are.same({'x', 'bn_gamma', 'bn_beta', 'fc_weight', 'fc_bias', 'y', 'bn2_gamma',
                     'bn2_beta'}, out:list_arguments())
    assert.are.same({'bn_moving_mean', 'bn_moving_var', 'bn2_moving_mean', 'bn2_moving_var'},
                    out:list_auxiliary_states())
    assert.are.same({'x', 'bn_gamma', 'bn_beta', 'bn_moving_mean', 'bn_moving_var',
                     'fc_weight', 'fc_bias', 'y', 'bn2_gamma', 'bn2_beta', 'bn2_moving_mean',
                     'bn2_moving_var'}, out:list_inputs())
    local bn3 = sym.BatchNorm{name = 'bn3'}
    assert.are.same({'bn3_data', 'bn3_gamma', 'bn3_beta'}, bn3:list_arguments())
  end)

  it('marks BatchNorm aux variables with their __init__ and bumps their version', function()
    local bn = sym.BatchNorm{data = sym.Variable('x'), name = 'bn'}
    assert.truthy(bn:tojson():find('[3, 0, 1], [4, 0, 1]', 1, true))
    local d = bn:attr_dict()
    assert.are.equal('["zero", {}]', d.bn_moving_mean.__init__)
    assert.are.equal('["one", {}]', d.bn_moving_var.__init__)
    assert.is_nil(d.bn_gamma)
  end)

  it('accepts positional inputs and fills num_args for variable-arity ops', function()
    local a, b, c = sym.Variable('a'), sym.Variable('b'), sym.Variable('c')
    local s = sym.elemwise_add(a, b)
    assert.are.equal('elemwise_add0', s.name)
    assert.are.same({'a', 'b'}, s:list_arguments())
    local cat = sym.Concat(a, b, c, {dim = 1, name = 'cat'})
    assert.are.equal('3', cat:attr('num_args'))
    assert.are.same({'a', 'b', 'c'}, cat:list_arguments())
    local fc = sym.FullyConnected(a, {num_hidden = 2, name = 'f', bias = c})
    assert.are.same({'a', 'f_weight', 'c'}, fc:list_arguments())
  end)

  it('converts Lua parameter values to MXNet strings', function()
    local x = sym.Variable('x')
    local conv = sym.Convolution{data = x, name = 'c', kernel = {3, 3}, num_filter = 8,
                                 no_bias = true, pad = '(1, 1)'}
    assert.are.same({kernel = '(3, 3)', num_filter = '8', no_bias = 'True', pad = '(1, 1)'},
                    conv:list_attr())
    assert.are.same({'x', 'c_weight'}, conv:list_arguments())
    assert.are.equal('0.1', (x * 0.1):attr('scalar'))
    assert.are.equal('1e-05', (x + 1e-5):attr('scalar'))
  end)

  it('composes a composed symbol by replacing variables on a copy', function()
    local fc2 = mlp()
    local v = sym.Variable('fc3_data')
    local fc3 = sym.FullyConnected{data = v, name = 'fc3', num_hidden = 10}
    local net = fc3{fc3_data = fc2, name = 'composed'}
    assert.are.same({'data', 'fc1_weight', 'fc1_bias', 'fc2_weight', 'fc2_bias', 'fc3_weight',
                     'fc3_bias'}, net:list_arguments())
    assert.are.equal('composed', net.name)
    assert.are.same({'fc3_data', 'fc3_weight', 'fc3_bias'}, fc3:list_arguments())
    assert.are.equal('fc3', fc3.name)
  end)
end)

describe('mx.sym metamethods', function()
  before_each(function() sym.reset_names() end)

  it('uses MXNet ops and names with numbers on either side', function()
    local a, b = sym.Variable('a'), sym.Variable('b')
    local cases = {
      {a + b, '_plus0', 'elemwise_add'}, {a - b, '_minus0', 'elemwise_sub'},
      {a * b, '_mul0', 'elemwise_mul'}, {a / b, '_div0', 'elemwise_div'},
      {a ^ b, '_power0', '_power'}, {a + 1, '_plusscalar0', '_plus_scalar'},
      {1 + a, '_plusscalar1', '_plus_scalar'}, {a - 1, '_minusscalar0', '_minus_scalar'},
      {1 - a, '_rminusscalar0', '_rminus_scalar'}, {2 * a, '_mulscalar0', '_mul_scalar'},
      {a * 2, '_mulscalar1', '_mul_scalar'}, {-a, '_mulscalar2', '_mul_scalar'},
      {a / 2, '_divscalar0', '_div_scalar'}, {2 / a, '_rdivscalar0', '_rdiv_scalar'},
      {a ^ 2, '_powerscalar0', '_power_scalar'}, {2 ^ a, '_rpowerscalar0', '_rpower_scalar'},
    }
    for _, c in ipairs(cases) do
      assert.are.equal(c[2], c[1].name)
      assert.are.equal(c[3], c[1]:attr('op_name'))
    end
    assert.are.equal('-1.0', cases[12][1]:attr('scalar'))
    assert.are.equal('2', cases[11][1]:attr('scalar'))
    assert.are.same({'a'}, (2 ^ a):list_arguments())
  end)

  it('rejects operands that are neither symbols nor numbers', function()
    local a = sym.Variable('a')
    assert.truthy(err(function() return a + 'x' end):find(
      "Symbol +: operands must be Symbols or numbers, got table and string", 1, true))
  end)
end)

describe('mx.sym attributes', function()
  before_each(function() sym.reset_names() end)

  it('stores Variable options as MXNet attributes, hidden keys doubled in listings', function()
    local x = sym.Variable('x', {shape = {2, 3}, dtype = 'float16', lr_mult = 0.5, wd_mult = 2,
                                 init = '["zero", {}]', attr = {mood = 'happy'}})
    assert.are.same({__shape__ = '(2, 3)', __dtype__ = '2', __lr_mult__ = '0.5',
                     lr_mult = '0.5', __wd_mult__ = '2', wd_mult = '2',
                     __init__ = '["zero", {}]', mood = 'happy'}, x:list_attr())
    assert.are.equal('0.5', x:attr('lr_mult'))
    assert.are.equal('0.5', x:attr('__lr_mult__'))
    assert.are.equal('x', x:attr('name'))
    assert.are.equal('null', x:attr('op_name'))
    assert.is_nil(x:attr('nothing'))
    assert.are.equal('(5,)', sym.Variable('v', {shape = {5}}):attr('__shape__'))
    assert.truthy(err(sym.Variable, 'y', {foo = 1}):find(
      'Variable: attribute name=foo is not supported', 1, true))
  end)

  it('keeps list_attr shallow and attr_dict recursive', function()
    local fc2 = mlp()
    assert.are.same({num_hidden = '64'}, fc2:list_attr())
    local d = fc2:attr_dict()
    assert.are.same({act_type = 'relu'}, d.relu1)
    assert.are.same({num_hidden = '128'}, d.fc1)
    assert.are.same({num_hidden = '64'}, d.fc2_bias)
  end)

  it('applies attribute scopes to ops and variables, innermost and explicit attrs win', function()
    local x, fc, y, z
    mx.AttrScope({ctx_group = 'dev1', __tag__ = 'outer'}, function()
      x = sym.Variable('x')
      y = sym.Variable('y', {attr = {ctx_group = 'dev2'}})
      mx.attribute.AttrScope({__tag__ = 'inner'}, function()
        fc = sym.FullyConnected{data = x, name = 'fc', num_hidden = 2, attr = {__k__ = 'v'}}
      end)
    end)
    z = sym.Variable('z')
    assert.are.same({__ctx_group__ = 'dev1', ctx_group = 'dev1', __tag__ = 'outer'}, x:list_attr())
    assert.are.equal('dev2', y:attr('ctx_group'))
    assert.are.same({__ctx_group__ = 'dev1', ctx_group = 'dev1', __tag__ = 'inner',
                     num_hidden = '2', __k__ = 'v'}, fc:list_attr())
    assert.are.equal('dev1', fc:attr_dict().fc_weight.__ctx_group__)
    assert.are.same({}, z:list_attr())
    -- an error inside the function still pops the scope
    assert.truthy(err(mx.AttrScope, {ctx_group = 'd'}, function() error('boom') end):find('boom'))
    assert.are.same({}, sym.Variable('w'):list_attr())
    assert.truthy(err(mx.AttrScope, {ctx_group = 1}, function() end):find(
      'AttrScope: attributes need to be strings', 1, true))
  end)

  it('sets attributes and renames through _set_attr', function()
    local x = sym.Variable('x')
    x:_set_attr{lr_mult = '3', name = 'renamed'}
    assert.are.equal('3', x:attr('__lr_mult__'))
    assert.are.equal('renamed', x.name)
    local fc = sym.FullyConnected{data = x, name = 'fc', num_hidden = 2}
    assert.truthy(err(function() fc:_set_attr{num_hidden = 'abc'} end):find(
      "FullyConnected 'fc': parameter 'num_hidden'", 1, true))
    assert.are.equal('2', fc:attr('num_hidden'))
  end)
end)

describe('mx.sym groups, internals, children and outputs', function()
  before_each(function() sym.reset_names() end)

  it('groups outputs and prints like MXNet', function()
    local fc2, fc1 = mlp()
    local g = sym.Group{fc1, fc2}
    assert.are.same({'fc1_output', 'fc2_output'}, g:list_outputs())
    assert.is_nil(g.name)
    assert.are.equal('<Symbol group [fc1, fc2]>', tostring(g))
    assert.are.equal('<Symbol fc2>', tostring(fc2))
    assert.are.equal(2, g:num_outputs())
  end)

  it('lists internals in DFS order and selects by name', function()
    local a, b = sym.Variable('a'), sym.Variable('b')
    local c = a + b
    assert.are.same({'a', 'b', '_plus0_output'}, c:get_internals():list_outputs())
    local fc2 = mlp()
    local int = fc2:get_internals()
    assert.are.same({'data', 'fc1_weight', 'fc1_bias', 'fc1_output', 'relu1_output',
                     'fc2_weight', 'fc2_bias', 'fc2_output'}, int:list_outputs())
    local fc1 = int['fc1_output']
    assert.are.same({'data', 'fc1_weight', 'fc1_bias'}, fc1:list_arguments())
    assert.are.equal('fc2_weight', int['fc2_weight'].name)
    assert.are.equal('relu1', int[5].name)
    assert.truthy(err(function() return int['nope'] end):find(
      "cannot find output that matches name 'nope'", 1, true))
    assert.truthy(err(function() return int[20] end):find(
      'symbol output index 19 out of range: the symbol has 8 outputs', 1, true))
  end)

  it('gives the children of the head node', function()
    local fc2 = mlp()
    assert.are.same({'relu1_output', 'fc2_weight', 'fc2_bias'},
                    fc2:get_children():list_outputs())
    assert.is_nil(sym.Variable('v'):get_children())
    local x = sym.Variable('x')
    local sl = sym.SliceChannel{data = x, num_outputs = 3, name = 'slice'}
    assert.are.same({'slice_output0', 'slice_output1', 'slice_output2'}, sl:list_outputs())
    local cat = sym.Concat(sl[1], sl[2], sl[3], {name = 'cat'})
    assert.are.same({'slice_output0', 'slice_output1', 'slice_output2'},
                    cat:get_children():list_outputs())
    assert.are.equal('slice_output1', sl['slice_output1']:list_outputs()[1])
  end)

  it('prints debug_str in nnvm format', function()
    local a, b = sym.Variable('a'), sym.Variable('b')
    local c = sym.FullyConnected{data = a + b, name = 'fc', num_hidden = 3, no_bias = true}
    assert.are.equal('Variable:a\n', a:debug_str())
    assert.are.equal(table.concat{
      'Symbol Outputs:\n', '\toutput[0]=fc(0)\n', 'Variable:a\n', 'Variable:b\n',
      '--------------------\n', 'Op:elemwise_add, Name=_plus0\n', 'Inputs:\n',
      '\targ[0]=a(0) version=0\n', '\targ[1]=b(0) version=0\n', 'Variable:fc_weight\n',
      '--------------------\n', 'Op:FullyConnected, Name=fc\n', 'Inputs:\n',
      '\targ[0]=_plus0(0)\n', '\targ[1]=fc_weight(0) version=0\n', 'Attrs:\n',
      '\tno_bias=True\n', '\tnum_hidden=3\n'}, c:debug_str())
  end)

  it('survives freeing handles in any order', function()
    local fc2 = mlp()
    local int = fc2:get_internals()
    local fc1 = int['fc1_output']
    fc2:free()
    int:free()
    collectgarbage('collect')
    assert.are.same({'data', 'fc1_weight', 'fc1_bias'}, fc1:list_arguments())
    assert.truthy(err(function() return fc2:list_arguments() end):find('Symbol has been freed', 1, true))
  end)
end)

describe('mx.sym errors', function()
  before_each(function() sym.reset_names() end)
  local x = sym.Variable('x')

  it('names an unknown parameter', function()
    assert.truthy(err(sym.FullyConnected, {data = x, name = 'fc1', num_hidden = 2, foo = 3}):find(
      "FullyConnected 'fc1': unknown parameter 'foo'", 1, true))
  end)

  it('names a missing required parameter', function()
    assert.truthy(err(sym.FullyConnected, {data = x, name = 'fc1'}):find(
      "FullyConnected 'fc1': required parameter 'num_hidden' is missing", 1, true))
  end)

  it('names a wrong input name and the candidates', function()
    assert.truthy(err(sym.FullyConnected, {datum = x, name = 'fc1', num_hidden = 2}):find(
      "FullyConnected 'fc1': input 'datum' not found; candidate inputs: data, weight, bias",
      1, true))
  end)

  it('refuses positional or unknown inputs for an already composed symbol', function()
    local fc = sym.FullyConnected{data = x, name = 'fc1', num_hidden = 2}
    assert.truthy(err(function() return fc{x} end):find(
      "symbol 'fc1' is already composed: it accepts only named inputs that replace its " ..
      'variables, got 1 positional input', 1, true))
    assert.truthy(err(function() return fc{nothere = x} end):find(
      "symbol 'fc1' is already composed and has no variable named 'nothere' to replace", 1, true))
  end)

  it('refuses deprecated <input>_lr_mult keys, bad values and multi-output inputs', function()
    assert.truthy(err(sym.FullyConnected, {data = x, name = 'fc1', num_hidden = 2,
                                           weight_lr_mult = 2}):find(
      "FullyConnected 'fc1': attribute 'weight_lr_mult' is deprecated", 1, true))
    assert.truthy(err(sym.Activation, {data = x, name = 'a', act_type = 'bogus'}):find(
      "Activation 'a': parameter 'act_type'", 1, true))
    local sl = sym.SliceChannel{data = x, num_outputs = 2, name = 's'}
    assert.truthy(err(sym.Activation, {data = sl, name = 'a2', act_type = 'relu'}):find(
      "Activation 'a2': input 'data' must be a single-output symbol, got 2 outputs", 1, true))
    assert.truthy(err(sym.elemwise_add, x, x, x):find(
      "elemwise_add 'elemwise_add0': too many inputs: expected at most 2", 1, true))
  end)
end)

describe('creation symbols', function()
  local mx = require 'luamx'
  it('builds _zeros/_ones/_full with shapes inferred from consumers', function()
    local z = mx.sym.zeros({0, 3}, {name = 'z'})
    assert.are.equal('z', z.name)
    assert.are.same({}, z:list_arguments())
    local s = mx.sym.Variable('a') + mx.sym.ones({0, 3}) + mx.sym.full({4, 3}, 2.5)
    local _, outs = s:infer_shape{a = {4, 3}}
    assert.are.same({{4, 3}}, outs)
    local exe = s:simple_bind{a = {4, 3}}
    exe:forward{a = mx.nd.ones {4, 3}}
    assert.are.same({4.5, 4.5, 4.5}, exe.outputs[1]:totable()[4])
    assert.are.same({0, 0}, mx.nd._zeros{shape = {2}}:totable())
    local _, out_types = mx.sym.zeros({2}, {dtype = 'float64'}):infer_type{}
    assert.are.same({'float64'}, out_types)
  end)
  it('rejects a full without value', function()
    local ok, err = pcall(function() return mx.sym._full{shape = {2}} end)
    assert.is_false(ok)
    assert.truthy(err:find("_full '_full", 1, true) or err:find("_full", 1, true), err)
    assert.truthy(err:find("required parameter 'value' is missing", 1, true), err)
  end)
end)
