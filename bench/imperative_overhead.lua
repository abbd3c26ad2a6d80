--- bench/imperative_overhead.lua — reproduction for the per-call cost of imperative
--- mx.nd.<op> calls (the path the fused optimizer updates take every step): time and
--- engine heap allocations per call on 16 floats, next to a bound executor's forward.
--
--   LUAMX_LIB=build-bench/libluamx.so luajit bench/imperative_overhead.lua
local dir = debug.getinfo(1, 'S').source:match('^@(.-)[^/\\]*$') or './'
local B = dofile((dir == '' and './' or dir) .. 'common.lua')
local mx = B.mx
local w, g, m = mx.nd.ones{16}, mx.nd.ones{16}, mx.nd.zeros{16}
local p = {weight = w, grad = g, mom = m, out = w, lr = 0.1, momentum = 0.9, wd = 0, rescale_grad = 1}
local f = mx.nd.sgd_mom_update
local dt, al = B.time_steps(function() f(p) end, 100, 20000)
B.result('IMP', 'sgd_mom_update_us_per_call', dt * 1e6)
B.result('IMP', 'sgd_mom_update_allocs_per_call', al)
local dt2, al2 = B.time_steps(function() mx.nd.elemwise_add(w, g, {out = m}) end, 100, 20000)
B.result('IMP', 'elemwise_add_out_us_per_call', dt2 * 1e6)
B.result('IMP', 'elemwise_add_out_allocs_per_call', al2)
-- the same op inside a bound executor, for comparison
local x = mx.sym.Variable('a') + mx.sym.Variable('b')
local exe = x:simple_bind{ctx = mx.cpu(), a = {16}, b = {16}, grad_req = 'null'}
local fw = {is_train = false}
local dt3, al3 = B.time_steps(function() exe:forward(fw) end, 100, 20000)
B.result('IMP', 'executor_add_us_per_forward', dt3 * 1e6)
B.result('IMP', 'executor_add_allocs_per_forward', al3)
