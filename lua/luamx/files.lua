--- luamx.files — mx.nd.save / mx.nd.load in MXNet's NDArray-list format.
--
--   mx.nd.save('x.params', {a, b})                -- a list (the file has no names)
--   mx.nd.save('x.params', {['arg:w'] = w})       -- named; names sorted, so the file
--                                                 -- is the same whatever the table order
--   local t = mx.nd.load('x.params')              -- a Lua array, or name -> NDArray
--
-- The engine does the work (src/tensor/ndfile.c): atomic writes, untrusted-input
-- checks. This module only checks the Lua values, passes handles and names down, and
-- wraps what comes back. An empty table saves an empty list. Loaded arrays are on cpu(0).
local ffi = require 'ffi'
local capi = require 'luamx.capi'
local nd = require 'luamx.ndarray'
local C, check = capi.C, capi.check

local M = {}

local function check_path(path, fn, level)
  if type(path) ~= 'string' then
    error(('%s: path must be a string, got %s'):format(fn, type(path)), level + 1)
  end
  if path == '' or path:find('\0', 1, true) then
    error(('%s: path must be a non-empty string without NUL bytes'):format(fn), level + 1)
  end
end

local function describe(v)
  if type(v) == 'table' then return 'a table' end
  return type(v)
end

--- The handle of an NDArray element, or an error naming its place (`where`).
local function element_handle(v, where, level)
  if not nd.is_ndarray(v) then
    error(('mx.nd.save: %s must be an NDArray, got %s'):format(where, describe(v)), level + 1)
  end
  local h = rawget(v, '_h')
  if not h then error(('mx.nd.save: %s has been freed'):format(where), level + 1) end
  return h
end

--- Lua array -> handles; every key must be 1..n.
local function list_handles(arrays, level)
  local n = #arrays
  for k in pairs(arrays) do
    if type(k) ~= 'number' or k % 1 ~= 0 or k < 1 or k > n then
      error(('mx.nd.save: arrays is a list (it has element [1]) but also has key %s; use '
        .. 'either a list or a name -> NDArray table'):format(
        type(k) == 'string' and ("'" .. k .. "'") or tostring(k)), level + 1)
    end
  end
  local hs = ffi.new('lmx_ndarray *[?]', math.max(n, 1))
  for i = 1, n do hs[i - 1] = element_handle(arrays[i], ('element [%d]'):format(i), level + 1) end
  return hs, n, nil, nil
end

--- name -> NDArray table -> handles and names, sorted by name.
local function named_handles(arrays, level)
  local keys = {}
  for k in pairs(arrays) do
    if type(k) ~= 'string' then
      error(('mx.nd.save: key %s (a %s) is not a string; a table of named arrays needs '
        .. 'string keys'):format(tostring(k), type(k)), level + 1)
    end
    if k:find('\0', 1, true) then
      error(('mx.nd.save: key %q contains a NUL byte'):format(k), level + 1)
    end
    keys[#keys + 1] = k
  end
  table.sort(keys)
  local n = #keys
  local hs = ffi.new('lmx_ndarray *[?]', n)
  local names = ffi.new('const char *[?]', n)
  for i, k in ipairs(keys) do
    hs[i - 1] = element_handle(arrays[k], ("value for '%s'"):format(k), level + 1)
    names[i - 1] = k -- anchored by `keys` until the call returns
  end
  return hs, n, names, keys
end

--- Saves a list or a name -> NDArray table to path (MXNet's format, atomic).
function M.save(path, arrays)
  check_path(path, 'mx.nd.save', 2)
  if type(arrays) ~= 'table' or nd.is_ndarray(arrays) then
    error(('mx.nd.save: arrays must be a list or a name -> NDArray table, got %s'):format(
      nd.is_ndarray(arrays) and 'an NDArray (wrap it in a table)' or type(arrays)), 2)
  end
  local hs, n, names, keep
  if next(arrays) == nil or arrays[1] ~= nil then
    hs, n, names, keep = list_handles(arrays, 2)
  else
    hs, n, names, keep = named_handles(arrays, 2)
  end
  local rc = C.lmx_ndarray_save(path, hs, names, n)
  keep = nil -- names stayed anchored through the call
  check(rc, 2)
end

--- Loads a file: a Lua array (file without names) or a name -> NDArray table.
function M.load(path)
  check_path(path, 'mx.nd.load', 2)
  local out = ffi.new('lmx_ndlist *[1]')
  check(C.lmx_ndarray_load(path, out), 2)
  local list = ffi.gc(out[0], C.lmx_ndlist_free)
  local n, has_names = ffi.new('int[1]'), ffi.new('int[1]')
  check(C.lmx_ndlist_size(list, n, has_names), 2)
  local arr, name = ffi.new('lmx_ndarray *[1]'), ffi.new('const char *[1]')
  local result = {}
  for i = 0, n[0] - 1 do
    check(C.lmx_ndlist_get(list, i, arr, name), 2)
    local a = nd.wrap(arr[0])
    if has_names[0] ~= 0 then result[ffi.string(name[0])] = a else result[i + 1] = a end
  end
  ffi.gc(list, nil)
  C.lmx_ndlist_free(list)
  return result
end

--- Installs `save` and `load` as `mx.nd.save` and `mx.nd.load`.
-- @param mx the luamx module table
function M.install(mx)
  mx.nd.save = M.save
  mx.nd.load = M.load
end

return M
