-- examples/dist_mnist.lua — data-parallel training on several processes or machines with
-- the dist_sync kvstore (MPI): every worker reads its part of the data, gradients are
-- summed over the workers by MPI all-reduces, every worker applies the same update.
--
--   mpirun -np 2 luajit examples/dist_mnist.lua                  -- 2 workers, this machine
--   mpirun -np 4 --hostfile hosts luajit examples/dist_mnist.lua -- 4 workers, several machines
--   luajit examples/dist_mnist.lua                               -- 1 worker (no mpirun)
--   ... --model-prefix /tmp/mlp                  -- rank 0 writes /tmp/mlp-0001.params ...
--   ... --model-prefix /tmp/mlp --load-epoch 3   -- resume: every rank starts from epoch 3
--   ... --train-images train-images-idx3-ubyte --train-labels train-labels-idx1-ubyte
--       --test-images t10k-images-idx3-ubyte --test-labels t10k-labels-idx1-ubyte
-- (as root in a container: mpirun --allow-run-as-root --oversubscribe ...)
--
-- The batch size is per worker (MXNet's rule): the global batch is batch-size x workers and
-- the learning rate applies to the global mean gradient. Only rank 0 logs the epoch summary
-- and the global Speedometer line and writes checkpoints; every rank prints a checksum of its
-- parameters at the end, identical on all ranks.
local common = dofile(((arg and arg[0] or ''):match('^(.-)[^/\\]*$') or '') .. 'common.lua')

local mx, args = common.setup{['num-epochs'] = 10, ['batch-size'] = 32, lr = 0.1, mom = 0.9, wd = 0.0001,
  ['num-hidden'] = 128, quick = false, seed = 42, ['kv-store'] = 'dist_sync', ['model-prefix'] = '',
  ['load-epoch'] = 0, ['speed-every'] = 20, ['train-images'] = '', ['train-labels'] = '', ['test-images'] = '', ['test-labels'] = ''}
mx.random.seed(args.seed)

local kv = mx.kv.create(args['kv-store'])
local rank, workers = kv.rank, kv.num_workers
local bs = args['batch-size']

local train, val, what
if args['train-images'] ~= '' then
  train = mx.io.MNISTIter{image = args['train-images'], label = args['train-labels'], batch_size = bs,
                          flat = true, shuffle = true, num_parts = workers, part_index = rank}
  val = mx.io.MNISTIter{image = args['test-images'], label = args['test-labels'], batch_size = bs,
                        flat = true, shuffle = false}
  what = 'MNIST IDX files'
else
  local x, y = mx.datasets.digits()
  local tx, ty, vx, vy = common.digits_split(mx, x, y, args.quick)
  train = mx.io.NDArrayIter{data = tx, label = ty, batch_size = bs, shuffle = true,
                            num_parts = workers, part_index = rank}
  val = mx.io.NDArrayIter{data = vx, label = vy, batch_size = bs}
  what = ('digits (%d training images, %d per worker)'):format(tx.shape[1], train.num_data)
end
if rank == 0 then
  print(('luamx %s: MLP on %s, %d worker%s, batch %d per worker'):format(mx.__version__, what, workers,
    workers > 1 and 's' or '', bs))
end

local net = mx.sym.Variable('data')
net = mx.sym.FullyConnected{data = net, num_hidden = args['num-hidden'], name = 'fc1'}
net = mx.sym.Activation{data = net, act_type = 'relu', name = 'relu1'}
net = mx.sym.FullyConnected{data = net, num_hidden = 64, name = 'fc2'}
net = mx.sym.Activation{data = net, act_type = 'relu', name = 'relu2'}
net = mx.sym.FullyConnected{data = net, num_hidden = 10, name = 'fc3'}
net = mx.sym.SoftmaxOutput{data = net, name = 'softmax'}

local prefix, begin = args['model-prefix'], args['load-epoch']
local mod
if begin > 0 then -- resume: every rank loads the checkpoint; init broadcasts rank 0's copy
  if prefix == '' then error('--load-epoch needs --model-prefix') end
  mod = mx.mod.Module.load(prefix, begin)
else
  mod = mx.mod.Module{symbol = net, context = mx.cpu()}
end

local tic = mx.callback.clock()
mod:fit(train, {eval_data = val, eval_metric = 'acc', kvstore = kv, num_epoch = args['num-epochs'],
                begin_epoch = begin,
                initializer = mx.init.Xavier{magnitude = 2}, optimizer = 'sgd',
                optimizer_params = {learning_rate = args.lr, momentum = args.mom, wd = args.wd},
                batch_end_callback = mx.callback.Speedometer(bs, args['speed-every']),
                epoch_end_callback = prefix ~= '' and mx.callback.do_checkpoint(prefix) or nil})

local sum = 0
local params = mod:get_params()
local names = {}
for k in pairs(params) do names[#names + 1] = k end
table.sort(names)
for _, k in ipairs(names) do
  for i, v in ipairs(params[k]:toflat()) do sum = sum + v * ((i % 7) + 1) end
end
print(('rank %d: parameter checksum %.6f'):format(rank, sum))
if rank == 0 then
  local acc = common.heldout_accuracy(mx, mod, val)
  print(('final validation accuracy: %.4f (%d epochs, %.1f s)'):format(acc, args['num-epochs'] - begin,
    mx.callback.clock() - tic))
end
