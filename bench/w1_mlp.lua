--- bench/w1_mlp.lua — W1 of BENCHMARKS.md: MLP 784-512-512-10 with SoftmaxOutput, batch 128,
--- SGD lr 0.1 momentum 0.9 (fused sgd_mom_update through mx.nd), one step = forward +
--- backward + update on one executor bound once. Synthetic data, fixed seed, float32, CPU.
--
--   LUAMX_LIB=build-bench/libluamx.so luajit bench/w1_mlp.lua [--steps 200] [--warmup 10]
--
-- Prints RESULT W1 train_samples_per_s, the update's share of a step, engine heap
-- allocations per step, and VmRSS / VmHWM (MB).
local dir = debug.getinfo(1, 'S').source:match('^@(.-)[^/\\]*$') or './'
local B = dofile((dir == '' and './' or dir) .. 'common.lua')
local o = B.args{steps = 200, warmup = 10, batch = 128}

local exe, step, update = B.train_exe(B.mlp(), {o.batch, 784}, 10, 0.1, 0.9)
local dt, allocs = B.time_steps(step, o.warmup, o.steps)
local dtu = B.time_steps(update, 2, o.steps)
B.result('W1', 'train_samples_per_s', o.batch / dt)
B.result('W1', 'update_share', dtu / dt)
B.result('W1', 'allocs_per_step', allocs)
local rss, hwm = B.rss()
B.result('W1', 'rss_mb', rss)
B.result('W1', 'hwm_mb', hwm)
B.result('W1', 'base_rss_mb', B.base_rss)
