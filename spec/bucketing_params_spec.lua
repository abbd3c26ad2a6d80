-- spec/bucketing_params_spec.lua — a bucket whose sym_gen adds parameters the default
-- bucket lacks: they start from the module's initializer (not zeros) when the bucket is
-- first bound, are shared with every later bucket that has them, appear in get_params
-- and checkpoints (with their optimizer state), load back from a checkpoint, and keep
-- their own optimizer state (the shared parameters keep the default bucket's).
local mx = require 'luamx'
local nd = mx.nd

mx.logging.set_level('error')

local N, D, H = 2, 3, 4

-- key 1 (the default): data -> fc -> softmax. Keys >= 2: data -> pre (D hidden, an extra
-- layer) -> fc -> softmax, so fc_weight keeps its shape (H, D) in every bucket.
local function sym_gen(key)
  local x = mx.sym.Variable('data')
  if key >= 2 then x = mx.sym.FullyConnected{data = x, num_hidden = D, name = 'pre'} end
  local fc = mx.sym.FullyConnected{data = x, num_hidden = H, name = 'fc'}
  return mx.sym.SoftmaxOutput{data = fc, name = 'softmax'}, {'data'}, {'softmax_label'}
end

local function batch(key, seed)
  local d, l = {}, {}
  for i = 1, N do
    d[i] = {}
    for j = 1, D do d[i][j] = ((i * 3 + j * 5 + seed) % 7) / 7 - 0.4 end
    l[i] = (i + seed) % H
  end
  return mx.io.DataBatch{data = {nd.array(d)}, label = {nd.array(l)}, bucket_key = key,
    provide_data = {mx.io.DataDesc('data', {N, D})}, provide_label = {mx.io.DataDesc('softmax_label', {N})}}
end

local function make(opt)
  local mod = mx.mod.BucketingModule{sym_gen = sym_gen, default_bucket_key = 1, logger = false}
  mod:bind{data_shapes = {{'data', {N, D}}}, label_shapes = {{'softmax_label', {N}}}}
  mod:init_params{initializer = mx.init.Constant(0.25)}
  if opt ~= false then
    mod:init_optimizer{optimizer = 'sgd', optimizer_params = {learning_rate = 0.5, momentum = 0.9}}
  end
  return mod
end

local function param_of(mod, key, name)
  local m = mod.buckets[key]
  for i, n in ipairs(m._exec_group.param_names) do
    if n == name then return m._exec_group.param_arrays[i][1] end
  end
end

local function step(mod, key, seed)
  mod:forward(batch(key, seed), true)
  mod:backward()
  mod:update()
end

local function all_equal(list, v)
  for _, x in ipairs(list) do if x ~= v then return false end end
  return true
end

describe('BucketingModule: parameters a bucket adds', function()
  it('start from the initializer when the bucket is first bound, not from zeros', function()
    local mod = make(false)
    mod:forward(batch(2, 1), false)
    local w = param_of(mod, 2, 'pre_weight')
    assert.is_true(all_equal(w:toflat(), 0.25), 'pre_weight on the device: ' .. table.concat(w:toflat(), ' '))
    local args = mod:get_params()
    assert.is_not_nil(args.pre_weight, 'get_params lacks pre_weight')
    assert.is_not_nil(args.pre_bias, 'get_params lacks pre_bias')
    assert.is_true(all_equal(args.pre_weight:toflat(), 0.25))
    assert.same({D, D}, args.pre_weight.shape)
  end)

  it('are in get_params after training, whichever bucket is current', function()
    local mod = make()
    step(mod, 2, 1)
    step(mod, 2, 2)
    local dev = param_of(mod, 2, 'pre_weight'):toflat()
    assert.is_false(all_equal(dev, 0.25), 'training did not change pre_weight')
    mod:forward(batch(1, 3), false) -- the default bucket (no pre_*) is current now
    assert.equal(1, mod.bucket_key)
    local args = mod:get_params()
    assert.same(dev, args.pre_weight:toflat())
  end)

  it('are shared with a later bucket that has them', function()
    local mod = make()
    step(mod, 2, 1)
    mod:forward(batch(3, 2), false) -- bucket 3 has pre_* too
    assert.same(param_of(mod, 2, 'pre_weight'):toflat(), param_of(mod, 3, 'pre_weight'):toflat())
    step(mod, 3, 4)
    assert.same(param_of(mod, 3, 'pre_weight'):toflat(), param_of(mod, 2, 'pre_weight'):toflat())
    assert.same(param_of(mod, 1, 'fc_weight'):toflat(), param_of(mod, 3, 'fc_weight'):toflat())
  end)

  it('keep their own optimizer state; shared parameters keep the default bucket\'s', function()
    local mod = make()
    step(mod, 1, 1) -- default bucket first: fc_* get updater indices 0 and 1
    step(mod, 2, 2) -- a bucket whose argument list starts with pre_*: must not take those
    step(mod, 1, 3)
    local st = mod.buckets[1]._updater.states
    assert.same({H, D}, st[0].shape)    -- fc_weight's momentum
    assert.same({H}, st[1].shape)       -- fc_bias's
    assert.same({D, D}, st.pre_weight.shape)
    assert.same({D}, st.pre_bias.shape)
  end)

  it('survive a forced rebind and come back when their bucket is bound again', function()
    local mod = make()
    step(mod, 2, 1)
    local want = param_of(mod, 2, 'pre_weight'):toflat()
    mod:bind {data_shapes = {{'data', {N, D}}}, label_shapes = {{'softmax_label', {N}}}, force_rebind = true}
    assert.is_nil(mod.buckets[2])
    mod:forward(batch(2, 2), false)
    assert.same(want, param_of(mod, 2, 'pre_weight'):toflat())
  end)

  it('are saved in checkpoints with their optimizer state, and load back', function()
    local prefix = os.tmpname()
    local mod = make()
    step(mod, 2, 1)
    step(mod, 1, 2)
    mod:save_checkpoint(prefix, 1, true)
    local saved = nd.load(prefix .. '-0001.params')
    assert.is_not_nil(saved['arg:pre_weight'], 'the checkpoint lacks pre_weight')
    local states = nd.load(prefix .. '-0001.states')
    assert.is_not_nil(states['spre_weight/0'], 'the optimizer states lack pre_weight\'s momentum')
    local want = mod:get_params().pre_weight:toflat()
    local mom = states['spre_weight/0']:toflat()

    local m2 = mx.mod.BucketingModule.load(prefix, 1, sym_gen, 1, true, {logger = false})
    m2:bind{data_shapes = {{'data', {N, D}}}, label_shapes = {{'softmax_label', {N}}}}
    m2:init_optimizer{optimizer = 'sgd', optimizer_params = {learning_rate = 0.5, momentum = 0.9}}
    m2:forward(batch(2, 5), false)
    assert.same(want, param_of(m2, 2, 'pre_weight'):toflat())
    assert.same(mom, m2.buckets[1]._updater.states.pre_weight:toflat())
    for _, f in ipairs {'-0001.params', '-0001.states', '-1-symbol.json', '-2-symbol.json', '.buckets'} do
      os.remove(prefix .. f)
    end
    os.remove(prefix)
  end)
end)
