--- luamx.recordio — mx.recordio: MXNet's RecordIO files (python/mxnet/recordio.py).
--
--   local w = mx.recordio.MXIndexedRecordIO('data.idx', 'data.rec', 'w')
--   w:write_idx(0, mx.recordio.pack(mx.recordio.IRHeader(0, 3, 0, 0), bytes))
--   w:close()
--   local r = mx.recordio.MXIndexedRecordIO('data.idx', 'data.rec', 'r')
--   local header, payload = mx.recordio.unpack(r:read_idx(0))
--
-- Invariants:
-- * Records are Lua strings. The file format is dmlc-core's (the C reader in
--   src/io/recordio.c checks every header and length; a corrupt file raises an error
--   naming the file and byte offset, and the object stays usable: reset() or seek).
-- * An image record starts with MXNet's IRHeader, 24 bytes little-endian: flag (uint32),
--   label (float32), id and id2 (uint64). A label array is stored as flag = its length,
--   label = 0, and the float32 values right after the header.
-- * Header labels come back as a number, or (flag > 0) as a Lua array of float32 values
--   (MXNet's numpy array). Ids are Lua numbers (exact up to 2^53).
-- * Images (pack_img / unpack_img) are uint8 NDArrays (height, width, channels) in
--   OpenCV's BGR order, or (height, width) for gray, as MXNet's cv2-based functions;
--   encoding/decoding needs the libluamx_image plugin (libjpeg-turbo and libpng).
local ffi = require 'ffi'
local capi = require 'luamx.capi'
local nd = require 'luamx.ndarray'
local C, check, raise = capi.C, capi.check, capi.raise

local M = {}

-- ------------------------------------------------------------------ MXRecordIO -----
local MXRecordIO = {}
MXRecordIO.__index = MXRecordIO
M.MXRecordIO = MXRecordIO

local function check_flag(who, flag)
  if flag ~= 'r' and flag ~= 'w' then
    raise(("%s: flag must be 'r' or 'w', got %s"):format(who, tostring(flag)))
  end
end

--- mx.recordio.MXRecordIO(uri, flag): a RecordIO file opened for reading ('r') or
--- writing ('w', created or truncated).
-- @function MXRecordIO
setmetatable(MXRecordIO, {__call = function(cls, uri, flag)
  if type(uri) ~= 'string' then
    raise('mx.recordio.MXRecordIO: uri must be a file path, got ' .. type(uri))
  end
  check_flag('mx.recordio.MXRecordIO', flag)
  local self = setmetatable({uri = uri, flag = flag, writable = flag == 'w', is_open = false}, cls)
  self:open()
  return self
end})

--- Opens the file (done by the constructor; reopening a writer truncates the file).
function MXRecordIO:open()
  if self.is_open then self:close() end
  local p = ffi.new('lmx_recordio *[1]')
  check(C.lmx_recordio_open(self.uri, self.writable and C.LMX_RECORDIO_WRITE or C.LMX_RECORDIO_READ, p))
  self.handle = ffi.gc(p[0], C.lmx_recordio_free)
  self.is_open = true
end

--- Closes the file; a closed object can be reopened with open().
function MXRecordIO:close()
  if not self.is_open then return end
  local h = ffi.gc(self.handle, nil)
  self.handle, self.is_open = nil, false
  check(C.lmx_recordio_free(h))
end

--- Closes and reopens: a reader starts again from the first record.
function MXRecordIO:reset()
  self:close()
  self:open()
end

local function live(self, who)
  if not self.is_open then raise(('%s: %s is closed'):format(who, self.uri)) end
  return self.handle
end

--- Appends a record (a Lua string).
-- @param buf string
function MXRecordIO:write(buf)
  local h = live(self, 'MXRecordIO:write')
  if not self.writable then raise(('MXRecordIO:write: %s is opened for reading'):format(self.uri)) end
  if type(buf) ~= 'string' then raise('MXRecordIO:write: buf must be a string, got ' .. type(buf)) end
  check(C.lmx_recordio_write(h, buf, #buf))
end

--- Reads the next record.
-- @return the record as a string, or nil at the end of the file
function MXRecordIO:read()
  local h = live(self, 'MXRecordIO:read')
  if self.writable then raise(('MXRecordIO:read: %s is opened for writing'):format(self.uri)) end
  local data, size, got = ffi.new('const void *[1]'), ffi.new('size_t[1]'), ffi.new('int[1]')
  check(C.lmx_recordio_read(h, data, size, got))
  if got[0] == 0 then return nil end
  return ffi.string(data[0], size[0])
end

--- Byte offset of the next record (reader) or of the end of the file (writer).
-- @return number
function MXRecordIO:tell()
  local pos = ffi.new('uint64_t[1]')
  check(C.lmx_recordio_tell(live(self, 'MXRecordIO:tell'), pos))
  return tonumber(pos[0])
end

-- ------------------------------------------------------------------ indexed --------
local MXIndexedRecordIO = setmetatable({}, {__index = MXRecordIO})
MXIndexedRecordIO.__index = MXIndexedRecordIO
M.MXIndexedRecordIO = MXIndexedRecordIO

--- mx.recordio.MXIndexedRecordIO(idx_path, uri, flag [, key_type]): a RecordIO file with
--- an index file of 'key<TAB>offset' lines for random access. key_type converts keys
--- read from the index (default tonumber, MXNet's int).
-- @function MXIndexedRecordIO
setmetatable(MXIndexedRecordIO, {__index = MXRecordIO, __call = function(cls, idx_path, uri, flag, key_type)
  if type(idx_path) ~= 'string' then
    raise('mx.recordio.MXIndexedRecordIO: idx_path must be a file path, got ' .. type(idx_path))
  end
  if type(uri) ~= 'string' then
    raise('mx.recordio.MXIndexedRecordIO: uri must be a file path, got ' .. type(uri))
  end
  check_flag('mx.recordio.MXIndexedRecordIO', flag)
  local self = setmetatable({idx_path = idx_path, uri = uri, flag = flag, writable = flag == 'w',
                             is_open = false, key_type = key_type or tonumber}, cls)
  self:open()
  return self
end})

--- Opens the record file and the index (read: parsed into `idx` and `keys`).
function MXIndexedRecordIO:open()
  MXRecordIO.open(self)
  self.idx, self.keys = {}, {}
  local f, err = io.open(self.idx_path, self.writable and 'w' or 'r')
  if not f then raise(('MXIndexedRecordIO: cannot open index %s: %s'):format(self.idx_path, err)) end
  self.fidx = f
  if self.writable then return end
  local n = 0
  for line in f:lines() do
    n = n + 1
    local k, pos = line:match('^([^\t]+)\t(%d+)%s*$')
    local key = k and self.key_type(k)
    if key == nil then
      raise(("MXIndexedRecordIO: %s line %d: expected 'key<TAB>offset', got %q"):format(self.idx_path, n, line))
    end
    self.idx[key] = tonumber(pos)
    self.keys[#self.keys + 1] = key
  end
end

--- Closes both files.
function MXIndexedRecordIO:close()
  if not self.is_open then return end
  MXRecordIO.close(self)
  self.fidx:close()
  self.fidx = nil
end

--- Moves the reader to the record of key idx.
function MXIndexedRecordIO:seek(idx)
  local pos = self.idx[idx]
  if pos == nil then raise(('MXIndexedRecordIO:seek: key %s is not in %s'):format(tostring(idx), self.idx_path)) end
  check(C.lmx_recordio_seek(live(self, 'MXIndexedRecordIO:seek'), pos))
end

--- The record of key idx.
-- @return string
function MXIndexedRecordIO:read_idx(idx)
  self:seek(idx)
  return self:read()
end

--- Appends buf as the record of key idx and records its offset in the index.
function MXIndexedRecordIO:write_idx(idx, buf)
  local key = self.key_type(tostring(idx))
  if key == nil then raise(('MXIndexedRecordIO:write_idx: key %s is not a valid key'):format(tostring(idx))) end
  local pos = self:tell()
  self:write(buf)
  self.fidx:write(('%s\t%d\n'):format(tostring(key), pos))
  self.idx[key] = pos
  self.keys[#self.keys + 1] = key
end

-- ------------------------------------------------------------------ IRHeader -------
local IRHeader = {}
IRHeader.__index = IRHeader
M.IRHeader = IRHeader

--- mx.recordio.IRHeader(flag, label, id, id2) or IRHeader{flag=, label=, id=, id2=}:
--- the header of an image record (label: a number, or an array of numbers).
-- @function IRHeader
setmetatable(IRHeader, {__call = function(cls, flag, label, id, id2)
  if type(flag) == 'table' then
    local o = flag
    flag, label, id, id2 = o.flag or o[1], o.label or o[2], o.id or o[3], o.id2 or o[4]
  end
  return setmetatable({flag = flag or 0, label = label or 0, id = id or 0, id2 = id2 or 0}, cls)
end})

function IRHeader.__tostring(h)
  local l = type(h.label) == 'table' and '{' .. table.concat(h.label, ', ') .. '}' or tostring(h.label)
  return ('IRHeader(flag=%d, label=%s, id=%d, id2=%d)'):format(h.flag, l, h.id, h.id2)
end

if not pcall(ffi.typeof, 'lmx_irheader_') then -- (the module may be loaded twice)
  ffi.cdef[[typedef struct { uint32_t flag; float label; uint64_t id, id2; } lmx_irheader_;]]
end
local HEADER_SIZE = 24
assert(ffi.sizeof('lmx_irheader_') == HEADER_SIZE)

local function as_label_list(label)
  if nd.is_ndarray(label) then return label:toflat() end
  return label
end

local function check_id(v, what)
  if type(v) ~= 'number' or v < 0 or v % 1 ~= 0 or v >= 2 ^ 64 then
    raise(('mx.recordio.pack: header.%s must be a non-negative integer, got %s'):format(what, tostring(v)))
  end
end

--- Packs a header and a payload string into one record (MXNet's pack).
-- @param header an IRHeader (or a table with its fields); a table or NDArray label is
-- stored as an array (flag = its length)
-- @param s the payload string
-- @return string
function M.pack(header, s)
  header = IRHeader(header)
  if type(s) ~= 'string' then raise('mx.recordio.pack: s must be a string, got ' .. type(s)) end
  local h = ffi.new('lmx_irheader_')
  check_id(header.id, 'id')
  check_id(header.id2, 'id2')
  h.id, h.id2 = header.id, header.id2
  local label = as_label_list(header.label)
  local extra = ''
  if type(label) == 'number' then
    h.flag, h.label = 0, label
  elseif type(label) == 'table' then
    local n = #label
    local arr = ffi.new('float[?]', math.max(n, 1))
    for i = 1, n do
      if type(label[i]) ~= 'number' then
        raise(('mx.recordio.pack: header.label[%d] must be a number, got %s'):format(i, type(label[i])))
      end
      arr[i - 1] = label[i]
    end
    h.flag, h.label = n, 0
    extra = ffi.string(arr, 4 * n)
  else
    raise('mx.recordio.pack: header.label must be a number or an array of numbers, got ' .. type(label))
  end
  return ffi.string(h, HEADER_SIZE) .. extra .. s
end

--- Splits a record into its header and payload (MXNet's unpack).
-- @param s a record string
-- @return IRHeader, payload string
function M.unpack(s)
  if type(s) ~= 'string' then raise('mx.recordio.unpack: s must be a string, got ' .. type(s)) end
  if #s < HEADER_SIZE then
    raise(('mx.recordio.unpack: a record starts with a %d-byte header, got %d bytes'):format(HEADER_SIZE, #s))
  end
  local h = ffi.new('lmx_irheader_')
  ffi.copy(h, s, HEADER_SIZE)
  local header = IRHeader(tonumber(h.flag), tonumber(h.label), tonumber(h.id), tonumber(h.id2))
  local rest = HEADER_SIZE
  if h.flag > 0 then
    local n = tonumber(h.flag)
    if (#s - HEADER_SIZE) < 4 * n then
      raise(('mx.recordio.unpack: header flag says %d labels (%d bytes), only %d bytes follow the header')
        :format(n, 4 * n, #s - HEADER_SIZE))
    end
    local arr = ffi.new('float[?]', n)
    ffi.copy(arr, ffi.cast('const char *', s) + HEADER_SIZE, 4 * n)
    local label = {}
    for i = 1, n do label[i] = tonumber(arr[i - 1]) end
    header.label = label
    rest = rest + 4 * n
  end
  return header, s:sub(rest + 1)
end

-- ------------------------------------------------------------------ images ---------
--- Packs a header and an image (MXNet's pack_img).
-- @param header IRHeader
-- @param img uint8 NDArray (height, width, channels) in BGR order, or (height, width)
-- @param quality JPEG quality 1..100 (default 95); for '.png' the zlib level, clamped
-- to 0..9 as OpenCV does
-- @param img_fmt '.jpg' (default), '.jpeg' or '.png'
-- @return string
function M.pack_img(header, img, quality, img_fmt)
  quality, img_fmt = quality or 95, img_fmt or '.jpg'
  if not nd.is_ndarray(img) then raise('mx.recordio.pack_img: img must be an NDArray, got ' .. type(img)) end
  if img.dtype ~= 'uint8' then
    raise(("mx.recordio.pack_img: img must be a uint8 NDArray, got %s (use img:astype('uint8'))"):format(img.dtype))
  end
  local s = img.shape
  if #s ~= 2 and #s ~= 3 then
    raise(('mx.recordio.pack_img: img must be (height, width) or (height, width, channels), got %d dims'):format(#s))
  end
  if type(quality) ~= 'number' then raise('mx.recordio.pack_img: quality must be a number, got ' .. type(quality)) end
  if type(img_fmt) ~= 'string' then raise('mx.recordio.pack_img: img_fmt must be a string, got ' .. type(img_fmt)) end
  img_fmt = img_fmt:lower() -- MXNet compares upper-cased: '.JPG' is '.jpg'
  if img_fmt == '.png' then quality = math.max(0, math.min(9, quality)) end
  local src = img:copyto(nd.empty(s, {dtype = 'uint8'}))
  local out = ffi.new('lmx_image *[1]')
  check(C.lmx_image_encode(src:data(), s[1], s[2], s[3] or 1, img_fmt, quality, out), nil, 'mx.recordio.pack_img')
  local im = ffi.gc(out[0], C.lmx_image_free)
  local data, size = ffi.new('const void *[1]'), ffi.new('size_t[1]')
  check(C.lmx_image_info(im, nil, nil, nil, data, size))
  return M.pack(header, ffi.string(data[0], size[0]))
end

--- Decodes an image record (MXNet's unpack_img).
-- @param s record string
-- @param iscolor -1 as stored (default), 0 gray, 1 BGR
-- @return IRHeader, uint8 NDArray (height, width, channels) or (height, width) for gray
function M.unpack_img(s, iscolor)
  iscolor = iscolor or -1
  if iscolor ~= -1 and iscolor ~= 0 and iscolor ~= 1 then
    raise('mx.recordio.unpack_img: iscolor must be -1, 0 or 1, got ' .. tostring(iscolor))
  end
  local header, payload = M.unpack(s)
  return header, M.imdecode(payload, iscolor, 'mx.recordio.unpack_img')
end

--- Decodes JPEG or PNG bytes into a uint8 NDArray, as unpack_img does for a record's
--- payload (OpenCV's cv2.imdecode: BGR order; tools/im2rec.lua uses it).
-- @param bytes string
-- @param iscolor -1 as stored (default), 0 gray, 1 BGR
-- @param who the caller's name for error messages (default 'mx.recordio.imdecode')
-- @return uint8 NDArray (height, width, channels), or (height, width) for gray
function M.imdecode(bytes, iscolor, who)
  who, iscolor = who or 'mx.recordio.imdecode', iscolor or -1
  if type(bytes) ~= 'string' then raise(who .. ': expected image bytes as a string, got ' .. type(bytes)) end
  local out = ffi.new('lmx_image *[1]')
  check(C.lmx_image_decode(bytes, #bytes, iscolor, out), nil, who)
  local im = ffi.gc(out[0], C.lmx_image_free)
  local h, w, c = ffi.new('int[1]'), ffi.new('int[1]'), ffi.new('int[1]')
  local data, size = ffi.new('const void *[1]'), ffi.new('size_t[1]')
  check(C.lmx_image_info(im, h, w, c, data, size))
  local shape = c[0] == 1 and {h[0], w[0]} or {h[0], w[0], c[0]}
  local img = nd.empty(shape, {dtype = 'uint8'})
  ffi.copy(img:data(), data[0], size[0])
  return img
end

--- Installs this module as `mx.recordio`.
-- @param mx the luamx module table
-- @return this module
function M.install(mx)
  mx.recordio = M
  return M
end

return M
