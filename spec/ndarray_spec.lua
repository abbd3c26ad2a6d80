-- mx.nd: creation, inspection, views, copies, dtypes, contexts, arithmetic, printing.
local mx = require 'luamx'
local H = require 'helpers'

describe('mx.nd creation', function()
  it('builds arrays from nested tables', function()
    local a = mx.nd.array {{1, 2, 3}, {4, 5, 6}}
    assert.are.same({2, 3}, a.shape)
    assert.are.equal(2, a.ndim)
    assert.are.equal(6, a.size)
    assert.are.equal('float32', a.dtype)
    assert.are.equal(mx.cpu(0), a.context)
    assert.are.same({{1, 2, 3}, {4, 5, 6}}, a:totable())
  end)

  it('supports zeros, ones, full, empty, arange with options', function()
    assert.are.same({0, 0, 0}, mx.nd.zeros {3}:totable())
    assert.are.same({{1, 1}}, mx.nd.ones({1, 2}, {dtype = 'int32'}):totable())
    assert.are.equal('int32', mx.nd.ones({1, 2}, {dtype = 'int32'}).dtype)
    assert.are.same({7.5, 7.5}, mx.nd.full({2}, 7.5, {dtype = 'float64'}):totable())
    assert.are.same({2, 2}, mx.nd.empty {2, 2}.shape)
    assert.are.same({0, 1, 2, 3}, mx.nd.arange(0, 4):totable())
    assert.are.same({1, 3}, mx.nd.arange(1, 5, 2):totable())
    assert.are.same({0, 1, 2}, mx.nd.arange(3):totable())
  end)

  it('holds every dtype with its conversions', function()
    local vals = {-3, 0, 1, 100}
    for _, dt in ipairs {'float32', 'float64', 'float16', 'int32', 'int64', 'int8'} do
      local a = mx.nd.array(vals, {dtype = dt})
      assert.are.equal(dt, a.dtype)
      assert.are.same(vals, a:totable())
    end
    assert.are.same({0, 0, 1, 100}, mx.nd.array(vals, {dtype = 'uint8'}):totable())
    -- float16 rounds to 11 significant bits, ties to even
    assert.are.same({2048, 2048, 2052, 2052, 65504}, mx.nd.array({2048, 2049, 2051, 2053, 65504}, {dtype = 'float16'}):totable())
    assert.are.equal(math.huge, mx.nd.array({1e6}, {dtype = 'float16'}):tonumber())
    assert.are.same({2 ^ -24, 0, 2 ^ -23, 3 * 2 ^ -24, 2 ^ -14, -2 ^ -15},
      mx.nd.array({2 ^ -24, 2 ^ -26, 1.5 * 2 ^ -24, 3 * 2 ^ -24, 2 ^ -14, -2 ^ -15}, {dtype = 'float16'}):totable())
  end)

  it('supports 8 dimensions and zero-size arrays', function()
    local a = mx.nd.ones {1, 2, 1, 2, 1, 2, 1, 2}
    assert.are.equal(8, a.ndim)
    assert.are.equal(16, a.size)
    local e = mx.nd.zeros {0, 3}
    assert.are.equal(0, e.size)
    assert.are.same({}, e:toflat())
  end)
end)

describe('mx.nd views and copies', function()
  it('reshapes as a view sharing storage, with 0 and -1', function()
    local a = mx.nd.arange(0, 6)
    local v = a:reshape {2, -1}
    assert.are.same({2, 3}, v.shape)
    v:fill(9)
    assert.are.same({9, 9, 9, 9, 9, 9}, a:totable())
    assert.are.same({2, 3}, v:reshape {0, 3}.shape)
    assert.are.same({3, 2}, a:reshape(3, 2).shape)
  end)

  it('slices rows (1-based, inclusive) as views', function()
    local a = mx.nd.array {{1, 2}, {3, 4}, {5, 6}}
    local s = a:slice(2, 3)
    assert.are.same({{3, 4}, {5, 6}}, s:totable())
    s:set {{0, 0}, {0, 0}}
    assert.are.same({{1, 2}, {0, 0}, {0, 0}}, a:totable())
    assert.are.same({{1, 2}}, a:slice(1):totable())
  end)

  it('keeps views alive after the source is freed', function()
    local a = mx.nd.arange(0, 4)
    local v = a:reshape {2, 2}
    a:free()
    H.full_gc()
    assert.are.same({{0, 1}, {2, 3}}, v:totable())
  end)

  it('copies across dtypes and CPU contexts', function()
    local a = mx.nd.array {1.5, -2.5}
    local b = a:copyto(mx.cpu(1))
    assert.are.equal(mx.cpu(1), b.context)
    assert.are.same({1.5, -2.5}, b:totable())
    assert.are.same({1, -2}, a:astype('int32'):totable())
    local c = mx.nd.zeros({2}, {dtype = 'float64'})
    a:copyto(c)
    assert.are.same({1.5, -2.5}, c:totable())
    local d = a:copy()
    d:fill(0)
    assert.are.same({1.5, -2.5}, a:totable())
    assert.are.equal(a, a:as_in_context(mx.cpu(0)))
  end)

  it('exposes a zero-copy data pointer', function()
    local a = mx.nd.zeros {4}
    local p = a:data()
    for i = 0, 3 do p[i] = i * 10 end
    assert.are.same({0, 10, 20, 30}, a:totable())
    assert.are.equal(2, mx.nd.ones({2}, {dtype = 'float64'}):data()[1] * 2)
  end)
end)

describe('mx.nd arithmetic', function()
  local a = mx.nd.array {{1, 2}, {3, 4}}
  it('combines arrays and numbers on either side', function()
    assert.are.same({{2, 4}, {6, 8}}, (a * 2):totable())
    assert.are.same({{2, 4}, {6, 8}}, (2 * a):totable())
    assert.are.same({{0, 1}, {2, 3}}, (a - 1):totable())
    assert.are.same({{9, 8}, {7, 6}}, (10 - a):totable())
    assert.are.same({{1, 4}, {9, 16}}, (a ^ 2):totable())
    assert.are.same({{2, 4}, {8, 16}}, (2 ^ a):totable())
    H.near((1 / a):toflat(), {1, 0.5, 1 / 3, 0.25}, 1e-7)
    assert.are.same({{-1, -2}, {-3, -4}}, (-a):totable())
    assert.are.same({{2, 4}, {6, 8}}, (a + a):totable())
    assert.are.same({{1, 4}, {9, 16}}, (a * a):totable())
    assert.are.same({{1, 1}, {1, 1}}, (a / a):totable())
    assert.are.same({{3, 3}, {3, 4}}, mx.nd.maximum(a, 3):totable())
    assert.are.same({{1, 2}, {2, 2}}, mx.nd.minimum(a, mx.nd.full({2, 2}, 2)):totable())
  end)

  it('broadcasts like NumPy', function()
    local row = mx.nd.array {10, 20}
    local col = mx.nd.array {{1}, {2}, {3}}
    assert.are.same({{11, 22}, {13, 24}}, (a + row):totable())
    assert.are.same({{11, 21}, {12, 22}, {13, 23}}, (col + row):totable())
    assert.are.same({3, 2}, (col * row).shape)
    local b3 = mx.nd.ones {2, 1, 2} + mx.nd.array {{1, 2}, {3, 4}, {5, 6}}
    assert.are.same({2, 3, 2}, b3.shape)
    assert.are.same({2, 3, 4, 5, 6, 7}, b3:slice(1):reshape {6}:totable())
  end)

  it('computes dot products', function()
    local b = mx.nd.array {{5, 6}, {7, 8}}
    assert.are.same({{19, 22}, {43, 50}}, mx.nd.dot(a, b):totable())
    assert.are.same({11}, mx.nd.dot(mx.nd.array {1, 2}, mx.nd.array {3, 4}):totable())
    assert.are.same({17, 39}, mx.nd.dot(a, mx.nd.array {5, 6}):totable())
    local t3 = mx.nd.ones {2, 3, 4}
    assert.are.same({2, 3, 5}, mx.nd.dot(t3, mx.nd.ones {4, 5}).shape)
    local d = mx.nd.dot(a:astype('float64'), b:astype('float64'))
    assert.are.equal('float64', d.dtype)
    assert.are.same({{19, 22}, {43, 50}}, d:totable())
  end)

  it('works on integer dtypes', function()
    local i = mx.nd.array({7, -7}, {dtype = 'int32'})
    assert.are.same({3, -3}, (i / 2):totable())
    assert.are.same({14, -14}, (i * 2):totable())
  end)
end)

describe('mx.random', function()
  it('repeats draws for the same seed', function()
    mx.random.seed(42)
    local u1 = mx.nd.random.uniform(-1, 1, {100}):toflat()
    local n1 = mx.nd.random.normal(0, 1, {101}, {dtype = 'float64'}):toflat()
    mx.random.seed(42)
    local u2 = mx.nd.random.uniform(-1, 1, {100}):toflat()
    local n2 = mx.nd.random.normal(0, 1, {101}, {dtype = 'float64'}):toflat()
    assert.are.same(u1, u2)
    assert.are.same(n1, n2)
    mx.random.seed(43)
    assert.are_not.same(u1, mx.nd.random.uniform(-1, 1, {100}):toflat())
  end)

  it('draws from the requested distributions', function()
    mx.random.seed(1)
    local u = mx.nd.random.uniform(2, 4, {20000}):toflat()
    local lo, hi, sum = math.huge, -math.huge, 0
    for _, v in ipairs(u) do lo = math.min(lo, v); hi = math.max(hi, v); sum = sum + v end
    assert.is_true(lo >= 2 and hi < 4)
    assert.is_true(math.abs(sum / #u - 3) < 0.02)
    local n = mx.nd.random.normal(1, 2, {20000}):toflat()
    local m, m2 = 0, 0
    for _, v in ipairs(n) do m = m + v; m2 = m2 + v * v end
    m = m / #n
    local sd = math.sqrt(m2 / #n - m * m)
    assert.is_true(math.abs(m - 1) < 0.05, 'mean ' .. m)
    assert.is_true(math.abs(sd - 2) < 0.05, 'std ' .. sd)
  end)
end)

describe('tostring', function()
  it('prints values and a footer', function()
    local s = tostring(mx.nd.array {{1, 2}, {3, 4}} * 2)
    assert.are.equal('[[2. 4.]\n [6. 8.]]\n<NDArray 2x2 float32 @cpu(0)>', s)
    assert.are.equal('[1 2]\n<NDArray 2 int32 @cpu(1)>', tostring(mx.nd.array({1, 2}, {dtype = 'int32', ctx = mx.cpu(1)})))
    assert.are.equal('[  0.5 -1.25]\n<NDArray 2 float64 @cpu(0)>', tostring(mx.nd.array({0.5, -1.25}, {dtype = 'float64'})))
  end)

  it('summarises large arrays with edge items', function()
    local s = tostring(mx.nd.arange(0, 5000))
    assert.are.equal('[   0.    1.    2. ... 4997. 4998. 4999.]\n<NDArray 5000 float32 @cpu(0)>', s)
    local m = tostring(mx.nd.zeros {100, 100})
    assert.is_truthy(m:find('...', 1, true))
    assert.is_true(#m < 400)
  end)
end)

describe('memory', function()
  it('frees handles explicitly and by the garbage collector', function()
    H.full_gc()
    local before = H.live_blocks()
    do
      local tmp = {}
      for i = 1, 50 do tmp[i] = mx.nd.zeros {10, 10} + i end
    end
    H.full_gc()
    assert.are.equal(before, H.live_blocks())
    local a = mx.nd.zeros {1000}
    a:free()
    a:free() -- a second free is a no-op
    assert.are.equal(before, H.live_blocks())
    assert.are.equal('<NDArray freed>', tostring(a))
  end)

  it('collects garbage when live arrays hold much memory', function()
    H.full_gc()
    local before = H.live_blocks()
    -- 2 GB worth of 16 MB arrays created and dropped: without the nudge this would
    -- exhaust memory long before Lua's own collector noticed.
    for _ = 1, 128 do local _ = mx.nd.zeros {4, 1024, 1024} end
    H.full_gc()
    assert.are.equal(before, H.live_blocks())
  end)

  it('lmx_ndarray_nbytes (the memory account reads it) gives the elements\' bytes', function()
    local C = mx.capi.C
    assert.are.equal(24, C.lmx_ndarray_nbytes(mx.nd.zeros{2, 3}._h))
    assert.are.equal(48, C.lmx_ndarray_nbytes(mx.nd.zeros({2, 3}, {dtype = 'float64'})._h))
    assert.are.equal(6, C.lmx_ndarray_nbytes(mx.nd.zeros({2, 3}, {dtype = 'uint8'})._h))
    local big = mx.nd.zeros{1024, 1025} -- past the one-block size: another storage path
    assert.are.equal(1024 * 1025 * 4, C.lmx_ndarray_nbytes(big._h))
    assert.are.equal(4 * 1025, C.lmx_ndarray_nbytes(big[2]._h)) -- a view: its own bytes
    assert.are.equal(0, C.lmx_ndarray_nbytes(nil))
  end)

  it('a small array outlives its first handle through a view (one block for both)', function()
    local a = mx.nd.array{1, 2, 3, 4, 5, 6}
    local v = a:reshape{2, 3}
    a:free() -- the header lies in the storage's block: the block stays for the view
    collectgarbage('collect')
    local w = mx.nd.zeros{6} + 9 -- reuses freed blocks of this size, never the live one
    assert.are.same({{1, 2, 3}, {4, 5, 6}}, v:totable())
    assert.are.same({9, 9, 9, 9, 9, 9}, w:toflat())
  end)
end)
