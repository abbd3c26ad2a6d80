--- luamx.models.seq — sequence networks: a transformer encoder and an LSTM/GRU
-- sequence-to-sequence network with attention.
--
-- MXNet 1.9 ships no symbol-zoo builder for these (its transformer lives in GluonNLP, its
-- seq2seq in Sockeye), so the structure follows the published designs and MXNet's own
-- operators and cell API, and the specs check each against PyTorch's module of the same
-- design (`torch.nn.TransformerEncoderLayer`, `torch.nn.LSTM`/`GRU`) loaded with the same
-- weights:
--
-- * `transformer_encoder`: `num_layers` post-norm layers (Vaswani et al. 2017, as
--   `nn.TransformerEncoderLayer` with `batch_first = true, norm_first = false`) over data
--   (N, T, units). Each layer `<prefix>layer<l>_`: `attn_query`/`attn_key`/`attn_value`
--   (FullyConnected, flatten = false), heads split by Reshape/transpose to (N*heads, T, d),
--   `_contrib_div_sqrt_dim` on the queries, `batch_dot` with transpose_b, softmax over the
--   keys, Dropout, `batch_dot` with the values, heads merged, `attn_proj`, Dropout, the
--   residual and LayerNorm `ln1`; then `ffn_1`, relu (Activation) or gelu (LeakyReLU, erf
--   form), Dropout, `ffn_2`, Dropout, the residual and LayerNorm `ln2`. With
--   `num_classes`, mean pooling over time, a `classifier` FullyConnected and SoftmaxOutput
--   `softmax` make it a sequence classifier.
-- * `seq2seq`: token ids `src` (N, S) and decoder inputs `tgt` (N, T) (teacher forcing),
--   `softmax_label` (N, T). Embeddings `src_embed`/`tgt_embed`, an encoder and a decoder of
--   `num_layers` LSTM or GRU cells (mx.rnn cells `enc_l<k>_`, `dec_l<k>_`; the decoder
--   starts from the encoder's final states), Luong attention over the encoder outputs
--   (`dot` scores, or `general`: through `attn_key`, FullyConnected without bias), the
--   attentional state tanh(`attn_combine`([context; decoder output])), `out` over the
--   target vocabulary, and SoftmaxOutput `softmax` over (N*T, tgt_vocab).
local common = require 'luamx.models.common'
local raise = require('luamx.capi').raise

local M = {}

--- The builders of this file, bound to `mx` (luamx.models.init puts them in mx.models).
-- @param mx the luamx module table
-- @return a table name -> builder
function M.make(mx)
  local S = mx.sym
  local R = {}

  local function fc(x, n, name, no_bias)
    return S.FullyConnected{data = x, num_hidden = n, flatten = false, no_bias = no_bias or false, name = name}
  end
  local function dropout(x, p) if p > 0 then return S.Dropout{data = x, p = p} end return x end

  local function nonnegative(who, o, key)
    local v = o[key]
    if type(v) ~= 'number' or v < 0 or v >= 1 then
      raise(('mx.models.%s: %s must be a number in [0, 1), got %s'):format(who, key, tostring(v)))
    end
  end

  --- A transformer encoder (post-norm layers) over data (N, T, units); see the file's
  -- head for the structure and names.
  -- @param opts `units` (512), `hidden_size` (2048), `num_heads` (8; divides units),
  --   `num_layers` (6), `dropout` (0.1), `activation` ('relu' or 'gelu'), `layer_norm_eps`
  --   (1e-5), `prefix` ('encoder_'), `num_classes` (nil: the encoder's output (N, T,
  --   units); a number: a sequence classifier ending in SoftmaxOutput 'softmax')
  -- @return the network's symbol
  -- @usage local enc = mx.models.transformer_encoder{units = 64, hidden_size = 128, num_heads = 4, num_layers = 2}
  function R.transformer_encoder(opts)
    local who = 'transformer_encoder'
    local o = common.options(who, opts, {units = 512, hidden_size = 2048, num_heads = 8, num_layers = 6,
      dropout = 0.1, activation = 'relu', layer_norm_eps = 1e-5, prefix = 'encoder_', num_classes = false})
    local units, heads = common.positive_int(who, o, 'units'), common.positive_int(who, o, 'num_heads')
    common.positive_int(who, o, 'hidden_size')
    common.positive_int(who, o, 'num_layers')
    common.one_of(who, o, 'activation', {'relu', 'gelu'})
    nonnegative(who, o, 'dropout')
    if units % heads ~= 0 then
      raise(('mx.models.%s: num_heads must divide units, got units %d and num_heads %d'):format(who, units, heads))
    end
    if type(o.layer_norm_eps) ~= 'number' or o.layer_norm_eps <= 0 then
      raise(('mx.models.%s: layer_norm_eps must be a positive number, got %s'):format(who, tostring(o.layer_norm_eps)))
    end
    if type(o.prefix) ~= 'string' then
      raise(('mx.models.%s: prefix must be a string, got %s'):format(who, type(o.prefix)))
    end
    if o.num_classes then common.positive_int(who, o, 'num_classes') end
    return common.fresh(mx, function()
      local function split_heads(x) -- (N, T, units) -> (N*heads, T, d)
        x = S.transpose{data = S.Reshape{data = x, shape = {0, 0, heads, -1}}, axes = {0, 2, 1, 3}}
        return S.Reshape{data = x, shape = {-3, 0, 0}}
      end
      local function merge_heads(x) -- (N*heads, T, d) -> (N, T, units)
        x = S.transpose{data = S.Reshape{data = x, shape = {-4, -1, heads, 0, 0}}, axes = {0, 2, 1, 3}}
        return S.Reshape{data = x, shape = {0, 0, -3}}
      end
      local x = S.Variable('data')
      for l = 0, o.num_layers - 1 do
        local p = ('%slayer%d_'):format(o.prefix, l)
        local q = split_heads(fc(x, units, p .. 'attn_query'))
        local k = split_heads(fc(x, units, p .. 'attn_key'))
        local v = split_heads(fc(x, units, p .. 'attn_value'))
        local score = S.batch_dot{lhs = S._contrib_div_sqrt_dim{data = q}, rhs = k, transpose_b = true}
        local att = dropout(S.softmax{data = score, axis = -1, name = p .. 'attn_weights'}, o.dropout)
        local ctx = merge_heads(S.batch_dot{lhs = att, rhs = v})
        local y = dropout(fc(ctx, units, p .. 'attn_proj'), o.dropout)
        x = S.LayerNorm{data = x + y, axis = -1, eps = o.layer_norm_eps, name = p .. 'ln1'}
        local h = fc(x, o.hidden_size, p .. 'ffn_1')
        if o.activation == 'relu' then h = S.Activation{data = h, act_type = 'relu'}
        else h = S.LeakyReLU{data = h, act_type = 'gelu'} end
        h = dropout(fc(dropout(h, o.dropout), units, p .. 'ffn_2'), o.dropout)
        x = S.LayerNorm{data = x + h, axis = -1, eps = o.layer_norm_eps, name = p .. 'ln2'}
      end
      if not o.num_classes then return x end
      x = S.mean{data = x, axis = 1}
      return S.SoftmaxOutput{data = S.FullyConnected{data = x, num_hidden = o.num_classes, name = 'classifier'},
        name = 'softmax'}
    end)
  end

  --- A sequence-to-sequence network with Luong attention; see the file's head.
  -- @param opts `src_vocab` (required), `tgt_vocab` (required), `src_len` (required),
  --   `tgt_len` (required), `embed` (256), `hidden` (512), `num_layers` (1), `cell`
  --   ('lstm' or 'gru'), `attention` ('dot' or 'general'), `dropout` (0: between layers
  --   and before the output layer)
  -- @return the network's SoftmaxOutput symbol (inputs `src`, `tgt`, `softmax_label`)
  -- @usage local net = mx.models.seq2seq{src_vocab = 100, tgt_vocab = 120, src_len = 12, tgt_len = 10}
  function R.seq2seq(opts)
    local who = 'seq2seq'
    local o = common.options(who, opts, {src_vocab = false, tgt_vocab = false, src_len = false, tgt_len = false,
      embed = 256, hidden = 512, num_layers = 1, cell = 'lstm', attention = 'dot', dropout = 0})
    for _, key in ipairs {'src_vocab', 'tgt_vocab', 'src_len', 'tgt_len', 'embed', 'hidden', 'num_layers'} do
      common.positive_int(who, o, key)
    end
    common.one_of(who, o, 'cell', {'lstm', 'gru'})
    common.one_of(who, o, 'attention', {'dot', 'general'})
    nonnegative(who, o, 'dropout')
    return common.fresh(mx, function()
      local Cell = o.cell == 'lstm' and mx.rnn.LSTMCell or mx.rnn.GRUCell
      local function stack(side, inputs, len, begin)
        local states = {}
        local x = inputs
        for k = 0, o.num_layers - 1 do
          if k > 0 then x = dropout(x, o.dropout) end
          local cell = Cell{num_hidden = o.hidden, prefix = ('%s_l%d_'):format(side, k)}
          local out, st = cell:unroll(len, x, begin and begin[k + 1], 'NTC', true)
          x, states[k + 1] = out, st
        end
        return x, states
      end
      local src = S.Embedding{data = S.Variable('src'), input_dim = o.src_vocab, output_dim = o.embed, name = 'src_embed'}
      local tgt = S.Embedding{data = S.Variable('tgt'), input_dim = o.tgt_vocab, output_dim = o.embed, name = 'tgt_embed'}
      local enc, enc_states = stack('enc', src, o.src_len)
      local dec = stack('dec', tgt, o.tgt_len, enc_states)
      local keys = enc
      if o.attention == 'general' then keys = fc(enc, o.hidden, 'attn_key', true) end
      local score = S.batch_dot{lhs = dec, rhs = keys, transpose_b = true} -- (N, T, S)
      local alpha = S.softmax{data = score, axis = -1, name = 'attn_weights'}
      local ctx = S.batch_dot{lhs = alpha, rhs = enc} -- (N, T, hidden)
      local h = S.Activation{data = fc(S.Concat(ctx, dec, {dim = 2}), o.hidden, 'attn_combine'), act_type = 'tanh'}
      local logits = fc(dropout(h, o.dropout), o.tgt_vocab, 'out')
      local label = S.Reshape{data = S.Variable('softmax_label'), shape = {-1}}
      return S.SoftmaxOutput{data = S.Reshape{data = logits, shape = {-1, o.tgt_vocab}}, label = label, name = 'softmax'}
    end)
  end

  return R
end

return M
