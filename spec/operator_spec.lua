-- spec/operator_spec.lua — operators written in Lua (mx.operator, the C operator "Custom"):
-- a Lua softmax against SoftmaxOutput inside Module:fit (one and two contexts), errors
-- raised by the Lua code (op type, node, message; the executor stays usable), MXNet's
-- JSON for Custom nodes and its round trip, unregistered op types, inference errors, aux
-- states, gradient requests, BucketingModule, and mx.nd.Custom.
local mx = require 'luamx'
local H = require 'helpers'
local ffi = require 'ffi'
local nd = mx.nd

mx.logging.set_level('error')

-- A softmax loss in Lua: forward through the FFI on a:data(), backward with mx.nd calls.
mx.operator.register('lua_softmax', {
  list_arguments = function() return {'data', 'label'} end,
  need_top_grad = false,
  infer_shape = function(_, in_shape)
    local d = in_shape[1]
    return {d, {d[1]}}, {d}, {}
  end,
  create_operator = function()
    return {
      forward = function(self, _, req, in_data, out_data)
        local x, n, k = in_data[1], in_data[1].shape[1], in_data[1].shape[2]
        local y = nd.empty(x.shape)
        local px, py = x:data(), y:data()
        for i = 0, n - 1 do
          local m = -math.huge
          for j = 0, k - 1 do m = math.max(m, px[i * k + j]) end
          local s = 0
          for j = 0, k - 1 do
            local e = math.exp(px[i * k + j] - m)
            py[i * k + j] = e
            s = s + e
          end
          for j = 0, k - 1 do py[i * k + j] = py[i * k + j] / s end
        end
        self:assign(out_data[1], req[1], y)
      end,
      backward = function(self, req, out_grad, in_data, out_data, in_grad)
        assert(out_grad[1] == false, 'a loss gets no head gradient')
        local y, label = out_data[1], in_data[2]
        local onehot = nd.one_hot(label, {depth = y.shape[2]})
        self:assign(in_grad[1], req[1], y - onehot)
        self:assign(in_grad[2], req[2], 0)
      end,
    }
  end,
})

-- y = factor * x (factor a string kwarg), with a head gradient.
mx.operator.register('lua_scale', function(kwargs)
  local f = tonumber(kwargs.factor or '1')
  return {
    infer_shape = function(_, s) return s, {s[1]}, {} end,
    declare_backward_dependency = function(_, out_grad) return out_grad end,
    create_operator = function()
      return {
        forward = function(self, _, req, in_data, out_data) self:assign(out_data[1], req[1], in_data[1] * f) end,
        backward = function(self, req, out_grad, in_data, _, in_grad)
          assert(in_data[1] == false, 'undeclared inputs are not lent')
          self:assign(in_grad[1], req[1], out_grad[1] * f)
        end,
      }
    end,
  }
end)

local function mlp(loss)
  local data = mx.sym.Variable('data')
  local fc1 = mx.sym.FullyConnected{data = data, num_hidden = 8, name = 'fc1'}
  local act = mx.sym.Activation{data = fc1, act_type = 'tanh'}
  local fc2 = mx.sym.FullyConnected{data = act, num_hidden = 3, name = 'fc2'}
  if loss == 'builtin' then return mx.sym.SoftmaxOutput{data = fc2, name = 'softmax'} end
  return mx.sym.Custom{data = fc2, op_type = 'lua_softmax', name = 'softmax'}
end

local function dataset()
  local x, y = {}, {}
  for i = 1, 24 do
    x[i] = {math.sin(i), math.cos(2 * i), (i % 5) / 5 - 0.5, (i % 3) / 3}
    y[i] = i % 3
  end
  return nd.array(x), nd.array(y)
end

local function init_params()
  local function fill(shape, seed)
    local t, n = {}, 1
    for _, d in ipairs(shape) do n = n * d end
    for i = 1, n do t[i] = math.sin(i * seed) * 0.3 end
    return nd.array(t):reshape(shape)
  end
  return {fc1_weight = fill({8, 4}, 1.3), fc1_bias = fill({8}, 2.1),
          fc2_weight = fill({3, 8}, 0.7), fc2_bias = fill({3}, 1.9)}
end

local function train(loss, context)
  local x, y = dataset()
  local it = mx.io.NDArrayIter{data = x, label = y, batch_size = 6}
  local mod = mx.mod.Module{symbol = mlp(loss), context = context, logger = false}
  mod:fit(it, {num_epoch = 3, arg_params = init_params(), batch_end_callback = false,
               optimizer_params = {learning_rate = 0.5}})
  return mod
end

local function same_params(a, b, tol)
  local pa, pb = a:get_params(), b:get_params()
  for _, k in ipairs {'fc1_weight', 'fc1_bias', 'fc2_weight', 'fc2_bias'} do
    H.near(pa[k]:toflat(), pb[k]:toflat(), tol)
  end
end

describe('mx.operator: a softmax written in Lua', function()
  it('has the prop\'s arguments and shapes in a symbol', function()
    local s = mlp('lua')
    assert.same({'data', 'fc1_weight', 'fc1_bias', 'fc2_weight', 'fc2_bias', 'softmax_label'},
                s:list_arguments())
    assert.same({'softmax_output'}, s:list_outputs())
    local _, out = s:infer_shape{data = {6, 4}}
    assert.same({{6, 3}}, out)
  end)

  it('matches SoftmaxOutput forward and backward through Module:fit (same parameters)', function()
    local a, b = train('builtin'), train('lua')
    same_params(a, b, 1e-5)
    local x = dataset()
    local it = mx.io.NDArrayIter{data = x, batch_size = 6}
    H.near(a:predict(it):toflat(), b:predict(it):toflat(), 1e-5)
    -- and training moved the parameters: the comparison is not of two untouched inits
    local p0 = init_params().fc2_weight:toflat()
    local moved = 0
    for i, v in ipairs(b:get_params().fc2_weight:toflat()) do moved = math.max(moved, math.abs(v - p0[i])) end
    assert.is_true(moved > 1e-2)
  end)

  it('runs in a two-context group (callbacks relayed to the calling thread)', function()
    local a = train('builtin', {mx.cpu(0), mx.cpu(1)})
    local b = train('lua', {mx.cpu(0), mx.cpu(1)})
    same_params(a, b, 1e-5)
    same_params(b, train('lua'), 1e-4)
  end)

  it('mx.nd.Custom runs it imperatively', function()
    local x = nd.array {{1, 2, 3}, {0, 0, 1}}
    local y = mx.nd.Custom(x, nd.array {0, 2}, {op_type = 'lua_softmax'})
    H.near(y:toflat(), mx.nd.softmax(x):toflat(), 1e-6)
    local z = mx.nd.Custom{data = x, op_type = 'lua_scale', factor = 3}
    H.near(z:toflat(), {3, 6, 9, 0, 0, 3})
    assert.has_error(function() mx.nd.Custom(x, {op_type = 'lua_softmax'}) end,
      "mx.nd.Custom (op_type 'lua_softmax'): expected 2 inputs (data, label), got 1")
  end)
end)

describe('mx.operator: gradients and requests', function()
  it('passes head gradients and honours grad_req write and add', function()
    local s = mx.sym.Custom{data = mx.sym.Variable('x'), op_type = 'lua_scale', factor = '2.5', name = 'sc'}
    for _, req in ipairs {'write', 'add'} do
      local exe = s:simple_bind{x = {2, 2}, grad_req = req}
      exe.arg_dict.x:set{{1, 2}, {3, 4}}
      exe.grad_dict.x:set{{1, 1}, {1, 1}}
      exe:forward{is_train = true}
      H.near(exe.outputs[1]:toflat(), {2.5, 5, 7.5, 10})
      exe:backward{nd.array {{1, 2}, {3, 4}}}
      local base = req == 'add' and 1 or 0
      H.near(exe.grad_dict.x:toflat(), {base + 2.5, base + 5, base + 7.5, base + 10})
    end
  end)
end)

describe('mx.operator: training mode', function()
  it('mx.nd.Custom takes is_train from the training mode, as every mx.nd call does', function()
    local seen
    mx.operator.register('lua_train_probe', {
      create_operator = function()
        return {
          forward = function(self, is_train, req, in_data, out_data)
            seen = is_train
            self:assign(out_data[1], req[1], in_data[1])
          end,
          backward = function(self, req, out_grad, _, _, in_grad) self:assign(in_grad[1], req[1], out_grad[1]) end,
        }
      end,
    })
    local x = nd.array {1, 2}
    nd.Custom(x, {op_type = 'lua_train_probe'})
    assert.is_false(seen)
    mx.autograd.train_mode(function() nd.Custom(x, {op_type = 'lua_train_probe'}) end)
    assert.is_true(seen)
    mx.autograd.train_mode(function() nd.Custom(x, {op_type = 'lua_train_probe', is_train = false}) end)
    assert.is_false(seen)
    nd.Custom(x, {op_type = 'lua_train_probe', is_train = true})
    assert.is_true(seen)
  end)
end)

describe('mx.operator: inside mx.autograd.record', function()
  it('runs the Lua code unrecorded (in-place writes allowed) and backpropagates through it', function()
    local seen = {}
    mx.operator.register('lua_relu_inplace', {
      infer_shape = function(_, s) return s, {s[1]}, {} end,
      create_operator = function()
        return {
          forward = function(self, is_train, req, in_data, out_data)
            seen.rec, seen.train = mx.autograd.is_recording(), is_train
            self:assign(out_data[1], req[1], in_data[1])
            nd.relu(out_data[1], {out = out_data[1]}) -- in place: refused while recording
          end,
          backward = function(self, req, out_grad, in_data, _, in_grad)
            seen.brec = mx.autograd.is_recording()
            self:assign(in_grad[1], req[1], out_grad[1] * nd.relu(nd.sign(in_data[1])))
          end,
        }
      end,
    })
    local x = nd.array {{-1, 2}, {3, -4}}
    x:attach_grad()
    local y = mx.autograd.record(function()
      local r = nd.Custom(x, {op_type = 'lua_relu_inplace'})
      assert.is_true(mx.autograd.is_recording()) -- restored after the call
      return r
    end)
    assert.is_false(seen.rec)
    assert.is_true(seen.train)
    assert.is_false(mx.autograd.is_recording())
    H.near(y:toflat(), {0, 2, 3, 0})
    y:backward(nd.array {{1, 2}, {3, 4}})
    assert.is_false(seen.brec)
    H.near(x.grad:toflat(), {0, 2, 3, 0})
  end)
end)

describe('mx.operator: lent arrays', function()
  it('are freed when the call returns; a view kept past it holds a snapshot', function()
    local kept_array, kept_view
    mx.operator.register('lua_keeper', {
      create_operator = function()
        return {forward = function(self, _, req, i, o)
          kept_array, kept_view = i[1], i[1]:reshape{2, 2}
          self:assign(o[1], req[1], i[1])
        end}
      end,
    })
    local s = mx.sym.Custom{data = mx.sym.Variable('x'), op_type = 'lua_keeper', name = 'k'}
    local exe = s:simple_bind{x = {4}, grad_req = 'null'}
    exe.arg_dict.x:set{1, 2, 3, 4}
    exe:forward()
    assert.has_error(function() return kept_array.shape end)
    exe.arg_dict.x:set{9, 9, 9, 9}
    exe:forward()
    local snapshot = kept_view
    exe:free()
    collectgarbage()
    assert.same({{9, 9}, {9, 9}}, snapshot:totable())
  end)
end)

describe('mx.operator: memory planning', function()
  it('never gives a Custom output the memory of its input', function()
    mx.operator.register('lua_clobber', {
      create_operator = function()
        return {forward = function(self, _, req, i, o)
          o[1]:fill(-100) -- would destroy the input if the two shared memory
          self:assign(o[1], req[1], i[1] + 1)
        end}
      end,
    })
    local x = mx.sym.Variable('x')
    local r = mx.sym.Activation{data = x, act_type = 'relu', name = 'r'}
    local c = mx.sym.Custom{data = r, op_type = 'lua_clobber', name = 'c'}
    local s = mx.sym.Activation{data = c, act_type = 'relu', name = 'r2'}
    local exe = s:simple_bind{x = {4}, grad_req = 'null'}
    exe.arg_dict.x:set{-1, 2, -3, 4}
    exe:forward()
    H.near(exe.outputs[1]:toflat(), {1, 3, 1, 5})
  end)
end)

describe('mx.operator: types and registration', function()
  it('infer_type decides output dtypes (a cast to float64)', function()
    mx.operator.register('lua_cast64', {
      infer_type = function(_, t) return t, {'float64'}, {} end,
      create_operator = function()
        return {forward = function(self, _, req, i, o) self:assign(o[1], req[1], i[1]) end}
      end,
    })
    local s = mx.sym.Custom{data = mx.sym.Variable('x'), op_type = 'lua_cast64', name = 'c'}
    local _, out = s:infer_type{x = 'float32'}
    assert.same({'float64'}, out)
    local exe = s:simple_bind{x = {2}, grad_req = 'null'}
    exe.arg_dict.x:set{0.5, 1.25}
    exe:forward()
    assert.equal('float64', exe.outputs[1].dtype)
    H.near(exe.outputs[1]:toflat(), {0.5, 1.25})
    mx.operator.register('lua_badtype', {
      infer_type = function(_, t) return t, {'float99'}, {} end,
      create_operator = function() return {} end,
    })
    s = mx.sym.Custom{data = mx.sym.Variable('x'), op_type = 'lua_badtype', name = 'bt'}
    local ok, err = pcall(function() s:infer_type{x = 'float32'} end)
    assert.is_false(ok)
    assert.truthy(err:find("Custom 'bt' (op_type 'lua_badtype'): infer_type: ", 1, true), err)
    assert.truthy(err:find('unknown dtype float99', 1, true), err)
  end)

  it('register checks its arguments; a prop\'s bad lists are errors naming the method', function()
    assert.has_error(function() mx.operator.register('', {}) end,
      'mx.operator.register: op_type must be a non-empty string, got ')
    assert.has_error(function() mx.operator.register('x', 3) end,
      "mx.operator.register: prop of 'x' must be a table of methods or a function, got number")
    mx.operator.register('lua_commas', {list_outputs = function() return {'a,b'} end})
    local ok, err = pcall(mx.sym.Custom, {data = mx.sym.Variable('x'), op_type = 'lua_commas', name = 'cm'})
    assert.is_false(ok)
    assert.truthy(err:find("Custom 'cm' (op_type 'lua_commas'): list_outputs: name 1 must be a non-empty string without commas, got a,b", 1, true), err)
    assert.truthy(#mx.operator.list() >= 5)
  end)
end)

describe('mx.operator: a smooth op against finite differences', function()
  -- y = x^3 + w * x (two inputs, float64); backward reads inputs and head gradients
  mx.operator.register('lua_cubic', {
    list_arguments = function() return {'data', 'w'} end,
    infer_shape = function(_, s) return {s[1], s[1]}, {s[1]}, {} end,
    declare_backward_dependency = function(_, og, ind) return {og[1], ind[1], ind[2]} end,
    create_operator = function()
      return {
        forward = function(self, _, req, i, o) self:assign(o[1], req[1], i[1] * i[1] * i[1] + i[2] * i[1]) end,
        backward = function(self, req, og, i, o, ig)
          assert(o[1] == false, 'outputs were not declared')
          self:assign(ig[1], req[1], og[1] * (i[1] * i[1] * 3 + i[2]))
          self:assign(ig[2], req[2], og[1] * i[1])
        end,
      }
    end,
  })

  it('has the gradient of sum(head * y) that central differences give', function()
    local s = mx.sym.Custom{data = mx.sym.Variable('x'), w = mx.sym.Variable('w'), op_type = 'lua_cubic', name = 'cu'}
    local exe = s:simple_bind{x = {5}, w = {5}, type_dict = {x = 'float64', w = 'float64'}}
    local x0, w0, head = {0.3, -1.2, 0.7, 2.0, -0.1}, {0.5, 1.5, -2.0, 0.25, 1.0}, {1, -2, 0.5, 3, -1}
    local function f(x, w)
      exe.arg_dict.x:set(x)
      exe.arg_dict.w:set(w)
      exe:forward{is_train = true}
      local y, t = exe.outputs[1]:toflat(), 0
      for i = 1, #y do t = t + y[i] * head[i] end
      return t
    end
    f(x0, w0)
    assert.equal('float64', exe.outputs[1].dtype)
    exe:backward{nd.array(head, {dtype = 'float64'})}
    local gx, gw = exe.grad_dict.x:toflat(), exe.grad_dict.w:toflat()
    local h = 1e-6
    for _, which in ipairs {'x', 'w'} do
      for i = 1, 5 do
        local xp, xm, wp, wm = {unpack(x0)}, {unpack(x0)}, {unpack(w0)}, {unpack(w0)}
        if which == 'x' then xp[i], xm[i] = x0[i] + h, x0[i] - h else wp[i], wm[i] = w0[i] + h, w0[i] - h end
        local num = (f(xp, wp) - f(xm, wm)) / (2 * h)
        local got = which == 'x' and gx[i] or gw[i]
        assert(math.abs(num - got) < 1e-6 * math.max(1, math.abs(num)),
          ('d/d%s[%d]: backward %.10g, finite differences %.10g'):format(which, i, got, num))
      end
    end
  end)

  it('lends arrays without leaking: the engine\'s live blocks stay flat over many steps', function()
    local s = mx.sym.Custom{data = mx.sym.Variable('x'), w = mx.sym.Variable('w'), op_type = 'lua_cubic', name = 'cu'}
    local exe = s:simple_bind{x = {3}, w = {3}}
    local head = nd.ones {3}
    local function steps(n)
      for _ = 1, n do
        exe:forward{is_train = true}
        exe:backward{head}
      end
    end
    steps(5)
    H.full_gc()
    local before = H.live_blocks()
    steps(50)
    H.full_gc()
    assert.equal(before, H.live_blocks())
  end)
end)

describe('mx.operator: errors', function()
  local fail_now = true
  mx.operator.register('lua_raiser', {
    create_operator = function()
      return {
        forward = function(self, _, req, in_data, out_data)
          if fail_now then error('boom in forward') end
          self:assign(out_data[1], req[1], in_data[1] + 1)
        end,
        backward = function(self, req, out_grad, _, _, in_grad)
          if fail_now then error('boom in backward') end
          self:assign(in_grad[1], req[1], out_grad[1])
        end,
      }
    end,
  })

  it('a Lua error in backward is reported the same way', function()
    local s = mx.sym.Custom{data = mx.sym.Variable('x'), op_type = 'lua_raiser', name = 'badb'}
    local exe = s:simple_bind{x = {2}}
    fail_now = false
    exe:forward{is_train = true}
    fail_now = true
    local ok, err = pcall(function() exe:backward{nd.array {1, 2}} end)
    assert.is_false(ok)
    assert.truthy(err:find("Custom 'badb' (op_type 'lua_raiser'): backward: ", 1, true), err)
    assert.truthy(err:find('boom in backward', 1, true), err)
    fail_now = false
    exe:backward{nd.array {1, 2}}
    H.near(exe.grad_dict.x:toflat(), {1, 2})
    fail_now = true
  end)

  it('a Lua error names the op type, the node and the message; the executor stays usable', function()
    local s = mx.sym.Custom{data = mx.sym.Variable('x'), op_type = 'lua_raiser', name = 'bad'}
    local exe = s:simple_bind{x = {3}, grad_req = 'null'}
    exe.arg_dict.x:set{1, 2, 3}
    local ok, err = pcall(function() exe:forward() end)
    assert.is_false(ok)
    assert.truthy(err:find("Custom 'bad' (op_type 'lua_raiser'): forward: ", 1, true), err)
    assert.truthy(err:find('boom in forward', 1, true), err)
    fail_now = false
    exe:forward()
    H.near(exe.outputs[1]:toflat(), {2, 3, 4})
    -- in a two-context group the message comes back from the worker's context
    fail_now = true
    local mod = mx.mod.Module{symbol = s, data_names = {'x'}, label_names = {}, context = {mx.cpu(0), mx.cpu(1)}, logger = false}
    mod:bind{data_shapes = {{'x', {4}}}, for_training = false}
    mod:init_params{}
    local batch = mx.io.DataBatch{data = {nd.array {1, 2, 3, 4}}}
    ok, err = pcall(function() mod:forward(batch, false) end)
    assert.is_false(ok)
    assert.truthy(err:find("Custom 'bad' (op_type 'lua_raiser'): forward: ", 1, true), err)
    fail_now = false
    mod:forward(batch, false)
    H.near(mod:get_outputs()[1]:toflat(), {2, 3, 4, 5})
  end)

  it('an unregistered op type is an error naming it and the node', function()
    assert.has_error(function() mx.sym.Custom{data = mx.sym.Variable('x'), op_type = 'nope', name = 'n1'} end)
    local ok, err = pcall(mx.sym.Custom, {data = mx.sym.Variable('x'), op_type = 'nope', name = 'n1'})
    assert.is_false(ok)
    assert.truthy(err:find("Custom 'n1' (op_type 'nope'): not registered", 1, true), err)
    ok, err = pcall(mx.sym.Custom, {data = mx.sym.Variable('x'), name = 'n2'})
    assert.truthy(err:find("Custom 'n2': required parameter 'op_type' is missing", 1, true), err)
  end)

  it('infer_shape errors name the node and the argument', function()
    mx.operator.register('lua_badshape', {
      list_arguments = function() return {'data', 'label'} end,
      infer_shape = function(_, s) return {s[1], {s[1][1] + 1}}, {s[1]}, {} end,
      create_operator = function() return {} end,
    })
    local s = mx.sym.Custom{data = mx.sym.Variable('x'), op_type = 'lua_badshape', name = 'bs'}
    local ok, err = pcall(function() s:infer_shape{x = {4, 2}, bs_label = {4}} end)
    assert.is_false(ok)
    assert.truthy(err:find("Custom 'bs': input 'label': expected shape (5,), got (4,)", 1, true), err)
    mx.operator.register('lua_raiseshape', {
      infer_shape = function() error('cannot infer this') end,
      create_operator = function() return {} end,
    })
    s = mx.sym.Custom{data = mx.sym.Variable('x'), op_type = 'lua_raiseshape', name = 'rs'}
    ok, err = pcall(function() s:infer_shape{x = {4, 2}} end)
    assert.truthy(err:find("Custom 'rs' (op_type 'lua_raiseshape'): infer_shape: ", 1, true), err)
    assert.truthy(err:find('cannot infer this', 1, true), err)
    mx.operator.register('lua_shortshape', {
      infer_shape = function(_, s) return s, {} end,
      create_operator = function() return {} end,
    })
    s = mx.sym.Custom{data = mx.sym.Variable('x'), op_type = 'lua_shortshape', name = 'ss'}
    ok, err = pcall(function() s:infer_shape{x = {4, 2}} end)
    assert.truthy(err:find('infer_shape must return 1 output shapes, got 0', 1, true), err)
    -- the symbol is still usable after the failures
    assert.same({'x'}, s:list_arguments())
  end)
end)

describe('mx.operator: aux states', function()
  mx.operator.register('lua_counter', {
    list_auxiliary_states = function() return {'count'} end,
    infer_shape = function(_, s) return s, {s[1]}, {{1}} end,
    create_operator = function()
      return {
        forward = function(self, is_train, req, in_data, out_data, aux)
          if is_train then
            local c = aux[1]:data()
            c[0] = c[0] + 1
          end
          self:assign(out_data[1], req[1], in_data[1] * 2)
        end,
        backward = function(self, req, out_grad, _, _, in_grad)
          self:assign(in_grad[1], req[1], out_grad[1] * 2)
        end,
      }
    end,
  })

  it('lists, shapes and updates aux states in place', function()
    local s = mx.sym.Custom{data = mx.sym.Variable('x'), op_type = 'lua_counter', name = 'ctr'}
    assert.same({'ctr_count'}, s:list_auxiliary_states())
    local _, _, aux = s:infer_shape{x = {2, 3}}
    assert.same({{1}}, aux)
    local exe = s:simple_bind{x = {2, 3}}
    exe.aux_dict.ctr_count:set{0}
    exe.arg_dict.x:set{{1, 2, 3}, {4, 5, 6}}
    exe:forward{is_train = true}
    exe:forward{is_train = true}
    exe:forward{is_train = false}
    assert.same({2}, exe.aux_dict.ctr_count:toflat())
    H.near(exe.outputs[1]:toflat(), {2, 4, 6, 8, 10, 12})
  end)
end)

describe('mx.operator: JSON', function()
  it('writes Custom nodes as MXNet does and round-trips when the op is registered', function()
    local s = mx.sym.Custom{data = mx.sym.Variable('x'), op_type = 'lua_scale', factor = 3, name = 'sc'}
    local json = s:tojson()
    assert.truthy(json:find('"op": "Custom"', 1, true), json)
    assert.truthy(json:find('"factor": "3"', 1, true), json)
    assert.truthy(json:find('"op_type": "lua_scale"', 1, true), json)
    local back = mx.sym.load_json(json)
    assert.equal(json, back:tojson())
    local e1, e2 = s:simple_bind{x = {2}, grad_req = 'null'}, back:simple_bind{x = {2}, grad_req = 'null'}
    e1.arg_dict.x:set{1, -2}
    e2.arg_dict.x:set{1, -2}
    e1:forward()
    e2:forward()
    H.near(e2.outputs[1]:toflat(), e1.outputs[1]:toflat())
    H.near(e2.outputs[1]:toflat(), {3, -6})
    local path = os.tmpname()
    s:save(path)
    local from_file = mx.sym.load(path)
    os.remove(path)
    assert.equal(json, from_file:tojson())
  end)

  it('loading a Custom node of an unregistered op type names it and the node', function()
    local s = mx.sym.Custom{data = mx.sym.Variable('x'), op_type = 'lua_scale', name = 'mine'}
    local json = s:tojson():gsub('lua_scale', 'never_registered')
    local ok, err = pcall(mx.sym.load_json, json)
    assert.is_false(ok)
    assert.truthy(err:find("Custom 'mine' (op_type 'never_registered'): not registered", 1, true), err)
  end)
end)

describe('mx.operator: BucketingModule', function()
  local V, N = 5, 2
  local function sym_gen(lua)
    return function(T)
      local data = mx.sym.Variable('data')
      local pooled = mx.sym.mean{data = data, axis = 1, keepdims = true} -- (N, 1) for any T
      local fc = mx.sym.FullyConnected{data = pooled, num_hidden = V, name = 'fc'}
      local scaled = lua and mx.sym.Custom{data = fc, op_type = 'lua_scale', factor = 0.5, name = 'half'}
                     or fc * 0.5
      local loss = lua and mx.sym.Custom{data = scaled, op_type = 'lua_softmax', name = 'softmax'}
                   or mx.sym.SoftmaxOutput{data = scaled, name = 'softmax'}
      return loss, {'data'}, {'softmax_label'}
    end
  end
  local function batch(T)
    local d, l = {}, {}
    for i = 1, N do
      d[i] = {}
      for t = 1, T do d[i][t] = math.sin(i * 3 + t) end
      l[i] = (i + T) % V
    end
    return mx.io.DataBatch{data = {nd.array(d)}, label = {nd.array(l)}, bucket_key = T,
      provide_data = {mx.io.DataDesc('data', {N, T})}, provide_label = {mx.io.DataDesc('softmax_label', {N})}}
  end

  it('switches buckets with a Custom op inside and trains like built-in ops', function()
    local mods = {}
    for k, lua in ipairs {false, true} do
      local mod = mx.mod.BucketingModule{sym_gen = sym_gen(lua), default_bucket_key = 4, logger = false}
      mod:bind{data_shapes = {{'data', {N, 4}}}, label_shapes = {{'softmax_label', {N}}}}
      mod:init_params{initializer = mx.init.Constant(0.1)}
      mod:init_optimizer{optimizer_params = {learning_rate = 0.3}}
      mods[k] = mod
    end
    for _, T in ipairs {4, 2, 6, 2, 4} do
      for _, mod in ipairs(mods) do
        mod:forward_backward(batch(T))
        mod:update()
      end
      H.near(mods[2]:get_outputs()[1]:toflat(), mods[1]:get_outputs()[1]:toflat(), 1e-5)
      assert.equal(T, mods[2].bucket_key)
    end
    local p1, p2 = mods[1]:get_params(), mods[2]:get_params()
    H.near(p2.fc_weight:toflat(), p1.fc_weight:toflat(), 1e-5)
  end)
end)
