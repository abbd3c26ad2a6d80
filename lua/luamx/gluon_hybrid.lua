--- luamx.gluon_hybrid — running a hybridized gluon block through a bound executor.
--
-- The first call (and any call with a new input shape) traces: one forward is recorded
-- in prediction mode on a copy of the input, mx.autograd.get_symbol turns it into a
-- Symbol (the input named `data`, parameters by their names), and the Symbol is bound
-- with the parameters' own arrays as arguments and aux states (so Trainer updates and
-- running statistics are shared), the planned memory holding the intermediates. Later
-- calls copy the input into the executor and run it, in training mode when
-- mx.autograd.is_training(). While recording, the call is one tape node (an
-- mx.autograd.Function of the input and the parameters that have gradients) whose
-- backward runs the executor's backward into its own gradient arrays and returns
-- copies, which the tape delivers to x.grad per each parameter's grad_req.
local capi = require 'luamx.capi'
local nd = require 'luamx.ndarray'
local raise = capi.raise

local M = {}

local function key_of(shape) return table.concat(shape, 'x') end

local function trace(block, x)
  local mx = require('luamx.gluon')._mx()
  local data = mx.autograd.pause(function() return x:detach():copy() end)
  local y = mx.autograd.record(function() return block:forward(data) end, false)
  if not nd.is_ndarray(y) then
    raise(('%s:hybridize: forward must return one NDArray'):format(block._kind), 4)
  end
  local params = block:collect_params()
  local names = {data = data}
  for _, p in ipairs(params:list()) do names[p.name] = p:data() end
  local sym = mx.autograd.get_symbol(y, names)
  local args, grads, reqs, aux, with_grad = {}, {}, {}, {}, {}
  for _, nm in ipairs(sym:list_arguments()) do
    local p = params:get(nm)
    if nm == 'data' then
      args[nm] = nd.zeros(x.shape, {ctx = x.context, dtype = x.dtype})
      grads[nm] = nd.zeros(x.shape, {ctx = x.context, dtype = x.dtype})
      reqs[nm] = 'write'
    elseif p then
      args[nm] = p:data()
      reqs[nm] = p.grad_req == 'null' and 'null' or 'write'
      if p.grad_req ~= 'null' then
        grads[nm] = nd.zeros(p.shape, {ctx = x.context, dtype = p.dtype})
        with_grad[#with_grad + 1] = nm
      end
    else
      raise(('%s:hybridize: the traced graph has an input \'%s\' that is neither the data nor '
        .. 'a parameter of the block'):format(block._kind, nm), 4)
    end
  end
  for _, nm in ipairs(sym:list_auxiliary_states()) do
    local p = params:get(nm)
    if not p then
      raise(('%s:hybridize: aux state \'%s\' is not a parameter of the block'):format(block._kind, nm), 4)
    end
    aux[nm] = p:data()
  end
  local exe = sym:bind{ctx = x.context, args = args, args_grad = grads, grad_req = reqs,
    aux_states = aux}
  local entry = {sym = sym, exe = exe, params = {}}
  for i, nm in ipairs(with_grad) do entry.params[i] = params:get(nm) end
  entry.fn = mx.autograd.Function{
    forward = function(_, input)
      exe.arg_dict.data:set(input)
      exe:forward{is_train = mx.autograd.is_training()}
      return exe.outputs[1]:copy()
    end,
    backward = function(_, dy)
      exe:backward({dy})
      local gd = exe.grad_dict
      local res = {gd.data:copy()}
      for i, nm in ipairs(with_grad) do res[i + 1] = gd[nm]:copy() end
      return res
    end,
  }
  return entry
end

--- Calls a hybridized block on x (see the module comment).
function M.call(block, x)
  if not nd.is_ndarray(x) then
    raise(('%s: expected an NDArray input, got %s'):format(block._kind, type(x)), 3)
  end
  local key = key_of(x.shape)
  local entry = block._hybrid[key]
  if not entry then
    entry = trace(block, x)
    block._hybrid[key] = entry
  end
  local inputs = {x}
  for i, p in ipairs(entry.params) do inputs[i + 1] = p:data() end
  return entry.fn()(unpack(inputs))
end

return M
