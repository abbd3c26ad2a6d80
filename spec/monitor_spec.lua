-- spec/monitor_spec.lua — mx.monitor.Monitor against an executor-like stub (the real
-- executor only has to provide set_monitor_callback, arg/aux arrays and their names),
-- and the pattern matcher.
local mx = require 'luamx'
local H = require 'helpers'
local nd = mx.nd

local function stub()
  return {
    arg_arrays = {nd.array{3, 4}, nd.array{1}},
    aux_arrays = {nd.array{2, 2, 2, 2}},
    list_arguments = function() return {'fc_weight', 'data'} end,
    list_auxiliary_states = function() return {'bn_moving_var'} end,
    set_monitor_callback = function(self, cb, all) self.cb, self.all = cb, all end,
  }
end

local function triples(res)
  local t = {}
  for i, e in ipairs(res) do
    assert.equal(e[1], e.step); assert.equal(e[2], e.name); assert.equal(e[3], e.value)
    t[i] = {e.step, e.name, e.value}
  end
  return t
end

describe('mx.monitor.Monitor', function()
  it('collects every interval steps: queued op outputs, then args and aux states (RMS)', function()
    local exe, mon = stub(), mx.monitor.Monitor(2)
    mon:install(exe)
    assert.is_false(exe.all)
    mon:tic()
    exe.cb('fc_output', nd.array{1, -1, 1, -1})
    assert.same({{1, 'fc_output', '1.0\t'}, {1, 'fc_weight', '3.535534\t'}, {1, 'data', '1.0\t'},
                 {1, 'bn_moving_var', '2.0\t'}}, triples(mon:toc()))
    mon:tic()                                   -- step 1: not a multiple of 2
    exe.cb('fc_output', nd.array{5})
    assert.same({}, mon:toc())
    mon:tic()                                   -- step 2: active again, reported as 3
    local res = mon:toc()
    assert.equal(3, #res)
    assert.equal(3, res[1].step)
    assert.equal(3, mon.step)
  end)

  it('filters by pattern, sorts by name and prints MXNet\'s line format', function()
    local exe = stub()
    local mon = mx.monitor.Monitor(1, nil, 'fc_.*|bn', true)
    mon:install(exe)
    mon:tic()
    exe.cb('relu_output', nd.array{9})
    exe.cb('fc_output', nd.array{0.5})
    local lines, saved = {}, mx.monitor.log
    mx.monitor.log = function(m) lines[#lines + 1] = m end
    mon:toc_print()
    mx.monitor.log = saved
    assert.same({'Batch:       1 bn_moving_var                  2.0\t',
                 'Batch:       1 fc_output                      0.5\t',
                 'Batch:       1 fc_weight                      3.535534\t'}, lines)
  end)

  it('renders a custom statistic: scalars as float32 text, other arrays with tostring', function()
    local exe = stub()
    local mon = mx.monitor.Monitor(1, function(x) return {nd.array{x.size}, nd.array{1, 2}} end, 'data')
    mon:install(exe)
    mon:tic()
    local res = mon:toc()
    assert.equal(1, #res)
    assert.equal('1.0\t' .. tostring(nd.array{1, 2}) .. '\t', res[1].value)
  end)

  it('monitors a real executor: op outputs during forward, then arguments', function()
    local s = mx.sym.FullyConnected{data = mx.sym.Variable('a'), num_hidden = 2, name = 'fc', no_bias = true}
    local exe = s:simple_bind{ctx = mx.cpu(), a = {1, 3}, grad_req = 'null'}
    exe.arg_dict.a:set{{1, 2, 2}}
    exe.arg_dict.fc_weight:set{{1, 0, 0}, {0, 3, 4}}
    local mon = mx.monitor.Monitor(1)
    mon:install(exe)
    mon:tic()
    exe:forward{is_train = false}
    -- fc_output = [1, 14]: sqrt(197/2); a: sqrt(9/3); fc_weight: sqrt(26/6)
    assert.same({{1, 'fc_output', '9.924717\t'}, {1, 'a', '1.7320508\t'}, {1, 'fc_weight', '2.081666\t'}},
      triples(mon:toc()))
  end)

  it('rejects a bad interval', function()
    H.raises(function() mx.monitor.Monitor(0) end, 'interval must be a positive integer, got 0')
  end)
end)

describe('mx.monitor.re_match', function()
  local m = mx.monitor.re_match
  it("matches at the start like Python's re.match", function()
    assert.is_true(m('.*', 'anything'))
    assert.is_true(m('fc', 'fc1_weight'))
    assert.is_false(m('fc', 'xfc1'))
    assert.is_true(m('.*_weight$', 'conv_weight'))
    assert.is_false(m('.*_weight$', 'conv_weight_grad'))
    assert.is_true(m('conv|fc', 'fc2'))
    assert.is_true(m('fc\\d_bias', 'fc3_bias'))
    assert.is_true(m('[a-c]+-x', 'abc-x'))
    assert.is_true(m('(?:fc)1', 'fc1'))
    assert.is_false(m('lua:%a+_bias$', 'fc1_bias'))
    assert.is_true(m('lua:%a+%d_bias$', 'fc1_bias'))
  end)
  it('rejects what it cannot translate', function()
    H.raises(function() m('a{2}', 'aa') end, "repetition count '{m,n}' is not supported")
    H.raises(function() m('(ab)+', 'ab') end, 'a quantified group is not supported')
  end)
end)
