--- bench/w2_lenet.lua — W2 of BENCHMARKS.md: LeNet (conv 5x5x20, tanh, maxpool 2/2, conv
--- 5x5x50, tanh, maxpool 2/2, FC 500, tanh, FC 10, SoftmaxOutput) on 1x28x28, batch 64,
--- SGD lr 0.1 momentum 0.9 through the fused update op; one executor bound once.
--
--   LUAMX_LIB=build-bench/libluamx.so luajit bench/w2_lenet.lua [--steps 60] [--warmup 5]
--
-- Prints RESULT W2 train_samples_per_s, M1's plan figures (exe:memory(): planned bytes of
-- the intermediates vs their naive sum, and the ratio), engine allocations per step, RSS.
local dir = debug.getinfo(1, 'S').source:match('^@(.-)[^/\\]*$') or './'
local B = dofile((dir == '' and './' or dir) .. 'common.lua')
local o = B.args{steps = 60, warmup = 5, batch = 64}

local exe, step = B.train_exe(B.lenet(), {o.batch, 1, 28, 28}, 10, 0.1, 0.9)
local dt, allocs = B.time_steps(step, o.warmup, o.steps)
B.result('W2', 'train_samples_per_s', o.batch / dt)
B.result('W2', 'allocs_per_step', allocs)
local planned, naive, pool = exe:memory()
B.result('M1', 'w2_planned_bytes', planned)
B.result('M1', 'w2_naive_bytes', naive)
B.result('M1', 'w2_pool_bytes', pool)
B.result('M1', 'w2_planned_over_naive', planned / naive)
local rss, hwm = B.rss()
B.result('W2', 'rss_mb', rss)
B.result('W2', 'hwm_mb', hwm)
B.result('W2', 'base_rss_mb', B.base_rss)
