-- spec/fault_sites_spec.lua — fault injection across the imperative NDArray calls, the
-- bucketing pool, a data-parallel Module (two contexts), checkpoint save and load, and a
-- Module's bind / forward / backward / update: for N = 1, 2, ... the Nth engine
-- allocation of the operation fails. Each failure must be a Lua error that says "out of
-- memory" and names what was being allocated; the same objects must then run the
-- operation again successfully (a retry, with nothing failing); and once everything
-- the run made is garbage the allocator's live-block count must be back where it
-- started. The last case reports how many distinct allocation sites (code addresses
-- that called the engine allocator: lmx_debug_alloc_sites) the injected failures hit.
local ffi = require 'ffi'
local mx = require 'luamx'
local H = require 'helpers'
local nd = mx.nd
local C = mx.capi.C

mx.logging.set_level('error')

local function sites()
  local n = ffi.new('int64_t[1]')
  C.lmx_debug_alloc_sites(n, 0)
  return tonumber(n[0])
end

local report = {}

--- Runs op(state) with allocation n failing, n = 1, 2, ... until a run succeeds.
-- prepare() makes fresh objects for each n; after a failure op runs again on the same
-- objects (it must succeed) and check(result, state) checks what it gave. Returns the
-- number of injected failures that raised an error.
local function inject(what, prepare, op, check)
  op(prepare()) -- warm up process-wide state (name counters, caches, thread pools)
  local before_sites = sites()
  local n, absorbed, failures = 0, 0, 0
  while true do
    n = n + 1
    assert(n < 20000, what .. ': no success after 20000 injected failures')
    H.full_gc()
    H.full_gc()
    local live = H.live_blocks()
    local st = prepare()
    local t0 = H.total_allocs()
    C.lmx_debug_alloc_fail_at(n)
    local ok, res = pcall(op, st)
    local made = H.total_allocs() - t0
    -- Did allocation n happen? A successful run may have absorbed it (a fallback that
    -- skips an optimisation, e.g. the executor's tensor sharing): then the run goes on
    -- to n + 1. It did not happen when fewer than n - 1 allocations were made, or when
    -- exactly n - 1 were made and the next allocation (a probe) is the one that fails.
    local reached = not ok or made >= n
    if ok and made == n - 1 then reached = pcall(nd.zeros, {1}) end
    C.lmx_debug_alloc_fail_at(0)
    if ok and reached then absorbed = absorbed + 1 end
    if not ok then failures = failures + 1 end
    if not ok then
      local msg = tostring(res)
      assert(msg:find('out of memory allocating [%w_]', 1),
             ('%s, allocation %d: error %q does not say "out of memory allocating <what>"')
               :format(what, n, msg))
      local ok2, res2 = pcall(op, st)
      assert(ok2, ('%s: the retry after allocation %d failed: %s (first error: %s)')
        :format(what, n, tostring(res2), msg))
      res = res2
    end
    check(res, st)
    st, res = nil, nil -- luacheck: ignore
    H.full_gc()
    H.full_gc() -- a finalizer may drop the last reference to more engine objects
    -- never more blocks than before (fewer happens: the bounded call caches of
    -- luamx.ndarray_ops and luamx.optimizer restart when full and free their entries)
    assert(H.live_blocks() <= live, ('%s: allocation %d: %d blocks leaked')
      :format(what, n, H.live_blocks() - live))
    if ok and not reached then
      report[#report + 1] = ('%s: %d allocations failed (%d raised out of memory, %d absorbed by a '
        .. 'fallback), %d new sites'):format(what, n - 1, failures, absorbed, sites() - before_sites)
      return failures
    end
  end
end

local function fc_net(prefix)
  prefix = prefix or 'fc'
  local fc = mx.sym.FullyConnected{data = mx.sym.Variable('data'), num_hidden = 3, name = prefix}
  return mx.sym.SoftmaxOutput{data = mx.sym.Activation{data = fc, act_type = 'tanh'}, name = 'softmax'}
end

local function batch(n)
  local labels = {}
  for i = 1, n do labels[i] = i % 3 end
  return mx.io.DataBatch{data = {nd.ones {n, 4}}, label = {nd.array(labels)}}
end

local function module(ctx)
  local mod = mx.mod.Module{symbol = fc_net(), context = ctx, logger = false}
  mod:bind{data_shapes = {{'data', {4, 4}}}, label_shapes = {{'softmax_label', {4}}}}
  mod:init_params{initializer = mx.init.Constant(0.1)}
  mod:init_optimizer{optimizer = 'sgd', optimizer_params = {learning_rate = 0.1, momentum = 0.9}}
  return mod
end

local function near_flat(a, b) H.near(a:toflat(), b:toflat(), 1e-6) end

describe('fault injection with a retry on the same objects', function()
  after_each(function() C.lmx_debug_alloc_fail_at(0) end)

  it('imperative NDArray calls', function()
    local function prepare()
      return {a = nd.array {{1, -2, 3}, {-4, 5, -6}}, b = nd.array {{1, 0}, {0, 1}, {1, 1}}}
    end
    local function op(s)
      local r = nd.relu(s.a)
      local d = nd.dot(r, s.b)
      local t = nd.broadcast_add(d, nd.array {10, 20})
      local u = nd.sum(t, {axis = 1}) + nd.softmax(t):max()
      return {u, nd.transpose(s.a):astype('float64'), nd.concat(s.a, s.a, {dim = 0})}
    end
    local want = op(prepare())
    local n = inject('imperative', prepare, op, function(res, s)
      for i = 1, 3 do near_flat(res[i], want[i]) end
      assert.same({{1, -2, 3}, {-4, 5, -6}}, s.a:totable())
    end)
    assert.is_true(n >= 10, 'only ' .. n .. ' allocations')
  end)

  it('Module bind, forward, backward and update', function()
    local function op(s)
      local mod = s.mod or mx.mod.Module{symbol = fc_net(), logger = false}
      s.mod = mod
      if not mod.binded then
        mod:bind{data_shapes = {{'data', {4, 4}}}, label_shapes = {{'softmax_label', {4}}}}
      end
      if not mod.params_initialized then mod:init_params{initializer = mx.init.Constant(0.1)} end
      if not mod.optimizer_initialized then
        mod:init_optimizer{optimizer = 'sgd', optimizer_params = {learning_rate = 0.1, momentum = 0.9}}
      end
      mod:forward_backward(s.b)
      mod:update()
      return mod:get_outputs()[1]:toflat()
    end
    local n = inject('module', function() return {b = batch(4)} end, op, function(out)
      assert.equal(12, #out)
    end)
    assert.is_true(n > 20, 'only ' .. n .. ' allocations')
  end)

  it('a data-parallel Module over two contexts', function()
    local function op(s)
      s.mod:forward_backward(s.b)
      s.mod:update()
      return s.mod:get_params()
    end
    local n = inject('data-parallel step', function()
      return {mod = module({mx.cpu(0), mx.cpu(1)}), b = batch(4)}
    end, op, function(p) assert.same({3, 4}, p.fc_weight.shape) end)
    assert.is_true(n >= 1)
    local m = inject('data-parallel bind', function() return {} end, function()
      return module({mx.cpu(0), mx.cpu(1)})
    end, function(mod) assert.is_true(mod.binded) end)
    assert.is_true(m > 20)
  end)

  it('the bucketing pool: a new bucket, forward and backward', function()
    local function sym_gen(T)
      local emb = mx.sym.Embedding{data = mx.sym.Variable('data'), input_dim = 5, output_dim = 3, name = 'emb'}
      local pred = mx.sym.FullyConnected{data = mx.sym.Reshape{data = emb, shape = {-1, 3}}, num_hidden = 5, name = 'pred'}
      local label = mx.sym.Reshape{data = mx.sym.Variable('softmax_label'), shape = {-1}}
      return mx.sym.SoftmaxOutput{data = pred, label = label, name = 'softmax'}, {'data'}, {'softmax_label'}
    end
    local function bbatch(T)
      local d = {}
      for i = 1, 2 do d[i] = {} for t = 1, T do d[i][t] = (i + t) % 5 end end
      return mx.io.DataBatch{data = {nd.array(d)}, label = {nd.array(d)}, bucket_key = T,
        provide_data = {mx.io.DataDesc('data', {2, T})}, provide_label = {mx.io.DataDesc('softmax_label', {2, T})}}
    end
    local function prepare()
      local mod = mx.mod.BucketingModule{sym_gen = sym_gen, default_bucket_key = 6, logger = false}
      mod:bind{data_shapes = {{'data', {2, 6}}}, label_shapes = {{'softmax_label', {2, 6}}}}
      mod:init_params{initializer = mx.init.Constant(0.1)}
      mod:init_optimizer{optimizer = 'sgd', optimizer_params = {learning_rate = 0.1}}
      return {mod = mod, b = bbatch(3)}
    end
    local n = inject('bucketing', prepare, function(s)
      s.mod:forward_backward(s.b)
      s.mod:update()
      return s.mod:get_outputs()[1]
    end, function(out) assert.same({6, 5}, out.shape) end)
    assert.is_true(n > 10, 'only ' .. n .. ' allocations')
  end)

  it('checkpoint save and load (symbol, params, optimizer states)', function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute('mkdir -p ' .. dir))
    local src = module()
    src:forward_backward(batch(4))
    src:update()
    local want = src:get_params().fc_weight:toflat()
    local k = 0
    local n = inject('checkpoint save', function() return {} end, function()
      k = k + 1
      src:save_checkpoint(dir .. '/m', k, true)
      return k
    end, function(epoch)
      local _, arg = mx.model.load_checkpoint(dir .. '/m', epoch)
      H.near(arg.fc_weight:toflat(), want, 1e-6)
    end)
    assert.is_true(n >= 5, 'only ' .. n .. ' allocations')
    local m = inject('checkpoint load', function() return {} end, function()
      local mod = mx.mod.Module.load(dir .. '/m', k, true, {logger = false})
      mod:bind{data_shapes = {{'data', {4, 4}}}, label_shapes = {{'softmax_label', {4}}}}
      mod:init_optimizer{optimizer = 'sgd', optimizer_params = {learning_rate = 0.1, momentum = 0.9}}
      return mod
    end, function(mod) H.near(mod:get_params().fc_weight:toflat(), want, 1e-6) end)
    assert.is_true(m >= 10, 'only ' .. m .. ' allocations')
    -- a module dropped by a failed step before init_optimizer removes its snapshot of the
    -- .states file when it is collected (luamx.module.base.keep_preloaded_states)
    collectgarbage()
    collectgarbage()
    local p = io.popen('ls ' .. dir .. ' | grep -c tmp')
    assert.equal('0', p:read('*l'))
    p:close()
    os.execute('rm -rf ' .. dir)
  end)

  it('reports the distinct allocation sites the failures hit', function()
    local n = sites()
    io.stderr:write(('\nfault injection: %d distinct allocation sites failed\n  %s\n')
      :format(n, table.concat(report, '\n  ')))
    assert.is_true(n >= 50, 'only ' .. n .. ' distinct sites')
  end)
end)
