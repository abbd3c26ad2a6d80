--- luamx.io.mnist — mx.io.MNISTIter over IDX files (MXNet's src/io/iter_mnist.cc).
--
--   local it = mx.io.MNISTIter{image = 'train-images-idx3-ubyte',
--                              label = 'train-labels-idx1-ubyte', batch_size = 100}
--
-- Files are untrusted: the big-endian headers (magic 0x00000803 for images, 0x00000801
-- for labels), the dimensions and the file sizes are checked, and every error names the
-- file and the problem (the header is checked in C, lmx_idx_parse, where the fuzz target
-- tests/fuzz/fuzz_idx.c runs it). Pixels are scaled to [0, 1] by a float32 multiply with 1/255,
-- as MXNet does. As in MXNet: shuffle (default true) permutes the samples once, when the
-- iterator is made; an incomplete last batch is dropped, so every batch has pad = 0.
-- Data is (batch, 1, rows, cols), or (batch, rows*cols) with flat = true; label is
-- (batch,), float32. The raw bytes stay in a Lua string; batches are written into two
-- preallocated arrays.
local ffi = require 'ffi'
local capi = require 'luamx.capi'
local nd = require 'luamx.ndarray'
local raise = capi.raise
local C = capi.C

local SCALE = tonumber(ffi.new('float', 1 / 255))

--- Reads an IDX file of unsigned bytes with `want_ndim` dimensions: bytes, dims, offset.
local function read_idx(path, want_ndim, what)
  if type(path) ~= 'string' then
    raise(('mx.io.MNISTIter: %s must be a file path, got %s'):format(what, type(path)))
  end
  local f, err = io.open(path, 'rb')
  if not f then raise(('mx.io.MNISTIter: cannot open %s file %s: %s'):format(what, path, err)) end
  local s = f:read('*a')
  f:close()
  local cdims, coff = ffi.new('int64_t[?]', want_ndim), ffi.new('int64_t[1]')
  capi.check(C.lmx_idx_parse(s, #s, want_ndim, ('%s file %s'):format(what, path), cdims, coff),
             nil, 'mx.io.MNISTIter')
  local dims = {}
  for i = 1, want_ndim do dims[i] = tonumber(cdims[i - 1]) end
  local off = tonumber(coff[0])
  return s, dims, off
end

local function make(io_mod)
  local MNISTIter = io_mod.subclass('MNISTIter')

  setmetatable(MNISTIter, {__index = io_mod.DataIter, __call = function(cls, o)
    if type(o) ~= 'table' then raise('mx.io.MNISTIter: expected a table of options, got ' .. type(o)) end
    local bs = o.batch_size or 128
    io_mod.check_batch_size('mx.io.MNISTIter', bs)
    local img, idims, ioff = read_idx(o.image, 3, 'image')
    local lab, ldims, loff = read_idx(o.label, 1, 'label')
    if idims[1] ~= ldims[1] then
      raise(('mx.io.MNISTIter: image file %s has %d images but label file %s has %d labels')
        :format(o.image, idims[1], o.label, ldims[1]))
    end
    local n, rows, cols = idims[1], idims[2], idims[3]
    if rows * cols > 2 ^ 31 then -- the file can hold such dims when it has no images
      raise(('mx.io.MNISTIter: image file %s: images of %dx%d pixels are too large (at most 2^31)')
        :format(o.image, rows, cols))
    end
    local self = setmetatable({batch_size = bs, num_data = n, loc = 0, _img = img, _ioff = ioff,
                               _lab = lab, _loff = loff, _pix = rows * cols}, cls)
    local dshape = o.flat and {bs, rows * cols} or {bs, 1, rows, cols}
    self.data_buf = nd.empty(dshape)
    self.label_buf = nd.empty({bs})
    self.provide_data = {io_mod.DataDesc(o.data_name or 'data', dshape)}
    self.provide_label = {io_mod.DataDesc(o.label_name or 'softmax_label', {bs})}
    self.order = {}
    for i = 1, n do self.order[i] = i - 1 end
    if o.shuffle == nil or o.shuffle then self.order = io_mod.permutation(n) end
    -- num_parts / part_index: this worker's part of the (same-seed) order
    local first, count = io_mod.part_range('mx.io.MNISTIter', n, o.num_parts, o.part_index)
    if count ~= n then
      local part = {}
      for i = 1, count do part[i] = self.order[first + i] end
      self.order, self.num_data = part, count
    end
    return self
  end})

  function MNISTIter:reset() self.loc = 0 end

  function MNISTIter:next()
    local bs, loc = self.batch_size, self.loc
    if loc + bs > self.num_data then return nil end
    local ip = ffi.cast('const uint8_t *', self._img) + self._ioff
    local lp = ffi.cast('const uint8_t *', self._lab) + self._loff
    local d, l = self.data_buf:data(), self.label_buf:data()
    local pix = self._pix
    for k = 0, bs - 1 do
      local r = self.order[loc + k + 1]
      local src, dst = ip + r * pix, d + k * pix
      for j = 0, pix - 1 do dst[j] = src[j] * SCALE end
      l[k] = lp[r]
    end
    self.loc = loc + bs
    return io_mod.DataBatch{data = {self.data_buf}, label = {self.label_buf}, pad = 0,
                            provide_data = self.provide_data, provide_label = self.provide_label}
  end

  return MNISTIter
end

return {make = make, read_idx = read_idx}
