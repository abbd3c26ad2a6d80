-- spec/rnn_cells_spec.lua — mx.rnn cells beyond the basic three: both calling forms of
-- every constructor, RNNParams sharing, BidirectionalCell, DropoutCell, ZoneoutCell,
-- ResidualCell, FusedRNNCell:unfuse with unpack_weights / pack_weights, and the RNN
-- checkpoint functions. Numbers come from running the graphs against hand-composed ones.
local mx = require 'luamx'
local H = require 'helpers'
local nd = mx.nd

local function rand(shape, seed, scale)
  math.randomseed(seed)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  local t = {}
  for i = 1, n do t[i] = (math.random() * 2 - 1) * (scale or 1) end
  return nd.array(t):reshape(shape)
end

-- Binds `sym` with the arrays in `given` (other arguments random, recorded into `given`)
-- and runs forward; `shapes` gives the input shapes.
local function run(sym, given, shapes, is_train, seed)
  local opts = {ctx = mx.cpu(), grad_req = 'write'}
  for k, v in pairs(shapes) do opts[k] = v end
  local exe = sym:simple_bind(opts)
  for i, name in ipairs(sym:list_arguments()) do
    if given[name] then exe.arg_dict[name]:set(given[name])
    else
      local a = exe.arg_arrays[i]
      a:set(rand(a.shape, (seed or 7) + i, 0.5))
      given[name] = a:copy()
    end
  end
  exe:forward{is_train = is_train or false}
  return exe
end

describe('mx.rnn constructors: positional and keyword forms', function()
  local data = mx.sym.Variable('data')
  local function args_of(cell)
    local outs = cell:unroll(2, data, nil, 'NTC', true)
    return outs:list_arguments()
  end

  it('RNNCell, LSTMCell, GRUCell take a keyword table with the same meaning', function()
    assert.same(args_of(mx.rnn.LSTMCell(4, 'p_')), args_of(mx.rnn.LSTMCell{num_hidden = 4, prefix = 'p_'}))
    assert.same(args_of(mx.rnn.GRUCell(4, 'g_')), args_of(mx.rnn.GRUCell{num_hidden = 4, prefix = 'g_'}))
    assert.same(args_of(mx.rnn.RNNCell(4, 'relu', 'r_')), args_of(mx.rnn.RNNCell{num_hidden = 4, activation = 'relu', prefix = 'r_'}))
    assert.same({'data', 'p_i2h_weight', 'p_i2h_bias', 'p_h2h_weight', 'p_h2h_bias'},
      args_of(mx.rnn.LSTMCell{num_hidden = 4, prefix = 'p_'}))
    -- forget_bias: keyword, MXNet's 4th positional, and luamx's older 3rd positional
    for _, cell in ipairs{mx.rnn.LSTMCell{num_hidden = 4, forget_bias = 2.5}, mx.rnn.LSTMCell(4, 'lstm_', nil, 2.5),
                          mx.rnn.LSTMCell(4, 'lstm_', 2.5)} do
      local outs = cell:unroll(1, data, nil, 'NTC', true)
      assert.equal('["lstmbias", {"forget_bias": 2.5}]', outs:attr_dict().lstm_i2h_bias.__init__)
    end
  end)

  it('FusedRNNCell: keyword table, MXNet positional order and the older luamx order agree', function()
    local a = mx.rnn.FusedRNNCell{num_hidden = 4, num_layers = 2, mode = 'gru', prefix = 'f_', get_next_state = true}
    local b = mx.rnn.FusedRNNCell(4, 2, 'gru', false, 0, true, 1.0, 'f_')
    local c = mx.rnn.FusedRNNCell(4, 2, 'gru', false, 'f_', {get_next_state = true})
    for _, cell in ipairs{a, b, c} do
      local outs, states = cell:unroll(3, data, nil, 'TNC', true)
      assert.same({'data', 'f_parameters'}, outs:list_arguments())
      assert.equal(1, #states)
      assert.equal('f_rnn', outs.name)
      assert.equal('LNC', states[1]:attr('__layout__'))
    end
  end)

  it('modifier and container cells take keyword tables too', function()
    local base = mx.rnn.LSTMCell(3, 'z_')
    local z = mx.rnn.ZoneoutCell{base_cell = base, zoneout_outputs = 0.3}
    assert.equal(0.3, z.zoneout_outputs)
    local d = mx.rnn.DropoutCell{dropout = 0.5, prefix = 'd_'}
    assert.equal(0.5, d.dropout)
    local bi = mx.rnn.BidirectionalCell{l_cell = mx.rnn.GRUCell(3, 'a_'), r_cell = mx.rnn.GRUCell(3, 'b_'), output_prefix = 'o_'}
    assert.equal('o_out', (bi:unroll(2, data, nil, 'NTC', true)).name)
    local seq = mx.rnn.SequentialRNNCell{params = mx.rnn.RNNParams('s_')}
    assert.truthy(seq.params)
    assert.truthy(mx.rnn.ResidualCell{base_cell = mx.rnn.GRUCell(3, 'q_')})
  end)

  it('refuses unknown keys and bad values, naming the constructor and the argument', function()
    H.raises(function() mx.rnn.LSTMCell{num_hiden = 4} end, 'mx.rnn.LSTMCell: unknown argument num_hiden',
      'num_hidden, prefix, params, forget_bias')
    H.raises(function() mx.rnn.LSTMCell{prefix = 'x_'} end, 'mx.rnn.LSTMCell: num_hidden must be a positive integer, got nil')
    H.raises(function() mx.rnn.GRUCell(0) end, 'mx.rnn.GRUCell: num_hidden must be a positive integer, got 0')
    H.raises(function() mx.rnn.RNNCell(4, 7) end, 'mx.rnn.RNNCell: activation must be a string, got number')
    H.raises(function() mx.rnn.LSTMCell(4, 5) end, 'mx.rnn.LSTMCell: prefix must be a string, got number')
    H.raises(function() mx.rnn.GRUCell(4, 'g_', {}) end, 'mx.rnn.GRUCell: params must be an mx.rnn.RNNParams')
    H.raises(function() mx.rnn.FusedRNNCell{num_hidden = 4, mode = 'lstn'} end,
      'mx.rnn.FusedRNNCell: mode must be lstm, gru, rnn_relu or rnn_tanh, got lstn')
    H.raises(function() mx.rnn.DropoutCell(1.5) end, 'mx.rnn.DropoutCell: dropout must be a number in [0, 1), got 1.5')
    H.raises(function() mx.rnn.ZoneoutCell(mx.rnn.FusedRNNCell(4)) end, "FusedRNNCell doesn't support zoneout")
    H.raises(function() mx.rnn.ResidualCell(42) end, 'mx.rnn.ResidualCell: base_cell must be an RNN cell, got number')
  end)

  it('RNNParams shares variables between cells; SequentialRNNCell params override', function()
    local p = mx.rnn.RNNParams('shared_')
    local a, b = mx.rnn.RNNCell(3, 'tanh', 'a_', p), mx.rnn.RNNCell(3, 'tanh', 'b_', p)
    local s = mx.sym.Group{(a:unroll(1, data, nil, 'NTC', true)), (b:unroll(1, data, nil, 'NTC', true))}
    local n = 0
    for _, name in ipairs(s:list_arguments()) do if name:find('^shared_') then n = n + 1 end end
    assert.equal(4, n) -- one set of i2h/h2h weight and bias, used by both cells
    local seq = mx.rnn.SequentialRNNCell(mx.rnn.RNNParams('x_'))
    local owned = mx.rnn.RNNCell(3, 'tanh', 'c_', mx.rnn.RNNParams('c_'))
    H.raises(function() seq:add(owned) end, 'either specify params for SequentialRNNCell or for the child cells, not both')
  end)
end)

describe('mx.rnn.BidirectionalCell', function()
  local T, N, I, Hd = 3, 2, 4, 5
  local data = mx.sym.Variable('data')

  it("names outputs as MXNet ('bi_t<i>' per step, 'bi_out' merged) with (N, T, 2H) shapes", function()
    local bi = mx.rnn.BidirectionalCell(mx.rnn.LSTMCell(Hd, 'l_'), mx.rnn.LSTMCell(Hd, 'r_'))
    local outs, states = bi:unroll(T, data, nil, 'NTC', false)
    assert.equal(T, #outs)
    assert.equal('bi_t0', outs[1].name)
    assert.equal('bi_t2', outs[3].name)
    assert.equal(2, #states); assert.equal(2, #states[1]); assert.equal(2, #states[2])
    local merged = bi:unroll(T, data, nil, 'NTC', true)
    assert.equal('bi_out', merged.name)
    local _, out = merged:infer_shape{data = {N, T, I}}
    assert.same({N, T, 2 * Hd}, out[1])
    local names = table.concat(merged:list_arguments(), ' ')
    assert.equal('data l_i2h_weight l_i2h_bias l_h2h_weight l_h2h_bias r_i2h_weight r_i2h_bias r_h2h_weight r_h2h_bias', names)
    H.raises(function() bi(data, {}) end, 'BidirectionalCell cannot be stepped')
  end)

  for _, layout in ipairs{'NTC', 'TNC'} do
    it('equals a forward cell over the steps and a reverse cell over the reversed steps (' .. layout .. ')', function()
      local bi = mx.rnn.BidirectionalCell(mx.rnn.GRUCell(Hd, 'l_'), mx.rnn.GRUCell(Hd, 'r_'))
      local merged = bi:unroll(T, data, nil, layout, true)
      local dshape = layout == 'NTC' and {N, T, I} or {T, N, I}
      local given = {data = rand(dshape, 1)}
      local exe = run(merged, given, {data = dshape})
      -- by hand: fresh cells with the same parameter names, steps fed forwards and backwards
      local l, r = mx.rnn.GRUCell(Hd, 'l_'), mx.rnn.GRUCell(Hd, 'r_')
      local steps = mx.sym.split{data = data, axis = layout == 'NTC' and 1 or 0, num_outputs = T, squeeze_axis = true}
      local fwd, bwd = {}, {}
      for t = 1, T do fwd[t] = steps[t]; bwd[t] = steps[T + 1 - t] end
      local lo = l:unroll(T, fwd, nil, layout, false)
      local ro = r:unroll(T, bwd, nil, layout, false)
      local heads = {}
      for t = 1, T do heads[t] = lo[t] end
      for t = 1, T do heads[T + t] = ro[t] end
      local exe2 = run(mx.sym.Group(heads), given, {data = dshape})
      local out = exe.outputs[1]:totable()
      for t = 1, T do
        local lt, rt = exe2.outputs[t]:totable(), exe2.outputs[T + (T + 1 - t)]:totable()
        for n = 1, N do
          local row = layout == 'NTC' and out[n][t] or out[t][n]
          local want = {}
          for k = 1, Hd do want[k] = lt[n][k]; want[Hd + k] = rt[n][k] end
          H.near(row, want, 1e-6)
        end
      end
    end)
  end
end)

describe('mx.rnn.DropoutCell and ZoneoutCell', function()
  local T, N, C = 4, 50, 8
  local data = mx.sym.Variable('data')

  it('DropoutCell is the identity at inference and drops with scaling 1/(1-p) in training', function()
    local cell = mx.rnn.DropoutCell(0.5)
    local outs = cell:unroll(T, data, nil, 'NTC', true)
    assert.truthy(outs:tojson():find('"op": "Dropout"', 1, true))
    local x = nd.ones({N, T, C})
    local given = {data = x}
    local exe = run(outs, given, {data = {N, T, C}}, false)
    H.near(exe.outputs[1]:toflat(), x:toflat())
    mx.random.seed(5)
    exe:forward{is_train = true}
    local zeros, n = 0, 0
    for _, v in ipairs(exe.outputs[1]:toflat()) do
      n = n + 1
      if v == 0 then zeros = zeros + 1 else assert.near(2.0, v, 1e-6) end
    end
    assert.is_true(zeros > 0.4 * n and zeros < 0.6 * n, ('%d of %d dropped'):format(zeros, n))
    -- per step (list inputs): one Dropout per step
    local per = mx.rnn.DropoutCell(0.25):unroll(T, data, nil, 'NTC', false)
    assert.equal(T, #per)
  end)

  it('ZoneoutCell: identity at inference; in training each output is the new one or the previous one', function()
    local Hd = 6
    local zc = mx.rnn.ZoneoutCell(mx.rnn.RNNCell(Hd, 'tanh', 'z_'), 0.5, 0)
    local outs = zc:unroll(T, data, nil, 'NTC', false)
    local dshape = {N, T, C}
    local given = {data = rand(dshape, 3)}
    local exe = run(mx.sym.Group(outs), given, {data = dshape}, false)
    -- the plain cell with the same parameters
    local plain = mx.rnn.RNNCell(Hd, 'tanh', 'z_')
    local pouts = plain:unroll(T, data, nil, 'NTC', false)
    local exe2 = run(mx.sym.Group(pouts), given, {data = dshape}, false)
    for t = 1, T do H.near(exe.outputs[t]:toflat(), exe2.outputs[t]:toflat(), 1e-6) end
    mx.random.seed(9)
    exe:forward{is_train = true}
    local kept, zoned = 0, 0
    local prev = {}
    for i = 1, N * Hd do prev[i] = 0 end
    for t = 1, T do
      local o, new = exe.outputs[t]:toflat(), exe2.outputs[t]:toflat()
      for i = 1, #o do
        if math.abs(o[i] - new[i]) < 1e-6 and math.abs(new[i] - prev[i]) > 1e-6 then kept = kept + 1
        elseif math.abs(o[i] - prev[i]) < 1e-6 then zoned = zoned + 1
        else error(('step %d element %d: %g is neither the new output %g nor the previous %g'):format(t, i, o[i], new[i], prev[i])) end
      end
      prev = o
    end
    assert.is_true(kept > 0.3 * N * Hd * T and zoned > 0.3 * N * Hd * T, ('kept %d zoned %d'):format(kept, zoned))
  end)

  it('ZoneoutCell zoneout_states: each next state is the new one or the previous one (here 0)', function()
    local Hd = 6
    local zc = mx.rnn.ZoneoutCell{base_cell = mx.rnn.RNNCell(Hd, 'tanh', 's_'), zoneout_states = 0.5}
    local outs, states = zc:unroll(1, data, nil, 'NTC', false)
    local dshape = {N, 1, C}
    local given = {data = rand(dshape, 8)}
    local exe = run(mx.sym.Group{outs[1], states[1]}, given, {data = dshape}, false)
    H.near(exe.outputs[2]:toflat(), exe.outputs[1]:toflat(), 1e-7) -- inference: the new state
    mx.random.seed(4)
    exe:forward{is_train = true}
    local out, st = exe.outputs[1]:toflat(), exe.outputs[2]:toflat()
    local kept, zoned = 0, 0
    for i = 1, #out do
      if st[i] == 0 and out[i] ~= 0 then zoned = zoned + 1
      else assert.near(out[i], st[i], 1e-7); kept = kept + 1 end
    end
    assert.is_true(kept > 0.3 * #out and zoned > 0.3 * #out, ('kept %d zoned %d'):format(kept, zoned))
  end)

  it('a modified base cell cannot be used directly; the modifier gives its begin states', function()
    local base = mx.rnn.LSTMCell(3, 'm_')
    local z = mx.rnn.ZoneoutCell(base, 0, 0.2)
    H.raises(function() base:begin_state() end, 'begin_state: after applying modifier cells')
    assert.equal(2, #z:begin_state())
    assert.equal(base.params, z.params) -- a modifier owns no parameters
    assert.same({{0, 3}, {0, 3}}, z:state_shape())
    assert.same({{2, 0, 3}, {2, 0, 3}}, mx.rnn.FusedRNNCell(3, 1, 'lstm', true):state_shape())
  end)
end)

describe('mx.rnn.ResidualCell', function()
  it('adds the input to the base output, names the sum <output>_plus_residual', function()
    local T, N, Hd = 3, 2, 4
    local data = mx.sym.Variable('data')
    local res = mx.rnn.ResidualCell(mx.rnn.GRUCell(Hd, 'g_'))
    local outs = res:unroll(T, data, nil, 'NTC', false)
    assert.equal('g_t0_out_plus_residual', outs[1].name)
    local merged = mx.rnn.ResidualCell(mx.rnn.GRUCell(Hd, 'g_')):unroll(T, data, nil, 'NTC', true)
    local dshape = {N, T, Hd}
    local given = {data = rand(dshape, 4)}
    local exe = run(merged, given, {data = dshape})
    local plain = mx.rnn.GRUCell(Hd, 'g_'):unroll(T, data, nil, 'NTC', true)
    local exe2 = run(plain, given, {data = dshape})
    local a, b, x = exe.outputs[1]:toflat(), exe2.outputs[1]:toflat(), given.data:toflat()
    for i = 1, #a do assert.near(b[i] + x[i], a[i], 1e-6) end
  end)
end)

describe('FusedRNNCell:unfuse', function()
  local T, N, I, Hd = 3, 2, 4, 5
  local cases = {{'lstm', 2, false}, {'gru', 1, true}, {'rnn_tanh', 2, true}, {'rnn_relu', 1, false}}
  for _, c in ipairs(cases) do
    local mode, L, bi = c[1], c[2], c[3]
    it(('gives the same outputs and gradients as the RNN op (%s, %d layer(s), %s)'):format(mode, L, bi and 'bidirectional' or 'forward'), function()
      local data = mx.sym.Variable('data')
      local fused = mx.rnn.FusedRNNCell{num_hidden = Hd, num_layers = L, mode = mode, bidirectional = bi, prefix = 'f_'}
      local fo = fused:unroll(T, data, nil, 'TNC', true)
      local dshape = {T, N, I}
      local x = rand(dshape, 11)
      local given = {data = x}
      local exe = run(fo, given, {data = dshape}, true, 20)
      local head = rand(exe.outputs[1].shape, 12)
      exe:backward{head}
      local stack = fused:unfuse()
      local uo = stack:unroll(T, data, nil, 'TNC', true)
      local args = stack:pack_weights(fused:unpack_weights({f_parameters = given.f_parameters}))
      args.data = x
      local exe2 = run(uo, args, {data = dshape}, true)
      for _, name in ipairs(uo:list_arguments()) do assert.truthy(args[name], 'unfused argument ' .. name) end
      H.near(exe2.outputs[1]:toflat(), exe.outputs[1]:toflat(), 1e-5)
      exe2:backward{head}
      H.near(exe2.grad_dict.data:toflat(), exe.grad_dict.data:toflat(), 1e-5)
      local grads = {}
      for name, g in pairs(exe2.grad_dict) do if name ~= 'data' then grads[name] = g end end
      local packed = fused:pack_weights(stack:unpack_weights(grads))
      H.near(packed.f_parameters:toflat(), exe.grad_dict.f_parameters:toflat(), 1e-5)
    end)
  end

  it("names the unfused cells as MXNet: '<prefix>l<i>_', '<prefix>r<i>_', '<prefix>bi_l<i>_', dropout between layers", function()
    local stack = mx.rnn.FusedRNNCell(4, 2, 'lstm', true, 0.3, false, 1.0, 'x_'):unfuse()
    assert.equal(3, #stack._cells)
    local outs = stack:unroll(2, mx.sym.Variable('data'), nil, 'NTC', true)
    assert.equal('x_bi_l1_out', outs.name)
    local args = table.concat(outs:list_arguments(), ' ')
    for _, n in ipairs{'x_l0_i2h_weight', 'x_r0_h2h_bias', 'x_l1_i2h_weight', 'x_r1_i2h_bias'} do
      assert.truthy(args:find(n, 1, true), n)
    end
    assert.equal(0.3, stack._cells[2].dropout)
    assert.equal('x__dropout0_', stack._cells[2]._prefix)
  end)

  it('unpack_weights splits gates with MXNet names; errors name the missing array', function()
    local cell = mx.rnn.LSTMCell(2, 'c_')
    local w = nd.array({{1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}, {6, 6}, {7, 7}, {8, 8}})
    local args = {c_i2h_weight = w, c_i2h_bias = nd.array({1, 2, 3, 4, 5, 6, 7, 8}),
                  c_h2h_weight = w, c_h2h_bias = nd.array({1, 2, 3, 4, 5, 6, 7, 8})}
    local u = cell:unpack_weights(args)
    assert.same({{5, 5}, {6, 6}}, u.c_i2h_c_weight:totable())
    assert.same({3, 4}, u.c_h2h_f_bias:totable())
    assert.is_nil(u.c_i2h_weight)
    assert.truthy(args.c_i2h_weight) -- the input table is not modified
    local p = cell:pack_weights(u)
    assert.same(w:totable(), p.c_i2h_weight:totable())
    H.raises(function() cell:unpack_weights({}) end, 'unpack_weights: no array c_i2h_weight in args')
    H.raises(function() mx.rnn.FusedRNNCell(2):unpack_weights({}) end, 'FusedRNNCell:unpack_weights: no array lstm_parameters in args')
  end)
end)

describe('mx.rnn.save_rnn_checkpoint / load_rnn_checkpoint / do_rnn_checkpoint', function()
  it('unpacks fused weights on save and packs them on load', function()
    local cell = mx.rnn.FusedRNNCell(3, 1, 'gru', false, 'g_')
    local outs = cell:unroll(2, mx.sym.Variable('data'), nil, 'TNC', true)
    local np = 3 * 3 * (4 + 3 + 2)
    local p = rand({np}, 21)
    local other = rand({2, 2}, 22)
    local prefix = os.tmpname()
    local model = require 'luamx.model'
    local saved_log = model.log
    model.log = function() end
    mx.rnn.save_rnn_checkpoint(cell, prefix, 3, outs, {g_parameters = p, fc_weight = other}, {})
    local raw = nd.load(prefix .. '-0003.params')
    assert.is_nil(raw['arg:g_parameters'])
    assert.same({3, 4}, raw['arg:g_l0_i2h_r_weight'].shape)
    assert.same({3}, raw['arg:g_l0_h2h_o_bias'].shape)
    H.near(raw['arg:fc_weight']:toflat(), other:toflat())
    local sym, arg = mx.rnn.load_rnn_checkpoint({cell}, prefix, 3)
    assert.equal(outs:tojson(), sym:tojson())
    H.near(arg.g_parameters:toflat(), p:toflat())
    assert.is_nil(arg.g_l0_i2h_r_weight)
    -- the same file loads into the unfused stack (its weights packed per cell)
    local _, uarg = mx.rnn.load_rnn_checkpoint(cell:unfuse(), prefix, 3)
    assert.same({9, 4}, uarg.g_l0_i2h_weight.shape)
    local cb = mx.rnn.do_rnn_checkpoint(cell, prefix .. 'cb', 2)
    cb(0, outs, {g_parameters = p}, {})
    assert.is_nil(io.open(prefix .. 'cb-0001.params'))
    cb(1, outs, {g_parameters = p}, {})
    assert.truthy(nd.load(prefix .. 'cb-0002.params')['arg:g_l0_i2h_z_weight'])
    model.log = saved_log
    for _, f in ipairs{prefix, prefix .. '-0003.params', prefix .. '-symbol.json', prefix .. 'cb-0002.params', prefix .. 'cb-symbol.json'} do os.remove(f) end
    H.raises(function() mx.rnn.save_rnn_checkpoint('x', prefix, 1, outs, {}, {}) end,
      'mx.rnn.save_rnn_checkpoint: cells must be an RNN cell or an array of cells, got string')
  end)
end)
