-- mx.nd.save / mx.nd.load: MXNet's NDArray-list format (MXNET-SEMANTICS §4), round trips,
-- byte-exact output, old record versions, hostile files and atomic writes.
local ffi = require 'ffi'
local mx = require 'luamx'
local C = mx.capi.C
local libc = ffi.C

pcall(ffi.cdef, [[
  int getpid(void);
  unsigned int getuid(void);
  typedef void (*luamx_spec_sighandler)(int);
  luamx_spec_sighandler signal(int sig, luamx_spec_sighandler handler);
  struct luamx_spec_rlimit { uint64_t cur, max; };
  int getrlimit(int resource, struct luamx_spec_rlimit *rl) __asm__("getrlimit");
  int setrlimit(int resource, const struct luamx_spec_rlimit *rl) __asm__("setrlimit");
]])

-- ------------------------------------------------------------------- helpers ----
local function raises(fn, ...)
  local ok, err = pcall(fn)
  assert(not ok, 'expected an error, but the call succeeded')
  err = tostring(err)
  for _, frag in ipairs {...} do
    assert(err:find(frag, 1, true), ('error message %q does not contain %q'):format(err, frag))
  end
  return err
end

local function read(path)
  local f = assert(io.open(path, 'rb'))
  local s = f:read('*a')
  f:close()
  return s
end

local function write(path, bytes)
  local f = assert(io.open(path, 'wb'))
  f:write(bytes)
  f:close()
end

local function listdir(dir)
  local p = io.popen('ls -A "' .. dir .. '"')
  local names = {}
  for line in p:lines() do names[#names + 1] = line end
  p:close()
  return names
end

local function tempdir()
  local d = os.tmpname()
  os.remove(d)
  os.execute('mkdir -p "' .. d .. '"')
  return d
end

-- Little-endian encoders (the host is little-endian, as ndfile.c requires).
local function u32(v) return ffi.string(ffi.new('uint32_t[1]', v), 4) end
local function i32(v) return ffi.string(ffi.new('int32_t[1]', v), 4) end
local function u64(v) return ffi.string(ffi.new('uint64_t[1]', v), 8) end
local function i64(v) return ffi.string(ffi.new('int64_t[1]', v), 8) end
local function f32s(t) return ffi.string(ffi.new('float[?]', #t, t), 4 * #t) end
local function f64s(t) return ffi.string(ffi.new('double[?]', #t, t), 8 * #t) end
local function i32s(t) return ffi.string(ffi.new('int32_t[?]', #t, t), 4 * #t) end

local V1, V2, V3 = 0xF993FAC8, 0xF993FAC9, 0xF993FACA

--- A V1/V2/V3 record: opts.magic, opts.stype, opts.dev_type, opts.dev_id.
local function record(shape, dtype, data, opts)
  opts = opts or {}
  local magic = opts.magic or V2
  local s = u32(magic)
  if magic ~= V1 then s = s .. i32(opts.stype or 0) end
  s = s .. i32(opts.ndim or #shape)
  for _, d in ipairs(shape) do s = s .. i64(d) end
  return s .. i32(opts.dev_type or 1) .. i32(opts.dev_id or 0) .. i32(dtype) .. data
end

local function v0record(shape, dtype, data)
  local s = u32(#shape)
  for _, d in ipairs(shape) do s = s .. u32(d) end
  return s .. i32(1) .. i32(0) .. i32(dtype) .. data
end

local function listfile(records, names)
  local s = u64(0x112) .. u64(0) .. u64(#records) .. table.concat(records)
  names = names or {}
  s = s .. u64(#names)
  for _, n in ipairs(names) do s = s .. u64(#n) .. n end
  return s
end

--- Parses bytes with lmx_ndarray_load_buffer: true, or nil + message + status.
local function load_buf(bytes, name)
  local out = ffi.new('lmx_ndlist *[1]')
  local rc = C.lmx_ndarray_load_buffer(bytes, #bytes, name, out)
  if rc ~= 0 then return nil, ffi.string(C.lmx_last_error()), rc end
  C.lmx_ndlist_free(out[0])
  return true
end

local function hostile(bytes, status, msg)
  local ok, err, rc = load_buf(bytes, 'bad.params')
  assert.is_nil(ok)
  assert.are.equal(status, rc)
  assert.are.equal('bad.params: ' .. msg, err)
end

local FORMAT, UNSUPPORTED = tonumber(C.LMX_ERR_FORMAT), tonumber(C.LMX_ERR_UNSUPPORTED)

-- The worked example of MXNET-SEMANTICS §4: float32 [1, 2] named arg:w, 85 bytes.
local WORKED = listfile({record({2}, 0, f32s {1, 2})}, {'arg:w'})

local function same_array(a, b)
  assert.are.same(a.shape, b.shape)
  assert.are.equal(a.dtype, b.dtype)
  assert.are.same(a:toflat(), b:toflat())
end

-- ----------------------------------------------------------------------- specs ---
describe('mx.nd.save / mx.nd.load', function()
  local dir
  before_each(function() dir = tempdir() end)
  after_each(function() os.execute('chmod -R u+w "' .. dir .. '" && rm -rf "' .. dir .. '"') end)

  it('loads the legacy V0 fixture written by MXNet', function()
    local root = os.getenv('LUAMX_FIXTURES') or (os.getenv('LUAMX_SOURCE_DIR') .. '/spec/fixtures')
    local t = mx.nd.load(root .. '/mxnet/legacy_ndarray.v0')
    assert.are.equal(6, #t)
    local expected = {}
    for i = 1, 128 do expected[i] = i - 1 end
    for i = 1, 6 do
      assert.are.same({128}, t[i].shape)
      assert.are.equal('float32', t[i].dtype)
      assert.are.same(expected, t[i]:toflat())
    end
  end)

  local function sample_arrays()
    local list = {
      mx.nd.array({{1.5, -2.25}, {3, 1e30}}, {dtype = 'float32'}),
      mx.nd.array({math.pi, -1e300, 2 ^ -1074}, {dtype = 'float64'}),
      mx.nd.array({0.5, -2, 1024, 65504, 2 ^ -24}, {dtype = 'float16'}),
      mx.nd.array({0, 1, 255}, {dtype = 'uint8'}),
      mx.nd.array({-2 ^ 31, 2 ^ 31 - 1, 7}, {dtype = 'int32'}),
      mx.nd.array({-128, 127, 0}, {dtype = 'int8'}),
      mx.nd.array({-2 ^ 53, 2 ^ 53, -1}, {dtype = 'int64'}),
      mx.nd.zeros({}):fill(3.5),                       -- 0-d
      mx.nd.zeros({0}, {dtype = 'int32'}),             -- empty
      mx.nd.zeros({2, 0, 3}, {dtype = 'float64'}),      -- empty, 3-D
      mx.nd.arange(24):reshape({2, 1, 3, 1, 2, 2}),     -- 6-D
    }
    return list
  end

  it('round-trips a list exactly for every dtype and for 0-d, empty and 6-D arrays', function()
    local list = sample_arrays()
    local path = dir .. '/list.params'
    mx.nd.save(path, list)
    local back = mx.nd.load(path)
    assert.are.equal(#list, #back)
    for i = 1, #list do
      same_array(list[i], back[i])
      assert.are.equal(mx.cpu(0), back[i].context)
    end
    assert.are.same({}, back[8].shape)
    assert.are.equal(3.5, back[8]:tonumber())
  end)

  it('round-trips a name -> NDArray table exactly, with names sorted in the file', function()
    local list = sample_arrays()
    local t = {}
    for i, a in ipairs(list) do t[('arg:p%02d'):format(i)] = a end
    local path = dir .. '/named.params'
    mx.nd.save(path, t)
    local back = mx.nd.load(path)
    local n = 0
    for k, a in pairs(back) do
      n = n + 1
      same_array(t[k], a)
    end
    assert.are.equal(#list, n)
    -- names are written sorted: the table's order cannot change the file
    local bytes = read(path)
    local tail = ''
    for i = 1, #list do tail = tail .. u64(7) .. ('arg:p%02d'):format(i) end
    assert.are.equal(u64(#list) .. tail, bytes:sub(-#tail - 8))
  end)

  it('writes the worked example of MXNET-SEMANTICS §4 byte for byte', function()
    local path = dir .. '/w.params'
    mx.nd.save(path, {['arg:w'] = mx.nd.array({1, 2})})
    local bytes = read(path)
    assert.are.equal(85, #bytes)
    local hex = '1201000000000000' .. '0000000000000000' .. '0100000000000000' .. 'c9fa93f9' ..
      '00000000' .. '01000000' .. '0200000000000000' .. '01000000' .. '00000000' .. '00000000' ..
      '0000803f00000040' .. '0100000000000000' .. '0500000000000000' .. '6172673a77'
    assert.are.equal(hex, (bytes:gsub('.', function(c) return ('%02x'):format(c:byte()) end)))
    assert.are.equal(WORKED, bytes)
  end)

  it('saves an empty table as an empty list, and a 0-d array as a V3 record', function()
    local path = dir .. '/e.params'
    mx.nd.save(path, {})
    assert.are.equal(listfile({}), read(path))
    assert.are.same({}, mx.nd.load(path))
    mx.nd.save(path, {mx.nd.zeros({}, {dtype = 'float64'}):fill(-1)})
    assert.are.equal(listfile({record({}, 1, f64s {-1}, {magic = V3})}), read(path))
  end)

  it('records the array\'s real context and loads it on cpu(0)', function()
    local path = dir .. '/c.params'
    mx.nd.save(path, {mx.nd.array({1, 2}, {ctx = mx.cpu(3)})})
    assert.are.equal(listfile({record({2}, 0, f32s {1, 2}, {dev_id = 3})}), read(path))
    assert.are.equal(mx.cpu(0), mx.nd.load(path)[1].context)
  end)

  it('saves GPU arrays from a CPU copy, recording the GPU context', function()
    if mx.context.num_gpus() == 0 then return pending('no GPU') end
    local path = dir .. '/g.params'
    mx.nd.save(path, {mx.nd.array({1, 2}, {ctx = mx.gpu(0)})})
    assert.are.equal(listfile({record({2}, 0, f32s {1, 2}, {dev_type = 2})}), read(path))
    assert.are.same({1, 2}, mx.nd.load(path)[1]:toflat())
  end)

  it('saves and loads bfloat16 with MXNet\'s type code 12, bit for bit', function()
    local path = dir .. '/bf.params'
    -- bfloat16 is the top half of a float32: 1 = 0x3f80, -2 = 0xc000, 3.140625 = 0x4049
    local bits = ffi.string(ffi.new('uint16_t[3]', {0x3f80, 0xc000, 0x4049}), 6)
    mx.nd.save(path, {w = mx.nd.array({1, -2, 3.14159}, {dtype = 'bfloat16'})})
    assert.are.equal(listfile({record({3}, 12, bits)}, {'w'}), read(path))
    write(path, listfile({record({3}, 12, bits)}, {'w'}))
    local w = mx.nd.load(path).w
    assert.are.equal('bfloat16', w.dtype)
    assert.are.same({1, -2, 3.140625}, w:toflat())
  end)

  it('loads hand-built V0, V1 and V3 records, none arrays and GPU contexts', function()
    local path = dir .. '/old.params'
    write(path, listfile({
      v0record({2, 2}, 4, i32s {1, 2, 3, 4}),
      record({2, 3}, 1, f64s {1, 2, 3, 4, 5, 6}, {magic = V1}),
      record({}, 0, '', {magic = V1}):sub(1, 8),                 -- V1 none: ndim 0 only
      record({3}, 0, f32s {7, 8, 9}, {magic = V3}),
      record({}, 0, f32s {42}, {magic = V3}),                   -- V3 scalar
      u32(V3) .. i32(-1) .. i32(-1),                             -- V3 none
      u32(V2) .. i32(-1) .. i32(0),                              -- V2 none
      record({1}, 0, f32s {5}, {dev_type = 2, dev_id = 1}),      -- gpu(1) -> cpu(0)
    }, {'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'}))
    local t = mx.nd.load(path)
    assert.are.same({{1, 2}, {3, 4}}, t.a:totable())
    assert.are.equal('int32', t.a.dtype)
    assert.are.same({{1, 2, 3}, {4, 5, 6}}, t.b:totable())
    assert.are.equal('float64', t.b.dtype)
    assert.are.same({7, 8, 9}, t.d:toflat())
    assert.are.same({}, t.e.shape)
    assert.are.equal(42, t.e:tonumber())
    for _, k in ipairs {'c', 'f', 'g'} do
      assert.are.same({0}, t[k].shape)
      assert.are.equal('float32', t[k].dtype)
    end
    assert.are.same({5}, t.h:toflat())
    assert.are.equal(mx.cpu(0), t.h.context)
  end)

  it('fails cleanly on a file truncated at every byte offset', function()
    local path = dir .. '/cut.params'
    for cut = 0, #WORKED - 1 do
      write(path, WORKED:sub(1, cut))
      local err = raises(function() mx.nd.load(path) end, path .. ': ', 'truncated')
      assert.is_truthy(err:find('file has ' .. cut, 1, true) or
                       err:find(cut - 24 .. ' bytes follow', 1, true), err)
    end
    local big = listfile({v0record({2}, 0, f32s {1, 2}), record({2, 1}, 4, i32s {3, 4}),
                          record({1}, 1, f64s {5}, {magic = V1}), record({}, 6, i64(9), {magic = V3})},
                         {'a', 'bb', 'c', ''})
    assert.is_true(load_buf(big, 'big.params'))
    for cut = 0, #big - 1 do
      local ok, err, rc = load_buf(big:sub(1, cut), 'big.params')
      assert.is_nil(ok)
      assert.are.equal(FORMAT, rc)
      assert.is_truthy(err:find('^big%.params: ') and err:find('truncated', 1, true), err)
    end
  end)

  it('names the field and offsets when a file is truncated', function()
    local p = dir .. '/t.params'
    local cases = {
      [0] = 'truncated header (need 8 bytes at offset 0, file has 0)',
      [10] = 'truncated header (need 8 bytes at offset 8, file has 10)',
      [24] = 'array count 1 is impossible: 0 bytes follow at offset 24 and each array takes ' ..
             'at least 4 (truncated or corrupt file)',
      [40] = 'array 0: truncated dims (need 8 bytes at offset 36, file has 40)',
      [60] = 'array 0: truncated data (need 8 bytes at offset 56, file has 60)',
      [64] = 'truncated name count (need 8 bytes at offset 64, file has 64)',
      [82] = 'name 0: truncated name (need 5 bytes at offset 80, file has 82)',
    }
    for cut, msg in pairs(cases) do
      write(p, WORKED:sub(1, cut))
      local err = raises(function() mx.nd.load(p) end)
      assert.are.equal(p .. ': ' .. msg, err:match('^.-:%d+: (.*)$') or err)
    end
  end)

  it('rejects hostile files with a message naming the problem', function()
    local ok1 = record({2}, 0, f32s {1, 2})
    hostile(u64(0x113) .. WORKED:sub(9), FORMAT,
            'bad magic 0x113 (expected 0x112): not an MXNet NDArray-list file')
    hostile(listfile({ok1, ok1}, {'x'}), FORMAT,
            'name count 1 must be 0 (a list) or 2 (the array count)')
    hostile(listfile({ok1}, {'x', 'y'}), FORMAT,
            'name count 2 must be 0 (a list) or 1 (the array count)')
    hostile(u64(0x112) .. u64(0) .. u64(0x4000000000000000ULL) .. ok1 .. u64(0), FORMAT,
            'array count 4611686018427387904 is impossible: 48 bytes follow at offset 24 and ' ..
            'each array takes at least 4 (truncated or corrupt file)')
    hostile(listfile({u32(V2) .. i32(0) .. i32(1000)}), FORMAT,
            'array 0: ndim 1000 is out of range (0..8)')
    hostile(listfile({u32(V2) .. i32(0) .. i32(-3)}), FORMAT, 'array 0: ndim -3 is out of range (0..8)')
    hostile(listfile({u32(0xDEADBEEF) .. ok1}), FORMAT,
            'array 0: ndim 3735928559 is out of range (0..8) (no known array magic, so the ' ..
            'record was read as V0, whose first word is the ndim)')
    hostile(listfile({record({2, -5}, 0, '')}), FORMAT, 'array 0: dim 2 is negative (-5)')
    hostile(listfile({record({2 ^ 40, 2 ^ 40, 2 ^ 40}, 0, '')}), FORMAT,
            'array 0: shape (1099511627776,1099511627776,1099511627776) is too large (the ' ..
            'product of its nonzero dims exceeds 576460752303423487)')
    -- a zero dim does not hide the others: (0, 2^62, 4) would give (2^62, 4) after a
    -- reduction over its first axis, a size that wraps (fuzz_params checks every loaded array)
    hostile(listfile({record({0, 2 ^ 62, 4}, 0, '')}), FORMAT,
            'array 0: shape (0,4611686018427387904,4) is too large (the product of its nonzero ' ..
            'dims exceeds 576460752303423487)')
    hostile(listfile({record({2 ^ 30, 2 ^ 20}, 0, f32s {1})}), FORMAT,
            'array 0: truncated data (need 4503599627370496 bytes at offset 64, file has 76)')
    hostile(listfile({record({2}, 42, f32s {1, 2})}), FORMAT,
            'array 0: unknown dtype code 42 (expected 0..6 or 12)')
    hostile(listfile({record({2}, 7, '\1\0')}), UNSUPPORTED,
            'array 0: dtype bool (code 7) is not supported')
    hostile(listfile({record({1}, 11, u64(1))}), UNSUPPORTED,
            'array 0: dtype uint64 (code 11) is not supported')
    hostile(listfile({record({2}, 13, '\1\0\1\0')}), FORMAT,
            'array 0: unknown dtype code 13 (expected 0..6 or 12)')
    hostile(listfile({record({2}, 0, f32s {1, 2}, {dev_type = 9})}), FORMAT,
            'array 0: unknown device type 9 (expected 1 cpu, 2 gpu, 3 cpu_pinned or 5 cpu_shared)')
    hostile(listfile({ok1, record({2}, 0, f32s {1, 2}, {stype = 1})}), UNSUPPORTED,
            'array 1: sparse storage type row_sparse (1) is not supported; only dense arrays ' ..
            'load (convert it with tostype(\'default\') before saving)')
    hostile(listfile({record({2}, 0, f32s {1, 2}, {stype = 2})}), UNSUPPORTED,
            'array 0: sparse storage type csr (2) is not supported; only dense arrays load ' ..
            '(convert it with tostype(\'default\') before saving)')
    hostile(listfile({record({2}, 0, f32s {1, 2}, {stype = 5})}), FORMAT,
            'array 0: unknown storage type 5 (expected 0 dense, 1 row_sparse or 2 csr)')
    hostile(listfile({record({2, -1}, 0, f32s {1, 2}, {magic = V3})}), FORMAT,
            'array 0: dim 2 is unknown (-1): an array whose shape is not fully known cannot be loaded')
    hostile(listfile({ok1}):sub(1, -9) .. u64(1) .. u64(2 ^ 40) .. 'x', FORMAT,
            'name 0: truncated name (need 1099511627776 bytes at offset 80, file has 81)')
    hostile(listfile({ok1}, {'a\0b'}), FORMAT, 'name 0: the name contains a NUL byte')
    hostile(WORKED .. 'abc', FORMAT, '3 bytes of trailing garbage at offset 85 (file has 88)')
  end)

  it('gives an error naming a missing file', function()
    local p = dir .. '/missing.params'
    raises(function() mx.nd.load(p) end, p .. ': cannot open for reading: No such file or directory')
  end)

  it('checks its arguments and names the bad element or key', function()
    local a = mx.nd.array({1})
    local p = dir .. '/x.params'
    raises(function() mx.nd.save(42, {a}) end, 'mx.nd.save: path must be a string, got number')
    raises(function() mx.nd.save(p, a) end, 'mx.nd.save: arrays must be a list or a name -> NDArray table, got an NDArray')
    raises(function() mx.nd.save(p, {a, 'x'}) end, 'mx.nd.save: element [2] must be an NDArray, got string')
    raises(function() mx.nd.save(p, {a, w = a}) end, "mx.nd.save: arrays is a list (it has element [1]) but also has key 'w'")
    raises(function() mx.nd.save(p, {w = a, [2] = a}) end, 'mx.nd.save: key 2 (a number) is not a string')
    raises(function() mx.nd.save(p, {w = a, v = {}}) end, "mx.nd.save: value for 'v' must be an NDArray, got a table")
    local b = mx.nd.array({2})
    b:free()
    raises(function() mx.nd.save(p, {a, b}) end, 'mx.nd.save: element [2] has been freed')
    raises(function() mx.nd.load(nil) end, 'mx.nd.load: path must be a string, got nil')
    -- the error is raised at the caller's level, not inside files.lua
    raises(function() mx.nd.load(dir .. '/none') end, 'files_spec.lua:')
  end)

  -- ------------------------------------------------------------- atomic writes ----
  local function assert_untouched(path, old)
    assert.are.equal(old, read(path))
    assert.are.same({'old.params'}, listdir(dir))
  end

  it('leaves the old file and no temporary behind when an array is invalid', function()
    local path = dir .. '/old.params'
    write(path, WORKED)
    raises(function() mx.nd.save(path, {mx.nd.array({1}), 3}) end, 'element [2]')
    assert_untouched(path, WORKED)
  end)

  it('leaves the old file and no temporary behind when the directory is not writable', function()
    if libc.getuid() == 0 then return pending('running as root: permissions do not apply') end
    local path = dir .. '/old.params'
    write(path, WORKED)
    os.execute('chmod a-w "' .. dir .. '"')
    raises(function() mx.nd.save(path, {mx.nd.array({5})}) end,
           path .. ': cannot create temporary file ' .. path .. '.tmp.', 'Permission denied')
    os.execute('chmod u+w "' .. dir .. '"')
    assert_untouched(path, WORKED)
  end)

  it('removes the temporary when a write fails midway (file size limit)', function()
    if ffi.os ~= 'Linux' then return pending('RLIMIT_FSIZE numbers are Linux ones') end
    local path = dir .. '/old.params'
    write(path, WORKED)
    local big = mx.nd.zeros({10000})
    local RLIMIT_FSIZE, SIGXFSZ = 1, 25
    local old = ffi.new('struct luamx_spec_rlimit')
    assert.are.equal(0, libc.getrlimit(RLIMIT_FSIZE, old))
    local prev = libc.signal(SIGXFSZ, ffi.cast('luamx_spec_sighandler', 1)) -- SIG_IGN
    local lim = ffi.new('struct luamx_spec_rlimit', {1000, old.max})
    assert.are.equal(0, libc.setrlimit(RLIMIT_FSIZE, lim))
    local ok, err = pcall(mx.nd.save, path, {big})
    libc.setrlimit(RLIMIT_FSIZE, old)
    libc.signal(SIGXFSZ, prev)
    assert.is_false(ok)
    assert.is_truthy(err:find(path .. ': cannot write temporary file ' .. path .. '.tmp.' .. libc.getpid(), 1, true), err)
    assert.is_truthy(err:find('File too large', 1, true), err)
    assert_untouched(path, WORKED)
  end)

  it('removes the temporary when the rename fails (target is a directory)', function()
    local path = dir .. '/target'
    os.execute('mkdir "' .. path .. '"')
    raises(function() mx.nd.save(path, {mx.nd.array({1})}) end,
           path .. ': cannot rename temporary file ' .. path .. '.tmp.', 'Is a directory')
    assert.are.same({'target'}, listdir(dir))
    raises(function() mx.nd.load(path) end, path .. ': not a regular file')
  end)

  it('replaces an existing file on success and leaves no temporary', function()
    local path = dir .. '/old.params'
    write(path, 'previous contents')
    mx.nd.save(path, {['arg:w'] = mx.nd.array({1, 2})})
    assert.are.equal(WORKED, read(path))
    assert.are.same({'old.params'}, listdir(dir))
  end)
end)
