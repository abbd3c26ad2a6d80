-- spec/name_spec.lua — mx.name.NameManager and mx.name.Prefix (MXNet's python/mxnet/name.py):
-- per-manager counters kept in the engine, prefixes on given and automatic node names and
-- on the argument variables named after the node, nesting, restoring on errors.
local mx = require 'luamx'
local H = require 'helpers'

describe('mx.name', function()
  local x = mx.sym.Variable('x')

  it('a NameManager has its own counters, starting at 0 and kept across scopes', function()
    local nm = mx.name.NameManager()
    local a = nm:with(function() return mx.sym.FullyConnected{data = x, num_hidden = 2} end)
    local b = nm:with(function() return mx.sym.FullyConnected{data = x, num_hidden = 2} end)
    assert.equal('fullyconnected0', a.name)
    assert.equal('fullyconnected1', b.name)
    local c = mx.name.NameManager():with(function() return mx.sym.FullyConnected{data = x, num_hidden = 2} end)
    assert.equal('fullyconnected0', c.name)
    assert.equal('fullyconnected2', nm:get(nil, 'fullyconnected'))
    assert.equal('given', nm:get('given', 'fullyconnected'))
  end)

  it('outside any scope the process-wide counters go on undisturbed', function()
    mx.sym.reset_names()
    local a = mx.sym.Activation{data = x, act_type = 'relu'}
    mx.name.NameManager():with(function() mx.sym.Activation{data = x, act_type = 'relu'} end)
    local b = mx.sym.Activation{data = x, act_type = 'relu'}
    assert.equal('activation0', a.name)
    assert.equal('activation1', b.name)
    assert.equal('activation2', mx.name.default:get(nil, 'activation'))
    assert.equal(mx.name.default, mx.name.current())
  end)

  it('Prefix prepends to given and automatic node names and their argument variables, not to Variables', function()
    local fc, act, v = mx.name.Prefix('net_'):with(function()
      local fc = mx.sym.FullyConnected{data = x, num_hidden = 3, name = 'fc'}
      return fc, mx.sym.Activation{data = fc, act_type = 'tanh'}, mx.sym.Variable('w')
    end)
    assert.equal('net_fc', fc.name)
    assert.equal('net_activation0', act.name)
    assert.equal('w', v.name)
    assert.same({'x', 'net_fc_weight', 'net_fc_bias'}, act:list_arguments())
    assert.equal('<Prefix "net_">', tostring(mx.name.Prefix('net_')))
  end)

  it('scopes nest (the innermost wins) and are left when the function raises', function()
    local outer = mx.name.Prefix('a_')
    local names = outer:with(function()
      local inner = mx.name.Prefix('b_'):with(function()
        assert.equal('<Prefix "b_">', tostring(mx.name.current()))
        return mx.sym.Activation{data = x, act_type = 'relu'}.name
      end)
      return {inner, mx.sym.Activation{data = x, act_type = 'relu'}.name}
    end)
    assert.same({'b_activation0', 'a_activation0'}, names)
    local err = H.raises(function()
      mx.name.Prefix('c_'):with(function() error('boom') end)
    end, 'boom')
    assert.truthy(err)
    assert.equal(mx.name.default, mx.name.current())
    local s = mx.sym.FullyConnected{data = x, num_hidden = 1, name = 'plain'}
    assert.equal('plain', s.name)
  end)

  it('passes arguments and results through with(fn, ...)', function()
    local a, b = mx.name.NameManager():with(function(p, q) return q, p end, 1, 2)
    assert.equal(2, a); assert.equal(1, b)
  end)

  it('refuses bad arguments naming the function', function()
    H.raises(function() mx.name.Prefix(3) end, 'mx.name.Prefix: prefix must be a string, got number')
    H.raises(function() mx.name.NameManager():with(5) end, 'NameManager:with: expected a function, got number')
    H.raises(function() mx.name.default:with(function() end) end, 'the default name manager cannot be entered')
    H.raises(function() mx.name.NameManager():get(nil, nil) end, 'NameManager:get: hint must be a string, got nil')
    H.raises(function() mx.capi.check(mx.capi.C.lmx_name_manager_exit()) end, 'name manager: exit without enter')
  end)

  it('RNN cells built under a Prefix get the prefix on their nodes (MXNet behaviour)', function()
    local outs = mx.name.Prefix('enc_'):with(function()
      return mx.rnn.GRUCell(2, 'g_'):unroll(2, mx.sym.Variable('data'), nil, 'NTC', true)
    end)
    local internals = table.concat(outs:get_internals():list_outputs(), ' ')
    assert.truthy(internals:find('enc_g_t0__i2h_output', 1, true))
    assert.truthy(internals:find('g_i2h_weight', 1, true))
  end)
end)
