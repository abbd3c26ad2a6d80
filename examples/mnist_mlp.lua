-- examples/mnist_mlp.lua — train a multilayer perceptron with mx.mod.Module (the default example).
--
--   luajit examples/mnist_mlp.lua                 -- the shipped 8x8 digits (examples/data)
--   luajit examples/mnist_mlp.lua --num-epochs 1 --quick
--   luajit examples/mnist_mlp.lua --train-images train-images-idx3-ubyte \
--     --train-labels train-labels-idx1-ubyte --test-images t10k-images-idx3-ubyte \
--     --test-labels t10k-labels-idx1-ubyte        -- full MNIST (IDX files)
--
-- Network: data -> FC 128 -> ReLU -> FC 64 -> ReLU -> FC 10 -> SoftmaxOutput (MXNet's
-- example/image-classification MLP, narrower). On the digits every 6th image is held out
-- (299) and the other 1498 train. It prints, per epoch, lines such as
--   Epoch[0] Train-accuracy=0.671333
--   Epoch[0] Time cost=0.210
--   Epoch[0] Validation-accuracy=0.892256
-- (a progress bar too when stdout is a terminal) and ends with
--   final validation accuracy: 0.97...
-- With the defaults (20 epochs) the final validation accuracy is about 0.97, in about a second.
-- --plot curve.png (or .svg) draws the training curve with gnuplot (docs/mnist_mlp_curve.png).
-- --dtype float16 / bfloat16 trains in mixed precision: the layers compute in that dtype
-- (Cast after the data and before the loss) and SGD keeps float32 master weights
-- (multi_precision); the accuracy stays that of float32 (spec/lowp_mixed_precision_spec.lua).
local common = dofile(((arg and arg[0] or ''):match('^(.-)[^/\\]*$') or '') .. 'common.lua')

local mx, args = common.setup{['num-epochs'] = 20, ['batch-size'] = 32, lr = 0.1, mom = 0.9, wd = 0.0001,
  ['num-hidden'] = 128, quick = false, seed = 42, ['train-images'] = '', ['train-labels'] = '',
  ['test-images'] = '', ['test-labels'] = '', plot = '', dtype = 'float32'}
mx.random.seed(args.seed)

local function digits_split(x, y, quick) return common.digits_split(mx, x, y, quick) end

local function digits_iters(bs, quick)
  local x, y = mx.datasets.digits()
  local tx, ty, vx, vy = digits_split(x, y, quick)
  local train = mx.io.NDArrayIter{data = tx, label = ty, batch_size = bs, shuffle = true}
  local val = mx.io.NDArrayIter{data = vx, label = vy, batch_size = bs}
  return train, val, ('digits: %d training and %d held-out 8x8 images'):format(tx.shape[1], vx.shape[1])
end

local function mnist_iters(bs)
  local train = mx.io.MNISTIter{image = args['train-images'], label = args['train-labels'],
                                batch_size = bs, flat = true, shuffle = true}
  local val = mx.io.MNISTIter{image = args['test-images'], label = args['test-labels'],
                              batch_size = bs, flat = true, shuffle = false}
  return train, val, 'MNIST IDX files'
end

local train, val, what
if args['train-images'] ~= '' then train, val, what = mnist_iters(args['batch-size'])
else train, val, what = digits_iters(args['batch-size'], args.quick) end
print(('luamx %s: MLP on %s'):format(mx.__version__, what))

local lowp = args.dtype ~= 'float32'
local net = mx.sym.Variable('data')
if lowp then net = mx.sym.Cast{data = net, dtype = args.dtype} end
net = mx.sym.FullyConnected{data = net, num_hidden = args['num-hidden'], name = 'fc1'}
net = mx.sym.Activation{data = net, act_type = 'relu', name = 'relu1'}
net = mx.sym.FullyConnected{data = net, num_hidden = 64, name = 'fc2'}
net = mx.sym.Activation{data = net, act_type = 'relu', name = 'relu2'}
net = mx.sym.FullyConnected{data = net, num_hidden = 10, name = 'fc3'}
if lowp then net = mx.sym.Cast{data = net, dtype = 'float32'} end
net = mx.sym.SoftmaxOutput{data = net, name = 'softmax'}

local mod = mx.mod.Module{symbol = net, context = mx.cpu()}
local tic = mx.callback.clock()
mod:fit(train, {eval_data = val, eval_metric = 'acc', num_epoch = args['num-epochs'],
                initializer = mx.init.Xavier{magnitude = 2},
                optimizer = 'sgd',
                optimizer_params = {learning_rate = args.lr, momentum = args.mom, wd = args.wd,
                                    multi_precision = lowp},
                plot = args.plot ~= '' and {path = args.plot, every = 10} or nil})
local acc = common.heldout_accuracy(mx, mod, val)
print(('final validation accuracy: %.4f (%d epochs, %.1f s)'):format(acc, args['num-epochs'], mx.callback.clock() - tic))
