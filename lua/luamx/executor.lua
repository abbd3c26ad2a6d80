--- luamx.executor — Symbol:bind / Symbol:simple_bind and the Executor (API.md "Executor").
--
-- An Executor is a Lua table around an lmx_executor handle (ffi.gc at birth). Its arrays
-- (outputs, arg_arrays, grad_arrays, aux_arrays) are NDArrays sharing the executor's
-- storage, fetched once at bind: forward and backward write into them in place, as in
-- MXNet. Dicts (arg_dict, grad_dict, aux_dict, output_dict) are built on first use and
-- raise on duplicate names.
--
-- Monitor callbacks: the Lua function is wrapped in an ffi.cast callback anchored in
-- the executor's table and freed with the executor. LuaJIT cannot enter a callback from
-- C code that a compiled trace called ("bad callback"), so the two functions that call
-- into C while a callback may fire (forward and backward) are kept out of traces with
-- jit.off: a long training loop gets JIT-compiled around them, never through them.
-- Errors raised by the callback are caught (an error must not unwind through C frames)
-- and re-raised once the C call has returned.
local ffi = require 'ffi'
local capi = require 'luamx.capi'
local context = require 'luamx.context'
local nd = require 'luamx.ndarray'
local C, check, raise = capi.C, capi.check, capi.raise

local M = {}
local Executor = {}
M.Executor = Executor

local REQ = {null = tonumber(C.LMX_GRAD_NULL), write = tonumber(C.LMX_GRAD_WRITE),
             add = tonumber(C.LMX_GRAD_ADD)}
local ARGS, OUTPUTS, AUX = C.LMX_EXEC_ARGS, C.LMX_EXEC_OUTPUTS, C.LMX_EXEC_AUX

local sym_mod -- luamx.symbol, set by install

local function handle(exe)
  local h = rawget(exe, '_h')
  if not h then raise('Executor has been freed') end
  return h
end

-- ------------------------------------------------------------------ C calls --------
-- Only these two call into C while a monitor callback may run: keep them interpreted.
-- holder.busy counts the runs in progress: a callback (monitor, custom operator) may not
-- free the executor or replace its monitor callback under a running step (the engine and
-- the FFI callback would be used after they are freed).
local function c_forward(holder, h, is_train)
  holder.busy = (holder.busy or 0) + 1
  local rc = C.lmx_executor_forward(h, is_train)
  holder.busy = holder.busy - 1
  return rc
end
local function c_backward(holder, h, arr, n, is_train)
  holder.busy = (holder.busy or 0) + 1
  local rc = C.lmx_executor_backward(h, arr, n, is_train)
  holder.busy = holder.busy - 1
  return rc
end

local function not_running(exe, what)
  if (exe._holder.busy or 0) > 0 then
    raise(('Executor:%s: cannot %s while its forward or backward is running (called from a '
      .. 'monitor callback or a custom operator); call it after forward/backward returns')
      :format(what, what == 'free' and 'free the executor' or 'replace the monitor callback'))
  end
end
jit.off(c_forward)
jit.off(c_backward)

-- ------------------------------------------------------------------ wrapping --------
local out_nd = ffi.new('lmx_ndarray *[1]')
local out_req = ffi.new('int[1]')
local out_str = ffi.new('const char *[1]')
local out_n = ffi.new('int[1]')

local function list_of(h, what)
  check(C.lmx_executor_count(h, what, out_n), 3)
  local names, arrays = {}, {}
  for i = 0, out_n[0] - 1 do
    check(C.lmx_executor_name(h, what, i, out_str), 3)
    names[i + 1] = ffi.string(out_str[0])
    check(C.lmx_executor_array(h, what, i, out_nd), 3)
    arrays[i + 1] = nd.wrap(out_nd[0])
  end
  return names, arrays
end

local function wrap(h, sym, ctx)
  local holder = {}
  h = ffi.gc(h, function(p)
    C.lmx_executor_free(p)
    if holder.cb then holder.cb:free() end
  end)
  local exe = {_h = h, _holder = holder, symbol = sym, ctx = ctx}
  exe._arg_names, exe.arg_arrays = list_of(h, ARGS)
  exe._out_names, exe.outputs = list_of(h, OUTPUTS)
  exe._aux_names, exe.aux_arrays = list_of(h, AUX)
  exe.grad_arrays, exe._grad_req = {}, {}
  exe._arg_index = {}
  for i, name in ipairs(exe._arg_names) do
    check(C.lmx_executor_grad(h, i - 1, out_nd, out_req), 2)
    if out_nd[0] ~= nil then exe.grad_arrays[i] = nd.wrap(out_nd[0]) end
    exe._grad_req[i] = tonumber(out_req[0])
    if not exe._arg_index[name] then exe._arg_index[name] = i end
  end
  return setmetatable(exe, Executor)
end

--- Wraps an lmx_executor handle (one reference, taken over) as an Executor.
M.wrap = wrap

--- grad_req names -> the engine's codes (shared with the executor group).
M.REQ = REQ

-- -------------------------------------------------------------- bind arguments -----
local function names_text(names) return table.concat(names, ', ') end

local function ctx_of(ctx)
  ctx = context.resolve(ctx, 3)
  return ctx, ctx.dev_code, ctx.device_id
end

local function is_list(t) return #t > 0 or next(t) == nil end

--- Arrays per name from a list (list order) or a name table; `required` raises for
-- missing names; unknown names always raise.
local function per_name(value, names, what, required)
  local out = {}
  if value == nil then
    if required and #names > 0 then raise(("bind: key '%s' is missing in '%s'"):format(names[1], what)) end
    return out
  end
  if type(value) ~= 'table' then raise(("bind: '%s' must be a list or a table of NDArrays"):format(what)) end
  if is_list(value) then -- nil holes are allowed (no gradient for that argument)
    local n = table.maxn(value)
    if n > #names or (required and n ~= #names) then
      raise(("bind: '%s' has %d arrays but the symbol has %d (%s)"):format(what, n, #names, names_text(names)))
    end
    for i = 1, #names do out[i] = value[i] end
  else
    local known = {}
    for i, name in ipairs(names) do known[name] = true; out[i] = value[name] end
    for k in pairs(value) do
      if not known[k] then
        raise(("bind: unknown name '%s' in '%s' (expected one of: %s)"):format(tostring(k), what, names_text(names)))
      end
    end
  end
  for i, name in ipairs(names) do
    local a = out[i]
    if a == nil and required then raise(("bind: key '%s' is missing in '%s'"):format(name, what)) end
    if a ~= nil and not nd.is_ndarray(a) then
      raise(("bind: '%s' of '%s' must be an NDArray, got %s"):format(name, what, type(a)))
    end
  end
  return out
end

local function req_code(r, name)
  local c = REQ[r]
  if not c then
    raise(("bind: grad_req%s must be 'write', 'add' or 'null', got %s"):format(
      name and (" of '" .. name .. "'") or '', tostring(r)))
  end
  return c
end

--- Request per argument: a string for all, a list (one per argument), or a name table
-- (names missing from it get null).
local function reqs_of(grad_req, names)
  local out = {}
  if grad_req == nil then grad_req = 'write' end
  if type(grad_req) == 'string' then
    local c = req_code(grad_req)
    for i = 1, #names do out[i] = c end
  elseif type(grad_req) == 'table' and is_list(grad_req) then
    if #grad_req ~= #names then
      raise(('bind: grad_req has %d entries but the symbol has %d arguments (%s)'):format(#grad_req, #names, names_text(names)))
    end
    for i = 1, #names do out[i] = req_code(grad_req[i], names[i]) end
  elseif type(grad_req) == 'table' then
    local known = {}
    for i, name in ipairs(names) do known[name] = true; out[i] = REQ.null end
    for k, v in pairs(grad_req) do
      if not known[k] then raise(("bind: unknown argument '%s' in 'grad_req' (arguments: %s)"):format(tostring(k), names_text(names))) end
    end
    for i, name in ipairs(names) do if grad_req[name] then out[i] = req_code(grad_req[name], name) end end
  else
    raise('bind: grad_req must be a string, a list or a table, got ' .. type(grad_req))
  end
  return out
end

local function new_binder(sym, ctx)
  local _, code, id = ctx_of(ctx)
  local out = ffi.new('lmx_binder *[1]')
  check(C.lmx_binder_new(sym_mod.handle(sym, 3), code, id, out), 3)
  return ffi.gc(out[0], C.lmx_binder_free)
end

local function common(b, opts)
  if opts.group2ctx then
    for group, c in pairs(opts.group2ctx) do
      local _, code, id = ctx_of(c)
      check(C.lmx_binder_set_group(b, tostring(group), code, id), 3)
    end
  end
  if opts.shared_exec then check(C.lmx_binder_set_shared(b, handle(opts.shared_exec)), 3) end
  -- luamx extension: no_share = true plans every intermediate in its own buffer (the
  -- same as LUAMX_EXEC_NO_SHARE=1), to bisect memory-planner bugs.
  if opts.no_share then check(C.lmx_binder_set_option(b, C.LMX_BIND_NO_SHARE, 1), 3) end
end

local function finish(b, fn, sym, ctx)
  local out = ffi.new('lmx_executor *[1]')
  check(fn(b, out), 3)
  ffi.gc(b, nil)
  C.lmx_binder_free(b)
  return wrap(out[0], sym, context.resolve(ctx))
end

--- s:bind{ctx=, args=, args_grad=, grad_req=, aux_states=, group2ctx=, shared_exec=}
function M.bind(sym, opts)
  opts = opts or {}
  local arg_names, aux_names = sym:list_arguments(), sym:list_auxiliary_states()
  local args = per_name(opts.args, arg_names, 'args', true)
  local grads = per_name(opts.args_grad, arg_names, 'args_grad', false)
  local aux = per_name(opts.aux_states, aux_names, 'aux_states', true)
  local reqs = reqs_of(opts.grad_req, arg_names)
  local b = new_binder(sym, opts.ctx)
  for i = 1, #arg_names do
    local g = grads[i] and nd.handle(grads[i]) or nil
    check(C.lmx_binder_set_arg(b, nil, i - 1, nd.handle(args[i]), g, reqs[i]), 2)
  end
  for i = 1, #aux_names do check(C.lmx_binder_set_aux(b, nil, i - 1, nd.handle(aux[i])), 2) end
  common(b, opts)
  return finish(b, C.lmx_binder_bind, sym, opts.ctx)
end

local reserved = {ctx = true, grad_req = true, type_dict = true, group2ctx = true,
                  shared_exec = true, stype_dict = true, no_share = true}

--- s:simple_bind{ctx=, grad_req=, type_dict=, group2ctx=, shared_exec=, <arg> = shape}
function M.simple_bind(sym, opts)
  opts = opts or {}
  local arg_names = sym:list_arguments()
  local reqs = reqs_of(opts.grad_req, arg_names)
  local b = new_binder(sym, opts.ctx)
  for i = 1, #arg_names do check(C.lmx_binder_set_grad_req(b, nil, i - 1, reqs[i]), 2) end
  for k, v in pairs(opts) do
    if not reserved[k] then
      if type(k) ~= 'string' then raise('simple_bind: shapes are given by argument name') end
      local dims, n = nd.shape_arg(v, 2, 'simple_bind: ' .. k)
      check(C.lmx_binder_set_shape(b, k, dims, n), 2)
    end
  end
  for k, v in pairs(opts.type_dict or {}) do
    check(C.lmx_binder_set_dtype(b, k, nd.dtype_code(v, 2)), 2)
  end
  common(b, opts)
  return finish(b, C.lmx_binder_simple_bind, sym, opts.ctx)
end

-- ------------------------------------------------------------------ running --------
local function copy_in(exe, name, v)
  local i = exe._arg_index[name]
  if not i then raise('forward: Unknown argument ' .. tostring(name)) end
  local dst = exe.arg_arrays[i]
  if nd.is_ndarray(v) then
    local a, b = v.shape, dst.shape
    if table.concat(a, ',') ~= table.concat(b, ',') then
      raise(('forward: Shape not match! Argument %s, need (%s), received (%s)'):format(
        name, table.concat(b, ', '), table.concat(a, ', ')))
    end
    v:copyto(dst)
  else
    dst:set(v)
  end
end

local function raise_pending(exe)
  local err = exe._holder.err
  if err then
    exe._holder.err = nil
    raise('monitor callback: ' .. tostring(err))
  end
end

--- exe:forward{is_train = false, <arg> = NDArray, ...} -> exe.outputs; also
--- exe:forward(is_train, {<arg> = NDArray}) as MXNet's exe.forward(is_train, data=x).
function Executor:forward(opts, inputs)
  local h = handle(self)
  if opts ~= nil and type(opts) ~= 'boolean' and (type(opts) ~= 'table' or getmetatable(opts) ~= nil) then
    require('luamx.check').fail('forward', 'the first argument', 'is_train (a boolean) or a table {is_train =, name = NDArray}', opts)
  end
  local is_train = false
  if type(opts) == 'boolean' or (opts == nil and inputs ~= nil) then
    -- the Python habit exe.forward(is_train, data=x): forward(false, {data = x})
    is_train = opts or false
    if inputs ~= nil then
      if type(inputs) ~= 'table' or getmetatable(inputs) ~= nil then
        raise('forward: the second argument must be a table of inputs {name = NDArray}, got '
          .. (type(inputs) == 'table' and 'an object' or type(inputs)))
      end
      for k, v in pairs(inputs) do
        if k == 'is_train' then raise('forward: is_train given twice (as the first argument and in the inputs)') end
        copy_in(self, k, v)
      end
    end
  elseif inputs ~= nil then
    raise('forward: takes forward{is_train =, name = array} or forward(is_train, {name = array}), '
      .. 'got a table and a second argument')
  elseif opts ~= nil then
    for k, v in pairs(opts) do
      if k == 'is_train' then is_train = v and true or false else copy_in(self, k, v) end
    end
  end
  local rc = c_forward(self._holder, h, is_train and 1 or 0)
  raise_pending(self)
  check(rc, 2)
  return self.outputs
end

local function out_grad_list(exe, out_grads)
  if out_grads == nil then return {}, 0 end
  if nd.is_ndarray(out_grads) then return {out_grads}, 1 end
  if type(out_grads) ~= 'table' then
    raise('backward: out_grads must be nil, an NDArray, a list or a table, got ' .. type(out_grads))
  end
  local list, n = {}, 0
  local by_name = {}
  for i, name in ipairs(exe._out_names) do by_name[name] = i end
  for k, v in pairs(out_grads) do
    local i = type(k) == 'number' and k or by_name[k]
    if not i then
      raise(("backward: unknown output '%s' in out_grads (outputs: %s)"):format(tostring(k), names_text(exe._out_names)))
    end
    if not nd.is_ndarray(v) then raise(('backward: out_grads[%s] must be an NDArray'):format(tostring(k))) end
    list[i] = v
    if i > n then n = i end
  end
  return list, n
end

--- exe:backward([out_grads [, is_train]])
function Executor:backward(out_grads, is_train)
  local h = handle(self)
  local list, n = out_grad_list(self, out_grads)
  local arr = ffi.new('lmx_ndarray *[?]', math.max(n, 1))
  for i = 1, n do arr[i - 1] = list[i] and nd.handle(list[i]) or nil end
  if is_train == nil then is_train = true end
  local rc = c_backward(self._holder, h, arr, n, is_train and 1 or 0)
  raise_pending(self)
  check(rc, 2)
end

--- exe:copy_params_from(arg_params [, aux_params [, allow_extra_params]])
function Executor:copy_params_from(arg_params, aux_params, allow_extra)
  local h = handle(self)
  require('luamx.check').type('copy_params_from', 'arg_params', arg_params, 'table', true)
  require('luamx.check').type('copy_params_from', 'aux_params', aux_params, 'table', true)
  local sets = {arg_params or {}, aux_params or {}}
  for aux = 0, 1 do -- (pairs over {[0]=..., [1]=...} paired them wrongly once JIT-compiled)
    local params = sets[aux + 1]
    local names, arrays = {}, {}
    for k, v in pairs(params) do
      if not nd.is_ndarray(v) then raise(("copy_params_from: '%s' must be an NDArray"):format(tostring(k))) end
      names[#names + 1] = tostring(k)
      arrays[#arrays + 1] = v
    end
    local n = #names
    local cn = ffi.new('const char *[?]', math.max(n, 1))
    local ca = ffi.new('lmx_ndarray *[?]', math.max(n, 1))
    for i = 1, n do cn[i - 1] = names[i]; ca[i - 1] = nd.handle(arrays[i]) end
    check(C.lmx_executor_copy_params(h, cn, ca, n, aux, allow_extra and 1 or 0), 2)
  end
end

--- exe:reshape{partial_shaping = false, allow_up_sizing = false, <arg> = shape, ...}
function Executor:reshape(opts)
  local h = handle(self)
  opts = opts or {}
  local names, shapes = {}, {}
  for k, v in pairs(opts) do
    if k ~= 'partial_shaping' and k ~= 'allow_up_sizing' then
      names[#names + 1] = k
      shapes[#shapes + 1] = v
    end
  end
  local n, total = #names, 0
  for i = 1, n do
    total = total + nd.check_dims(shapes[i], ("reshape: shape of '%s'"):format(tostring(names[i])))
  end
  local cn = ffi.new('const char *[?]', math.max(n, 1))
  local nds = ffi.new('int[?]', math.max(n, 1))
  local dims = ffi.new('int64_t[?]', math.max(total, 1))
  local at = 0
  for i = 1, n do
    cn[i - 1] = names[i]
    nds[i - 1] = #shapes[i]
    for _, d in ipairs(shapes[i]) do dims[at] = d; at = at + 1 end
  end
  local out = ffi.new('lmx_executor *[1]')
  check(C.lmx_executor_reshape(h, opts.partial_shaping and 1 or 0, opts.allow_up_sizing and 1 or 0,
                               n, cn, dims, nds, out), 2)
  local exe = wrap(out[0], self.symbol, self.ctx)
  if self._monitor then exe:set_monitor_callback(self._monitor, self._monitor_all) end
  return exe
end

--- exe:set_monitor_callback(function(name, arr) ... end [, monitor_all])
-- The callback may not free the executor or replace its callback (an error names the
-- call); do that after forward/backward returns.
function Executor:set_monitor_callback(fn, monitor_all)
  local h = handle(self)
  not_running(self, 'set_monitor_callback')
  if fn ~= nil and type(fn) ~= 'function' then raise('set_monitor_callback: expected a function') end
  local holder = self._holder
  local cb = nil
  if fn then
    -- A C callback is a GC root until freed. It must not hold `fn` strongly: a monitor
    -- function usually reaches this executor (mx.monitor.Monitor keeps it), which would
    -- make the executor uncollectable. The executor keeps fn alive (self._monitor); the
    -- callback sees it through a weak table, and the handle's finalizer frees the callback.
    local weak = setmetatable({fn = fn}, {__mode = 'v'})
    cb = ffi.cast('lmx_monitor_fn', function(name, arr)
      local f = weak.fn
      if holder.err or not f then return end
      C.lmx_ndarray_retain(arr)
      local ok, err = pcall(f, ffi.string(name), nd.wrap(arr))
      if not ok then holder.err = err end
    end)
  end
  check(C.lmx_executor_set_monitor(h, cb, nil, monitor_all and 1 or 0), 2)
  if holder.cb then holder.cb:free() end
  holder.cb = cb
  self._monitor, self._monitor_all = fn, monitor_all
end

--- Gradient finality (`lmx_executor_grad_final`): for each argument name, the backward
-- step after which its gradient is final (0-based; -1: no step writes it; absent: no
-- gradient), and the number of backward steps.
-- @return table name -> step, number of backward steps
function Executor:grad_final()
  local n = #self._arg_names
  local steps, nb = ffi.new('int[?]', n + 1), ffi.new('int[1]')
  check(C.lmx_executor_grad_final(handle(self), steps, n, nb), 2)
  local t = {}
  for i, name in ipairs(self._arg_names) do
    if steps[i - 1] >= -1 then t[name] = steps[i - 1] end
  end
  return t, nb[0]
end

--- Text dump of the bound graph, as MXNet's `Executor.debug_str()`.
-- @return string
function Executor:debug_str()
  local s = ffi.new('const char *[1]')
  check(C.lmx_executor_debug_str(handle(self), s), 2)
  return ffi.string(s[0])
end

--- Bytes the plan allocates for intermediates, the naive sum, and the pool's bytes.
function Executor:memory()
  local a, b, c = ffi.new('int64_t[1]'), ffi.new('int64_t[1]'), ffi.new('int64_t[1]')
  check(C.lmx_executor_memory(handle(self), a, b, c), 2)
  return tonumber(a[0]), tonumber(b[0]), tonumber(c[0])
end

--- The graph the executor actually runs (after the engine's graph passes) as a Symbol,
-- as MXNet's `Executor.get_optimized_symbol()`.
-- @return a Symbol
function Executor:get_optimized_symbol()
  return sym_mod.new_from(2, C.lmx_executor_optimized_symbol, handle(self))
end

--- Names of the bound arguments, in the order of `arg_arrays` (a fresh copy).
-- @return list of strings
function Executor:list_arguments() return {unpack(self._arg_names)} end
--- Names of the outputs, in the order of `outputs` (a fresh copy).
-- @return list of strings
function Executor:list_outputs() return {unpack(self._out_names)} end
--- Names of the auxiliary states, in the order of `aux_arrays` (a fresh copy).
-- @return list of strings
function Executor:list_auxiliary_states() return {unpack(self._aux_names)} end

--- Frees the executor now (its arrays stay valid: they hold their storage). Refused, with
-- an error, from a callback that runs inside this executor's forward or backward.
function Executor:free()
  local h = rawget(self, '_h')
  if not h then return end
  not_running(self, 'free')
  ffi.gc(h, nil)
  C.lmx_executor_free(h)
  if self._holder.cb then self._holder.cb:free(); self._holder.cb = nil end
  rawset(self, '_h', nil)
end

-- ---------------------------------------------------------------------- dicts ------
local function dict(names, arrays, what)
  local d, seen, dup = {}, {}, {}
  for i, name in ipairs(names) do
    if seen[name] then dup[#dup + 1] = name end
    seen[name] = true
    d[name] = arrays[i]
  end
  if #dup > 0 then
    raise(('Duplicate names detected in %s: %s'):format(what, table.concat(dup, ', ')))
  end
  return d
end

local dicts = {
  arg_dict = function(e) return dict(e._arg_names, e.arg_arrays, 'arguments') end,
  grad_dict = function(e) return dict(e._arg_names, e.grad_arrays, 'arguments') end,
  aux_dict = function(e) return dict(e._aux_names, e.aux_arrays, 'auxiliary states') end,
  output_dict = function(e) return dict(e._out_names, e.outputs, 'outputs') end,
}

Executor.__index = function(e, k)
  local m = Executor[k]
  if m then return m end
  local f = dicts[k]
  if f then
    local d = f(e)
    rawset(e, k, d)
    return d
  end
  return nil
end

-- The lazily built dicts, for the REPL's completion (luamx.repl.complete reads __fields).
Executor.__fields = dicts

Executor.__tostring = function(e)
  if not rawget(e, '_h') then return '<Executor (freed)>' end
  return ('<Executor %s: %d arguments, %d outputs, %d aux states @%s>'):format(
    e.symbol and e.symbol.name or '?', #e._arg_names, #e._out_names, #e._aux_names,
    tostring(e.ctx))
end

-- Custom ops (luamx.operator) call back into Lua from these C calls: keep them out of traces.
jit.off(finish)
jit.off(Executor.reshape)

--- Attaches bind / simple_bind to Symbol and exposes mx.executor.
function M.install(mx)
  sym_mod = mx.sym
  local methods = mx.sym.methods
  methods.bind = function(self, opts) return M.bind(self, opts) end
  methods.simple_bind = function(self, opts) return M.simple_bind(self, opts) end
  mx.executor = M
  mx.Executor = Executor
end

return M
