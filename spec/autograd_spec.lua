-- mx.autograd: recording imperative calls and differentiating them with the executors'
-- backward kernels. The operator sweep runs every case of the gradient checker's table
-- (tests/gradcheck_cases.h) both ways — eagerly (record + backward) and through a bound
-- executor — and requires the same gradients; the rest checks the API: scopes, grad_req
-- write/add/null, retain_graph, autograd.grad, detach, Function, get_symbol and the
-- error messages.
local mx = require 'luamx'
local H = require 'helpers'

jit.off() -- mx.autograd.Function calls back into Lua from backward

local function flat(a) return a:toflat() end

local function max_rel_diff(a, b)
  local fa, fb = flat(a), flat(b)
  assert(#fa == #fb, ('sizes differ: %d and %d'):format(#fa, #fb))
  local m = 0
  for i = 1, #fa do
    local d = math.abs(fa[i] - fb[i]) / math.max(1, math.abs(fb[i]))
    if d ~= d then return math.huge end
    if d > m then m = d end
  end
  return m
end

-- -------------------------------------------------------------- the case table ---------
local function read_cases()
  local f = assert(io.open('tests/gradcheck_cases.h'))
  local text = f:read('*a')
  f:close()
  local body = text:match('g_cases%[%] = (%b{})')
  local cases = {}
  for op, params, shapes, kinds, K, is_train in body:gmatch(
      '{%s*"([^"]*)"%s*,%s*"([^"]*)"%s*,%s*"([^"]*)"%s*,%s*"([^"]*)"%s*,%s*(%d+)%s*,%s*(%d+)%s*}') do
    cases[#cases + 1] = {op = op, params = params, shapes = shapes, kinds = kinds,
      K = tonumber(K), is_train = tonumber(is_train) == 1}
  end
  return cases
end

local function parse_params(s)
  local p = {}
  for item in s:gmatch('[^;]+') do
    local k, v = item:match('^%s*([^=]+)=(.*)$')
    p[k] = v
  end
  return p
end

local function parse_shapes(s)
  local list = {}
  for sh in s:gmatch('%b()') do
    local dims = {}
    for d in sh:gmatch('%d+') do dims[#dims + 1] = tonumber(d) end
    list[#list + 1] = dims
  end
  return list
end

local function draw(shape, kind, K)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  local v = {}
  for i = 1, n do
    local u = math.random()
    if kind == 'u' then v[i] = 2 * u - 1
    elseif kind == 'a' then v[i] = (0.2 + 0.8 * u) * (math.random() < 0.5 and -1 or 1)
    elseif kind == 'p' then v[i] = 0.5 + u
    elseif kind == 'l' then v[i] = math.floor(u * K) % math.max(K, 1)
    elseif kind == 'c' then v[i] = 1
    elseif kind == 'g' then v[i] = 1.5 + u
    elseif kind == 'h' then v[i] = u - 0.5
    else v[i] = 0 end
  end
  return mx.nd.array(v):reshape(#shape > 0 and shape or {1})
end

local DIFF = {u = true, a = true, p = true, z = true, g = true, h = true}

-- Runs one case both ways; returns nil when equal, else a description.
local function run_case(c)
  if c.kinds:find('n') then return nil, 'skip' end -- int32 lengths: no float gradient
  local params = parse_params(c.params)
  local info = mx.op.info(c.op, params)
  local shapes = parse_shapes(c.shapes)
  local nin = #info.inputs
  local inputs = {}
  for i = 1, #shapes do inputs[i] = draw(shapes[i], c.kinds:sub(i, i), c.K) end
  -- executor
  local kw = {name = 'node'}
  for k, v in pairs(params) do kw[k] = v end
  local shape_kw, reqs = {grad_req = {}}, {}
  for i = 1, nin do
    local nm = info.inputs[i]
    kw[nm] = mx.sym.Variable(nm)
    shape_kw[nm] = inputs[i].shape
    reqs[i] = DIFF[c.kinds:sub(i, i)] and 'write' or 'null'
    shape_kw.grad_req[nm] = reqs[i]
  end
  if params.dtype and c.op == 'Embedding' then -- the weight has the op's dtype
    shape_kw.type_dict = {weight = params.dtype}
    inputs[2] = inputs[2]:astype(params.dtype)
  end
  local sym = mx.sym[c.op](kw)
  local exe = sym:simple_bind(shape_kw)
  for i = 1, nin do exe.arg_dict[info.inputs[i]]:set(inputs[i]) end
  for j, nm in ipairs(exe:list_auxiliary_states()) do
    local a = exe.aux_arrays[j]
    if #shapes > nin then a:set(inputs[nin + j]) else a:fill(nm:find('var') and 1 or 0) end
  end
  mx.random.seed(11)
  exe:forward{is_train = c.is_train}
  local heads = {}
  for i, o in ipairs(exe.outputs) do heads[i] = draw(o.shape, 'u', 0):astype(o.dtype) end
  exe:backward(heads, c.is_train) -- eager backward replays each call's recorded mode
  -- eager
  local eager_in = {}
  for i = 1, nin do
    eager_in[i] = inputs[i]:copy()
    if reqs[i] == 'write' then eager_in[i]:attach_grad() end
  end
  local args = {}
  for k, v in pairs(params) do args[k] = v end
  for i = 1, nin do args[i] = eager_in[i] end
  for j, nm in ipairs(info.aux) do
    args[nm] = #shapes > nin and inputs[nin + j]:copy() or
      mx.nd.full(exe.aux_arrays[j].shape, nm:find('var') and 1 or 0)
  end
  mx.random.seed(11)
  local out = mx.autograd.record(function() return mx.nd.op[c.op](args) end, c.is_train)
  if mx.nd.is_ndarray(out) then out = {out} end
  for i, o in ipairs(out) do
    local d = max_rel_diff(o, exe.outputs[i])
    if d > 1e-5 then return ('output %d differs by %g'):format(i, d) end
  end
  mx.autograd.backward(out, heads)
  for i = 1, nin do
    if reqs[i] == 'write' then
      local d = max_rel_diff(eager_in[i].grad, exe.grad_arrays[i])
      if d > 1e-4 then return ('gradient of %s differs by %g'):format(info.inputs[i], d) end
    end
  end
  return nil
end

describe('mx.autograd on every gradient-checker case', function()
  it('gives the executor\'s outputs and gradients', function()
    math.randomseed(5)
    local cases = read_cases()
    assert.is_true(#cases > 200, 'the case table was not parsed')
    local ops, ran, failures = {}, 0, {}
    -- every case except those with int32 length inputs (no float gradient) runs
    for i, c in ipairs(cases) do
      local ok, err, skip = pcall(run_case, c)
      if not ok then
        failures[#failures + 1] = ('case %d %s{%s}: error %s'):format(i, c.op, c.params, tostring(err))
      elseif err then
        failures[#failures + 1] = ('case %d %s{%s}: %s'):format(i, c.op, c.params, err)
      elseif skip ~= 'skip' then
        ran = ran + 1
        ops[c.op] = true
      end
    end
    local nops = 0
    for _ in pairs(ops) do nops = nops + 1 end
    assert(#failures == 0, table.concat(failures, '\n'))
    local skipped = 0
    for _, c in ipairs(cases) do if c.kinds:find('n') then skipped = skipped + 1 end end
    assert.equal(#cases - skipped, ran)
    assert.is_true(skipped <= 20, skipped .. ' cases skipped')
    assert.is_true(nops >= 80, 'only ' .. nops .. ' operators ran')
  end)
end)

describe('mx.autograd', function()
  it('differentiates arithmetic: d sum(x*x + 3x) = 2x + 3', function()
    local x = mx.nd.array{1, -2, 3}
    x:attach_grad()
    local y = mx.autograd.record(function() return mx.nd.sum(x * x + 3 * x) end)
    y:backward()
    H.near(x.grad:toflat(), {5, -1, 9}, 1e-6)
    assert.equal('sum', mx.autograd.entry(y))
    assert.equal('variable', mx.autograd.entry(x))
  end)

  it('reproduces MXNet\'s documented 2*a + b gradients with a head gradient', function()
    local a, b = mx.nd.array{1, 2}, mx.nd.array{2, 3}
    a:attach_grad(); b:attach_grad()
    local y = mx.autograd.record(function() return 2 * a + b end)
    H.near(y:toflat(), {4, 7})
    y:backward(y)
    H.near(a.grad:toflat(), {8, 14})
    H.near(b.grad:toflat(), {4, 7})
  end)

  it('scopes: record, pause, train_mode, predict_mode, explicit begin/end', function()
    assert.is_false(mx.autograd.is_recording())
    mx.autograd.record(function()
      assert.is_true(mx.autograd.is_recording())
      assert.is_true(mx.autograd.is_training())
      mx.autograd.pause(function()
        assert.is_false(mx.autograd.is_recording())
        assert.is_false(mx.autograd.is_training())
      end)
      mx.autograd.predict_mode(function() assert.is_false(mx.autograd.is_training()) end)
      assert.is_true(mx.autograd.is_recording())
    end)
    mx.autograd.record(function() assert.is_false(mx.autograd.is_training()) end, false)
    mx.autograd.train_mode(function() assert.is_true(mx.autograd.is_training()) end)
    local stop = mx.autograd.record()
    assert.is_true(mx.autograd.is_recording())
    stop()
    assert.is_false(mx.autograd.is_recording())
    -- an error inside the scope restores the state and propagates
    H.raises(function() mx.autograd.record(function() error('boom') end) end, 'boom')
    assert.is_false(mx.autograd.is_recording())
    assert.is_false(mx.autograd.is_training())
    H.raises(function() mx.autograd.record(42) end, 'mx.autograd.record', 'expected a function')
  end)

  it('does not record outside a scope or while paused', function()
    local x = mx.nd.array{1, 2}
    x:attach_grad()
    local y = x * 2
    assert.is_nil(mx.autograd.entry(y))
    local z = mx.autograd.record(function()
      return mx.autograd.pause(function() return mx.nd.relu(x) end)
    end)
    assert.is_nil(mx.autograd.entry(z))
  end)

  it('Dropout and BatchNorm follow the training flag', function()
    local x = mx.nd.ones{4, 100}
    local train = mx.autograd.record(function() return mx.nd.Dropout(x, {p = 0.5}) end)
    local zeros = 0
    for _, v in ipairs(train:toflat()) do if v == 0 then zeros = zeros + 1 end end
    assert.is_true(zeros > 100 and zeros < 300, 'training dropout dropped ' .. zeros)
    local pred = mx.autograd.record(function() return mx.nd.Dropout(x, {p = 0.5}) end, false)
    H.near(pred:toflat(), x:toflat())
    local data = mx.nd.array{{1, 2}, {3, 6}}
    local g, b = mx.nd.ones{2}, mx.nd.zeros{2}
    local mm, mv = mx.nd.zeros{2}, mx.nd.ones{2}
    mx.autograd.record(function()
      return mx.nd.BatchNorm{data = data, gamma = g, beta = b, moving_mean = mm, moving_var = mv,
        fix_gamma = false, momentum = 0.5}
    end)
    H.near(mm:toflat(), {1, 2}, 1e-6) -- 0.5 * 0 + 0.5 * batch mean {2, 4}
  end)

  it('grad_req add accumulates, write overwrites, null skips', function()
    local x = mx.nd.array{1, 2, 3}
    x:attach_grad('add')
    assert.equal('add', x.grad_req)
    for _ = 1, 3 do
      local y = mx.autograd.record(function() return mx.nd.sum(x * x) end)
      y:backward()
    end
    H.near(x.grad:toflat(), {6, 12, 18}, 1e-6)
    local w = mx.nd.array{1, 2, 3}
    w:attach_grad('write')
    for _ = 1, 3 do
      mx.autograd.record(function() return mx.nd.sum(w * w) end):backward()
    end
    H.near(w.grad:toflat(), {2, 4, 6}, 1e-6)
    local n = mx.nd.array{1, 2}
    n:attach_grad('null')
    local y = mx.autograd.record(function() return mx.nd.sum(n * x:slice(1, 2)) end)
    y:backward()
    H.near(n.grad:toflat(), {0, 0})
    H.raises(function() x:attach_grad('sometimes') end, 'attach_grad', 'grad_req',
      "expected 'write', 'add' or 'null'", 'sometimes')
  end)

  it('mark_variables gives variables the gradient arrays asked for; bad gradients are errors', function()
    local x, gx = mx.nd.array{1, 2, 3}, mx.nd.array{10, 10, 10}
    local w, gw = mx.nd.array{4, 5, 6}, mx.nd.zeros{3}
    mx.autograd.mark_variables({x, w}, {gx, gw}, {'add', 'write'})
    mx.autograd.record(function() return mx.nd.sum(x * w) end):backward()
    H.near(gx:toflat(), {14, 15, 16}, 1e-6) -- add: 10 + w
    H.near(gw:toflat(), {1, 2, 3}, 1e-6)    -- write: x
    H.near(x.grad:toflat(), {14, 15, 16}, 1e-6)
    local v = mx.nd.array{{1, 2}}
    H.raises(function() mx.autograd.mark_variables(v, mx.nd.zeros{3}) end, 'mark_variables',
      'gradient', 'expected shape (1,2) float32', 'got (3,) float32')
    H.raises(function() mx.autograd.mark_variables({x, w}, {gx}) end, 'mark_variables',
      'gradients', 'expected 2 arrays', 'got 1')
    H.raises(function() mx.autograd.mark_variables({x}, {42}) end, 'mark_variables',
      'gradients[1]', 'expected an NDArray', 'got number')
    H.raises(function() mx.autograd.mark_variables(x, gx, 'sometimes') end, 'mark_variables',
      'grad_reqs[1]', 'sometimes')
    -- v stays usable: a later attach_grad and backward work
    v:attach_grad()
    mx.autograd.record(function() return mx.nd.sum(v * v) end):backward()
    H.near(v.grad:toflat(), {2, 4}, 1e-6)
  end)

  it('records views, copies and the direct dot: a[i], a[{f, l}], slice, reshape, astype', function()
    local x = mx.nd.array{{1, 2}, {3, 4}, {5, 6}}
    x:attach_grad()
    local y = mx.autograd.record(function()
      local r = x[2] * 10 + x[{-1}]:reshape{2} * 100 -- rows 2 and 3
      local s = x:slice(1, 2):reshape{4}:astype('float64'):astype('float32')
      return mx.nd.sum(r) + mx.nd.sum(s:copy()) + mx.nd.sum(mx.nd.dot(x, mx.nd.ones{2, 1}))
    end)
    y:backward()
    H.near(x.grad:toflat(), {2, 2, 12, 12, 101, 101})
    -- writes through a view still write the array (not recorded)
    mx.autograd.record(function() x[1] = 0 end)
    H.near(x:toflat(), {0, 0, 3, 4, 5, 6})
  end)

  it('accumulates a variable used several times (x*x, fan-out)', function()
    local x = mx.nd.array{{1, 2}, {3, 4}}
    x:attach_grad()
    local y = mx.autograd.record(function()
      local a = mx.nd.relu(x)
      return mx.nd.sum(a * x + mx.nd.dot(x, x))
    end)
    y:backward()
    -- d/dx [sum(x*x) + sum(x @ x)] = 2x + (ones @ x^T + x^T @ ones)
    local ones = mx.nd.ones{2, 2}
    local expect = (2 * x + mx.nd.dot(ones, x:transpose()) + mx.nd.dot(x:transpose(), ones)):toflat()
    H.near(x.grad:toflat(), expect, 1e-5)
  end)

  it('retain_graph allows a second backward; without it the error names the operator', function()
    local x = mx.nd.array{1, 2}
    x:attach_grad()
    local y = mx.autograd.record(function() return mx.nd.sum(mx.nd.exp(x)) end)
    y:backward(nil, true)
    local first = x.grad:toflat()
    y:backward()
    H.near(x.grad:toflat(), first, 1e-6)
    H.raises(function() y:backward() end, 'backward', 'freed by an earlier backward',
      'retain_graph', 'exp')
    -- the tape stays usable
    local z = mx.autograd.record(function() return mx.nd.sum(x * 3) end)
    z:backward()
    H.near(x.grad:toflat(), {3, 3})
  end)

  it('errors: unrecorded head, bad head gradient; cut gradients are zeros', function()
    local x = mx.nd.array{1, 2}
    H.raises(function() x:backward() end, 'backward', 'head 1 is not the result of a recorded operation')
    x:attach_grad()
    H.raises(function() x:backward() end, 'head 1 is not the result of a recorded operation')
    local y = mx.autograd.record(function() return x * 2 end)
    H.raises(function() y:backward(mx.nd.ones{3}) end, 'head_grads[1]', 'expected shape (2,) float32', 'got (3,) float32')
    local s = mx.autograd.record(function() return mx.nd.sum(mx.nd.argmax(x * 1, {axis = 0})) end)
    -- as in MXNet (and the executor), an operator without a gradient gives zeros
    x.grad:fill(7)
    s:backward()
    H.near(x.grad:toflat(), {0, 0})
    -- a cut path next to a differentiable one: zero through BlockGrad, the rest flows
    local u = mx.autograd.record(function() return mx.nd.sum(mx.nd.BlockGrad(x) * x) end)
    u:backward()
    H.near(x.grad:toflat(), {1, 2})
    H.raises(function() mx.autograd.backward({}) end, 'mx.autograd.backward', 'heads')
    -- in-place writes are refused while recording, before anything is written
    local v = mx.nd.array{-1, 2}
    v:attach_grad()
    H.raises(function()
      mx.autograd.record(function() return mx.nd.relu(v, {out = v}) end)
    end, 'relu', 'output 1 writes into the storage of an input while recording')
    H.near(v:toflat(), {-1, 2})
    local w = mx.nd.zeros{2}
    w:attach_grad()
    H.raises(function()
      mx.autograd.record(function() return mx.nd.relu(v, {out = w}) end)
    end, 'output 1 writes into a variable (attach_grad)')
    local o = mx.nd.zeros{2}
    local r = mx.autograd.record(function() return mx.nd.relu(v, {out = o}) end)
    assert.equal(o, r)
    r:backward()
    H.near(v.grad:toflat(), {0, 1})
  end)

  it('mx.autograd.grad returns gradients without touching x.grad', function()
    local x, w = mx.nd.array{1, 2}, mx.nd.array{3, 4}
    x:attach_grad(); w:attach_grad()
    local y = mx.autograd.record(function() return mx.nd.sum(x * w) end)
    local gx = mx.autograd.grad(y, x, nil, true)
    H.near(gx:toflat(), {3, 4})
    local g = mx.autograd.grad({y}, {x, w})
    H.near(g[1]:toflat(), {3, 4})
    H.near(g[2]:toflat(), {1, 2})
    H.near(x.grad:toflat(), {0, 0})
    H.raises(function() mx.autograd.grad(y, x, nil, false, true) end, 'create_graph',
      'not supported')
    local z = mx.autograd.record(function() return mx.nd.sum(x * 2) end)
    H.raises(function() mx.autograd.grad(z, mx.nd.array{1}) end, 'variables[1]',
      'not an input of the recorded graph')
  end)

  it('detach cuts the history and shares the data', function()
    local x = mx.nd.array{1, 2}
    x:attach_grad()
    local y = mx.autograd.record(function()
      local d = (x * x):detach()
      return mx.nd.sum(d * x)
    end)
    y:backward()
    H.near(x.grad:toflat(), {1, 4}) -- d is a constant x^2
    local a = mx.nd.array{1, 2}
    local d = a:detach()
    d[1] = 5
    H.near(a:toflat(), {5, 2})
    assert.is_nil(mx.autograd.entry(d))
  end)

  it('Function: Lua forward/backward, saved tensors, errors', function()
    local Sigmoid = mx.autograd.Function{
      forward = function(self, x)
        local y = 1 / (1 + mx.nd.exp(-1 * x))
        self:save_for_backward(y)
        return y
      end,
      backward = function(self, dy)
        local y = self.saved_tensors[1]
        return dy * y * (1 - y)
      end,
    }
    local x = mx.nd.array{-1, 0, 2}
    x:attach_grad()
    local y = mx.autograd.record(function() return mx.nd.sum(Sigmoid()(x) * 2) end)
    y:backward()
    local want = {}
    for i, v in ipairs(x:toflat()) do
      local s = 1 / (1 + math.exp(-v))
      want[i] = 2 * s * (1 - s)
    end
    H.near(x.grad:toflat(), want, 1e-5)
    local Bad = mx.autograd.Function{
      forward = function(_, a) return a * 1 end,
      backward = function() error('my backward broke') end,
    }
    local z = mx.autograd.record(function() return mx.nd.sum(Bad()(x)) end)
    H.raises(function() z:backward() end, 'mx.autograd.Function', 'my backward broke')
    local Wrong = mx.autograd.Function{
      forward = function(_, a) return a * 1 end,
      backward = function() return mx.nd.ones{7} end,
    }
    local w = mx.autograd.record(function() return mx.nd.sum(Wrong()(x)) end)
    H.raises(function() w:backward() end, 'mx.autograd.Function', 'shape (3,)', 'got (7,)')
    H.raises(function() mx.autograd.Function{forward = 1} end, 'mx.autograd.Function',
      'forward and backward')
    -- still usable after the errors
    mx.autograd.record(function() return mx.nd.sum(Sigmoid()(x)) end):backward()
    H.near(x.grad:toflat(), {want[1] / 2, want[2] / 2, want[3] / 2}, 1e-5)
  end)

  it('get_symbol of an eager MLP gives the JSON of the symbol built directly', function()
    local data = mx.nd.random.uniform(-1, 1, {4, 6})
    local w1, b1 = mx.nd.random.uniform(-1, 1, {5, 6}), mx.nd.zeros{5}
    local w2, b2 = mx.nd.random.uniform(-1, 1, {3, 5}), mx.nd.zeros{3}
    local label = mx.nd.array{0, 1, 2, 1}
    local out = mx.autograd.record(function()
      local h = mx.nd.FullyConnected{data = data, weight = w1, bias = b1, num_hidden = 5, name = 'fc1'}
      h = mx.nd.Activation{data = h, act_type = 'relu', name = 'relu1'}
      h = mx.nd.FullyConnected{data = h, weight = w2, bias = b2, num_hidden = 3, name = 'fc2'}
      return mx.nd.SoftmaxOutput{data = h, label = label, name = 'softmax'}
    end)
    local sym = mx.autograd.get_symbol(out, {data = data, fc1_weight = w1, fc1_bias = b1,
      fc2_weight = w2, fc2_bias = b2, softmax_label = label})
    local net = mx.sym.FullyConnected{data = mx.sym.Variable('data'), num_hidden = 5, name = 'fc1'}
    net = mx.sym.Activation{data = net, act_type = 'relu', name = 'relu1'}
    net = mx.sym.FullyConnected{data = net, num_hidden = 3, name = 'fc2'}
    net = mx.sym.SoftmaxOutput{data = net, name = 'softmax'}
    assert.equal(net:tojson(), sym:tojson())
    -- and it binds to the same output
    local exe = sym:bind{args = {data = data, fc1_weight = w1, fc1_bias = b1, fc2_weight = w2,
      fc2_bias = b2, softmax_label = label}}
    exe:forward()
    H.near(exe.outputs[1]:toflat(), out:toflat(), 1e-6)
    H.raises(function() mx.autograd.get_symbol(mx.nd.ones{2}) end, 'get_symbol',
      'was not computed inside mx.autograd.record')
  end)

  it('keeps no memory once the arrays are gone', function()
    collectgarbage(); collectgarbage()
    local before = H.live_bytes()
    for _ = 1, 20 do
      local x = mx.nd.ones{64, 64}
      x:attach_grad()
      local y = mx.autograd.record(function() return mx.nd.sum(mx.nd.relu(x * x)) end)
      y:backward()
    end
    collectgarbage(); collectgarbage()
    assert.is_true(H.live_bytes() - before < 64 * 64 * 4, 'leaked ' .. (H.live_bytes() - before))
  end)
end)

describe('mx.autograd on a GPU context', function()
  it('records and differentiates on the device (same gradients as the CPU)', function()
    if mx.context.num_gpus() == 0 then
      pending('no GPU context on this machine: skipped')
      return
    end
    local function run(ctx)
      local x = mx.nd.array({{0.5, -1, 2}, {1, 0.25, -0.5}}, {ctx = ctx})
      local w = mx.nd.array({{0.1, 0.2, 0.3}, {-0.3, 0.4, 0.5}}, {ctx = ctx})
      x:attach_grad(); w:attach_grad('add')
      for _ = 1, 2 do
        local y = mx.autograd.record(function()
          local h = mx.nd.FullyConnected{data = x, weight = w, num_hidden = 2, no_bias = true}
          return mx.nd.sum(mx.nd.tanh(h) * h + x:sum{axis = 1})
        end)
        y:backward()
      end
      return x.grad:copyto(mx.cpu()):toflat(), w.grad:copyto(mx.cpu()):toflat()
    end
    local gx, gw = run(mx.gpu(0))
    local cx, cw = run(mx.cpu())
    H.near(gx, cx, 1e-5)
    H.near(gw, cw, 1e-5)
  end)
end)
