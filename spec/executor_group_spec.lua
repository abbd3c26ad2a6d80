-- mx.executor_manager: DataParallelExecutorGroup over the engine's group (src/exec/group.c)
-- and the legacy DataParallelExecutorManager: MXNet's slicing, equivalence of two contexts
-- with an uneven work load to one context, merged outputs, monitor delivery on the
-- caller's thread, params, reshape, errors naming the context.
local ffi = require 'ffi'
local mx = require 'luamx'
local H = require 'helpers'

ffi.cdef [[ unsigned long pthread_self(void); ]]

local EM = mx.executor_manager
local TOL = 1e-5

local function net()
  local data = mx.sym.Variable('data')
  local fc = mx.sym.FullyConnected{data = data, num_hidden = 3, name = 'fc'}
  return mx.sym.SoftmaxOutput{data = fc, name = 'softmax'}
end

local X = {{1, 2, 3, 4}, {2, 3, 4, 5}, {0, 1, 0, 1}, {1, 1, 1, 1},
           {3, 2, 1, 0}, {0, 0, 1, 2}, {1, 0, 0, 1}, {2, 2, 2, 2}}
local Y = {0, 1, 2, 0, 1, 2, 0, 1}
local W = {{0.1, -0.2, 0.3, -0.4}, {0.5, 0.1, -0.1, 0.2}, {-0.3, 0.4, 0.2, 0.1}}
local BIAS = {0.1, 0.2, 0.3}

local function group(ctxs, wl, batch)
  batch = batch or 8
  local g = EM.DataParallelExecutorGroup{symbol = net(), contexts = ctxs, workload = wl,
    data_shapes = {{'data', {batch, 4}}}, label_shapes = {{'softmax_label', {batch}}},
    param_names = {'fc_weight', 'fc_bias'}, for_training = true}
  g:set_params({fc_weight = mx.nd.array(W), fc_bias = mx.nd.array(BIAS)}, {})
  return g
end

local function batch(n)
  local x, y = {}, {}
  for i = 1, n do x[i], y[i] = X[i], Y[i] end
  return {data = {mx.nd.array(x)}, label = {mx.nd.array(y)}}
end

local function step(g)
  g:forward(batch(8), true)
  g:backward()
end

describe('slicing (MXNet _split_input_slice)', function()
  local cases = {
    {7, {1, 1}, {{0, 4}, {4, 7}}},
    {10, {1, 1, 1}, {{0, 3}, {3, 6}, {6, 10}}},
    {8, {1, 1, 1}, {{0, 3}, {3, 6}, {6, 8}}},
    {5, {1, 1}, {{0, 2}, {2, 5}}},
    {10, {1, 2}, {{0, 3}, {3, 10}}},
    {100, {3, 1}, {{0, 75}, {75, 100}}},
    {9, {1, 1, 1, 1}, {{0, 2}, {2, 4}, {4, 6}, {6, 9}}},
    {8, {1, 3}, {{0, 2}, {2, 8}}},
    {6, {0.5, 0.5, 2}, {{0, 1}, {1, 2}, {2, 6}}},
  }
  for _, c in ipairs(cases) do
    it(('batch %d over work loads {%s}'):format(c[1], table.concat(c[2], ', ')), function()
      assert.are.same(c[3], EM.split_input_slice(c[1], c[2]))
    end)
  end

  it('impossible splits raise MXNet\'s error', function()
    H.raises(function() EM.split_input_slice(6, {1, 1, 1, 1}) end,
      'Too many slices such that some splits are empty', 'slice 4 would be [6, 6)')
    H.raises(function() EM.split_input_slice(3, {1, 1, 1, 1}) end,
      'Too many slices such that some splits are empty')
    H.raises(function() group({mx.cpu(0), mx.cpu(1), mx.cpu(2), mx.cpu(3)}, nil, 3) end,
      'Too many slices such that some splits are empty', 'batch size 3 over 4 devices')
  end)

  it('the group reports its slices and batch size', function()
    local g = group({mx.cpu(0), mx.cpu(1)}, {1, 3})
    assert.are.same({{0, 2}, {2, 8}}, g.slices)
    assert.are.equal(8, g.batch_size)
    assert.are.same({2, 4}, g.execs[1].arg_dict.data.shape)
    assert.are.same({6, 4}, g.execs[2].arg_dict.data.shape)
    assert.are.same({{name = 'softmax_output', shape = {8, 3}, 'softmax_output', {8, 3}}},
      g.output_shapes)
  end)

  it('a work load list of the wrong length is refused', function()
    H.raises(function() group({mx.cpu(0), mx.cpu(1)}, {1}) end, 'Invalid settings for work load.')
  end)
end)

describe('two contexts with work loads {1, 3} equal one context', function()
  local one, two
  before_each(function()
    one = group({mx.cpu(0)})
    two = group({mx.cpu(0), mx.cpu(1)}, {1, 3})
    step(one)
    step(two)
  end)

  it('merged outputs', function()
    local a, b = one:get_outputs()[1], two:get_outputs()[1]
    assert.are.same({8, 3}, b.shape)
    H.near(b:toflat(), a:toflat(), TOL)
  end)

  it('unmerged outputs are each context\'s rows', function()
    local parts = two:get_outputs(false)[1]
    assert.are.equal(2, #parts)
    assert.are.same({2, 3}, parts[1].shape)
    assert.are.same({6, 3}, parts[2].shape)
    local all = one:get_outputs()[1]:toflat()
    local joined = parts[1]:toflat()
    for _, v in ipairs(parts[2]:toflat()) do joined[#joined + 1] = v end
    H.near(joined, all, TOL)
  end)

  it('gradients summed over the contexts', function()
    two:sum_gradients()
    for i = 1, 2 do
      local ref = one.grad_arrays[i][1]:toflat()
      H.near(two.grad_arrays[i][1]:toflat(), ref, TOL)
      H.near(two.grad_arrays[i][2]:toflat(), ref, TOL)
    end
  end)

  it('before the sum, each context holds the gradient of its own slice', function()
    local g1, g2 = two.grad_arrays[1][1]:toflat(), two.grad_arrays[1][2]:toflat()
    local ref = one.grad_arrays[1][1]:toflat()
    local sum = {}
    for j = 1, #ref do sum[j] = g1[j] + g2[j] end
    H.near(sum, ref, TOL)
    assert.is_true(math.abs(g1[1] - ref[1]) > 1e-3)
  end)

  it('updated weights through a local kvstore (sum, update once, broadcast)', function()
    local opt = mx.optimizer.create('sgd', {learning_rate = 0.5})
    local up = mx.optimizer.get_updater(mx.optimizer.create('sgd', {learning_rate = 0.5}))
    local kv = mx.kv.create('local')
    kv:set_optimizer(opt)
    for i, name in ipairs(two.param_names) do
      kv:init(name, two.param_arrays[i][1])
      kv:push(name, two.grad_arrays[i])
      kv:pull(name, two.param_arrays[i])
      up(i, one.grad_arrays[i][1], one.param_arrays[i][1])
    end
    for i = 1, 2 do
      local ref = one.param_arrays[i][1]:toflat()
      H.near(two.param_arrays[i][1]:toflat(), ref, TOL)
      H.near(two.param_arrays[i][2]:toflat(), ref, TOL)
    end
    assert.is_true(math.abs(one.param_arrays[1][1]:toflat()[1] - W[1][1]) > 1e-3)
  end)
end)

describe('monitor', function()
  it('delivers each context\'s records on the calling thread, context 1 first', function()
    local g = group({mx.cpu(0), mx.cpu(1)}, {1, 3})
    local main = ffi.C.pthread_self()
    local seen = {}
    local mon = {install = function(_, target)
      target:set_monitor_callback(function(name, arr)
        seen[#seen + 1] = {target = target, name = name, shape = arr.shape,
                           same_thread = ffi.C.pthread_self() == main}
      end)
    end}
    g:install_monitor(mon)
    g:forward(batch(8), true)
    assert.are.equal(4, #seen)
    local names, shapes = {}, {}
    for i, r in ipairs(seen) do
      assert.is_true(r.same_thread)
      names[i], shapes[i] = r.name, r.shape
    end
    assert.are.same({'fc_output', 'softmax_output', 'fc_output', 'softmax_output'}, names)
    assert.are.same({{2, 3}, {2, 3}, {6, 3}, {6, 3}}, shapes)
    assert.are.equal(seen[1].target, seen[2].target)
    assert.are_not.equal(seen[1].target, seen[3].target)
  end)

  it('works with mx.monitor.Monitor', function()
    local g = group({mx.cpu(0), mx.cpu(1)}, {1, 1})
    local mon = mx.monitor.Monitor(1, nil, 'fc_')
    g:install_monitor(mon)
    mon:tic()
    g:forward(batch(8), true)
    local names = {}
    for _, e in ipairs(mon:toc()) do names[#names + 1] = e.name end
    assert.are.same({'fc_output', 'fc_output', 'fc_weight', 'fc_bias', 'fc_weight', 'fc_bias'}, names)
  end)

  it('an error in a callback is raised after the step', function()
    local g = group({mx.cpu(0), mx.cpu(1)}, {1, 1})
    g:install_monitor({install = function(_, t) t:set_monitor_callback(function() error('boom') end) end})
    H.raises(function() g:forward(batch(8), true) end, 'monitor callback failed', 'boom')
  end)
end)

describe('parameters', function()
  it('set_params copies to every context; get_params averages them', function()
    local g = group({mx.cpu(0), mx.cpu(1)}, {1, 3})
    H.near(g.param_arrays[1][2]:toflat(), mx.nd.array(W):toflat(), 0)
    g.param_arrays[2][1]:set({1, 1, 1})
    g.param_arrays[2][2]:set({3, 5, 7})
    local arg = {fc_weight = mx.nd.zeros{3, 4}, fc_bias = mx.nd.zeros{3}}
    g:get_params(arg, {})
    assert.are.same({2, 3, 4}, arg.fc_bias:toflat())
    H.near(arg.fc_weight:toflat(), mx.nd.array(W):toflat(), TOL)
  end)

  it('param_arrays / grad_arrays are lists over contexts in param_names order', function()
    local g = group({mx.cpu(0), mx.cpu(1)}, {1, 1})
    assert.are.equal(2, #g.param_arrays)
    assert.are.equal(2, #g.param_arrays[1])
    assert.are.same({3, 4}, g.param_arrays[1][2].shape)
    assert.are.same({3}, g.grad_arrays[2][1].shape)
    assert.are.equal(0, #g.aux_arrays)
  end)
end)

describe('reshape', function()
  it('to a new batch size: new slices, parameters kept, results as one context', function()
    local g = group({mx.cpu(0), mx.cpu(1)}, {1, 3})
    local w_before = g.param_arrays[1][2]:toflat()
    g:reshape({{'data', {4, 4}}}, {{'softmax_label', {4}}})
    assert.are.same({{0, 1}, {1, 4}}, g.slices)
    assert.are.equal(4, g.batch_size)
    H.near(g.param_arrays[1][2]:toflat(), w_before, 0)
    g:forward(batch(4), false)
    local out = g:get_outputs()[1]
    assert.are.same({4, 3}, out.shape)
    local one = group({mx.cpu(0)}, nil, 4)
    one:forward(batch(4), false)
    H.near(out:toflat(), one:get_outputs()[1]:toflat(), TOL)
  end)

  it('shares the parameters with the executors first bound', function()
    local g = group({mx.cpu(0), mx.cpu(1)}, {1, 1})
    local first = g.param_arrays[1][1]
    g:reshape({{'data', {6, 4}}}, {{'softmax_label', {6}}})
    g.param_arrays[1][1]:fill(0.25)
    assert.are.equal(0.25, first:toflat()[1])
  end)

  it('bind_exec rebinds for new shapes; with reshape = true it reshapes', function()
    local g = group({mx.cpu(0), mx.cpu(1)}, {1, 3})
    local w = g.param_arrays[1][1]
    g:bind_exec({{'data', {4, 4}}}, {{'softmax_label', {4}}}, nil, true)
    assert.are.same({{0, 1}, {1, 4}}, g.slices)
    w:fill(2)
    assert.are.equal(2, g.param_arrays[1][1]:toflat()[1])
    g:bind_exec({{'data', {12, 4}}}, {{'softmax_label', {12}}})
    assert.are.same({{0, 3}, {3, 12}}, g.slices)
    assert.are.equal(0, g.param_arrays[1][1]:toflat()[1]) -- fresh executors
  end)

  it('a batch of another size without reshape is refused, naming the input', function()
    local g = group({mx.cpu(0), mx.cpu(1)}, {1, 1})
    H.raises(function() g:forward(batch(4), false) end, "input 'data'",
      'reshape the group for a new batch size')
  end)
end)

describe('sharing and lifetime', function()
  it('a group bound with shared_group shares parameters and gradients per context', function()
    local g1 = group({mx.cpu(0), mx.cpu(1)}, {1, 3})
    local g2 = EM.DataParallelExecutorGroup{symbol = net(), contexts = {mx.cpu(0), mx.cpu(1)},
      workload = {1, 3}, data_shapes = {{'data', {4, 4}}}, label_shapes = {{'softmax_label', {4}}},
      param_names = {'fc_weight', 'fc_bias'}, for_training = true, shared_group = g1}
    assert.are.same({{0, 1}, {1, 4}}, g2.slices)
    g2.param_arrays[2][2]:set({7, 8, 9})
    assert.are.same({7, 8, 9}, g1.param_arrays[2][2]:toflat())
    g2:forward(batch(4), true)
    g2:backward()
    assert.are.same(g2.grad_arrays[1][2]:toflat(), g1.grad_arrays[1][2]:toflat())
  end)

  it('inputs_need_grad: merged input gradients equal one context\'s, and are not summed', function()
    local function g_in(ctxs, wl)
      local g = EM.DataParallelExecutorGroup{symbol = net(), contexts = ctxs, workload = wl,
        data_shapes = {{'data', {8, 4}}}, label_shapes = {{'softmax_label', {8}}},
        param_names = {'fc_weight', 'fc_bias'}, for_training = true, inputs_need_grad = true}
      g:set_params({fc_weight = mx.nd.array(W), fc_bias = mx.nd.array(BIAS)}, {})
      step(g)
      return g
    end
    local one, two = g_in({mx.cpu(0)}), g_in({mx.cpu(0), mx.cpu(1)}, {1, 3})
    two:sum_gradients()
    local ref = one:get_input_grads()[1]
    local got = two:get_input_grads()[1]
    assert.are.same({8, 4}, got.shape)
    H.near(got:toflat(), ref:toflat(), TOL)
    assert.are.same({2, 4}, two:get_input_grads(false)[1][1].shape)
  end)

  it('for_training = false binds no gradients', function()
    local g = EM.DataParallelExecutorGroup{symbol = net(), contexts = {mx.cpu(0), mx.cpu(1)},
      data_shapes = {{'data', {8, 4}}}, label_shapes = {{'softmax_label', {8}}},
      param_names = {'fc_weight', 'fc_bias'}, for_training = false}
    assert.is_false(g.grad_arrays[1])
    g:set_params({fc_weight = mx.nd.array(W), fc_bias = mx.nd.array(BIAS)}, {})
    g:forward(batch(8))
    assert.are.same({8, 3}, g:get_outputs()[1].shape)
  end)

  it('a group with a monitor installed is collected, with its threads and executors', function()
    local function once()
      local g = group({mx.cpu(0), mx.cpu(1)}, {1, 1})
      g:install_monitor(mx.monitor.Monitor(1))
      g:forward(batch(8), true)
    end
    once()
    H.full_gc()
    local before = H.live_blocks()
    once()
    H.full_gc()
    assert.are.equal(before, H.live_blocks())
  end)
end)

describe('free', function()
  it('is refused from a callback inside the group\'s own step, and works after it', function()
    H.full_gc()
    local before = H.live_blocks()
    local g = group({mx.cpu(0), mx.cpu(1)}, {1, 1})
    local calls = 0
    g:install_monitor({install = function(_, t)
      t:set_monitor_callback(function() calls = calls + 1; g:free() end)
    end})
    H.raises(function() g:forward(batch(8), true) end, 'monitor callback',
      'DataParallelExecutorGroup:free: cannot run while the group\'s forward or backward is running')
    assert.is_true(calls >= 1)
    -- still usable: the free was refused
    g:install_monitor({install = function(_, t) t:set_monitor_callback(function() end) end})
    g:forward(batch(8), false)
    local one = group({mx.cpu()})
    one:forward(batch(8), false)
    local one_out = one:get_outputs()[1]:toflat()
    H.near(g:get_outputs()[1]:toflat(), one_out, TOL)
    one = nil
    local out = g:get_outputs()[1]
    g:free()
    g:free() -- a second free does nothing
    H.raises(function() g:forward(batch(8), false) end,
      'DataParallelExecutorGroup: the group was freed (group:free())')
    assert.are.same({8, 3}, out.shape) -- arrays handed out stay valid
    H.near(out:toflat(), one_out, TOL)
    out = nil
    g = nil
    H.full_gc()
    assert.are.equal(before, H.live_blocks())
  end)
end)

describe('errors from the workers', function()
  it('name the failing context', function()
    local g = group({mx.cpu(0), mx.cpu(1)}, {1, 1})
    H.raises(function() g:backward() end, 'group: context cpu(0) (device 1 of 2)',
      'before backward')
  end)
end)

describe('DataParallelExecutorManager', function()
  local function iter(n)
    return {batch_size = n, provide_data = {{'data', {n, 4}}}, provide_label = {{'softmax_label', {n}}}}
  end

  it('loads, runs and copies parameters out as MXNet\'s legacy manager', function()
    local sym = net()
    local m = EM.DataParallelExecutorManager{symbol = sym, ctx = {mx.cpu(0), mx.cpu(1)},
      train_data = iter(8), arg_names = sym:list_arguments(),
      param_names = {'fc_weight', 'fc_bias'}, aux_names = {}, work_load_list = {1, 3}}
    assert.are.same({{0, 2}, {2, 8}}, m.slices)
    m:set_params({fc_weight = mx.nd.array(W), fc_bias = mx.nd.array(BIAS)}, {})
    m:load_data_batch(batch(8))
    m:forward(true)
    m:backward()
    local one = group({mx.cpu(0)})
    step(one)
    local g1, g2 = m.grad_arrays[1][1]:toflat(), m.grad_arrays[1][2]:toflat()
    local sum = {}
    for j = 1, #g1 do sum[j] = g1[j] + g2[j] end
    H.near(sum, one.grad_arrays[1][1]:toflat(), TOL)
    local arg = {fc_weight = mx.nd.zeros{3, 4}, fc_bias = mx.nd.zeros{3}}
    m:copy_to(arg, {})
    H.near(arg.fc_bias:toflat(), BIAS, TOL)
  end)

  it('refuses a monitor with sym_gen, as MXNet', function()
    local sym = net()
    local data = iter(4)
    data.default_bucket_key = 4
    local m = EM.DataParallelExecutorManager{symbol = sym, ctx = {mx.cpu(0)}, train_data = data,
      param_names = {'fc_weight', 'fc_bias'}, sym_gen = function() return net() end}
    H.raises(function() m:install_monitor(mx.monitor.Monitor(1)) end,
      'Monitoring is not implemented for bucketing')
  end)
end)
