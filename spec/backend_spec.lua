-- The backend layering seen from Lua: bind refuses an operator its node's device has no
-- kernel for (naming op, node and device); imperative calls run on their inputs' context
-- (cpu(1) is a context of its own), create their outputs there, and refuse inputs or
-- outputs on another context, naming the argument and both contexts.
local mx = require 'luamx'
local H = require 'helpers'

describe('kernel tables', function()
  it('every operator has a CPU forward; mx.op.info tells the kernels per device', function()
    for _, name in ipairs(mx.op.list()) do
      local k = mx.op.info(name).kernels
      assert(k.cpu.forward, name .. ': no CPU forward kernel')
      assert(k.gpu.forward or not k.gpu.backward, name .. ': a GPU backward without forward')
    end
    assert.is_true(mx.op.info('FullyConnected').kernels.cpu.backward)
    assert.is_false(mx.op.info('argmax').kernels.cpu.backward) -- no gradient
  end)

  if mx.context.num_gpus() == 0 then
    pending('no GPU context: bind refusal on gpu(0) not checked here (see test_backend.c)')
    return
  end

  it('bind refuses a node whose device has no kernel, naming op, node and device', function()
    local missing
    for _, name in ipairs { 'Convolution', 'FullyConnected', 'Activation' } do
      if not mx.op.info(name).kernels.gpu.forward then missing = name break end
    end
    if not missing then return pending('every probed op has a GPU kernel') end
    local x, sym = mx.sym.Variable('x')
    if missing == 'Convolution' then
      sym = mx.sym.Convolution(x, {kernel = {1, 1}, num_filter = 2, name = 'n1'})
    elseif missing == 'FullyConnected' then
      sym = mx.sym.FullyConnected(x, {num_hidden = 2, name = 'n1'})
    else
      sym = mx.sym.Activation(x, {act_type = 'relu', name = 'n1'})
    end
    H.raises(function() return sym:simple_bind{ctx = mx.gpu(0), x = {1, 2, 3, 3}} end,
             ("no kernel for %s (node 'n1') on gpu(0)"):format(missing))
  end)
end)

describe('imperative calls on the inputs\' context', function()
  it('create their outputs on that context', function()
    local a = mx.nd.array({1, 2, 3}, {ctx = mx.cpu(1)})
    local b = mx.nd.array({10, 20, 30}, {ctx = mx.cpu(1)})
    local y = mx.nd.elemwise_add(a, b)
    assert.are.equal(mx.cpu(1), y.context)
    assert.are.same({11, 22, 33}, y:totable())
    local z = a + b -- NDArray arithmetic runs on the operands' device too
    assert.are.equal(mx.cpu(1), z.context)
    assert.are.same({11, 22, 33}, z:totable())
    assert.are.equal(mx.cpu(1), (a * 2).context)
  end)

  it('refuse inputs on different contexts, naming the argument and both contexts', function()
    local a = mx.nd.array({1, 2, 3}, {ctx = mx.cpu(0)})
    local b = mx.nd.array({10, 20, 30}, {ctx = mx.cpu(1)})
    H.raises(function() return mx.nd.elemwise_add(a, b) end,
             'elemwise_add', 'input 1 is on cpu(1)', 'runs on cpu(0)')
  end)

  it('refuse an output array on another context', function()
    local a = mx.nd.array({1, 2, 3}, {ctx = mx.cpu(0)})
    local out = mx.nd.zeros({3}, {ctx = mx.cpu(2)})
    H.raises(function() return mx.nd.relu(a, {out = out}) end,
             'relu', 'output 0 is on cpu(2)', 'runs on cpu(0)')
  end)
end)
