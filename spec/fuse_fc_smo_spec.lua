-- spec/fuse_fc_smo_spec.lua — the executor's fused backward of FullyConnected under
-- SoftmaxOutput (src/exec/fuse.c, kernels/cpu/fc_smo.c): which graphs it takes (the
-- debug_str note says so, and says when a run fell back), and its gradients against the
-- two-kernel path (a monitor installed turns the fusion off) and against the formula.
local mx = require 'luamx'
local H = require 'helpers'

local FUSED = 'Kernel: fused with the FullyConnected backward'

local function net(o)
  local data = mx.sym.Variable('data')
  local fc = mx.sym.FullyConnected{data = data, num_hidden = o.n, name = 'fc', no_bias = o.no_bias}
  return mx.sym.SoftmaxOutput{data = fc, name = 'sm', normalization = o.norm or 'null',
                              use_ignore = o.use_ignore or false, ignore_label = o.ignore or -1,
                              smooth_alpha = o.alpha or 0, grad_scale = o.scale or 1}, fc
end

-- label i (0-based) of row i: spread over the classes, with `ignore` every 3rd row
local function labels(m, n, ignore)
  local t = {}
  for i = 1, m do t[i] = (i % 3 == 0 and ignore) or ((i * 37 + 5) % n) end
  return t
end

local function bind(sym, o, monitor)
  local exe = sym:simple_bind{ctx = mx.cpu(), data = {o.m, o.k}, grad_req = o.req or 'write',
                              type_dict = o.dtype and {data = o.dtype} or nil}
  mx.random.seed(7)
  for name, a in pairs(exe.arg_dict) do
    if name == 'sm_label' then mx.nd.array(labels(o.m, o.n, o.ignore)):astype(a.dtype):copyto(a)
    else mx.nd.random.normal(0, 1, a.shape):astype(a.dtype):copyto(a) end
  end
  if monitor then exe:set_monitor_callback(function() end) end
  return exe
end

local function step(exe, times)
  for _ = 1, times or 1 do exe:forward{is_train = true}; exe:backward() end
end

local function grads(exe, o)
  local t = {}
  for _, nm in ipairs{'data', 'fc_weight', 'fc_bias'} do
    if exe.grad_dict[nm] then t[nm] = exe.grad_dict[nm]:toflat() end
  end
  return t
end

-- fused vs two kernels: the same arrays, the same steps, tolerance for the GEMMs' order
local function compare(o, times)
  local sym = net(o)
  local a, b = bind(sym, o, false), bind(sym, o, true)
  step(a, times); step(b, times)
  assert.truthy(a:debug_str():find(FUSED, 1, true))
  assert.truthy(b:debug_str():find('not fused with the FullyConnected backward this time: a '
                                   .. 'monitor is installed', 1, true))
  local ga, gb = grads(a, o), grads(b, o)
  for nm, v in pairs(gb) do H.near(ga[nm], v, 1e-5) end
  return a
end

describe('FullyConnected + SoftmaxOutput fused backward', function()
  it('matches the two kernels: several blocks of columns and a partial one', function()
    compare{m = 37, k = 13, n = 600}
  end)
  it('matches with fewer classes than a block, and one row', function()
    compare{m = 5, k = 3, n = 7}
    compare{m = 1, k = 4, n = 300}
  end)
  it('matches with normalization batch / valid, use_ignore, smoothing and grad_scale', function()
    compare{m = 30, k = 8, n = 513, norm = 'batch', scale = 0.5}
    compare{m = 30, k = 8, n = 513, norm = 'valid', use_ignore = true, ignore = 4}
    compare{m = 30, k = 8, n = 300, alpha = 0.1, use_ignore = true, ignore = 0}
  end)
  it('matches without a bias, and with grad_req add over two steps', function()
    compare{m = 9, k = 6, n = 260, no_bias = true}
    local exe = compare({m = 9, k = 6, n = 260, req = 'add'}, 2)
    -- add: two steps give twice one step's gradient
    local one = bind(net{n = 260}, {m = 9, k = 6, n = 260}, false)
    step(one)
    local g1, g2 = grads(one), grads(exe)
    for nm, v in pairs(g1) do
      local twice = {}
      for i, x in ipairs(v) do twice[i] = 2 * x end
      H.near(g2[nm], twice, 1e-5)
    end
  end)
  it('gives the formula: bias gradient = column sums of (softmax - onehot)', function()
    local o = {m = 6, k = 5, n = 290}
    local exe = bind(net(o), o, false)
    step(exe)
    assert.truthy(exe:debug_str():find(FUSED, 1, true))
    local p, lab = exe.outputs[1]:totable(), labels(o.m, o.n)
    local want = {}
    for j = 1, o.n do
      local s = 0
      for r = 1, o.m do s = s + p[r][j] - (lab[r] == j - 1 and 1 or 0) end
      want[j] = s
    end
    H.near(exe.grad_dict.fc_bias:toflat(), want, 1e-5)
  end)
  it('is not used when another op reads the gradient of the FC output', function()
    local sm, fc = net{n = 40}
    local sym = mx.sym.Group{sm, mx.sym.MakeLoss(mx.sym.sum(fc * fc) * 0.01)}
    local exe = sym:simple_bind{ctx = mx.cpu(), data = {4, 3}}
    exe:forward{is_train = true}; exe:backward()
    assert.falsy(exe:debug_str():find('fused with the FullyConnected', 1, true))
  end)
  it('falls back, and says so, for float64 (the fused kernel is float32)', function()
    local o = {m = 8, k = 4, n = 300, dtype = 'float64'}
    local sym = net(o)
    local a, b = bind(sym, o, false), bind(sym, o, true)
    step(a); step(b)
    assert.truthy(a:debug_str():find('not fused with the FullyConnected backward this time: '
                                     .. 'dtypes, layout or overlapping arrays', 1, true))
    local ga, gb = grads(a, o), grads(b, o)
    for nm, v in pairs(gb) do H.near(ga[nm], v, 1e-12) end
  end)
end)
