-- Worker of dist_kvstore_spec: broadcast and all-reduce in every dtype, barrier, fused
-- and chunked pushpull with an updater, a large key without one. Prints "R<rank> OK
-- <what>" per check; any failed check raises (the job then exits non-zero).
local mx = require 'luamx'
local ffi = require 'ffi'
ffi.cdef 'int usleep(unsigned int usec);'
local kv = mx.kv.create(arg[1] or 'dist_sync')
local r, n = kv.rank, kv.num_workers
local function ok(what) io.write(('R%d OK %s\n'):format(r, what)) io.flush() end
local function same(want, got, what)
  for i = 1, #want do
    if math.abs(want[i] - got[i]) > 1e-6 then
      error(('rank %d: %s: element %d is %s, expected %s'):format(r, what, i, tostring(got[i]), tostring(want[i])))
    end
  end
end
ok(('workers %d'):format(n))

for _, dt in ipairs{'float32', 'float64', 'float16', 'uint8', 'int32', 'int8', 'int64'} do
  kv:init(dt, mx.nd.array({r + 1, 2 * (r + 1), 3}, {dtype = dt}))
  local o = mx.nd.zeros({3}, {dtype = dt})
  kv:pull(dt, o)
  same({1, 2, 3}, o:totable(), dt .. ' broadcast of rank 0')
  kv:pushpull(dt, {mx.nd.array({r + 1, 10, 1}, {dtype = dt}), mx.nd.array({0, 1, 2}, {dtype = dt})}, o)
  same({n * (n + 1) / 2, 11 * n, 3 * n}, o:totable(), dt .. ' sum')
  if o.dtype ~= dt then error('dtype changed to ' .. o.dtype) end
end
ok('dtypes')

-- barrier: rank 1 arrives 0.4 s late, nobody may leave before it
local t0 = os.clock() + 0 -- cpu time is useless here: use the wall clock of the C library
ffi.cdef 'typedef struct { long s, ns; } lmx_ts; int clock_gettime(int, lmx_ts *);'
local function now() local t = ffi.new('lmx_ts') ffi.C.clock_gettime(1, t) return tonumber(t.s) + tonumber(t.ns) * 1e-9 end
t0 = now()
if r == 1 then ffi.C.usleep(400000) end
kv:barrier()
local waited = now() - t0
if n > 1 and waited < 0.35 then error(('rank %d left the barrier after %.3f s, before rank 1 arrived'):format(r, waited)) end
ok('barrier')

-- a large key (chunked) without an updater: the sum is reduced straight into the stored
-- value; twice, then a plain pull; the pushed array stays as it was
kv:init('plain_large', mx.nd.full({300000}, 7))
local pv, po = mx.nd.arange(0, 300000) + r, mx.nd.zeros{300000}
for rep = 1, 2 do
  kv:pushpull('plain_large', pv, po)
  local f = po:toflat()
  for _, i in ipairs{1, 2, 16384, 16385, 300000} do
    same({n * (i - 1) + n * (n - 1) / 2}, {f[i]}, ('plain_large[%d], push %d'):format(i, rep))
  end
end
local pf = mx.nd.zeros{300000}
kv:pull('plain_large', pf)
same({n * (n - 1) / 2, n * 299999 + n * (n - 1) / 2}, {pf:toflat()[1], pf:toflat()[300000]}, 'plain_large pull')
same({r, 299999 + r}, {pv:toflat()[1], pv:toflat()[300000]}, 'plain_large pushed value')
ok('large without updater')

-- fused and chunked: 40 small keys (fused), one float64 key (its own group) and one
-- large key (chunked) in one pushpull, with an updater w -= sum
local keys, vals, outs, want = {}, {}, {}, {}
for k = 1, 40 do
  keys[k] = 'small' .. k
  kv:init(keys[k], mx.nd.full({100}, k))
  vals[k] = mx.nd.full({100}, k * (r + 1))
  want[k] = k - k * n * (n + 1) / 2
end
keys[41] = 'double'
kv:init('double', mx.nd.zeros({7}, {dtype = 'float64'}))
vals[41] = mx.nd.full({7}, 0.5, {dtype = 'float64'})
want[41] = -0.5 * n
keys[42] = 'large'
kv:init('large', mx.nd.zeros{300000})
vals[42] = mx.nd.arange(0, 300000) + r
for k = 1, 42 do outs[k] = mx.nd.zeros(vals[k].shape, {dtype = vals[k].dtype}) end
local calls = 0
kv:set_updater(function(_, g, w) calls = calls + 1; w:set(w - g) end)
kv:pushpull(keys, vals, outs)
for k = 1, 41 do same({want[k], want[k]}, {outs[k]:toflat()[1], outs[k]:toflat()[#outs[k]:toflat()]}, keys[k]) end
local big = outs[42]:toflat()
for _, i in ipairs{1, 2, 1000, 262144, 262145, 300000} do
  local v = i - 1
  same({-(n * v + n * (n - 1) / 2)}, {big[i]}, 'large[' .. i .. ']')
end
if calls ~= 42 then error(('the updater ran %d times, expected 42'):format(calls)) end
ok('fused and chunked')
kv:barrier()
ok('done')
