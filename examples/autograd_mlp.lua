-- examples/autograd_mlp.lua — the MLP of mnist_mlp.lua written eagerly: mx.gluon blocks,
-- mx.autograd.record / backward and a Trainer, instead of a symbol and a Module.
--
--   luajit examples/autograd_mlp.lua                 -- 20 epochs on the shipped digits
--   luajit examples/autograd_mlp.lua --num-epochs 1 --quick
--   luajit examples/autograd_mlp.lua --hybridize     -- the same net through an executor
--
-- Network: data -> Dense 128 relu -> Dense 64 relu -> Dense 10 -> SoftmaxOutput, trained
-- with SGD (momentum 0.9, wd 0.0001) in batches of 32; every 6th image is held out. It
-- prints per epoch lines such as
--   Epoch[0] Validation-accuracy=0.892256
-- and ends with
--   final validation accuracy: 0.97...
local common = dofile(((arg and arg[0] or ''):match('^(.-)[^/\\]*$') or '') .. 'common.lua')
local mx, args = common.setup{['num-epochs'] = 20, ['batch-size'] = 32, lr = 0.1, quick = false,
  seed = 42, hybridize = false}
mx.random.seed(args.seed)
local x, y = mx.datasets.digits()
local tx, ty, vx, vy = common.digits_split(mx, x, y, args.quick)
local train = mx.io.NDArrayIter{data = tx, label = ty, batch_size = args['batch-size'], shuffle = true}
print(('luamx %s: eager MLP on digits: %d training and %d held-out 8x8 images'):format(
  mx.__version__, tx.shape[1], vx.shape[1]))

-- the user code: a dozen lines
local nn = mx.gluon.nn
local net = nn.Sequential():add(nn.Dense(128, {activation = 'relu'}),
  nn.Dense(64, {activation = 'relu'}), nn.Dense(10))
net:initialize(mx.init.Xavier{magnitude = 2})
if args.hybridize then net:hybridize() end
local trainer = mx.gluon.Trainer(net:collect_params(), 'sgd',
  {learning_rate = args.lr, momentum = 0.9, wd = 0.0001})
for epoch = 0, args['num-epochs'] - 1 do
  train:reset()
  for batch in train do
    local out = mx.autograd.record(function()
      return mx.nd.SoftmaxOutput(net(batch.data[1]), batch.label[1])
    end)
    out:backward()
    trainer:step(args['batch-size'])
  end
  local pred = mx.nd.argmax(net(vx), {axis = 1}):toflat()
  local hit = 0
  for i, c in ipairs(vy:toflat()) do if pred[i] == c then hit = hit + 1 end end
  print(('Epoch[%d] Validation-accuracy=%.6f'):format(epoch, hit / #pred))
  if epoch == args['num-epochs'] - 1 then
    print(('final validation accuracy: %.4f'):format(hit / #pred))
  end
end
