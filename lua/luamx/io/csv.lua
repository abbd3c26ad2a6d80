--- luamx.io.csv — mx.io.CSVIter (MXNet's src/io/iter_csv.cc with its BatchLoader).
--
--   local it = mx.io.CSVIter{data_csv = 'x.csv', data_shape = {3}, label_csv = 'y.csv',
--                            batch_size = 2, round_batch = true}
--
-- Each line of data_csv holds prod(data_shape) comma-separated numbers; label_csv
-- (optional; labels are 0 without it) holds prod(label_shape) per line (label_shape
-- defaults to {1}, which gives labels of shape (batch,), as MXNet). Errors name the file,
-- the line and the problem. Batches follow MXNet's BatchLoader: with round_batch (the
-- default) an incomplete last batch is completed from the start of the file, pad counts
-- the wrapped samples, and the next epoch continues after them (reset() does not
-- rewind then); without round_batch the last batch is partial, its missing rows are
-- zero and pad counts them. Values are parsed once (in C) and kept in a float64 NDArray.
local ffi = require 'ffi'
local capi = require 'luamx.capi'
local nd = require 'luamx.ndarray'
local raise = capi.raise
local C = capi.C

local function prod(t)
  local p = 1
  for _, v in ipairs(t) do p = p * v end
  return p
end

local function check_shape(shape, what)
  if type(shape) ~= 'table' or #shape == 0 then
    raise(('mx.io.CSVIter: %s must be an array of positive integers, got %s'):format(what, type(shape)))
  end
  for i, v in ipairs(shape) do
    if type(v) ~= 'number' or v < 1 or v % 1 ~= 0 then
      raise(('mx.io.CSVIter: %s[%d] must be a positive integer, got %s'):format(what, i, tostring(v)))
    end
  end
end

--- Parses a CSV file of numbers, `width` per line (in C: lmx_csv_parse, which the fuzz
-- target tests/fuzz/fuzz_csv.c runs): returns the (rows, width) float64 NDArray, a
-- pointer to its values and the row count.
local function read_csv(path, width, what)
  if type(path) ~= 'string' then
    raise(('mx.io.CSVIter: %s must be a file path, got %s'):format(what, type(path)))
  end
  local f, err = io.open(path, 'rb')
  if not f then raise(('mx.io.CSVIter: cannot open %s %s: %s'):format(what, path, err)) end
  local s = f:read('*a')
  f:close()
  local out = ffi.new('lmx_ndarray *[1]')
  capi.check(C.lmx_csv_parse(s, #s, width, ('%s %s'):format(what, path), out), nil, 'mx.io.CSVIter')
  local arr = nd.wrap(out[0])
  return arr, ffi.cast('double *', arr:data()), arr.shape[1]
end

local function make(io_mod)
  local CSVIter = io_mod.subclass('CSVIter')

  setmetatable(CSVIter, {__index = io_mod.DataIter, __call = function(cls, o)
    if type(o) ~= 'table' then raise('mx.io.CSVIter: expected a table of options, got ' .. type(o)) end
    local bs = o.batch_size
    io_mod.check_batch_size('mx.io.CSVIter', bs)
    check_shape(o.data_shape, 'data_shape')
    local lshape = o.label_shape or {1}
    check_shape(lshape, 'label_shape')
    local dw, lw = prod(o.data_shape), prod(lshape)
    local darr, dbuf, n = read_csv(o.data_csv, dw, 'data_csv')
    if n == 0 then raise(('mx.io.CSVIter: data_csv %s has no rows'):format(o.data_csv)) end
    local larr, lbuf
    if o.label_csv ~= nil and o.label_csv ~= 'NULL' then
      local ln
      larr, lbuf, ln = read_csv(o.label_csv, lw, 'label_csv')
      if ln ~= n then
        raise(('mx.io.CSVIter: data_csv %s has %d rows but label_csv %s has %d'):format(o.data_csv, n, o.label_csv, ln))
      end
    end
    local dshape = {bs}
    for _, v in ipairs(o.data_shape) do dshape[#dshape + 1] = v end
    local lbshape = {bs}
    if not (#lshape == 1 and lshape[1] == 1) then
      for _, v in ipairs(lshape) do lbshape[#lbshape + 1] = v end
    end
    local dtype = o.dtype or 'float32'
    local first -- num_parts / part_index: rows [first, first + n) of the file
    first, n = io_mod.part_range('mx.io.CSVIter', n, o.num_parts, o.part_index)
    local self = setmetatable({batch_size = bs, num_data = n, pos = 0, overflow = 0, _first = first,
                               round_batch = o.round_batch == nil or o.round_batch,
                               _d = dbuf, _l = lbuf, _darr = darr, _larr = larr,
                               _dw = dw, _lw = lw}, cls)
    self.data_buf = nd.empty(dshape, {dtype = dtype})
    self.label_buf = nd.zeros(lbshape, {dtype = dtype})
    self.provide_data = {io_mod.DataDesc(o.data_name or 'data', dshape, dtype)}
    self.provide_label = {io_mod.DataDesc(o.label_name or 'softmax_label', lbshape, dtype)}
    return self
  end})

  function CSVIter:reset()
    if self.round_batch and self.overflow > 0 then
      self.pos = self.overflow
    else
      self.pos = 0
    end
    self.overflow = 0
  end

  function CSVIter:next()
    if self.overflow > 0 or self.pos >= self.num_data then return nil end
    local bs, n = self.batch_size, self.num_data
    local take = math.min(bs, n - self.pos)
    local rows = {}
    for k = 1, take do rows[k] = self.pos + k - 1 end
    self.pos = self.pos + take
    local pad = 0
    if take < bs then
      pad = bs - take
      if self.round_batch then
        for k = 1, pad do rows[take + k] = (k - 1) % n end
        self.overflow = pad
      end
    end
    -- The batch is staged as float64 and converted by the engine (lmx_ndarray_set_f64):
    -- storing through the array's own pointer would write float16/bfloat16 bit patterns
    -- as integers.
    local dw, lw = self._dw, self._lw
    local d = self._dstage or ffi.new('double[?]', bs * dw)
    local l = self._lstage or ffi.new('double[?]', bs * lw)
    self._dstage, self._lstage = d, l
    for k = 0, bs - 1 do
      local r = rows[k + 1]
      r = r and r + self._first
      for j = 0, dw - 1 do d[k * dw + j] = r and self._d[r * dw + j] or 0 end
      if self._l then
        for j = 0, lw - 1 do l[k * lw + j] = r and self._l[r * lw + j] or 0 end
      end
    end
    capi.check(capi.C.lmx_ndarray_set_f64(nd.handle(self.data_buf), d, bs * dw))
    if self._l then capi.check(capi.C.lmx_ndarray_set_f64(nd.handle(self.label_buf), l, bs * lw)) end
    return io_mod.DataBatch{data = {self.data_buf}, label = {self.label_buf}, pad = pad,
                            provide_data = self.provide_data, provide_label = self.provide_label}
  end

  return CSVIter
end

return {make = make, read_csv = read_csv}
