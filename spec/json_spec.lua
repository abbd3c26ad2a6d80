-- json_spec.lua — MXNet symbol JSON: byte-identical writing (MXNet 1.4 fixture), round
-- trips, legacy 0.8 upgrades, the NNVM-era VGG fixture with full shape inference, save
-- and load files, and hostile input with asserted messages.
local mx = require 'luamx'
local sym = mx.sym

local FIX = (os.getenv('LUAMX_FIXTURES') or '../shared/fixtures') .. '/mxnet/'

local function read(path)
  local f = assert(io.open(path, 'rb'))
  local s = f:read('*a')
  f:close()
  return s
end

local function err(f, ...)
  local ok, e = pcall(f, ...)
  assert(not ok, 'expected an error')
  return tostring(e)
end

local function build_mlp()
  local data = sym.Variable('data')
  local fc1 = sym.FullyConnected{data = data, name = 'fc1', num_hidden = 128}
  local act1 = sym.Activation{data = fc1, name = 'relu1', act_type = 'relu'}
  local fc2 = sym.FullyConnected{data = act1, name = 'fc2', num_hidden = 64}
  local act2 = sym.Activation{data = fc2, name = 'relu2', act_type = 'relu'}
  local fc3 = sym.FullyConnected{data = act2, name = 'fc3', num_hidden = 10}
  return sym.SoftmaxOutput{data = fc3, name = 'softmax'}
end

describe('tojson', function()
  it('writes the MXNet 1.4 fixture byte for byte, apart from the version', function()
    local ref = read(FIX .. 'mlp-symbol-v1.4.json')
    local expected = ref:gsub('%["int", 10400%]', '["int", 10901]')
    assert.are_not.equal(ref, expected)
    assert.are.equal(expected, build_mlp():tojson())
  end)

  it('round-trips the fixtures byte for byte', function()
    local ref = read(FIX .. 'mlp-symbol-v1.4.json')
    local s = sym.load_json(ref)
    assert.are.equal((ref:gsub('10400', '10901')), s:tojson())
    for _, f in ipairs{'vgg16-like-symbol-v1.2.json', 'save_000800.json'} do
      local once = sym.load(FIX .. f):tojson()
      assert.are.equal(once, sym.load_json(once):tojson())
    end
    -- The VGG file comes from an MKL-DNN build whose Pooling has a hidden workspace
    -- output, so only its node_row_ptr differs from ours; every other byte matches (the
    -- stored file also ends with a newline that MXNet's writer does not emit).
    local vgg = read(FIX .. 'vgg16-like-symbol-v1.2.json'):gsub('10200', '10901'):gsub('\n$', '')
    local mine = sym.load_json(vgg):tojson()
    local function strip(t) return (t:gsub('"node_row_ptr": %b[]', '')) end
    assert.are.equal(strip(vgg), strip(mine))
    assert.are_not.equal(vgg, mine)
  end)

  it('writes aux entries with version 1, long lists multi-line and escapes strings', function()
    local x = sym.Variable('x', {attr = {__note__ = 'a"b\\c\n'}})
    local bn = sym.BatchNorm{data = x, name = 'bn'}
    local js = bn:tojson()
    assert.truthy(js:find('"inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 1], [4, 0, 1]]', 1, true))
    assert.truthy(js:find('"attrs": {"__note__": "a\\"b\\\\c\\n"}', 1, true))
    assert.truthy(js:find('"node_row_ptr": [0, 1, 2, 3, 4, 5, 8]', 1, true))
    local many = {}
    for i = 1, 11 do many[i] = sym.Variable('v' .. i) end
    local cat = sym.Concat(unpack(many))
    local cj = cat:tojson()
    assert.truthy(cj:find('"inputs": [\n        [0, 0, 0], \n        [1, 0, 0], ', 1, true))
    assert.truthy(cj:find('"arg_nodes": [\n    0, \n    1, ', 1, true))
    assert.are.equal(cj, sym.load_json(cj):tojson())
  end)

  it('saves atomically and loads back', function()
    local path = os.tmpname()
    local s = build_mlp()
    s:save(path)
    assert.are.equal(s:tojson(), read(path))
    assert.are.equal(s:tojson(), sym.load(path):tojson())
    os.remove(path)
    assert.truthy(err(sym.load, path):find("cannot open '" .. path .. "'", 1, true))
    assert.truthy(err(s.save, s, '/nonexistent-dir/x.json'):find(
      "/nonexistent-dir/x.json: cannot create temporary file /nonexistent-dir/x.json.tmp.", 1, true))
  end)
end)

describe('legacy JSON (MXNet 0.8, save_000800.json)', function()
  local s = sym.load(FIX .. 'save_000800.json')

  it('adds BatchNorm aux states as <node>_<input> variables', function()
    assert.are.same({'data', 'fc1_weight', 'fc1_bias', 'fc2_weight', 'fc2_bias', 'fc3_weight',
                     'fc3_bias', 'batchnorm0_gamma', 'batchnorm0_beta', 'softmax_label'},
                    s:list_arguments())
    assert.are.same({'batchnorm0_moving_mean', 'batchnorm0_moving_var'},
                    s:list_auxiliary_states())
    local d = s:attr_dict()
    d.batchnorm0_moving_mean.__init__ = nil -- checked below
    assert.are.same({__ctx_group__ = 'stage2', ctx_group = 'stage2', eps = '0.001',
                     fix_gamma = 'True', momentum = '0.9', use_global_stats = 'False'},
                    d.batchnorm0_moving_mean)
  end)

  it('gives the added aux variables their __init__ (upgrade 0.9.4)', function()
    local d = s:attr_dict()
    assert.are.equal('["zero", {}]', d.batchnorm0_moving_mean.__init__)
    assert.are.equal('["one", {}]', d.batchnorm0_moving_var.__init__)
  end)

  it('moves hidden keys: weight_lr_mult to the weight, lr_mult to __lr_mult__', function()
    local d = s:attr_dict()
    assert.are.same({__ctx_group__ = 'stage1', ctx_group = 'stage1', __lr_mult__ = '0.2',
                     lr_mult = '0.2'}, d.data)
    assert.are.equal('1.2', d.fc1_weight.__lr_mult__)
    assert.are.equal('0.3', d.fc1_weight.__wd_mult__)
    assert.is_nil(d.fc1.weight_lr_mult)
    assert.are.same({__ctx_group__ = 'stage1', ctx_group = 'stage1', __wd_mult__ = '0.3',
                     wd_mult = '0.3', no_bias = 'False', num_hidden = '128'}, d.fc1)
    -- on a variable the suffixed key stays verbatim
    assert.are.equal('1.2', d.fc1_bias.weight_lr_mult)
    assert.is_nil(d.fc1_bias.__lr_mult__)
    assert.are.equal('0.01', d.fc2_weight.__lr_mult__)
  end)

  it('infers shapes through the upgraded graph', function()
    local args, outs, aux = s:infer_shape{data = {16, 50}}
    assert.are.same({128, 50}, args[2])
    assert.are.same({{16, 10}}, outs)
    assert.are.same({{10}, {10}}, aux)
  end)
end)

describe('the VGG-16-like fixture (MXNet 1.2)', function()
  it('loads and infers every shape from data (1, 3, 224, 224)', function()
    local v = sym.load(FIX .. 'vgg16-like-symbol-v1.2.json')
    local args, outs, aux = v:infer_shape{data = {1, 3, 224, 224}}
    assert.are.equal(34, #args)
    for i, a in ipairs(args) do assert.is_true(#a > 0, v:list_arguments()[i]) end
    assert.are.same({{1, 1000}}, outs)
    assert.are.same({}, aux)
    local int = v:get_internals()
    local _, iout = int:infer_shape{data = {1, 3, 224, 224}}
    local by = {}
    for i, n in ipairs(int:list_outputs()) do by[n] = iout[i] end
    assert.are.same({64, 3, 3, 3}, by.conv1_1_weight)
    assert.are.same({1, 64, 112, 112}, by.pool1_output)
    assert.are.same({1, 512, 14, 14}, by.pool5_output)
    assert.are.same({1024, 512, 3, 3}, by.fc6_weight)
    assert.are.same({1, 1024, 14, 14}, by.fc6_output)
    assert.are.same({1, 1024, 1, 1}, by.global_pool_output)
    assert.are.same({1, 1000}, by.flatten0_output)
  end)
end)

describe('hostile JSON', function()
  local VAR = '{"op": "null", "name": "x", "inputs": []}'
  local function graph(nodes, extra)
    return '{"nodes": [' .. table.concat(nodes, ', ') .. '], "arg_nodes": [0], "heads": [[' ..
           (#nodes - 1) .. ', 0, 0]]' .. (extra or '') .. '}'
  end
  local function fc(inputs, attrs)
    return '{"op": "FullyConnected", "name": "fc", "attrs": ' .. (attrs or '{"num_hidden": "2"}') ..
           ', "inputs": ' .. inputs .. '}'
  end
  local W = '{"op": "null", "name": "w", "inputs": []}'
  local B = '{"op": "null", "name": "b", "inputs": []}'
  local cases = {
    {'', 'symbol JSON: line 1, column 0'},
    {'[]', 'symbol JSON must be an object'},
    {'{}', "field 'nodes' is missing or not a list"},
    {'{"nodes": [], "arg_nodes": [], "heads": []}', "field 'nodes' holds 0 nodes"},
    {'{"nodes": [1], "arg_nodes": [], "heads": [[0, 0, 0]]}', 'node 0: expected an object'},
    {graph{'{"op": "null", "inputs": []}'}, "node 0: field 'name' is missing or not a string"},
    {graph{'{"op": 3, "name": "x", "inputs": []}'}, "node 0 'x': field 'op' is missing or not a string"},
    {graph{'{"op": "null", "name": "x"}'}, "node 0 'x': field 'inputs' is missing or not a list"},
    {graph{VAR, '{"op": "Bogus", "name": "y", "inputs": []}'}, "node 1 'y': unknown operator 'Bogus'"},
    {graph{fc('[[1, 0, 0], [1, 0, 0], [1, 0, 0]]'), VAR},
     "node 0 'fc': input 0: refers to node 1, which is not an earlier node (forward, self or cyclic reference)"},
    {graph{VAR, W, B, fc('[[0, 0, 0], [4, 0, 0], [2, 0, 0]]'), VAR},
     "node 3 'fc': input 1: refers to node 4, which is not an earlier node (forward, self or cyclic reference)"},
    {graph{VAR, W, B, fc('[[0, 0, 0], [3, 0, 0], [2, 0, 0]]')},
     "node 3 'fc': input 1: refers to node 3, which is not an earlier node (forward, self or cyclic reference)"},
    {graph{VAR, W, B, fc('[[0, 0, 0], [99, 0, 0], [2, 0, 0]]')},
     "node 3 'fc': input 1: refers to node 99, which is not an earlier node (out of range)"},
    {graph{VAR, W, B, fc('[[0, 0, 0], [1e30, 0, 0], [2, 0, 0]]')},
     "node 3 'fc': input 1: element 0 must be a non-negative integer"},
    {graph{VAR, W, B, fc('[[0, 0, 0], [1, 0, -1], [2, 0, 0]]')},
     "node 3 'fc': input 1: element 2 must be a non-negative integer"},
    {graph{VAR, W, B, fc('[[0, 0, 0], [1, 4294967296, 0], [2, 0, 0]]')},
     "node 3 'fc': input 1: element 1 must be a non-negative integer"},
    {graph{VAR, W, B, fc('[[0, 0, 0], [99999999999999999999999, 0, 0], [2, 0, 0]]')},
     'too big integer'},
    {graph{VAR, W, B, fc('[[0], [1, 0, 0], [2, 0, 0]]')},
     "node 3 'fc': input 0: expected an entry [node_id, index, version]"},
    {graph{VAR, W, B, fc('[[0, 0, 0], [1, 0, 0], [2, 0, 0]]', '{"num_hidden": 5}')},
     "node 3 'fc': attrs 'num_hidden' must be a string"},
    {graph{VAR, W, B, fc('[[0, 0, 0], [1, 0, 0], [2, 0, 0]]', '[1]')},
     "node 3 'fc': field 'attrs' must be an object"},
    {graph{VAR, W, B, fc('[[0, 0, 0], [1, 0, 0], [2, 0, 0]]', '{"num_hidden": "abc"}')},
     "node 3: FullyConnected 'fc': parameter 'num_hidden'"},
    {graph{VAR, W, B, fc('[[0, 0, 0], [1, 0, 0], [2, 0, 0]]', '{}')},
     "node 3: FullyConnected 'fc': required parameter 'num_hidden' is missing"},
    {graph{VAR, W, B, fc('[[0, 0, 0], [1, 0, 0], [2, 0, 0]]', '{"num_hidden": "2", "bogus": "1"}')},
     "node 3: FullyConnected 'fc': unknown parameter 'bogus'"},
    {graph({VAR, fc('[[0, 0, 0]]')}, ', "attrs": {"mxnet_version": ["int", 10901]}'),
     "node 1 'fc': FullyConnected expects 3 inputs (3 arguments, 0 aux states), got 1"},
    {graph{VAR, W, B, fc('[[0, 1, 0], [1, 0, 0], [2, 0, 0]]')},
     "node 3 'fc': input 'data' refers to output 1 of 'x', which has 1 output(s)"},
    {graph{VAR, '{"op": "null", "name": "v", "inputs": [[0, 0, 0]]}'},
     "node 1 'v': a variable cannot have inputs"},
    {'{"nodes": [' .. VAR .. '], "heads": [[0, 0, 0]]}', "field 'arg_nodes' is missing or not a list"},
    {'{"nodes": [' .. VAR .. ', ' .. W .. ', ' .. B .. ', ' .. fc('[[0, 0, 0], [1, 0, 0], [2, 0, 0]]') ..
     '], "arg_nodes": [3], "heads": [[3, 0, 0]]}', "arg_nodes[0]: node 3 'fc' is not a variable"},
    {'{"nodes": [' .. VAR .. '], "arg_nodes": [7], "heads": [[0, 0, 0]]}',
     'arg_nodes[0]: expected a node id in [0, 1)'},
    {'{"nodes": [' .. VAR .. '], "arg_nodes": [0]}', "field 'heads' is missing, not a list or empty"},
    {'{"nodes": [' .. VAR .. '], "arg_nodes": [0], "heads": [[5, 0, 0]]}',
     'heads[0]: refers to node 5, which is not an earlier node (out of range)'},
    {'{"nodes": [' .. VAR .. '], "arg_nodes": [0], "heads": [[0, 3, 0]]}', "heads[0]: node 'x' has no output 3"},
    {graph({VAR}, ', "attrs": {"mxnet_version": ["str", 1]}'),
     'attrs: \'mxnet_version\' must be ["int", <version>]'},
    {graph({VAR}, ', "attrs": 7'), "field 'attrs' must be an object"},
    {graph{VAR, '{"op": "null", "name": "v", "inputs": [], "control_deps": [1]}'},
     "node 1 'v': control_deps[0] must be the id of an earlier node"},
    {graph{VAR, '{"op": "null", "name": "v", "inputs": [], "subgraphs": [{}]}'},
     "node 1 'v': subgraphs are not supported"},
    {graph{VAR, '{"op": "null", "name": "x", "name": "y", "inputs": []}'}, 'duplicate object key'},
    {graph{VAR, '{"op": "null", "name": "a\\u0000b", "inputs": []}'}, 'is not allowed without JSON_ALLOW_NUL'},
    {string.rep('[', 5000) .. string.rep(']', 5000), 'maximum parsing depth reached'},
  }
  -- BatchNorm whose aux state is an op output (only variables can be mutated)
  local g = '{"nodes": [' .. VAR .. ', {"op": "null", "name": "g", "inputs": []}, ' ..
            '{"op": "null", "name": "b", "inputs": []}, {"op": "null", "name": "m", "inputs": []}, ' ..
            '{"op": "Activation", "name": "r", "attrs": {"act_type": "relu"}, "inputs": [[0, 0, 0]]}, ' ..
            '{"op": "BatchNorm", "name": "bn", "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 1], [4, 0, 0]]}], ' ..
            '"arg_nodes": [0, 1, 2, 3], "heads": [[5, 0, 0]], "attrs": {"mxnet_version": ["int", 10901]}}'
  cases[#cases + 1] = {g, "node 5 'bn': aux state 'moving_var' must be a variable, got the output of 'r'"}

  for i, c in ipairs(cases) do
    it(('fails cleanly on case %d (%s)'):format(i, c[2]), function()
      local e = err(sym.load_json, c[1])
      assert.truthy(e:find(c[2], 1, true), e)
    end)
  end

  it('stays usable after failures', function()
    assert.are.same({'x'}, sym.load_json(graph{VAR}):list_arguments())
  end)
end)

describe('allocation failures', function()
  local ffi = require 'ffi'
  local C = mx.capi.C

  local function live()
    collectgarbage('collect')
    collectgarbage('collect')
    local b = ffi.new('int64_t[1]')
    C.lmx_debug_alloc_stats(b, nil, nil)
    return tonumber(b[0])
  end

  it('fail cleanly at every allocation of load, build, infer and tojson, leaking nothing', function()
    local text = read(FIX .. 'save_000800.json')
    local function work()
      local s = sym.load_json(text)
      s:infer_shape{data = {4, 6}}
      local j = s:tojson()
      local fc = sym.FullyConnected{data = s:get_internals()['fc3_output'], num_hidden = 3,
                                    name = 'extra'}
      return #j + #fc:list_arguments() + #fc:debug_str()
    end
    local expected = work()
    local base = live()
    local failures = 0
    for n = 1, 2000 do
      C.lmx_debug_alloc_fail_at(n)
      local ok, res = pcall(work)
      C.lmx_debug_alloc_fail_at(0)
      if ok then
        assert.are.equal(expected, res)
      else
        failures = failures + 1
        assert.truthy(tostring(res):find('out of memory', 1, true) or
                      tostring(res):find('allocat', 1, true), tostring(res))
      end
      assert.are.equal(base, live(), 'live blocks after failing allocation ' .. n)
      if ok then break end
    end
    assert.is_true(failures > 50)
  end)
end)
