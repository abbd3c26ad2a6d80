--- luamx.io — mx.io: data descriptions, batches and data iterators (MXNet's python/mxnet/io).
--
--   local it = mx.io.NDArrayIter{data = x, label = y, batch_size = 32, shuffle = true}
--   for batch in it do ... batch.data[1], batch.label[1], batch.pad ... end
--   it:reset()
--
-- Invariants:
-- * An iterator owns one set of batch arrays, allocated once (shape {batch_size, ...},
--   the source's dtype and context); every batch is written into them. A DataBatch is
--   therefore valid until the next call of next(): copy what must outlive it.
-- * next() returns a DataBatch, or nil at the end of the epoch; reset() starts the next
--   epoch. Iterators are callable, so `for batch in it do` works; it:iter() gives a plain
--   iterator function as well.
-- * Shuffling draws permutations from mx.nd.random, so mx.random.seed(n) repeats them.
-- * NDArrayIter follows MXNet 1.9 exactly: 'pad' fills the last batch from the start
--   (pad = number of wrapped samples), 'discard' drops it, 'roll_over' keeps it for the
--   first batch of the next epoch (that batch reports pad = number of rolled-over samples,
--   as MXNet does).
local ffi = require 'ffi'
local capi = require 'luamx.capi'
local nd = require 'luamx.ndarray'
local raise = capi.raise

local M = {}

-- ------------------------------------------------------------------ helpers --------
local ELEM_SIZE = {float32 = 4, float64 = 8, float16 = 2, bfloat16 = 2, uint8 = 1, int8 = 1, int32 = 4, int64 = 8}

local function shape_str(shape)
  return '(' .. table.concat(shape, ', ') .. ')'
end
M.shape_str = shape_str

local function prod(t, from)
  local p = 1
  for i = from or 1, #t do p = p * t[i] end
  return p
end

local function check_batch_size(fn, bs)
  if type(bs) ~= 'number' or bs < 1 or bs % 1 ~= 0 then
    raise(('%s: batch_size must be a positive integer, got %s'):format(fn, tostring(bs)))
  end
end
M.check_batch_size = check_batch_size

--- Distributed reading (MXNet's num_parts / part_index): part p of num_parts gets the
--- rows [p*m, (p+1)*m) with m = floor(n / num_parts), so every worker has the same number
--- of rows (and of batches); the n - num_parts*m rows left over are not read.
--- Returns the first row (0-based) and the count; (0, n) without num_parts.
function M.part_range(who, n, num_parts, part_index)
  if num_parts == nil and part_index == nil then return 0, n end
  num_parts, part_index = num_parts or 1, part_index or 0
  if type(num_parts) ~= 'number' or num_parts < 1 or num_parts % 1 ~= 0 then
    raise(('%s: num_parts must be a positive integer, got %s'):format(who, tostring(num_parts)))
  end
  if type(part_index) ~= 'number' or part_index < 0 or part_index >= num_parts or part_index % 1 ~= 0 then
    raise(('%s: part_index must be an integer in [0, %d), got %s'):format(who, num_parts, tostring(part_index)))
  end
  local m = math.floor(n / num_parts)
  if m == 0 then
    raise(('%s: %d rows cannot be split into %d parts'):format(who, n, num_parts))
  end
  return part_index * m, m
end

--- A random permutation of 0..n-1 (a Lua array) drawn from mx.nd.random.
function M.permutation(n)
  local perm = {}
  if n == 0 then return perm end
  local keys = nd.random.uniform(0, 1, {n}, {dtype = 'float64'}):toflat()
  for i = 1, n do perm[i] = i - 1 end
  table.sort(perm, function(a, b)
    local ka, kb = keys[a + 1], keys[b + 1]
    if ka ~= kb then return ka < kb end
    return a < b
  end)
  return perm
end

local function is_cpu(a) return a.context.device_type == 'cpu' end

--- Copies rows `rows` (0-based row numbers of src) into dst rows 0..#rows-1.
-- CPU arrays of one dtype are copied with memcpy; others go through views.
local function gather_rows(dst, src, rows)
  local sshape = src.shape
  local row_elems = prod(sshape, 2)
  local esize = ELEM_SIZE[src.dtype]
  if esize and src.dtype == dst.dtype and is_cpu(src) and is_cpu(dst) then
    src:wait_to_read()
    local sp = ffi.cast('uint8_t *', src:data())
    local dp = ffi.cast('uint8_t *', dst:data())
    local rb = row_elems * esize
    for k = 1, #rows do ffi.copy(dp + (k - 1) * rb, sp + rows[k] * rb, rb) end
  else
    for k = 1, #rows do dst:slice(k, k):set(src:slice(rows[k] + 1, rows[k] + 1)) end
  end
end
M.gather_rows = gather_rows

-- ------------------------------------------------------------------ DataDesc -------
local DataDesc = {}
DataDesc.__index = DataDesc
M.DataDesc = DataDesc

--- mx.io.DataDesc{name=, shape=, dtype='float32', layout='NCHW'} or
--- mx.io.DataDesc(name, shape [, dtype [, layout]]). desc[1], desc[2] are name and shape
--- (MXNet's namedtuple unpacking).
local function new_desc(_, name, shape, dtype, layout)
  if type(name) == 'table' then
    local o = name
    name, shape, dtype, layout = o.name, o.shape, o.dtype, o.layout
  end
  if type(name) ~= 'string' then
    raise('mx.io.DataDesc: name must be a string, got ' .. type(name))
  end
  if type(shape) ~= 'table' then
    raise(('mx.io.DataDesc: shape of %q must be an array of integers, got %s'):format(name, type(shape)))
  end
  local s = {}
  for i, v in ipairs(shape) do s[i] = v end
  return setmetatable({name = name, shape = s, dtype = dtype or 'float32', layout = layout or 'NCHW',
                       [1] = name, [2] = s}, DataDesc)
end
setmetatable(DataDesc, {__call = new_desc})

--- The batch axis (0-based, as MXNet) of a layout string: the position of 'N', 0 when
--- layout is nil, -1 when it has no 'N'.
function DataDesc.get_batch_axis(layout)
  if layout == nil then return 0 end
  local p = layout:find('N', 1, true)
  return p and p - 1 or -1
end

--- DataDesc list from {name = shape} (sorted by name) or an array of {name, shape}.
function DataDesc.get_list(shapes, types)
  local out = {}
  local list = {}
  if #shapes > 0 then list = shapes
  else
    for k, v in pairs(shapes) do list[#list + 1] = {k, v} end
    table.sort(list, function(a, b) return a[1] < b[1] end)
  end
  for i, p in ipairs(list) do
    out[i] = new_desc(nil, p[1], p[2], types and types[p[1]] or nil)
  end
  return out
end

function DataDesc.__tostring(d)
  return ('DataDesc[%s,%s,%s,%s]'):format(d.name, shape_str(d.shape), d.dtype, d.layout)
end

-- ------------------------------------------------------------------ DataBatch ------
local DataBatch = {}
DataBatch.__index = DataBatch
M.DataBatch = DataBatch

-- DataBatch(data, label, pad, index, bucket_key, provide_data, provide_label) as MXNet,
-- or one table of those fields.
local BATCH_ARGS = {'data', 'label', 'pad', 'index', 'bucket_key', 'provide_data', 'provide_label'}
setmetatable(DataBatch, {__call = function(_, ...)
  local first = ...
  if select('#', ...) == 1 and type(first) ~= 'table' then
    raise('mx.io.DataBatch: expected a table of fields or the data list, got ' .. type(first))
  end
  local o = require('luamx.kwargs').parse('mx.io.DataBatch', BATCH_ARGS, ...)
  if o.data == nil then raise('mx.io.DataBatch: data is required') end
  local chk = require 'luamx.check'
  for _, f in ipairs {'data', 'label'} do
    local list = o[f]
    if list ~= nil then
      if type(list) ~= 'table' or getmetatable(list) ~= nil then chk.fail('mx.io.DataBatch', f, 'a list of NDArrays', list) end
      for i, a in ipairs(list) do chk.ndarray('mx.io.DataBatch', ('%s[%d]'):format(f, i), a) end
    end
  end
  chk.number('mx.io.DataBatch', 'pad', o.pad, {optional = true, integer = true, min = 0})
  local b = {data = o.data, label = o.label, pad = o.pad or 0, index = o.index,
             bucket_key = o.bucket_key, provide_data = o.provide_data,
             provide_label = o.provide_label}
  return setmetatable(b, DataBatch)
end})

function DataBatch.__tostring(b)
  local function shapes(list)
    local t = {}
    for i, a in ipairs(list or {}) do t[i] = shape_str(a.shape) end
    return '[' .. table.concat(t, ', ') .. ']'
  end
  return ('DataBatch: data shapes: %s label shapes: %s'):format(shapes(b.data), shapes(b.label))
end

-- ------------------------------------------------------------------ DataIter -------
--- Base class: subclasses define next() and reset(); the rest follows.
local DataIter = {}
DataIter.__index = DataIter
M.DataIter = DataIter

--- An iterator function over the remaining batches, for a generic `for` loop.
-- @return function returning the next DataBatch, or nil at the end
-- @usage for batch in it:iter() do ... end
function DataIter:iter()
  return function() return self:next() end
end
DataIter.__call = function(self) return self:next() end

--- Makes a subclass table whose instances get DataIter's methods and metamethods.
function M.subclass(name)
  local cls = setmetatable({}, {__index = DataIter})
  cls.__index = cls
  cls.__call = DataIter.__call
  cls.__tostring = function(it) return ('%s(batch_size=%d)'):format(name, it.batch_size) end
  return cls
end

-- ------------------------------------------------------------------ NDArrayIter ----
local NDArrayIter = M.subclass('NDArrayIter')
M.NDArrayIter = NDArrayIter

local function as_array(v, what)
  if nd.is_ndarray(v) then return v end
  if type(v) == 'table' and type(v[1]) == 'number' or type(v) == 'table' and type(v[1]) == 'table' then
    return nd.array(v)
  end
  raise(('mx.io.NDArrayIter: %s must be an NDArray, got %s'):format(what, type(v)))
end

--- MXNet's _init_data: a list of {name, array}.
local function init_sources(v, allow_empty, default_name, what)
  if v == nil then
    if allow_empty then return {} end
    raise(('mx.io.NDArrayIter: %s is required'):format(what))
  end
  if nd.is_ndarray(v) then return {{default_name, v}} end
  if type(v) ~= 'table' then
    raise(('mx.io.NDArrayIter: %s must be an NDArray, a Lua array of NDArrays or a ' ..
           'name->NDArray table, got %s'):format(what, type(v)))
  end
  local out = {}
  if #v > 0 and (nd.is_ndarray(v[1]) or #v > 1 and nd.is_ndarray(v[2])) then
    if #v == 1 then return {{default_name, as_array(v[1], what .. '[1]')}} end
    for i, a in ipairs(v) do
      out[i] = {('_%d_%s'):format(i - 1, default_name), as_array(a, ('%s[%d]'):format(what, i))}
    end
    return out
  end
  if #v > 0 then return {{default_name, as_array(v, what)}} end -- a nested Lua table
  for k, a in pairs(v) do out[#out + 1] = {k, as_array(a, ('%s.%s'):format(what, tostring(k)))} end
  table.sort(out, function(a, b) return a[1] < b[1] end)
  if #out == 0 and not allow_empty then raise(('mx.io.NDArrayIter: %s is empty'):format(what)) end
  return out
end

local HANDLES = {pad = true, discard = true, roll_over = true}

--- mx.io.NDArrayIter{data=, label=, batch_size=1, shuffle=false, last_batch_handle='pad',
--- data_name='data', label_name='softmax_label', num_parts=1, part_index=0}
--- (num_parts / part_index: this worker reads its part of the rows, see part_range);
--- also NDArrayIter(data, label, batch_size, shuffle, last_batch_handle, data_name,
--- label_name) as MXNet (a single plain table is the keyword form).
-- @function NDArrayIter
local ITER_ARGS = {'data', 'label', 'batch_size', 'shuffle', 'last_batch_handle', 'data_name', 'label_name'}
setmetatable(NDArrayIter, {__index = DataIter, __call = function(cls, ...)
  local first = ...
  if select('#', ...) == 1 and type(first) ~= 'table' then
    raise('mx.io.NDArrayIter: expected a table of options, got ' .. type(first))
  end
  local o = require('luamx.kwargs').parse('mx.io.NDArrayIter', ITER_ARGS, ...)
  local bs = o.batch_size or 1
  check_batch_size('mx.io.NDArrayIter', bs)
  local lbh = o.last_batch_handle or 'pad'
  if not HANDLES[lbh] then
    raise(("mx.io.NDArrayIter: last_batch_handle must be 'pad', 'discard' or 'roll_over', got %s")
      :format(tostring(lbh)))
  end
  local data = init_sources(o.data, false, o.data_name or 'data', 'data')
  local label = init_sources(o.label, true, o.label_name or 'softmax_label', 'label')
  local n = data[1][2].shape[1]
  for _, src in ipairs({data, label}) do
    for _, p in ipairs(src) do
      local s = p[2].shape
      if #s == 0 or s[1] ~= n then
        raise(('mx.io.NDArrayIter: %s has %s rows, expected %d (the first data array\'s)')
          :format(p[1], tostring(s[1]), n))
      end
    end
  end
  local first, count = M.part_range('mx.io.NDArrayIter', n, o.num_parts, o.part_index)
  if count ~= n then
    for _, src in ipairs({data, label}) do
      for _, p in ipairs(src) do p[2] = p[2]:slice(first + 1, first + count) end
    end
    n = count
  end
  local self = setmetatable({data = data, label = label, batch_size = bs, shuffle = o.shuffle and true or false,
                             last_batch_handle = lbh, num_data = n, cursor = -bs}, cls)
  self.order = {}
  for i = 1, n do self.order[i] = i - 1 end
  local function buffers(src)
    local out = {}
    for i, p in ipairs(src) do
      local s = p[2].shape
      s[1] = bs
      out[i] = nd.empty(s, {ctx = p[2].context, dtype = p[2].dtype})
    end
    return out
  end
  self.data_buf, self.label_buf = buffers(data), buffers(label)
  local function descs(src)
    local out = {}
    for i, p in ipairs(src) do
      local s = p[2].shape
      s[1] = bs
      out[i] = DataDesc(p[1], s, p[2].dtype)
    end
    return out
  end
  self.provide_data, self.provide_label = descs(data), descs(label)
  self:reset()
  return self
end})

function NDArrayIter:_shuffle()
  local perm = M.permutation(self.num_data)
  local old, new = self.order, {}
  for i = 1, #perm do new[i] = old[perm[i] + 1] end
  self.order = new
end

--- Ignores rolled-over samples and starts from the beginning.
function NDArrayIter:hard_reset()
  if self.shuffle then self:_shuffle() end
  self.cursor = -self.batch_size
  self.cache = nil
end

--- Rewinds to the start of the data (reshuffling when `shuffle` is set); with
-- `last_batch_handle = 'roll_over'` the incomplete last batch carries into the next epoch.
function NDArrayIter:reset()
  if self.shuffle then self:_shuffle() end
  local n, bs, c = self.num_data, self.batch_size, self.cursor
  if self.last_batch_handle == 'roll_over' and n - bs < c and c < n then
    self.cursor = c - n - bs
  else
    self.cursor = -bs
  end
end

--- Source rows (0-based) of the batch at the cursor; fewer than batch_size at the tail.
function NDArrayIter:_rows()
  local n, bs, c, order = self.num_data, self.batch_size, self.cursor, self.order
  local rows = {}
  if self.last_batch_handle == 'roll_over' and -bs < c and c < 0 and self.cache then
    for i, r in ipairs(self.cache) do rows[i] = r end
    for i = 0, c + bs - 1 do rows[#rows + 1] = order[i + 1] end
    self.cache = nil
  elseif self.last_batch_handle == 'pad' and c + bs > n then
    for i = c, c + bs - 1 do rows[#rows + 1] = order[i % n + 1] end
  else
    for i = c, math.min(c + bs, n) - 1 do rows[#rows + 1] = order[i + 1] end
  end
  return rows
end

--- Number of padding rows in the current batch (wrapped from the start with `'pad'`,
-- carried over with `'roll_over'`); 0 otherwise.
-- @return number
function NDArrayIter:getpad()
  local n, bs, c = self.num_data, self.batch_size, self.cursor
  if self.last_batch_handle == 'pad' and c + bs > n then return c + bs - n end
  if self.last_batch_handle == 'roll_over' and -bs < c and c < 0 then return -c end
  return 0
end

--- Advances to the next batch.
-- @return a DataBatch (`data`, `label`, `pad`, `provide_data`, `provide_label`), or nil at
-- the end of the epoch (an incomplete tail batch is padded with `'pad'`, kept for the next
-- epoch with `'roll_over'`, dropped otherwise)
function NDArrayIter:next()
  self.cursor = self.cursor + self.batch_size
  if self.cursor >= self.num_data then return nil end
  local rows = self:_rows()
  if #rows ~= self.batch_size then
    self.cache = rows -- incomplete tail: kept for roll_over, dropped otherwise
    return nil
  end
  for i, p in ipairs(self.data) do gather_rows(self.data_buf[i], p[2], rows) end
  for i, p in ipairs(self.label) do gather_rows(self.label_buf[i], p[2], rows) end
  return DataBatch{data = self.data_buf, label = self.label_buf, pad = self:getpad(),
                   provide_data = self.provide_data, provide_label = self.provide_label}
end

-- ------------------------------------------------------------------ file iterators -
--- Installs this module as `mx.io` (adding `MNISTIter`, `CSVIter`, `ImageRecordIter`,
-- `ResizeIter` and `PrefetchingIter`).
-- @param mx the luamx module table
-- @return this module
function M.install(mx)
  M.MNISTIter = require('luamx.io.mnist').make(M)
  M.CSVIter = require('luamx.io.csv').make(M)
  M.ImageRecordIter = require('luamx.io.image_rec').make(M)
  M.ResizeIter, M.PrefetchingIter = require('luamx.io.wrappers').make(M)
  mx.io = M
  return M
end

return M
