--- spec/models_seq_spec.lua — mx.models.transformer_encoder and mx.models.seq2seq: shapes,
-- names, options, training steps (a Module learns a copy task), the memory plan, and the
-- forward outputs and every gradient against PyTorch's own modules of the same design
-- (spec/models_seq_ref.py: nn.TransformerEncoderLayer, nn.LSTM/GRU with Luong attention),
-- loaded with the same weights; that part is pending without Debian's python3-torch.
local mx = require 'luamx'
local nd = mx.nd
local H = require 'helpers'

local src = os.getenv('LUAMX_SOURCE_DIR') or '.'

local function have_torch()
  return os.execute('/usr/bin/python3 -c "import torch" >/dev/null 2>&1') == 0
end

local function count_ops(sym)
  local counts = {}
  for op in sym:tojson():gmatch('"op": "([^"]+)"') do counts[op] = (counts[op] or 0) + 1 end
  return counts
end

-- the memory plan line of a bound executor: planned and naive bytes
local function plan_of(label, exe)
  local plan = exe:debug_str():match('(Memory plan: [^\n]*)')
  local planned, naive = plan:match('Memory plan: (%d+) bytes in %d+ blocks for %d+ entries %(naive sum (%d+) bytes%)')
  print(('  %s: %s (%.0f%% of the naive sum)'):format(label, plan, 100 * planned / naive))
  return tonumber(planned), tonumber(naive)
end

local T_OPTS = {units = 16, hidden_size = 24, num_heads = 4, num_layers = 2, dropout = 0}
local S_OPTS = {src_vocab = 11, tgt_vocab = 9, src_len = 6, tgt_len = 5, embed = 8, hidden = 12, num_layers = 2}

describe('mx.models.transformer_encoder', function()
  it('keeps (N, T, units), names its parameters per layer and counts them', function()
    local enc = mx.models.transformer_encoder(T_OPTS)
    local _, out = enc:infer_shape{data = {3, 7, 16}}
    assert.same({3, 7, 16}, out[1])
    local args = enc:list_arguments()
    assert.equal(1 + 2 * 16, #args)
    assert.equal('encoder_layer0_attn_query_weight', args[2])
    assert.equal('encoder_layer1_ln2_beta', args[#args])
    -- per layer: 4 (E x E + E) attention, E x F + F and F x E + E feed-forward, 2 x 2E norms
    local E, F = 16, 24
    assert.equal(2 * (4 * (E * E + E) + E * F + F + F * E + E + 4 * E),
      mx.models.num_params(enc, {data = {3, 7, 16}}))
    local c = count_ops(enc)
    assert.equal(4, c.batch_dot)
    assert.equal(4, c.LayerNorm)
    assert.equal(2, c._contrib_div_sqrt_dim)
    assert.is_nil(c.Dropout) -- dropout 0 adds none
    assert.equal(2 * 4, count_ops(mx.models.transformer_encoder{units = 16, hidden_size = 24, num_heads = 4,
      num_layers = 2}).Dropout)
    assert.equal(2, count_ops(mx.models.transformer_encoder{units = 16, hidden_size = 24, num_heads = 4,
      num_layers = 2, activation = 'gelu'}).LeakyReLU)
    -- its JSON loads back to the same JSON
    local json = enc:tojson()
    assert.equal(json, mx.sym.load_json(json):tojson())
  end)

  it('as a classifier, learns to tell two kinds of sequence apart', function()
    local net = mx.models.transformer_encoder{units = 16, hidden_size = 32, num_heads = 2, num_layers = 1,
      dropout = 0, num_classes = 2}
    mx.random.seed(3)
    -- class 1: the first half of each sequence is shifted up; class 0: the second half
    local N, T = 32, 6
    local x, y = {}, {}
    for i = 1, N do
      x[i], y[i] = {}, (i - 1) % 2
      for t = 1, T do
        x[i][t] = {}
        local up = (y[i] == 1) == (t <= T / 2)
        for e = 1, 16 do x[i][t][e] = (up and 1 or -1) * 0.5 + math.sin(i * 7 + t * 3 + e) * 0.5 end
      end
    end
    local it = mx.io.NDArrayIter{data = nd.array(x), label = nd.array(y), batch_size = 8}
    local mod = mx.mod.Module{symbol = net, logger = false}
    mod:fit(it, {num_epoch = 12, optimizer = 'adam', optimizer_params = {learning_rate = 0.01},
      initializer = mx.init.Xavier()})
    local acc = mod:score(it, 'acc')[1][2]
    assert.truthy(acc >= 0.95, 'accuracy ' .. acc)
    local exe = net:simple_bind{ctx = mx.cpu(), data = {8, T, 16}}
    local planned, naive = plan_of('transformer classifier, batch 8', exe)
    assert.truthy(planned < naive)
  end)

  it('rejects bad options, naming the option and what it got', function()
    H.raises(function() mx.models.transformer_encoder{units = 10, num_heads = 4} end,
      'mx.models.transformer_encoder', 'num_heads must divide units', 'units 10 and num_heads 4')
    H.raises(function() mx.models.transformer_encoder{activation = 'tanh'} end, 'activation', 'relu, gelu', 'got tanh')
    H.raises(function() mx.models.transformer_encoder{dropout = 1} end, 'dropout', '[0, 1)', 'got 1')
    H.raises(function() mx.models.transformer_encoder{heads = 2} end, 'unknown option "heads"')
    H.raises(function() mx.models.transformer_encoder{layer_norm_eps = 0} end, 'layer_norm_eps', 'got 0')
  end)
end)

describe('mx.models.seq2seq', function()
  it('gives (N*T, tgt_vocab) probabilities from src and tgt, with LSTM or GRU cells', function()
    for _, cell in ipairs {'lstm', 'gru'} do
      local o = {cell = cell}
      for k, v in pairs(S_OPTS) do o[k] = v end
      local net = mx.models.seq2seq(o)
      local _, out = net:infer_shape{src = {3, 6}, tgt = {3, 5}, softmax_label = {3, 5}}
      assert.same({15, 9}, out[1])
      local names = {}
      for _, n in ipairs(net:list_arguments()) do names[n] = true end
      for _, n in ipairs {'src', 'tgt', 'softmax_label', 'src_embed_weight', 'tgt_embed_weight', 'enc_l0_i2h_weight',
        'enc_l1_h2h_bias', 'dec_l1_i2h_weight', 'attn_combine_weight', 'out_bias'} do
        assert.truthy(names[n], cell .. ': ' .. n)
      end
      assert.is_nil(names.attn_key_weight)
      local gates = cell == 'lstm' and 4 or 3
      local arg_shapes = net:infer_shape{src = {3, 6}, tgt = {3, 5}, softmax_label = {3, 5}}
      local idx = {}
      for i, n in ipairs(net:list_arguments()) do idx[n] = i end
      assert.same({gates * 12, 8}, arg_shapes[idx.enc_l0_i2h_weight])
      assert.same({gates * 12, 12}, arg_shapes[idx.dec_l1_i2h_weight])
    end
    local general = mx.models.seq2seq{src_vocab = 11, tgt_vocab = 9, src_len = 6, tgt_len = 5, attention = 'general'}
    local names = {}
    for _, n in ipairs(general:list_arguments()) do names[n] = true end
    assert.truthy(names.attn_key_weight)
    assert.is_nil(names.attn_key_bias)
  end)

  it('learns to copy its source (teacher forcing)', function()
    mx.random.seed(5)
    local V, L, N = 8, 5, 64
    local srcs, tgts, labels = {}, {}, {}
    for i = 1, N do
      srcs[i], tgts[i], labels[i] = {}, {}, {}
      for t = 1, L do srcs[i][t] = 1 + (i * 5 + t * 3 + (i * t) % 7) % (V - 1) end
      for t = 1, L do
        tgts[i][t] = t == 1 and 0 or srcs[i][t - 1] -- 0 starts the decoder
        labels[i][t] = srcs[i][t]
      end
    end
    local net = mx.models.seq2seq{src_vocab = V, tgt_vocab = V, src_len = L, tgt_len = L, embed = 16, hidden = 32}
    local it = mx.io.NDArrayIter{data = {src = nd.array(srcs), tgt = nd.array(tgts)}, label = {softmax_label = nd.array(labels)},
      batch_size = 16}
    local mod = mx.mod.Module{symbol = net, data_names = {'src', 'tgt'}, label_names = {'softmax_label'}, logger = false}
    local metric = mx.metric.create('acc')
    local first
    mod:fit(it, {num_epoch = 40, optimizer = 'adam', optimizer_params = {learning_rate = 0.02},
      initializer = mx.init.Xavier(), eval_metric = metric,
      epoch_end_callback = function(epoch) if epoch == 0 then first = mod:score(it, 'acc')[1][2] end end})
    local acc = mod:score(it, 'acc')[1][2]
    print(('  seq2seq copy task: per-token accuracy %.3f after 1 epoch, %.3f after 40'):format(first, acc))
    assert.truthy(acc >= 0.9 and acc > first, ('accuracy %.3f (after the first epoch %.3f)'):format(acc, first))
  end)

  it('rejects bad options', function()
    H.raises(function() mx.models.seq2seq{tgt_vocab = 9, src_len = 6, tgt_len = 5} end,
      'mx.models.seq2seq', 'src_vocab must be a positive integer', 'got false')
    H.raises(function() mx.models.seq2seq{src_vocab = 5, tgt_vocab = 9, src_len = 6, tgt_len = 5, cell = 'rnn'} end,
      'cell', 'lstm, gru', 'got rnn')
    H.raises(function() mx.models.seq2seq{src_vocab = 5, tgt_vocab = 9, src_len = 6, tgt_len = 5, attention = 'additive'} end,
      'attention', 'dot, general', 'got additive')
  end)
end)

-- Writes one case for models_seq_ref.py: opts.txt, then luamx's arguments (random), the
-- head gradient (transformer), the output and every gradient.
local function write_case(dir, model, opts, shapes, tamper)
  assert(os.execute('mkdir -p ' .. dir) == 0)
  local net = mx.models[model](opts)
  mx.random.seed(17)
  local bind = {ctx = mx.cpu()}
  for k, v in pairs(shapes) do bind[k] = v end
  local exe = net:simple_bind(bind)
  local f = assert(io.open(dir .. '/opts.txt', 'w'))
  f:write('model ', model, '\n')
  for k, v in pairs(opts) do f:write(k, ' ', tostring(v), '\n') end
  f:close()
  for _, name in ipairs(exe:list_arguments()) do
    local a = exe.arg_dict[name]
    if name == 'src' then a:set(nd.floor(nd.random.uniform(0, opts.src_vocab - 0.01, a.shape)))
    elseif name == 'tgt' or name == 'softmax_label' then a:set(nd.floor(nd.random.uniform(0, opts.tgt_vocab - 0.01, a.shape)))
    elseif name:match('_gamma$') then a:set(nd.random.uniform(0.8, 1.2, a.shape))
    else a:set(nd.random.uniform(-0.5, 0.5, a.shape)) end
  end
  local w = H.array_writer(dir)
  for _, name in ipairs(exe:list_arguments()) do w.put('arg', name, exe.arg_dict[name]) end
  exe:forward{is_train = true}
  local head
  if model == 'transformer_encoder' then
    head = nd.random.uniform(-1, 1, exe.outputs[1].shape)
    w.put('head', 'head', head)
    exe:backward{head}
  else
    exe:backward()
  end
  w.put('out', 'output', exe.outputs[1])
  local n = 0
  for _, name in ipairs(exe:list_arguments()) do
    if name ~= 'src' and name ~= 'tgt' and name ~= 'softmax_label' then
      local g = exe.grad_dict[name]
      w.put('grad', name, name == tamper and g * 1.01 or g)
      n = n + 1
    end
  end
  w.close()
  return n
end

describe('mx.models sequence networks against PyTorch', function()
  if not have_torch() then
    pending('PyTorch (Debian python3-torch) is not installed')
    return
  end
  local cases = {
    {'transformer encoder, 2 layers, relu', 'transformer_encoder', T_OPTS, {data = {3, 7, 16}}},
    {'transformer encoder, 1 layer, gelu, 2 heads', 'transformer_encoder',
      {units = 8, hidden_size = 16, num_heads = 2, num_layers = 1, dropout = 0, activation = 'gelu'}, {data = {2, 5, 8}}},
    {'seq2seq, LSTM, 2 layers, dot attention', 'seq2seq', S_OPTS, {src = {3, 6}, tgt = {3, 5}, softmax_label = {3, 5}}},
    {'seq2seq, GRU, general attention', 'seq2seq',
      {src_vocab = 7, tgt_vocab = 10, src_len = 4, tgt_len = 6, embed = 5, hidden = 6, cell = 'gru', attention = 'general'},
      {src = {2, 4}, tgt = {2, 6}, softmax_label = {2, 6}}},
    {'control: one transformer gradient scaled by 1.01', 'transformer_encoder', T_OPTS, {data = {3, 7, 16}},
      'encoder_layer1_attn_key_weight'},
  }
  local results, text, counts = {}, '', {}
  setup(function()
    local root = os.tmpname()
    os.remove(root)
    local dirs = {}
    for i, c in ipairs(cases) do
      local o = {}
      for k, v in pairs(c[3]) do o[k] = v end
      if c[2] == 'transformer_encoder' then -- the builder's defaults, which the reference needs
        o.activation, o.layer_norm_eps = o.activation or 'relu', o.layer_norm_eps or 1e-5
      else
        o.cell, o.attention, o.num_layers = o.cell or 'lstm', o.attention or 'dot', o.num_layers or 1
      end
      dirs[i] = ('%s/case%d'):format(root, i)
      counts[i] = write_case(dirs[i], c[2], o, c[4], c[5])
    end
    local p = io.popen(('/usr/bin/python3 %s/spec/models_seq_ref.py %s 2>&1'):format(src, table.concat(dirs, ' ')))
    text = p:read('*a')
    p:close()
    os.execute('rm -rf ' .. root)
    for i, d in ipairs(dirs) do
      local pat = d:gsub('%p', '%%%0')
      results[i] = {}
      for kind, name, err, ref in text:gmatch('cmp ' .. pat .. ' (%a+) (%S+) (%S+) (%S+)') do
        results[i][kind .. ' ' .. name] = {tonumber(err) or math.huge, tonumber(ref) or 0}
      end
    end
  end)

  -- every output and gradient within 1e-4 of its reference's largest magnitude (float32
  -- against float64), that magnitude floored at 1e-3 of the largest gradient: the key
  -- projection's bias has a zero gradient in exact arithmetic (it adds the same amount
  -- to every score of a query, which the softmax removes), so both sides hold rounding
  -- noise there
  local function check(label, res, n)
    assert.truthy(res['out output'], label .. ': no output compared: ' .. text)
    local worst, at, ngrad, top = 0, nil, 0, 0
    for key, r in pairs(res) do if key:match('^grad ') then top = math.max(top, r[2]) end end
    for key, r in pairs(res) do
      local rel = r[1] / math.max(r[2], 1e-3 * top, 1e-12)
      if rel > worst then worst, at = rel, key end
      if key:match('^grad ') then ngrad = ngrad + 1 end
    end
    assert.equal(n, ngrad)
    print(('  %s: output and %d gradients, worst relative difference %.2g (%s)'):format(label, ngrad, worst, tostring(at)))
    assert(worst < 1e-4, ('%s: %s differs from PyTorch by %.3g of its largest value'):format(label, at, worst))
  end

  for i, c in ipairs(cases) do
    it(c[1], function()
      if c[5] then
        H.raises(function() check(c[1], results[i], counts[i]) end, 'grad ' .. c[5], 'differs from PyTorch')
      else
        check(c[1], results[i], counts[i])
      end
    end)
  end
end)
