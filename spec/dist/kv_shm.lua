-- Worker of dist_shm_spec: the shared-memory all-reduce of large keys (src/exec/kv_dist_shm.c:
-- every rank on one node, slots of LUAMX_DIST_SHM_BYTES) against a store on MPI messages
-- (LUAMX_DIST_SHM_BYTES=0), for every dtype, at sizes below one slot, of exactly one slot,
-- one element past it, several slots with an odd remainder (4 and 5 slots: each set of
-- slots used again, an even and an odd number of steps) and counts that no rank count
-- divides; through each way into the path: pushpull into another array (the output and the
-- stored value written together), pushpull in place, push then pull (reduced into the
-- stored value), an updater (reduced into the merge buffer), two arrays per key (merged
-- first, then reduced in place). Data: small integers (times 1/4 for floats), so that
-- every sum is exact in any order; on 2 workers also random floats (a + b is b + a).
-- Results are compared bit for bit with the MPI store's and with the sum computed here.
-- Prints "R<rank> OK <what>"; a failed check raises.
-- arg[1]: nil (the checks), 'hang' or 'kill' (rank 1 stops, or dies of SIGKILL, in its
-- updater between two keys: rank 0 is then in the next key's first shared-memory wait),
-- 'stopmid' or 'killmid' (rank 1 is sent SIGSTOP or SIGKILL by a shell it started, after
-- a second of pushpulls of a key of thousands of slots: it stops, or dies, inside the
-- all-reduce, between two of its flags, while the others wait for its next one).
-- Run with LUAMX_DIST_SMALL_BYTES=4096 (keys from 4 KiB are large).
local mx = require 'luamx'
local ffi = require 'ffi'
ffi.cdef [[
int setenv(const char *, const char *, int);
unsigned int sleep(unsigned int);
int kill(int, int);
int getpid(void);
]]

local function store(shm)
  ffi.C.setenv('LUAMX_DIST_SHM_BYTES', shm, 1)
  return mx.kv.create('dist_sync')
end

local mode = arg and arg[1]
if mode == 'stopmid' or mode == 'killmid' then
  local kv = store('4096')
  local r, N = kv.rank, 4 * 2^20 -- 16 MB of float32: 4096 slots of 4 KiB
  kv:init('big', mx.nd.zeros{N})
  local v = mx.nd.zeros{N}
  kv:pushpull('big', v)
  if r == 1 then
    os.execute(('(sleep 1; kill -%s %d) >/dev/null 2>&1 &'):format(mode == 'stopmid' and 'STOP' or 'KILL',
      ffi.C.getpid()))
  end
  local done, err
  repeat done, err = pcall(kv.pushpull, kv, 'big', v) until not done
  io.write(('R%d ERROR %s\n'):format(r, tostring(err)))
  io.flush()
  os.exit(3)
end
if mode == 'hang' or mode == 'kill' then
  local kv = store('65536')
  local r = kv.rank
  kv:init({'a', 'b'}, {mx.nd.zeros{100000}, mx.nd.zeros{100000}})
  kv:set_updater(function(key, g, w)
    if key == 'a' and r == 1 then
      io.write('R1 stops in the updater of a\n')
      io.flush()
      if mode == 'kill' then ffi.C.kill(ffi.C.getpid(), 9) end
      ffi.C.sleep(1000)
    end
    w:set(w + g)
  end)
  local done, err = pcall(kv.push, kv, {'a', 'b'}, {mx.nd.ones{100000}, mx.nd.ones{100000}})
  io.write(('R%d %s %s\n'):format(r, done and 'DONE' or 'ERROR', tostring(err)))
  io.flush()
  os.exit(done and 0 or 3)
end

local mpi, s5k, sdef = store('0'), store('5000'), store('262144') -- sdef: the default slot
local r, n = mpi.rank, mpi.num_workers
local function ok(what) io.write(('R%d OK %s\n'):format(r, what)) io.flush() end

local ESZ = {float32 = 4, float64 = 8, float16 = 2, uint8 = 1, int32 = 4, int8 = 1, int64 = 8}
local FLOAT = {float32 = true, float64 = true, float16 = true}

local function bytes_of(a) return ffi.string(a:data(), a.size * ESZ[a.dtype]) end

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
    elseif dt == 'uint8' then x = nxt() % 40 -- 3 ranks x 2 arrays: no overflow
    elseif dt == 'int8' then x = nxt() % 41 - 20
    elseif FLOAT[dt] then x = (nxt() % 401 - 200) * 0.25
    else x = nxt() % 200001 - 100000 end
    t[i] = x
  end
  return t
end

local function arr(t, dt) return mx.nd.array(t, {dtype = dt}) end

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
  for _, name in ipairs{'mpi', 's5k', 'sdef'} do
    local kv = ({mpi = mpi, s5k = s5k, sdef = sdef})[name]
    local what = name .. ' ' .. key
    kv:init(key, junk)
    local v, o = arr(mine, dt), mx.nd.zeros({count}, {dtype = dt})
    local v0 = bytes_of(v)
    kv:pushpull(key, v, o)
    first_diff(want, o, what .. ' pushpull into another array')
    if bytes_of(v) ~= v0 then error(('rank %d: %s: the pushed array changed'):format(r, what)) end
    local p = mx.nd.zeros({count}, {dtype = dt})
    kv:pull(key, p)
    first_diff(want, p, what .. ' pull after pushpull')
    local w = arr(mine, dt)
    kv:pushpull(key, w)
    first_diff(want, w, what .. ' pushpull in place')
    kv:pull(key, p)
    first_diff(want, p, what .. ' pull after pushpull in place')
    kv:push(key, arr(mine, dt))
    kv:pull(key, p)
    first_diff(want, p, what .. ' push, then pull')
    -- two arrays per key (summed over the "devices" first, then reduced in place)
    kv:push(key, {arr(mine, dt), arr(data(r, dt, count, seed + 1000, random), dt)})
    local p2 = mx.nd.zeros({count}, {dtype = dt})
    kv:pull(key, p2)
    results[name] = {o, p2}
  end
  for _, name in ipairs{'s5k', 'sdef'} do
    local how = name == 's5k' and ' shared memory (5000-byte slots)' or ' shared memory (default slots)'
    first_diff(results.mpi[1], results[name][1], key .. how .. ' against MPI messages')
    first_diff(results.mpi[2], results[name][2], key .. how .. ', two arrays per key, against MPI messages')
  end
end

for _, dt in ipairs{'float32', 'float64', 'float16', 'uint8', 'int32', 'int8', 'int64'} do
  local esz = ESZ[dt]
  local slot = 5056 / esz -- 5000 rounded up to 64 bytes
  for _, count in ipairs{4096 / esz, slot, slot + 1, 3 * slot + 7, 5 * slot - 3, 4099} do
    check_key(dt, count, false)
    if n == 2 and FLOAT[dt] and dt ~= 'float16' then check_key(dt, count, true) end
  end
end
ok('every dtype and size')

-- float16 of random values: sums rounded at each step as MPI's float16 sum does
do
  local count = 3 * 5056 / 2 + 5
  seed = seed + 1
  local mine = data(r, 'float16', count, seed, true)
  local outs = {}
  for _, name in ipairs{'mpi', 's5k'} do
    local kv = name == 'mpi' and mpi or s5k
    kv:init('f16r', mx.nd.zeros({count}, {dtype = 'float16'}))
    outs[name] = mx.nd.zeros({count}, {dtype = 'float16'})
    kv:pushpull('f16r', arr(mine, 'float16'), outs[name])
  end
  if n == 2 then first_diff(outs.mpi, outs.s5k, 'float16 random sums against MPI messages') end
  local sum = expected('float16', count, seed, true):toflat()
  local got = outs.s5k:toflat()
  for i = 1, count do -- each step rounds to float16: within a few units of the last place
    if math.abs(got[i] - sum[i]) > 4e-3 * math.max(1, math.abs(sum[i])) then
      error(('rank %d: float16 element %d is %g, expected about %g'):format(r, i, got[i], sum[i]))
    end
  end
end
ok('float16 rounding')

-- 8-bit sums that overflow wrap around, as C, numpy and MXNet add (OpenMPI 4.1's
-- vectorized MPI_SUM saturates them instead: open-mpi/ompi#8045, so the MPI-message
-- path is not compared here)
do
  local N = 5000
  for i, c in ipairs{{'uint8', 200, function(x) return x % 256 end},
                     {'int8', 100, function(x) return (x + 128) % 256 - 128 end},
                     {'int8', -100, function(x) return (x + 128) % 256 - 128 end}} do
    local dt, x, wrap = c[1], c[2], c[3]
    s5k:init('wrap' .. i, mx.nd.zeros({N}, {dtype = dt}))
    local o = mx.nd.zeros({N}, {dtype = dt})
    s5k:pushpull('wrap' .. i, mx.nd.full({N}, x, {dtype = dt}), o)
    first_diff(mx.nd.full({N}, wrap(x * n), {dtype = dt}), o, ('%s sum of %d on %d ranks'):format(dt, x, n))
  end
end
ok('8-bit overflow wraps')

-- an updater (w = w - sum): the sum reduced into the merge buffer, then the update
do
  local N = 3001
  local mine = data(r, 'float32', N, 4242, false)
  local want = expected('float32', N, 4242, false)
  for _, kv in ipairs{s5k, sdef} do
    kv:init('upd', mx.nd.full({N}, 1))
    kv:set_updater(function(_, g, w) w:set(w - g) end)
    local o = mx.nd.zeros{N}
    kv:pushpull('upd', arr(mine, 'float32'), o)
    first_diff(1 - want, o, 'with an updater')
    kv:set_updater(nil)
  end
end
ok('updater')

-- one call of fused small keys around large ones
do
  local N = 3000
  local keys = {'l_s1', 'l_A', 'l_s2', 'l_B'}
  s5k:init(keys, {mx.nd.zeros{10}, mx.nd.zeros{N}, mx.nd.zeros{20}, mx.nd.zeros{N}})
  local ins = {arr(data(r, 'float32', 10, 1, false), 'float32'), arr(data(r, 'float32', N, 2, false), 'float32'),
               arr(data(r, 'float32', 20, 3, false), 'float32'), arr(data(r, 'float32', N, 4, false), 'float32')}
  local outs = {mx.nd.zeros{10}, mx.nd.zeros{N}, mx.nd.zeros{20}, mx.nd.zeros{N}}
  s5k:pushpull(keys, ins, outs)
  local counts = {10, N, 20, N}
  for i = 1, 4 do first_diff(expected('float32', counts[i], i, false), outs[i], 'list key ' .. keys[i]) end
end
ok('lists')

-- no engine allocation in a pushpull through shared memory
do
  local total = ffi.new('int64_t[1]')
  local function count()
    require('luamx.capi').C.lmx_debug_alloc_stats(nil, nil, total)
    return tonumber(total[0])
  end
  s5k:init('alloc_big', mx.nd.zeros{5000})
  local bv, bo = mx.nd.ones{5000}, mx.nd.zeros{5000}
  local function step()
    s5k:pushpull('alloc_big', bv, bo)
    s5k:pushpull('alloc_big', bo)
    s5k:push('alloc_big', bv)
  end
  step()
  local a = count()
  for _ = 1, 3 do step() end
  local got = count() - a
  if got ~= 0 then error(('rank %d: %d engine allocations in 9 shared-memory calls'):format(r, got)) end
end
ok('no allocations')

-- ranks on different paths (rank 0 on MPI messages, the others in shared memory) disagree
-- with a message before any data moves
do
  local mixed = store(r == 0 and '0' or '5000')
  mixed:init('mixed', mx.nd.zeros{3000})
  local done, err = pcall(mixed.pushpull, mixed, 'mixed', mx.nd.ones{3000}, mx.nd.zeros{3000})
  if done then error(('rank %d: a pushpull in shared memory on some ranks only did not fail'):format(r)) end
  err = tostring(err)
  if not (err:find('the workers disagree', 1, true) and err:find("push of key 'mixed'", 1, true) and
          err:find('LUAMX_DIST_SHM_BYTES=5056', 1, true)) then
    error(('rank %d: not the disagreement expected: %s'):format(r, err))
  end
end
ok('disagreement')
mpi:barrier()
ok('done')
