--- luamx.context — devices: mx.cpu(id), mx.gpu(id), mx.context.num_gpus(),
-- mx.context.gpu_memory_info(id), mx.context.empty_cache(id).
--
-- A context is an immutable table {device_type = 'cpu'|'gpu', device_id = n}; contexts
-- compare with == and print as cpu(0). Asking for a GPU that is not there fails when
-- the context is made, with the engine's message.
local capi = require 'luamx.capi'
local C, check, raise = capi.C, capi.check, capi.raise

local M = {}

local Context = {}
Context.__index = Context
Context.__eq = function(a, b) return a.device_type == b.device_type and a.device_id == b.device_id end
Context.__tostring = function(c) return ('%s(%d)'):format(c.device_type, c.device_id) end

local codes = {cpu = C.LMX_CPU, gpu = C.LMX_GPU}
local names = {[tonumber(C.LMX_CPU)] = 'cpu', [tonumber(C.LMX_GPU)] = 'gpu'}

local cache = {}

local function make(device_type, id, level)
  id = id or 0
  if type(id) ~= 'number' or id % 1 ~= 0 then
    raise(('mx.%s: device id must be an integer, got %s'):format(device_type, tostring(id)))
  end
  local key = device_type .. id
  local c = cache[key]
  if c then return c end
  check(C.lmx_context_check(codes[device_type], id), level)
  c = setmetatable({device_type = device_type, device_id = id, dev_code = tonumber(codes[device_type])}, Context)
  cache[key] = c
  return c
end

--- The CPU context, as MXNet's `mx.cpu()`.
-- @param id device id (defaults to 0; it does not select anything on the CPU)
-- @return a Context
-- @usage local a = mx.nd.zeros({2, 3}, mx.cpu())
function M.cpu(id) return make('cpu', id, 2) end
--- The context of GPU `id`, as MXNet's `mx.gpu(id)`.
-- @param id device id (defaults to 0)
-- @return a Context
-- @usage local a = mx.nd.ones({2, 3}, mx.gpu(0))
function M.gpu(id) return make('gpu', id, 2) end
--- Number of usable GPUs: 0 without CUDA support, a driver or a device.
function M.num_gpus() return tonumber(C.lmx_num_gpus()) end

local ffi = require 'ffi'
local figure_names = {
  [tonumber(C.LMX_GPUMEM_IN_USE)] = 'in_use', [tonumber(C.LMX_GPUMEM_CACHED)] = 'cached',
  [tonumber(C.LMX_GPUMEM_PEAK)] = 'peak', [tonumber(C.LMX_GPUMEM_LIVE_BLOCKS)] = 'live_blocks',
  [tonumber(C.LMX_GPUMEM_CACHED_BLOCKS)] = 'cached_blocks', [tonumber(C.LMX_GPUMEM_REQUESTS)] = 'requests',
  [tonumber(C.LMX_GPUMEM_CACHE_HITS)] = 'cache_hits', [tonumber(C.LMX_GPUMEM_RAW_ALLOCS)] = 'raw_allocs',
  [tonumber(C.LMX_GPUMEM_RAW_FREES)] = 'raw_frees', [tonumber(C.LMX_GPUMEM_OOM_RETRIES)] = 'oom_retries',
  [tonumber(C.LMX_GPUMEM_OOMS)] = 'ooms',
}

--- Memory of gpu(id) (id defaults to 0): free, total (bytes, as MXNet's
-- mx.context.gpu_memory_info), and a table of the caching allocator's figures:
-- in_use, cached, peak (bytes of rounded blocks), live_blocks, cached_blocks, requests,
-- cache_hits, raw_allocs (cudaMalloc calls), raw_frees, oom_retries, ooms.
function M.gpu_memory_info(id)
  id = id or 0
  if type(id) ~= 'number' or id % 1 ~= 0 then
    raise(('gpu_memory_info: device id must be an integer, got %s'):format(tostring(id)))
  end
  local n = tonumber(C.LMX_GPUMEM_NUM_FIGURES)
  local f = ffi.new('int64_t[?]', n)
  check(C.lmx_gpu_memory_info(id, f, n), 2)
  local pool = {}
  for i, name in pairs(figure_names) do pool[name] = tonumber(f[i]) end
  return tonumber(f[C.LMX_GPUMEM_FREE]), tonumber(f[C.LMX_GPUMEM_TOTAL]), pool
end

--- Gives the blocks gpu(id)'s caching allocator keeps for reuse back to the device;
-- returns the bytes released (arrays in use keep theirs).
function M.empty_cache(id)
  require('luamx.check').number('mx.context.empty_cache', 'id', id, {optional = true, integer = true, min = 0})
  id = id or 0
  local out = ffi.new('int64_t[1]')
  check(C.lmx_gpu_empty_cache(id, out), 2)
  return tonumber(out[0])
end
--- Whether `x` is a Context (as made by `cpu`, `gpu` or `from_code`).
-- @param x any value
-- @return boolean
function M.is_context(x) return getmetatable(x) == Context end

--- Context from (device code, id) as the engine reports it.
function M.from_code(code, id) return make(names[tonumber(code)], tonumber(id), 2) end

--- Normalises a user value (nil -> cpu(0), a context, or 'cpu'/'gpu' strings).
function M.resolve(ctx, level)
  if ctx == nil then return M.cpu(0) end
  if getmetatable(ctx) == Context then return ctx end
  if ctx == 'cpu' or ctx == 'gpu' then return make(ctx, 0, (level or 2) + 1) end
  raise('expected a context such as mx.cpu(0), got ' .. tostring(ctx))
end

M.Context = Context
return M
