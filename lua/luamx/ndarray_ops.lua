--- luamx.ndarray_ops — every registered operator as an imperative NDArray function.
--
--   mx.nd.FullyConnected{data = x, weight = w, bias = b, num_hidden = 6}
--   mx.nd.relu(x)                       mx.nd.Activation(x, {act_type = 'relu'})
--   mx.nd.Concat(a, b, {dim = 0})       mx.nd.SliceChannel(x, {num_outputs = 2})  -> {a, b}
--   mx.nd.Dropout(x, {p = 0.5, is_train = true})
--
-- Built at load time from the C registry (luamx.h "Operators"): one function per
-- canonical name and alias, installed into mx.nd unless that name is already taken by
-- the NDArray module (mx.nd.dot, mx.nd.zeros...), and always into mx.nd.op.
-- Arguments: NDArrays positionally, in the op's input order, and/or one table of
-- keyword arguments: inputs by name, parameters (Lua values converted to MXNet's
-- strings by mx.op.to_param_string: 128 -> "128", 0.1 -> "0.1", true -> "True",
-- {2, 2} -> "(2, 2)"), and the extras `out` (an NDArray or list to write into),
-- `is_train` (training behaviour; default mx.autograd.is_training(), false outside
-- mx.autograd.record) and `name` (while recording, the node's name for
-- mx.autograd.get_symbol; otherwise ignored, as in MXNet).
-- Ops with a `num_args` parameter (Concat, add_n) get it from the number of arrays.
-- Aux states (BatchNorm's moving_mean / moving_var) may be given by name, or positionally
-- after the inputs (as MXNet's mx.nd.BatchNorm(x, gamma, beta, mean, var)); they are then
-- updated in place in training. Returns one NDArray, or a list for several visible
-- outputs. Errors are raised at the caller's line with the engine's message.
local ffi = require 'ffi'
local capi = require 'luamx.capi'
local nd = require 'luamx.ndarray'
local opmod = require 'luamx.op'
local C, check = capi.C, capi.check

local M = {}
local ag = nd.autograd_state -- mx.autograd: default is_train, node names
local EXTRA = { out = true, is_train = true, name = true, attr = true }

local function io_names(idx, n, ck, cv, kind)
  local buf, cnt, vis = ffi.new('char[4096]'), ffi.new('int[1]'), ffi.new('int[1]')
  check(C.lmx_op_io_names(idx, n, ck, cv, kind, buf, 4096, cnt, vis), 4)
  local list = {}
  for s in ffi.string(buf):gmatch('[^,]+') do list[#list + 1] = s end
  return list, vis[0], cnt[0]
end

-- Splits the call's arguments into arrays (positional), named arrays and parameters.
local function split_args(opname, has_num_args, ...)
  local pos, named, params = {}, {}, {}
  local nargs = select('#', ...)
  local extras = {}
  for i = 1, nargs do
    local v = select(i, ...)
    if nd.is_ndarray(v) then
      pos[#pos + 1] = v
    elseif type(v) == 'table' and i == nargs then
      for k, x in pairs(v) do
        if type(k) == 'number' and nd.is_ndarray(x) then pos[k] = x
        elseif type(k) ~= 'string' then
          require('luamx.check').fail('mx.nd.' .. opname, ('entry [%s] of the keyword table'):format(tostring(k)),
            'an NDArray (parameters go by name, such as {shape = {2, 3}})', x)
        elseif EXTRA[k] then extras[k] = x
        elseif nd.is_ndarray(x) then named[k] = x
        else params[k] = x end
      end
    elseif v ~= nil then
      capi.raise(('mx.nd.%s: argument %d must be an NDArray or a table of keyword arguments, '
        .. 'got %s'):format(opname, i, type(v)))
    end
  end
  if has_num_args and params.num_args == nil then params.num_args = #pos end
  return pos, named, params, extras
end

local function kv(params, opname)
  local keys, vals = {}, {}
  for k, v in pairs(params) do
    keys[#keys + 1] = k
    local t = type(v)
    if opname and not (t == 'number' or t == 'string' or t == 'boolean' or (t == 'table' and getmetatable(v) == nil)) then
      opmod.check_misplaced_inputs('mx.nd.' .. opname, opname, params, 'an NDArray')
      require('luamx.check').fail('mx.nd.' .. opname, ("parameter '%s'"):format(tostring(k)),
        'a number, string, boolean or list', v)
    end
  end
  table.sort(keys)
  for i, k in ipairs(keys) do vals[i] = opmod.to_param_string(params[k]) end
  local n = #keys
  local ck, cv = ffi.new('const char *[?]', n + 1), ffi.new('const char *[?]', n + 1)
  for i = 1, n do ck[i - 1], cv[i - 1] = keys[i], vals[i] end
  return n, ck, cv, { keys, vals }
end

-- Orders the arrays as the op's inputs (then aux states when any is given by name).
local function gather_inputs(opname, inames, anames, pos, named)
  local list, used = {}, 0
  for i, nm in ipairs(inames) do
    local a = named[nm]
    if a then named[nm] = nil else used = used + 1; a = pos[used] end
    if not a then capi.raise(('mx.nd.%s: missing input \'%s\''):format(opname, nm)) end
    list[i] = a
  end
  -- arrays past the inputs are aux states, in order (MXNet's BatchNorm(data, gamma, beta,
  -- moving_mean, moving_var))
  for _, nm in ipairs(anames) do
    if used >= #pos then break end
    if not named[nm] then used = used + 1; named[nm] = pos[used] end
  end
  if used < #pos then
    capi.raise(('mx.nd.%s: %d arrays given, the op takes %d inputs%s'):format(opname, #pos, #inames,
      #anames > 0 and (' and %d aux states'):format(#anames) or ''))
  end
  local naux = 0
  for _, nm in ipairs(anames) do if named[nm] then naux = naux + 1 end end
  if naux > 0 then
    for _, nm in ipairs(anames) do
      if not named[nm] then
        capi.raise(('mx.nd.%s: aux state \'%s\' missing (give all or none)'):format(opname, nm))
      end
      list[#list + 1] = named[nm]
      named[nm] = nil
    end
  end
  local extra = next(named)
  if extra then capi.raise(('mx.nd.%s: unknown input \'%s\''):format(opname, extra)) end
  return list
end

-- Calls with the same op and parameter strings reuse one prepared engine call (parsed
-- parameters and the op's input/output names), so repeated calls parse nothing; the
-- cache is bounded and simply restarts when full.
local call_cache, ncached = {}, 0
local tries = {} -- per op name: the fast path's lookup tree (see fast_invoke); reset with the cache

local function prepared_for(opname, idx, n, ck, cv, keep, params)
  local key = opname
  for i = 1, n do key = key .. '\0' .. keep[1][i] .. '=' .. keep[2][i] end
  local entry = call_cache[key]
  if entry then return entry end
  local h = ffi.new('lmx_opcall *[1]')
  local rc = C.lmx_opcall_new(opname, n, ck, cv, h)
  -- an input given something other than an NDArray (data = 42) reads as an unknown parameter
  if rc ~= 0 then
    local msg = ffi.string(C.lmx_last_error())
    if msg == '' then msg = ffi.string(C.lmx_status_string(rc)) end
    if params then opmod.check_misplaced_inputs('mx.nd.' .. opname, opname, params, 'an NDArray') end
    capi.raise(msg)
  end
  entry = {h = ffi.gc(h[0], C.lmx_opcall_free)}
  entry.inames = io_names(idx, n, ck, cv, 0)
  local _, nvis = io_names(idx, n, ck, cv, 1)
  entry.nvis = nvis
  entry.anames = io_names(idx, n, ck, cv, 2)
  if ncached >= 256 then call_cache, ncached, tries = {}, 0, {} end
  call_cache[key], ncached = entry, ncached + 1
  return entry
end

local function invoke(opname, idx, has_num_args, ...)
  local pos, named, params, extras = split_args(opname, has_num_args, ...)
  local n, ck, cv, keep = kv(params, opname)
  local pc = prepared_for(opname, idx, n, ck, cv, keep, params)
  local nvis = pc.nvis
  local inputs = gather_inputs(opname, pc.inames, pc.anames, pos, named)
  local hin = ffi.new('lmx_ndarray *[?]', #inputs + 1)
  for i, a in ipairs(inputs) do hin[i - 1] = nd.handle(a, 4) end
  local outs = extras.out
  if outs and nd.is_ndarray(outs) then outs = { outs } end
  local hout = ffi.new('lmx_ndarray *[?]', nvis + 1)
  for i = 1, nvis do hout[i - 1] = outs and outs[i] and nd.handle(outs[i], 4) or nil end
  local nout = ffi.new('int[1]', nvis)
  local is_train = extras.is_train
  if is_train == nil then is_train = ag.training end
  check(C.lmx_opcall_invoke(pc.h, #inputs, hin, nout, hout, is_train and 1 or 0), 3)
  if ag.recording and extras.name then check(C.lmx_autograd_set_name(hout[0], extras.name), 3) end
  local res = {}
  for i = 1, nout[0] do
    res[i] = (outs and outs[i]) or nd.wrap(hout[i - 1])
  end
  if #res == 1 then return res[1] end
  return res
end

-- ------------------------------------------------------------------ fast path ---------
-- The common call (arrays positionally and/or by input name, scalar parameters, `out`,
-- `is_train`, `name`) finds its prepared call without building strings or tables: a
-- tree per op walks the keyword table in pairs order, one level per parameter name
-- and one per value (numbers, strings and booleans as themselves, lists by their
-- parameter string), and keeps the prepared call at the end (under the key DONE). Two
-- tables with the same parameters in another order just make two paths to equal calls.
-- The prepared call also keeps the FFI buffers of its arguments, reused unless a call
-- of it is already running (an operator calling back into Lua). Anything else (aux
-- states, ops with num_args, nil or odd arguments, errors) takes the general path
-- above, which gives the error messages; results are identical.
local DONE = {}
local NDArray = nd.NDArray
local SLOW = {} -- returned by the fast path: take the general one

-- The commonest call, loop-free: one or two input arrays (handles ha, hb), one visible
-- output, no `out`, of a prepared entry not already running. LuaJIT stops a trace at a
-- loop inside a called function, so eager code such as W4's chain (a loop of x * 0.9,
-- x + 0.1, tanh(x)) would otherwise leave compiled code at every operator call; this
-- path keeps the caller's loop one trace.
local function run_simple(entry, nin, ha, hb)
  local hin, hout, nout = entry.hin, entry.hout, entry.nout
  hin[0] = ha
  if nin == 2 then hin[1] = hb end
  hout[0] = nil
  nout[0] = 1
  entry.busy = true
  local rc = C.lmx_opcall_invoke(entry.h, nin, hin, nout, hout, ag.training and 1 or 0)
  entry.busy = false
  check(rc)
  return nd.wrap(hout[0])
end

-- Whether the entry takes the simple path (set when it is learnt).
local function simple_ok(entry) return entry.nin <= 2 and entry.nvis == 1 end

-- the params of a keyword table t (no arrays, no extras), or nil when t has odd entries
local function plain_params(t)
  local params = {}
  for k, v in pairs(t) do
    local tv = type(v)
    if type(k) ~= 'string' then return nil end
    if not EXTRA[k] and getmetatable(v) ~= NDArray then
      if not (tv == 'number' or tv == 'string' or tv == 'boolean' or (tv == 'table' and getmetatable(v) == nil)) then
        return nil
      end
      params[k] = v
    end
  end
  return params
end

local function value_key(v)
  local tv = type(v)
  if tv == 'table' then return opmod.to_param_string(v) end
  if v ~= v then return 'nan' end -- NaN cannot index a table
  return v
end

-- Prepares the call for keyword table t (nil: no parameters) and files it in the tree.
local function learn(opname, idx, t)
  local params = {}
  if t then
    params = plain_params(t)
    if not params then return nil end
  end
  local n, ck, cv, keep = kv(params)
  local entry = prepared_for(opname, idx, n, ck, cv, keep, params) -- raises as the general path
  if not entry.hin then
    entry.hin = ffi.new('lmx_ndarray *[?]', #entry.inames + 1)
    entry.hout = ffi.new('lmx_ndarray *[?]', entry.nvis + 1)
    entry.nout = ffi.new('int[1]')
    entry.nin = #entry.inames
    entry.simple = simple_ok(entry)
    entry.busy = false
  end
  local node = tries[opname]
  if not node then node = {}; tries[opname] = node end
  for k, v in pairs(t or params) do
    if not EXTRA[k] and getmetatable(v) ~= NDArray then
      local sub = node[k]
      if not sub then sub = {}; node[k] = sub end
      local vk = value_key(v)
      node = sub[vk]
      if not node then node = {}; sub[vk] = node end
    end
  end
  node[DONE] = entry
  return entry
end

local function fast_invoke(opname, idx, ...)
  local nargs = select('#', ...)
  if nargs <= 2 then -- f(x) or f(x, y) with arrays only: no keyword table to walk
    local a, b = ...
    local node = tries[opname]
    local entry = node and node[DONE]
    if entry and entry.simple and not entry.busy and entry.nin == nargs
        and getmetatable(a) == NDArray and (nargs == 1 or getmetatable(b) == NDArray) then
      local ha, hb = rawget(a, '_h'), nargs == 2 and rawget(b, '_h') or nil
      if ha and (nargs == 1 or hb) then return run_simple(entry, nargs, ha, hb) end
    end
  end
  local t = nargs > 0 and select(nargs, ...) or nil
  local npos = nargs
  local out, is_train, oname, nnamed = nil, nil, nil, 0
  local node = tries[opname]
  if type(t) == 'table' and getmetatable(t) == nil then
    npos = nargs - 1
    for k, v in pairs(t) do
      if type(k) ~= 'string' then return SLOW end
      if EXTRA[k] then
        if k == 'out' then out = v elseif k == 'is_train' then is_train = v
        elseif k == 'name' then oname = v end
      elseif getmetatable(v) == NDArray then
        nnamed = nnamed + 1
      elseif type(v) == 'table' and getmetatable(v) ~= nil then
        return SLOW -- the general path names the bad parameter
      elseif node then
        local sub = node[k]
        node = sub and sub[value_key(v)]
      end
    end
  else
    t = nil
  end
  local entry = node and node[DONE] or learn(opname, idx, t)
  if not entry then return SLOW end
  local inames = entry.inames
  local nin = #inames
  if npos + nnamed ~= nin then return SLOW end -- aux states, missing or extra arrays
  local busy = entry.busy
  local hin = busy and ffi.new('lmx_ndarray *[?]', nin + 1) or entry.hin
  local used = 0
  for i = 1, nin do
    local a = t and t[inames[i]]
    if getmetatable(a) ~= NDArray then
      used = used + 1
      a = select(used, ...)
      if getmetatable(a) ~= NDArray then return SLOW end
    end
    local h = rawget(a, '_h')
    if not h then return SLOW end
    hin[i - 1] = h
  end
  if used ~= npos then return SLOW end
  local nvis = entry.nvis
  local hout = busy and ffi.new('lmx_ndarray *[?]', nvis + 1) or entry.hout
  local single = getmetatable(out) == NDArray
  if out ~= nil and not single and (type(out) ~= 'table' or getmetatable(out) ~= nil) then return SLOW end
  for i = 1, nvis do
    local o = out
    if not single then o = out and out[i] elseif i > 1 then o = nil end
    local h = nil
    if o ~= nil then
      h = getmetatable(o) == NDArray and rawget(o, '_h')
      if not h then return SLOW end
    end
    hout[i - 1] = h
  end
  local nout = busy and ffi.new('int[1]') or entry.nout
  nout[0] = nvis
  if is_train == nil then is_train = ag.training end
  entry.busy = true
  local rc = C.lmx_opcall_invoke(entry.h, nin, hin, nout, hout, is_train and 1 or 0)
  entry.busy = busy
  check(rc)
  if oname and ag.recording then check(C.lmx_autograd_set_name(hout[0], oname)) end
  local k = nout[0]
  if k == 1 then
    if single then return out end
    return out and out[1] or nd.wrap(hout[0])
  end
  local res = {}
  for i = 1, k do
    if single then res[i] = i == 1 and out or nd.wrap(hout[i - 1])
    else res[i] = (out and out[i]) or nd.wrap(hout[i - 1]) end
  end
  if #res == 1 then return res[1] end
  return res
end

local op_index = {} -- op name -> registry index (set by M.make)
local scalar_args = {scalar = 0} -- the keyword table of scalar_call's general path

--- x <op> s for a scalar operator (`_mul_scalar`, `_rminus_scalar`...: parameter
-- `scalar`), as mx.nd.op[opname](x, {scalar = s}) but found in three lookups with no
-- loop (recorded NDArray arithmetic: luamx.autograd). x must be an NDArray, s a number.
function M.scalar_call(opname, x, s)
  local node = tries[opname]
  node = node and node.scalar
  node = node and s == s and node[s]
  local entry = node and node[DONE]
  if entry and entry.simple and not entry.busy and entry.nin == 1 then
    local h = rawget(x, '_h')
    if h then return run_simple(entry, 1, h) end
  end
  local idx = op_index[opname]
  scalar_args.scalar = s
  local r = fast_invoke(opname, idx, x, scalar_args)
  if r ~= SLOW then return r end
  return invoke(opname, idx, false, x, scalar_args)
end

local function has_param(idx, pname)
  local np = ffi.new('int[1]')
  check(C.lmx_op_info(idx, nil, nil, nil, np, nil), 3)
  local name = ffi.new('const char *[1]')
  for j = 0, np[0] - 1 do
    check(C.lmx_op_param_info(idx, j, name, nil, nil, nil, nil), 3)
    if ffi.string(name[0]) == pname then return true end
  end
  return false
end

--- The imperative function of operator `name` (a name or alias).
function M.make(name)
  local idx = ffi.new('int[1]')
  check(C.lmx_op_lookup(name, idx), 2)
  local i = idx[0]
  op_index[name] = i
  local has_num_args = has_param(i, 'num_args')
  if has_num_args then return function(...) return invoke(name, i, true, ...) end end
  return function(...)
    local r = fast_invoke(name, i, ...)
    if r ~= SLOW then return r end
    return invoke(name, i, false, ...)
  end
end

--- Gradient of one call: M.backward(name, params, inputs, outputs, out_grads, opts) ->
-- list of input gradients (nil where opts.reqs[i] == 0). inputs/outputs/out_grads are
-- lists of NDArrays (outputs: every output, hidden ones included, when the op's backward
-- reads them — call with opts.all_outputs on the forward side via M.forward_all);
-- out_grads may be nil (ones; ignored by loss ops). opts: reqs (list of 0/1/3),
-- grads (arrays to write or accumulate into), is_train (default true).
function M.backward(name, params, inputs, outputs, out_grads, opts)
  opts = opts or {}
  local n, ck, cv, keep = kv(params or {})
  local hin = ffi.new('lmx_ndarray *[?]', #inputs + 1)
  for i, a in ipairs(inputs) do hin[i - 1] = nd.handle(a, 3) end
  local hout = ffi.new('lmx_ndarray *[?]', #outputs + 1)
  for i, a in ipairs(outputs) do hout[i - 1] = nd.handle(a, 3) end
  local hog = nil
  if out_grads then
    hog = ffi.new('lmx_ndarray *[?]', #outputs + 1)
    for i = 1, #outputs do hog[i - 1] = out_grads[i] and nd.handle(out_grads[i], 3) or nil end
  end
  local nin = #inputs
  local hg = ffi.new('lmx_ndarray *[?]', nin + 1)
  local reqs = ffi.new('int[?]', nin + 1)
  for i = 1, nin do
    reqs[i - 1] = opts.reqs and opts.reqs[i] or 1
    hg[i - 1] = opts.grads and opts.grads[i] and nd.handle(opts.grads[i], 3) or nil
  end
  local is_train = opts.is_train
  if is_train == nil then is_train = true end
  check(C.lmx_imperative_backward(name, n, ck, cv, nin, hin, #outputs, hout, hog, hg, reqs,
    is_train and 1 or 0), 2)
  local _k = keep
  local res = {}
  for i = 1, nin do
    if opts.grads and opts.grads[i] then res[i] = opts.grads[i]
    elseif hg[i - 1] ~= nil then res[i] = nd.wrap(hg[i - 1]) end
  end
  return res
end

--- Forward returning every output, hidden ones included (for M.backward).
function M.forward_all(name, params, inputs, is_train)
  local n, ck, cv, keep = kv(params or {})
  local hin = ffi.new('lmx_ndarray *[?]', #inputs + 1)
  for i, a in ipairs(inputs) do hin[i - 1] = nd.handle(a, 3) end
  local hout = ffi.new('lmx_ndarray *[?]', 64)
  local nout = ffi.new('int[1]', 64)
  check(C.lmx_imperative_invoke(name, n, ck, cv, #inputs, hin, nout, hout,
    is_train and 1 or 0), 2)
  local _k = keep
  local res = {}
  for i = 1, nout[0] do res[i] = nd.wrap(hout[i - 1]) end
  return res
end

-- ----------------------------------------------------------- prepared calls ---------
-- mx.nd.prepare(name, params) parses the parameters once and returns a callable object:
--   local upd = mx.nd.prepare('sgd_mom_update', {lr = 0.1, momentum = 0.9})
--   upd{weight = w, grad = g, mom = m, out = w}      -- or upd(w, g, m, {out = w})
-- Inputs by the op's input names or positionally (no aux states); `out` (an NDArray or
-- a list) receives the visible outputs. With every output given, a call allocates
-- nothing in the engine and reuses its FFI buffers, so it suits per-step loops.
local OpCall = {}
OpCall.__index = OpCall

--- A reusable call of operator `name` with fixed parameters (see OpCall).
function M.prepare(name, params)
  if type(name) ~= 'string' then capi.raise('mx.nd.prepare: operator name must be a string') end
  if params ~= nil and type(params) ~= 'table' then capi.raise('mx.nd.prepare: params must be a table') end
  local idx = ffi.new('int[1]')
  check(C.lmx_op_lookup(name, idx), 2)
  -- keep anchors the parameter strings ck/cv point into until io_names has read them
  -- (without it a GC step frees them and the engine parses garbage)
  local n, ck, cv, keep = kv(params or {})
  local h = ffi.new('lmx_opcall *[1]')
  check(C.lmx_opcall_new(name, n, ck, cv, h), 2)
  local self = setmetatable({_h = ffi.gc(h[0], C.lmx_opcall_free), name = name, _keep = keep}, OpCall)
  self.inputs = io_names(idx[0], n, ck, cv, 0)
  local _, nvis = io_names(idx[0], n, ck, cv, 1)
  self.nvis = nvis
  self._hin = ffi.new('lmx_ndarray *[?]', #self.inputs + 1)
  self._hout = ffi.new('lmx_ndarray *[?]', nvis + 1)
  self._nout = ffi.new('int[1]')
  return self
end

--- Changes a numeric parameter in place (e.g. a learning rate); no allocation.
function OpCall:set(key, value)
  if type(value) ~= 'number' then capi.raise(('%s: set %s: expected a number'):format(self.name, tostring(key))) end
  check(C.lmx_opcall_set(self._h, key, value))
  return self
end

function OpCall:__call(a, ...)
  local args = a
  if nd.is_ndarray(a) then -- positional arrays, then an optional table of extras
    local pos = {a, ...}
    args = {}
    local last = pos[#pos]
    if type(last) == 'table' and not nd.is_ndarray(last) then
      for k, v in pairs(last) do args[k] = v end
      pos[#pos] = nil
    end
    for i = 1, #self.inputs do
      if pos[i] ~= nil and args[self.inputs[i]] == nil then args[self.inputs[i]] = pos[i] end
    end
  end
  if type(args) ~= 'table' then capi.raise(('%s: expected input arrays'):format(self.name)) end
  local hin = self._hin
  for i, iname in ipairs(self.inputs) do
    local arr = args[iname]
    if arr == nil then capi.raise(("%s: missing input '%s'"):format(self.name, iname)) end
    hin[i - 1] = nd.handle(arr)
  end
  local out = args.out
  local single = nd.is_ndarray(out)
  local hout = self._hout
  for i = 1, self.nvis do
    local o = single and (i == 1 and out or nil) or (out and out[i])
    hout[i - 1] = o and nd.handle(o) or nil
  end
  self._nout[0] = self.nvis
  check(C.lmx_opcall_invoke(self._h, #self.inputs, hin, self._nout, hout, args.is_train and 1 or 0))
  if single then return out end
  local res = {}
  for i = 1, self._nout[0] do res[i] = (out and out[i]) or nd.wrap(hout[i - 1]) end
  if #res == 1 then return res[1] end
  return res
end

--- Installs mx.nd.<Op> for every operator and alias (existing mx.nd names are kept)
-- and mx.nd.op.<Op> for all of them.
function M.install(mx)
  mx.nd.prepare = M.prepare
  local count = ffi.new('int[1]')
  check(C.lmx_op_registry_size(count), 2)
  local names = {}
  local name = ffi.new('const char *[1]')
  for i = 0, count[0] - 1 do
    check(C.lmx_op_get_name(i, name), 2)
    names[#names + 1] = ffi.string(name[0])
  end
  local nalias = ffi.new('int[1]')
  check(C.lmx_op_alias(-1, nalias, nil, nil), 2)
  for i = 0, nalias[0] - 1 do
    check(C.lmx_op_alias(i, nil, name, nil), 2)
    names[#names + 1] = ffi.string(name[0])
  end
  mx.nd.op = mx.nd.op or {}
  for _, nm in ipairs(names) do
    local f = M.make(nm)
    mx.nd.op[nm] = f
    if mx.nd[nm] == nil then mx.nd[nm] = f end
  end
  M.install_fluent(mx)
end

-- MXNet's NDArray fluent methods (python/mxnet/ndarray/ndarray.py): a:sum{axis = 1}
-- is mx.nd.sum(a, {axis = 1}). Only names the registry has are installed, so the list
-- is a filter, not a promise; methods NDArray already defines are kept.
M.FLUENT = {
  'reshape_like', 'zeros_like', 'ones_like', 'broadcast_axes', 'broadcast_to', 'broadcast_like',
  'repeat', 'pad', 'swapaxes', 'split', 'slice_axis', 'slice_like', 'take', 'one_hot', 'pick',
  'sort', 'topk', 'argsort', 'argmax', 'argmax_channel', 'argmin', 'clip', 'abs', 'sign',
  'flatten', 'expand_dims', 'tile', 'transpose', 'flip', 'sum', 'nansum', 'prod', 'nanprod',
  'mean', 'max', 'min', 'norm', 'round', 'rint', 'fix', 'floor', 'ceil', 'trunc', 'sin', 'cos',
  'tan', 'arcsin', 'arccos', 'arctan', 'degrees', 'radians', 'sinh', 'cosh', 'tanh', 'arcsinh',
  'arccosh', 'arctanh', 'exp', 'expm1', 'log', 'log10', 'log2', 'log1p', 'sqrt', 'rsqrt',
  'cbrt', 'rcbrt', 'square', 'reciprocal', 'relu', 'sigmoid', 'softmax', 'log_softmax',
  'softmin', 'squeeze', 'diag', 'dot', 'batch_dot', 'erf', 'gamma', 'gammaln', 'cast',
  'shape_array', 'size_array', 'where', 'Flatten',
}

--- Installs the fluent methods (a:sum(), a:exp(), a:transpose{axes = {1, 0}}, ...) on
-- NDArray for every name of M.FLUENT the registry provides.
function M.install_fluent(mx)
  local NDArray = nd.NDArray
  local installed = {}
  for _, nm in ipairs(M.FLUENT) do
    local f = mx.nd.op[nm]
    if f and rawget(NDArray, nm) == nil then
      NDArray[nm] = function(self, ...) return f(self, ...) end
      installed[#installed + 1] = nm
    end
  end
  M.fluent_installed = installed
  return installed
end

return M
