--- spec/gpu_helpers.lua — what the GPU training specs share (not a spec itself):
--- deterministic data without the random generator (so every device sees the same),
--- a data batch around it, the relative difference of two arrays on any device, starting
--- parameters and SGD training of a Module, an executor node's kernel note, and the skip
--- where no GPU context exists.
local assert = require 'luassert'
local mx = require 'luamx'

local G = {}

--- True, after a pending describe block `name` with the reason, where no GPU context
--- exists; the spec then returns: `if G.skip_without_gpu('...') then return end`.
function G.skip_without_gpu(name)
  if mx.context.num_gpus() > 0 then return false end
  local busted = require 'busted'
  busted.describe(name, function() busted.pending('no GPU context on this machine: skipped') end)
  return true
end

--- The "Kernel:" line of a node's block in an executor's debug_str text (nil when the
--- block has none): op 'Convolution' with the node's name, or '_backward_Convolution'
--- with '<name>_backward'. Fails naming the block when text has no such block.
function G.kernel_line(text, op, name)
  local at = text:find('Op:' .. op .. ', Name=' .. name .. '\n', 1, true)
  assert(at, ('no block of %s %s in debug_str:\n%s'):format(op, name, text))
  local stop = text:find('--------------------', at, true) or #text + 1
  return text:sub(at, stop - 1):match('\nKernel: ([^\n]*)')
end

--- An array of `shape` filled with sin(i * 0.37 + k), or with (i * 7 + k) % mod when mod is
--- given (class labels).
function G.ramp(shape, k, mod)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  local t = {}
  for i = 1, n do t[i] = mod and ((i * 7 + k) % mod) or math.sin(i * 0.37 + k) end
  return mx.nd.array(t):reshape(shape)
end

--- A DataBatch of one data array and one label array named 'data' and 'softmax_label'.
function G.batch_of(data, label)
  return mx.io.DataBatch{data = {data}, label = {label},
    provide_data = {mx.io.DataDesc('data', data.shape)},
    provide_label = {mx.io.DataDesc('softmax_label', label.shape)}}
end

--- Largest |a - b| / max(1e-3, |b|) over the elements (both copied to the CPU).
function G.max_rel(a, b)
  local x, y = a:copyto(mx.cpu()):toflat(), b:copyto(mx.cpu()):toflat()
  assert.are.equal(#x, #y)
  local worst = 0
  for i = 1, #x do
    worst = math.max(worst, math.abs(x[i] - y[i]) / math.max(1e-3, math.abs(y[i])))
  end
  return worst
end

--- Xavier parameters {arg, aux} of `net` for `batch`, drawn on the CPU after
--- mx.random.seed(seed), so that every device starts from the same.
function G.start_params(net, batch, seed)
  local mod = mx.mod.Module{symbol = net, context = mx.cpu()}
  mod:bind{data_shapes = batch.provide_data, label_shapes = batch.provide_label}
  mx.random.seed(seed)
  mod:init_params{initializer = mx.init.Xavier{magnitude = 2}}
  return {mod:get_params()}
end

--- Trains `net` for `steps` SGD steps (momentum 0.9) on `ctxs` from `params` {arg, aux}
--- through kvstore `kv` (nil: none); calls after_step(mod, s) after each step when given.
--- Returns the final arg and aux parameters and the module.
function G.train(net, ctxs, batch, params, steps, kv, after_step)
  local mod = mx.mod.Module{symbol = net, context = ctxs}
  mod:bind{data_shapes = batch.provide_data, label_shapes = batch.provide_label}
  mod:init_params{arg_params = params[1], aux_params = params[2], force_init = true}
  mod:init_optimizer{kvstore = kv, optimizer = 'sgd',
    optimizer_params = {learning_rate = 0.1, momentum = 0.9, rescale_grad = 1 / batch.data[1].shape[1]}}
  for s = 1, steps do
    mod:forward_backward(batch)
    mod:update()
    if after_step then after_step(mod, s) end
  end
  local arg, aux = mod:get_params()
  return arg, aux, mod
end

return G
