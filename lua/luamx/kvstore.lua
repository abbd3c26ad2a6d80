--- luamx.kvstore — mx.kv: MXNet's key-value store for parameter synchronization
-- (python/mxnet/kvstore.py over src/exec/kvstore.c).
--
--   local kv = mx.kv.create('local')
--   kv:init('w', weight)                  -- or kv:init({'w', 'b'}, {w, b})
--   kv:set_optimizer(mx.optimizer.SGD{learning_rate = 0.1})
--   kv:push('w', {grad_dev0, grad_dev1})  -- summed; the updater runs once
--   kv:pull('w', {w_dev0, w_dev1})        -- broadcast
--
-- Keys are integers or strings (MXNet: one kind per store); the engine stores them as
-- text and the updater gets them back as given. Types: 'local' and 'device' (the same on
-- CPU contexts), 'dist_sync' and 'dist_device_sync' (several workers under mpirun, MPI
-- all-reduces; rank 0 of 1 outside mpirun), 'nccl' (CUDA builds: values on several GPUs
-- summed by NCCL all-reduces, see docs/gpu.md; refused with a message without CUDA).
-- 'dist_async' is refused by the engine with a message naming what is missing. kv.rank, kv.num_workers and
-- kv:barrier() come from the engine (src/exec/kvstore.c and its backends).
-- A list of keys in push / pushpull goes to the engine in one call, so a dist store
-- fuses small keys into few all-reduces (Module:update pushes all its parameters so).
-- The updater is a Lua function wrapped in an ffi callback that the store anchors for
-- its lifetime (freed with it). It runs on the calling thread during push; push is kept
-- out of JIT traces (LuaJIT cannot enter a callback from a compiled trace). An error in
-- the updater is caught in the callback (it must not unwind through C), the push fails,
-- and the error is raised again once the C call has returned.
local ffi = require 'ffi'
local capi = require 'luamx.capi'
local nd = require 'luamx.ndarray'
local C, check, raise = capi.C, capi.check, capi.raise

local M = {}
local KVStore = {}
KVStore.__index = KVStore
M.KVStore = KVStore

-- holder.busy counts the engine calls in progress that call back into Lua (the updater,
-- the optimizer-state hook): from those callbacks the store may not be freed, given a new
-- updater or used again (the engine would free the store or the FFI callback it is in).
local function c_pushpull(holder, h, n, keys, vals, nv, outs, no)
  holder.busy = (holder.busy or 0) + 1
  local rc = C.lmx_kvstore_pushpull(h, n, keys, vals, nv, outs, no)
  holder.busy = holder.busy - 1
  return rc
end
jit.off(c_pushpull)
local function c_states(holder, h, save, cb)
  holder.busy = (holder.busy or 0) + 1
  local rc
  if save then rc = C.lmx_kvstore_save_optimizer_states(h, cb, nil)
  else rc = C.lmx_kvstore_load_optimizer_states(h, cb, nil) end
  holder.busy = holder.busy - 1
  return rc
end
jit.off(c_states)

local function not_running(self, what)
  if (self._holder.busy or 0) > 0 then
    raise(('kvstore:%s: cannot run inside the store\'s own updater or optimizer-state '
      .. 'callback (the store is in the middle of a push/pull); call it after that returns')
      :format(what))
  end
end

local function key_text(key)
  if type(key) == 'number' then
    if key % 1 ~= 0 then raise('kvstore: integer keys must be whole numbers, got ' .. key) end
    return ('%d'):format(key)
  end
  if type(key) ~= 'string' then raise('kvstore: keys are integers or strings, got ' .. type(key)) end
  return key
end

local function handle(kv)
  local h = rawget(kv, '_h')
  if not h then raise('KVStore has been freed') end
  return h
end

--- mx.kv.create(name = 'local')
function M.create(name)
  name = name or 'local'
  if type(name) ~= 'string' then raise('mx.kv.create: expected a type name, got ' .. type(name)) end
  local out = ffi.new('lmx_kvstore *[1]')
  check(C.lmx_kvstore_new(name, out), 2)
  local holder = {}
  local h = ffi.gc(out[0], function(p)
    C.lmx_kvstore_free(p)
    if holder.cb then holder.cb:free() end
  end)
  local iv = ffi.new('int[1]')
  check(C.lmx_kvstore_rank(h, iv), 2)
  local rank = iv[0]
  check(C.lmx_kvstore_num_workers(h, iv), 2)
  return setmetatable({_h = h, _holder = holder, _keys = {}, type = name, rank = rank,
                       num_workers = iv[0]}, KVStore)
end

-- (key, value) or ({keys}, {values}) into parallel lists.
local function pairs_of(key, value, what)
  if type(key) == 'table' then
    if #key == 0 then
      require('luamx.check').fail('kvstore:' .. what, 'key', 'an integer, a string or a non-empty list of them', key)
    end
    if type(value) ~= 'table' or nd.is_ndarray(value) or #value ~= #key then
      raise(('kvstore:%s: %d keys need as many values'):format(what, #key))
    end
    return key, value
  end
  return {key}, {value}
end

--- kv:init(key, value) — value an NDArray (or lists of both).
function KVStore:init(key, value)
  not_running(self, 'init')
  local keys, values = pairs_of(key, value, 'init')
  for i, k in ipairs(keys) do
    local v = values[i]
    if type(v) == 'table' and not nd.is_ndarray(v) then v = v[1] end -- MXNet takes the first
    require('luamx.check').ndarray('kvstore:init', ('value of key %s'):format(tostring(k)), v)
    local kt = key_text(k)
    check(C.lmx_kvstore_init(handle(self), kt, nd.handle(v)), 2)
    self._keys[kt] = k
  end
end

-- One engine call over the keys: values (per key an NDArray or a list over devices,
-- all keys the same count) and/or outs likewise; nil skips that half.
local pushpull
function pushpull(self, key, value, out, what)
  not_running(self, what)
  local keys, values = pairs_of(key, value or out, what)
  local outs = out and select(2, pairs_of(key, out, what)) or nil
  local n = #keys
  if n == 0 then return end
  local ckeys = ffi.new('const char *[?]', n)
  local texts = {}
  local function flat(list)
    if not list then return nil, 0 end
    local per
    local all = {}
    for i, v in ipairs(list) do
      if nd.is_ndarray(v) then v = {v} end
      if type(v) ~= 'table' or #v == 0 then
        raise(('kvstore:%s: key %s: expected an NDArray or a list of NDArrays'):format(what, tostring(keys[i])))
      end
      if per and #v ~= per then return nil, -1 end -- not one count: one call per key
      per = #v
      for _, a in ipairs(v) do all[#all + 1] = a end
    end
    local arr = ffi.new('lmx_ndarray *[?]', #all)
    for j, a in ipairs(all) do
      if not nd.is_ndarray(a) then
        raise(('kvstore:%s: expected NDArrays, got %s'):format(what, type(a)))
      end
      arr[j - 1] = nd.handle(a)
    end
    return arr, per
  end
  for i, k in ipairs(keys) do texts[i] = key_text(k); ckeys[i - 1] = texts[i] end
  local va, nv = flat(value and values or nil)
  local oa, no = flat(outs)
  if nv < 0 or no < 0 then
    for i, k in ipairs(keys) do pushpull(self, k, value and values[i], outs and outs[i], what) end
    return
  end
  local holder = self._holder
  holder.err = nil
  local rc = c_pushpull(holder, handle(self), n, ckeys, va, nv, oa, no)
  if holder.err then
    local err = holder.err
    holder.err = nil
    raise(('kvstore: the updater failed for key %s: %s'):format(tostring(holder.err_key), tostring(err)))
  end
  check(rc, 3)
end

--- kv:push(key, value [, priority]) — value: NDArray or list over devices (summed over
--- devices and workers). key may be a list (one call: fused on dist stores).
function KVStore:push(key, value, _priority) pushpull(self, key, value, nil, 'push') end

--- kv:pull(key, out [, priority]) — out: NDArray or list over devices (broadcast).
function KVStore:pull(key, out, _priority) pushpull(self, key, nil, out, 'pull') end

--- kv:pushpull(key, value, out [, priority]) = push then pull (out defaults to value), in
--- one engine call.
function KVStore:pushpull(key, value, out, _priority) pushpull(self, key, value, out or value, 'pushpull') end

--- kv:broadcast(key, value, out) = init then pull.
function KVStore:broadcast(key, value, out)
  self:init(key, value)
  self:pull(key, out)
end

--- kv:_set_updater(fn): fn(key, merged_grad, stored_weight) updates the weight in place.
--- fn may not use the store itself (push, pull, init, free, _set_updater: an error).
function KVStore:_set_updater(fn)
  not_running(self, '_set_updater')
  if fn ~= nil and type(fn) ~= 'function' and not (type(fn) == 'table' and getmetatable(fn)
      and getmetatable(fn).__call) then
    raise('kvstore:_set_updater: expected a function, got ' .. type(fn))
  end
  local holder, keys = self._holder, self._keys
  local cb = nil
  if fn then
    cb = ffi.cast('lmx_kv_updater_fn', function(ckey, grad, weight)
      local kt = ffi.string(ckey)
      C.lmx_ndarray_retain(grad)
      C.lmx_ndarray_retain(weight)
      local key = keys[kt]
      if key == nil then key = kt end
      local ok, err = pcall(fn, key, nd.wrap(grad), nd.wrap(weight))
      if ok then return 0 end
      holder.err, holder.err_key = err, key
      return 1
    end)
  end
  check(C.lmx_kvstore_set_updater(handle(self), cb, nil), 2)
  if holder.cb then holder.cb:free() end
  holder.cb = cb
  self._updater = fn
end
KVStore.set_updater = KVStore._set_updater

--- kv:set_optimizer(opt): the updater becomes mx.optimizer.get_updater(opt).
function KVStore:set_optimizer(opt)
  local updater = require('luamx.optimizer').get_updater(opt)
  self:_set_updater(updater)
  self._updater_obj = updater
end

-- Runs fn inside the engine's optimizer-state hook (which decides who writes: rank 0).
local function states(self, save, fn)
  local holder = self._holder
  local err
  local cb = ffi.cast('lmx_kv_states_fn', function()
    local ok, e = pcall(fn)
    if ok then return 0 end
    err = e
    return 1
  end)
  local rc = c_states(holder, handle(self), save, cb)
  cb:free()
  if err then raise(('kvstore: %s optimizer states: %s'):format(save and 'saving' or 'loading', tostring(err)), 3) end
  check(rc, 3)
  return holder
end

--- kv:save_optimizer_states(fname): rank 0 writes (every rank gets its status).
function KVStore:save_optimizer_states(fname)
  if not self._updater_obj then raise('kvstore: cannot save states for distributed training without an optimizer (call set_optimizer first)') end
  states(self, true, function() self._updater_obj:save_states(fname) end)
end

--- kv:load_optimizer_states(fname): every rank reads.
function KVStore:load_optimizer_states(fname)
  if not self._updater_obj then raise('kvstore: cannot load states without an optimizer (call set_optimizer first)') end
  states(self, false, function() self._updater_obj:set_states(fname) end)
end

--- kv:barrier(): waits for every worker (the engine names lost or disagreeing ranks).
function KVStore:barrier() check(C.lmx_kvstore_barrier(handle(self)), 2) end

--- kv:check_consistency(what, value): every worker must call it with the same what and
--- value (an integer); an error names the ranks that differ. Module.fit checks the number
--- of batches of each epoch with it.
function KVStore:check_consistency(what, value)
  if type(what) ~= 'string' then raise('kvstore:check_consistency: what must be a string, got ' .. type(what)) end
  if type(value) ~= 'number' or value % 1 ~= 0 then
    raise('kvstore:check_consistency: value must be an integer, got ' .. tostring(value))
  end
  check(C.lmx_kvstore_check(handle(self), what, value), 2)
end

--- kv:set_gradient_compression(params): not implemented; refused.
function KVStore:set_gradient_compression(_params)
  raise(('kvstore \'%s\': set_gradient_compression: gradient compression is not implemented in luamx; '
    .. 'gradients are all-reduced in full precision'):format(self.type))
end

--- Frees the store now (and its updater callback).
function KVStore:free()
  local h = rawget(self, '_h')
  if not h then return end
  not_running(self, 'free')
  ffi.gc(h, nil)
  C.lmx_kvstore_free(h)
  if self._holder.cb then self._holder.cb:free(); self._holder.cb = nil end
  rawset(self, '_h', nil)
end

KVStore.__tostring = function(kv) return ('<KVStore %s>'):format(kv.type) end

--- Installs this module as `mx.kv` and `mx.kvstore`.
-- @param mx the luamx module table
function M.install(mx)
  mx.kv = M
  mx.kvstore = M
end

return M
