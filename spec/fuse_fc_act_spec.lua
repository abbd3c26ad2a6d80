-- spec/fuse_fc_act_spec.lua — the executor's fused forward of FullyConnected followed by
-- Activation (src/exec/fuse.c, src/ops/cpu/nn_fc.c, kernels/cpu/linalg.c, gemm_dnnl.c):
-- which graphs it takes (the debug_str notes say so, and say when a run fell back), and
-- its outputs and gradients against the two-kernel path (a monitor installed turns the
-- fusion off) and against plain Lua.
local mx = require 'luamx'
local H = require 'helpers'

local FUSED = 'Kernel: fused with the Activation after it (writes its output'
local EPILOGUE = "bias and activation in oneDNN's epilogue"
local TWO_PASS = 'the product, then the activation over it'
local INTO = 'Kernel: fused into the FullyConnected before it'

-- data -> FC(n) -> Activation(act) [-> FC(10) -> SoftmaxOutput when o.train]
local function net(o)
  local data = mx.sym.Variable('data')
  local fc = mx.sym.FullyConnected{data = data, num_hidden = o.n, name = 'fc',
                                   no_bias = o.no_bias, flatten = o.flatten}
  local act = mx.sym.Activation{data = fc, act_type = o.act or 'relu', name = 'act'}
  if not o.train then return act, fc end
  local out = mx.sym.FullyConnected{data = act, num_hidden = 10, name = 'fc2'}
  return mx.sym.SoftmaxOutput{data = out, name = 'sm'}, fc
end

local function bind(sym, o, monitor)
  return H.bind_filled(sym, {shape = o.shape, dtype = o.dtype, req = o.req, step = 7,
                             monitor = monitor})
end

local function run(exe, o) H.step(exe, o.train) end

-- fused against two kernels: the same arrays; tolerance for oneDNN's activation: its tanh
-- and sigmoid differ from luamx's in the last bits, which the gradients' sums over rows
-- carry on
local function compare(o)
  local f64 = o.dtype == 'float64'
  local a, b = H.fused_vs_steps(net(o), {shape = o.shape, dtype = o.dtype, req = o.req,
                                         step = 7, train = o.train},
                                f64 and 1e-12 or 1e-5, f64 and 1e-12 or 1e-4)
  local da, db = a:debug_str(), b:debug_str()
  assert.truthy(da:find(FUSED, 1, true), da)
  assert.truthy(da:find(INTO, 1, true))
  assert.truthy(db:find('not fused with the Activation after it this time: a monitor is '
                        .. 'installed', 1, true))
  assert.falsy(db:find(INTO, 1, true))
  return a, da
end

local function gemm() return mx.runtime.features().kernels.gemm end

describe('FullyConnected + Activation fused forward', function()
  it('matches the two kernels for relu, tanh, sigmoid and softrelu, in inference', function()
    for _, act in ipairs{'relu', 'tanh', 'sigmoid', 'softrelu'} do
      compare{shape = {37, 50}, n = 40, act = act}
    end
  end)
  it('runs in oneDNN\'s epilogue where the route takes the product there', function()
    local _, d = compare{shape = {64, 96}, n = 72}
    local ep = mx.runtime.gemm_choice{m = 64, n = 72, k = 96, tb = true} == 'dnnl'
    assert.truthy(d:find(ep and EPILOGUE or TWO_PASS, 1, true), d)
  end)
  it('matches in training: outputs and every gradient', function()
    for _, act in ipairs{'relu', 'tanh', 'sigmoid', 'softrelu'} do
      compare{shape = {40, 30}, n = 33, act = act, train = true}
    end
    compare{shape = {40, 30}, n = 33, train = true, req = 'add'}
  end)
  it('matches without a bias, at batch 1, and with flatten = false', function()
    compare{shape = {24, 20}, n = 50, no_bias = true}
    compare{shape = {1, 300}, n = 64}
    compare{shape = {4, 5, 19}, n = 21, flatten = false, train = true}
  end)
  it('runs float64 as the product, then the activation', function()
    local _, d = compare{shape = {20, 30}, n = 25, act = 'tanh', dtype = 'float64', train = true}
    assert.truthy(d:find(TWO_PASS, 1, true))
  end)
  it('gives relu(x wT + b) as plain Lua computes it', function()
    local o = {shape = {33, 19}, n = 45}
    local exe = bind(net(o), o, false)
    run(exe, o)
    assert.truthy(exe:debug_str():find(FUSED, 1, true))
    local x, w = exe.arg_dict.data:totable(), exe.arg_dict.fc_weight:totable()
    local b, want = exe.arg_dict.fc_bias:totable(), {}
    for r = 1, 33 do
      for j = 1, 45 do
        local s = b[j]
        for k = 1, 19 do s = s + x[r][k] * w[j][k] end
        want[#want + 1] = math.max(s, 0)
      end
    end
    H.near(exe.outputs[1]:toflat(), want, 1e-5)
  end)
  it('reads each input of its own: layers that share their weight', function()
    -- the inputs' arrays are not neighbours in the executor's tables here (the weight is
    -- the first layer's); at 8x8 the second layer's output has the weight's shape
    local data, w = mx.sym.Variable('data'), mx.sym.Variable('w')
    local h = data
    for i, act in ipairs{'relu', 'tanh'} do
      h = mx.sym.FullyConnected{data = h, weight = w, num_hidden = 8, no_bias = true,
                                name = 'fc' .. i}
      h = mx.sym.Activation{data = h, act_type = act, name = 'act' .. i}
    end
    local o = {shape = {8, 8}}
    local a, b = bind(h, o, false), bind(h, o, true)
    run(a, o); run(b, o)
    local d = a:debug_str()
    local _, n = d:gsub(FUSED:gsub('%p', '%%%0'), '')
    assert.equal(2, n, d)
    H.near(a.outputs[1]:toflat(), b.outputs[1]:toflat(), 1e-5)
  end)
  it('is not used when another op or a head reads the FullyConnected output', function()
    local act, fc = net{n = 40}
    for _, sym in ipairs{mx.sym.Group{act, fc}, act + fc} do
      local exe = sym:simple_bind{ctx = mx.cpu(), data = {20, 30}}
      exe:forward{is_train = true}
      assert.falsy(exe:debug_str():find('fused with the Activation', 1, true))
    end
  end)
  it('is not used for softsign, whose gradient reads the FullyConnected output', function()
    local exe = bind(net{n = 40, act = 'softsign', train = true}, {shape = {20, 30}}, false)
    run(exe, {train = true})
    assert.falsy(exe:debug_str():find('fused with the Activation', 1, true))
  end)
  it('keeps the choice under the other GEMM modes', function()
    local mode = gemm().mode
    for _, m in ipairs{'openblas', 'dnnl'} do
      mx.runtime.gemm_mode(m)
      local ok, err = pcall(function()
        local _, d = compare{shape = {64, 96}, n = 72, train = true}
        local ep = m == 'dnnl' and gemm().dnnl
        assert.truthy(d:find(ep and EPILOGUE or TWO_PASS, 1, true), d)
      end)
      mx.runtime.gemm_mode(mode)
      assert(ok, err)
    end
  end)
end)
