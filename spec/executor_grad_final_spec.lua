-- Gradient finality (lmx_executor_grad_final, lmx_executor_set_grad_hook): at bind the
-- executor knows the backward step after which each argument's gradient is final (its
-- last writer), and backward calls the hook with those arguments after that step. The
-- dist kvstore's overlapped push starts all-reduces from it (spec/dist_overlap_spec.lua).
-- Checked on a small MLP: reverse layer order, a weight used by two layers (final only
-- after its LAST use, the first layer's backward), grad_req add, no allocation per step,
-- and that every gradient the hook names already holds its final value.
local ffi = require 'ffi'
local mx = require 'luamx'
local H = require 'helpers'
local C = mx.capi.C

jit.off() -- the hook is a Lua callback: no compiled trace may call into backward

-- data (2,4) -> fc1 (weight w) -> tanh -> fc2 (weight w again, no bias) -> tanh -> fc3 -> softmax
local function shared_mlp()
  local w = mx.sym.Variable('w')
  local x = mx.sym.FullyConnected{data = mx.sym.Variable('data'), weight = w, num_hidden = 4, name = 'fc1'}
  x = mx.sym.Activation{data = x, act_type = 'tanh', name = 't1'}
  x = mx.sym.FullyConnected{data = x, weight = w, num_hidden = 4, no_bias = true, name = 'fc2'}
  x = mx.sym.Activation{data = x, act_type = 'tanh', name = 't2'}
  x = mx.sym.FullyConnected{data = x, num_hidden = 3, name = 'fc3'}
  return mx.sym.SoftmaxOutput{data = x, name = 'softmax'}
end

local function plain_mlp()
  local x = mx.sym.FullyConnected{data = mx.sym.Variable('data'), num_hidden = 5, name = 'fc1'}
  x = mx.sym.Activation{data = x, act_type = 'relu', name = 'r1'}
  x = mx.sym.FullyConnected{data = x, num_hidden = 5, name = 'fc2'}
  x = mx.sym.Activation{data = x, act_type = 'relu', name = 'r2'}
  x = mx.sym.FullyConnected{data = x, num_hidden = 3, name = 'fc3'}
  return mx.sym.SoftmaxOutput{data = x, name = 'softmax'}
end

local function bind(sym, req)
  if not req then -- parameters only: data and label get null
    req = {}
    for _, n in ipairs(sym:list_arguments()) do
      if n ~= 'data' and n ~= 'softmax_label' then req[n] = 'write' end
    end
  end
  local exe = sym:simple_bind{ctx = mx.cpu(), data = {2, 4}, grad_req = req}
  mx.random.seed(3)
  for i, name in ipairs(exe:list_arguments()) do
    local a = exe.arg_arrays[i]
    if name == 'softmax_label' then a:set(mx.nd.array{0, 2})
    else a:set(mx.nd.random.uniform(-1, 1, a.shape)) end
  end
  return exe
end

-- Runs forward/backward with a hook recording (step, names, values at that moment).
local function hooked_run(exe)
  local names = exe:list_arguments()
  local calls = {}
  local cb = ffi.cast('lmx_grad_final_fn', function(step, args, n)
    local c = {step = step, names = {}, values = {}}
    for i = 0, n - 1 do
      local a = args[i] + 1
      c.names[#c.names + 1] = names[a]
      c.values[names[a]] = exe.grad_arrays[a]:toflat()
    end
    calls[#calls + 1] = c
    return 0
  end)
  mx.capi.check(C.lmx_executor_set_grad_hook(exe._h, cb, nil))
  exe:forward{is_train = true}
  exe:backward()
  mx.capi.check(C.lmx_executor_set_grad_hook(exe._h, nil, nil))
  cb:free()
  return calls
end

local function position(calls)
  local at = {}
  for i, c in ipairs(calls) do for _, n in ipairs(c.names) do at[n] = i end end
  return at
end

describe('gradient finality', function()
  it('plain MLP: final in reverse layer order, each argument once, steps increasing', function()
    local exe = bind(plain_mlp())
    local final, nb = exe:grad_final()
    assert.is_true(nb > 0)
    assert.is_nil(final.softmax_label) -- no gradient (req null)
    assert.is_nil(final.data)
    assert.is_true(final.fc3_weight < final.fc2_weight and final.fc2_weight < final.fc1_weight)
    assert.is_true(final.fc3_bias < final.fc2_bias and final.fc2_bias < final.fc1_bias)
    assert.is_true(final.fc1_weight <= nb - 1)
    local calls = hooked_run(exe)
    local at, seen = position(calls), 0
    for i, c in ipairs(calls) do
      if i > 1 then assert.is_true(c.step > calls[i - 1].step) end
      for _, n in ipairs(c.names) do
        assert.are.equal(final[n], c.step, n)
        seen = seen + 1
      end
    end
    local count = 0
    for _ in pairs(final) do count = count + 1 end
    assert.are.equal(count, seen) -- every argument with a gradient reported exactly once
    assert.is_true(at.fc3_weight < at.fc2_weight and at.fc2_weight < at.fc1_weight)
  end)

  it('a weight used by two layers is final only after its last use (the first layer)', function()
    local exe = bind(shared_mlp())
    local final = exe:grad_final()
    -- w gets fc2's contribution first (written), then fc1's (added): final at fc1's step
    assert.is_true(final.fc3_weight < final.w)
    assert.is_true(final.fc1_bias <= final.w)
    local calls = hooked_run(exe)
    local at = position(calls)
    assert.is_true(at.fc3_weight < at.w and at.fc3_bias < at.w)
    assert.is_true(at.fc1_bias <= at.w)
    -- the value the hook saw is the final gradient
    for _, c in ipairs(calls) do
      for name, v in pairs(c.values) do
        local i
        for k, n in ipairs(exe:list_arguments()) do if n == name then i = k end end
        assert.are.same(exe.grad_arrays[i]:toflat(), v, name)
      end
    end
  end)

  it('grad_req add: the same steps (the last add of the pass), and data gets a step too', function()
    local w_final = bind(shared_mlp()):grad_final()
    local exe = bind(shared_mlp(), 'add')
    local final = exe:grad_final()
    assert.are.equal(w_final.w, final.w)
    assert.are.equal(w_final.fc3_weight, final.fc3_weight)
    assert.is_number(final.data) -- data's gradient is asked for with 'add'
  end)

  it('allocates nothing per step with a C hook set', function()
    local exe = bind(plain_mlp())
    local n = 0
    local cb = ffi.cast('lmx_grad_final_fn', function() n = n + 1 return 0 end)
    mx.capi.check(C.lmx_executor_set_grad_hook(exe._h, cb, nil))
    exe:forward{is_train = true}
    exe:backward()
    local before = H.total_allocs()
    for _ = 1, 10 do
      exe:forward{is_train = true}
      exe:backward()
    end
    assert.are.equal(before, H.total_allocs())
    assert.is_true(n > 0)
    mx.capi.check(C.lmx_executor_set_grad_hook(exe._h, nil, nil))
    cb:free()
  end)

  it('a hook that fails fails the backward, naming the step', function()
    local exe = bind(plain_mlp())
    local cb = ffi.cast('lmx_grad_final_fn', function() return 1 end)
    mx.capi.check(C.lmx_executor_set_grad_hook(exe._h, cb, nil))
    exe:forward{is_train = true}
    local ok, err = pcall(function() exe:backward() end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find('gradient hook failed after step', 1, true), err)
    mx.capi.check(C.lmx_executor_set_grad_hook(exe._h, nil, nil))
    cb:free()
  end)
end)
