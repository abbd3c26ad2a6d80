--- luamx.op — operator introspection and single-operator inference (mx.op).
--
--   mx.op.list()                      -> { 'Activation', 'BatchNorm', ... } (sorted)
--   mx.op.info('FullyConnected')      -> { name, hint, doc, flags, params = {...},
--                                         kernels = {cpu = {forward, backward}, gpu = ...} }
--   mx.op.info('FullyConnected', {num_hidden = 4}) also gives inputs/outputs/aux names
--   mx.op.infer('FullyConnected', {num_hidden = 6}, {{2, 4}})
--       -> in_shapes, out_shapes, aux_shapes, out_dtypes
-- Parameter values may be Lua numbers, booleans, strings or tables (tuples); they are
-- converted to MXNet's string forms ("3", "True", "(2, 2)") by `to_param_string`.
-- Everything comes from the C registry (luamx.h "operators"); nothing here is per-op.
local ffi = require 'ffi'
local capi = require 'luamx.capi'
local C, check = capi.C, capi.check

local M = {}
local MAXD = 8

local TYPES = { [0] = 'int', 'float', 'bool', 'enum', 'shape', 'string', 'dtype',
  'opt_int', 'opt_float', 'floats', 'opt_ints', 'opt_bool' }

local function num_str(v)
  if v ~= v then return 'nan' end
  if v == math.huge then return 'inf' end
  if v == -math.huge then return '-inf' end
  if v % 1 == 0 and math.abs(v) < 2^53 then return ('%d'):format(v) end
  for p = 1, 17 do
    local s = ('%.' .. p .. 'g'):format(v)
    if tonumber(s) == v then return s end
  end
  return ('%.17g'):format(v)
end

--- MXNet's string form of a Lua parameter value.
function M.to_param_string(v)
  local t = type(v)
  if t == 'string' then return v end
  if t == 'boolean' then return v and 'True' or 'False' end
  if t == 'number' then return num_str(v) end
  if v == nil then return 'None' end
  if t == 'table' then
    local parts = {}
    for i = 1, #v do parts[i] = v[i] == 'None' and 'None' or M.to_param_string(v[i]) end
    if #parts == 1 then return '(' .. parts[1] .. ',)' end
    return '(' .. table.concat(parts, ', ') .. ')'
  end
  error('mx.op: cannot convert a ' .. t .. ' to a parameter string', 3)
end

local function index_of(name, level)
  local idx = ffi.new('int[1]')
  check(C.lmx_op_lookup(name, idx), level + 1)
  return idx[0]
end

local function kv(params)
  local keys, vals = {}, {}
  for k, v in pairs(params or {}) do
    keys[#keys + 1] = k
  end
  table.sort(keys)
  for i, k in ipairs(keys) do vals[i] = M.to_param_string(params[k]) end
  local n = #keys
  local ck, cv = ffi.new('const char *[?]', n + 1), ffi.new('const char *[?]', n + 1)
  for i = 1, n do ck[i - 1], cv[i - 1] = keys[i], vals[i] end
  return n, ck, cv, { keys, vals } -- last value keeps the Lua strings alive
end

--- Sorted list of the canonical operator names.
function M.list()
  local n = ffi.new('int[1]')
  check(C.lmx_op_registry_size(n), 2)
  local out, name = {}, ffi.new('const char *[1]')
  for i = 0, n[0] - 1 do
    check(C.lmx_op_get_name(i, name), 2)
    out[#out + 1] = ffi.string(name[0])
  end
  table.sort(out)
  return out
end

local function io_names(idx, params, kind)
  local n, ck, cv, keep = kv(params)
  local buf, cnt, vis = ffi.new('char[4096]'), ffi.new('int[1]'), ffi.new('int[1]')
  check(C.lmx_op_io_names(idx, n, ck, cv, kind, buf, 4096, cnt, vis), 4)
  local _ = keep
  local list = {}
  for s in ffi.string(buf):gmatch('[^,]+') do list[#list + 1] = s end
  return list, vis[0]
end

--- Description of an op: name, hint, doc, flags, params, kernels (per device type:
-- {forward, backward} booleans); with `params` (or when the op has no required
-- parameter) also inputs, outputs, aux and num_visible_outputs.
function M.info(name, params)
  local idx = index_of(name, 2)
  local cname, doc, hint = ffi.new('const char *[1]'), ffi.new('const char *[1]'),
    ffi.new('const char *[1]')
  local np, flags = ffi.new('int[1]'), ffi.new('int[1]')
  check(C.lmx_op_info(idx, cname, doc, hint, np, flags), 2)
  local info = { name = ffi.string(cname[0]), doc = ffi.string(doc[0]),
    hint = ffi.string(hint[0]), flags = flags[0], params = {} }
  local pn, pt, pd, pc, pdoc = ffi.new('const char *[1]'), ffi.new('int[1]'),
    ffi.new('const char *[1]'), ffi.new('const char *[1]'), ffi.new('const char *[1]')
  for j = 0, np[0] - 1 do
    check(C.lmx_op_param_info(idx, j, pn, pt, pd, pc, pdoc), 2)
    info.params[#info.params + 1] = {
      name = ffi.string(pn[0]), type = TYPES[pt[0]],
      default = pd[0] ~= nil and ffi.string(pd[0]) or nil,
      choices = pc[0] ~= nil and ffi.string(pc[0]) or nil,
      required = pd[0] == nil, doc = ffi.string(pdoc[0]) }
  end
  -- kernels.cpu / kernels.gpu: {forward = bool, backward = bool} (the backends' tables)
  info.kernels = {}
  local kf, kb = ffi.new('int[1]'), ffi.new('int[1]')
  for dev, code in pairs { cpu = 1, gpu = 2 } do
    check(C.lmx_op_kernels(idx, code, kf, kb), 2)
    info.kernels[dev] = { forward = kf[0] ~= 0, backward = kb[0] ~= 0 }
  end
  local ok = pcall(function()
    info.inputs = io_names(idx, params, 0)
    info.outputs, info.num_visible_outputs = io_names(idx, params, 1)
    info.aux = io_names(idx, params, 2)
  end)
  if not ok and params then io_names(idx, params, 0) end -- re-raise the parameter error
  return info
end

local function shape_of(ndim, dims, slot)
  if ndim == 0 then return nil end
  local s = {}
  for d = 0, ndim - 1 do s[d + 1] = tonumber(dims[slot * MAXD + d]) end
  return s
end

--- Single-op inference. shapes: one table per input ({} or false = unknown; 0 = an
-- unknown dim); dtypes: optional names per input. Returns in_shapes, out_shapes
-- (visible and hidden), aux_shapes, out_dtypes (names; nil when unknown).
function M.infer(name, params, shapes, dtypes, node)
  local idx = index_of(name, 2)
  local n, ck, cv, keep = kv(params)
  if type(shapes) ~= 'table' then
    capi.raise(("mx.op.infer('%s'): shapes must be a list of shapes, got %s"):format(name, type(shapes)))
  end
  local nin = #shapes
  local in_nd, in_dims = ffi.new('int[?]', nin + 1), ffi.new('int64_t[?]', (nin + 1) * MAXD)
  local in_dt = ffi.new('int[?]', nin + 1)
  for i = 1, nin do
    local s = shapes[i] or {}
    in_nd[i - 1] = require('luamx.ndarray').check_dims(s, ("mx.op.infer('%s'): shape of input %d"):format(name, i))
    for d = 1, #s do in_dims[(i - 1) * MAXD + d - 1] = s[d] end
    in_dt[i - 1] = -1
    if dtypes and dtypes[i] then
      local code = ffi.new('int[1]')
      check(C.lmx_dtype_from_name(dtypes[i], code), 2)
      in_dt[i - 1] = code[0]
    end
  end
  local cap = 64
  local counts, nd = ffi.new('int[4]'), ffi.new('int[?]', cap)
  local dims, dts = ffi.new('int64_t[?]', cap * MAXD), ffi.new('int[?]', cap)
  check(C.lmx_op_infer(idx, node, n, ck, cv, nin, in_nd, in_dims, in_dt, cap, counts, nd,
    dims, dts), 2)
  local _ = keep
  local ins, outs, auxs, odt = {}, {}, {}, {}
  local slot = 0
  for i = 1, counts[0] do ins[i] = shape_of(nd[slot], dims, slot) or false; slot = slot + 1 end
  for i = 1, counts[1] do
    outs[i] = shape_of(nd[slot], dims, slot) or false
    odt[i] = dts[slot] >= 0 and ffi.string(C.lmx_dtype_name(dts[slot])) or false
    slot = slot + 1
  end
  for i = 1, counts[2] do auxs[i] = shape_of(nd[slot], dims, slot) or false; slot = slot + 1 end
  return ins, outs, auxs, odt
end

--- The input names of op `name` under `params` (entries whose values are not parameter
-- values, such as NDArrays or Symbols given as inputs, are left out), or nil when they
-- cannot be told. For error messages: an input given a number is a misplaced input,
-- not an unknown parameter.
-- @param name the operator's name
-- @param params the call's keyword table
-- @return list of names, or nil
function M.input_names(name, params)
  local ok, list = pcall(function()
    local idx = index_of(name, 2)
    local clean = {}
    for k, v in pairs(params or {}) do
      local t = type(v)
      if type(k) == 'string' and (t == 'string' or t == 'number' or t == 'boolean' or
         (t == 'table' and getmetatable(v) == nil)) then
        clean[k] = v
      end
    end
    -- drop keys the op does not take as parameters (they may be the misplaced inputs)
    local info = M.info(name)
    local known = {}
    for _, p in ipairs(info.params) do known[p.name] = true end
    for k in pairs(clean) do if not known[k] then clean[k] = nil end end
    local ok2, l = pcall(io_names, idx, clean, 0)
    if ok2 then return l end
    return io_names(idx, nil, 0)
  end)
  if ok then return list end
  return nil
end

--- Raises "<who>: input '<k>' must be <expected>, got <actual>" when a keyword of
-- `params` is one of op `name`'s inputs (so the call put a non-array where an input
-- goes); returns otherwise.
-- @param who the function's name for the message (`mx.nd.relu`)
-- @param name the operator's name
-- @param params the keyword table of parameters as the call split them
-- @param expected `an NDArray` or `a Symbol`
function M.check_misplaced_inputs(who, name, params, expected)
  local inputs = M.input_names(name, params)
  if not inputs then return end
  local describe = require('luamx.check').describe
  for _, nm in ipairs(inputs) do
    if params[nm] ~= nil then
      capi.raise(("%s: input '%s' must be %s, got %s"):format(who, nm, expected, describe(params[nm])))
    end
  end
end

-- A Custom op (luamx.operator) calls back into Lua from these C calls: keep them out of traces.
jit.off(io_names)
jit.off(M.infer)

--- Adds mx.op to the namespace table.
function M.install(mx)
  mx.op = M
end

return M
