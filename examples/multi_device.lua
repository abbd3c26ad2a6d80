-- examples/multi_device.lua — data-parallel training: the same MLP trained on one CPU
-- context and on two (mx.cpu(0), mx.cpu(1)), from the same initial parameters on the same
-- batches, gives the same model.
--
--   luajit examples/multi_device.lua
--   luajit examples/multi_device.lua --num-epochs 1 --quick
--
-- Each batch is split over the contexts (work_load_list, MXNet's slicing); gradients
-- are summed across the devices (kvstore 'local') and every copy takes the same step,
-- so up to float rounding the two runs agree. It prints
--   1 context:  loss <l1>  accuracy <a1>
--   2 contexts: loss <l2>  accuracy <a2>
--   difference: loss <|l1-l2|>  accuracy <|a1-a2|>  max parameter difference <d>
-- with differences around 1e-6 or below (float32 sums in another order).
local common = dofile(((arg and arg[0] or ''):match('^(.-)[^/\\]*$') or '') .. 'common.lua')
local mx, args = common.setup{['num-epochs'] = 3, quick = false, ['batch-size'] = 32}

local x, y = mx.datasets.digits()
local n = args.quick and 256 or 1500
local train_x, train_y = x:slice(1, n), y:slice(1, n)
local val_x, val_y = x:slice(1501, x.shape[1]), y:slice(1501, x.shape[1])

local net = mx.sym.Variable('data')
net = mx.sym.FullyConnected{data = net, num_hidden = 64, name = 'fc1'}
net = mx.sym.Activation{data = net, act_type = 'relu'}
net = mx.sym.FullyConnected{data = net, num_hidden = 10, name = 'fc2'}
net = mx.sym.SoftmaxOutput{data = net, name = 'softmax'}

-- Initial parameters drawn once, so both runs start from the same point.
mx.random.seed(3)
local init_mod = mx.mod.Module{symbol = net}
init_mod:bind{data_shapes = {{'data', {args['batch-size'], 64}}}, label_shapes = {{'softmax_label', {args['batch-size']}}}}
init_mod:init_params{initializer = mx.init.Xavier{magnitude = 2}}
local arg0, aux0 = init_mod:get_params()

local function train(contexts)
  local it = mx.io.NDArrayIter{data = train_x, label = train_y, batch_size = args['batch-size']}
  local mod = mx.mod.Module{symbol = net, context = contexts, logger = false}
  mod:fit(it, {num_epoch = args['num-epochs'], arg_params = arg0, aux_params = aux0, kvstore = 'local',
               optimizer = 'sgd', optimizer_params = {learning_rate = 0.1, momentum = 0.9}})
  local val = mx.io.NDArrayIter{data = val_x, label = val_y, batch_size = args['batch-size']}
  local ce = mod:score(val, 'ce')[1][2]
  local acc = mod:score(val, 'acc')[1][2]
  return ce, acc, mod:get_params()
end

local l1, a1, p1 = train({mx.cpu(0)})
local l2, a2, p2 = train({mx.cpu(0), mx.cpu(1)})
local maxdiff = 0
for name, arr in pairs(p1) do
  local d = (arr - p2[name]):toflat()
  for _, v in ipairs(d) do maxdiff = math.max(maxdiff, math.abs(v)) end
end
print(('1 context:  loss %.6f  accuracy %.4f'):format(l1, a1))
print(('2 contexts: loss %.6f  accuracy %.4f'):format(l2, a2))
print(('difference: loss %.3g  accuracy %.3g  max parameter difference %.3g')
  :format(math.abs(l1 - l2), math.abs(a1 - a2), maxdiff))
