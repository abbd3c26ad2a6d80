-- examples/lenet.lua — a convolutional network (LeNet) trained with mx.mod.Module.
--
--   luajit examples/lenet.lua                      -- the shipped 8x8 digits
--   luajit examples/lenet.lua --num-epochs 1 --quick
--   luajit examples/lenet.lua --train-images train-images-idx3-ubyte \
--     --train-labels train-labels-idx1-ubyte --test-images t10k-images-idx3-ubyte \
--     --test-labels t10k-labels-idx1-ubyte         -- full MNIST: the 28x28 LeNet
--
-- On the shipped digits the images stay 8x8 (1x8x8) and the network is a smaller LeNet:
-- conv 3x3x20 (pad 1) -> tanh -> maxpool 2/2 -> conv 3x3x50 (pad 1) -> tanh -> maxpool 2/2
-- -> flatten -> FC 100 -> tanh -> FC 10 -> SoftmaxOutput. With MNIST files it is MXNet's
-- LeNet on 1x28x28 (conv 5x5x20 -> tanh -> pool -> conv 5x5x50 -> tanh -> pool -> FC 500
-- -> tanh -> FC 10; BENCHMARKS.md W2). Every 6th digit is held out (299), 1498 train.
-- It prints 'Epoch[%d] Train-accuracy=...', 'Epoch[%d] Validation-accuracy=...' per epoch
-- and ends with 'final validation accuracy: <value>' (about 0.97 after the default 10 epochs).
local common = dofile(((arg and arg[0] or ''):match('^(.-)[^/\\]*$') or '') .. 'common.lua')

local mx, args = common.setup{['num-epochs'] = 10, ['batch-size'] = 32, lr = 0.1, mom = 0.9, wd = 0.0001,
  quick = false, seed = 42, ['train-images'] = '', ['train-labels'] = '', ['test-images'] = '',
  ['test-labels'] = ''}
mx.random.seed(args.seed)
local full = args['train-images'] ~= ''

local function digits_split(x, y, quick) return common.digits_split(mx, x, y, quick) end

local train, val, what
if full then
  train = mx.io.MNISTIter{image = args['train-images'], label = args['train-labels'],
                          batch_size = args['batch-size'], shuffle = true}
  val = mx.io.MNISTIter{image = args['test-images'], label = args['test-labels'],
                        batch_size = args['batch-size'], shuffle = false}
  what = 'MNIST IDX files (1x28x28)'
else
  local x, y = mx.datasets.digits()
  local tx, ty, vx, vy = digits_split(x, y, args.quick)
  tx, vx = tx:reshape{tx.shape[1], 1, 8, 8}, vx:reshape{vx.shape[1], 1, 8, 8}
  train = mx.io.NDArrayIter{data = tx, label = ty, batch_size = args['batch-size'], shuffle = true}
  val = mx.io.NDArrayIter{data = vx, label = vy, batch_size = args['batch-size']}
  what = ('digits (1x8x8): %d training and %d held-out images'):format(tx.shape[1], vx.shape[1])
end
print(('luamx %s: LeNet on %s'):format(mx.__version__, what))

local k, pad, hidden = full and 5 or 3, full and 0 or 1, full and 500 or 100
local net = mx.sym.Variable('data')
net = mx.sym.Convolution{data = net, kernel = {k, k}, pad = {pad, pad}, num_filter = 20, name = 'conv1'}
net = mx.sym.Activation{data = net, act_type = 'tanh'}
net = mx.sym.Pooling{data = net, pool_type = 'max', kernel = {2, 2}, stride = {2, 2}}
net = mx.sym.Convolution{data = net, kernel = {k, k}, pad = {pad, pad}, num_filter = 50, name = 'conv2'}
net = mx.sym.Activation{data = net, act_type = 'tanh'}
net = mx.sym.Pooling{data = net, pool_type = 'max', kernel = {2, 2}, stride = {2, 2}}
net = mx.sym.Flatten{data = net}
net = mx.sym.FullyConnected{data = net, num_hidden = hidden, name = 'fc1'}
net = mx.sym.Activation{data = net, act_type = 'tanh'}
net = mx.sym.FullyConnected{data = net, num_hidden = 10, name = 'fc2'}
net = mx.sym.SoftmaxOutput{data = net, name = 'softmax'}

local mod = mx.mod.Module{symbol = net, context = mx.cpu()}
local tic = mx.callback.clock()
mod:fit(train, {eval_data = val, num_epoch = args['num-epochs'],
                initializer = mx.init.Xavier{magnitude = 2}, optimizer = 'sgd',
                optimizer_params = {learning_rate = args.lr, momentum = args.mom, wd = args.wd}})
local acc = common.heldout_accuracy(mx, mod, val)
print(('final validation accuracy: %.4f (%d epochs, %.1f s)'):format(acc, args['num-epochs'], mx.callback.clock() - tic))
