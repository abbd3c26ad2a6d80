--- luamx — a deep-learning runtime scripted from LuaJIT (MXNet's symbolic model).
--
--   local mx = require 'luamx'
--   local a = mx.nd.array{{1, 2}, {3, 4}}
--   print(a * 2)
--
-- This file assembles the namespaces from lua/luamx/*.lua; each sub-module is usable on
-- its own. The engine is libluamx (C), reached through the LuaJIT FFI (luamx.capi).
local capi = require 'luamx.capi'
local context = require 'luamx.context'
local nd = require 'luamx.ndarray'

local mx = {}

mx.capi = capi
mx.context = context
mx.cpu, mx.gpu = context.cpu, context.gpu
mx.Context = context.Context
mx.nd = nd
mx.ndarray = nd

mx.random = {}
--- Seeds the global generator: the same seed gives the same draws.
function mx.random.seed(n)
  if type(n) ~= 'number' or n % 1 ~= 0 or n < 0 then
    capi.raise('mx.random.seed: seed must be a non-negative integer, got ' .. tostring(n))
  end
  capi.check(capi.C.lmx_random_seed(n), 2)
end
mx.random.uniform = nd.random.uniform

--- The random state as an int64 NDArray of 6 words (the CPU generator and the key of the
-- GPU's counter-based draws): `set_state` with it repeats the draws that followed, on
-- every device (Dropout masks included). Checkpoints keep it with the optimizer states.
-- @return NDArray (int64, shape {6}, on the CPU)
-- @usage local st = mx.random.get_state(); ...; mx.random.set_state(st)
function mx.random.get_state()
  local ffi = require 'ffi'
  local n = capi.C.LMX_RANDOM_STATE_WORDS
  local buf = ffi.new('uint64_t[?]', n)
  capi.check(capi.C.lmx_random_get_state(buf, n), 2)
  local a = nd.empty({n}, {dtype = 'int64'})
  ffi.copy(a:data(), buf, 8 * n)
  return a
end

--- Restores a state from `get_state` (an int64 NDArray of 6 words).
-- @param state the NDArray
-- @usage mx.random.set_state(st)
function mx.random.set_state(state)
  local ffi = require 'ffi'
  local n = capi.C.LMX_RANDOM_STATE_WORDS
  if not nd.is_ndarray(state) or state.dtype ~= 'int64' or state.size ~= n then
    capi.raise(('mx.random.set_state: state must be an int64 NDArray of %d elements (from get_state), got %s'):format(n,
      nd.is_ndarray(state) and ('%s of %d elements'):format(state.dtype, state.size) or type(state)))
  end
  local cpu = state:as_in_context(context.cpu()):copy()
  capi.check(capi.C.lmx_random_set_state(ffi.cast('const uint64_t *', cpu:data()), n), 2)
end
mx.random.normal = nd.random.normal

local v = capi.version()
mx.__version__ = ('%d.%d.%d'):format(math.floor(v / 10000), math.floor(v / 100) % 100, v % 100)

-- Layers above NDArray: each module's install(mx) adds its namespace.
require('luamx.files').install(mx)
require('luamx.io').install(mx)
require('luamx.recordio').install(mx)
require('luamx.metric').install(mx)
require('luamx.initializer').install(mx)
require('luamx.lr_scheduler').install(mx)
require('luamx.optimizer').install(mx)
require('luamx.callback').install(mx)
require('luamx.model').install(mx)
require('luamx.monitor').install(mx)
require('luamx.datasets').install(mx)
require('luamx.rnn.init').install(mx)
require('luamx.symbol').install(mx)
require('luamx.name').install(mx)
require('luamx.op').install(mx)
require('luamx.executor').install(mx)
require('luamx.module').install(mx)
require('luamx.executor_manager').install(mx)
require('luamx.kvstore').install(mx)
require('luamx.bucketing').install(mx)
require('luamx.ndarray_ops').install(mx)
require('luamx.namespaces').install(mx) -- after symbol and ndarray_ops: mx.nd/sym.linalg, contrib
require('luamx.autograd').install(mx)
require('luamx.gluon').install(mx)
require('luamx.viz').install(mx)
require('luamx.runtime').install(mx)
require('luamx.models.init').install(mx) -- after symbol and name: mx.models
require('luamx.operator').install(mx) -- after symbol and ndarray_ops: mx.sym/nd.Custom

--- Prints what x is: an operator's parameters from the registry, a function's doc
--- comment, an object's summary (the `luamx` prompt's help(x) and ?x).
-- @usage mx.help(mx.sym.FullyConnected)
function mx.help(x) print(require('luamx.repl.help').text(mx, x)) end

return mx
