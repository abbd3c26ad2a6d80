--- luamx.autograd_function — differentiable functions written in Lua
-- (MXNet's mx.autograd.Function).
--
--   local Sigmoid = mx.autograd.Function{
--     forward = function(self, x)
--       local y = 1 / (1 + mx.nd.exp(-x))
--       self:save_for_backward(y)
--       return y
--     end,
--     backward = function(self, dy)
--       local y = self.saved_tensors[1]
--       return dy * y * (1 - y)
--     end,
--   }
--   local y = mx.autograd.record(function() return Sigmoid()(x) end)
--
-- `mx.autograd.Function(def)` returns a class; calling the class makes an instance and
-- calling the instance with NDArrays runs `forward` (not recorded) and, when recording,
-- records one tape node whose backward calls `backward(self, out_grads...)`, which
-- returns one gradient per input (same shapes). An error in backward becomes the
-- backward's Lua error; the tape stays usable.
local ffi = require 'ffi'
local capi = require 'luamx.capi'
local nd = require 'luamx.ndarray'
local C, check, raise = capi.C, capi.check, capi.raise

local M = {}

--- Installs mx.autograd.Function (hooks.set_error receives a backward's Lua error).
function M.install(mx, autograd, hooks)
  local live, next_id = {}, 0 -- id -> instance, while the tape holds its node
  local dead = ffi.new('int64_t[64]')
  local ndead = ffi.new('int[1]')

  local function reap()
    repeat
      check(C.lmx_autograd_function_dead(dead, 64, ndead), 3)
      for i = 0, ndead[0] - 1 do live[tonumber(dead[i])] = nil end
    until ndead[0] < 64
  end

  local function run_backward(id, nout, og, nin, ig)
    local inst = live[tonumber(id)]
    local grads = {}
    for i = 0, nout - 1 do
      C.lmx_ndarray_retain(og[i])
      grads[i + 1] = nd.wrap(og[i])
    end
    local res = {inst.backward(inst, unpack(grads, 1, nout))}
    if #res == 1 and type(res[1]) == 'table' and not nd.is_ndarray(res[1]) then res = res[1] end
    for i = 1, nin do
      if not nd.is_ndarray(res[i]) then
        error(('backward returned %d gradients, expected %d NDArrays (one per input)'):format(
          #res, nin), 0)
      end
    end
    for i = 1, nin do
      C.lmx_ndarray_retain(nd.handle(res[i]))
      ig[i - 1] = nd.handle(res[i])
    end
  end

  local callback = ffi.cast('lmx_autograd_fn', function(id, nout, og, nin, ig)
    local ok, err = pcall(run_backward, id, nout, og, nin, ig)
    if ok then return 0 end
    hooks.set_error(err)
    return 1
  end)
  M._callback = callback -- anchored for the process's lifetime

  local Instance = {}
  Instance.__index = Instance

  --- Keeps arrays for backward (self.saved_tensors).
  function Instance:save_for_backward(...)
    self.saved_tensors = {...}
  end

  local function call(self, ...)
    local inputs = {...}
    for i, x in ipairs(inputs) do
      if not nd.is_ndarray(x) then
        raise(('mx.autograd.Function: input %d: expected an NDArray, got %s'):format(i, type(x)), 3)
      end
    end
    local recording = autograd.is_recording()
    local outs = {autograd.pause(function() return self.forward(self, unpack(inputs)) end,
      autograd.is_training())}
    local list = outs
    if #outs == 1 and type(outs[1]) == 'table' and not nd.is_ndarray(outs[1]) then list = outs[1] end
    if #list == 0 then raise('mx.autograd.Function: forward returned no NDArray', 3) end
    for i, y in ipairs(list) do
      if not nd.is_ndarray(y) then
        raise(('mx.autograd.Function: forward output %d: expected an NDArray, got %s'):format(
          i, type(y)), 3)
      end
    end
    if recording then
      reap()
      next_id = next_id + 1
      local hin = ffi.new('lmx_ndarray *[?]', #inputs + 1)
      for i, x in ipairs(inputs) do hin[i - 1] = nd.handle(x) end
      local hout = ffi.new('lmx_ndarray *[?]', #list + 1)
      for i, y in ipairs(list) do hout[i - 1] = nd.handle(y) end
      check(C.lmx_autograd_function_record(#inputs, hin, #list, hout, callback, next_id), 3)
      live[next_id] = self
    end
    return unpack(outs)
  end

  --- A differentiable function class from def.forward(self, ...) and
  -- def.backward(self, ...): call the class for an instance, the instance on NDArrays.
  autograd.Function = function(def)
    if type(def) ~= 'table' or type(def.forward) ~= 'function' or type(def.backward) ~= 'function' then
      raise('mx.autograd.Function: expected a table with forward and backward functions', 2)
    end
    local class = setmetatable({}, {__call = function(cls)
      return setmetatable({forward = def.forward, backward = def.backward}, cls)
    end})
    class.__index = function(t, k) return def[k] or Instance[k] end
    class.__call = call
    return class
  end
end

return M
