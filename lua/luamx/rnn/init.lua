--- luamx.rnn — mx.rnn: recurrent cells built from mx.sym (luamx.rnn.cells), sentence
--- encoding and the bucketing sentence iterator (luamx.rnn.io), RNN checkpoints
--- (luamx.rnn.checkpoint).
-- luamx.lua loads this file as 'luamx.rnn.init', so no '?/init.lua' entry is needed in
-- package.path.
local M = {}

--- Adds mx.rnn (cells, encode_sentences, BucketSentenceIter).
function M.install(mx)
  local rio = require 'luamx.rnn.io'
  local io_mod = require 'luamx.io'
  M.encode_sentences = rio.encode_sentences
  M.BucketSentenceIter = rio.make(io_mod)
  local cells = require 'luamx.rnn.cells'
  cells.install(M, mx)
  local ck = require 'luamx.rnn.checkpoint'
  M.save_rnn_checkpoint, M.load_rnn_checkpoint, M.do_rnn_checkpoint =
    ck.save_rnn_checkpoint, ck.load_rnn_checkpoint, ck.do_rnn_checkpoint
  mx.rnn = M
  return M
end

return M
