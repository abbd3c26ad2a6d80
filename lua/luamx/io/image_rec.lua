--- luamx.io.image_rec — mx.io.ImageRecordIter over MXNet .rec files (MXNet's
-- src/io/iter_image_recordio_2.cc with its default augmenter).
--
--   local it = mx.io.ImageRecordIter{path_imgrec = 'train.rec', data_shape = {3, 224, 224},
--     batch_size = 32, resize = 256, rand_crop = true, rand_mirror = true, shuffle = true,
--     mean_r = 123.68, mean_g = 116.28, mean_b = 103.53, preprocess_threads = 4}
--
-- Invariants:
-- * Decoding and augmentation run in C worker threads (src/io/image_iter.c) that stay
--   prefetch_buffer batches ahead; next() only copies a finished batch into the
--   iterator's two arrays (data (batch, c, h, w), label (batch,) or (batch, label_width),
--   float32, CPU), so a DataBatch is valid until the next call of next().
-- * Per record: decode (gray for 1 channel, else RGB), shorter edge to `resize` when set,
--   a data_shape crop (random with rand_crop, else centred), a left-right mirror
--   (mirror, or rand_mirror with probability 1/2), then (pixel - mean) * scale / std per
--   channel, as MXNet does.
-- * The shuffle and every random choice depend on seed, the epoch number and the
--   sample's position only: the same seed gives the same batches with any number of
--   threads. The random stream is luamx's own, so the crops differ from MXNet's.
-- * num_parts / part_index split the records into contiguous parts that cover the file
--   exactly once (part p: records [p*n/num_parts, (p+1)*n/num_parts)).
-- * The last batch: round_batch = true (default) fills it from the start of the epoch
--   and reports pad; round_batch = false pads it with zero rows (pad reports them);
--   last_batch_handle = 'discard' drops it. Unlike MXNet, the next epoch always starts
--   from its first record.
local ffi = require 'ffi'
local capi = require 'luamx.capi'
local nd = require 'luamx.ndarray'
local C, check, raise = capi.C, capi.check, capi.raise

local KNOWN = {path_imgrec = 1, path_imgidx = 1, data_shape = 1, batch_size = 1, label_width = 1,
  shuffle = 1, seed = 1, resize = 1, rand_crop = 1, rand_mirror = 1, mirror = 1, mean_r = 1,
  mean_g = 1, mean_b = 1, std_r = 1, std_g = 1, std_b = 1, scale = 1, num_parts = 1,
  part_index = 1, preprocess_threads = 1, prefetch_buffer = 1, round_batch = 1,
  last_batch_handle = 1, data_name = 1, label_name = 1}

local function make(io_mod)
  local ImageRecordIter = io_mod.subclass('ImageRecordIter')
  local W = 'mx.io.ImageRecordIter'

  local function num(o, k, dflt)
    local v = o[k]
    if v == nil then return dflt end
    if type(v) ~= 'number' then raise(('%s: %s must be a number, got %s'):format(W, k, type(v))) end
    return v
  end
  local function int(o, k, dflt)
    local v = num(o, k, dflt)
    if v % 1 ~= 0 then raise(('%s: %s must be an integer, got %s'):format(W, k, tostring(v))) end
    return v
  end
  local function flag(o, k)
    local v = o[k]
    if v == nil then return 0 end
    if type(v) == 'number' then return v ~= 0 and 1 or 0 end
    if type(v) ~= 'boolean' then raise(('%s: %s must be a boolean, got %s'):format(W, k, type(v))) end
    return v and 1 or 0
  end

  local function config(o)
    for k in pairs(o) do
      if not KNOWN[k] then
        raise(('%s: unknown parameter %s (luamx supports MXNet\'s common ones; see the LDoc of ImageRecordIter)')
          :format(W, tostring(k)))
      end
    end
    if type(o.path_imgrec) ~= 'string' then
      raise(('%s: path_imgrec must be the path of a .rec file, got %s'):format(W, type(o.path_imgrec)))
    end
    if o.path_imgidx ~= nil and type(o.path_imgidx) ~= 'string' then
      raise(('%s: path_imgidx must be a path, got %s'):format(W, type(o.path_imgidx)))
    end
    local ds = o.data_shape
    if type(ds) ~= 'table' or #ds ~= 3 then
      raise(('%s: data_shape must be {channels, height, width}, got %s'):format(W,
        type(ds) == 'table' and ('%d entries'):format(#ds) or type(ds)))
    end
    local c = ffi.new('lmx_imagerec_config')
    c.path_imgrec, c.path_imgidx = o.path_imgrec, o.path_imgidx
    c.channels, c.height, c.width = ds[1], ds[2], ds[3]
    if o.batch_size == nil then raise(W .. ': batch_size is required') end
    c.batch_size = int(o, 'batch_size')
    c.label_width = int(o, 'label_width', 1)
    c.shuffle, c.rand_crop, c.rand_mirror, c.mirror = flag(o, 'shuffle'), flag(o, 'rand_crop'),
      flag(o, 'rand_mirror'), flag(o, 'mirror')
    c.seed = int(o, 'seed', 0)
    local resize = int(o, 'resize', -1)
    c.resize = resize == -1 and 0 or resize
    if resize == 0 or resize < -1 then raise(W .. ': resize must be > 0, or -1 for none, got ' .. resize) end
    c.mean[0], c.mean[1], c.mean[2] = num(o, 'mean_r', 0), num(o, 'mean_g', 0), num(o, 'mean_b', 0)
    c.std[0], c.std[1], c.std[2] = num(o, 'std_r', 1), num(o, 'std_g', 1), num(o, 'std_b', 1)
    c.scale = num(o, 'scale', 1)
    c.num_parts, c.part_index = int(o, 'num_parts', 1), int(o, 'part_index', 0)
    c.preprocess_threads = int(o, 'preprocess_threads', 4)
    c.prefetch_buffer = int(o, 'prefetch_buffer', 4)
    local lbh = o.last_batch_handle
    if lbh ~= nil and lbh ~= 'pad' and lbh ~= 'discard' then
      raise(("%s: last_batch_handle must be 'pad' or 'discard', got %s"):format(W, tostring(lbh)))
    end
    local round = o.round_batch == nil or o.round_batch == true or o.round_batch == 1
    c.last_batch = lbh == 'discard' and C.LMX_LAST_BATCH_DISCARD
      or (round and C.LMX_LAST_BATCH_ROUND or C.LMX_LAST_BATCH_PAD)
    return c
  end

  --- mx.io.ImageRecordIter{path_imgrec=, data_shape={c, h, w}, batch_size=, ...}: batches
  --- of images from a .rec file (MXNet's parameters: path_imgidx, label_width, shuffle,
  --- seed, resize, rand_crop, rand_mirror, mirror, mean_r/g/b, std_r/g/b, scale,
  --- num_parts, part_index, preprocess_threads, prefetch_buffer, round_batch,
  --- last_batch_handle ('pad' or 'discard'), data_name, label_name).
  -- @function ImageRecordIter
  setmetatable(ImageRecordIter, {__index = io_mod.DataIter, __call = function(cls, o)
    if type(o) ~= 'table' then raise(W .. ': expected a table of options, got ' .. type(o)) end
    local c = config(o)
    local p = ffi.new('lmx_imagerec_iter *[1]')
    check(C.lmx_imagerec_iter_new(c, p))
    local self = setmetatable({batch_size = c.batch_size, label_width = c.label_width}, cls)
    self._h = ffi.gc(p[0], C.lmx_imagerec_iter_free)
    local n, nb = ffi.new('int64_t[1]'), ffi.new('int64_t[1]')
    check(C.lmx_imagerec_iter_size(self._h, n, nb))
    self.num_data, self.num_batches = tonumber(n[0]), tonumber(nb[0])
    local ds = o.data_shape
    local dshape = {c.batch_size, ds[1], ds[2], ds[3]}
    local lshape = c.label_width == 1 and {c.batch_size} or {c.batch_size, c.label_width}
    self.data_buf = nd.empty(dshape)
    self.label_buf = nd.empty(lshape)
    self.provide_data = {io_mod.DataDesc(o.data_name or 'data', dshape)}
    self.provide_label = {io_mod.DataDesc(o.label_name or 'softmax_label', lshape)}
    self._pad, self._got = ffi.new('int[1]'), ffi.new('int[1]')
    return self
  end})

  --- Starts the next epoch (reshuffled with shuffle = true).
  function ImageRecordIter:reset()
    check(C.lmx_imagerec_iter_reset(self._h))
  end

  --- The next batch (decoded ahead by the worker threads).
  -- @return a DataBatch (`data`, `label`, `pad`), or nil at the end of the epoch
  function ImageRecordIter:next()
    local d, l = self.data_buf, self.label_buf
    d:wait_to_read()
    l:wait_to_read()
    check(C.lmx_imagerec_iter_next(self._h, d:data(), l:data(), self._pad, self._got))
    if self._got[0] == 0 then return nil end
    return io_mod.DataBatch{data = {d}, label = {l}, pad = self._pad[0],
                            provide_data = self.provide_data, provide_label = self.provide_label}
  end

  return ImageRecordIter
end

return {make = make}
