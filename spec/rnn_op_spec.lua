-- spec/rnn_op_spec.lua — the fused RNN operator's inter-layer dropout (MXNet 1.9's CPU RNN,
-- rnn_impl.h: dropout p on the output of every layer but the last, in training only,
-- scaled by 1/(1-p), masks drawn from the global generator and kept for backward in the
-- hidden 'reserve' output) and the parameters the CPU still refuses. Gradients with
-- dropout are checked by finite differences in tests/gradcheck_cases.h.
local mx = require 'luamx'
local H = require 'helpers'

local function rand_list(n, seed, lo, hi) return H.uniform(n, seed, lo or -1, hi or 1) end

local function arr(flat, shape, dt) return mx.nd.array(flat, { dtype = dt or 'float64' }):reshape(shape) end
local function flat(a) return a:toflat() end

-- packed parameter size of a unidirectional lstm (MXNet's GetRnnParamSize)
local function lstm_size(I, HS, L) return 4 * HS * (I + HS + 2) + (L - 1) * 4 * HS * (2 * HS + 2) end

-- Slices of MXNet's packed layout for a unidirectional stack with G gates: per layer
-- Wx, Wh, then per layer bx, bh. Returns the one-layer packed vector of layer l (1-based).
local function layer_params(p, G, I, HS, L, l)
  local ofs, wx, wh = 0, {}, {}
  for k = 1, L do
    local ind = k == 1 and I or HS
    if k == l then wx = { ofs, G * HS * ind }; wh = { ofs + G * HS * ind, G * HS * HS } end
    ofs = ofs + G * HS * (ind + HS)
  end
  local b = { ofs + (l - 1) * 2 * G * HS, 2 * G * HS }
  local out = {}
  for _, s in ipairs { wx, wh, b } do
    for i = 1, s[2] do out[#out + 1] = p[s[1] + i] end
  end
  return out
end

local function count_zeros(t)
  local z = 0
  for _, v in ipairs(t) do if v == 0 then z = z + 1 end end
  return z
end

describe('RNN op: dropout between layers', function()
  local T, N, I, HS, L = 4, 3, 5, 6, 2
  local np = lstm_size(I, HS, L)
  local function inputs(dt)
    return {
      data = arr(rand_list(T * N * I, 1), { T, N, I }, dt),
      parameters = arr(rand_list(np, 2, -0.5, 0.5), { np }, dt),
      state = arr(rand_list(L * N * HS, 3), { L, N, HS }, dt),
      state_cell = arr(rand_list(L * N * HS, 4), { L, N, HS }, dt),
    }
  end
  local function lstm(x, extra)
    local a = { data = x.data, parameters = x.parameters, state = x.state, state_cell = x.state_cell,
      mode = 'lstm', state_size = HS, num_layers = L }
    for k, v in pairs(extra or {}) do a[k] = v end
    return mx.nd.RNN(a)
  end

  for _, dt in ipairs { 'float32', 'float64' } do
    it('is the identity in inference: p > 0 equals p = 0 (' .. dt .. ')', function()
      local x = inputs(dt)
      local ref = flat(lstm(x))
      assert.are.same(ref, flat(lstm(x, { p = 0.5 })))
      -- and through a bound executor run with is_train = false
      local s = mx.sym.RNN { data = mx.sym.Variable('data'), parameters = mx.sym.Variable('parameters'),
        state = mx.sym.Variable('state'), state_cell = mx.sym.Variable('state_cell'),
        mode = 'lstm', state_size = HS, num_layers = L, p = 0.5 }
      local exe = s:bind { ctx = mx.cpu(), args = x }
      exe:forward { is_train = false }
      assert.are.same(ref, flat(exe.outputs[1]))
    end)

    it('in training repeats under the same seed and changes with it (' .. dt .. ')', function()
      local x = inputs(dt)
      mx.random.seed(7)
      local a = flat(lstm(x, { p = 0.5, is_train = true }))
      mx.random.seed(7)
      local b = flat(lstm(x, { p = 0.5, is_train = true }))
      assert.are.same(a, b)
      mx.random.seed(8)
      assert.are_not.same(a, flat(lstm(x, { p = 0.5, is_train = true })))
      assert.are_not.same(a, flat(lstm(x)))
      -- p = 0 in training is the plain network
      assert.are.same(flat(lstm(x)), flat(lstm(x, { is_train = true })))
    end)
  end

  it('equals layer 1, times the Dropout mask of the same seed, then layer 2', function()
    local x, p = inputs('float64'), 0.4
    mx.random.seed(11)
    local fused = lstm(x, { p = p, is_train = true, state_outputs = true })
    -- the mask: Dropout of ones draws the same uniforms (same seed, count and dtype)
    mx.random.seed(11)
    local mask = mx.nd.Dropout(mx.nd.ones({ T, N, HS }, { dtype = 'float64' }), { p = p, is_train = true })
    local z = count_zeros(flat(mask))
    assert.is_true(z > 0 and z < T * N * HS)
    local pf = flat(x.parameters)
    local h0, c0 = flat(x.state), flat(x.state_cell)
    local function one(l, data)
      local nh = N * HS
      local hs = { table.unpack(h0, (l - 1) * nh + 1, l * nh) }
      local cs = { table.unpack(c0, (l - 1) * nh + 1, l * nh) }
      local pl = layer_params(pf, 4, I, HS, L, l)
      return mx.nd.RNN { data = data, parameters = arr(pl, { #pl }), state = arr(hs, { 1, N, HS }),
        state_cell = arr(cs, { 1, N, HS }), mode = 'lstm', state_size = HS, num_layers = 1,
        state_outputs = true }
    end
    local l1 = one(1, x.data)
    local l2 = one(2, l1[1] * mask)
    H.near(flat(fused[1]), flat(l2[1]), 1e-12)
    -- the state outputs are the undropped ones of each layer
    local hy = flat(fused[2])
    H.near({ table.unpack(hy, 1, N * HS) }, flat(l1[2]), 1e-12)
    H.near({ table.unpack(hy, N * HS + 1, 2 * N * HS) }, flat(l2[2]), 1e-12)
  end)

  it('backward in an executor uses the forward masks (gradients match the composition)', function()
    local x, p = inputs('float64'), 0.5
    local sv = mx.sym.Variable
    local fused = mx.sym.RNN { data = sv('data'), parameters = sv('parameters'), state = sv('state'),
      state_cell = sv('state_cell'), mode = 'lstm', state_size = HS, num_layers = L, p = p }
    local e1 = fused:simple_bind { ctx = mx.cpu(), data = { T, N, I }, grad_req = 'write',
      type_dict = { data = 'float64', parameters = 'float64', state = 'float64', state_cell = 'float64' } }
    for k, v in pairs(x) do e1.arg_dict[k]:set(v) end
    local head = arr(rand_list(T * N * HS, 5), { T, N, HS })
    mx.random.seed(3)
    e1:forward { is_train = true }
    e1:backward { head }
    -- the composition: two one-layer RNNs with an explicit mask argument between them
    local pf, h0, c0 = flat(x.parameters), flat(x.state), flat(x.state_cell)
    local nh = N * HS
    local p1, p2 = layer_params(pf, 4, I, HS, L, 1), layer_params(pf, 4, I, HS, L, 2)
    local l1 = mx.sym.RNN { data = sv('data'), parameters = sv('p1'), state = sv('h1'), state_cell = sv('c1'),
      mode = 'lstm', state_size = HS, num_layers = 1 }
    local l2 = mx.sym.RNN { data = l1 * sv('mask'), parameters = sv('p2'), state = sv('h2'),
      state_cell = sv('c2'), mode = 'lstm', state_size = HS, num_layers = 1 }
    mx.random.seed(3)
    local mask = mx.nd.Dropout(mx.nd.ones({ T, N, HS }, { dtype = 'float64' }), { p = p, is_train = true })
    local args = { data = x.data, p1 = arr(p1, { #p1 }), p2 = arr(p2, { #p2 }), mask = mask,
      h1 = arr({ table.unpack(h0, 1, nh) }, { 1, N, HS }), h2 = arr({ table.unpack(h0, nh + 1, 2 * nh) }, { 1, N, HS }),
      c1 = arr({ table.unpack(c0, 1, nh) }, { 1, N, HS }), c2 = arr({ table.unpack(c0, nh + 1, 2 * nh) }, { 1, N, HS }) }
    local grads = {}
    for k, v in pairs(args) do grads[k] = mx.nd.zeros(v.shape, { dtype = 'float64' }) end
    local e2 = l2:bind { ctx = mx.cpu(), args = args, args_grad = grads }
    e2:forward { is_train = true }
    e2:backward { head }
    H.near(flat(e1.outputs[1]), flat(e2.outputs[1]), 1e-12)
    H.near(flat(e1.grad_dict.data), flat(grads.data), 1e-10)
    -- parameter gradients: layer 1's Wx block and layer 2's Wh block
    local gp = flat(e1.grad_dict.parameters)
    local g1, g2 = flat(grads.p1), flat(grads.p2)
    H.near({ table.unpack(gp, 1, 4 * HS * I) }, { table.unpack(g1, 1, 4 * HS * I) }, 1e-10)
    local o2 = 4 * HS * (I + HS) + 4 * HS * HS
    H.near({ table.unpack(gp, o2 + 1, o2 + 4 * HS * HS) },
      { table.unpack(g2, 4 * HS * HS + 1, 8 * HS * HS) }, 1e-10)
  end)

  it('drops a fraction p of the inter-layer activations, scaling the rest by 1/(1-p)', function()
    -- layer 1 outputs ones (rnn_relu, zero weights, bias 1); layer 2 is relu(identity · x),
    -- so the output is the mask itself
    local T2, N2, S, p = 20, 10, 8, 0.3
    local G, Lx = 1, 2
    local n = G * S * (1 + S + 2) + G * S * (S + S + 2)
    local prm = {}
    for i = 1, n do prm[i] = 0 end
    local ofs2 = G * S * (1 + S) -- layer 2's Wx (S x S)
    for j = 0, S - 1 do prm[ofs2 + j * S + j + 1] = 1 end
    local b1 = G * S * (1 + S) + G * S * (2 * S)
    for j = 1, S do prm[b1 + j] = 1 end -- layer 1's bx
    mx.random.seed(5)
    local y = flat(mx.nd.RNN { data = mx.nd.zeros({ T2, N2, 1 }), parameters = mx.nd.array(prm),
      state = mx.nd.zeros({ Lx, N2, S }), mode = 'rnn_relu', state_size = S, num_layers = Lx, p = p,
      is_train = true })
    local z = count_zeros(y)
    for _, v in ipairs(y) do assert.is_true(v == 0 or math.abs(v - 1 / (1 - p)) < 1e-6) end
    local frac = z / #y
    assert.is_true(math.abs(frac - p) < 0.06, ('fraction of zeros %.3f, expected about %.2f'):format(frac, p))
    -- inference: all ones
    y = flat(mx.nd.RNN { data = mx.nd.zeros({ T2, N2, 1 }), parameters = mx.nd.array(prm),
      state = mx.nd.zeros({ Lx, N2, S }), mode = 'rnn_relu', state_size = S, num_layers = Lx, p = p })
    assert.equal(0, count_zeros(y))
  end)
end)

describe('RNN op: parameters the CPU refuses', function()
  local T, N, I, HS = 2, 2, 3, 4
  local function call(extra)
    local a = { data = mx.nd.zeros({ T, N, I }), parameters = mx.nd.zeros({ lstm_size(I, HS, 1) }),
      state = mx.nd.zeros({ 1, N, HS }), state_cell = mx.nd.zeros({ 1, N, HS }), mode = 'lstm',
      state_size = HS, num_layers = 1 }
    for k, v in pairs(extra) do a[k] = v end
    return mx.nd.RNN(a)
  end
  it('names the op and the parameter, and says MXNet only has it with cuDNN', function()
    H.raises(function() call { use_sequence_length = true, sequence_length = mx.nd.array { 2, 2 } } end,
      'RNN', "parameter 'use_sequence_length' is only supported by MXNet with cuDNN; not on the CPU")
    H.raises(function() call { lstm_state_clip_min = -1, lstm_state_clip_max = 1 } end,
      'RNN', "parameter 'lstm_state_clip_min/max' is only supported by MXNet with cuDNN; not on the CPU")
  end)
  it('refuses projection_size by name', function()
    local P = 2
    local n = 4 * HS * (I + P + 2) + P * HS
    H.raises(function()
      mx.nd.RNN { data = mx.nd.zeros({ T, N, I }), parameters = mx.nd.zeros({ n }),
        state = mx.nd.zeros({ 1, N, P }), state_cell = mx.nd.zeros({ 1, N, HS }), mode = 'lstm',
        state_size = HS, num_layers = 1, projection_size = P }
    end, 'RNN', "parameter 'projection_size' is only supported by MXNet with cuDNN (and by its CPU RNN in inference); not on the CPU")
  end)
  it('rejects p = 1 as MXNet does (0 <= p < 1)', function()
    H.raises(function() mx.sym.RNN { data = mx.sym.Variable('x'), mode = 'lstm', state_size = 4, num_layers = 2, p = 1 } end,
      'RNN', "parameter 'p': expected 0 <= p < 1, got 1")
  end)
end)
