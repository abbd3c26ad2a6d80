-- mx.gluon on mx.autograd: the W1 MLP trained eagerly (Trainer + SGD with momentum and
-- weight decay) for 50 steps ends with the same parameters as the same MLP trained by
-- Module (same initialisation, data and optimizer); hybridize gives the eager outputs
-- and gradients; blocks, parameters and their errors.
local mx = require 'luamx'
local H = require 'helpers'

jit.off() -- hybridized blocks call back into Lua from backward

local nn = mx.gluon.nn

local function max_rel_diff(a, b)
  local fa, fb = a:toflat(), b:toflat()
  assert(#fa == #fb, 'sizes differ')
  local m = 0
  for i = 1, #fa do
    local d = math.abs(fa[i] - fb[i]) / math.max(1, math.abs(fb[i]))
    if d > m then m = d end
  end
  return m
end

local BS, STEPS = 32, 50
local OPT = {learning_rate = 0.1, momentum = 0.9, wd = 0.0001}

local function batches()
  local x, y = mx.datasets.digits()
  local list = {}
  for s = 1, STEPS do
    local first = ((s - 1) * BS) % (x.shape[1] - BS) + 1
    list[s] = {x:slice(first, first + BS - 1):copy(), y:slice(first, first + BS - 1):copy()}
  end
  return list
end

local function symbolic(data)
  mx.random.seed(3)
  local net = mx.sym.Variable('data')
  net = mx.sym.FullyConnected{data = net, num_hidden = 128, name = 'fc1'}
  net = mx.sym.Activation{data = net, act_type = 'relu', name = 'relu1'}
  net = mx.sym.FullyConnected{data = net, num_hidden = 64, name = 'fc2'}
  net = mx.sym.Activation{data = net, act_type = 'relu', name = 'relu2'}
  net = mx.sym.FullyConnected{data = net, num_hidden = 10, name = 'fc3'}
  net = mx.sym.SoftmaxOutput{data = net, name = 'softmax'}
  local mod = mx.mod.Module{symbol = net, context = mx.cpu()}
  mod:bind{data_shapes = {{'data', {BS, 64}}}, label_shapes = {{'softmax_label', {BS}}}}
  mod:init_params{initializer = mx.init.Xavier{magnitude = 2}}
  mod:init_optimizer{optimizer = 'sgd', optimizer_params = OPT}
  for _, b in ipairs(data) do
    mod:forward_backward(mx.io.DataBatch{data = {b[1]}, label = {b[2]}})
    mod:update()
  end
  return (mod:get_params())
end

local function mlp()
  local net = nn.Sequential()
  net:add(nn.Dense(128, {activation = 'relu', in_units = 64}),
          nn.Dense(64, {activation = 'relu', in_units = 128}),
          nn.Dense(10, {in_units = 64}))
  return net
end

describe('mx.gluon', function()
  it('trains the W1 MLP eagerly to the parameters of symbolic training', function()
    local data = batches()
    local sym_params = symbolic(data)
    mx.random.seed(3)
    local net = mlp()
    net:initialize(mx.init.Xavier{magnitude = 2})
    local trainer = mx.gluon.Trainer(net:collect_params(), 'sgd', OPT)
    for _, b in ipairs(data) do
      local out = mx.autograd.record(function()
        return mx.nd.SoftmaxOutput(net(b[1]), b[2])
      end)
      out:backward()
      trainer:step(BS)
    end
    local params = net:collect_params():list()
    local names = {'fc1_weight', 'fc1_bias', 'fc2_weight', 'fc2_bias', 'fc3_weight', 'fc3_bias'}
    assert.equal(6, #params)
    for i, nm in ipairs(names) do
      local d = max_rel_diff(params[i]:data(), sym_params[nm])
      assert(d < 1e-4, ('%s (%s) differs from the symbolic run by %g'):format(params[i].name, nm, d))
    end
    -- and training did move them
    assert.is_true(max_rel_diff(params[1]:data(), mx.nd.zeros{128, 64}) > 0.01)
  end)

  it('SoftmaxCrossEntropyLoss trains like SoftmaxOutput (same gradients)', function()
    local data = batches()
    local function run(use_loss)
      mx.random.seed(3)
      local net = mlp()
      net:initialize(mx.init.Xavier{magnitude = 2})
      local trainer = mx.gluon.Trainer(net:collect_params(), 'sgd', OPT)
      local ce = mx.gluon.loss.SoftmaxCrossEntropyLoss()
      for s = 1, 5 do
        local b = data[s]
        local out = mx.autograd.record(function()
          if use_loss then return ce(net(b[1]), b[2]) end
          return mx.nd.SoftmaxOutput(net(b[1]), b[2])
        end)
        out:backward()
        trainer:step(BS)
      end
      return net:collect_params():list()
    end
    local a, b = run(true), run(false)
    for i = 1, #a do
      assert(max_rel_diff(a[i]:data(), b[i]:data()) < 1e-5, a[i].name)
    end
    -- the loss value: -log softmax at the label
    local l = mx.gluon.loss.SoftmaxCrossEntropyLoss()(mx.nd.array{{0, 0}}, mx.nd.array{1})
    H.near(l:toflat(), {math.log(2)}, 1e-6)
    H.raises(function() mx.gluon.loss.SoftmaxCrossEntropyLoss()(1, 2) end,
      'SoftmaxCrossEntropyLoss', 'expected (pred, label) NDArrays')
  end)

  it('hybridize gives the eager outputs and gradients (Conv2D, BatchNorm, Dense)', function()
    mx.random.seed(1)
    local function build()
      local net = nn.Sequential()
      net:add(nn.Conv2D(4, 3, {padding = 1}), nn.BatchNorm(), nn.Activation('relu'),
              nn.Dropout(0.5), nn.Dense(5))
      return net
    end
    local eager, hybrid = build(), build()
    local x = mx.nd.random.uniform(-1, 1, {2, 3, 5, 5})
    eager:initialize(mx.init.Xavier())
    eager(x) -- deferred shapes
    hybrid:initialize(mx.init.Xavier())
    hybrid(x)
    local ep, hp = eager:collect_params():list(), hybrid:collect_params():list()
    for i = 1, #ep do hp[i]:set_data(ep[i]:data()) end
    hybrid:hybridize()
    -- prediction mode: the same outputs
    local ye, yh = eager(x), hybrid(x)
    assert.is_true(max_rel_diff(yh, ye) < 1e-5)
    -- training: the same gradients (Dropout draws the same mask after the same seed)
    local label = mx.nd.array{1, 3}
    local function step(net)
      mx.random.seed(9)
      local out = mx.autograd.record(function() return mx.nd.SoftmaxOutput(net(x), label) end)
      out:backward()
      return out
    end
    local oe, oh = step(eager), step(hybrid)
    assert.is_true(max_rel_diff(oh, oe) < 1e-5)
    for i = 1, #ep do
      if ep[i].grad_req ~= 'null' then
        local d = max_rel_diff(hp[i]:grad(), ep[i]:grad())
        assert(d < 1e-4, ('%s: gradient differs by %g'):format(ep[i].name, d))
      else
        -- running statistics moved the same way in training
        assert(max_rel_diff(hp[i]:data(), ep[i]:data()) < 1e-5, ep[i].name)
      end
    end
    -- the traced symbol: the data, then the parameters by name; running stats as aux
    local sym = hybrid._hybrid['2x3x5x5'].sym
    local args = sym:list_arguments()
    assert.equal(7, #args)
    assert.equal('data', args[1])
    assert.equal(hp[1].name, args[2])
    assert.same({hp[5].name, hp[6].name}, sym:list_auxiliary_states())
  end)

  it('save_parameters / load_parameters round-trip; export loads as a checkpoint', function()
    mx.random.seed(6)
    local function build()
      return nn.Sequential():add(nn.Dense(4, {activation = 'relu', in_units = 3}),
        nn.BatchNorm({in_channels = 4}), nn.Dense(2, {in_units = 4}))
    end
    local a, b = build(), build()
    a:initialize(mx.init.Xavier())
    b:initialize(mx.init.Zero())
    local path = os.tmpname()
    a:save_parameters(path)
    b:load_parameters(path)
    local x = mx.nd.random.uniform(-1, 1, {5, 3})
    H.near(b(x):toflat(), a(x):toflat(), 1e-6)
    local c = nn.Sequential():add(nn.Dense(7, {in_units = 3}))
    c:initialize()
    H.raises(function() c:load_parameters(path) end, 'load_parameters', "parameter '0.weight'",
      'expected shape 7x3, got 4x3')
    local d = nn.Dense(4, {in_units = 3})
    d:initialize()
    H.raises(function() d:load_parameters(path) end, 'load_parameters', "has no parameter 'weight'")
    os.remove(path)
    -- export: the traced symbol and arg:/aux: parameters, bound again by a Module
    H.raises(function() a:export(path) end, 'export', 'expected a hybridized block')
    a:hybridize()
    local y = a(x)
    a:export(path, 3)
    local sym, args, aux = mx.model.load_checkpoint(path, 3)
    local exe = sym:bind{args = (function()
      local t = {data = x}
      for k, v in pairs(args) do t[k] = v end
      return t
    end)(), aux_states = aux}
    exe:forward()
    H.near(exe.outputs[1]:toflat(), y:toflat(), 1e-5)
    os.remove(path .. '-symbol.json')
    os.remove(path .. '-0003.params')
  end)

  it('collect_params names and orders parameters; errors name the block', function()
    local net = nn.Sequential({prefix = 'model_'})
    local d = nn.Dense(3, {prefix = 'out_'})
    net:add(nn.Dense(4, {prefix = 'hid_', in_units = 2}), d)
    local keys = net:collect_params():keys()
    assert.same({'hid_weight', 'hid_bias', 'out_weight', 'out_bias'}, keys)
    H.raises(function() d.weight:data() end, "Parameter 'out_weight' has not been initialized")
    H.raises(function() nn.Dense(0) end, 'nn.Dense', 'units', 'positive integer', 'got 0')
    H.raises(function() nn.Dropout(1.5) end, 'nn.Dropout', 'rate', 'got 1.5')
    H.raises(function() nn.Activation(3) end, 'nn.Activation', 'expected an activation name')
    H.raises(function() net(mx.nd.ones{1, 2}) end, "Parameter 'hid_weight' has not been initialized")
    net:initialize()
    local y = net(mx.nd.ones{1, 2})
    assert.same({1, 3}, y.shape)
    assert.same({3, 4}, d.weight:data().shape) -- deferred: in_units from the input
    H.raises(function() mx.gluon.Trainer(net:collect_params(), 42) end, 'gluon.Trainer', 'optimizer')
  end)

  it('grad_req add on parameters accumulates over steps until zero_grad', function()
    mx.random.seed(4)
    local d = nn.Dense(2, {in_units = 3})
    d:initialize()
    local params = d:collect_params()
    params:setattr('grad_req', 'add')
    local x = mx.nd.ones{1, 3}
    for _ = 1, 2 do mx.autograd.record(function() return mx.nd.sum(d(x)) end):backward() end
    H.near(d.bias:grad():toflat(), {2, 2}, 1e-6)
    -- a step inside a record scope is not recorded (and not refused as in-place)
    local trainer = mx.gluon.Trainer(params, 'sgd', {learning_rate = 1})
    local before = d.bias:data():toflat()
    mx.autograd.record(function() trainer:step(1) end)
    H.near(d.bias:data():toflat(), {before[1] - 2, before[2] - 2}, 1e-6)
    params:zero_grad()
    H.near(d.bias:grad():toflat(), {0, 0})
  end)
end)
