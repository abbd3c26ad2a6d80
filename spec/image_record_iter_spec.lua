-- spec/image_record_iter_spec.lua — mx.io.ImageRecordIter over .rec files written by
-- tools/im2rec.lua (spec/recordio_fixture.lua): the committed fixture's bytes read by
-- an independent reader, batches against crops and normalization computed here from
-- the known pixels, seeded augmentation, shuffling, parts, last-batch handling, resize,
-- label arrays, errors, and a Module trained one epoch from it.
local mx = require 'luamx'
local ffi = require 'ffi'
local H = require 'helpers'
local F = require 'recordio_fixture'
local rio = mx.recordio

local FIX = (os.getenv('LUAMX_FIXTURES') or 'spec/fixtures') .. '/recordio/tiny'
local N, IH, IW = F.N, F.IH, F.IW

local function slurp(path)
  local f = assert(io.open(path, 'rb'))
  local s = f:read('*a')
  f:close()
  return s
end

local function tmpdir()
  local p = os.tmpname()
  os.remove(p)
  os.execute(('mkdir -p %q'):format(p))
  return p
end

local function f32(x) return tonumber(ffi.new('float', x)) end

-- Expected sample: image i, crop (y0, x0) of oh x ow, mirrored or not, RGB planes.
local function expected(i, y0, x0, oh, ow, mirror, o)
  local out = {}
  local mean = {o.mean_r or 0, o.mean_g or 0, o.mean_b or 0}
  local std = {o.std_r or 1, o.std_g or 1, o.std_b or 1}
  for k = 0, 2 do
    local mult = f32((o.scale or 1) / std[k + 1])
    for y = 0, oh - 1 do
      for x = 0, ow - 1 do
        local sx = mirror and (ow - 1 - x) or x
        out[#out + 1] = f32(f32(F.px(i, y0 + y, x0 + sx, 2 - k) - mean[k + 1]) * mult)
      end
    end
  end
  return out
end

local function rows_of(flat, n, per)
  local out = {}
  for r = 1, n do
    local row = {}
    for j = 1, per do row[j] = flat[(r - 1) * per + j] end
    out[r] = row
  end
  return out
end

local function epoch(it)
  local out = {}
  for b in it do
    local per = #b.data[1]:toflat() / it.batch_size
    local d, l = rows_of(b.data[1]:toflat(), it.batch_size, per), b.label[1]:toflat()
    out[#out + 1] = {data = d, label = l, pad = b.pad}
  end
  return out
end

-- A dmlc RecordIO reader written from the format description alone (string bytes).
local function u32(s, pos) local a, b, c, d = s:byte(pos, pos + 3) return a + b * 256 + c * 65536 + d * 16777216 end
local function f32le(s, pos)
  local v = u32(s, pos)
  local sign, e, m = v >= 2 ^ 31 and -1 or 1, math.floor(v / 2 ^ 23) % 256, v % 2 ^ 23
  if e == 0 then return sign * m * 2 ^ -149 end
  return sign * (1 + m / 2 ^ 23) * 2 ^ (e - 127)
end
local function independent_records(s)
  local recs, pos = {}, 1
  while pos <= #s do
    local start, data = pos - 1, ''
    repeat
      assert(u32(s, pos) == 0xced7230a, 'magic at ' .. (pos - 1))
      local lrec = u32(s, pos + 4)
      local cflag, len = math.floor(lrec / 2 ^ 29), lrec % 2 ^ 29
      data = data .. s:sub(pos + 8, pos + 7 + len)
      local padded = math.ceil(len / 4) * 4
      assert(s:sub(pos + 8 + len, pos + 7 + padded) == ('\0'):rep(padded - len), 'padding is zeros')
      pos = pos + 8 + padded
      if cflag == 1 or cflag == 2 then data = data .. '\x0a\x23\xd7\xce' end
    until cflag == 0 or cflag == 3
    recs[#recs + 1] = {offset = start, data = data}
  end
  return recs
end

describe('the committed fixture (tools/im2rec.lua output)', function()
  it('has MXNet\'s byte layout, read without luamx', function()
    local recs = independent_records(slurp(FIX .. '.rec'))
    assert.equal(N, #recs)
    local idx = slurp(FIX .. '.idx')
    local lines = {}
    for i, r in ipairs(recs) do
      local d = r.data
      assert.equal(0, u32(d, 1))                    -- flag: scalar label
      assert.equal(i - 1, f32le(d, 5))              -- label = image number
      assert.equal(i - 1, u32(d, 9) + u32(d, 13) * 2 ^ 32) -- id = .lst index
      assert.equal(0, u32(d, 17) + u32(d, 21))      -- id2
      assert.equal('\137PNG\r\n\26\n', d:sub(25, 32))
      lines[i] = ('%d\t%d\n'):format(i - 1, r.offset)
    end
    assert.equal(table.concat(lines), idx)
  end)

  it('decodes to the known pixels, and the packer rebuilds the same records', function()
    local r = rio.MXIndexedRecordIO(FIX .. '.idx', FIX .. '.rec', 'r')
    local dir = tmpdir()
    local fresh = rio.MXIndexedRecordIO(F.build(dir, 'again') .. '.idx', dir .. '/again.rec', 'r')
    assert.same(r.keys, fresh.keys)
    for i = N - 1, 0, -1 do
      local h, img = rio.unpack_img(r:read_idx(i))
      assert.same({0, i, i, 0}, {h.flag, h.label, h.id, h.id2})
      assert.same(F.image(i):toflat(), img:toflat())
      local h2, img2 = rio.unpack_img(fresh:read_idx(i))
      assert.same({h.flag, h.label, h.id}, {h2.flag, h2.label, h2.id})
      assert.same(img:toflat(), img2:toflat())
    end
    r:close()
    fresh:close()
    os.execute(('rm -r %q'):format(dir))
  end)
end)

describe('tools/im2rec.lua', function()
  it('lists one class per subfolder (--list --recursive) and packs with re-encoding', function()
    local dir = tmpdir()
    os.execute(('mkdir -p %q %q'):format(dir .. '/photos/b_dog', dir .. '/photos/a_cat'))
    for i = 0, 3 do
      local _, png = rio.unpack(rio.pack_img(rio.IRHeader(0, 0, 0, 0), F.image(i), 1, '.png'))
      local f = assert(io.open(('%s/photos/%s/%d.png'):format(dir, i < 3 and 'b_dog' or 'a_cat', i), 'wb'))
      f:write(png)
      f:close()
    end
    local src = os.getenv('LUAMX_SOURCE_DIR') or '.'
    local function run(args)
      local p = io.popen(('luajit %q %s 2>&1'):format(src .. '/tools/im2rec.lua', args))
      local out = p:read('*a')
      p:close()
      return out
    end
    assert.truthy(run(('--list --recursive %q %q'):format(dir .. '/all', dir .. '/photos')):find('4 images listed', 1, true))
    assert.equal('0\t0.000000\ta_cat/3.png\n1\t1.000000\tb_dog/0.png\n2\t1.000000\tb_dog/1.png\n'
                 .. '3\t1.000000\tb_dog/2.png\n', slurp(dir .. '/all.lst'))
    assert.truthy(run(('--encoding .png %q %q'):format(dir .. '/all', dir .. '/photos')):find('4 images packed', 1, true))
    local r = rio.MXIndexedRecordIO(dir .. '/all.idx', dir .. '/all.rec', 'r')
    local h, img = rio.unpack_img(r:read_idx(0))
    assert.same({0, 0, 0}, {h.label, h.id, h.id2})
    assert.same(F.image(3):toflat(), img:toflat())
    h = rio.unpack(r:read_idx(3))
    assert.same({1, 3}, {h.label, h.id})
    r:close()
    assert.truthy(run('--bogus a b'):find('unknown option --bogus', 1, true))
    os.execute(('rm -r %q'):format(dir))
  end)
end)

describe('mx.io.ImageRecordIter', function()
  local base = {path_imgrec = FIX .. '.rec', data_shape = {3, 4, 6}, batch_size = 4}
  local function opts(extra)
    local o = {}
    for k, v in pairs(base) do o[k] = v end
    for k, v in pairs(extra or {}) do o[k] = v end
    return o
  end

  it('gives centred crops normalized as (pixel - mean) * scale / std, RGB, with labels and pad', function()
    local o = opts{mean_r = 10, mean_g = 20, mean_b = 30, std_r = 2, std_g = 4, std_b = 8, scale = 0.5,
                   preprocess_threads = 3}
    local it = mx.io.ImageRecordIter(o)
    assert.equal(N, it.num_data)
    assert.same({4, 3, 4, 6}, it.provide_data[1].shape)
    assert.same({4}, it.provide_label[1].shape)
    assert.equal('softmax_label', it.provide_label[1].name)
    local got = epoch(it)
    assert.equal(3, #got)
    assert.same({0, 0, 2}, {got[1].pad, got[2].pad, got[3].pad})
    for b = 1, 3 do
      for r = 1, 4 do
        local i = ((b - 1) * 4 + r - 1) % N -- the last batch wraps to records 0, 1
        assert.equal(i, got[b].label[r])
        H.near(got[b].data[r], expected(i, 1, 1, 4, 6, false, o), 1e-6)
      end
    end
    it:reset()
    assert.same(got, epoch(it))
  end)

  it('reads through the .idx as well, and mirror = true flips every image', function()
    local it = mx.io.ImageRecordIter(opts{path_imgidx = FIX .. '.idx', mirror = true, batch_size = 5})
    local got = epoch(it)
    assert.equal(2, #got)
    for b = 1, 2 do
      for r = 1, 5 do H.near(got[b].data[r], expected((b - 1) * 5 + r - 1, 1, 1, 4, 6, true, {}), 0) end
    end
  end)

  it('round_batch = false pads with zero rows; last_batch_handle = discard drops the tail', function()
    local got = epoch(mx.io.ImageRecordIter(opts{round_batch = false}))
    assert.equal(2, got[3].pad)
    for _, v in ipairs(got[3].data[3]) do assert.equal(0, v) end
    assert.same({8, 9, 0, 0}, got[3].label)
    assert.equal(2, #epoch(mx.io.ImageRecordIter(opts{last_batch_handle = 'discard'})))
  end)

  it('random crops and mirrors are valid, repeat with the seed for any thread count, change with it', function()
    local function run(seed, threads)
      local it = mx.io.ImageRecordIter(opts{rand_crop = true, rand_mirror = true, seed = seed,
                                            preprocess_threads = threads, batch_size = 5})
      local e1 = epoch(it)
      it:reset()
      return {e1, epoch(it)}
    end
    local a = run(7, 1)
    assert.same(a, run(7, 3))
    assert.are_not.same(a, run(8, 2))
    local windows, mirrors = {}, {}
    for _, ep in ipairs(a) do
      for _, b in ipairs(ep) do
        for r = 1, 5 do
          local i, found = b.label[r], false
          for y0 = 0, IH - 4 do
            for x0 = 0, IW - 6 do
              for _, m in ipairs({false, true}) do
                local e = expected(i, y0, x0, 4, 6, m, {})
                local same = true
                for j = 1, #e do if e[j] ~= b.data[r][j] then same = false break end end
                if same and not found then
                  found = true
                  windows[y0 .. ',' .. x0] = true
                  mirrors[tostring(m)] = true
                end
              end
            end
          end
          assert.truthy(found, 'sample ' .. i .. ' is a crop of its image')
        end
      end
    end
    local nw = 0
    for _ in pairs(windows) do nw = nw + 1 end
    assert.truthy(nw >= 3, 'several crop positions drawn')
    assert.truthy(mirrors['true'] and mirrors['false'], 'both mirror states drawn')
  end)

  it('shuffle gives a new permutation each epoch, repeated by the seed', function()
    local function labels(seed)
      local it = mx.io.ImageRecordIter(opts{shuffle = true, seed = seed, batch_size = 1})
      local out = {}
      for _ = 1, 3 do
        local e = {}
        for b in it do e[#e + 1] = b.label[1]:toflat()[1] end
        out[#out + 1] = e
        it:reset()
      end
      return out
    end
    local a = labels(3)
    for _, e in ipairs(a) do
      local sorted = {unpack(e)}
      table.sort(sorted)
      assert.same({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, sorted)
    end
    assert.are_not.same(a[1], a[2])
    assert.are_not.same(a[1], {0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
    assert.same(a, labels(3))
  end)

  it('num_parts / part_index cover every record exactly once', function()
    local seen, sizes = {}, {}
    for p = 0, 2 do
      local it = mx.io.ImageRecordIter(opts{num_parts = 3, part_index = p, batch_size = 1, shuffle = true})
      sizes[#sizes + 1] = it.num_data
      for b in it do
        local l = b.label[1]:toflat()[1]
        assert.is_nil(seen[l], 'record ' .. l .. ' read twice')
        seen[l] = p
      end
    end
    assert.same({3, 3, 4}, sizes)
    for i = 0, N - 1 do assert.is_not_nil(seen[i], 'record ' .. i .. ' read') end
  end)

  it('resize sets the shorter edge (bilinear, MXNet\'s size rule) before the crop', function()
    -- 6x8 -> shorter edge 3: 3 x floor(3*8/6) = 3x4
    local it = mx.io.ImageRecordIter(opts{resize = 3, data_shape = {3, 3, 4}, batch_size = 2})
    local b = epoch(it)[1]
    local function coord(d, n, m)
      local s = (d + 0.5) * n / m - 0.5
      if s <= 0 then return 0, 0, 0 end
      local i = math.floor(s)
      if i >= n - 1 then return n - 1, n - 1, 0 end
      return i, i + 1, s - i
    end
    for r = 1, 2 do
      local i, e = r - 1, {}
      for k = 0, 2 do
        for y = 0, 2 do
          local y0, y1, fy = coord(y, IH, 3)
          for x = 0, 3 do
            local x0, x1, fx = coord(x, IW, 4)
            local c = 2 - k
            local top = F.px(i, y0, x0, c) * (1 - fx) + F.px(i, y0, x1, c) * fx
            local bot = F.px(i, y1, x0, c) * (1 - fx) + F.px(i, y1, x1, c) * fx
            e[#e + 1] = math.floor(top * (1 - fy) + bot * fy + 0.5)
          end
        end
      end
      H.near(b.data[r], e, 1) -- float32 vs double rounding at .5 may move one unit
    end
  end)

  it('reads label arrays with label_width, and says when the width does not match', function()
    local dir = tmpdir()
    local prefix = F.build(dir, 'multi', {label = function(i) return {i, 100 + i} end})
    local it = mx.io.ImageRecordIter(opts{path_imgrec = prefix .. '.rec', label_width = 2, batch_size = 5})
    assert.same({5, 2}, it.provide_label[1].shape)
    local b = it:next()
    assert.same({0, 100, 1, 101, 2, 102, 3, 103, 4, 104}, b.label[1]:toflat())
    local bad = mx.io.ImageRecordIter(opts{path_imgrec = prefix .. '.rec', label_width = 3})
    H.raises(function() bad:next() end, 'ImageRecordIter', prefix .. '.rec', 'offset 0',
             'it holds 2 labels but label_width is 3')
    local scalar = mx.io.ImageRecordIter(opts{label_width = 2})
    H.raises(function() scalar:next() end, 'label_width > 1 needs records packed with a label array')
    os.execute(('rm -r %q'):format(dir))
  end)

  it('reports bad records with file and offset, skips that batch and stays usable', function()
    local dir = tmpdir()
    local rec = slurp(FIX .. '.rec')
    -- record 5 (offset 628): break its PNG signature (8 header + 24 IRHeader bytes in)
    local off = 628 + 8 + 24
    local f = assert(io.open(dir .. '/c.rec', 'wb'))
    f:write(rec:sub(1, off) .. 'XXXX' .. rec:sub(off + 5))
    f:close()
    local it = mx.io.ImageRecordIter(opts{path_imgrec = dir .. '/c.rec', path_imgidx = FIX .. '.idx'})
    assert.equal(0, it:next().label[1]:toflat()[1])
    H.raises(function() it:next() end, 'ImageRecordIter', dir .. '/c.rec', 'offset 628', 'cannot decode the image',
             'not a JPEG or PNG image')
    assert.equal(8, it:next().label[1]:toflat()[1])
    assert.is_nil(it:next())
    it:reset()
    assert.equal(0, it:next().label[1]:toflat()[1])
    -- a broken magic: the scan at creation names the offset
    f = assert(io.open(dir .. '/m.rec', 'wb'))
    f:write(rec:sub(1, 252) .. 'ZZZZ' .. rec:sub(257))
    f:close()
    H.raises(function() mx.io.ImageRecordIter(opts{path_imgrec = dir .. '/m.rec'}) end,
             dir .. '/m.rec', 'offset 252', 'bad magic')
    os.execute(('rm -r %q'):format(dir))
  end)

  it('checks its parameters', function()
    H.raises(function() mx.io.ImageRecordIter(opts{path_imgrec = FIX .. '.nope'}) end,
             'cannot open path_imgrec', '.nope')
    H.raises(function() mx.io.ImageRecordIter(opts{data_shape = {3, 4}}) end, 'data_shape must be {channels, height, width}')
    H.raises(function() mx.io.ImageRecordIter(opts{data_shape = {2, 4, 4}}) end, 'data_shape must have 1 or 3 channels, got 2')
    H.raises(function() mx.io.ImageRecordIter(opts{data_shape = {3, 7, 6}}):next() end,
             'the image is 6x8 (HxW) after resize, smaller than data_shape 7x6')
    H.raises(function() mx.io.ImageRecordIter(opts{batch_size = 0}) end, 'batch_size must be >= 1, got 0')
    H.raises(function() mx.io.ImageRecordIter(opts{num_parts = 2, part_index = 2}) end, 'part_index=2')
    H.raises(function() mx.io.ImageRecordIter(opts{std_g = 0}) end, 'std of channel 1 must be > 0')
    H.raises(function() mx.io.ImageRecordIter(opts{rand_crpo = true}) end, 'unknown parameter rand_crpo')
    H.raises(function() mx.io.ImageRecordIter(opts{preprocess_threads = 0}) end, 'preprocess_threads must be in 1..256')
    H.raises(function() mx.io.ImageRecordIter(opts{last_batch_handle = 'roll_over'}) end,
             "last_batch_handle must be 'pad' or 'discard', got roll_over")
    -- -1 is "no resize" in MXNet's terms: other negatives are refused in those terms
    H.raises(function() mx.io.ImageRecordIter(opts{resize = 0}) end, 'resize must be > 0, or -1 for none, got 0')
    H.raises(function() mx.io.ImageRecordIter(opts{resize = -5}) end, 'resize must be > 0, or -1 for none, got -5')
  end)

  it('decodes gray for one channel', function()
    local it = mx.io.ImageRecordIter(opts{data_shape = {1, 6, 8}, batch_size = 1})
    local b = it:next()
    local r = rio.MXIndexedRecordIO(FIX .. '.idx', FIX .. '.rec', 'r')
    local _, gray = rio.unpack_img(r:read_idx(0), 0)
    r:close()
    assert.same(gray:toflat(), b.data[1]:toflat())
  end)

  it('feeds Module:fit for one epoch', function()
    mx.random.seed(2)
    local it = mx.io.ImageRecordIter(opts{scale = 1 / 255, rand_mirror = true, shuffle = true, seed = 1})
    local data = mx.sym.Variable('data')
    local fc = mx.sym.FullyConnected{data = mx.sym.Flatten{data = data}, num_hidden = N, name = 'fc'}
    local mod = mx.mod.Module{symbol = mx.sym.SoftmaxOutput{data = fc, name = 'softmax'}, logger = function() end}
    local batches = 0
    mod:fit(it, {num_epoch = 1, optimizer_params = {learning_rate = 0.1},
                 batch_end_callback = function() batches = batches + 1 end})
    assert.equal(3, batches)
    local args = mod:get_params()
    assert.same({N, 72}, args.fc_weight.shape)
    assert.truthy(args.fc_bias:abs():sum():asscalar() > 0, 'the bias moved from its zero start')
  end)
end)
