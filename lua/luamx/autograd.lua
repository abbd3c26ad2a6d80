--- luamx.autograd — imperative differentiation of NDArray code (MXNet's mx.autograd).
--
--   local x = mx.nd.array{1, 2, 3}
--   x:attach_grad()                              -- x.grad: zeros, grad_req 'write'
--   local y = mx.autograd.record(function()      -- recorded, training mode
--     return mx.nd.sum(x * x)
--   end)
--   y:backward()                                 -- x.grad == 2 * x
--
-- Scopes. MXNet's `with autograd.record():` is `mx.autograd.record(fn, ...)`: fn runs
-- with recording (and training, unless train_mode = false is given as record's second
-- argument) and record returns fn's results; the previous state comes back however fn
-- ends. `pause(fn)`, `train_mode(fn)` and `predict_mode(fn)` are the other scopes.
-- Without a function each returns a closure that ends the scope, for code that cannot
-- be wrapped:
--   local stop = mx.autograd.record()   ...   stop()
-- `set_recording(flag)` / `set_training(flag)` set a flag and return the previous one.
--
-- The tape is in the engine (src/exec/autograd.c): every mx.nd.<Op> call (and NDArray
-- arithmetic) made while recording is appended with its parsed parameters and the
-- arrays backward needs, and backward runs the same backward kernels as executors.
-- Dropout and BatchNorm take is_train from the training flag. Each output array keeps
-- its history alive; drop the arrays (or backward without retain_graph) to free it.
-- While recording, `out =` an input or a variable is refused (in-place writes are not
-- recorded); writes made after recording into arrays a graph saved are not detected.
-- Views, copies, dot and row reads (a[i]) are recorded as operators while recording.
-- Backward replays each call in the training mode it was recorded in (MXNet's backward
-- takes a train_mode argument instead).
local ffi = require 'ffi'
local capi = require 'luamx.capi'
local nd = require 'luamx.ndarray'
local C, check, raise = capi.C, capi.check, capi.raise

local M = {}
local state = nd.autograd_state
local NDArray = nd.NDArray
local REQ = {null = 0, write = 1, add = 3}
local REQ_NAME = {[0] = 'null', [1] = 'write', [3] = 'add'}

local function set_state(rec, train)
  state.recording, state.training = rec, train
  check(C.lmx_autograd_set_state(rec and 1 or 0, train and 1 or 0, nil, nil), 3)
end

--- Turns recording on or off. @return the previous value
function M.set_recording(flag)
  local prev = state.recording
  set_state(not not flag, state.training)
  return prev
end

--- Turns training mode (Dropout, BatchNorm) on or off. @return the previous value
function M.set_training(flag)
  local prev = state.training
  set_state(state.recording, not not flag)
  return prev
end

--- True while recording.
function M.is_recording() return state.recording end

--- True in training mode (inside record unless train_mode = false, or train_mode).
function M.is_training() return state.training end

-- Runs fn with the given flags (nil keeps one) and restores the previous ones, also when
-- fn raises; without fn, sets them and returns the closure that restores them.
local function scope(what, rec, train, fn, ...)
  local prev_rec, prev_train = state.recording, state.training
  if rec == nil then rec = prev_rec end
  if train == nil then train = prev_train end
  if fn ~= nil and type(fn) ~= 'function' then
    raise(('mx.autograd.%s: expected a function (or nothing), got %s'):format(what, type(fn)), 3)
  end
  set_state(rec, train)
  if fn == nil then
    local done = false
    return function()
      if not done then done = true; set_state(prev_rec, prev_train) end
    end
  end
  local function finish(ok, ...)
    set_state(prev_rec, prev_train)
    if not ok then error((...), 0) end
    return ...
  end
  return finish(pcall(fn, ...))
end

--- Runs fn(...) recording (MXNet's `with autograd.record(train_mode)`) and returns its
-- results. train_mode (default true) sets training mode for the scope. Without fn:
-- starts recording and returns a function that ends the scope.
function M.record(fn, train_mode)
  if type(fn) == 'boolean' then fn, train_mode = nil, fn end
  if train_mode == nil then train_mode = true end
  return scope('record', true, train_mode, fn)
end

--- Runs fn(...) without recording (training mode: train_mode, default false); without
-- fn, pauses and returns the function that resumes.
function M.pause(fn, train_mode)
  if type(fn) == 'boolean' then fn, train_mode = nil, fn end
  return scope('pause', false, not not train_mode, fn)
end

--- Runs fn(...) in training mode (recording unchanged); without fn, returns the closure
-- that ends it.
function M.train_mode(fn, ...) return scope('train_mode', nil, true, fn, ...) end

--- Runs fn(...) in prediction mode (recording unchanged); without fn, returns the
-- closure that ends it.
function M.predict_mode(fn, ...) return scope('predict_mode', nil, false, fn, ...) end

-- --------------------------------------------------------------- NDArray side ---------
--- Gives the array a gradient buffer (x.grad, zeros) and makes it a variable of later
-- recordings. grad_req: 'write' (default: backward overwrites x.grad), 'add'
-- (backward accumulates; zero x.grad yourself) or 'null' (no gradient).
function NDArray:attach_grad(grad_req)
  grad_req = grad_req or 'write'
  local code = REQ[grad_req]
  if not code then
    raise(("attach_grad: grad_req: expected 'write', 'add' or 'null', got %s"):format(
      tostring(grad_req)), 2)
  end
  check(C.lmx_autograd_mark(nd.handle(self, 2), code, nil), 2)
  return self
end

local gh, greq = ffi.new('lmx_ndarray *[1]'), ffi.new('int[1]')
-- x.grad: the gradient array of a variable (nil before attach_grad)
function nd.props.grad(a)
  check(C.lmx_autograd_get_grad(nd.handle(a, 3), gh, greq), 3)
  if gh[0] == nil then return nil end
  return nd.wrap(gh[0])
end

-- x.grad_req: 'write', 'add', 'null', or nil for an array without attach_grad
function nd.props.grad_req(a)
  check(C.lmx_autograd_get_grad(nd.handle(a, 3), gh, greq), 3)
  if gh[0] ~= nil then C.lmx_ndarray_free(gh[0]) end
  return REQ_NAME[greq[0]]
end

--- A new array sharing this one's data without its recorded history.
function NDArray:detach()
  local out = ffi.new('lmx_ndarray *[1]')
  check(C.lmx_autograd_detach(nd.handle(self, 2), out), 2)
  return nd.wrap(out[0])
end

local function handles(list, what, level)
  local n = #list
  local h = ffi.new('lmx_ndarray *[?]', n + 1)
  for i = 1, n do
    if not nd.is_ndarray(list[i]) then
      raise(('%s[%d]: expected an NDArray, got %s'):format(what, i, type(list[i])), level + 1)
    end
    h[i - 1] = nd.handle(list[i], level + 1)
  end
  return h, n
end

local function as_list(x)
  if x == nil then return nil end
  if nd.is_ndarray(x) then return {x} end
  return x
end

-- the Lua error of a Function's backward, re-raised after the engine call
local fn_error

-- The engine call itself: kept out of JIT traces, since it may call back into Lua
-- (mx.autograd.Function) and LuaJIT forbids callbacks from compiled FFI calls.
local function engine_backward(nh, hh, hg, nvar, hv, out, retain, level)
  fn_error = nil
  local rc = C.lmx_autograd_backward(nh, hh, hg, nvar, hv, out, retain and 1 or 0, 1)
  if rc ~= 0 and fn_error then
    local e = fn_error
    fn_error = nil
    raise('backward: mx.autograd.Function: ' .. tostring(e), level + 1)
  end
  check(rc, level + 1)
end
jit.off(engine_backward)

--- Backward from heads (an NDArray or a list) with head_grads (same shapes; nil: ones),
-- writing each variable's x.grad per its grad_req. retain_graph keeps the recorded
-- graph for another backward.
function M.backward(heads, head_grads, retain_graph)
  heads, head_grads = as_list(heads), as_list(head_grads)
  if type(heads) ~= 'table' or #heads == 0 then
    raise('mx.autograd.backward: heads: expected an NDArray or a list of them', 2)
  end
  local hh, nh = handles(heads, 'mx.autograd.backward: heads', 2)
  local hg = nil
  if head_grads then
    hg = ffi.new('lmx_ndarray *[?]', nh + 1)
    for i = 1, nh do
      local g = head_grads[i]
      if g ~= nil and not nd.is_ndarray(g) then
        raise(('mx.autograd.backward: head_grads[%d]: expected an NDArray, got %s'):format(
          i, type(g)), 2)
      end
      hg[i - 1] = g and nd.handle(g, 2) or nil
    end
  end
  engine_backward(nh, hh, hg, 0, nil, nil, retain_graph, 2)
end

--- y:backward([head_grad [, retain_graph]]): gradients of y into the variables' x.grad.
function NDArray:backward(head_grad, retain_graph)
  if type(head_grad) == 'boolean' then head_grad, retain_graph = nil, head_grad end
  M.backward({self}, head_grad and {head_grad} or nil, retain_graph)
end

--- Gradients of heads with respect to variables (lists or single NDArrays), returned
-- as a list (or one NDArray for one variable); x.grad is left alone. create_graph
-- (higher-order gradients) is not supported.
function M.grad(heads, variables, head_grads, retain_graph, create_graph)
  if create_graph then
    raise('mx.autograd.grad: create_graph = true (higher-order gradients) is not supported; '
      .. 'expected create_graph = false', 2)
  end
  local single = nd.is_ndarray(variables)
  heads, variables, head_grads = as_list(heads), as_list(variables), as_list(head_grads)
  if type(variables) ~= 'table' or #variables == 0 then
    raise('mx.autograd.grad: variables: expected an NDArray or a list of them', 2)
  end
  local hh, nh = handles(heads or {}, 'mx.autograd.grad: heads', 2)
  local hv, nv = handles(variables, 'mx.autograd.grad: variables', 2)
  local hg = nil
  if head_grads then hg = handles(head_grads, 'mx.autograd.grad: head_grads', 2) end
  local out = ffi.new('lmx_ndarray *[?]', nv + 1)
  engine_backward(nh, hh, hg, nv, hv, out, retain_graph, 2)
  local res = {}
  for i = 1, nv do res[i] = nd.wrap(out[i - 1]) end
  if single then return res[1] end
  return res
end

--- Marks variables with gradient arrays (MXNet's mark_variables): variables[i] gets
-- gradients[i] as its x.grad, with grad_reqs (a string or a list; default 'write').
function M.mark_variables(variables, gradients, grad_reqs)
  local chk = require 'luamx.check'
  for _, p in ipairs {{'variables', variables}, {'gradients', gradients}} do
    local t = p[2]
    if not (nd.is_ndarray(t) or (type(t) == 'table' and getmetatable(t) == nil)) then
      chk.fail('mx.autograd.mark_variables', p[1], 'an NDArray or a list of them', t)
    end
  end
  variables, gradients = as_list(variables) or {}, as_list(gradients) or {}
  if #gradients ~= #variables then
    raise(('mx.autograd.mark_variables: gradients: expected %d arrays (one per variable), '
      .. 'got %d'):format(#variables, #gradients), 2)
  end
  for i, v in ipairs(variables) do
    local req = type(grad_reqs) == 'table' and grad_reqs[i] or grad_reqs or 'write'
    local code = REQ[req]
    if not code then raise(('mx.autograd.mark_variables: grad_reqs[%d]: expected \'write\', '
      .. '\'add\' or \'null\', got %s'):format(i, tostring(req)), 2) end
    if not nd.is_ndarray(gradients[i]) then
      raise(('mx.autograd.mark_variables: gradients[%d]: expected an NDArray, got %s'):format(
        i, type(gradients[i])), 2)
    end
    check(C.lmx_autograd_mark(nd.handle(v, 2), code, nd.handle(gradients[i], 2)), 2)
  end
end

-- ------------------------------------------------------------------ arithmetic ---------
-- While recording, NDArray arithmetic goes through registered operators so that it is
-- recorded like any mx.nd call.
local ARR = {add = 'broadcast_add', sub = 'broadcast_sub', mul = 'broadcast_mul',
  div = 'broadcast_div', pow = 'broadcast_power', max = 'broadcast_maximum',
  min = 'broadcast_minimum'}
local SCAL = {add = '_plus_scalar', sub = '_minus_scalar', mul = '_mul_scalar',
  div = '_div_scalar', pow = '_power_scalar', max = '_maximum_scalar', min = '_minimum_scalar'}
local RSCAL = {add = '_plus_scalar', sub = '_rminus_scalar', mul = '_mul_scalar',
  div = '_rdiv_scalar', pow = '_rpower_scalar', max = '_maximum_scalar', min = '_minimum_scalar'}
local BIN_NAME = {}
for k, v in pairs(nd.BIN) do BIN_NAME[tonumber(v)] = k end

local ops -- mx.nd.op, set by install

local scalar_call = require('luamx.ndarray_ops').scalar_call
-- per nd.BIN code: the operator names (array op array, array op number, number op array)
local ARR_OP, SCAL_OP, RSCAL_OP = {}, {}, {}
for code, name in pairs(BIN_NAME) do
  ARR_OP[code], SCAL_OP[code], RSCAL_OP[code] = ARR[name], SCAL[name], RSCAL[name]
end

--- Recorded arithmetic: op (an nd.BIN code) on arrays / numbers as operators.
state.arith = function(op, x, y, level)
  local xa, ya = nd.is_ndarray(x), nd.is_ndarray(y)
  if xa and ya then return ops[ARR_OP[op]](x, y) end
  if xa and type(y) == 'number' then return scalar_call(SCAL_OP[op], x, y) end
  if ya and type(x) == 'number' then return scalar_call(RSCAL_OP[op], y, x) end
  raise(('arithmetic on an NDArray and a %s (expected an NDArray or a number)'):format(
    type(xa and y or x)), level + 1)
end

-- --------------------------------------------------------------- get_symbol ------------
--- The recorded graph behind y (an NDArray or a list) as a Symbol that binds and saves
-- as MXNet JSON. names (optional) maps variable names to arrays ({data = x, fc1_weight
-- = w}); other inputs are named var0, var1, ...; operator nodes take the `name` given
-- to their mx.nd call, else MXNet's automatic names.
function M.get_symbol(y, names)
  local heads = as_list(y)
  if type(heads) ~= 'table' or #heads == 0 then
    raise('mx.autograd.get_symbol: expected an NDArray or a list of them', 2)
  end
  for nm, a in pairs(names or {}) do
    if not nd.is_ndarray(a) then
      raise(('mx.autograd.get_symbol: names.%s: expected an NDArray, got %s'):format(
        tostring(nm), type(a)), 2)
    end
    check(C.lmx_autograd_set_name(nd.handle(a, 2), tostring(nm)), 2)
  end
  local hh, nh = handles(heads, 'mx.autograd.get_symbol: heads', 2)
  local gp = ffi.new('lmx_ag_graph *[1]')
  check(C.lmx_autograd_export(nh, hh, gp), 2)
  local g = ffi.gc(gp[0], C.lmx_autograd_graph_free)
  local mx = M._mx
  local nn, nhd = ffi.new('int[1]'), ffi.new('int[1]')
  local hn, hi = ffi.new('const int *[1]'), ffi.new('const int *[1]')
  check(C.lmx_autograd_graph_size(g, nn, nhd, hn, hi), 2)
  local op, name = ffi.new('const char *[1]'), ffi.new('const char *[1]')
  local nk, ks, vs = ffi.new('int[1]'), ffi.new('const char *const *[1]'), ffi.new('const char *const *[1]')
  local ni, inn, ini = ffi.new('int[1]'), ffi.new('const int *[1]'), ffi.new('const int *[1]')
  local syms, leaf_name = {}, {}
  local function output(node, idx)
    local s = syms[node + 1]
    if s:num_outputs() == 1 then return s end
    return s[idx + 1]
  end
  for i = 0, nn[0] - 1 do
    check(C.lmx_autograd_graph_node(g, i, op, name, nk, ks, vs, ni, inn, ini), 2)
    local nm = name[0] ~= nil and ffi.string(name[0]) or nil
    if op[0] == nil then
      syms[i + 1], leaf_name[i + 1] = mx.sym.Variable(nm), nm
    else
      local opname, kw, params = ffi.string(op[0]), {name = nm}, {}
      for j = 0, nk[0] - 1 do params[ffi.string(ks[0][j])] = ffi.string(vs[0][j]) end
      for k, v in pairs(params) do kw[k] = v end
      -- a variable named <node>_<input> is left to the constructor, which creates it as
      -- MXNet does (with the node's attributes), so the JSON matches a direct build
      local inames = nm and mx.op.info(opname, params).inputs or {}
      for j = 0, ni[0] - 1 do
        local src = inn[0][j]
        if not (nm and inames[j + 1] and leaf_name[src + 1] == nm .. '_' .. inames[j + 1]) then
          kw[inames[j + 1] or j + 1] = output(src, ini[0][j])
        end
      end
      syms[i + 1] = mx.sym[opname](kw)
    end
  end
  local outs = {}
  for h = 0, nhd[0] - 1 do outs[h + 1] = output(hn[0][h], hi[0][h]) end
  if #outs == 1 then return outs[1] end
  return mx.sym.Group(outs)
end

--- What produced an array: 'variable' (attach_grad), 'input' (an unmarked input of a
-- recorded call), 'function', the operator's name, or nil when not recorded.
function M.entry(a)
  local kind, opn = ffi.new('int[1]'), ffi.new('const char *[1]')
  check(C.lmx_autograd_info(nd.handle(a, 2), kind, opn), 2)
  local k = kind[0]
  if k == 0 then return ffi.string(opn[0]) end
  return ({[1] = 'variable', [2] = 'input', [3] = 'function'})[k]
end

-- NDArray functions that do not go through the operator registry (views, copies, the
-- direct dot) call these while recording (luamx.ndarray checks the flag), so they are
-- recorded as the equivalent operators and differentiable.
local function route()
  state.dot = function(a, b) return ops.dot(a, b) end
  state.reshape = function(a, shape) return ops.Reshape(a, {shape = shape}) end
  state.rows = function(a, first, last) -- rows first..last (resolved, 1-based)
    return ops.slice_axis(a, {axis = 0, begin = first - 1, ['end'] = last})
  end
  state.astype = function(a, dtype) return ops.Cast(a, {dtype = dtype}) end
  state.copy = function(a) return ops._copy(a) end
  -- a[i] / a[{first, last}] reads: the rows, and for a[i] the first axis dropped
  state.index = function(a, k)
    state.recording = false -- the view path checks the range and gives the shape
    local ok, view = pcall(function() return a[k] end)
    state.recording = true
    if not ok then error(view, 3) end
    local n = a.shape[1]
    local f, l
    if type(k) == 'number' then f, l = k, k else f, l = k[1], k[2] == nil and n or k[2] end
    if f < 0 then f = n + 1 + f end
    if l < 0 then l = n + 1 + l end
    local rows = state.rows(a, f, l)
    if type(k) == 'number' and #a.shape > 1 then return ops.Reshape(rows, {shape = view.shape}) end
    return rows
  end
end

--- Installs mx.autograd.
function M.install(mx)
  M._mx = mx
  ops = mx.nd.op
  route()
  mx.autograd = M
  require('luamx.autograd_function').install(mx, M, {
    set_error = function(e) fn_error = e end,
  })
end

return M
