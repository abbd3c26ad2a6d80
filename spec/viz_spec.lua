-- mx.viz.plot_network: Graphviz text of a network, with shapes on the edges.
local mx = require 'luamx'
local H = require 'helpers'

local function lenet_head()
  local d = mx.sym.Variable('data')
  local c = mx.sym.Convolution{data = d, kernel = {5, 5}, num_filter = 20, name = 'conv1'}
  local a = mx.sym.Activation{data = c, act_type = 'tanh', name = 'tanh1'}
  local p = mx.sym.Pooling{data = a, kernel = {2, 2}, stride = {2, 2}, pool_type = 'max', name = 'pool1'}
  local f = mx.sym.FullyConnected{data = mx.sym.Flatten{data = p, name = 'flat'}, num_hidden = 10, name = 'fc'}
  return mx.sym.SoftmaxOutput{data = f, name = 'softmax'}
end

describe('mx.viz.plot_network', function()
  it('draws operators with their key parameters and hides parameters', function()
    local src = tostring(mx.viz.plot_network(lenet_head(), {title = 'lenet'}))
    assert.truthy(src:find('digraph "lenet" {', 1, true))
    assert.truthy(src:find('label="Convolution\\n5x5/1, 20"', 1, true))
    assert.truthy(src:find('label="Pooling\\nmax, 2x2/2x2"', 1, true))
    assert.truthy(src:find('label="Activation\\ntanh"', 1, true))
    assert.truthy(src:find('label="FullyConnected\\n10"', 1, true))
    assert.is_nil(src:find('conv1_weight', 1, true))
    local shown = tostring(mx.viz.plot_network(lenet_head(), {hide_weights = false}))
    assert.truthy(shown:find('label="conv1_weight"', 1, true))
  end)

  it('labels edges with inferred shapes', function()
    local src = tostring(mx.viz.plot_network(lenet_head(), {shape = {data = {2, 1, 28, 28}}}))
    for _, s in ipairs {'2x1x28x28', '2x20x24x24', '2x20x12x12', '2x2880', '2x10'} do
      assert.truthy(src:find('label="' .. s .. '"', 1, true), s)
    end
  end)

  it('rejects bad input with a message', function()
    H.raises(function() return mx.viz.plot_network(42) end, 'plot_network: expected a Symbol, got number')
    H.raises(function() return mx.viz.plot_network(lenet_head(), {shape = {data = {2, 3}}}) end,
             'plot_network: cannot infer shapes')
  end)

  it('saves the source atomically', function()
    local path = os.tmpname()
    mx.viz.plot_network(lenet_head()):save(path)
    local f = io.open(path)
    assert.truthy(f:read('*a'):find('^digraph'))
    f:close()
    os.remove(path)
  end)
end)
