-- Mixed-precision training on the CPU: the W1-shaped MLP (FC-ReLU-FC-ReLU-FC-SoftmaxOutput,
-- as examples/mnist_mlp.lua) on the shipped 8x8 digits, trained in float32, then with the
-- layers in float16 and in bfloat16 (Cast after the data and before the loss, as MXNet's
-- AMP does) and SGD with multi_precision = true keeping float32 master weights. Each
-- low-precision run must reach the float32 run's held-out accuracy within MARGIN; the
-- float32 run itself must learn (above FLOOR), so the comparison is not between two
-- failures. Same seed, data order and initial values (drawn in float32, then rounded)
-- for every run.
local mx = require 'luamx'

local MARGIN, FLOOR, EPOCHS, BATCH = 0.03, 0.9, 20, 32

local function split()
  local x, y = mx.datasets.digits()
  local tr, va = {}, {}
  for i = 0, x.shape[1] - 1 do
    if i % 6 == 5 then va[#va + 1] = i else tr[#tr + 1] = i end
  end
  local function take(src, rows)
    local shape = src.shape
    shape[1] = #rows
    local dst = mx.nd.empty(shape)
    mx.io.gather_rows(dst, src, rows)
    return dst
  end
  return take(x, tr), take(y, tr), take(x, va), take(y, va)
end

local function mlp(dt)
  local s = mx.sym.Variable('data')
  if dt ~= 'float32' then s = mx.sym.Cast {data = s, dtype = dt, name = 'to_' .. dt} end
  s = mx.sym.FullyConnected {data = s, num_hidden = 128, name = 'fc1'}
  s = mx.sym.Activation {data = s, act_type = 'relu', name = 'relu1'}
  s = mx.sym.FullyConnected {data = s, num_hidden = 64, name = 'fc2'}
  s = mx.sym.Activation {data = s, act_type = 'relu', name = 'relu2'}
  s = mx.sym.FullyConnected {data = s, num_hidden = 10, name = 'fc3'}
  if dt ~= 'float32' then s = mx.sym.Cast {data = s, dtype = 'float32', name = 'to_float32'} end
  return mx.sym.SoftmaxOutput {data = s, name = 'softmax'}
end

local tx, ty, vx, vy = split()

-- the initial values every run starts from: Xavier draws in float32
local function initial_params()
  mx.random.seed(42)
  local it = mx.io.NDArrayIter {data = tx, label = ty, batch_size = BATCH}
  local mod = mx.mod.Module {symbol = mlp('float32'), context = mx.cpu()}
  mod:bind {data_shapes = it.provide_data, label_shapes = it.provide_label}
  mod:init_params {initializer = mx.init.Xavier {magnitude = 2}}
  local args = mod:get_params()
  local t = {}
  for k, v in pairs(args) do t[k] = v:copy() end
  return t
end

-- trains one run from `init` rounded to dt; returns the held-out accuracy and the module
local function train(dt, init)
  mx.random.seed(42)
  local it = mx.io.NDArrayIter {data = tx, label = ty, batch_size = BATCH, shuffle = true}
  local val = mx.io.NDArrayIter {data = vx, label = vy, batch_size = BATCH}
  local mod = mx.mod.Module {symbol = mlp(dt), context = mx.cpu()}
  local args = {}
  for k, v in pairs(init) do args[k] = v:astype(dt) end
  mod:fit(it, {num_epoch = EPOCHS, arg_params = args, optimizer = 'sgd',
               optimizer_params = {learning_rate = 0.1, momentum = 0.9, wd = 1e-4,
                                   multi_precision = dt ~= 'float32'}})
  local score = mod:score(val, 'acc')
  return score[1][2], mod
end

describe('mixed-precision W1 MLP', function()
  local acc32, start

  setup(function()
    start = initial_params()
    acc32 = train('float32', start)
  end)

  it('trains in float32 to a usable accuracy (the reference)', function()
    assert(acc32 > FLOOR, ('float32 held-out accuracy %.4f <= %.2f'):format(acc32, FLOOR))
  end)

  for _, dt in ipairs {'float16', 'bfloat16'} do
    it(dt .. ' layers with float32 master weights reach the float32 accuracy', function()
      local acc, mod = train(dt, start)
      local args = mod:get_params()
      assert.are.equal(dt, args.fc1_weight.dtype) -- the layers did run in dt
      assert(acc >= acc32 - MARGIN, ('%s held-out accuracy %.4f, float32 %.4f, margin %.2f')
        :format(dt, acc, acc32, MARGIN))
    end)
  end
end)
