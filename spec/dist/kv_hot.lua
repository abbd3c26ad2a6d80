-- Worker of dist_hot_spec: the hot pushpull (a large key without an updater reduced
-- straight into the output in chunks of LUAMX_DIST_HOT_BYTES, each chunk then copied into
-- the stored value) against the plain path of a store with LUAMX_DIST_HOT_BYTES=0, for
-- every dtype, at sizes below one chunk, of exactly whole chunks, one element past a
-- chunk and several chunks with an odd remainder; the output apart from the pushed array
-- and the same array; a later pull; keys of a list (fused small keys beside hot ones);
-- outputs that alias other arrays of the call (the plain order must show); an output of
-- another dtype, two outputs and a key given twice (plain path). Data: small integers (times 1/4 for floats)
-- so that every sum is exact whatever order MPI adds in; on 2 workers also random floats
-- (a + b is the same bits as b + a). Every result is compared bit for bit with the plain
-- store's and with the sum computed here. Prints "R<rank> OK <what>"; a failed check raises.
-- Run with LUAMX_DIST_SMALL_BYTES=4096 LUAMX_DIST_CHUNK_BYTES=65536 (keys from 4 KiB are large).
local mx = require 'luamx'
local ffi = require 'ffi'
ffi.cdef 'int setenv(const char *, const char *, int);'

local function store(hot)
  ffi.C.setenv('LUAMX_DIST_HOT_BYTES', hot, 1)
  return mx.kv.create('dist_sync')
end
-- plain (hot off), hot in chunks of 5000 bytes (not a multiple of 8), and the default
-- (1 MiB, held to the 64 KiB chunk of this run)
local plain, hot5k, hotdef = store('0'), store('5000'), store('1048576')
local stores = {hot5k = hot5k, hotdef = hotdef}
local r, n = plain.rank, plain.num_workers
local function ok(what) io.write(('R%d OK %s\n'):format(r, what)) io.flush() end

local ESZ = {float32 = 4, float64 = 8, float16 = 2, uint8 = 1, int32 = 4, int8 = 1, int64 = 8}
local FLOAT = {float32 = true, float64 = true, float16 = true}

local function bytes_of(a)
  return ffi.string(a:data(), a.size * ESZ[a.dtype])
end

local function first_diff(want, got, what)
  local w, g = want:toflat(), got:toflat()
  for i = 1, #w do
    if w[i] ~= g[i] and not (w[i] ~= w[i] and g[i] ~= g[i]) then
      error(('rank %d: %s: element %d is %s, expected %s'):format(r, what, i, tostring(g[i]), tostring(w[i])), 2)
    end
  end
  if bytes_of(want) ~= bytes_of(got) then error(('rank %d: %s: the bits differ'):format(r, what), 2) end
end

-- rank q's values of a key: exact small numbers, the same on every rank for a given q
local function data(q, dt, count, seed, random)
  local t = {}
  local s = (seed * 7919 + q * 104729) % 2147483647
  local function nxt() s = (s * 48271) % 2147483647; return s end
  for i = 1, count do
    local x
    if random and FLOAT[dt] then x = (nxt() / 2147483647 - 0.5) * (dt == 'float16' and 8 or 1e3)
    elseif dt == 'uint8' then x = nxt() % 60
    elseif dt == 'int8' then x = nxt() % 61 - 30
    elseif FLOAT[dt] then x = (nxt() % 401 - 200) * 0.25
    else x = nxt() % 200001 - 100000 end
    t[i] = x
  end
  return t
end

local function arr(t, dt) return mx.nd.array(t, {dtype = dt}) end

-- the sum over ranks, computed here (exact data, or two random floats: one rounding)
local function expected(dt, count, seed, random)
  local sum = {}
  for i = 1, count do sum[i] = 0 end
  for q = 0, n - 1 do
    local t = arr(data(q, dt, count, seed, random), dt):toflat() -- as stored in the dtype
    for i = 1, count do sum[i] = sum[i] + t[i] end
  end
  return arr(sum, dt)
end

local seed = 0
local function check_key(dt, count, random)
  seed = seed + 1
  local key = ('%s_%d_%s'):format(dt, count, random and 'r' or 'x')
  local mine = data(r, dt, count, seed, random)
  local want = expected(dt, count, seed, random)
  local junk = arr(data(r + 17, dt, count, seed, false), dt) -- init: rank 0's junk everywhere
  local results = {}
  for _, name in ipairs{'plain', 'hot5k', 'hotdef'} do
    local kv = name == 'plain' and plain or stores[name]
    kv:init(key, junk)
    local v, o = arr(mine, dt), mx.nd.zeros({count}, {dtype = dt})
    local v0 = bytes_of(v)
    kv:pushpull(key, v, o)
    first_diff(want, o, name .. ' ' .. key .. ' pushpull into another array')
    if bytes_of(v) ~= v0 then error(('rank %d: %s %s: the pushed array changed'):format(r, name, key)) end
    local p = mx.nd.zeros({count}, {dtype = dt})
    kv:pull(key, p)
    first_diff(want, p, name .. ' ' .. key .. ' pull after pushpull')
    local w = arr(mine, dt)
    kv:pushpull(key, w) -- into the pushed array itself
    first_diff(want, w, name .. ' ' .. key .. ' pushpull in place')
    kv:pull(key, p)
    first_diff(want, p, name .. ' ' .. key .. ' pull after pushpull in place')
    results[name] = o
  end
  first_diff(results.plain, results.hot5k, key .. ' hot (5000-byte chunks) against plain')
  first_diff(results.plain, results.hotdef, key .. ' hot (default chunks) against plain')
end

for _, dt in ipairs{'float32', 'float64', 'float16', 'uint8', 'int32', 'int8', 'int64'} do
  local esz, per = ESZ[dt], math.floor(5000 / ESZ[dt])
  local small = 4096 / esz -- the smallest large key: below one chunk of either store
  for _, count in ipairs{small, per, 2 * per, per + 1, 3 * per + 7, 65536 / esz + 3} do
    check_key(dt, count, false)
    if n == 2 and FLOAT[dt] then check_key(dt, count, true) end
  end
end
ok('every dtype and size')

-- one call of several keys: fused small keys around two large ones; one large key's
-- output is another key's pushed array and the other way round (the plain order: every
-- push read before any pull write), one output a view overlapping its own pushed array
local function list_case(kv, name)
  local N = 3000
  local sa, sb = arr(data(r, 'float32', 10, 901, false), 'float32'), arr(data(r, 'float32', 20, 902, false), 'float32')
  local A = arr(data(r, 'float32', N, 903, false), 'float32')
  local B = arr(data(r, 'float32', N, 904, false), 'float32')
  local X = mx.nd.array(data(r, 'float32', 2 * N, 905, false)):reshape{2 * N / 100, 100}
  local Cv, Co = arr(data(r, 'float32', N, 906, false), 'float32'), mx.nd.zeros{N}
  local keys = {'l_sa', 'l_A', 'l_B', 'l_sb', 'l_X', 'l_C'}
  kv:init(keys, {mx.nd.zeros{10}, mx.nd.zeros{N}, mx.nd.zeros{N}, mx.nd.zeros{20}, mx.nd.zeros{N / 100, 100},
                 mx.nd.zeros{N}})
  local so, sbo = mx.nd.zeros{10}, mx.nd.zeros{20}
  local xin = X:slice(1, N / 100)                  -- rows 1..30
  local xout = X:slice(N / 200 + 1, N / 200 + N / 100) -- rows 16..45: overlaps xin
  kv:pushpull(keys, {sa, A, B, sb, xin, Cv}, {so, B, A, sbo, xout, Co})
  local p = mx.nd.zeros{N}
  kv:pull('l_C', p)
  return {so, B, A, sbo, xout, Co, p}
end
local want_list = {}
do
  local function sum(count, sd)
    local s = {}
    for i = 1, count do s[i] = 0 end
    for q = 0, n - 1 do
      local t = data(q, 'float32', count, sd, false)
      for i = 1, count do s[i] = s[i] + t[i] end
    end
    return s
  end
  local N = 3000
  want_list = {arr(sum(10, 901), 'float32'), arr(sum(N, 903), 'float32'), arr(sum(N, 904), 'float32'),
               arr(sum(20, 902), 'float32'), arr(sum(N, 905), 'float32'), arr(sum(N, 906), 'float32'),
               arr(sum(N, 906), 'float32')}
end
for _, name in ipairs{'plain', 'hot5k', 'hotdef'} do
  local kv = name == 'plain' and plain or stores[name]
  local got = list_case(kv, name)
  local what = {'fused small key 1', 'key A into B', 'key B into A', 'fused small key 2',
                'view over its pushed array', 'large key C', 'pull of C'}
  for i = 1, 7 do first_diff(want_list[i], got[i]:reshape{got[i].size}, name .. ' list: ' .. what[i]) end
end
ok('lists and aliasing')

-- the plain path where the hot one does not apply: an output of another dtype, two
-- outputs, and an updater (w -= sum)
-- in a fixed order: every rank must call the same store (pairs' order differs between
-- processes, LuaJIT seeding its string hash)
for _, name in ipairs{'hot5k', 'hotdef'} do
  local kv = stores[name]
  local N = 2000
  local mine = data(r, 'float32', N, 77, false)
  local want = expected('float32', N, 77, false)
  kv:init('other_dtype', mx.nd.zeros{N})
  local o64 = mx.nd.zeros({N}, {dtype = 'float64'})
  kv:pushpull('other_dtype', arr(mine, 'float32'), o64)
  first_diff(want:astype('float64'), o64, name .. ' output of another dtype')
  kv:init('two_outs', mx.nd.zeros{N})
  local o1, o2 = mx.nd.zeros{N}, mx.nd.zeros{N}
  kv:pushpull('two_outs', arr(mine, 'float32'), {o1, o2})
  first_diff(want, o1, name .. ' first of two outputs')
  first_diff(want, o2, name .. ' second of two outputs')
  kv:init('updated', mx.nd.full({N}, 1))
  kv:set_updater(function(_, g, w) w:set(w - g) end)
  local ou = mx.nd.zeros{N}
  kv:pushpull('updated', arr(mine, 'float32'), ou)
  first_diff(1 - want, ou, name .. ' with an updater')
  kv:set_updater(nil)
  -- a key given twice in one call: the plain order, both outputs get the second sum
  kv:init('twice', mx.nd.zeros{N})
  local t1, t2 = mx.nd.zeros{N}, mx.nd.zeros{N}
  kv:pushpull({'twice', 'twice'}, {arr(mine, 'float32'), arr(data(r, 'float32', N, 78, false), 'float32')}, {t1, t2})
  local want2 = expected('float32', N, 78, false)
  first_diff(want2, t1, name .. ' key given twice, first output')
  first_diff(want2, t2, name .. ' key given twice, second output')
end
ok('plain fallbacks')

-- no engine allocation in a hot pushpull (in place or apart, with fused keys beside it)
do
  local total = ffi.new('int64_t[1]')
  local function count()
    require('luamx.capi').C.lmx_debug_alloc_stats(nil, nil, total)
    return tonumber(total[0])
  end
  hot5k:init({'alloc_big', 'alloc_small'}, {mx.nd.zeros{5000}, mx.nd.zeros{10}})
  local bv, bo, sv, so = mx.nd.ones{5000}, mx.nd.zeros{5000}, mx.nd.ones{10}, mx.nd.zeros{10}
  local function step()
    hot5k:pushpull('alloc_big', bv, bo)
    hot5k:pushpull('alloc_big', bo)
    hot5k:pushpull({'alloc_small', 'alloc_big'}, {sv, bv}, {so, bo})
  end
  step()
  local a = count()
  for _ = 1, 3 do step() end
  local got = count() - a
  if got ~= 0 then error(('rank %d: %d engine allocations in 9 hot pushpulls'):format(r, got)) end
end
ok('no allocations')

-- ranks that would cut a key into different all-reduces (rank 0 with the hot path off,
-- the others in 5000-byte chunks) disagree with a message before any data all-reduce,
-- instead of making mismatched MPI calls
do
  local mixed = store(r == 0 and '0' or '5000')
  mixed:init('mixed', mx.nd.zeros{3000})
  local done, err = pcall(mixed.pushpull, mixed, 'mixed', mx.nd.ones{3000}, mx.nd.zeros{3000})
  if done then error(('rank %d: a pushpull hot on some ranks only did not fail'):format(r)) end
  err = tostring(err)
  if not (err:find('the workers disagree', 1, true) and err:find("push of key 'mixed'", 1, true) and
          err:find('LUAMX_DIST_HOT_BYTES=5000', 1, true)) then
    error(('rank %d: not the disagreement expected: %s'):format(r, err))
  end
end
ok('disagreement')
plain:barrier()
ok('done')
