--- bench/dist/kv.lua — the dist_sync kvstore's all-reduce (pushpull of one float32 key,
--- no updater) against OpenMPI's own in-place MPI_Allreduce of the same size, in the same
--- process, interleaved: each round times MPI, the store's default path (on one node: the
--- shared-memory all-reduce, src/exec/kv_dist_shm.c) and its MPI-message path (a store
--- opened with LUAMX_DIST_SHM_BYTES=0: the hot pushpull, MPI all-reduces into the output
--- in chunks of LUAMX_DIST_HOT_BYTES, each chunk copied into the stored value), in an
--- order that rotates from round to round (with the default path called in place and
--- MPI_Allreduce out of place, below), so that the ratios compare neighbouring moments of
--- a shared machine. A round of one variant is a few calls back to back after a barrier.
--- Then fused small keys against one call per key.
--- Run under mpirun (2 workers); rank 0 prints, per size,
---   RESULT kv_ratio <bytes> <MPI GB/s> <kv GB/s> <msg GB/s> <kv/MPI> <msg/MPI> <rounds>
---          <best MPI GB/s> <best kv GB/s> <best msg GB/s> <best kv/MPI> <best msg/MPI>
--- (GB/s: bytes / median over rounds of the time per call; ratios: median over rounds
--- of the round's ratio; best: the fastest round of each, which on a loaded machine is
--- the one least disturbed)
---   RESULT kv_ratio_inplace <bytes> <MPI GB/s> <kv GB/s> <kv/MPI> <rounds> <best kv/MPI>
--- (the store's default path called in place, pushpull(key, g, g), the form Module's
--- update() uses without update_on_kvstore; in fit the overlapped push takes those keys
--- unless LUAMX_DIST_OVERLAP=0. One buffer per rank besides the stored value, as MPI's
--- in-place call has one; the line above reads one array and writes another)
---   RESULT kv_ratio_outofplace <bytes> <MPI GB/s> <kv GB/s> <kv/MPI> <rounds> <best kv/MPI>
--- (the like-for-like pair of the first line: MPI_Allreduce from v into o, the arrays of
--- the store's pushpull(key, v, o))
---   RESULT kv_small_keys <nkeys> <floats per key> <fused s> <per-key s> <speed-up>
--- Usage: mpirun -np 2 luajit bench/dist/kv.lua [rounds=9] [sizes in bytes, comma-separated]
local mx = require 'luamx'
local ffi = require 'ffi'
ffi.cdef [[
typedef struct { long s, ns; } lmx_bts;
int clock_gettime(int, lmx_bts *);
int setenv(const char *, const char *, int);
typedef struct {
  int abi;
  int (*init)(int *rank, int *size, char *err, int cap);
  int (*iallreduce)(const void *src, void *buf, int count, int dtype, int op, int *req, char *err, int cap);
  int (*allreduce)(const void *src, void *dst, int count, int dtype, int op, char *err, int cap);
  void *rest[32]; /* the other members (room for other ABI versions: bench/dist/ab.sh) */
} lmx_bench_mpi_ops;
int lmx_mpi_plugin(lmx_bench_mpi_ops *ops);
]]
local function now() local t = ffi.new('lmx_bts') ffi.C.clock_gettime(1, t) return tonumber(t.s) + tonumber(t.ns) * 1e-9 end
local ROUNDS = tonumber(arg and arg[1]) or 9

-- the user's setting, read before the line below overwrites it (os.getenv reads the
-- live environment)
local shm_bytes = os.getenv('LUAMX_DIST_SHM_BYTES') or '262144'
ffi.C.setenv('LUAMX_DIST_SHM_BYTES', '0', 1)
local msg = mx.kv.create('dist_sync') -- MPI messages
ffi.C.setenv('LUAMX_DIST_SHM_BYTES', shm_bytes, 1)
local kv = mx.kv.create('dist_sync')
local rank = kv.rank

-- OpenMPI's MPI_Allreduce through the plugin the store uses (the table of src/dist/mpi_abi.h,
-- the members not called here as plain pointers): in place, float32 (dtype code 0), sum (0)
local plugin = os.getenv('LUAMX_MPI_PLUGIN') or ((os.getenv('LUAMX_LIB') or ''):gsub('[^/]*$', '') .. 'libluamx_mpi.so')
local ops = ffi.new('lmx_bench_mpi_ops')
assert(ffi.load(plugin, true).lmx_mpi_plugin(ops) == 0, 'cannot open the MPI plugin ' .. plugin)
local err = ffi.new('char[256]')
-- in place (src nil), or from src into buf
local function mpi_allreduce(buf, n, src)
  if ops.allreduce(src, buf, n, 0, 0, err, 256) ~= 0 then error(ffi.string(err)) end
end

local function timed(reps, fn)
  -- the arrays of earlier sizes, once garbage, are freed by the GC's finalizers (munmap of
  -- up to 64 MB each): that happens here, not inside a timed window
  collectgarbage('collect')
  collectgarbage('collect')
  for _ = 1, 10 do fn() end -- warm up: LuaJIT compiles the 200-key loops in the first calls
  kv:barrier()
  local t0 = now()
  for _ = 1, reps do fn() end
  return (now() - t0) / reps
end

local function median(t)
  local s = {}
  for i, x in ipairs(t) do s[i] = x end
  table.sort(s)
  return #s % 2 == 1 and s[(#s + 1) / 2] or (s[#s / 2] + s[#s / 2 + 1]) / 2
end

local sizes = {4096, 65536, 2^20, 4 * 2^20, 16 * 2^20, 64 * 2^20}
if arg and arg[2] then
  sizes = {}
  for b in arg[2]:gmatch('%d+') do sizes[#sizes + 1] = tonumber(b) end
end
for _, bytes in ipairs(sizes) do
  local n = bytes / 4
  local key = 'k' .. bytes
  kv:init(key, mx.nd.zeros{n})
  msg:init(key, mx.nd.zeros{n})
  local v, o, ref = mx.nd.ones{n}, mx.nd.zeros{n}, mx.nd.ones{n}
  local refp, vp, op = ref:data(), v:data(), o:data()
  local reps = bytes >= 16 * 2^20 and 3 or bytes >= 2^20 and 10 or 100
  local runs = {
    function() mpi_allreduce(refp, n) end,
    function() kv:pushpull(key, v, o) end,
    function() msg:pushpull(key, v, o) end,
    function() kv:pushpull(key, ref, ref) end, -- in place, the form Module's update() uses
    function() mpi_allreduce(op, n, vp) end, -- out of place, the buffers of the store's call
  }
  local best, med, rh, rp, ri, ro = {1e9, 1e9, 1e9, 1e9, 1e9}, {{}, {}, {}, {}, {}}, {}, {}, {}, {}
  for round = 1, ROUNDS do
    for j = 0, 4 do
      local which = (round + j - 1) % 5 + 1
      local dt = timed(reps, runs[which])
      best[which] = math.min(best[which], dt)
      med[which][round] = dt
      ref:fill(1) -- the in-place runs double it: keep the values finite
    end
    rh[round], rp[round] = med[1][round] / med[2][round], med[1][round] / med[3][round]
    ri[round] = med[1][round] / med[4][round]
    ro[round] = med[5][round] / med[2][round]
  end
  if rank == 0 then
    print(('RESULT kv_ratio %d %.3f %.3f %.3f %.3f %.3f %d %.3f %.3f %.3f %.3f %.3f'):format(bytes,
      bytes / median(med[1]) / 1e9, bytes / median(med[2]) / 1e9, bytes / median(med[3]) / 1e9,
      median(rh), median(rp), ROUNDS, bytes / best[1] / 1e9, bytes / best[2] / 1e9, bytes / best[3] / 1e9,
      best[1] / best[2], best[1] / best[3]))
    print(('RESULT kv_ratio_inplace %d %.3f %.3f %.3f %d %.3f'):format(bytes, bytes / median(med[1]) / 1e9,
      bytes / median(med[4]) / 1e9, median(ri), ROUNDS, best[1] / best[4]))
    print(('RESULT kv_ratio_outofplace %d %.3f %.3f %.3f %d %.3f'):format(bytes, bytes / median(med[5]) / 1e9,
      bytes / median(med[2]) / 1e9, median(ro), ROUNDS, best[5] / best[2]))
  end
end

local NK, PER = 200, 256 -- 200 keys of 1 KB: bias-sized gradients
local keys, vals, outs = {}, {}, {}
for k = 1, NK do
  keys[k] = 'small' .. k
  kv:init(keys[k], mx.nd.zeros{PER})
  vals[k], outs[k] = mx.nd.ones{PER}, mx.nd.zeros{PER}
end
local fused = timed(50, function() kv:pushpull(keys, vals, outs) end)
local single = timed(10, function() for k = 1, NK do kv:pushpull(keys[k], vals[k], outs[k]) end end)
if rank == 0 then
  print(('RESULT kv_small_keys %d %d %.3e %.3e %.2f'):format(NK, PER, fused, single, single / fused))
end
kv:barrier()
