-- spec/rnn_spec.lua — mx.rnn: encode_sentences, BucketSentenceIter (buckets, padding,
-- shifted labels, layouts, repeatable shuffling), the cells' parameter names and
-- unrolled shapes, and the FusedRNN weight layout.
local mx = require 'luamx'
local H = require 'helpers'
local nd = mx.nd

describe('mx.rnn.encode_sentences', function()
  it("builds a vocabulary from start_label, with invalid_key -> invalid_label", function()
    local coded, vocab = mx.rnn.encode_sentences({{'the', 'cat'}, {'the', 'dog', '\n'}}, nil, 0, '\n', 1)
    assert.same({{1, 2}, {1, 3, 0}}, coded)
    assert.same({['\n'] = 0, the = 1, cat = 2, dog = 3}, vocab)
    coded = mx.rnn.encode_sentences({{'x', 'y', 'z'}}, nil, 1, '\n', 0)
    assert.same({{0, 2, 3}}, coded) -- id 1 is the invalid label and is skipped
  end)
  it("maps unknown words to unknown_token with a given vocabulary (MXNet's test)", function()
    local coded = mx.rnn.encode_sentences({{'a', 'b', 'c'}, {'b', 'c', 'd'}}, {a = 1, b = 2, c = 3}, -1, '\n', 0, 'UNK')
    assert.same({{1, 2, 3}, {2, 3, 0}}, coded)
    H.raises(function() mx.rnn.encode_sentences({{'a', 'q'}}, {a = 1}) end, 'unknown token "q" (sentence 1, word 2)')
  end)
end)

describe('mx.rnn.BucketSentenceIter', function()
  local sentences = {{1, 2}, {3, 4, 5}, {6, 7, 8}, {9, 10, 11, 12, 13}, {14}, {1, 2, 3, 4, 5, 6, 7}}
  local function quiet(f)
    local lines, saved = {}, require('luamx.rnn.io').log
    require('luamx.rnn.io').log = function(m) lines[#lines + 1] = m end
    local ok, r = pcall(f)
    require('luamx.rnn.io').log = saved
    assert(ok, r)
    return r, lines
  end

  it('pads into buckets, drops long sentences and tail batches, shifts labels', function()
    local it, lines = quiet(function() return mx.rnn.BucketSentenceIter(sentences, 2, {5, 3}, 0) end)
    assert.same({'WARNING: discarded 1 sentences longer than the largest bucket.'}, lines)
    assert.same({3, 5}, it.buckets)
    assert.equal(5, it.default_bucket_key)
    assert.same({2, 5}, it.provide_data[1].shape)
    assert.equal('softmax_label', it.provide_label[1].name)
    local rows, n = {}, 0
    for b in it do
      n = n + 1
      assert.equal(3, b.bucket_key)
      assert.same({2, 3}, b.data[1].shape)
      assert.same({2, 3}, b.provide_data[1].shape)
      assert.equal(0, b.pad)
      local d, l = b.data[1]:totable(), b.label[1]:totable()
      for r = 1, 2 do
        assert.same({d[r][2], d[r][3], 0}, l[r])
        rows[#rows + 1] = table.concat(d[r], ',')
      end
    end
    assert.equal(2, n) -- the 5-bucket holds one sentence: no full batch
    table.sort(rows)
    assert.same({'1,2,0', '14,0,0', '3,4,5', '6,7,8'}, rows)
  end)

  it('shuffles repeatably under mx.random.seed', function()
    local function order(seed)
      mx.random.seed(seed)
      local it = quiet(function() return mx.rnn.BucketSentenceIter(sentences, 1, {3, 5}, 0) end)
      local t = {}
      for b in it do t[#t + 1] = table.concat(b.data[1]:toflat(), ',') end
      return table.concat(t, ' ')
    end
    assert.equal(order(11), order(11))
  end)

  it("gives (T, N) batches with layout 'TN' and default buckets by count", function()
    local it = quiet(function()
      return mx.rnn.BucketSentenceIter{sentences = {{1, 2}, {3, 4}, {5}}, batch_size = 2, invalid_label = -1, layout = 'TN'}
    end)
    assert.same({2}, it.buckets)
    assert.same({2, 2}, it.provide_data[1].shape)
    local b = it:next()
    local d, l = b.data[1]:totable(), b.label[1]:totable()
    assert.same({d[2][1], d[2][2]}, l[1])
    assert.same({-1, -1}, l[2])
    H.raises(function() mx.rnn.BucketSentenceIter({{1}}, 1, {1}, 0, 'data', 'l', 'float32', 'NTC') end,
      'invalid layout NTC')
  end)
end)

describe('mx.rnn cells', function()
  local data = mx.sym.Variable('data')

  local function shapes_with_states(sym, dshape, state_shape)
    local sh = {data = dshape}
    for _, n in ipairs(sym:list_arguments()) do if n:find('begin_state') then sh[n] = state_shape end end
    return sym:infer_shape(sh)
  end

  it("LSTMCell: MXNet's parameter and node names, merged (N, T, C) outputs", function()
    local cell = mx.rnn.LSTMCell(4, 'lstm_')
    local outs, states = cell:unroll(3, data, cell:begin_state(mx.sym.Variable), 'NTC', true)
    assert.same({'data', 'lstm_i2h_weight', 'lstm_i2h_bias', 'lstm_begin_state_0', 'lstm_h2h_weight',
                 'lstm_h2h_bias', 'lstm_begin_state_1'}, outs:list_arguments())
    local args, out = outs:infer_shape{data = {2, 3, 5}} -- state shapes (0, 4): batch inferred
    assert.same({2, 3, 4}, out[1])
    assert.same({16, 5}, args[2])
    assert.same({2, 4}, args[4])
    assert.equal('NC', outs:attr_dict().lstm_begin_state_0.__layout__)
    assert.equal(2, #states)
    assert.equal('lstm_t2_out_output', states[1]:list_outputs()[1])
    assert.equal('lstm_t2_state_output', states[2]:list_outputs()[1])
    local internals = table.concat(outs:get_internals():list_outputs(), ' ')
    for _, n in ipairs{'lstm_t0_i2h_output', 'lstm_t0_slice_output3', 'lstm_t1_f_output', 'lstm_t2_c_output'} do
      assert.is_truthy(internals:find(n, 1, true), n)
    end
    assert.equal('["lstmbias", {"forget_bias": 1}]', outs:attr_dict().lstm_i2h_bias.__init__)
  end)

  it('GRUCell and RNNCell: names and per-step outputs without merging', function()
    local gru = mx.rnn.GRUCell(4)
    local outs = gru:unroll(2, {data, data}, gru:begin_state(mx.sym.Variable))
    assert.equal(2, #outs)
    assert.equal('gru_t1_out_output', outs[2]:list_outputs()[1])
    assert.is_truthy(table.concat(outs[2]:get_internals():list_outputs(), ' '):find('gru_t0__i2h_slice_output2', 1, true))
    local rnn = mx.rnn.RNNCell(3, 'relu', 'r_')
    local o = rnn:unroll(2, data, rnn:begin_state(mx.sym.Variable), 'TNC', true)
    local _, out = shapes_with_states(o, {2, 6, 5}, {6, 3})
    assert.same({2, 6, 3}, out[1])
    assert.same({'data', 'r_i2h_weight', 'r_i2h_bias', 'r_begin_state_0', 'r_h2h_weight', 'r_h2h_bias'}, o:list_arguments())
  end)

  it('SequentialRNNCell stacks cells as the bucketing example does', function()
    local stack = mx.rnn.SequentialRNNCell()
    stack:add(mx.rnn.LSTMCell(4, 'lstm_l0_')):add(mx.rnn.LSTMCell(4, 'lstm_l1_'))
    local outs, states = stack:unroll(3, data, stack:begin_state(mx.sym.Variable), 'NTC', true)
    assert.equal(4, #states)
    local args, out = shapes_with_states(outs, {2, 3, 5}, {2, 4})
    assert.same({2, 3, 4}, out[1])
    local names = outs:list_arguments()
    assert.equal('lstm_l1_i2h_weight', names[8])
    assert.same({16, 4}, args[8])
  end)

  it('FusedRNNCell: one parameters variable, the RNN op, and the FusedRNN layout', function()
    local f = mx.rnn.FusedRNNCell(4, 2, 'lstm', false, 'lstm_')
    local outs = f:unroll(3, data, f:begin_state(mx.sym.Variable), 'NTC', true)
    assert.same({'data', 'lstm_parameters', 'lstm_begin_state_0', 'lstm_begin_state_1'}, outs:list_arguments())
    local args, out = outs:infer_shape{data = {2, 3, 5}, lstm_begin_state_0 = {2, 2, 4}, lstm_begin_state_1 = {2, 2, 4}}
    assert.same({336}, args[2])
    assert.same({2, 3, 4}, out[1])
    local p = nd.zeros{336}
    mx.init.Constant(0.5)({name = 'lstm_parameters', attrs = {__init__ = outs:attr_dict().lstm_parameters.__init__}}, p)
    local v = p:toflat()
    assert.equal(0.5, v[1]); assert.equal(0.5, v[272])     -- weights
    assert.equal(0, v[273]); assert.equal(1, v[277])        -- l0 i2h: i bias 0, f bias 1
    assert.equal(0, v[281]); assert.equal(1, v[293])        -- l0 i2h c bias 0; l0 h2h f bias 1
    local slices = mx.rnn.FusedRNNCell and require('luamx.rnn.cells').fused_slices(p, 4, 2, 'lstm', false, 'lstm_')
    assert.equal('lstm_l0_i2h_i_weight', slices[1][1])
    assert.same({4, 5}, slices[1][2].shape)
    assert.equal('lstm_l1_i2h_i_weight', slices[9][1])
    assert.same({4, 4}, slices[9][2].shape)
    assert.equal('lstm_l1_h2h_o_bias', slices[#slices][1])
  end)
end)

describe('default begin states', function()
  local mx = require 'luamx'
  it('are _zeros nodes whose batch size is inferred', function()
    local cell = mx.rnn.LSTMCell(5, 'lstm_')
    local states = cell:begin_state()
    assert.are.equal(2, #states)
    assert.truthy(states[1]:tojson():find('"op": "_zeros"', 1, true))
    local outputs = cell:unroll(3, mx.sym.Variable('data'), nil, 'NTC', true)
    local _, out_shapes = outputs:infer_shape{data = {4, 3, 7}}
    assert.are.same({{4, 3, 5}}, out_shapes)
  end)
end)
