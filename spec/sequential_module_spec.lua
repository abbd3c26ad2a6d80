-- spec/sequential_module_spec.lua — mx.mod.SequentialModule (MXNet's sequential_module.py)
-- and mx.mod.LuaLossModule / LuaModule (PythonLossModule / PythonModule): a chain trains
-- to the same parameters as the equivalent single Module; binding, metas, wiring, errors.
local mx = require 'luamx'
local H = require 'helpers'
local nd = mx.nd

local N, I, Hd, K, B = 12, 6, 5, 3, 4

local function rand(shape, seed, scale)
  math.randomseed(seed)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  local t = {}
  for i = 1, n do t[i] = (math.random() * 2 - 1) * (scale or 1) end
  return nd.array(t):reshape(shape)
end

local X = rand({N, I}, 1)
local Y = nd.array((function() local t = {} for i = 1, N do t[i] = (i * 7) % K end return t end)())
local PARAMS = {fc1_weight = rand({Hd, I}, 2, 0.5), fc1_bias = rand({Hd}, 3, 0.1),
                fc2_weight = rand({K, Hd}, 4, 0.5), fc2_bias = rand({K}, 5, 0.1)}

local function params_copy()
  local t = {}
  for k, v in pairs(PARAMS) do t[k] = v:copy() end
  return t
end

local function features()
  local fc1 = mx.sym.FullyConnected{data = mx.sym.Variable('data'), num_hidden = Hd, name = 'fc1'}
  return mx.sym.Activation{data = fc1, act_type = 'relu', name = 'relu1'}
end

local function train(mod)
  local it = mx.io.NDArrayIter{data = X, label = Y, batch_size = B}
  mod:fit(it, {num_epoch = 3, arg_params = params_copy(), optimizer = 'sgd',
               optimizer_params = {learning_rate = 0.5, momentum = 0.9}, batch_end_callback = false})
  return mod:get_params()
end

local function single()
  local fc2 = mx.sym.FullyConnected{data = features(), num_hidden = K, name = 'fc2'}
  return mx.mod.Module{symbol = mx.sym.SoftmaxOutput{data = fc2, name = 'softmax'}, logger = false}
end

local function assert_same_params(a, b)
  local n = 0
  for k, v in pairs(a) do
    assert.truthy(b[k], k)
    H.near(v:toflat(), b[k]:toflat(), 1e-5)
    n = n + 1
  end
  assert.equal(4, n)
  -- and training moved them
  assert.is_true(math.abs(a.fc2_weight:toflat()[1] - PARAMS.fc2_weight:toflat()[1]) > 1e-4)
end

describe('mx.mod.SequentialModule', function()
  local level
  setup(function() level = mx.logging.level; mx.logging.set_level('error') end)
  teardown(function() mx.logging.set_level(level) end)

  it('a two-module chain (auto_wiring, take_labels) trains to the same parameters as one Module', function()
    local expected = train(single())
    local head = mx.sym.SoftmaxOutput{data = mx.sym.FullyConnected{data = mx.sym.Variable('feat'), num_hidden = K,
                                                                  name = 'fc2'}, name = 'softmax'}
    local seq = mx.mod.SequentialModule{logger = false}
    seq:add(mx.mod.Module{symbol = features(), label_names = {}, logger = false})
       :add(mx.mod.Module{symbol = head, data_names = {'feat'}, logger = false}, {take_labels = true, auto_wiring = true})
    local got = train(seq)
    assert_same_params(got, expected)
    assert.same({'data'}, seq.data_names)
    assert.same({'softmax_output'}, seq.output_names)
    assert.same({B, K}, seq.output_shapes[1][2])
    assert.equal('softmax_label', seq.label_shapes[1].name)
    -- the chain predicts as the single module does
    local ref = single()
    ref:bind{data_shapes = {{'data', {B, I}}}, for_training = false}
    ref:set_params(expected, {})
    local it = mx.io.NDArrayIter{data = X, batch_size = B}
    H.near(seq:predict(it):toflat(), ref:predict(it):toflat(), 1e-5)
  end)

  it('a Module followed by a LuaLossModule trains as the Module with SoftmaxOutput', function()
    local expected = train(single())
    local scores = mx.sym.FullyConnected{data = features(), num_hidden = K, name = 'fc2'}
    local calls = 0
    local loss = mx.mod.LuaLossModule{grad_func = function(s, labels)
      calls = calls + 1
      return nd.softmax(s) - nd.one_hot(labels, {depth = K})
    end}
    local seq = mx.mod.SequentialModule()
    seq:add(mx.mod.Module{symbol = scores, label_names = {}, logger = false})
       :add(loss, {take_labels = true, auto_wiring = true})
    local got = train(seq)
    assert_same_params(got, expected)
    assert.equal(3 * N / B, calls)
    assert.same({'pyloss_output'}, loss.output_names)
    assert.equal(mx.mod.PythonLossModule, mx.mod.LuaLossModule)
  end)

  it('binds later modules with inputs_need_grad and the previous output shapes', function()
    local m1 = mx.mod.Module{symbol = features(), label_names = {}, logger = false}
    local m2 = mx.mod.Module{symbol = mx.sym.FullyConnected{data = mx.sym.Variable('relu1_output'), num_hidden = 2, name = 'o'},
                             data_names = {'relu1_output'}, label_names = {}, logger = false}
    local seq = mx.mod.SequentialModule():add(m1):add(m2)
    seq:bind{data_shapes = {{'data', {B, I}}}, label_shapes = {{'softmax_label', {B}}}}
    assert.is_false(m1.inputs_need_grad)
    assert.is_true(m2.inputs_need_grad)
    assert.same({B, Hd}, m2.data_shapes[1].shape)
    assert.is_nil(seq.label_shapes) -- nobody takes labels
    seq:init_params{initializer = mx.init.Uniform(0.1)}
    seq:forward(mx.io.DataBatch{data = {X:slice(1, B)}})
    assert.same({B, 2}, seq:get_outputs()[1].shape)
    seq:backward{nd.ones({B, 2})}
    H.raises(function() seq:get_input_grads() end, 'SequentialModule:get_input_grads: bind with inputs_need_grad = true first')
  end)

  it('refuses bad use with clear messages', function()
    H.raises(function() mx.mod.SequentialModule():add(42) end, 'SequentialModule:add: module must be a module')
    H.raises(function() mx.mod.SequentialModule():add(single(), {take_label = true}) end,
      'SequentialModule:add: Unknown meta "take_label", a typo?')
    H.raises(function() mx.mod.SequentialModule():bind{data_shapes = {{'data', {B, I}}}} end,
      'Attempting to bind an empty SequentialModule')
    H.raises(function() mx.mod.SequentialModule():add(single()):bind{data_shapes = {{'data', {B, I}}}, shared_module = single()} end,
      'Shared module is not supported')
    -- two modules using the same parameter name
    local a = mx.mod.Module{symbol = features(), label_names = {}, logger = false}
    local b = mx.mod.Module{symbol = mx.sym.FullyConnected{data = mx.sym.Variable('x'), num_hidden = Hd, name = 'fc1'},
                            data_names = {'x'}, label_names = {}, logger = false}
    local seq = mx.mod.SequentialModule():add(a):add(b, {auto_wiring = true})
    seq:bind{data_shapes = {{'data', {B, Hd}}}}
    H.raises(function() seq:init_params() end, 'Duplicated parameter names: name "fc1_', 'is already used in layer 0')
    local two = mx.sym.FullyConnected{data = mx.sym.Variable('p') + mx.sym.Variable('q'), num_hidden = 2, name = 'two'}
    local bad = mx.mod.SequentialModule():add(mx.mod.Module{symbol = features(), label_names = {}, logger = false})
      :add(mx.mod.Module{symbol = two, data_names = {'p', 'q'}, label_names = {}, logger = false}, {auto_wiring = true})
    H.raises(function() bad:bind{data_shapes = {{'data', {B, I}}}} end,
      'auto_wiring: module 2 has 2 data names {p, q} but gets 1 input(s)')
    assert.is_false(bad.binded)
    local fresh = mx.mod.SequentialModule():add(mx.mod.Module{symbol = features(), label_names = {}, logger = false})
    fresh:bind{data_shapes = {{'data', {B, I}}}}
    H.raises(function() fresh:init_params{arg_params = {nope = nd.zeros({1})}, allow_missing = true} end,
      'SequentialModule:init_params: arg_params has "nope", which no module of the chain uses')
  end)
end)

describe('mx.mod.LuaModule / LuaLossModule', function()
  it('a LuaModule runs the given Lua functions, with shapes from output_shapes', function()
    local m = mx.mod.LuaModule{data_names = {'data'}, output_names = {'double_output'},
      output_shapes = function(d) return {{'double_output', d[1].shape}} end,
      forward = function(self, batch) self._out = batch.data[1] * 2 end,
      get_outputs = function(self) return {self._out} end}
    m:bind{data_shapes = {{'data', {2, 3}}}}
    assert.same({2, 3}, m.output_shapes[1].shape)
    m:init_params(); m:init_optimizer(); m:update()
    local arg, aux = m:get_params()
    assert.same({}, arg); assert.same({}, aux)
    m:forward(mx.io.DataBatch{data = {nd.ones({2, 3})}})
    assert.same({2, 2, 2, 2, 2, 2}, m:get_outputs()[1]:toflat())
    H.raises(function() m:backward() end, 'LuaModule:backward: give the backward option or override the method')
    H.raises(function() m:bind{data_shapes = {{'x', {2, 3}}}, force_rebind = true} end,
      'LuaModule:bind: data_shapes[1] is named "x", expected "data"')
    H.raises(function() m:bind{data_shapes = {{'data', {2, 3}}}, force_rebind = true, grad_req = 'add'} end,
      "Lua modules only support grad_req = 'write', got add")
  end)

  it("take MXNet's positional arguments as well as keyword tables", function()
    local g = function() end
    local a = mx.mod.LuaLossModule('l2', {'x'}, {'y'}, false, g)
    assert.same({'l2_output'}, a.output_names)
    assert.same({'x'}, a.data_names)
    assert.same({'y'}, a.label_names)
    assert.equal(g, a._grad_func)
    local m = mx.mod.LuaModule({'d'}, {}, {'o_output'})
    assert.same({'o_output'}, m.output_names)
    local lines = {}
    local seq = mx.mod.SequentialModule(function(level, msg) lines[#lines + 1] = level .. ' ' .. msg end)
    seq:add(a)
    seq:bind{data_shapes = {{'x', {1, 2}}}}
    seq:bind{data_shapes = {{'x', {1, 2}}}}
    assert.same({1, 2}, seq.output_shapes[1].shape)
    assert.same({'warning Already bound, ignoring bind()'}, lines)
  end)

  it('LuaLossModule passes scores through, checks grad_func results, ignores metrics without labels', function()
    local loss = mx.mod.LuaLossModule{name = 'l', grad_func = function() return {{1, 2}} end}
    loss:bind{data_shapes = {{'data', {1, 2}}}, label_shapes = {{'softmax_label', {1}}}}
    local s = nd.array({{0.5, 0.25}})
    loss:forward(mx.io.DataBatch{data = {s}, label = {nd.array({1})}}, true)
    assert.equal(s, loss:get_outputs()[1])
    loss:backward()
    assert.same({{1, 2}}, loss:get_input_grads()[1]:totable())
    H.raises(function() loss:backward({s}) end, 'For a loss module, out_grads should be nil')
    local metric = mx.metric.create('acc')
    loss:update_metric(metric, {nd.array({0})})
    assert.equal(1, metric.num_inst)
    local bad = mx.mod.LuaLossModule{grad_func = function() return nd.zeros({3}) end}
    bad:bind{data_shapes = {{'data', {1, 2}}}}
    bad:forward(mx.io.DataBatch{data = {s}, label = {nd.array({1})}}, true)
    H.raises(function() bad:backward() end, 'LuaLossModule:backward: grad_func returned shape (3) for scores of shape (1, 2)')
    local unl = mx.mod.LuaLossModule{}
    unl:bind{data_shapes = {{'data', {1, 2}}}}
    unl:forward(mx.io.DataBatch{data = {s}}, false)
    unl:update_metric(metric, {nd.array({0})})
    assert.equal(1, metric.num_inst) -- ignored: bound without labels
    H.raises(function() mx.mod.LuaLossModule{data_names = {'a', 'b'}} end,
      'mx.mod.LuaLossModule: exactly one data name is needed, got 2')
    H.raises(function() mx.mod.LuaLossModule{grad_func = 3} end, 'grad_func must be a function(scores, labels), got number')
  end)
end)
