--- luamx.io.wrappers — mx.io.ResizeIter and mx.io.PrefetchingIter over any luamx
-- iterator (MXNet's python/mxnet/io/io.py).
--
--   local it = mx.io.ResizeIter(train_iter, 100)           -- exactly 100 batches an epoch
--   local both = mx.io.PrefetchingIter({it_a, it_b}, {{data = 'data_a'}, {data = 'data_b'}})
--
-- Invariants:
-- * ResizeIter(iter, size, reset_internal = true) yields exactly `size` batches per
--   epoch: when the inner iterator ends early it is reset and continues; reset() rewinds
--   the count and (reset_internal) resets the inner iterator, as MXNet does.
-- * PrefetchingIter(iters, rename_data, rename_label) joins one batch of each iterator
--   into one DataBatch (their data and label lists concatenated in order; pad and index
--   of the first), renaming provide_data / provide_label with one name->name table per
--   iterator. The iterators must end together and agree on pad, else an error says
--   "Number of entry mismatches between iterators" (MXNet's text). The work ahead of
--   the consumer happens inside iterators that have worker threads (ImageRecordIter
--   decodes prefetch_buffer batches ahead); Lua-side iterators run when next() asks.
local capi = require 'luamx.capi'
local raise = capi.raise

local function make(io_mod)
  local DataBatch, DataDesc = io_mod.DataBatch, io_mod.DataDesc

  -- ---------------------------------------------------------------- ResizeIter ----
  local ResizeIter = io_mod.subclass('ResizeIter')

  --- mx.io.ResizeIter(data_iter, size [, reset_internal = true]): an epoch of exactly
  --- `size` batches of data_iter (wrapping around it, or stopping early).
  -- @function ResizeIter
  setmetatable(ResizeIter, {__index = io_mod.DataIter, __call = function(cls, data_iter, size, reset_internal)
    if type(data_iter) ~= 'table' or type(data_iter.next) ~= 'function' then
      raise('mx.io.ResizeIter: data_iter must be a data iterator, got ' .. type(data_iter))
    end
    if type(size) ~= 'number' or size < 0 or size % 1 ~= 0 then
      raise('mx.io.ResizeIter: size must be a non-negative integer, got ' .. tostring(size))
    end
    return setmetatable({data_iter = data_iter, size = size, cur = 0,
                         reset_internal = reset_internal ~= false,
                         batch_size = data_iter.batch_size, provide_data = data_iter.provide_data,
                         provide_label = data_iter.provide_label,
                         default_bucket_key = data_iter.default_bucket_key}, cls)
  end})

  --- Rewinds the batch count (and the inner iterator when reset_internal is set).
  function ResizeIter:reset()
    self.cur = 0
    if self.reset_internal then self.data_iter:reset() end
  end

  --- The next batch, or nil after `size` batches.
  -- @return DataBatch or nil
  function ResizeIter:next()
    if self.cur == self.size then return nil end
    local batch = self.data_iter:next()
    if batch == nil then
      self.data_iter:reset()
      batch = self.data_iter:next()
      if batch == nil then raise('mx.io.ResizeIter: the inner iterator yields no batch after reset') end
    end
    self.cur = self.cur + 1
    self.current_batch = batch
    return batch
  end

  -- ---------------------------------------------------------------- PrefetchingIter
  local PrefetchingIter = io_mod.subclass('PrefetchingIter')

  local function renamed(descs, map, which, i)
    if map == nil then return descs end
    local out = {}
    for k, d in ipairs(descs) do
      local name = map[d.name]
      if name == nil then
        raise(('mx.io.PrefetchingIter: %s[%d] has no new name for %q'):format(which, i, d.name))
      end
      out[k] = DataDesc(name, d.shape, d.dtype, d.layout)
    end
    return out
  end

  --- mx.io.PrefetchingIter(iters [, rename_data [, rename_label]]): one iterator or an
  --- array of them, joined batch by batch; rename_* is an array of name->name tables,
  --- one per iterator.
  -- @function PrefetchingIter
  setmetatable(PrefetchingIter, {__index = io_mod.DataIter, __call = function(cls, iters, rename_data, rename_label)
    if type(iters) == 'table' and type(iters.next) == 'function' then iters = {iters} end
    if type(iters) ~= 'table' or #iters == 0 then
      raise('mx.io.PrefetchingIter: iters must be a data iterator or an array of them')
    end
    for i, it in ipairs(iters) do
      if type(it) ~= 'table' or type(it.next) ~= 'function' then
        raise(('mx.io.PrefetchingIter: iters[%d] is not a data iterator (%s)'):format(i, type(it)))
      end
    end
    for _, r in ipairs({{rename_data, 'rename_data'}, {rename_label, 'rename_label'}}) do
      if r[1] ~= nil and (type(r[1]) ~= 'table' or #r[1] ~= #iters) then
        raise(('mx.io.PrefetchingIter: %s must be an array of %d name tables (one per iterator)')
          :format(r[2], #iters))
      end
    end
    local self = setmetatable({iters = iters, n_iter = #iters, rename_data = rename_data,
                               rename_label = rename_label}, cls)
    local pd, pl = {}, {}
    for i, it in ipairs(iters) do
      for _, d in ipairs(renamed(it.provide_data or {}, rename_data and rename_data[i], 'rename_data', i)) do pd[#pd + 1] = d end
      for _, d in ipairs(renamed(it.provide_label or {}, rename_label and rename_label[i], 'rename_label', i)) do pl[#pl + 1] = d end
    end
    self.provide_data, self.provide_label = pd, pl
    self.batch_size = pd[1] and pd[1].shape[1] or iters[1].batch_size
    return self
  end})

  --- Resets every iterator.
  function PrefetchingIter:reset()
    for _, it in ipairs(self.iters) do it:reset() end
  end

  --- One batch of each iterator, joined.
  -- @return DataBatch or nil when the iterators end
  function PrefetchingIter:next()
    local batches, ended = {}, 0
    for i, it in ipairs(self.iters) do
      batches[i] = it:next()
      if batches[i] == nil then ended = ended + 1 end
    end
    if ended == self.n_iter then return nil end
    if ended > 0 then raise('mx.io.PrefetchingIter: Number of entry mismatches between iterators') end
    local data, label = {}, {}
    for _, b in ipairs(batches) do
      if b.pad ~= batches[1].pad then
        raise('mx.io.PrefetchingIter: Number of entry mismatches between iterators')
      end
      for _, a in ipairs(b.data or {}) do data[#data + 1] = a end
      for _, a in ipairs(b.label or {}) do label[#label + 1] = a end
    end
    self.current_batch = DataBatch{data = data, label = label, pad = batches[1].pad,
                                   index = batches[1].index, provide_data = self.provide_data,
                                   provide_label = self.provide_label}
    return self.current_batch
  end

  return ResizeIter, PrefetchingIter
end

return {make = make}
