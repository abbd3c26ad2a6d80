-- spec/ckpt/train.lua <model> <phase> <dir> — one process of checkpoint_resume_spec.
--
-- model: 'sgd' (an MLP with Dropout, SGD with momentum and weight decay), 'adam' (the
-- same MLP, Adam) or 'bkt' (a BucketingModule with Dropout over buckets 3 and 6, SGD
-- with momentum). phase: 'straight' trains epochs 0, 1, 2 and saves <dir>/<model>-straight
-- epoch 3; 'first' trains epochs 0 and 1 and saves <dir>/<model>-part epoch 2 (with the
-- optimizer and random states); 'resume' loads that checkpoint, trains epoch 2 and saves
-- <dir>/<model>-resumed epoch 3. Data and labels come from Lua arithmetic, parameters
-- from mx.random.seed(7) and the initializer, Dropout masks from the global generator.
local mx = require 'luamx'
local K = require 'ckpt.common'
local nd = mx.nd
mx.logging.set_level('error')

local model, phase, dir = arg[1], arg[2], arg[3]
local B = 4
local OPTS = {
  sgd = {optimizer = 'sgd', optimizer_params = {learning_rate = 0.1, momentum = 0.9, wd = 1e-3}},
  adam = {optimizer = 'adam', optimizer_params = {learning_rate = 0.01}},
  bkt = {optimizer = 'sgd', optimizer_params = {learning_rate = 0.1, momentum = 0.9}},
}

local function mlp()
  local h = mx.sym.FullyConnected{data = mx.sym.Variable('data'), num_hidden = 16, name = 'fc1'}
  h = mx.sym.Activation{data = h, act_type = 'relu'}
  h = mx.sym.Dropout{data = h, p = 0.5}
  h = mx.sym.FullyConnected{data = h, num_hidden = 3, name = 'fc2'}
  return mx.sym.SoftmaxOutput{data = h, name = 'softmax'}
end

local function bkt_gen(_)
  local embed = mx.sym.Embedding{data = mx.sym.Variable('data'), input_dim = 8, output_dim = 4, name = 'embed'}
  local drop = mx.sym.Dropout{data = mx.sym.Reshape{data = embed, shape = {-1, 4}}, p = 0.3}
  local pred = mx.sym.FullyConnected{data = drop, num_hidden = 8, name = 'pred'}
  local label = mx.sym.Reshape{data = mx.sym.Variable('softmax_label'), shape = {-1}}
  return mx.sym.SoftmaxOutput{data = pred, label = label, name = 'softmax'}, {'data'}, {'softmax_label'}
end

local function batches(epoch)
  local out = {}
  for b = 1, 3 do
    if model == 'bkt' then
      out[b] = K.bkt_batch(b % 2 == 0 and 3 or 6, epoch * 10 + b)
    else
      local d, l = {}, {}
      for i = 1, B do
        d[i] = {}
        for j = 1, 6 do d[i][j] = ((i * 7 + j * 3 + b * 5 + epoch) % 11) / 5 - 1 end
        l[i] = (i + b + epoch) % 3
      end
      out[b] = mx.io.DataBatch{data = {nd.array(d)}, label = {nd.array(l)}}
    end
  end
  return out
end

local function bind(mod)
  if model == 'bkt' then
    mod:bind{data_shapes = {{'data', {2, 6}}}, label_shapes = {{'softmax_label', {2, 6}}}}
  else
    mod:bind{data_shapes = {{'data', {B, 6}}}, label_shapes = {{'softmax_label', {B}}}}
  end
end

local function train(mod, from, to)
  for epoch = from, to - 1 do
    for _, batch in ipairs(batches(epoch)) do mod:forward_backward(batch); mod:update() end
  end
end

mx.random.seed(7)
local mod
if phase == 'resume' then
  local prefix = dir .. '/' .. model .. '-part'
  if model == 'bkt' then mod = mx.mod.BucketingModule.load(prefix, 2, bkt_gen, 6, true, {logger = false})
  else mod = mx.mod.Module.load(prefix, 2, true, {logger = false}) end
  mx.random.seed(12345) -- whatever this process drew so far must not matter
  bind(mod)
  mod:init_optimizer(OPTS[model])
  train(mod, 2, 3)
  mod:save_checkpoint(dir .. '/' .. model .. '-resumed', 3, true)
else
  if model == 'bkt' then mod = mx.mod.BucketingModule{sym_gen = bkt_gen, default_bucket_key = 6, logger = false}
  else mod = mx.mod.Module{symbol = mlp(), logger = false} end
  bind(mod)
  mod:init_params{initializer = mx.init.Xavier()}
  mod:init_optimizer(OPTS[model])
  if phase == 'straight' then
    train(mod, 0, 3)
    mod:save_checkpoint(dir .. '/' .. model .. '-straight', 3, true)
  else
    train(mod, 0, 2)
    mod:save_checkpoint(dir .. '/' .. model .. '-part', 2, true)
  end
end
