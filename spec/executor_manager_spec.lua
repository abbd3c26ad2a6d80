-- mx.executor_manager as MXNet 1.x's python/mxnet/executor_manager.py documents it: the
-- DataParallelExecutorGroup(sym, arg_names, param_names, ctx, slices, train_data,
-- shared_group) constructor (positional and keyword), its load_data_batch / forward
-- (is_train) / backward / update_metric (pre_sliced) and param_arrays / grad_arrays /
-- aux_arrays / data_arrays / train_execs, and DataParallelExecutorManager's constructor,
-- install_monitor, set_params, copy_to, properties, load_data_batch, forward, backward,
-- update_metric and _split_input_slice. One block per documented item; the reference
-- values are a single-context executor bound by hand (simple_bind), which the
-- documentation says the data-parallel split must equal (gradients summed over devices).
local mx = require 'luamx'
local H = require 'helpers'

local EM = mx.executor_manager
local TOL = 1e-5

local X = {{1, 2, 3, 4}, {2, 3, 4, 5}, {0, 1, 0, 1}, {1, 1, 1, 1},
           {3, 2, 1, 0}, {0, 0, 1, 2}, {1, 0, 0, 1}, {2, 2, 2, 2}}
local Y = {0, 1, 2, 0, 1, 2, 0, 1}
local W = {{0.1, -0.2, 0.3, -0.4}, {0.5, 0.1, -0.1, 0.2}, {-0.3, 0.4, 0.2, 0.1}}
local BIAS = {0.1, 0.2, 0.3}

-- data -> FullyConnected -> BatchNorm (an aux state) -> SoftmaxOutput
local function net()
  local fc = mx.sym.FullyConnected{data = mx.sym.Variable('data'), num_hidden = 3, name = 'fc'}
  local bn = mx.sym.BatchNorm{data = fc, name = 'bn', fix_gamma = false}
  return mx.sym.SoftmaxOutput{data = bn, name = 'softmax'}
end
local PARAMS = {'fc_weight', 'fc_bias', 'bn_gamma', 'bn_beta'}

local function arg_params()
  return {fc_weight = mx.nd.array(W), fc_bias = mx.nd.array(BIAS),
          bn_gamma = mx.nd.array{1, 0.5, 2}, bn_beta = mx.nd.array{0, 0.1, -0.1}}
end
local function aux_params()
  return {bn_moving_mean = mx.nd.array{0.1, 0.2, 0.3}, bn_moving_var = mx.nd.array{1, 2, 3}}
end

local function data_iter(n)
  return {batch_size = n, provide_data = {{'data', {n, 4}}}, provide_label = {{'softmax_label', {n}}}}
end

local function batch()
  return {data = {mx.nd.array(X)}, label = {mx.nd.array(Y)}}
end

-- the reference: one executor over the whole batch
local function reference(is_train)
  local sym = net()
  local exe = sym:simple_bind{ctx = mx.cpu(), data = {8, 4}, softmax_label = {8}}
  exe:copy_params_from(arg_params(), aux_params())
  exe.arg_dict.data:set(mx.nd.array(X))
  exe.arg_dict.softmax_label:set(mx.nd.array(Y))
  exe:forward{is_train = is_train}
  if is_train then exe:backward() end
  return exe
end

local function two_ctx() return {mx.cpu(0), mx.cpu(1)} end

local function documented_group(slices)
  local sym = net()
  local g = EM.DataParallelExecutorGroup(sym, sym:list_arguments(), PARAMS, two_ctx(),
    slices or {{0, 3}, {3, 8}}, data_iter(8))
  for _, e in ipairs(g.train_execs) do e:copy_params_from(arg_params(), aux_params()) end
  return g
end

local function concat_rows(parts)
  local out = {}
  for _, p in ipairs(parts) do for _, v in ipairs(p:toflat()) do out[#out + 1] = v end end
  return out
end

describe('_split_input_slice (documented: ValueError when a split would be empty)', function()
  it('splits by work load with the remainder on the last device', function()
    assert.are.same({{0, 4}, {4, 7}}, EM._split_input_slice(7, {1, 1}))
    assert.are.same({{0, 3}, {3, 10}}, EM._split_input_slice(10, {1, 2}))
  end)
  it('raises when some split is empty', function()
    H.raises(function() EM._split_input_slice(3, {1, 1, 1, 1}) end, 'Too many slices such that some splits are empty')
  end)
end)

describe('DataParallelExecutorGroup(sym, arg_names, param_names, ctx, slices, train_data, shared_group)', function()
  it('binds one executor per context with the slice sizes as batch', function()
    local g = documented_group()
    assert.equal(2, #g.train_execs)
    assert.are.same({3, 4}, g.train_execs[1].arg_dict.data.shape)
    assert.are.same({5, 4}, g.train_execs[2].arg_dict.data.shape)
    assert.are.same({5}, g.train_execs[2].arg_dict.softmax_label.shape)
    assert.are.same({{0, 3}, {3, 8}}, g.slices)
    assert.are.same({'data'}, g.data_names)
    assert.are.same({'softmax_label'}, g.label_names)
    assert.are.same({'bn_moving_mean', 'bn_moving_var'}, g.aux_names)
  end)

  it('keeps param_names in arg_names order and only names that are arguments', function()
    local sym = net()
    local g = EM.DataParallelExecutorGroup(sym, sym:list_arguments(),
      {'bn_beta', 'fc_weight', 'not_an_argument'}, two_ctx(), {{0, 4}, {4, 8}}, data_iter(8))
    assert.are.same({'fc_weight', 'bn_beta'}, g.param_names)
    assert.equal(2, #g.param_arrays)
    assert.are.same({3, 4}, g.param_arrays[1][1].shape)
  end)

  it('accepts the same arguments as one keyword table', function()
    local sym = net()
    local g = EM.DataParallelExecutorGroup{sym = sym, arg_names = sym:list_arguments(), param_names = PARAMS,
      ctx = two_ctx(), slices = {{0, 6}, {6, 8}}, train_data = data_iter(8)}
    assert.are.same({6, 4}, g.train_execs[1].arg_dict.data.shape)
    assert.are.same({2, 4}, g.train_execs[2].arg_dict.data.shape)
  end)

  it('shares parameter arrays with shared_group', function()
    local base = documented_group()
    local sym = net()
    local g = EM.DataParallelExecutorGroup(sym, sym:list_arguments(), PARAMS, two_ctx(),
      {{0, 3}, {3, 8}}, data_iter(8), base)
    base.param_arrays[1][2]:set(mx.nd.ones{3, 4} * 7)
    local sevens = {}
    for i = 1, 12 do sevens[i] = 7 end
    H.near(g.param_arrays[1][2]:toflat(), sevens, 0)
  end)

  it('rejects bad arguments, naming them', function()
    local sym = net()
    H.raises(function() EM.DataParallelExecutorGroup(sym, {'data'}, PARAMS, two_ctx(), {{0, 4}, {4, 8}}, data_iter(8)) end,
      'DataParallelExecutorGroup: arg_names must equal sym:list_arguments()')
    H.raises(function() EM.DataParallelExecutorGroup(sym, sym:list_arguments(), PARAMS, two_ctx(), {{0, 4}}, data_iter(8)) end,
      'slices must hold one {begin, end} per context (2), got 1')
    H.raises(function() EM.DataParallelExecutorGroup(sym, sym:list_arguments(), PARAMS, two_ctx(), {{0, 4}, {5, 8}}, data_iter(8)) end,
      'slices[2] must be {4, end > 4} (contiguous from 0), got {5, 8}')
    H.raises(function() EM.DataParallelExecutorGroup(sym, sym:list_arguments(), PARAMS, two_ctx(), {{0, 4}, {4, 8}}, 5) end,
      'train_data must have provide_data and provide_label, got number')
  end)
end)

describe('DataParallelExecutorGroup:load_data_batch / data_arrays / label_arrays', function()
  it('copies each context its slice of the batch', function()
    local g = documented_group()
    g:load_data_batch(batch())
    assert.are.same({0, 3}, g.data_arrays[1][1][1])
    H.near(g.data_arrays[1][1][2]:toflat(), {1, 2, 3, 4, 2, 3, 4, 5, 0, 1, 0, 1}, 0)
    H.near(g.label_arrays[1][2][2]:toflat(), {0, 1, 2, 0, 1}, 0)
    H.near(g.train_execs[2].arg_dict.data:toflat(), mx.nd.array(X):slice(4, 8):toflat(), 0)
  end)
end)

describe('DataParallelExecutorGroup:forward(is_train=False) and backward()', function()
  it('forward() runs in inference mode: outputs equal one executor with is_train false', function()
    local g = documented_group()
    g:load_data_batch(batch())
    g:forward()
    H.near(concat_rows{g.train_execs[1].outputs[1], g.train_execs[2].outputs[1]},
      reference(false).outputs[1]:toflat(), TOL)
  end)

  it('forward(true) trains (batch statistics) and backward() sums to the whole-batch gradients', function()
    -- a 4 + 4 split: BatchNorm's batch statistics are per device, so compare with two
    -- reference executors over the halves
    local g = documented_group({{0, 4}, {4, 8}})
    g:load_data_batch(batch())
    g:forward(true)
    g:backward()
    local halves = {}
    for k = 1, 2 do
      local sym = net()
      local exe = sym:simple_bind{ctx = mx.cpu(), data = {4, 4}, softmax_label = {4}}
      exe:copy_params_from(arg_params(), aux_params())
      exe.arg_dict.data:set(mx.nd.array(X):slice(4 * k - 3, 4 * k))
      exe.arg_dict.softmax_label:set(mx.nd.array(Y):slice(4 * k - 3, 4 * k))
      exe:forward{is_train = true}
      exe:backward()
      halves[k] = exe
    end
    H.near(g.train_execs[1].outputs[1]:toflat(), halves[1].outputs[1]:toflat(), TOL)
    for i, p in ipairs(PARAMS) do
      H.near(g.grad_arrays[i][1]:toflat(), halves[1].grad_dict[p]:toflat(), TOL)
      H.near(g.grad_arrays[i][2]:toflat(), halves[2].grad_dict[p]:toflat(), TOL)
    end
    -- training moved the moving statistics as the reference did
    H.near(g.aux_arrays[1][2]:toflat(), halves[2].aux_dict.bn_moving_mean:toflat(), TOL)
  end)

  it('forward with a DataBatch (the module-era form) still loads and runs', function()
    local g = documented_group()
    g:forward(batch(), false)
    H.near(concat_rows{g.train_execs[1].outputs[1], g.train_execs[2].outputs[1]},
      reference(false).outputs[1]:toflat(), TOL)
  end)

  it('rejects a forward argument that is neither a batch nor a boolean', function()
    local g = documented_group()
    H.raises(function() g:forward(1) end, 'forward: data_batch must be a DataBatch or is_train a boolean, got number')
  end)
end)

describe('DataParallelExecutorGroup:update_metric(metric, labels, pre_sliced)', function()
  it('pairs each context with its label slice; pre_sliced takes per-context label lists', function()
    local g = documented_group()
    g:load_data_batch(batch())
    g:forward()
    local whole = mx.metric.Accuracy()
    whole:update({mx.nd.array(Y)}, reference(false).outputs)
    local m = mx.metric.Accuracy()
    g:update_metric(m, {mx.nd.array(Y)})
    assert.equal(8, m.num_inst)
    assert.equal(select(2, whole:get()), select(2, m:get()))
    local pre = mx.metric.Accuracy()
    local y = mx.nd.array(Y)
    g:update_metric(pre, {{y:slice(1, 3)}, {y:slice(4, 8)}}, true)
    assert.equal(select(2, whole:get()), select(2, pre:get()))
    H.raises(function() g:update_metric(pre, {{y}}, true) end,
      'update_metric: pre_sliced labels must hold one list per context (2), got 1')
  end)
end)

describe('DataParallelExecutorManager(symbol, ctx, train_data, arg_names, param_names, aux_names, work_load_list, logger, sym_gen)', function()
  local function manager(wl, logger)
    local sym = net()
    return EM.DataParallelExecutorManager(sym, two_ctx(), data_iter(8), sym:list_arguments(), PARAMS,
      sym:list_auxiliary_states(), wl, logger)
  end

  it('splits train_data.batch_size by work_load_list and logs the contexts', function()
    local lines = {}
    local m = manager({1, 3}, {info = function(s) lines[#lines + 1] = s end})
    assert.are.same({{0, 2}, {2, 8}}, m.slices)
    assert.are.same({2, 4}, m.execgrp.train_execs[1].arg_dict.data.shape)
    assert.equal(1, #lines)
    assert.truthy(lines[1]:find('Start training with', 1, true))
  end)

  it('defaults work_load_list to equal shares, and checks its length', function()
    assert.are.same({{0, 4}, {4, 8}}, manager().slices)
    H.raises(function() manager({1, 2, 3}) end, 'Invalid settings for work load.')
  end)

  it('accepts the same arguments as one keyword table', function()
    local sym = net()
    local m = EM.DataParallelExecutorManager{symbol = sym, ctx = two_ctx(), train_data = data_iter(8),
      arg_names = sym:list_arguments(), param_names = PARAMS, aux_names = sym:list_auxiliary_states()}
    assert.are.same({{0, 4}, {4, 8}}, m.slices)
  end)

  it('set_params copies into every executor, copy_to averages the devices', function()
    local m = manager()
    m:set_params(arg_params(), aux_params())
    H.near(m.param_arrays[1][2]:toflat(), mx.nd.array(W):toflat(), 0)
    -- make the two devices differ, copy_to gives their mean
    m.param_arrays[3][1]:set(mx.nd.array{1, 1, 1})
    m.param_arrays[3][2]:set(mx.nd.array{3, 5, 7})
    m.aux_arrays[2][1]:set(mx.nd.array{2, 2, 2})
    m.aux_arrays[2][2]:set(mx.nd.array{4, 4, 4})
    local arg, aux = arg_params(), aux_params()
    m:copy_to(arg, aux)
    H.near(arg.bn_gamma:toflat(), {2, 3, 4}, TOL)
    H.near(aux.bn_moving_var:toflat(), {3, 3, 3}, TOL)
    H.near(arg.fc_weight:toflat(), mx.nd.array(W):toflat(), TOL)
    H.raises(function() m:copy_to({fc_weight = arg.fc_weight}, aux) end, "copy_to: arg_params has no array for 'fc_bias'")
  end)

  it('set_params refuses a name the executors lack', function()
    local m = manager()
    local extra = arg_params()
    extra.nope = mx.nd.zeros{1}
    H.raises(function() m:set_params(extra, aux_params()) end, 'nope')
  end)

  it('param_arrays, grad_arrays and aux_arrays are the group\'s, per parameter then per device', function()
    local m = manager()
    assert.equal(#PARAMS, #m.param_arrays)
    assert.equal(#PARAMS, #m.grad_arrays)
    assert.equal(2, #m.aux_arrays)
    assert.equal(2, #m.grad_arrays[1])
    assert.equal(m.execgrp.param_arrays, m.param_arrays)
  end)

  it('load_data_batch, forward, backward and update_metric act on the loaded group', function()
    local m = manager()
    H.raises(function() m:forward() end, 'call load_data_batch first')
    m:set_params(arg_params(), aux_params())
    m:load_data_batch(batch())
    m:forward()                                   -- is_train defaults to false
    local ref = reference(false)
    H.near(concat_rows{m.execgrp.train_execs[1].outputs[1], m.execgrp.train_execs[2].outputs[1]},
      ref.outputs[1]:toflat(), TOL)
    local acc = mx.metric.Accuracy()
    m:update_metric(acc, {mx.nd.array(Y)})
    local whole = mx.metric.Accuracy()
    whole:update({mx.nd.array(Y)}, ref.outputs)
    assert.equal(select(2, whole:get()), select(2, acc:get()))
    local pre = mx.metric.Accuracy()
    local y = mx.nd.array(Y)
    m:update_metric(pre, {{y:slice(1, 4)}, {y:slice(5, 8)}}, true) -- pre_sliced reaches the group
    assert.equal(select(2, whole:get()), select(2, pre:get()))
    m:forward(true)
    m:backward()
    assert.is_true(m.grad_arrays[1][1]:abs():sum():tonumber() > 0)
  end)

  it('install_monitor installs on every executor; with sym_gen it is refused', function()
    local m = manager()
    m:set_params(arg_params(), aux_params())
    local mon = mx.monitor.Monitor(1, nil, 'fc_output')
    m:install_monitor(mon)
    mon:tic()
    m:load_data_batch(batch())
    m:forward(true)
    local names = {}
    for _, e in ipairs(mon:toc()) do names[#names + 1] = e.name end
    assert.equal(2, #names) -- one fc_output per executor
    local data = data_iter(8)
    data.default_bucket_key = 8
    local sym = net()
    local b = EM.DataParallelExecutorManager(sym, two_ctx(), data, sym:list_arguments(), PARAMS,
      sym:list_auxiliary_states(), nil, nil, function() return net() end)
    H.raises(function() b:install_monitor(mx.monitor.Monitor(1)) end, 'Monitoring is not implemented for bucketing')
  end)

  it('with sym_gen, load_data_batch builds a group per bucket sharing the parameters', function()
    local data = data_iter(8)
    data.default_bucket_key = 'a'
    local sym = net()
    local calls = 0
    local m = EM.DataParallelExecutorManager(sym, two_ctx(), data, sym:list_arguments(), PARAMS,
      sym:list_auxiliary_states(), nil, nil, function() calls = calls + 1 return net() end)
    m:set_params(arg_params(), aux_params())
    local b = batch()
    b.bucket_key = 'a'
    m:load_data_batch(b)
    assert.equal(0, calls)
    b.bucket_key = 'b'
    b.provide_data, b.provide_label = data.provide_data, data.provide_label
    m:load_data_batch(b)
    assert.equal(1, calls)
    assert.are_not.equal(m.execgrp, m.curr_execgrp)
    m:forward()
    H.near(concat_rows{m.curr_execgrp.train_execs[1].outputs[1], m.curr_execgrp.train_execs[2].outputs[1]},
      reference(false).outputs[1]:toflat(), TOL)
  end)
end)
