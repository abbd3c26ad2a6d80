-- The bucketing executor pool (src/exec/bucket.c through luamx.bucketing): buckets share
-- parameters, gradients and one memory pool with the default bucket; sym_gen is called
-- once per key; the pool grows only for a bucket larger than everything before it.
local ffi = require 'ffi'
local mx = require 'luamx'
local H = require 'helpers'
local C = mx.capi.C
local B = mx.bucketing

local TOL = 1e-5

-- Bucket key = number of rows (a batch-size-like axis, so parameters keep their shapes).
local function make_gen(calls)
  return function(key)
    calls[key] = (calls[key] or 0) + 1
    local data = mx.sym.Variable('data')
    local fc1 = mx.sym.FullyConnected{data = data, num_hidden = 16, name = 'fc1'}
    local act = mx.sym.Activation{data = fc1, act_type = 'relu', name = 'relu1'}
    local fc2 = mx.sym.FullyConnected{data = act, num_hidden = 3, name = 'fc2'}
    return mx.sym.SoftmaxOutput{data = fc2, name = 'softmax'}, {'data'}, {'softmax_label'}
  end
end

local REQ = {data = 'null', softmax_label = 'null', fc1_weight = 'write', fc1_bias = 'write',
             fc2_weight = 'write', fc2_bias = 'write'}

local function shapes(k) return {{'data', {k, 4}}}, {{'softmax_label', {k}}} end

local function new_pool(default_key, calls, grad_req)
  local d, l = shapes(default_key)
  return B.new(default_key, make_gen(calls or {}), {ctx = mx.cpu(), grad_req = grad_req or REQ,
                                                   data_shapes = d, label_shapes = l})
end

local function switch(pool, k) return pool:switch(k, shapes(k)) end

local function fill_params(exe)
  mx.random.seed(7)
  for _, name in ipairs{'fc1_weight', 'fc1_bias', 'fc2_weight', 'fc2_bias'} do
    exe.arg_dict[name]:set(mx.nd.random.uniform(-0.5, 0.5, exe.arg_dict[name].shape))
  end
end

local function run(exe, k)
  local x, y = {}, {}
  for i = 1, k do
    x[i] = {i % 3, (i * 7) % 5 - 2, 1, -i % 4}
    y[i] = i % 3
  end
  exe:forward{is_train = true, data = mx.nd.array(x), softmax_label = mx.nd.array(y)}
  exe:backward()
end

local total_allocs = H.total_allocs

describe('bucketing pool', function()
  it('shares parameters: a write through one bucket is seen by another', function()
    local pool = new_pool(32)
    local e8 = switch(pool, 8)
    e8.arg_dict.fc1_weight:fill(0.5)
    assert.are.same({0.5, 0.5}, {pool.executors[32].arg_dict.fc1_weight:toflat()[1],
                                 pool.executors[32].arg_dict.fc1_weight:toflat()[64]})
    pool.executors[32].arg_dict.fc2_bias:set({1, 2, 3})
    assert.are.same({1, 2, 3}, e8.arg_dict.fc2_bias:toflat())
  end)

  it('shares gradients: backward on a bucket writes the default bucket\'s gradient arrays', function()
    local pool = new_pool(32)
    fill_params(pool.current)
    local e8 = switch(pool, 8)
    run(e8, 8)
    local g = e8.grad_dict.fc1_weight:toflat()
    assert.are.same(g, pool.executors[32].grad_dict.fc1_weight:toflat())
    local nonzero = 0
    for _, v in ipairs(g) do if v ~= 0 then nonzero = nonzero + 1 end end
    assert.is_true(nonzero > 0)
  end)

  it('grad_req add accumulates across buckets', function()
    local ref = new_pool(32)
    fill_params(ref.current)
    local r16 = switch(ref, 16)
    run(r16, 16)
    local g16 = r16.grad_dict.fc2_weight:toflat()
    local r8 = switch(ref, 8)
    run(r8, 8)
    local g8 = r8.grad_dict.fc2_weight:toflat()

    local add = {}
    for k, v in pairs(REQ) do add[k] = v == 'write' and 'add' or v end
    local pool = new_pool(32, nil, add)
    fill_params(pool.current)
    run(switch(pool, 16), 16)
    run(switch(pool, 8), 8)
    local want = {}
    for i = 1, #g16 do want[i] = g16[i] + g8[i] end
    H.near(pool.executors[32].grad_dict.fc2_weight:toflat(), want, TOL)
  end)

  it('with every bucket bound, memory stays that of the largest bucket alone (<= 1.1x)', function()
    local alone_pool, alone_arrays = new_pool(32):memory()
    local pool = new_pool(32)
    for _, k in ipairs{8, 16, 24, 32 - 1} do switch(pool, k) end
    local p, a = pool:memory()
    assert.are.equal(alone_pool, p) -- the pool did not grow at all
    assert.is_true(p + a <= 1.1 * (alone_pool + alone_arrays))
    local _, _, pool_of_exe = pool.executors[8]:memory()
    assert.are.equal(alone_pool, pool_of_exe)
    assert.is_true(alone_pool > 0)
  end)

  it('a bucket larger than the default grows the pool once; equal or smaller ones do not', function()
    local pool = new_pool(16)
    local p0, a0 = pool:memory()
    switch(pool, 32)
    local p1, a1 = pool:memory()
    assert.is_true(p1 > p0)
    assert.is_true(a1 > a0) -- the 32-row inputs do not fit in the 16-row ones
    for _, k in ipairs{31, 8, 24} do switch(pool, k) end
    assert.are.same({p1, a1}, {pool:memory()}) -- 31 rows view the 32-row inputs
    assert.are.same({16, 32, 31, 8, 24}, pool:keys())
  end)

  it('results of a bucket equal a bucket bound on its own', function()
    local pool = new_pool(32)
    fill_params(pool.current)
    local e8 = switch(pool, 8)
    run(pool.executors[32], 32) -- the default runs first, then the small bucket reuses its memory
    run(e8, 8)
    local solo = new_pool(8)
    fill_params(solo.current)
    run(solo.current, 8)
    H.near(e8.outputs[1]:toflat(), solo.current.outputs[1]:toflat(), TOL)
    H.near(e8.grad_dict.fc1_weight:toflat(), solo.current.grad_dict.fc1_weight:toflat(), TOL)
  end)

  it('switching to a bound bucket allocates nothing', function()
    local pool = new_pool(32)
    switch(pool, 8)
    local out = ffi.new('lmx_executor *[1]')
    local before = total_allocs()
    assert.are.equal(0, C.lmx_bucketing_get(pool._h, 8, out))
    assert.are.equal(before, total_allocs())
    C.lmx_executor_free(out[0])
    local e = pool.executors[8]
    assert.are.equal(e, switch(pool, 8))
    assert.are.equal(8, pool.current_key)
  end)

  it('calls sym_gen once per key', function()
    local calls = {}
    local pool = new_pool(32, calls)
    for _, k in ipairs{8, 16, 8, 32, 16, 8} do switch(pool, k) end
    assert.are.same({[32] = 1, [8] = 1, [16] = 1}, calls)
    assert.are.equal(3, pool.sym_gen_calls)
  end)

  it('a sym_gen returning something else than a Symbol raises an error naming the key', function()
    H.raises(function() B.new(5, function() return 42 end, {}) end,
      'sym_gen(5) must return a Symbol, got number')
    local pool = new_pool(32)
    pool.sym_gen = function(key) if key == 12 then return {} end return make_gen({})(key) end
    H.raises(function() switch(pool, 12) end, 'sym_gen(12) must return a Symbol, got a table')
  end)

  it('errors name the bucket key', function()
    local pool = new_pool(32)
    local out = ffi.new('lmx_executor *[1]')
    assert.are_not.equal(0, C.lmx_bucketing_get(pool._h, 99, out))
    assert.matches('bucket key 99 is not bound', ffi.string(C.lmx_last_error()), 1, true)
    pool.sym_gen = function()
      local data = mx.sym.Variable('data')
      local fc1 = mx.sym.FullyConnected{data = data, num_hidden = 5, name = 'fc1'}
      return mx.sym.SoftmaxOutput{data = fc1, name = 'softmax'}
    end
    H.raises(function() switch(pool, 7) end, "bucket key 7: FullyConnected 'fc1'",
      "input 'weight': expected shape (5,4), got (16,4)")
    H.raises(function() pool:switch(1.5) end, 'bucket keys are integers')
  end)
end)
