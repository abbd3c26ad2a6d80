--- bench/dist/kv.lua — the dist_sync kvstore's all-reduce (pushpull of one float32 key,
--- no updater) at the sizes of mpi_allreduce.c, and fused small keys against one call per
--- key. Run under mpirun (2 workers); rank 0 prints
---   RESULT kv_pushpull <bytes> <seconds per call> <GB/s>
---   RESULT kv_small_keys <nkeys> <floats per key> <fused s> <per-key s> <speed-up>
local mx = require 'luamx'
local ffi = require 'ffi'
ffi.cdef 'typedef struct { long s, ns; } lmx_bts; int clock_gettime(int, lmx_bts *);'
local function now() local t = ffi.new('lmx_bts') ffi.C.clock_gettime(1, t) return tonumber(t.s) + tonumber(t.ns) * 1e-9 end

local kv = mx.kv.create('dist_sync')
local rank = kv.rank
local function timed(reps, fn)
  for _ = 1, 3 do fn() end
  kv:barrier()
  local t0 = now()
  for _ = 1, reps do fn() end
  return (now() - t0) / reps
end

for _, bytes in ipairs{4096, 65536, 2^20, 4 * 2^20, 16 * 2^20, 64 * 2^20} do
  local n = bytes / 4
  local key = 'k' .. bytes
  kv:init(key, mx.nd.zeros{n})
  local v, o = mx.nd.ones{n}, mx.nd.zeros{n}
  local reps = bytes >= 16 * 2^20 and 10 or bytes >= 2^20 and 50 or 500
  local dt = timed(reps, function() kv:pushpull(key, v, o) end)
  if rank == 0 then print(('RESULT kv_pushpull %d %.3e %.3f'):format(bytes, dt, bytes / dt / 1e9)) end
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
