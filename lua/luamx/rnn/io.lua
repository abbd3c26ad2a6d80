--- luamx.rnn.io — mx.rnn.encode_sentences and mx.rnn.BucketSentenceIter (MXNet 1.9
--- python/mxnet/rnn/io.py).
--
--   local coded, vocab = mx.rnn.encode_sentences(sentences, nil, 0, '\n', 1)
--   local it = mx.rnn.BucketSentenceIter(coded, 32, {10, 20, 30}, 0)
--   for batch in it do ... batch.bucket_key ... end
--
-- Invariants (MXNet's):
-- * Buckets are sorted; by default every sentence length with at least batch_size
--   sentences. Each sentence goes to the smallest bucket >= its length and is padded
--   with invalid_label; longer ones are discarded (a warning is printed through M.log).
--   Empty buckets are dropped.
-- * Batches are (bucket, start) pairs with start stepping by batch_size inside a bucket;
--   incomplete tail batches are dropped. reset() shuffles the batch order and the
--   sentences inside every bucket (draws from mx.nd.random: mx.random.seed repeats it).
-- * label = data shifted left by one, the last position = invalid_label.
-- * layout 'NT' gives (batch, T) arrays, 'TN' (T, batch). Each bucket's data and label
--   arrays are built at reset(); an 'NT' batch is a view of them (no copy), a 'TN' batch
--   is written into per-bucket preallocated arrays.
local capi = require 'luamx.capi'
local nd = require 'luamx.ndarray'
local raise = capi.raise

local M = {}

--- Writes a log line to stderr (used for warnings such as discarded sentences; replaceable).
-- @param msg the message
function M.log(msg) io.stderr:write(msg, '\n') end

--- encode_sentences(sentences, vocab=nil, invalid_label=-1, invalid_key='\n',
--- start_label=0, unknown_token=nil) -> coded sentences, vocab (word -> id).
function M.encode_sentences(sentences, vocab, invalid_label, invalid_key, start_label, unknown_token)
  if type(sentences) ~= 'table' then
    raise('mx.rnn.encode_sentences: sentences must be an array of arrays of words, got ' .. type(sentences))
  end
  if invalid_label == nil then invalid_label = -1 end
  if invalid_key == nil then invalid_key = '\n' end
  local idx = start_label or 0
  local new_vocab = vocab == nil
  if new_vocab then vocab = {[invalid_key] = invalid_label} end
  local res = {}
  for i, sent in ipairs(sentences) do
    local coded = {}
    for j, word in ipairs(sent) do
      if vocab[word] == nil then
        if not new_vocab and not unknown_token then
          raise(('mx.rnn.encode_sentences: unknown token %q (sentence %d, word %d)'):format(tostring(word), i, j))
        end
        if idx == invalid_label then idx = idx + 1 end
        if unknown_token then word = unknown_token end
        vocab[word] = idx
        idx = idx + 1
      end
      coded[j] = vocab[word]
    end
    res[i] = coded
  end
  return res, vocab
end

local function make(io_mod)
  local BSI = io_mod.subclass('BucketSentenceIter')

  --- BucketSentenceIter(sentences, batch_size [, buckets [, invalid_label=-1
  --- [, data_name='data' [, label_name='softmax_label' [, dtype='float32' [, layout='NT']]]]]])
  --- or BucketSentenceIter{sentences=, batch_size=, buckets=, ..., num_parts=, part_index=}.
  --- num_parts / part_index: each bucket's sentences are split into num_parts equal parts
  --- (io.part_range), so every worker has the same batches per bucket and, with the same
  --- random seed, the same bucket order.
  local function new(cls, sentences, batch_size, buckets, invalid_label, data_name, label_name, dtype, layout)
    local num_parts, part_index
    if type(sentences) == 'table' and sentences.sentences then
      local o = sentences
      sentences, batch_size, buckets, invalid_label = o.sentences, o.batch_size, o.buckets, o.invalid_label
      data_name, label_name, dtype, layout = o.data_name, o.label_name, o.dtype, o.layout
      num_parts, part_index = o.num_parts, o.part_index
    end
    local who = 'mx.rnn.BucketSentenceIter'
    if type(sentences) ~= 'table' then raise(who .. ': sentences must be an array of arrays of ids') end
    io_mod.check_batch_size(who, batch_size)
    if invalid_label == nil then invalid_label = -1 end
    layout = layout or 'NT'
    if layout ~= 'NT' and layout ~= 'TN' then
      raise(('%s: invalid layout %s: must be NT (batch major) or TN (time major)'):format(who, tostring(layout)))
    end
    local bl = {}
    if buckets == nil or #buckets == 0 then
      local count = {}
      for _, s in ipairs(sentences) do count[#s] = (count[#s] or 0) + 1 end
      for len, c in pairs(count) do if c >= batch_size then bl[#bl + 1] = len end end
    else
      for i, b in ipairs(buckets) do bl[i] = b end
    end
    table.sort(bl)
    local data, ndiscard = {}, 0
    for i = 1, #bl do data[i] = {} end
    for _, s in ipairs(sentences) do
      local b = nil
      for i = 1, #bl do if bl[i] >= #s then b = i break end end
      if not b then ndiscard = ndiscard + 1
      else
        local row = {}
        for k = 1, bl[b] do row[k] = s[k] == nil and invalid_label or s[k] end
        data[b][#data[b] + 1] = row
      end
    end
    M.log(('WARNING: discarded %d sentences longer than the largest bucket.'):format(ndiscard))
    local kept_b, kept_d = {}, {}
    if num_parts ~= nil or part_index ~= nil then
      io_mod.part_range(who, math.huge, num_parts, part_index) -- argument checks
      num_parts, part_index = num_parts or 1, part_index or 0
      for i = 1, #bl do
        local m = math.floor(#data[i] / num_parts)
        local part = {}
        for k = 1, m do part[k] = data[i][part_index * m + k] end
        data[i] = part
      end
    end
    for i = 1, #bl do
      if #data[i] > 0 then kept_b[#kept_b + 1] = bl[i]; kept_d[#kept_d + 1] = data[i] end
    end
    if #kept_b == 0 then raise(who .. ': no sentence fits any bucket') end
    local self = setmetatable({batch_size = batch_size, buckets = kept_b, data = kept_d,
                               invalid_label = invalid_label, data_name = data_name or 'data',
                               label_name = label_name or 'softmax_label', dtype = dtype or 'float32',
                               layout = layout, major_axis = layout == 'NT' and 0 or 1}, cls)
    self.default_bucket_key = kept_b[#kept_b]
    local shape = layout == 'NT' and {batch_size, self.default_bucket_key} or {self.default_bucket_key, batch_size}
    self.provide_data = {io_mod.DataDesc(self.data_name, shape, self.dtype, layout)}
    self.provide_label = {io_mod.DataDesc(self.label_name, shape, self.dtype, layout)}
    self.idx = {}
    for i, b in ipairs(kept_d) do
      for j = 0, #b - batch_size, batch_size do self.idx[#self.idx + 1] = {i, j} end
    end
    if layout == 'TN' then
      self.tn_data, self.tn_label = {}, {}
      for i, b in ipairs(kept_b) do
        self.tn_data[i] = nd.empty({b, batch_size}, {dtype = self.dtype})
        self.tn_label[i] = nd.empty({b, batch_size}, {dtype = self.dtype})
      end
    end
    self:reset()
    return self
  end
  setmetatable(BSI, {__index = io_mod.DataIter, __call = new})

  local function shuffled(list)
    local perm, out = io_mod.permutation(#list), {}
    for i = 1, #list do out[i] = list[perm[i] + 1] end
    return out
  end

  function BSI:reset()
    self.curr_idx = 0
    self.idx = shuffled(self.idx)
    self.nddata, self.ndlabel = {}, {}
    for i, buck in ipairs(self.data) do
      buck = shuffled(buck)
      self.data[i] = buck
      local lab = {}
      for r, row in ipairs(buck) do
        local l = {}
        for k = 1, #row - 1 do l[k] = row[k + 1] end
        l[#row] = self.invalid_label
        lab[r] = l
      end
      self.nddata[i] = nd.array(buck, {dtype = self.dtype})
      self.ndlabel[i] = nd.array(lab, {dtype = self.dtype})
    end
  end

  local function transpose_into(dst, src)
    local s = src.shape
    local sp, dp = src:data(), dst:data()
    for r = 0, s[1] - 1 do
      for c = 0, s[2] - 1 do dp[c * s[1] + r] = sp[r * s[2] + c] end
    end
  end

  function BSI:next()
    if self.curr_idx == #self.idx then return nil end
    self.curr_idx = self.curr_idx + 1
    local i, j = self.idx[self.curr_idx][1], self.idx[self.curr_idx][2]
    local bs = self.batch_size
    local data = self.nddata[i]:slice(j + 1, j + bs)
    local label = self.ndlabel[i]:slice(j + 1, j + bs)
    if self.major_axis == 1 then
      transpose_into(self.tn_data[i], data)
      transpose_into(self.tn_label[i], label)
      data, label = self.tn_data[i], self.tn_label[i]
    end
    return io_mod.DataBatch{data = {data}, label = {label}, pad = 0, bucket_key = self.buckets[i],
      provide_data = {io_mod.DataDesc(self.data_name, data.shape, self.dtype, self.layout)},
      provide_label = {io_mod.DataDesc(self.label_name, label.shape, self.dtype, self.layout)}}
  end

  return BSI
end

M.make = make
return M
