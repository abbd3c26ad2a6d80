-- examples/custom_softmax.lua — an MLP whose loss is an operator written in Lua
-- (mx.operator.register + mx.sym.Custom, MXNet's CustomOp), trained with mx.mod.Module.
--
--   luajit examples/custom_softmax.lua                 -- the shipped 8x8 digits
--   luajit examples/custom_softmax.lua --num-epochs 1 --quick
--
-- The loss 'lua_softmax' is MXNet's example/numpy-ops/custom_softmax.py in Lua: forward
-- is a row-wise softmax written with the FFI on a:data() (the arrays view the executor's
-- memory, no copy), backward writes softmax - onehot(label). It needs no head gradient
-- (need_top_grad = false), like SoftmaxOutput, so Module:fit trains it unchanged. It
-- prints the usual lines, e.g.
--   Epoch[0] Train-accuracy=0.671333
--   Epoch[0] Validation-accuracy=0.892256
-- then saves the model (the JSON holds a "Custom" node with op_type "lua_softmax"),
-- loads it back and ends with
--   final validation accuracy: 0.94... (reloaded checkpoint agrees: yes)
-- With the defaults (10 epochs) the final validation accuracy is about 0.95.
local common = dofile(((arg and arg[0] or ''):match('^(.-)[^/\\]*$') or '') .. 'common.lua')

local mx, args = common.setup{['num-epochs'] = 10, ['batch-size'] = 32, lr = 0.1, mom = 0.9,
  quick = false, seed = 42}
mx.random.seed(args.seed)

mx.operator.register('lua_softmax', {
  list_arguments = function() return {'data', 'label'} end,
  need_top_grad = false,
  infer_shape = function(_, in_shape)
    local d = in_shape[1]
    return {d, {d[1]}}, {d}, {}
  end,
  create_operator = function()
    return {
      forward = function(self, _, req, in_data, out_data)
        local n, k = in_data[1].shape[1], in_data[1].shape[2]
        local x, y = in_data[1]:data(), out_data[1]:data()
        for i = 0, n - 1 do
          local row, m, s = i * k, -math.huge, 0
          for j = 0, k - 1 do m = math.max(m, x[row + j]) end
          for j = 0, k - 1 do
            local e = math.exp(x[row + j] - m)
            y[row + j] = e
            s = s + e
          end
          for j = 0, k - 1 do y[row + j] = y[row + j] / s end
        end
        assert(req[1] ~= 'add', 'lua_softmax writes its output')
      end,
      backward = function(_, req, _, in_data, out_data, in_grad)
        local n, k = out_data[1].shape[1], out_data[1].shape[2]
        local y, label, g = out_data[1]:data(), in_data[2]:data(), in_grad[1]:data()
        local add = req[1] == 'add'
        for i = 0, n - 1 do
          for j = 0, k - 1 do
            local v = y[i * k + j] - (label[i] == j and 1 or 0)
            g[i * k + j] = add and g[i * k + j] + v or v
          end
        end
        if req[2] ~= 'null' then in_grad[2]:fill(0) end
      end,
    }
  end,
})

local x, y = mx.datasets.digits()
local tx, ty, vx, vy = common.digits_split(mx, x, y, args.quick)
local train = mx.io.NDArrayIter{data = tx, label = ty, batch_size = args['batch-size'], shuffle = true}
local val = mx.io.NDArrayIter{data = vx, label = vy, batch_size = args['batch-size']}
print(('luamx %s: MLP with a Lua softmax on digits: %d training and %d held-out 8x8 images'):format(
  mx.__version__, tx.shape[1], vx.shape[1]))

local net = mx.sym.Variable('data')
net = mx.sym.FullyConnected{data = net, num_hidden = 64, name = 'fc1'}
net = mx.sym.Activation{data = net, act_type = 'relu', name = 'relu1'}
net = mx.sym.FullyConnected{data = net, num_hidden = 10, name = 'fc2'}
net = mx.sym.Custom{data = net, op_type = 'lua_softmax', name = 'softmax'}

local mod = mx.mod.Module{symbol = net, context = mx.cpu()}
mod:fit(train, {eval_data = val, eval_metric = 'acc', num_epoch = args['num-epochs'],
                initializer = mx.init.Xavier{magnitude = 2},
                optimizer_params = {learning_rate = args.lr, momentum = args.mom},
                batch_end_callback = false})
local acc = common.heldout_accuracy(mx, mod, val)

-- Checkpoint round trip: the JSON has the Custom node; loading needs the op registered.
local prefix = os.tmpname()
mod:save_checkpoint(prefix, args['num-epochs'])
local back = mx.mod.Module.load(prefix, args['num-epochs'], false, {logger = false})
back:bind{data_shapes = val.provide_data, label_shapes = val.provide_label, for_training = false}
local acc2 = common.heldout_accuracy(mx, back, val)
for _, f in ipairs {prefix, prefix .. '-symbol.json', ('%s-%04d.params'):format(prefix, args['num-epochs'])} do
  os.remove(f)
end
print(('final validation accuracy: %.4f (reloaded checkpoint agrees: %s)'):format(
  acc, math.abs(acc - acc2) < 1e-9 and 'yes' or 'no'))
