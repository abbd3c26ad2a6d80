-- spec/io_spec.lua — mx.io: DataDesc, DataBatch, NDArrayIter (pad / discard / roll_over,
-- shuffle), MNISTIter over IDX files written here (and corrupt ones), CSVIter.
local mx = require 'luamx'
local H = require 'helpers'

local function rows(n, w)
  local t = {}
  for i = 1, n do
    t[i] = {}
    for j = 1, w do t[i][j] = (i - 1) * w + j end
  end
  return mx.nd.array(t)
end

local function collect(it)
  local out = {}
  for b in it do
    out[#out + 1] = {data = b.data[1]:toflat(), label = b.label[1] and b.label[1]:toflat(), pad = b.pad}
  end
  return out
end

local function tmpname(tag)
  local p = os.tmpname()
  os.remove(p)
  return p .. '_' .. tag
end

describe('mx.io.DataDesc', function()
  it('keeps name, shape, dtype, layout and finds the batch axis', function()
    local d = mx.io.DataDesc{name = 'data', shape = {3, 2}}
    assert.equal('data', d.name)
    assert.same({3, 2}, d.shape)
    assert.equal('float32', d.dtype)
    assert.equal('NCHW', d.layout)
    assert.equal('DataDesc[data,(3, 2),float32,NCHW]', tostring(d))
    assert.equal(0, mx.io.DataDesc.get_batch_axis('NCHW'))
    assert.equal(1, mx.io.DataDesc.get_batch_axis('TNC'))
    assert.equal(0, mx.io.DataDesc.get_batch_axis(nil))
    assert.equal(-1, mx.io.DataDesc.get_batch_axis('CHW'))
  end)
  it('rejects a missing name', function()
    H.raises(function() mx.io.DataDesc{shape = {1}} end, 'name must be a string')
  end)
end)

describe('mx.io.NDArrayIter', function()
  local x = rows(5, 2)
  local y = mx.nd.array{0, 1, 2, 3, 4}

  it("pads the last batch from the start ('pad')", function()
    local b = collect(mx.io.NDArrayIter{data = x, label = y, batch_size = 2})
    assert.equal(3, #b)
    assert.same({1, 2, 3, 4}, b[1].data)
    assert.same({5, 6, 7, 8}, b[2].data)
    assert.same({9, 10, 1, 2}, b[3].data)
    assert.same({4, 0}, b[3].label)
    assert.same({0, 0, 1}, {b[1].pad, b[2].pad, b[3].pad})
  end)

  it('tiles the data when the pad exceeds the data size', function()
    local b = collect(mx.io.NDArrayIter{data = mx.nd.array{10, 11, 12}, batch_size = 7})
    assert.equal(1, #b)
    assert.same({10, 11, 12, 10, 11, 12, 10}, b[1].data)
    assert.equal(4, b[1].pad)
  end)

  it("drops the last batch ('discard') and restarts after reset", function()
    local it = mx.io.NDArrayIter{data = x, label = y, batch_size = 2, last_batch_handle = 'discard'}
    local b = collect(it)
    assert.equal(2, #b)
    assert.same({2, 3}, b[2].label)
    it:reset()
    b = collect(it)
    assert.equal(2, #b)
    assert.same({0, 1}, b[1].label)
  end)

  it("rolls the tail over into the next epoch ('roll_over') with MXNet's pad", function()
    local it = mx.io.NDArrayIter{data = x, label = y, batch_size = 2, last_batch_handle = 'roll_over'}
    local b = collect(it)
    assert.equal(2, #b)
    it:reset()
    b = collect(it)
    assert.equal(3, #b)
    assert.same({4, 0}, b[1].label)
    assert.equal(1, b[1].pad)
    assert.same({1, 2}, b[2].label)
    assert.same({3, 4}, b[3].label)
    assert.equal(0, b[3].pad)
  end)

  it('shuffles repeatably under mx.random.seed, each epoch a permutation', function()
    local function epoch_labels(seed)
      mx.random.seed(seed)
      local it = mx.io.NDArrayIter{data = mx.nd.arange(0, 6), label = mx.nd.arange(0, 6),
                                   batch_size = 3, shuffle = true}
      local out = {}
      for b in it do for _, v in ipairs(b.label[1]:toflat()) do out[#out + 1] = v end end
      it:reset()
      for b in it do for _, v in ipairs(b.label[1]:toflat()) do out[#out + 1] = v end end
      return out
    end
    local a, b = epoch_labels(7), epoch_labels(7)
    assert.same(a, b)
    local first = {}
    for i = 1, 6 do first[i] = a[i] end
    table.sort(first)
    assert.same({0, 1, 2, 3, 4, 5}, first)
    mx.random.seed(7)
    local it = mx.io.NDArrayIter{data = mx.nd.arange(0, 6), label = mx.nd.arange(0, 6), batch_size = 6, shuffle = true}
    local batch = it:next()
    assert.same(batch.data[1]:toflat(), batch.label[1]:toflat()) -- data and label stay paired
    assert.same({a[1], a[2], a[3], a[4], a[5], a[6]}, batch.data[1]:toflat())
  end)

  it('names multiple sources as MXNet does and describes them', function()
    local it = mx.io.NDArrayIter{data = {b = rows(4, 3), a = rows(4, 1)}, label = {rows(4, 1), rows(4, 1)},
                                 batch_size = 2}
    assert.equal('a', it.provide_data[1].name)
    assert.equal('b', it.provide_data[2].name)
    assert.same({2, 3}, it.provide_data[2].shape)
    assert.equal('_0_softmax_label', it.provide_label[1].name)
    assert.equal('_1_softmax_label', it.provide_label[2].name)
    assert.equal(2, it.batch_size)
    local b = it:next()
    assert.same({1, 2}, b.data[1]:toflat())
    assert.same({1, 2, 3, 4, 5, 6}, b.data[2]:toflat())
  end)

  it('writes every batch into the same preallocated arrays', function()
    local it = mx.io.NDArrayIter{data = x, batch_size = 2}
    local b1 = it:next().data[1]
    local b2 = it:next().data[1]
    assert.equal(b1, b2)
    assert.same({5, 6, 7, 8}, b1:toflat())
  end)

  it('rejects bad arguments with messages naming them', function()
    H.raises(function() mx.io.NDArrayIter{data = x, batch_size = 0} end, 'batch_size must be a positive integer', 'got 0')
    H.raises(function() mx.io.NDArrayIter{data = x, last_batch_handle = 'wrap'} end, 'last_batch_handle', 'got wrap')
    H.raises(function() mx.io.NDArrayIter{data = x, label = mx.nd.array{1, 2}} end, 'softmax_label has 2 rows, expected 5')
    H.raises(function() mx.io.NDArrayIter{batch_size = 1} end, 'data is required')
  end)
end)

-- ------------------------------------------------------------------ MNIST IDX -----
local function be32(n)
  return string.char(math.floor(n / 16777216) % 256, math.floor(n / 65536) % 256, math.floor(n / 256) % 256, n % 256)
end
local function write(path, s)
  local f = assert(io.open(path, 'wb'))
  f:write(s)
  f:close()
end

describe('mx.io.MNISTIter', function()
  local img, lab = tmpname('img'), tmpname('lab')
  -- three 2x2 images: pixels 0,51,102,255 / 1,2,3,4 / 10,20,30,40; labels 7, 3, 9
  local pixels = {0, 51, 102, 255, 1, 2, 3, 4, 10, 20, 30, 40}
  local function img_bytes() return '\0\0\8\3' .. be32(3) .. be32(2) .. be32(2) .. string.char(unpack(pixels)) end
  local function lab_bytes() return '\0\0\8\1' .. be32(3) .. string.char(7, 3, 9) end
  before_each(function() write(img, img_bytes()); write(lab, lab_bytes()) end)
  teardown(function() os.remove(img); os.remove(lab) end)

  it('reads IDX files, scales pixels by 1/255 and drops the incomplete tail', function()
    local it = mx.io.MNISTIter{image = img, label = lab, batch_size = 2, shuffle = false}
    assert.same({2, 1, 2, 2}, it.provide_data[1].shape)
    assert.same({2}, it.provide_label[1].shape)
    local b = it:next()
    local expect = {}
    for i = 1, 8 do expect[i] = pixels[i] / 255 end
    H.near(b.data[1]:toflat(), expect, 1e-7)
    assert.same({7, 3}, b.label[1]:toflat())
    assert.equal(0, b.pad)
    assert.is_nil(it:next())
    it:reset()
    assert.same({7, 3}, it:next().label[1]:toflat())
  end)

  it('gives flat rows with flat = true and shuffles with the global seed', function()
    local it = mx.io.MNISTIter{image = img, label = lab, batch_size = 3, flat = true, shuffle = false}
    local b = it:next()
    assert.same({3, 4}, b.data[1].shape)
    H.near(b.data[1]:toflat(), (function() local t = {} for i = 1, 12 do t[i] = pixels[i] / 255 end return t end)(), 1e-7)
    mx.random.seed(3)
    local l1 = mx.io.MNISTIter{image = img, label = lab, batch_size = 3}:next().label[1]:toflat()
    mx.random.seed(3)
    local l2 = mx.io.MNISTIter{image = img, label = lab, batch_size = 3}:next().label[1]:toflat()
    assert.same(l1, l2)
    table.sort(l1)
    assert.same({3, 7, 9}, l1)
  end)

  it('reports corrupt and mismatched files, naming the file and the problem', function()
    write(img, '\0\0\8\3' .. be32(3) .. be32(2))
    H.raises(function() mx.io.MNISTIter{image = img, label = lab} end, 'image file ' .. img, 'truncated header')
    write(img, '\0\0\8\3' .. be32(3) .. be32(2) .. be32(2) .. string.char(1, 2, 3))
    H.raises(function() mx.io.MNISTIter{image = img, label = lab} end, img, 'truncated: expected 12 data bytes')
    write(img, img_bytes() .. 'x')
    H.raises(function() mx.io.MNISTIter{image = img, label = lab} end, 'trailing bytes')
    write(img, '\1\0\8\3' .. be32(3) .. be32(2) .. be32(2) .. string.char(unpack(pixels)))
    H.raises(function() mx.io.MNISTIter{image = img, label = lab} end, 'bad magic number')
    write(img, '\0\0\13\3' .. be32(3) .. be32(2) .. be32(2))
    H.raises(function() mx.io.MNISTIter{image = img, label = lab} end, 'element type 0x0d is not unsigned byte')
    write(img, img_bytes())
    write(lab, '\0\0\8\3' .. be32(3) .. be32(1) .. be32(1) .. string.char(1, 2, 3))
    H.raises(function() mx.io.MNISTIter{image = img, label = lab} end, 'label file', 'expected 1 dimensions')
    write(lab, '\0\0\8\1' .. be32(2) .. string.char(1, 2))
    H.raises(function() mx.io.MNISTIter{image = img, label = lab} end, 'has 3 images but label file', 'has 2 labels')
    H.raises(function() mx.io.MNISTIter{image = img .. '_missing', label = lab} end, 'cannot open image file')
    -- dims whose product overflows 64 bits, and a zero dim that makes the data empty
    write(img, '\0\0\8\3' .. be32(4294967295) .. be32(4294967295) .. be32(4294967295))
    H.raises(function() mx.io.MNISTIter{image = img, label = lab} end,
      'image file ' .. img .. ': truncated: dimensions 4294967295x4294967295x4294967295 need more than 2^64 data bytes, got 0')
    write(img, '\0\0\8\3' .. be32(0) .. be32(4294967295) .. be32(4294967295) .. 'x')
    H.raises(function() mx.io.MNISTIter{image = img, label = lab} end, 'trailing bytes: expected 0 data bytes')
    write(img, '\0\0\8')
    H.raises(function() mx.io.MNISTIter{image = img, label = lab} end, 'truncated header (3 bytes)')
  end)
end)

-- ------------------------------------------------------------------ CSV -----------
describe('mx.io.CSVIter', function()
  local dcsv, lcsv = tmpname('d.csv'), tmpname('l.csv')
  before_each(function()
    write(dcsv, '1,2,3\n4,5,6\n7,8,9\n10,11,12\n13,14,15\n')
    write(lcsv, '0\n1\n2\n3\n4\n')
  end)
  teardown(function() os.remove(dcsv); os.remove(lcsv) end)

  it('wraps the last batch (round_batch) and continues after the wrapped rows', function()
    local it = mx.io.CSVIter{data_csv = dcsv, data_shape = {3}, label_csv = lcsv, batch_size = 2}
    assert.same({2, 3}, it.provide_data[1].shape)
    assert.same({2}, it.provide_label[1].shape)
    local b = collect(it)
    assert.equal(3, #b)
    assert.same({13, 14, 15, 1, 2, 3}, b[3].data)
    assert.same({4, 0}, b[3].label)
    assert.equal(1, b[3].pad)
    it:reset()
    b = collect(it)
    assert.equal(2, #b)
    assert.same({1, 2}, b[1].label)
    assert.same({3, 4}, b[2].label)
    it:reset()
    assert.same({0, 1}, it:next().label[1]:toflat())
  end)

  it('without round_batch gives a partial last batch, zero-filled, with its pad', function()
    local it = mx.io.CSVIter{data_csv = dcsv, data_shape = {3, 1}, batch_size = 2, round_batch = false}
    assert.same({2, 3, 1}, it.provide_data[1].shape)
    local b = collect(it)
    assert.equal(3, #b)
    assert.same({13, 14, 15, 0, 0, 0}, b[3].data)
    assert.same({0, 0}, b[3].label)
    assert.equal(1, b[3].pad)
  end)

  it('names the file and line of bad input', function()
    write(dcsv, '1,2,3\n4,5\n')
    H.raises(function() mx.io.CSVIter{data_csv = dcsv, data_shape = {3}, batch_size = 1} end,
      dcsv .. ' line 2: expected 3 values, got 2')
    write(dcsv, '1,2,3\n4,x,6\n')
    H.raises(function() mx.io.CSVIter{data_csv = dcsv, data_shape = {3}, batch_size = 1} end, 'line 2: "x" is not a number')
    write(dcsv, '1,2,3\n')
    H.raises(function() mx.io.CSVIter{data_csv = dcsv, data_shape = {3}, label_csv = lcsv, batch_size = 1} end,
      'has 1 rows but label_csv')
    H.raises(function() mx.io.CSVIter{data_csv = dcsv, data_shape = {0}, batch_size = 1} end, 'data_shape[1] must be a positive integer')
  end)

  it('parses in C: CRLF, blank lines, white space, hex and inf; quotes bad fields safely', function()
    write(dcsv, ' 1 ,0x10, 2.5e1\r\n\n   \t\n-inf,-0,3\n')
    local b = mx.io.CSVIter{data_csv = dcsv, data_shape = {3}, batch_size = 2}:next()
    assert.same({1, 16, 25, -math.huge, 0, 3}, b.data[1]:toflat())
    local C = mx.capi.C
    write(dcsv, '1,2,3\n4,5\0x,6\n')
    H.raises(function() mx.io.CSVIter{data_csv = dcsv, data_shape = {3}, batch_size = 1} end,
      dcsv .. ' line 2: "5\\0x" is not a number')
    write(dcsv, '1,,3\n')
    H.raises(function() mx.io.CSVIter{data_csv = dcsv, data_shape = {3}, batch_size = 1} end, 'line 1: "" is not a number')
    write(dcsv, ('9'):rep(300) .. 'z,1,2\n')
    local err = H.raises(function() mx.io.CSVIter{data_csv = dcsv, data_shape = {3}, batch_size = 1} end, 'line 1: "999')
    assert.truthy(err:find('..." is not a number', 1, true), err)
    write(dcsv, '1,2,3,\n')
    H.raises(function() mx.io.CSVIter{data_csv = dcsv, data_shape = {3}, batch_size = 1} end, 'line 1: "" is not a number')
    -- the C entry point checks its arguments
    local out = require('ffi').new('lmx_ndarray *[1]')
    assert.equal(C.LMX_ERR_ARG, C.lmx_csv_parse('1', 1, 0, 'x', out))
    assert.truthy(require('ffi').string(C.lmx_last_error()):find('lmx_csv_parse: width must be >= 1, got 0', 1, true))
  end)
end)
