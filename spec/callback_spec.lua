-- spec/callback_spec.lua — mx.callback (Speedometer's lines, ProgressBar on a
-- non-terminal, log_train_metric, do_checkpoint) and mx.model checkpoints.
local mx = require 'luamx'
local H = require 'helpers'
local nd = mx.nd

local function capture(mod)
  local lines, saved = {}, mod.log
  mod.log = function(m) lines[#lines + 1] = m end
  return lines, function() mod.log = saved end
end

local function fake_clock(times)
  local i, saved = 0, mx.callback.clock
  mx.callback.clock = function() i = i + 1 return times[i] or times[#times] end
  return function() mx.callback.clock = saved end
end

local function acc_metric(v)
  local m = mx.metric.create('acc')
  m.sum_metric, m.num_inst, m.global_sum_metric, m.global_num_inst = v, 1, v, 1
  return m
end

describe('mx.callback.Speedometer', function()
  it("logs MXNet's line every `frequent` batches and resets the local metric", function()
    local lines, restore = capture(mx.callback)
    local restore_clock = fake_clock({0, 2, 4})
    local cb = mx.callback.Speedometer(10, 2)
    local m = acc_metric(0.75)
    cb{epoch = 1, nbatch = 0, eval_metric = m}
    cb{epoch = 1, nbatch = 1, eval_metric = m}
    cb{epoch = 1, nbatch = 2, eval_metric = m}
    restore(); restore_clock()
    assert.same({'Epoch[1] Batch [0-2]\tSpeed: 10.00 samples/sec\taccuracy=0.750000'}, lines)
    assert.equal(0, m.num_inst)           -- local part reset
    assert.equal(1, m.global_num_inst)    -- global part kept
  end)

  it('without auto_reset counts from 0 and keeps the metric; without a metric logs Iter', function()
    local lines, restore = capture(mx.callback)
    local restore_clock = fake_clock({0, 4, 8, 8, 12})
    local cb = mx.callback.Speedometer(5, 4, false)
    local m = acc_metric(0.5)
    cb{epoch = 0, nbatch = 0, eval_metric = m}
    cb{epoch = 0, nbatch = 4, eval_metric = m}
    local cb2 = mx.callback.Speedometer(5, 4)
    cb2{epoch = 2, nbatch = 0}
    cb2{epoch = 2, nbatch = 4}
    restore(); restore_clock()
    assert.same({'Epoch[0] Batch [0-4]\tSpeed: 5.00 samples/sec\taccuracy=0.500000',
                 'Iter[2] Batch [4]\tSpeed: 5.00 samples/sec'}, lines)
    assert.equal(1, m.num_inst)
  end)
end)

describe('mx.callback.ProgressBar', function()
  it('writes plain lines at each tenth on a non-terminal', function()
    local out = {}
    local sink = {write = function(_, ...) for _, s in ipairs{...} do out[#out + 1] = s end end, flush = function() end}
    local restore_clock = fake_clock({0})
    local cb = mx.callback.ProgressBar(4, 8, {out = sink, tty = false})
    for n = 1, 4 do cb{epoch = 0, nbatch = n} end
    restore_clock()
    assert.same({'[==------]  25% 1/4 ETA 0:00:00', '\n', '[====----]  50% 2/4 ETA 0:00:00', '\n',
                 '[======--]  75% 3/4 ETA 0:00:00', '\n', '[========] 100% 4/4 in 0:00:00', '\n'}, out)
  end)

  it('redraws in place with \\r on a terminal and shows the metric and ETA', function()
    local out = {}
    local sink = {write = function(_, ...) for _, s in ipairs{...} do out[#out + 1] = s end end, flush = function() end}
    local restore_clock = fake_clock({0, 10, 20})
    local cb = mx.callback.ProgressBar(4, 4, {out = sink, tty = true})
    cb{epoch = 0, nbatch = 1, eval_metric = acc_metric(0.25)}
    cb{epoch = 0, nbatch = 2}
    restore_clock()
    assert.same({'\r', '[=---]  25% 1/4 0.1 batches/s ETA 0:00:30 accuracy=0.250000', '\27[K', '',
                 '\r', '[==--]  50% 2/4 0.1 batches/s ETA 0:00:20', '\27[K', ''}, out)
  end)
end)

describe('mx.callback.log_train_metric', function()
  it("logs 'Iter[%d] Batch[%d] Train-<name>=%f' every period batches", function()
    local lines, restore = capture(mx.callback)
    local cb = mx.callback.log_train_metric(2, true)
    local m = acc_metric(1)
    cb{epoch = 3, nbatch = 1, eval_metric = m}
    cb{epoch = 3, nbatch = 2, eval_metric = m}
    restore()
    assert.same({'Iter[3] Batch[2] Train-accuracy=1.000000'}, lines)
    assert.equal(0, m.num_inst)
  end)
end)

describe('mx.model checkpoints', function()
  local model = require 'luamx.model'
  it('do_checkpoint saves arg:/aux: params every period epochs, load_checkpoint reads them', function()
    local prefix = os.tmpname()
    os.remove(prefix)
    local lines, restore = capture(model)
    local cb = mx.callback.do_checkpoint(prefix, 2)
    local arg = {fc_weight = nd.array{{1, 2}}, fc_bias = nd.array{3}}
    local aux = {bn_moving_mean = nd.array{4, 5}}
    cb(0, nil, arg, aux)
    cb(1, nil, arg, aux)
    restore()
    assert.same({('Saved checkpoint to "%s-0002.params"'):format(prefix)}, lines)
    assert.is_nil(io.open(prefix .. '-0001.params'))
    local sym, a, x = mx.model.load_checkpoint(prefix, 2)
    assert.is_nil(sym)
    assert.same({{1, 2}}, a.fc_weight:totable())
    assert.same({3}, a.fc_bias:toflat())
    assert.same({4, 5}, x.bn_moving_mean:toflat())
    local raw = nd.load(('%s-0002.params'):format(prefix))
    assert.is_not_nil(raw['arg:fc_weight'])
    assert.is_not_nil(raw['aux:bn_moving_mean'])
    os.remove(prefix .. '-0002.params')
  end)

  it('writes the symbol JSON atomically and load_checkpoint loads it back', function()
    local prefix = os.tmpname()
    os.remove(prefix)
    local sym = mx.sym.FullyConnected{data = mx.sym.Variable('data'), num_hidden = 3, name = 'fc'}
    local lines, restore = capture(model)
    mx.model.save_checkpoint(prefix, 7, sym, {fc_weight = nd.ones{3, 2}, fc_bias = nd.zeros{3}}, {})
    restore()
    assert.is_nil(io.open(prefix .. '-symbol.json.tmp'))
    local f = assert(io.open(prefix .. '-symbol.json'))
    assert.equal(sym:tojson(), f:read('*a'))
    f:close()
    local s2, arg, aux = mx.model.load_checkpoint(prefix, 7)
    assert.same(sym:list_arguments(), s2:list_arguments())
    assert.same({1, 1, 1, 1, 1, 1}, arg.fc_weight:toflat())
    assert.same({}, aux)
    os.remove(prefix .. '-symbol.json')
    os.remove(prefix .. '-0007.params')
  end)

  it('rejects parameter files without arg:/aux: keys', function()
    local prefix = os.tmpname()
    nd.save(prefix .. '-0001.params', {w = nd.array{1}})
    H.raises(function() mx.model.load_checkpoint(prefix, 1) end, 'has key "w", expected arg:<name> or aux:<name>')
    os.remove(prefix .. '-0001.params')
    os.remove(prefix)
  end)
end)
