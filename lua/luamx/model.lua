--- luamx.model — mx.model: checkpoints (MXNet 1.9 python/mxnet/model.py).
--
--   mx.model.save_checkpoint('mlp', 3, sym, arg_params, aux_params)
--     -> mlp-symbol.json (when sym is given) and mlp-0003.params
--   local sym, arg_params, aux_params = mx.model.load_checkpoint('mlp', 3)
--
-- The .params file is MXNet's NDArray-list format with 'arg:<name>' and 'aux:<name>'
-- keys. Every file is written atomically (temporary, fsync, rename) and the set is
-- committed by mlp-0003.manifest (luamx.manifest), which load_checkpoint verifies: a
-- save killed at any instant leaves that epoch complete or reported incomplete, never a
-- mixed set taken for a checkpoint. Without a manifest (MXNet's files) it loads as MXNet.
-- load_checkpoint returns nil for the symbol when mx.sym is not available or the JSON
-- file does not exist.
local capi = require 'luamx.capi'
local nd = require 'luamx.ndarray'
local context = require 'luamx.context'
local manifest = require 'luamx.manifest'
local raise = capi.raise

local M = {}
local mx_ref

--- Writes a log line to stderr (replace it to redirect checkpoint messages).
-- @param msg the message
function M.log(msg) io.stderr:write(msg, '\n') end

--- Saves a checkpoint as MXNet does: `prefix-symbol.json` (when `symbol` is given) and
-- `prefix-NNNN.params` (parameters as `arg:name` / `aux:name`, copied to the CPU).
-- @param prefix path prefix
-- @param epoch epoch number (the NNNN in the file name)
-- @param symbol the Symbol, or nil to write the parameters only
-- @param arg_params table name -> NDArray
-- @param aux_params table name -> NDArray
-- @usage mx.model.save_checkpoint('mlp', 10, net, args, auxs)
function M.save_checkpoint(prefix, epoch, symbol, arg_params, aux_params)
  if type(prefix) ~= 'string' then raise('save_checkpoint: prefix must be a string, got ' .. type(prefix)) end
  if type(epoch) ~= 'number' or epoch % 1 ~= 0 or epoch < 0 then
    raise('save_checkpoint: epoch must be a non-negative integer, got ' .. (type(epoch) == 'number' and tostring(epoch) or type(epoch)))
  end
  M.check_params('mx.model.save_checkpoint', arg_params, aux_params)
  if symbol ~= nil and not (type(symbol) == 'table' and (symbol.tojson or symbol.save)) then
    require('luamx.check').fail('mx.model.save_checkpoint', 'symbol', 'a Symbol or nil', symbol)
  end
  local cpu = context.cpu()
  local save = {}
  for k, v in pairs(arg_params or {}) do save['arg:' .. k] = v:as_in_context(cpu) end
  for k, v in pairs(aux_params or {}) do save['aux:' .. k] = v:as_in_context(cpu) end
  local name, sym_path = ('%s-%04d.params'):format(prefix, epoch), prefix .. '-symbol.json'
  if symbol ~= nil then
    if symbol.tojson then manifest.write_atomic(sym_path, symbol:tojson(), 'save_checkpoint')
    else symbol:save(sym_path) end
  end
  manifest.save(prefix, epoch, 'save_checkpoint', {{path = name, write = function(tmp) nd.save(tmp, save) end}},
    symbol ~= nil and {sym_path} or {})
  M.log(('Saved checkpoint to "%s"'):format(name))
end

--- Checks parameter tables as save_checkpoint takes them: nil or tables mapping string
-- names to NDArrays; raises naming `who`, the table and the entry otherwise.
-- @param who the calling function's name
-- @param arg_params table name -> NDArray (or nil)
-- @param aux_params table name -> NDArray (or nil)
function M.check_params(who, arg_params, aux_params)
  local check = require 'luamx.check'
  for _, p in ipairs {{'arg_params', arg_params}, {'aux_params', aux_params}} do
    local what, t = p[1], p[2]
    if t ~= nil then
      check.type(who, what, t, 'table')
      for k, v in pairs(t) do
        if type(k) ~= 'string' then check.fail(who, what .. ' keys', 'parameter names (strings)', k) end
        check.ndarray(who, ('%s[%q]'):format(what, k), v)
      end
    end
  end
end

--- The state of checkpoint `prefix` epoch `epoch` (see luamx.manifest): 'complete',
-- 'pending' (its save was interrupted), 'damaged', 'unmanaged' (no manifest: MXNet's
-- files) or 'missing'.
-- @param prefix path prefix
-- @param epoch epoch number
-- @return state, and a message for 'pending', 'damaged' and 'missing'
-- @usage if mx.model.checkpoint_status('mlp', 3) == 'complete' then ... end
function M.checkpoint_status(prefix, epoch)
  if type(prefix) ~= 'string' then raise('checkpoint_status: prefix must be a string, got ' .. type(prefix)) end
  if type(epoch) ~= 'number' then raise('checkpoint_status: epoch must be a number, got ' .. type(epoch)) end
  local st, info = manifest.status(prefix, epoch)
  if type(info) == 'table' then info = nil end
  return st, info
end

local read_params

--- load_params(prefix, epoch) -> arg_params, aux_params.
function M.load_params(prefix, epoch)
  local check = require 'luamx.check'
  check.type('mx.model.load_checkpoint', 'prefix', prefix, 'string')
  check.number('mx.model.load_checkpoint', 'epoch', epoch, {integer = true, min = 0})
  return read_params(('%s-%04d.params'):format(prefix, epoch))
end

-- the arg:/aux: arrays of a .params file
function read_params(name)
  local loaded = nd.load(name)
  local arg, aux = {}, {}
  for k, v in pairs(loaded) do
    if type(k) ~= 'string' then raise(('load_checkpoint: %s holds an unnamed array list, expected arg:/aux: keys'):format(name)) end
    local kind, n = k:match('^(%a+):(.*)$')
    if kind == 'arg' then arg[n] = v
    elseif kind == 'aux' then aux[n] = v
    else raise(('load_checkpoint: %s has key %q, expected arg:<name> or aux:<name>'):format(name, k)) end
  end
  return arg, aux
end

--- Loads a checkpoint written by `save_checkpoint` (or by MXNet).
-- @param prefix path prefix
-- @param epoch epoch number
-- @return symbol (nil when there is no `prefix-symbol.json`), arg_params, aux_params
-- @usage local net, args, auxs = mx.model.load_checkpoint('mlp', 10)
function M.load_checkpoint(prefix, epoch)
  local check = require 'luamx.check'
  check.type('mx.model.load_checkpoint', 'prefix', prefix, 'string')
  check.number('mx.model.load_checkpoint', 'epoch', epoch, {integer = true, min = 0})
  local _, file, release = manifest.check(prefix, epoch, 'load_checkpoint', {('%s-%04d.params'):format(prefix, epoch)})
  local ok, sym, arg, aux = pcall(function()
    local s
    local path = prefix .. '-symbol.json'
    local f = io.open(path, 'rb')
    if f then
      f:close()
      if mx_ref and mx_ref.sym and mx_ref.sym.load then s = mx_ref.sym.load(path) end
    end
    return s, read_params(file(('%s-%04d.params'):format(prefix, epoch)))
  end)
  release()
  if not ok then error(sym, 0) end
  return sym, arg, aux
end

--- Copies this module's functions into `mx.model`.
-- @param mx the luamx module table
-- @return this module
function M.install(mx)
  mx_ref = mx
  mx.model = mx.model or {}
  for k, v in pairs(M) do if k ~= 'install' then mx.model[k] = v end end
  return M
end

return M
