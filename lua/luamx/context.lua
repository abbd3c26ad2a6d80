--- luamx.context — devices: mx.cpu(id), mx.gpu(id), mx.context.num_gpus().
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

function M.cpu(id) return make('cpu', id, 2) end
function M.gpu(id) return make('gpu', id, 2) end
function M.num_gpus() return tonumber(C.lmx_num_gpus()) end
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
