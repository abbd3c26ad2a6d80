--- luamx.models.ocr — the CTC OCR network of MXNet 1.9's example/ctc (lstm.py's
-- `lstm_unroll`, trained by lstm_ocr_train.py on 80 x 30 captcha images of 4 digits).
--
-- Each image column is one time step: `data` (N, seq_len, features) is split by
-- SliceChannel (squeeze_axis), `num_lstm_layer` LSTM layers are unrolled by hand with
-- the example's own cell (parameters `l<i>_i2h_weight` ... `l<i>_h2h_bias`, initial states
-- the variables `l<i>_init_c` / `l<i>_init_h`, nodes `t<t>_l<i>_i2h`, `_h2h`, `_slice`,
-- and the gates in the example's order: input, transform, forget, output), the steps'
-- outputs are concatenated along the batch axis (time-major rows) into `pred_fc`
-- (num_classes, 10 digits and the blank), and the loss is `ctc_loss` over
-- Reshape(-4, seq_len, -1, 0): Group([BlockGrad(MakeLoss(SoftmaxActivation(pred_fc))),
-- MakeLoss(ctc_loss)]), as the example's `_add_mxnet_ctc_loss` builds it (loss_type 'ctc');
-- without a loss, `softmax` over pred_fc (the example's inference symbol).
local common = require 'luamx.models.common'

local M = {}

--- The builders of this file, bound to `mx` (luamx.models.init puts them in mx.models).
-- @param mx the luamx module table
-- @return a table name -> builder
function M.make(mx)
  local S = mx.sym
  local R = {}

  --- The CTC OCR network of MXNet's example/ctc (see the file's head).
  -- @param opts `num_lstm_layer` (2), `seq_len` (80), `num_hidden` (100), `num_label` (4:
  --   the label's length), `num_classes` (11), `loss_type` ('ctc', or 'none' for the
  --   inference symbol)
  -- @return the network's symbol (inputs `data`, `label` and the initial states)
  -- @usage local net = mx.models.lstm_ocr{}  -- data (N, 80, 30), label (N, 4)
  function R.lstm_ocr(opts)
    local who = 'lstm_ocr'
    local o = common.options(who, opts, {num_lstm_layer = 2, seq_len = 80, num_hidden = 100, num_label = 4,
      num_classes = 11, loss_type = 'ctc'})
    for _, key in ipairs {'num_lstm_layer', 'seq_len', 'num_hidden', 'num_label', 'num_classes'} do
      common.positive_int(who, o, key)
    end
    common.one_of(who, o, 'loss_type', {'ctc', 'none'})
    if o.loss_type == 'ctc' then common.require_ops(mx, who, {'CTCLoss'}) end
    return common.fresh(mx, function()
      local params, states = {}, {}
      for i = 0, o.num_lstm_layer - 1 do
        local v = function(what) return S.Variable(('l%d_%s'):format(i, what)) end
        params[i] = {v('i2h_weight'), v('i2h_bias'), v('h2h_weight'), v('h2h_bias')}
      end
      for i = 0, o.num_lstm_layer - 1 do
        states[i] = {c = S.Variable(('l%d_init_c'):format(i)), h = S.Variable(('l%d_init_h'):format(i))}
      end
      local H = o.num_hidden
      local function lstm(x, prev, p, t, l)
        local i2h = S.FullyConnected{data = x, weight = p[1], bias = p[2], num_hidden = 4 * H, name = ('t%d_l%d_i2h'):format(t, l)}
        local h2h = S.FullyConnected{data = prev.h, weight = p[3], bias = p[4], num_hidden = 4 * H, name = ('t%d_l%d_h2h'):format(t, l)}
        local g = S.SliceChannel{data = i2h + h2h, num_outputs = 4, name = ('t%d_l%d_slice'):format(t, l)}
        local in_gate = S.Activation{data = g[1], act_type = 'sigmoid'}
        local in_transform = S.Activation{data = g[2], act_type = 'tanh'}
        local forget_gate = S.Activation{data = g[3], act_type = 'sigmoid'}
        local out_gate = S.Activation{data = g[4], act_type = 'sigmoid'}
        local c = forget_gate * prev.c + in_gate * in_transform
        return {c = c, h = out_gate * S.Activation{data = c, act_type = 'tanh'}}
      end
      local cols = S.SliceChannel{data = S.Variable('data'), num_outputs = o.seq_len, squeeze_axis = true}
      local hidden_all = {}
      for t = 0, o.seq_len - 1 do
        local h = cols[t + 1]
        for l = 0, o.num_lstm_layer - 1 do
          states[l] = lstm(h, states[l], params[l], t, l)
          h = states[l].h
        end
        hidden_all[t + 1] = h
      end
      hidden_all[#hidden_all + 1] = {dim = 0}
      local pred = S.FullyConnected{data = S.Concat(unpack(hidden_all)), num_hidden = o.num_classes, name = 'pred_fc'}
      if o.loss_type == 'none' then return S.softmax{data = pred, name = 'softmax'} end
      local pred_ctc = S.Reshape{data = pred, shape = {-4, o.seq_len, -1, 0}}
      local ctc = S.MakeLoss{data = S.ctc_loss{data = pred_ctc, label = S.Variable('label')}}
      local soft = S.BlockGrad{data = S.MakeLoss{data = S.SoftmaxActivation{data = pred}}}
      return S.Group{soft, ctc}
    end)
  end

  return R
end

return M
