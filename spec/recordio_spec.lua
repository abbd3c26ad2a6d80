-- spec/recordio_spec.lua — mx.recordio: the RecordIO byte layout (checked against bytes
-- written out by hand from dmlc-core's format), MXRecordIO / MXIndexedRecordIO, the
-- IRHeader pack/unpack (scalar and array labels), corrupt files, and pack_img /
-- unpack_img through libjpeg / libpng.
local mx = require 'luamx'
local H = require 'helpers'
local rio = mx.recordio

local function tmpname(tag)
  local p = os.tmpname()
  os.remove(p)
  return p .. '_' .. tag
end

local function slurp(path)
  local f = assert(io.open(path, 'rb'))
  local s = f:read('*a')
  f:close()
  return s
end

local function spit(path, s)
  local f = assert(io.open(path, 'wb'))
  f:write(s)
  f:close()
end

local function hex(s)
  return (s:gsub('.', function(c) return ('%02x'):format(c:byte()) end))
end

local MAGIC = '\x0a\x23\xd7\xce' -- 0xced7230a little-endian

describe('RecordIO byte layout', function()
  it('writes magic, length and padding to 4 bytes as dmlc-core does', function()
    local p = tmpname('a.rec')
    local w = rio.MXRecordIO(p, 'w')
    w:write('abc')
    assert.equal(12, w:tell())
    w:write('')
    w:write('wxyz')
    w:close()
    assert.equal(hex(MAGIC .. '\3\0\0\0' .. 'abc\0' .. MAGIC .. '\0\0\0\0' .. MAGIC .. '\4\0\0\0' .. 'wxyz'),
                 hex(slurp(p)))
    os.remove(p)
  end)

  it('splits a record at an aligned magic number (cflag 1, 3 in the upper 3 bits) and restores it', function()
    local p = tmpname('b.rec')
    local payload = 'ABCD' .. MAGIC .. 'EF'
    local w = rio.MXRecordIO(p, 'w')
    w:write(payload)
    w:write('xy' .. MAGIC) -- unaligned magic: not split
    w:close()
    -- part 1: cflag 1 (0x20000000), 4 bytes; part 2: cflag 3 (0x60000000), 2 bytes + pad
    local expected = MAGIC .. '\4\0\0\x20' .. 'ABCD' .. MAGIC .. '\2\0\0\x60' .. 'EF\0\0'
                     .. MAGIC .. '\6\0\0\0' .. 'xy' .. MAGIC .. '\0\0'
    assert.equal(hex(expected), hex(slurp(p)))
    local r = rio.MXRecordIO(p, 'r')
    assert.equal(payload, r:read())
    assert.equal('xy' .. MAGIC, r:read())
    assert.is_nil(r:read())
    r:close()
    os.remove(p)
  end)

  it('a record that starts and ends with the magic gets empty first and middle parts', function()
    local p = tmpname('c.rec')
    local payload = MAGIC .. MAGIC .. 'Q'
    local w = rio.MXRecordIO(p, 'w')
    w:write(payload)
    w:close()
    assert.equal(hex(MAGIC .. '\0\0\0\x20' .. MAGIC .. '\0\0\0\x40' .. MAGIC .. '\1\0\0\x60' .. 'Q\0\0\0'),
                 hex(slurp(p)))
    local r = rio.MXRecordIO(p, 'r')
    assert.equal(payload, r:read())
    r:close()
    os.remove(p)
  end)
end)

describe('mx.recordio.pack / unpack', function()
  it('lays out IRHeader as MXNet\'s struct "IfQQ" (little-endian)', function()
    local s = rio.pack(rio.IRHeader(0, 1.5, 7, 2), 'PAY')
    -- flag 0 | label 1.5f = 0x3fc00000 | id 7 | id2 2 | payload
    assert.equal('00000000' .. '0000c03f' .. '0700000000000000' .. '0200000000000000' .. hex('PAY'), hex(s))
    local a = rio.pack(rio.IRHeader(0, {1, 2}, 300, 0), 'Z')
    -- flag = 2 labels, label field 0, then 1.0f 2.0f before the payload
    assert.equal('02000000' .. '00000000' .. '2c01000000000000' .. '0000000000000000'
                 .. '0000803f' .. '00000040' .. hex('Z'), hex(a))
  end)

  it('round-trips scalar and array labels, ids and payloads', function()
    local h, s = rio.unpack(rio.pack(rio.IRHeader(0, -3.25, 2 ^ 40 + 5, 9), 'hello\0world'))
    assert.same({0, -3.25, 2 ^ 40 + 5, 9}, {h.flag, h.label, h.id, h.id2})
    assert.equal('hello\0world', s)
    h, s = rio.unpack(rio.pack({flag = 0, label = {0.5, 7, -1}, id = 1, id2 = 0}, ''))
    assert.equal(3, h.flag)
    assert.same({0.5, 7, -1}, h.label)
    assert.equal('', s)
    -- a scalar label forces flag 0, as MXNet's pack does
    h = rio.unpack(rio.pack(rio.IRHeader(5, 2, 0, 0), 'x'))
    assert.equal(0, h.flag)
    assert.equal(2, h.label)
    -- an NDArray label is an array label
    h = rio.unpack(rio.pack(rio.IRHeader(0, mx.nd.array{4, 5}, 0, 0), 'x'))
    assert.same({4, 5}, h.label)
    assert.equal('IRHeader(flag=2, label={4, 5}, id=0, id2=0)', tostring(h))
  end)

  it('rejects bad headers and short records with messages', function()
    H.raises(function() rio.unpack('short') end, 'mx.recordio.unpack', '24-byte header', 'got 5')
    local bad = rio.pack(rio.IRHeader(0, {1, 2, 3}, 0, 0), ''):sub(1, 30)
    H.raises(function() rio.unpack(bad) end, 'flag says 3 labels (12 bytes)', 'only 6 bytes')
    H.raises(function() rio.pack(rio.IRHeader(0, 'a', 0, 0), '') end, 'header.label must be a number')
    H.raises(function() rio.pack(rio.IRHeader(0, 1, -1, 0), '') end, 'header.id must be a non-negative integer')
    H.raises(function() rio.pack(rio.IRHeader(0, 1, 0, 0), 3) end, 's must be a string, got number')
  end)
end)

describe('MXRecordIO', function()
  it('reads what it wrote, in order; reset starts again; tell gives offsets', function()
    local p = tmpname('d.rec')
    local w = rio.MXRecordIO(p, 'w')
    local recs, offs = {}, {}
    for i = 1, 20 do
      recs[i] = ('r%d:'):format(i) .. ('x'):rep(i * 7)
      offs[i] = w:tell()
      w:write(recs[i])
    end
    w:close()
    local r = rio.MXRecordIO(p, 'r')
    for i = 1, 20 do
      assert.equal(offs[i], r:tell())
      assert.equal(recs[i], r:read())
    end
    assert.is_nil(r:read())
    assert.is_nil(r:read())
    r:reset()
    assert.equal(recs[1], r:read())
    H.raises(function() r:write('x') end, 'MXRecordIO:write', 'opened for reading')
    r:close()
    H.raises(function() r:read() end, 'MXRecordIO:read', 'is closed')
    H.raises(function() rio.MXRecordIO(p, 'a') end, "flag must be 'r' or 'w', got a")
    H.raises(function() rio.MXRecordIO(p .. '.missing', 'r') end, 'cannot open', '.missing', 'No such file')
    -- a directory opens but is no record file: the message must not carry a stale errno
    -- (the failed open just above left ENOENT behind)
    local dir = p:match('^(.*)/[^/]*$')
    local err = H.raises(function() rio.MXRecordIO(dir, 'r') end, dir .. ' is not a regular file')
    assert.is_nil(err:find('No such file', 1, true), err)
    os.remove(p)
  end)
end)

describe('MXIndexedRecordIO', function()
  it('writes the .idx text format and reads records by key in any order', function()
    local p, ip = tmpname('e.rec'), tmpname('e.idx')
    local w = rio.MXIndexedRecordIO(ip, p, 'w')
    for i = 0, 4 do w:write_idx(i, ('rec%d'):format(i) .. ('y'):rep(i)) end
    w:close()
    -- key<TAB>offset: 8 header bytes plus 4+i bytes padded to 4: 12, 16, 16, 16 apart
    assert.equal('0\t0\n1\t12\n2\t28\n3\t44\n4\t60\n', slurp(ip))
    local r = rio.MXIndexedRecordIO(ip, p, 'r')
    assert.same({0, 1, 2, 3, 4}, r.keys)
    for _, k in ipairs({3, 0, 4, 1, 2, 3}) do assert.equal(('rec%d'):format(k) .. ('y'):rep(k), r:read_idx(k)) end
    assert.equal('rec4yyyy', (r:read_idx(4)))
    assert.is_nil(r:read())
    H.raises(function() r:read_idx(9) end, 'MXIndexedRecordIO:seek', 'key 9 is not in')
    r:close()
    spit(ip, '0\t0\nbroken line\n')
    H.raises(function() rio.MXIndexedRecordIO(ip, p, 'r') end, 'line 2', "expected 'key<TAB>offset'")
    -- an index offset that is not a record start: the read names the file and offset
    spit(ip, '0\t4\n')
    local r2 = rio.MXIndexedRecordIO(ip, p, 'r')
    H.raises(function() r2:read_idx(0) end, p, 'offset 4', 'bad magic 0x')
    r2:close()
    os.remove(p)
    os.remove(ip)
  end)
end)

describe('corrupt RecordIO files', function()
  local p = tmpname('bad.rec')
  local good = MAGIC .. '\4\0\0\0' .. 'abcd'
  local cases = {
    {'bad magic', good .. 'XXXX\4\0\0\0abcd', {'offset 12', 'bad magic 0x58585858', 'expected 0xced7230a'}},
    {'truncated header', good .. MAGIC .. '\4\0', {'offset 12', 'truncated record header', '6 bytes left'}},
    {'length past the end', good .. MAGIC .. '\100\0\0\0' .. 'ab', {'offset 12', 'record length 100',
                                                                    'past the end', '2 bytes left'}},
    {'absurd length', good .. MAGIC .. '\255\255\255\31', {'offset 12', 'record length 536870911'}},
    {'continuation without a start', good .. MAGIC .. '\0\0\0\x60', {'offset 12', 'continuation flag 3',
                                                                      'never started'}},
    {'unknown flag', good .. MAGIC .. '\0\0\0\x80', {'offset 12', 'continuation flag 4', 'not 0..3'}},
    {'new record inside a split one', good .. MAGIC .. '\0\0\0\x20' .. MAGIC .. '\0\0\0\0',
     {'offset 20', 'starts a new record inside a split one'}},
  }
  for _, c in ipairs(cases) do
    it(c[1] .. ': an error naming the file and offset, after the good record', function()
      spit(p, c[2])
      local r = rio.MXRecordIO(p, 'r')
      assert.equal('abcd', r:read())
      local err = H.raises(function() r:read() end, p, unpack(c[3]))
      assert.truthy(err:find('RecordIO', 1, true))
      r:reset() -- still usable
      assert.equal('abcd', r:read())
      r:close()
    end)
  end
  it('a non-RecordIO file fails at offset 0', function()
    spit(p, 'PK\3\4 this is a zip file, not a .rec')
    local r = rio.MXRecordIO(p, 'r')
    H.raises(function() r:read() end, p, 'offset 0', 'bad magic')
    r:close()
    os.remove(p)
  end)
end)

-- Images: PNG is lossless, so pixels come back exactly; JPEG approximately.
local function pattern(h, w, c)
  local a = mx.nd.empty(c == 1 and {h, w} or {h, w, c}, {dtype = 'uint8'})
  local p = a:data()
  for y = 0, h - 1 do
    for x = 0, w - 1 do
      for k = 0, c - 1 do p[(y * w + x) * c + k] = (y * 37 + x * 11 + k * 80) % 256 end
    end
  end
  return a
end

describe('pack_img / unpack_img', function()
  it('round-trips BGR and gray images through PNG exactly', function()
    for _, c in ipairs({3, 1, 4}) do
      local img = pattern(5, 7, c)
      local s = rio.pack_img(rio.IRHeader(0, 3, 11, 0), img, 3, '.png')
      local _, payload = rio.unpack(s)
      assert.equal('\137PNG', payload:sub(1, 4))
      local h, back = rio.unpack_img(s)
      assert.equal(3, h.label)
      assert.equal(11, h.id)
      assert.same(img.shape, back.shape)
      assert.same(img:toflat(), back:toflat())
    end
  end)

  it('takes the PNG quality as the zlib level, clamped to 0..9 as OpenCV does', function()
    local img = mx.nd.zeros({32, 32, 3}, {dtype = 'uint8'})
    local stored = #rio.pack_img(rio.IRHeader(0, 0, 0, 0), img, 0, '.png')
    local best = #rio.pack_img(rio.IRHeader(0, 0, 0, 0), img, 9, '.png')
    assert.truthy(stored > 3 * 32 * 32 and best < stored / 10, stored .. ' vs ' .. best)
    assert.equal(best, #rio.pack_img(rio.IRHeader(0, 0, 0, 0), img, 95, '.PNG'))
  end)

  it('decodes a color image as gray (iscolor 0) and a gray one as BGR (iscolor 1)', function()
    local s = rio.pack_img(rio.IRHeader(0, 0, 0, 0), pattern(4, 4, 1), 9, '.png')
    local _, bgr = rio.unpack_img(s, 1)
    assert.same({4, 4, 3}, bgr.shape)
    local g, f = pattern(4, 4, 1):toflat(), bgr:toflat()
    for i = 1, 16 do assert.same({g[i], g[i], g[i]}, {f[3 * i - 2], f[3 * i - 1], f[3 * i]}) end
    local _, gray = rio.unpack_img(rio.pack_img(rio.IRHeader(0, 0, 0, 0), pattern(4, 4, 3), 1, '.png'), 0)
    assert.same({4, 4}, gray.shape)
  end)

  it('round-trips through JPEG within the codec\'s error, label arrays kept', function()
    local img = mx.nd.full({16, 16, 3}, 200, {dtype = 'uint8'})
    local s = rio.pack_img(rio.IRHeader(0, {1, 2}, 5, 0), img, 95, '.JPG')
    assert.equal('\255\216\255', select(2, rio.unpack(s)):sub(1, 3))
    local h, back = rio.unpack_img(s)
    assert.same({1, 2}, h.label)
    assert.same({16, 16, 3}, back.shape)
    for _, v in ipairs(back:toflat()) do assert.truthy(math.abs(v - 200) <= 2) end
  end)

  it('rejects bad images and arguments with messages', function()
    H.raises(function() rio.unpack_img(rio.pack(rio.IRHeader(0, 0, 0, 0), 'not an image')) end,
             'mx.recordio.unpack_img', 'not a JPEG or PNG image')
    local png = select(2, rio.unpack(rio.pack_img(rio.IRHeader(0, 0, 0, 0), pattern(8, 8, 3), 1, '.png')))
    H.raises(function() rio.unpack_img(rio.pack(rio.IRHeader(0, 0, 0, 0), png:sub(1, 40))) end,
             'mx.recordio.unpack_img', 'PNG')
    local jpg = select(2, rio.unpack(rio.pack_img(rio.IRHeader(0, 0, 0, 0), pattern(8, 8, 3))))
    H.raises(function() rio.unpack_img(rio.pack(rio.IRHeader(0, 0, 0, 0), jpg:sub(1, 20))) end,
             'mx.recordio.unpack_img', 'JPEG')
    H.raises(function() rio.pack_img(rio.IRHeader(0, 0, 0, 0), mx.nd.zeros{2, 2}) end,
             'img must be a uint8 NDArray, got float32')
    H.raises(function() rio.pack_img(rio.IRHeader(0, 0, 0, 0), pattern(2, 2, 3), 95, '.bmp') end,
             "fmt must be '.jpg', '.jpeg' or '.png', got '.bmp'")
    H.raises(function() rio.pack_img(rio.IRHeader(0, 0, 0, 0), pattern(2, 2, 3), 0, '.jpg') end,
             'JPEG quality must be in 1..100, got 0')
    H.raises(function() rio.unpack_img('x', 2) end, 'iscolor must be -1, 0 or 1, got 2')
  end)

  it('without the codec plugin, luamx loads and the image calls name the packages', function()
    local cmd = ([[LUAMX_IMAGE_PLUGIN=%s luajit -e "local mx = require 'luamx'; ]] ..
      [[local r = mx.recordio.pack(mx.recordio.IRHeader(0, 1, 0, 0), 'x'); ]] ..
      [[assert(mx.recordio.unpack(r).label == 1); print(select(2, pcall(mx.recordio.unpack_img, r)))" 2>&1]])
      :format(tmpname('no_such_plugin.so'))
    local f = io.popen(cmd)
    local out = f:read('*a')
    f:close()
    assert.truthy(out:find('image codec plugin', 1, true), out)
    assert.truthy(out:find('no_such_plugin.so', 1, true), out)
    assert.truthy(out:find('libjpeg62-turbo-dev libpng-dev', 1, true), out)
  end)
end)
