-- examples/zoo_resnet_cifar.lua — ResNet-20 (the CIFAR form of mx.models.resnet, MXNet's
-- symbols/resnet.py) trained with mx.mod.Module on a small synthetic image set.
--
--   luajit examples/zoo_resnet_cifar.lua                 -- 3 epochs, 512 images 3x16x16
--   luajit examples/zoo_resnet_cifar.lua --num-epochs 1 --quick
--
-- The images are generated here (no download): four classes of striped patterns
-- (horizontal, vertical, diagonal, checkerboard) with a random phase, a random colour
-- channel and noise; every 4th image is held out. The network is the zoo's ResNet-20
-- (3 stages of 3 basic pre-activation units, 16/32/64 filters) built for 3x28x28 (which
-- selects the CIFAR form) and bound at 3x16x16 (its global pooling takes any size).
-- It prints the network's parameter count, 'Epoch[%d] Train-accuracy=...' and
-- 'Epoch[%d] Validation-accuracy=...' per epoch, and ends with
-- 'final validation accuracy: <value>' (about 0.9 or more after the default 3 epochs).
local common = dofile(((arg and arg[0] or ''):match('^(.-)[^/\\]*$') or '') .. 'common.lua')

local mx, args = common.setup{['num-epochs'] = 3, ['batch-size'] = 16, lr = 0.05, mom = 0.9,
  wd = 0.0001, quick = false, seed = 42}
mx.random.seed(args.seed)
math.randomseed(args.seed)

local S, N = 16, args.quick and 128 or 512

-- one image of class k (0..3): a stripe pattern in one channel, noise in all three
local function image(k)
  local px = {}
  local ch, phase, period = math.random(0, 2), math.random() * 2 * math.pi, 4 + math.random(0, 2)
  for c = 0, 2 do
    for y = 0, S - 1 do
      for x = 0, S - 1 do
        local v = 0
        if c == ch then
          local t = k == 0 and y or k == 1 and x or k == 2 and (x + y) or nil
          if t then v = math.sin(2 * math.pi * t / period + phase)
          else v = ((math.floor(x / 2) + math.floor(y / 2)) % 2 == 0) and 1 or -1 end
        end
        px[#px + 1] = v + 0.3 * (math.random() * 2 - 1)
      end
    end
  end
  return px
end

local function dataset(n, offset)
  local xs, ys = {}, {}
  for i = 1, n do
    local k = (i + offset) % 4
    local img = image(k)
    for j = 1, #img do xs[#xs + 1] = img[j] end
    ys[i] = k
  end
  return mx.nd.array(xs):reshape{n, 3, S, S}, mx.nd.array(ys)
end

local ntrain = N * 3 / 4
local tx, ty = dataset(ntrain, 0)
local vx, vy = dataset(N - ntrain, 1)
local train = mx.io.NDArrayIter{data = tx, label = ty, batch_size = args['batch-size'], shuffle = true}
local val = mx.io.NDArrayIter{data = vx, label = vy, batch_size = args['batch-size']}

local net = mx.models.resnet{num_layers = 20, num_classes = 4, image_shape = {3, 28, 28}}
local params = mx.models.num_params(net, {data = {1, 3, S, S}})
print(('luamx %s: ResNet-20 (CIFAR form, %d parameters) on %d synthetic 3x%dx%d images, %d held out')
  :format(mx.__version__, params, N, S, S, N - ntrain))

local mod = mx.mod.Module{symbol = net, context = mx.cpu()}
local tic = mx.callback.clock()
mod:fit(train, {eval_data = val, num_epoch = args['num-epochs'],
                initializer = mx.init.Xavier{rnd_type = 'gaussian', factor_type = 'in', magnitude = 2},
                optimizer = 'sgd',
                optimizer_params = {learning_rate = args.lr, momentum = args.mom, wd = args.wd}})
local acc = common.heldout_accuracy(mx, mod, val)
print(('final validation accuracy: %.4f (%d epochs, %.1f s)'):format(acc, args['num-epochs'], mx.callback.clock() - tic))
