-- Worker of dist_train_spec / dist_fault_spec: luajit train.lua MODE OUT [kvstore]
--   mlp     W1 MLP (784-512-512-10, SGD lr 0.1 momentum 0.9) for 20 steps, global batch
--           2*B split over the workers (worker r takes rows r*b.. of every global batch);
--           rank 0 saves the parameters to OUT (mlp48: global batch 48, for 3 workers)
--   bucket  the same for a BucketingModule (embedding + FC, buckets 3 and 5)
--   kill    rank 1 kills itself with SIGKILL at step 5 of a long run
--   hang    rank 1 stops calling the kvstore at step 5 (sleeps 120 s)
--   error   rank 1 raises a Lua error at step 5
--   killov  rank 1 kills itself with SIGKILL at step 5 between its backward and its update,
--           so that the others are inside an overlapped push (all-reduces in flight)
--   hangov  the same, but rank 1 sleeps 120 s there
--   allocs  the mlp run, printing the engine allocations of steps 11-20's forward_backward
--   batches rank 1 has one batch fewer per epoch than the others
--   shape   rank 1's first FC layer has 3 more hidden units
local mx = require 'luamx'
local ffi = require 'ffi'
ffi.cdef 'int getpid(void); unsigned int sleep(unsigned int);'
local mode, out, kvtype = arg[1], arg[2], arg[3] or 'dist_sync'
mx.logging.set_level('error')

-- the store only to learn rank and workers (the module makes its own)
local probe = mx.kv.create('dist_sync')
local rank, workers = probe.rank, probe.num_workers
probe:free()

local B, STEPS = 32, 20 -- global batch 2*B... per worker 2*B/workers
if mode == 'mlp48' then mode, B = 'mlp', 24 end -- global batch 48: 2 or 3 workers
local global = 2 * B
local b = global / workers
local function value(i, j) return math.sin(i * 0.37 + j * 0.011) end

-- the rows this worker reads: of each global batch s, rows [s*global + rank*b, +b)
local function my_rows(nsteps)
  local rows = {}
  for s = 0, nsteps - 1 do
    for k = 0, b - 1 do rows[#rows + 1] = s * global + rank * b + k end
  end
  return rows
end

local function mlp(hidden1)
  local x = mx.sym.Variable('data')
  x = mx.sym.FullyConnected{data = x, num_hidden = hidden1, name = 'fc1'}
  x = mx.sym.Activation{data = x, act_type = 'relu'}
  x = mx.sym.FullyConnected{data = x, num_hidden = 512, name = 'fc2'}
  x = mx.sym.Activation{data = x, act_type = 'relu'}
  x = mx.sym.FullyConnected{data = x, num_hidden = 10, name = 'fc3'}
  return mx.sym.SoftmaxOutput{data = x, name = 'softmax'}
end

local function mlp_iter(nsteps, drop)
  if nsteps > STEPS then -- fault runs: random data is enough (and quick to make)
    mx.random.seed(rank + 1)
    local n = nsteps * b - (drop and b or 0)
    local l = {}
    for i = 1, n do l[i] = i % 10 end
    return mx.io.NDArrayIter{data = mx.nd.random.uniform(-1, 1, {n, 784}), label = mx.nd.array(l),
                             batch_size = b}
  end
  local rows = my_rows(nsteps)
  if drop then for _ = 1, b do rows[#rows] = nil end end
  local d, l = {}, {}
  for i, row in ipairs(rows) do
    local x = {}
    for j = 1, 784 do x[j] = value(row, j) end
    d[i], l[i] = x, row % 10
  end
  return mx.io.NDArrayIter{data = mx.nd.array(d), label = mx.nd.array(l), batch_size = b}
end

local function save(mod)
  if rank ~= 0 or not out then return end
  local arg_params = mod:get_params()
  mx.nd.save(out, arg_params)
end

local function fit_mlp(nsteps, opts)
  opts = opts or {}
  local it = mlp_iter(nsteps, opts.drop)
  local mod = mx.mod.Module{symbol = mlp(opts.hidden1 or 512), logger = false}
  mx.random.seed(42)
  local cb
  if opts.at_step then
    local step = 0
    cb = function()
      step = step + 1
      if step == 5 then opts.at_step() end
    end
  end
  local nup, allocs, up_allocs = 0, 0, 0
  local total = ffi.new('int64_t[1]')
  local function count()
    mx.nd.waitall()
    require('luamx.capi').C.lmx_debug_alloc_stats(nil, nil, total)
    return tonumber(total[0])
  end
  if opts.before_update or opts.count_allocs then
    local up, fb = mod.update, mod.forward_backward
    mod.update = function(self)
      nup = nup + 1
      if nup == 5 and opts.before_update then opts.before_update() end
      if nup <= 10 or not opts.count_allocs then return up(self) end
      local a = count()
      up(self)
      up_allocs = up_allocs + count() - a
    end
    mod.forward_backward = function(self, batch)
      if nup < 10 or not opts.count_allocs then return fb(self, batch) end
      local a = count()
      fb(self, batch)
      allocs = allocs + count() - a
    end
  end
  mod:fit(it, {kvstore = kvtype, optimizer = 'sgd', num_epoch = opts.epochs or 1,
               optimizer_params = {learning_rate = 0.1, momentum = 0.9},
               initializer = mx.init.Xavier(), batch_end_callback = cb})
  io.write(('R%d overlap %s\n'):format(rank, tostring(mod._overlap)))
  if opts.count_allocs then
    io.write(('R%d forward_backward allocations %d\n'):format(rank, allocs))
    io.write(('R%d update allocations %d\n'):format(rank, up_allocs))
  end
  return mod
end

local function rank1(fn) return function() if rank == 1 then fn() end end end

if mode == 'mlp' then
  save(fit_mlp(STEPS))
elseif mode == 'bucket' then
  local V, E = 12, 6
  local function sym_gen(T)
    local embed = mx.sym.Embedding{data = mx.sym.Variable('data'), input_dim = V, output_dim = E, name = 'embed'}
    local pred = mx.sym.FullyConnected{data = mx.sym.Reshape{data = embed, shape = {-1, E}}, num_hidden = V, name = 'pred'}
    local label = mx.sym.Reshape{data = mx.sym.Variable('softmax_label'), shape = {-1}}
    return mx.sym.SoftmaxOutput{data = pred, label = label, name = 'softmax'}, {'data'}, {'softmax_label'}
  end
  local batches, rows = {}, my_rows(STEPS)
  for s = 1, STEPS do
    local T = s % 3 == 0 and 5 or 3
    local d, l = {}, {}
    for k = 1, b do
      local row = rows[(s - 1) * b + k]
      d[k], l[k] = {}, {}
      for t = 1, T do d[k][t] = (row * 3 + t * 5) % V; l[k][t] = (row + t * 7) % V end
    end
    batches[s] = mx.io.DataBatch{data = {mx.nd.array(d)}, label = {mx.nd.array(l)}, bucket_key = T,
      provide_data = {mx.io.DataDesc('data', {b, T})}, provide_label = {mx.io.DataDesc('softmax_label', {b, T})}}
  end
  local it = {provide_data = {mx.io.DataDesc('data', {b, 5})},
              provide_label = {mx.io.DataDesc('softmax_label', {b, 5})}, i = 0}
  function it:next() self.i = self.i + 1 return batches[self.i] end
  function it:reset() self.i = 0 end
  local mod = mx.mod.BucketingModule{sym_gen = sym_gen, default_bucket_key = 5, logger = false}
  mx.random.seed(5)
  mod:fit(it, {kvstore = kvtype, num_epoch = 1, optimizer_params = {learning_rate = 0.5, momentum = 0.9},
               initializer = mx.init.Xavier()})
  io.write(('R%d overlap %s\n'):format(rank, tostring(mod._curr_module._overlap)))
  save(mod)
elseif mode == 'kill' then
  fit_mlp(200, {at_step = rank1(function() os.execute('kill -9 ' .. ffi.C.getpid()) end)})
elseif mode == 'allocs' then
  fit_mlp(STEPS, {count_allocs = true})
elseif mode == 'killov' then
  fit_mlp(200, {before_update = rank1(function() os.execute('kill -9 ' .. ffi.C.getpid()) end)})
elseif mode == 'hangov' then
  fit_mlp(200, {before_update = rank1(function() ffi.C.sleep(120) end)})
elseif mode == 'hang' then
  fit_mlp(200, {at_step = rank1(function() ffi.C.sleep(120) end)})
elseif mode == 'error' then
  fit_mlp(200, {at_step = rank1(function() error('rank 1 gives up (a deliberate Lua error)') end)})
elseif mode == 'batches' or mode == 'shape' then
  local ok, err = pcall(fit_mlp, 40, {drop = mode == 'batches' and rank == 1,
                                     hidden1 = mode == 'shape' and rank == 1 and 515 or 512})
  io.write(('R%d %s %s\n'):format(rank, ok and 'FINISHED' or 'ERROR', tostring(err)))
  io.flush()
  ffi.C.sleep(1) -- let every rank print before mpirun ends the job
  os.exit(ok and 0 or 3)
end
io.write(('R%d FINISHED\n'):format(rank))
