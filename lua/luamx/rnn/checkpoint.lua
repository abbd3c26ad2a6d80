--- luamx.rnn.checkpoint — mx.rnn.save_rnn_checkpoint / load_rnn_checkpoint /
--- do_rnn_checkpoint (MXNet 1.9 python/mxnet/rnn/rnn.py).
--
--   mx.rnn.save_rnn_checkpoint(cell, 'lm', 3, sym, arg, aux)   -- lm-symbol.json, lm-0003.params
--   local sym, arg, aux = mx.rnn.load_rnn_checkpoint(cell, 'lm', 3)
--
-- Invariants: the files are mx.model.save_checkpoint's (MXNet's format); on save each
-- cell's fused weights are unpacked (a FusedRNNCell's '<prefix>parameters' becomes
-- '<prefix>l0_i2h_i_weight', ...; an LSTMCell's i2h_weight becomes i2h_i_weight, ...), on
-- load they are packed again, so a checkpoint written with a FusedRNNCell loads into its
-- unfused stack and back. `cells` is one cell or an array of cells, applied in order.
local capi = require 'luamx.capi'
local model = require 'luamx.model'
local raise = capi.raise

local M = {}

local function cell_list(who, cells)
  if type(cells) ~= 'table' then raise(('%s: cells must be an RNN cell or an array of cells, got %s'):format(who, type(cells))) end
  if require('luamx.symbol').is_symbol(cells) or require('luamx.ndarray').is_ndarray(cells) then
    require('luamx.check').fail(who, 'cells', 'an RNN cell or an array of cells', cells)
  end
  if cells.unpack_weights then return {cells} end
  if #cells == 0 then require('luamx.check').fail(who, 'cells', 'an RNN cell or an array of cells', cells) end
  for i, c in ipairs(cells) do
    if type(c) ~= 'table' or not c.unpack_weights then
      raise(('%s: cells[%d] must be an RNN cell, got %s'):format(who, i, type(c)))
    end
  end
  return cells
end

--- Saves a checkpoint with the cells' weights unpacked (MXNet's save_rnn_checkpoint).
-- @param cells an RNN cell or an array of cells
-- @param prefix file prefix
-- @param epoch epoch number (file '<prefix>-%04d.params')
-- @param symbol the network (written to '<prefix>-symbol.json'; nil: not written)
-- @param arg_params table name -> NDArray
-- @param aux_params table name -> NDArray
function M.save_rnn_checkpoint(cells, prefix, epoch, symbol, arg_params, aux_params)
  for _, c in ipairs(cell_list('mx.rnn.save_rnn_checkpoint', cells)) do arg_params = c:unpack_weights(arg_params or {}) end
  model.save_checkpoint(prefix, epoch, symbol, arg_params, aux_params)
end

--- Loads a checkpoint and packs the cells' weights (MXNet's load_rnn_checkpoint).
-- @param cells an RNN cell or an array of cells
-- @param prefix file prefix
-- @param epoch epoch number
-- @return symbol, arg_params, aux_params
function M.load_rnn_checkpoint(cells, prefix, epoch)
  local list = cell_list('mx.rnn.load_rnn_checkpoint', cells)
  local sym, arg, aux = model.load_checkpoint(prefix, epoch)
  for _, c in ipairs(list) do arg = c:pack_weights(arg) end
  return sym, arg, aux
end

--- An epoch-end callback that saves every `period` epochs with save_rnn_checkpoint
-- (epoch number iter_no + 1, as mx.callback.do_checkpoint).
-- @param cells an RNN cell or an array of cells
-- @param prefix file prefix
-- @param period epochs between saves (default 1)
-- @return function(iter_no, sym, arg, aux)
function M.do_rnn_checkpoint(cells, prefix, period)
  cell_list('mx.rnn.do_rnn_checkpoint', cells)
  if type(prefix) ~= 'string' then raise('mx.rnn.do_rnn_checkpoint: prefix must be a string, got ' .. type(prefix)) end
  require('luamx.check').number('mx.rnn.do_rnn_checkpoint', 'period', period, {optional = true, min = 1})
  period = math.max(1, math.floor(period or 1))
  return function(iter_no, sym, arg, aux)
    if (iter_no + 1) % period == 0 then M.save_rnn_checkpoint(cells, prefix, iter_no + 1, sym, arg, aux) end
  end
end

return M
