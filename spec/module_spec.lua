-- spec/module_spec.lua — mx.mod.Module: API.md's FC example through bind / init_params /
-- init_optimizer / forward / backward / update with hand-checked numbers; parameters in and
-- out; fit, score and predict (with padding); checkpoints (optimizer state, resuming,
-- a process killed while saving); every bad-input error with its message.
local mx = require 'luamx'
local H = require 'helpers'
local nd = mx.nd

mx.logging.set_level('error') -- the specs check log lines through their own loggers

local OUT = {0.00378404, 0.07600445, 0.07600445, 0.07600445, 0.20660152, 0.5616011}
local GROW = {0.00378404, -0.92399555, 0.07600445, 0.07600445, 0.20660152, 0.5616011}

local function fc_net()
  local fc = mx.sym.FullyConnected{data = mx.sym.Variable('data'), num_hidden = 6, name = 'fc'}
  local act = mx.sym.Activation{data = fc, act_type = 'relu'}
  return mx.sym.SoftmaxOutput{data = act, name = 'softmax'}
end

local function fc_params()
  return {fc_weight = nd.ones {6, 4}, fc_bias = nd.array {1, 4, 4, 4, 5, 6}}
end

local function fc_module(batch, opts)
  opts = opts or {}
  local mod = mx.mod.Module{symbol = fc_net(), context = opts.context, logger = false}
  mod:bind{data_shapes = {{'data', {batch, 4}}}, label_shapes = {{'softmax_label', {batch}}}}
  mod:init_params{arg_params = fc_params()}
  return mod
end

local function batch_of(n, label)
  local labels = {}
  for i = 1, n do labels[i] = label or 1 end
  return mx.io.DataBatch{data = {nd.ones {n, 4}}, label = {nd.array(labels)}}
end

local function tmpdir()
  local p = os.tmpname()
  os.remove(p)
  assert(os.execute('mkdir -p ' .. p))
  return p
end

local function exists(path)
  local f = io.open(path, 'rb')
  if f then f:close() return true end
  return false
end

describe('mx.mod.Module on API.md\'s FC example', function()
  it('forward, backward and update give the documented numbers', function()
    local mod = fc_module(1)
    mod:init_optimizer{optimizer = 'sgd', optimizer_params = {learning_rate = 0.1}}
    mod:forward(batch_of(1), true)
    H.near(mod:get_outputs()[1]:toflat(), OUT, 1e-5)
    mod:backward()
    local g = mod._exec_group.grad_arrays[1][1]:totable()
    for r = 1, 6 do H.near(g[r], {GROW[r], GROW[r], GROW[r], GROW[r]}, 1e-5) end
    mod:update()
    local arg = mod:get_params()
    local bias = {1, 4, 4, 4, 5, 6}
    local want_b, want_w = {}, {}
    for r = 1, 6 do want_b[r] = bias[r] - 0.1 * GROW[r]; want_w[r] = 1 - 0.1 * GROW[r] end
    H.near(arg.fc_bias:toflat(), want_b, 1e-5)
    local w = arg.fc_weight:totable()
    for r = 1, 6 do H.near(w[r], {want_w[r], want_w[r], want_w[r], want_w[r]}, 1e-5) end
  end)

  it('has MXNet\'s names and shapes', function()
    local mod = fc_module(3)
    assert.same({'data'}, mod.data_names)
    assert.same({'softmax_output'}, mod.output_names)
    assert.same({'fc_weight', 'fc_bias'}, mod._param_names)
    assert.equal('data', mod.data_shapes[1].name)
    assert.same({3, 4}, mod.data_shapes[1].shape)
    assert.same({3}, mod.label_shapes[1].shape)
    assert.same({3, 6}, mod.output_shapes[1].shape)
  end)

  it('fixes rescale_grad = 1/batch_size at init_optimizer, also across a reshape', function()
    local mod = fc_module(2)
    mod:init_optimizer{optimizer_params = {learning_rate = 0.1}}
    assert.equal(0.5, mod._optimizer.rescale_grad)
    mod:forward(batch_of(4), true) -- another batch size reshapes the executors
    assert.same({4, 6}, mod.output_shapes[1].shape)
    local four = {}
    for i = 1, 24 do four[i] = OUT[(i - 1) % 6 + 1] end
    H.near(mod:get_outputs()[1]:toflat(), four, 1e-5)
    assert.equal(0.5, mod._optimizer.rescale_grad)
  end)

  it('two CPU contexts compute the same update as one', function()
    local one, two = fc_module(4), fc_module(4, {context = {mx.cpu(0), mx.cpu(1)}})
    local labels = nd.array {1, 0, 5, 2}
    local b = mx.io.DataBatch{data = {nd.ones {4, 4}}, label = {labels}}
    for _, m in ipairs {one, two} do
      m:init_optimizer{optimizer_params = {learning_rate = 0.1, momentum = 0.9}}
      for _ = 1, 2 do m:forward_backward(b); m:update() end
    end
    local a1, a2 = one:get_params(), two:get_params()
    H.near(a2.fc_weight:toflat(), a1.fc_weight:toflat(), 1e-6)
    H.near(a2.fc_bias:toflat(), a1.fc_bias:toflat(), 1e-6)
    assert.same({4, 6}, two:get_outputs()[1].shape)
    assert.equal(2, #two:get_outputs(false)[1])
  end)

  it('fixed_param_names are not trained; grad_req add accumulates over steps', function()
    local mod = mx.mod.Module{symbol = fc_net(), fixed_param_names = {'fc_weight'}, logger = false}
    mod:bind{data_shapes = {{'data', {1, 4}}}, label_shapes = {{'softmax_label', {1}}}}
    mod:init_params{arg_params = fc_params()}
    mod:init_optimizer{optimizer_params = {learning_rate = 0.1}}
    mod:forward_backward(batch_of(1)); mod:update()
    H.near(mod:get_params().fc_weight:toflat(), nd.ones({6, 4}):toflat())
    assert.is_false(mod._exec_group.grad_arrays[1])
    local acc = mx.mod.Module{symbol = fc_net(), logger = false}
    acc:bind{data_shapes = {{'data', {1, 4}}}, label_shapes = {{'softmax_label', {1}}}, grad_req = 'add'}
    acc:init_params{arg_params = fc_params()}
    acc:forward_backward(batch_of(1)); acc:forward_backward(batch_of(1))
    local want = {}
    for r = 1, 6 do want[r] = 2 * GROW[r] end
    H.near(acc._exec_group.grad_arrays[2][1]:toflat(), want, 1e-5)
  end)

  it('inputs_need_grad gives the gradient of the data', function()
    local mod = mx.mod.Module{symbol = fc_net(), logger = false}
    mod:bind{data_shapes = {{'data', {1, 4}}}, label_shapes = {{'softmax_label', {1}}}, inputs_need_grad = true}
    local w = {}
    for r = 1, 6 do w[r] = {r / 10, -r / 20, 0.3, r % 2} end
    mod:init_params{arg_params = {fc_weight = nd.array(w), fc_bias = nd.array {1, 4, 4, 4, 5, 6}}}
    mod:forward_backward(batch_of(1, 2))
    local p = mod:get_outputs()[1]:toflat()
    local want = {0, 0, 0, 0}
    for r = 1, 6 do -- every pre-activation is positive, so relu passes the gradient
      local g = p[r] - (r == 3 and 1 or 0)
      for c = 1, 4 do want[c] = want[c] + g * w[r][c] end
    end
    H.near(mod:get_input_grads()[1]:toflat(), want, 1e-5)
    H.raises(function() fc_module(1):get_input_grads() end, 'get_input_grads: bind with inputs_need_grad = true first')
  end)

  it('lr_mult and wd_mult come from the symbol\'s attributes', function()
    local w = mx.sym.Variable('fc_weight', {lr_mult = 0})
    local fc = mx.sym.FullyConnected{data = mx.sym.Variable('data'), weight = w, num_hidden = 6, name = 'fc'}
    local net = mx.sym.SoftmaxOutput{data = mx.sym.Activation{data = fc, act_type = 'relu'}, name = 'softmax'}
    local mod = mx.mod.Module{symbol = net, logger = false}
    mod:bind{data_shapes = {{'data', {1, 4}}}, label_shapes = {{'softmax_label', {1}}}}
    mod:init_params{arg_params = fc_params()}
    mod:init_optimizer{optimizer_params = {learning_rate = 0.1}}
    mod:forward_backward(batch_of(1)); mod:update()
    local arg = mod:get_params()
    H.near(arg.fc_weight:toflat(), nd.ones({6, 4}):toflat()) -- frozen by lr_mult = 0
    assert.is_true(math.abs(arg.fc_bias:toflat()[2] - (4 + 0.1 * 0.92399555)) < 1e-5)
  end)
end)

describe('Module monitor', function()
  it('install_monitor reports operator outputs and arguments', function()
    local mod = fc_module(1)
    local mon = mx.monitor.Monitor(1)
    mod:install_monitor(mon)
    mon:tic()
    mod:forward(batch_of(1), true)
    local names = {}
    for _, e in ipairs(mon:toc()) do names[e.name] = tonumber((tostring(e.value):gsub('%s+$', ''))) end
    assert.truthy(names.fc_output, 'fc_output')
    H.near({names.fc_weight}, {1}, 1e-6) -- RMS of a ones array
  end)
end)

describe('Module parameters', function()
  it('get_params returns CPU copies; set_params replaces them', function()
    local mod = fc_module(1)
    local arg, aux = mod:get_params()
    assert.same({}, aux)
    H.near(arg.fc_bias:toflat(), {1, 4, 4, 4, 5, 6})
    mod:set_params({fc_weight = nd.zeros {6, 4}, fc_bias = nd.zeros {6}}, {})
    mod:forward(batch_of(1), false)
    H.near(mod:get_outputs()[1]:toflat(), {1 / 6, 1 / 6, 1 / 6, 1 / 6, 1 / 6, 1 / 6}, 1e-6)
  end)

  it('missing parameters: an error, or kept with allow_missing', function()
    local mod = fc_module(1)
    H.raises(function() mod:set_params({fc_weight = nd.zeros {6, 4}}, {}) end,
      'set_params: fc_bias is not presented', 'module_spec.lua')
    mod:set_params({fc_weight = nd.zeros {6, 4}}, {}, {allow_missing = true})
    local arg = mod:get_params()
    H.near(arg.fc_weight:toflat(), nd.zeros({6, 4}):toflat())
    H.near(arg.fc_bias:toflat(), {1, 4, 4, 4, 5, 6})
  end)

  it('extra parameters: an error, or ignored with allow_extra', function()
    local mod = fc_module(1)
    local p = fc_params()
    p.other = nd.ones {2}
    H.raises(function() mod:set_params(p, {}) end,
      'set_params', '"other"', 'allow_extra')
    mod:set_params(p, {}, {allow_extra = true})
    H.near(mod:get_params().fc_bias:toflat(), {1, 4, 4, 4, 5, 6})
  end)

  it('init_params copies given arrays and initializes the rest with allow_missing', function()
    local mod = mx.mod.Module{symbol = fc_net(), logger = false}
    mod:bind{data_shapes = {{'data', {1, 4}}}, label_shapes = {{'softmax_label', {1}}}}
    mod:init_params{initializer = mx.init.Constant{value = 0.5}, arg_params = {fc_bias = nd.ones {6}},
                    allow_missing = true}
    local arg = mod:get_params()
    H.near(arg.fc_weight:toflat(), nd.full({6, 4}, 0.5):toflat())
    H.near(arg.fc_bias:toflat(), {1, 1, 1, 1, 1, 1})
    H.raises(function() mod:init_params{arg_params = {fc_bias = nd.ones {7}}, force_init = true, allow_missing = true} end,
      'fc_bias has shape (7) in the given parameters, the module expects (6)')
  end)
end)

-- Two well separated classes in 2-D: class 1 when x1 + x2 > 0.
local function separable()
  local xs, ys = {}, {}
  for i = 1, 16 do
    local s = i % 2 == 0 and 1 or -1
    xs[i] = {s * (1 + i / 16), s * (0.5 + (i % 3) / 4)}
    ys[i] = s > 0 and 1 or 0
  end
  return nd.array(xs), nd.array(ys)
end

local function two_class_net()
  local fc = mx.sym.FullyConnected{data = mx.sym.Variable('data'), num_hidden = 2, name = 'fc'}
  return mx.sym.SoftmaxOutput{data = fc, name = 'softmax'}
end

describe('fit, score and predict', function()
  it('fit reaches 100% on a separable set and logs MXNet\'s lines', function()
    mx.random.seed(1)
    local x, y = separable()
    local it = mx.io.NDArrayIter{data = x, label = y, batch_size = 4, shuffle = true}
    local lines = {}
    local mod = mx.mod.Module{symbol = two_class_net(), logger = function(_, msg) lines[#lines + 1] = msg end}
    local batches, epochs_seen = 0, {}
    mod:fit(it, {eval_data = it, num_epoch = 5, optimizer_params = {learning_rate = 0.5},
                 batch_end_callback = function(p) batches = batches + 1; assert.equal(batches - 1, p.nbatch + 4 * p.epoch) end,
                 epoch_end_callback = function(epoch, sym, arg) epochs_seen[#epochs_seen + 1] = epoch; assert.truthy(arg.fc_weight) end})
    assert.equal(20, batches)
    assert.same({0, 1, 2, 3, 4}, epochs_seen)
    assert.same({{'accuracy', 1}}, mod:score(it, 'acc'))
    assert.truthy(lines[1]:match('^Epoch%[0%] Train%-accuracy=%d%.%d%d%d%d%d%d$'))
    assert.truthy(lines[2]:match('^Epoch%[0%] Time cost=%d+%.%d%d%d$'))
    assert.truthy(lines[3]:match('^Epoch%[0%] Validation%-accuracy=%d%.%d%d%d%d%d%d$'))
    assert.equal('Epoch[4] Validation-accuracy=1.000000', lines[15])
  end)

  it('score counts padded rows (as MXNet), predict drops them', function()
    local x = nd.array {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}, {1, 1, 0, 0},
                        {0, 1, 1, 0}, {0, 0, 1, 1}, {1, 0, 0, 1}, {2, 0, 0, 0}, {0, 2, 0, 0}}
    local y = nd.array {0, 1, 2, 3, 4, 5, 0, 1, 2, 3}
    local it = mx.io.NDArrayIter{data = x, label = y, batch_size = 4}
    local mod = fc_module(4)
    local metric = mx.metric.Accuracy()
    mod:score(it, metric)
    assert.equal(12, metric.num_inst)
    local probs = mod:predict(it)
    assert.same({10, 6}, probs.shape)
    -- each row equals a forward of that sample alone
    local one = fc_module(1)
    local rows = probs:totable()
    for i = 1, 10 do
      one:forward(mx.io.DataBatch{data = {x:slice(i, i)}}, false)
      H.near(rows[i], one:get_outputs()[1]:toflat(), 1e-6)
    end
    local list = mod:predict(it, {merge_batches = false})
    assert.equal(3, #list)
    assert.same({2, 6}, list[3][1].shape)
    local seen = 0
    for outputs, nbatch, batch in mod:iter_predict(it) do
      seen = seen + outputs[1].shape[1]
      assert.equal(nbatch == 2 and 2 or 0, batch.pad)
    end
    assert.equal(10, seen)
    assert.equal(8, mod:predict(it, {num_batch = 2}).shape[1])
  end)
end)

describe('Module checkpoints', function()
  local function trained(dir)
    mx.random.seed(5)
    local mod = fc_module(2)
    mod:init_optimizer{optimizer = 'sgd', optimizer_params = {learning_rate = 0.1, momentum = 0.9}}
    local b = mx.io.DataBatch{data = {nd.array {{1, 2, 3, 4}, {4, 3, 2, 1}}}, label = {nd.array {1, 3}}}
    return mod, b
  end

  local function loss_of(mod, b)
    mod:forward(b, false)
    local p = mod:get_outputs()[1]:totable()
    return -math.log(p[1][2]) - math.log(p[2][4])
  end

  it('writes MXNet\'s files and loads them back with the optimizer state', function()
    local dir = tmpdir()
    local mod, b = trained(dir)
    for _ = 1, 2 do mod:forward_backward(b); mod:update() end
    mod:save_checkpoint(dir .. '/fc', 3, true)
    assert.is_true(exists(dir .. '/fc-symbol.json'))
    assert.is_true(exists(dir .. '/fc-0003.params'))
    assert.is_true(exists(dir .. '/fc-0003.states'))
    local raw = nd.load(dir .. '/fc-0003.params')
    assert.truthy(raw['arg:fc_weight'])
    assert.truthy(raw['arg:fc_bias'])
    local sym, arg = mx.model.load_checkpoint(dir .. '/fc', 3)
    assert.same(fc_net():list_arguments(), sym:list_arguments())
    H.near(arg.fc_bias:toflat(), mod:get_params().fc_bias:toflat())

    -- the uninterrupted run: one more step, then the loss
    mod:forward_backward(b); mod:update()
    local want = loss_of(mod, b)
    -- the resumed run
    local back = mx.mod.Module.load(dir .. '/fc', 3, true, {logger = false})
    back:bind{data_shapes = {{'data', {2, 4}}}, label_shapes = {{'softmax_label', {2}}}}
    back:init_optimizer{optimizer = 'sgd', optimizer_params = {learning_rate = 0.1, momentum = 0.9}}
    back:forward_backward(b); back:update()
    assert.equal(want, loss_of(back, b))
    H.near(back:get_params().fc_weight:toflat(), mod:get_params().fc_weight:toflat())
    -- without the optimizer state the momentum is lost: another loss
    local fresh = mx.mod.Module.load(dir .. '/fc', 3, false, {logger = false})
    fresh:bind{data_shapes = {{'data', {2, 4}}}, label_shapes = {{'softmax_label', {2}}}}
    fresh:init_optimizer{optimizer = 'sgd', optimizer_params = {learning_rate = 0.1, momentum = 0.9}}
    fresh:forward_backward(b); fresh:update()
    assert.is_true(math.abs(loss_of(fresh, b) - want) > 1e-4)
    os.execute('rm -rf ' .. dir)
  end)

  it('resumes on two contexts, where the optimizer state lives in the kvstore', function()
    local dir = tmpdir()
    local ctxs = {mx.cpu(0), mx.cpu(1)}
    local b = mx.io.DataBatch{data = {nd.array {{1, 2, 3, 4}, {4, 3, 2, 1}, {0, 1, 0, 1}, {1, 1, 1, 1}}},
                              label = {nd.array {1, 3, 0, 5}}}
    local mod = fc_module(4, {context = ctxs})
    mod:init_optimizer{optimizer_params = {learning_rate = 0.1, momentum = 0.9}}
    assert.equal('local', mod._kvstore.type)
    assert.is_true(mod._update_on_kvstore)
    for _ = 1, 2 do mod:forward_backward(b); mod:update() end
    mod:save_checkpoint(dir .. '/kv', 1, true)
    mod:forward_backward(b); mod:update()
    local back = mx.mod.Module.load(dir .. '/kv', 1, true, {context = ctxs, logger = false})
    back:bind{data_shapes = {{'data', {4, 4}}}, label_shapes = {{'softmax_label', {4}}}}
    back:init_optimizer{optimizer_params = {learning_rate = 0.1, momentum = 0.9}}
    back:forward_backward(b); back:update()
    H.near(back:get_params().fc_bias:toflat(), mod:get_params().fc_bias:toflat(), 1e-6)
    H.near(back:get_params().fc_weight:toflat(), mod:get_params().fc_weight:toflat(), 1e-6)
    os.execute('rm -rf ' .. dir)
  end)

  it('a process killed with kill -9 while saving never corrupts the previous checkpoint', function()
    local dir = tmpdir()
    local net = mx.sym.FullyConnected{data = mx.sym.Variable('data'), num_hidden = 1000, name = 'big'}
    local mod = mx.mod.Module{symbol = net, label_names = {}, logger = false}
    mod:bind{data_shapes = {{'data', {1, 1000}}}, for_training = false}
    mod:init_params{initializer = mx.init.Constant{value = 1}}
    mod:save_checkpoint(dir .. '/big', 1)
    local child = dir .. '/child.lua'
    local f = assert(io.open(child, 'w'))
    f:write(([[
      local mx = require 'luamx'
      mx.logging.set_level('error')
      local mod = mx.mod.Module.load('%s/big', 1, false, {label_names = {}})
      mod:bind{data_shapes = {{'data', {1, 1000}}}, for_training = false}
      mod:set_params({big_weight = mx.nd.full({1000, 1000}, 7), big_bias = mx.nd.full({1000}, 7)}, {})
      local n = 0
      while true do
        mod:save_checkpoint('%s/big', 1)
        n = n + 1
        local c = io.open('%s/count', 'w') c:write(n) c:close()
      end
    ]]):format(dir, dir, dir))
    f:close()
    for round = 1, 3 do
      os.remove(dir .. '/count')
      assert(os.execute(('luajit %s >/dev/null 2>&1 & echo $! > %s/pid'):format(child, dir)))
      local pid = io.open(dir .. '/pid'):read('*l')
      for _ = 1, 200 do -- wait until the child has saved at least `round` times
        local c = io.open(dir .. '/count')
        local n = c and tonumber(c:read('*a')) or 0
        if c then c:close() end
        if n >= round then break end
        os.execute('sleep 0.05')
      end
      os.execute(('sleep 0.0%d; kill -9 %s; sleep 0.05'):format(round * 3, pid))
      local loaded = mx.mod.Module.load(dir .. '/big', 1, false, {label_names = {}, logger = false})
      local w = loaded._arg_params.big_weight:toflat()
      assert.is_true(w[1] == 1 or w[1] == 7)
      assert.equal(w[1], w[#w])
      assert.equal(1000000, #w)
    end
    os.execute('rm -rf ' .. dir)
  end)
end)

describe('Module errors', function()
  it('checks the constructor\'s arguments', function()
    H.raises(function() mx.mod.Module{symbol = 'net'} end, 'mx.mod.Module: symbol must be a Symbol, got string',
      'module_spec.lua')
    H.raises(function() mx.mod.Module{symbol = fc_net(), data_names = {'x'}} end,
      'unknown data name "x": not an argument of the symbol; candidates: {data, softmax_label}')
  end)

  it('calling forward before bind, update before init_optimizer', function()
    local mod = mx.mod.Module{symbol = fc_net(), logger = false}
    H.raises(function() mod:forward(batch_of(1)) end, 'forward: the module is not bound; call bind first',
      'module_spec.lua')
    mod:bind{data_shapes = {{'data', {1, 4}}}, label_shapes = {{'softmax_label', {1}}}}
    H.raises(function() mod:forward(batch_of(1)) end,
      'forward: the module\'s parameters are not initialized; call init_params first')
    mod:init_params()
    mod:forward_backward(batch_of(1))
    H.raises(function() mod:update() end, 'update: the optimizer is not initialized; call init_optimizer first',
      'module_spec.lua')
  end)

  it('data of the wrong shape names the input, the bound and the given shape', function()
    local mod = fc_module(1)
    local b = mx.io.DataBatch{data = {nd.ones {1, 5}}, label = {nd.array {1}}}
    H.raises(function() mod:forward(b) end,
      'forward: data "data" has shape (1, 5), which does not fit the module bound with (1, 4)', 'module_spec.lua')
    H.raises(function() mod:bind{data_shapes = {{'x', {1, 4}}}, force_rebind = true} end,
      'bind: data_shapes names {x} do not match the module\'s data_names {data}')
    H.raises(function() mod:forward(mx.io.DataBatch{data = {nd.ones {1, 4}, nd.ones {1, 4}}}) end,
      'forward: the module has 1 data input(s) {data} but the batch has 2 data array(s)')
  end)

  it('a training batch without labels', function()
    local mod = fc_module(1)
    H.raises(function() mod:forward(mx.io.DataBatch{data = {nd.ones {1, 4}}}, true) end,
      'forward: the batch has no label, but the module is training with label(s) {softmax_label}',
      'module_spec.lua')
    mod:forward(mx.io.DataBatch{data = {nd.ones {1, 4}}}, false) -- inference needs none
    local unlabelled = mx.io.NDArrayIter{data = nd.ones {4, 4}, batch_size = 2}
    local m2 = mx.mod.Module{symbol = fc_net(), logger = false}
    H.raises(function() m2:fit(unlabelled, {num_epoch = 1}) end,
      'forward: the batch has no label, but the module is training with label(s) {softmax_label}',
      'module_spec.lua')
  end)

  it('unknown metric and optimizer names', function()
    local mod = fc_module(1)
    H.raises(function() mod:init_optimizer{optimizer = 'sgdd'} end, 'unknown optimizer "sgdd"', 'module_spec.lua')
    local x, y = separable()
    local it = mx.io.NDArrayIter{data = x, label = y, batch_size = 4}
    local m2 = mx.mod.Module{symbol = two_class_net(), logger = false}
    H.raises(function() m2:fit(it, {num_epoch = 1, eval_metric = 'accuracyy'}) end,
      'unknown metric "accuracyy"', 'module_spec.lua')
    H.raises(function() m2:fit(it, {}) end, 'fit: num_epoch is required')
    H.raises(function() m2:fit(it, {num_epoch = 1, learning_rate = 0.1}) end, 'fit: unknown option "learning_rate"')
  end)
end)
