-- spec/fuse_conv_chain_spec.lua — the executor's fused forward of a Convolution followed
-- by BatchNorm at inference and/or an Activation or clip (src/exec/fuse.c,
-- src/ops/cpu/conv_chain.c, kernels/cpu/chan_ep.c; the memory plan keeps the
-- Convolution's inputs alive over the chain, src/passes/plan_memory.c): which graphs it
-- takes (the debug_str notes say so, and say when a run fell back), and its outputs and
-- gradients against the step-by-step path (a monitor installed turns the fusion off) and
-- against plain Lua. Then BatchNorm followed by an activation (src/ops/cpu/norm.c,
-- kernels/cpu/norm.c), in training too, and the plan freeing BatchNorm's output, which its
-- backward does not read (src/passes/plan_graph.c).
local mx = require 'luamx'
local H = require 'helpers'

local CHAIN = 'Kernel: fused with the BatchNorm (inference) and/or activation after it'
local INTO = 'Kernel: fused into the Convolution before it'
local BACK = 'not fused with the steps after it this time'

local function count(s, pat)
  local _, n = s:gsub(pat:gsub('%p', '%%%0'), '')
  return n
end

-- data -> Convolution [-> BatchNorm] [-> Activation(act) | clip(0, 6)], o.layers times
local function net(o)
  local h = mx.sym.Variable('data')
  for i = 1, o.layers or 1 do
    h = mx.sym.Convolution{data = h, num_filter = o.f, kernel = o.kernel or {3, 3},
                           pad = o.pad or {1, 1}, stride = o.stride, no_bias = o.no_bias,
                           num_group = o.group, name = 'conv' .. i}
    if o.bn then
      h = mx.sym.BatchNorm{data = h, fix_gamma = o.fix_gamma, name = 'bn' .. i}
    end
    if o.act == 'relu6' then
      h = mx.sym.clip{data = h, a_min = 0, a_max = 6, name = 'relu6_' .. i}
    elseif o.act then
      h = mx.sym.Activation{data = h, act_type = o.act, name = 'act' .. i}
    end
  end
  if not o.train then return h end
  h = mx.sym.FullyConnected{data = h, num_hidden = 4, name = 'fc'}
  return mx.sym.SoftmaxOutput{data = h, name = 'sm'}
end

local function opts(o)
  return {shape = o.shape, dtype = o.dtype, seed = 5, scale = 0.5, classes = 4, req = o.req,
          train = o.train}
end

local function bind(sym, o, monitor)
  local bo = opts(o)
  bo.req, bo.monitor = o.train and (o.req or 'write') or 'null', monitor
  return H.bind_filled(sym, bo)
end

local function run(exe, o) H.step(exe, o.train) end

-- fused against step by step: the same arrays
local function compare(o)
  local f64 = o.dtype == 'float64'
  local a, b = H.fused_vs_steps(net(o), opts(o), f64 and 1e-12 or 2e-5, f64 and 1e-12 or 1e-4)
  local da, db = a:debug_str(), b:debug_str()
  local layers = o.layers or 1
  assert.equal(layers, count(da, CHAIN), da)
  assert.equal(layers * ((o.bn and 1 or 0) + (o.act and 1 or 0)), count(da, INTO))
  assert.equal(layers, count(db, BACK .. ': a monitor is installed'), db)
  assert.equal(0, count(db, INTO))
  return a, da
end

describe('Convolution + BatchNorm + activation fused forward', function()
  it('matches the steps for BatchNorm then relu, sigmoid, tanh, softrelu, clip or none', function()
    for _, act in ipairs{'relu', 'sigmoid', 'tanh', 'softrelu', 'relu6', false} do
      compare{shape = {2, 3, 9, 9}, f = 8, bn = true, act = act or nil}
    end
  end)
  it('matches without BatchNorm, in inference and in training (outputs, every gradient)', function()
    for _, act in ipairs{'relu', 'tanh'} do
      compare{shape = {3, 4, 10, 10}, f = 6, act = act}
      compare{shape = {3, 4, 10, 10}, f = 6, act = act, train = true}
    end
    compare{shape = {3, 4, 10, 10}, f = 6, act = 'relu', train = true, req = 'add'}
  end)
  it('matches on every convolution path: 1x1, 5x5, strided, depthwise, Winograd, batch 1',
     function()
    compare{shape = {1, 16, 14, 14}, f = 24, kernel = {1, 1}, pad = {0, 0}, bn = true,
            act = 'relu6', no_bias = true}
    compare{shape = {4, 3, 16, 16}, f = 10, kernel = {5, 5}, pad = {0, 0}, act = 'tanh'}
    compare{shape = {2, 8, 15, 15}, f = 8, stride = {2, 2}, bn = true, act = 'relu'}
    compare{shape = {2, 12, 11, 11}, f = 12, group = 12, bn = true, act = 'relu6',
            no_bias = true, fix_gamma = false}
    compare{shape = {8, 16, 16, 16}, f = 32, bn = true, act = 'relu', fix_gamma = false}
    compare{shape = {1, 32, 28, 28}, f = 32, bn = true, act = 'relu'}
  end)
  it('runs float64 and chains of layers (the plan keeps each input over its chain)', function()
    compare{shape = {2, 3, 8, 8}, f = 5, bn = true, act = 'tanh', dtype = 'float64'}
    compare{shape = {2, 8, 12, 12}, f = 8, bn = true, act = 'relu6', layers = 4,
            no_bias = true}
    compare{shape = {2, 8, 12, 12}, f = 8, kernel = {1, 1}, pad = {0, 0}, bn = true,
            layers = 3}
  end)
  it('gives clip(BN(conv(x) + b), 0, 6) as plain Lua computes it', function()
    local o = {shape = {1, 2, 3, 3}, f = 3, kernel = {1, 1}, pad = {0, 0}, bn = true,
               act = 'relu6', fix_gamma = false}
    local exe = bind(net(o), o, false)
    mx.nd.array{0.5, -2, 3}:copyto(exe.arg_dict.conv1_bias)
    run(exe, o)
    assert.equal(1, count(exe:debug_str(), CHAIN))
    local x, w = exe.arg_dict.data:toflat(), exe.arg_dict.conv1_weight:toflat()
    local b, g, be = exe.arg_dict.conv1_bias:toflat(), exe.arg_dict.bn1_gamma:toflat(),
                     exe.arg_dict.bn1_beta:toflat()
    local mm, mv = exe.aux_dict.bn1_moving_mean:toflat(), exe.aux_dict.bn1_moving_var:toflat()
    local want = {}
    for f = 1, 3 do
      for i = 1, 9 do
        local s = b[f] + w[(f - 1) * 2 + 1] * x[i] + w[(f - 1) * 2 + 2] * x[9 + i]
        s = (s - mm[f]) / math.sqrt(mv[f] + 1e-3) * g[f] + be[f]
        want[#want + 1] = math.min(math.max(s, 0), 6)
      end
    end
    H.near(exe.outputs[1]:toflat(), want, 1e-5)
  end)
  it('falls back when BatchNorm normalises with the batch statistics', function()
    local o = {shape = {2, 3, 6, 6}, f = 4, bn = true, act = 'relu'}
    local sym = net(o)
    local a, b = bind(sym, o, false), bind(sym, o, true)
    a:forward{is_train = true}; b:forward{is_train = true}
    local d = a:debug_str()
    assert.truthy(d:find(BACK .. ': BatchNorm in training mode', 1, true), d)
    assert.equal(0, count(d, INTO))
    H.near(a.outputs[1]:toflat(), b.outputs[1]:toflat(), 1e-5)
    a:forward{is_train = false}
    assert.equal(1, count(a:debug_str(), CHAIN))
  end)
  it('leaves BatchNorm to training executors, and outputs something else reads', function()
    local exe = bind(net{f = 4, bn = true, act = 'relu', train = true},
                     {shape = {2, 3, 6, 6}, train = true}, false)
    run(exe, {train = true})
    local d = exe:debug_str()
    assert.equal(0, count(d, CHAIN), d)
    local data = mx.sym.Variable('data')
    local conv = mx.sym.Convolution{data = data, num_filter = 4, kernel = {3, 3}, name = 'c'}
    local bn = mx.sym.BatchNorm{data = conv, name = 'bn'}
    local relu = mx.sym.Activation{data = bn, act_type = 'relu'}
    -- the Convolution's output a head or read twice: no chain; BatchNorm's output a head:
    -- Convolution and BatchNorm only
    for _, t in ipairs{{mx.sym.Group{relu, conv}, 0, 0}, {relu + conv, 0, 0},
                       {mx.sym.Group{relu, bn}, 1, 1}} do
      local e = t[1]:simple_bind{ctx = mx.cpu(), data = {1, 3, 6, 6}, grad_req = 'null'}
      e:forward{is_train = false}
      local s = e:debug_str()
      assert.equal(t[2], count(s, CHAIN), s)
      assert.equal(t[3], count(s, INTO), s)
    end
  end)
  it('is not used for softsign', function()
    local exe = bind(net{f = 4, act = 'softsign'}, {shape = {1, 3, 6, 6}}, false)
    run(exe, {})
    assert.equal(0, count(exe:debug_str(), CHAIN))
  end)
end)

-- data -> BatchNorm -> Activation(act) | clip(0, 6) [-> FullyConnected -> SoftmaxOutput]
local BN_FUSED = 'Kernel: fused with the activation after it (writes its output'
local BN_INTO = 'Kernel: fused into the BatchNorm before it'

local function bn_net(o)
  local h = mx.sym.BatchNorm{data = mx.sym.Variable('data'), fix_gamma = o.fix_gamma,
                             use_global_stats = o.global, name = 'bn'}
  if o.act == 'relu6' then h = mx.sym.clip{data = h, a_min = 0, a_max = 6, name = 'relu6'}
  else h = mx.sym.Activation{data = h, act_type = o.act, name = 'act'} end
  if not o.train then return h end
  h = mx.sym.FullyConnected{data = h, num_hidden = 4, name = 'fc'}
  return mx.sym.SoftmaxOutput{data = h, name = 'sm'}
end

-- fused against step by step: outputs, gradients and the moving statistics
local function bn_compare(o)
  local f64 = o.dtype == 'float64'
  local a, b = H.fused_vs_steps(bn_net(o), opts(o), f64 and 1e-12 or 1e-6, f64 and 1e-12 or 1e-5)
  local da, db = a:debug_str(), b:debug_str()
  assert.equal(1, count(da, BN_FUSED), da)
  assert.equal(1, count(da, BN_INTO))
  assert.equal(1, count(db, 'not fused with the activation after it this time: a monitor'))
  for nm, g in pairs(b.aux_dict) do
    H.near(a.aux_dict[nm]:toflat(), g:toflat(), f64 and 1e-12 or 1e-5)
  end
end

describe('BatchNorm + activation fused forward', function()
  it('matches the steps in training (outputs, gradients, moving statistics)', function()
    for _, act in ipairs{'relu', 'sigmoid', 'tanh', 'softrelu'} do
      bn_compare{shape = {4, 6, 5, 5}, act = act, train = true}
    end
    bn_compare{shape = {4, 6, 12, 12}, act = 'relu', train = true, fix_gamma = false}
    bn_compare{shape = {4, 6, 12, 12}, act = 'relu', train = true, global = true}
    bn_compare{shape = {3, 5, 4, 4}, act = 'tanh', train = true, dtype = 'float64'}
  end)
  it('matches in inference, clip (ReLU6) included', function()
    for _, act in ipairs{'relu', 'relu6', 'sigmoid'} do
      bn_compare{shape = {2, 8, 7, 7}, act = act}
      bn_compare{shape = {2, 8, 15, 15}, act = act}
    end
  end)
  it('gives relu((x - mean) / sqrt(var + eps) * gamma + beta) as plain Lua computes it', function()
    local o = {shape = {1, 2, 2, 2}, act = 'relu', fix_gamma = false}
    local exe = bind(bn_net(o), o, false)
    run(exe, o)
    assert.equal(1, count(exe:debug_str(), BN_FUSED))
    local x, g, be = exe.arg_dict.data:toflat(), exe.arg_dict.bn_gamma:toflat(),
                     exe.arg_dict.bn_beta:toflat()
    local mm, mv = exe.aux_dict.bn_moving_mean:toflat(), exe.aux_dict.bn_moving_var:toflat()
    local want = {}
    for c = 1, 2 do
      for i = 1, 4 do
        local v = (x[(c - 1) * 4 + i] - mm[c]) / math.sqrt(mv[c] + 1e-3) * g[c] + be[c]
        want[#want + 1] = math.max(v, 0)
      end
    end
    H.near(exe.outputs[1]:toflat(), want, 1e-5)
  end)
  it('lets the plan free the BatchNorm output after the activation in training', function()
    -- BatchNorm's backward reads its saved mean and var, not its output: the relu runs in
    -- place over that output and its gradient takes no third block of the data's size
    local sym = bn_net{act = 'relu', train = true}
    local exe = sym:simple_bind{ctx = mx.cpu(), data = {16, 8, 16, 16}}
    local planned = exe:memory()
    local big = 16 * 8 * 16 * 16 * 4
    assert.is_true(planned >= 2 * big and planned < 2 * big + 4096, tostring(planned))
  end)
  it('is not used when another op or a head reads the BatchNorm output, nor for clip in '
     .. 'training (its gradient reads its input)', function()
    local bn = mx.sym.BatchNorm{data = mx.sym.Variable('data'), name = 'bn'}
    local relu = mx.sym.Activation{data = bn, act_type = 'relu'}
    for _, sym in ipairs{mx.sym.Group{relu, bn}, relu + bn} do
      local e = sym:simple_bind{ctx = mx.cpu(), data = {2, 3, 4, 4}}
      e:forward{is_train = true}
      assert.equal(0, count(e:debug_str(), BN_FUSED))
    end
    local exe = bind(bn_net{act = 'relu6', train = true}, {shape = {2, 3, 4, 4}, train = true})
    run(exe, {train = true})
    assert.equal(0, count(exe:debug_str(), BN_FUSED))
  end)
end)
