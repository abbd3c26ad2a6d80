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
-- text and the updater gets them back as given. Types 'local' and 'device' (the same on
-- CPU contexts); 'nccl' and 'dist_*' are refused by the engine with a message naming
-- what is missing.
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

local function c_push(h, key, arr, n) return C.lmx_kvstore_push(h, key, arr, n) end
jit.off(c_push)

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
  return setmetatable({_h = h, _holder = holder, _keys = {}, type = name, rank = 0,
                       num_workers = 1}, KVStore)
end

-- (key, value) or ({keys}, {values}) into parallel lists.
local function pairs_of(key, value, what)
  if type(key) == 'table' then
    if type(value) ~= 'table' or #value ~= #key then
      raise(('kvstore:%s: %d keys need as many values'):format(what, #key))
    end
    return key, value
  end
  return {key}, {value}
end

local function array_list(v, what, key)
  if nd.is_ndarray(v) then v = {v} end
  if type(v) ~= 'table' or #v == 0 then
    raise(('kvstore:%s: key %s: expected an NDArray or a list of NDArrays'):format(what, tostring(key)))
  end
  local arr = ffi.new('lmx_ndarray *[?]', #v)
  for i, a in ipairs(v) do arr[i - 1] = nd.handle(a) end
  return arr, #v
end

--- kv:init(key, value) — value an NDArray (or lists of both).
function KVStore:init(key, value)
  local keys, values = pairs_of(key, value, 'init')
  for i, k in ipairs(keys) do
    local v = values[i]
    if type(v) == 'table' and not nd.is_ndarray(v) then v = v[1] end -- MXNet takes the first
    local kt = key_text(k)
    check(C.lmx_kvstore_init(handle(self), kt, nd.handle(v)), 2)
    self._keys[kt] = k
  end
end

--- kv:push(key, value [, priority]) — value: NDArray or list over devices (summed).
function KVStore:push(key, value, _priority)
  local keys, values = pairs_of(key, value, 'push')
  local h, holder = handle(self), self._holder
  for i, k in ipairs(keys) do
    local arr, n = array_list(values[i], 'push', k)
    holder.err = nil
    local rc = c_push(h, key_text(k), arr, n)
    if holder.err then
      local err = holder.err
      holder.err = nil
      raise(('kvstore: the updater failed for key %s: %s'):format(tostring(k), tostring(err)))
    end
    check(rc, 2)
  end
end

--- kv:pull(key, out [, priority]) — out: NDArray or list over devices (broadcast).
function KVStore:pull(key, out, _priority)
  local keys, outs = pairs_of(key, out, 'pull')
  for i, k in ipairs(keys) do
    local arr, n = array_list(outs[i], 'pull', k)
    check(C.lmx_kvstore_pull(handle(self), key_text(k), arr, n), 2)
  end
end

--- kv:pushpull(key, value, out [, priority]) = push then pull (out defaults to value).
function KVStore:pushpull(key, value, out, priority)
  self:push(key, value, priority)
  self:pull(key, out or value, priority)
end

--- kv:broadcast(key, value, out) = init then pull.
function KVStore:broadcast(key, value, out)
  self:init(key, value)
  self:pull(key, out)
end

--- kv:_set_updater(fn): fn(key, merged_grad, stored_weight) updates the weight in place.
function KVStore:_set_updater(fn)
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
      holder.err = err
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

function KVStore:save_optimizer_states(fname)
  if not self._updater_obj then raise('kvstore: cannot save states for distributed training without an optimizer (call set_optimizer first)') end
  self._updater_obj:save_states(fname)
end

function KVStore:load_optimizer_states(fname)
  if not self._updater_obj then raise('kvstore: cannot load states without an optimizer (call set_optimizer first)') end
  self._updater_obj:set_states(fname)
end

--- No other workers: a barrier returns at once.
function KVStore:barrier() end

--- Frees the store now (and its updater callback).
function KVStore:free()
  local h = rawget(self, '_h')
  if not h then return end
  ffi.gc(h, nil)
  C.lmx_kvstore_free(h)
  if self._holder.cb then self._holder.cb:free(); self._holder.cb = nil end
  rawset(self, '_h', nil)
end

KVStore.__tostring = function(kv) return ('<KVStore %s>'):format(kv.type) end

function M.install(mx)
  mx.kv = M
  mx.kvstore = M
end

return M
