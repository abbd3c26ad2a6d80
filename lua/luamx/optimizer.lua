--- luamx.optimizer — mx.optimizer: SGD, NAG, Adam, AdaGrad, RMSProp, AdaDelta (and, from
--- luamx.optimizer.more, Ftrl, Signum, Adamax, Nadam, SGLD, FTML, LAMB, DCASGD) and the
--- updater (MXNet 1.9 python/mxnet/optimizer/optimizer.py).
--
--   local opt = mx.optimizer.create('sgd', {learning_rate = 0.1, momentum = 0.9, wd = 1e-4})
--   local updater = mx.optimizer.get_updater(opt)
--   updater(index, grad, weight)          -- keeps one state per index
--
-- Size: just over STYLE.md's ~800 lines; the optimizers of issue 17 already live in
-- luamx.optimizer.more, and what is here is the six base optimizers and the updater with
-- its state files. The updater (get_updater .. set_states) is the next piece to move out.
--
-- Invariants:
-- * update(index, weight, grad, state) first counts the update of `index` (num_update is
--   the largest count over indices, starting at begin_num_update), then asks the
--   lr_scheduler (if any) for the rate at num_update, then multiplies lr and wd by the
--   per-parameter multipliers. Multipliers are looked up by index, then by the name
--   idx2name[index] (a string index is its own name). As MXNet: wd_mult is 0 for every
--   named parameter not ending in '_weight' or '_gamma' unless set; symbol attributes
--   __lr_mult__ / __wd_mult__ (opt:set_attrs_from(sym)) come next, and set_lr_mult /
--   set_wd_mult tables win.
-- * Weights and states are updated in place. The formulas are MXNet's kernels
--   (optimizer_op-inl.h); clip_gradient applies when > 0. SGD, NAG, Adam and RMSProp run
--   the fused operators (mx.nd.sgd_update, ...) when the engine has them and
--   M.use_fused is true, AdaGrad too when wd is 0 (the fused adagrad_update has no weight
--   decay; otherwise MXNet 1.9's dense Python formula in NDArray arithmetic); AdaDelta
--   has no fused operator and uses NDArray arithmetic. A fused operator that fails raises
--   its error prefixed with the optimizer and the parameter; later updates are unaffected
--   (there is no switch to the arithmetic path on failure).
-- * Checks: options are checked at create (numbers in range, NaN refused); every class's
--   update first checks weight, grad and state (NDArrays of the weight's shape and
--   context; no state where the optimizer keeps one is an error).
-- * multi_precision = true (MXNet's option): a float16 or bfloat16 weight gets a float32
--   master copy in its state. SGD and NAG: {weight32}, or {mom, weight32} with momentum,
--   mom float32; the update runs in float32 on the copy (float16: mp_sgd_update,
--   mp_sgd_mom_update, mp_nag_mom_update; bfloat16, which those kernels do not take:
--   the same formulas in float32 NDArray arithmetic) and the weight receives it rounded. Every other optimizer
--   goes through MXNet's generic wrapper (create_state_multi_precision /
--   update_multi_precision): state {weight32, inner states...}, the update on weight32 with
--   the gradient in float32, then the weight rounded. Other dtypes ignore the option.
-- * Updater states serialize as a name -> NDArray table (get_states(), which mx.nd.save
--   writes as is): '<key>/<j>' for the j-th state array of a parameter ('/0' for a
--   single array, '/none' for a stateless one, '/<j>none' for a None entry of a list,
--   as DCASGD's (None, w_prev)), '<key>/count' for its update count,
--   'num_update'; <key> is 'i<index>' for a number index and 's<name>' for a string;
--   'random_state' (mx.random.get_state()), restored by set_states when present, so
--   training resumed from a checkpoint draws the same Dropout masks as a straight run.
--   save_states(path) / set_states(path_or_table) round-trip them.
local capi = require 'luamx.capi'
local nd = require 'luamx.ndarray'
local kwargs = require 'luamx.kwargs'
local check = require 'luamx.check'
local raise = capi.raise

local M = {}
M.use_fused = true
--- MXNet options accepted and ignored (no effect in luamx's dense updates).
M.IGNORED_OPTIONS = {multi_precision = true, lazy_update = true, param_dict = true}

-- ------------------------------------------------------------------ arithmetic -----
local function clip(g, c)
  if c and c > 0 then return nd.minimum(nd.maximum(g, -c), c) end
  return g
end
local function sqrt(x) return x ^ 0.5 end
local function zeros_like(w) return nd.zeros(w.shape, {ctx = w.context, dtype = w.dtype}) end

-- Calls the fused operator `name` if available: inputs by MXNet's names, `out` = weight.
-- The operator is prepared once per distinct set of scalar parameters other than the
-- learning rate and the update count `t` (mx.nd.prepare) and cached; those two, which
-- schedulers, Adam's bias correction and FTML / LAMB change every step, are set in place.
-- So a steady training step parses nothing and allocates nothing in the engine. The
-- NDArray arithmetic is used only when the engine has no such operator or `M.use_fused`
-- is false, decided per call before anything runs; a fused operator that fails raises its
-- error, prefixed with the optimizer and the parameter (an interrupt, Ctrl-C, passes
-- through unchanged).
local prepared, nprepared = {}, 0
local key_parts = {}
local VARYING = {lr = true, t = true} -- set in place on a prepared call

local function prepared_call(name, args)
  local n = 0
  for k, v in pairs(args) do
    if not nd.is_ndarray(v) and k ~= 'out' and not VARYING[k] then n = n + 1; key_parts[n] = k end
  end
  for i = n + 1, #key_parts do key_parts[i] = nil end
  table.sort(key_parts)
  local key = name
  for i = 1, n do key = key .. ';' .. key_parts[i] .. '=' .. tostring(args[key_parts[i]]) end
  local call = prepared[key]
  if not call then
    if nprepared >= 512 then prepared, nprepared = {}, 0 end -- bounded: schedulers make new rates
    local params = {lr = args.lr, t = args.t}
    for i = 1, n do params[key_parts[i]] = args[key_parts[i]] end
    call = nd.prepare(name, params)
    prepared[key], nprepared = {call = call, lr = args.lr, t = args.t}, nprepared + 1
    return call
  end
  for k in pairs(VARYING) do
    local v = args[k]
    if call[k] ~= v then
      call.call:set(k, v)
      call[k] = v
    end
  end
  return call.call
end

--- Forgets the prepared calls (tests swap mx.nd.prepare).
function M.clear_prepared() prepared, nprepared = {}, 0 end

local function param_desc(self, index)
  local n = self.idx2name[index]
  if type(index) == 'string' then return ("parameter '%s'"):format(index) end
  if n then return ("parameter '%s' (index %s)"):format(n, tostring(index)) end
  return 'parameter index ' .. tostring(index)
end

local function fused(self, index, name, args)
  if not M.use_fused or not nd.prepare then return false end
  if rawget(nd, name) == nil then return false end -- no such operator in this engine
  local called, err = pcall(function() prepared_call(name, args)(args) end)
  if not called then
    -- a Ctrl-C (the REPL's interrupt, luamx.repl.interrupt) passes through unchanged
    if type(err) == 'string' and err:find(require('luamx.repl.interrupt').INTERRUPTED, 1, true) then
      error(err, 0)
    end
    local msg = tostring(err):gsub('^[^\n]-:%d+: ', '') -- the position is raise's to give
    raise(('mx.optimizer.%s: update of %s failed in mx.nd.%s: %s'):format(self._name,
      param_desc(self, index), name, msg))
  end
  return true
end

-- The arguments of one update: weight and grad NDArrays of one shape and context, the
-- state's arrays shaped as the weight.
local function check_update(self, index, weight, grad, state)
  local who = 'mx.optimizer.' .. self._name .. ':update'
  if type(index) ~= 'number' and type(index) ~= 'string' then check.fail(who, 'index', 'a number or a string', index) end
  check.ndarray(who, 'weight', weight)
  check.ndarray(who, 'grad', grad)
  local function same(what, a)
    if not nd.is_ndarray(a) then check.fail(who, what, 'an NDArray', a) end
    local ws, as = weight.shape, a.shape
    local ok = #ws == #as
    for i = 1, #ws do ok = ok and ws[i] == as[i] end
    if not ok then
      raise(('%s: %s of %s has shape %s, expected the weight\'s %s'):format(who, what, param_desc(self, index),
        check.shape_str(a.shape), check.shape_str(weight.shape)))
    end
    if a.context ~= weight.context then
      raise(('%s: %s of %s is on %s, expected the weight\'s context %s'):format(who, what, param_desc(self, index),
        tostring(a.context), tostring(weight.context)))
    end
  end
  same('grad', grad)
  if nd.is_ndarray(state) then same('state', state)
  elseif type(state) == 'table' and getmetatable(state) == nil then
    for i, s in ipairs(state) do
      if s ~= false then same(('state[%d]'):format(i), s) end -- false: MXNet's None entry
    end
  elseif state ~= nil then
    check.fail(who, 'state', 'nil, an NDArray or a list of NDArrays', state)
  elseif self:create_state_multi_precision(index, weight) ~= nil then
    raise(('%s: state of %s must be the optimizer\'s state (create_state\'s result), got nil')
      :format(who, param_desc(self, index)))
  end
end
M._check_update = check_update

-- ------------------------------------------------------------------ base class -----
local Optimizer = {}
Optimizer.__index = Optimizer
M.Optimizer = Optimizer

local REGISTRY = {}

-- The numeric options of every optimizer, with their ranges (checked at create: a string
-- learning_rate fails there, naming the option, not at the first update).
local UNIT = {min = 0, max = 1}
local NUMERIC = {
  learning_rate = {min = 0}, wd = {}, rescale_grad = {}, clip_gradient = {},
  begin_num_update = {min = 0, integer = true}, momentum = {min = 0}, beta1 = UNIT, beta2 = UNIT,
  epsilon = {min = 0}, eps = {min = 0}, gamma1 = UNIT, gamma2 = UNIT, clip_weights = {}, rho = UNIT,
  lamda1 = {}, beta = {}, wd_lh = {}, schedule_decay = {}, lower_bound = {}, upper_bound = {},
  lamda = {},
}
for _, spec in pairs(NUMERIC) do spec.optional = true end

local function check_options(who, o)
  for k, v in pairs(o) do
    if NUMERIC[k] then check.number(who, k, v, NUMERIC[k]) end
  end
  local s = o.lr_scheduler
  if s ~= nil and not (type(s) == 'function' or (type(s) == 'table' and getmetatable(s) and getmetatable(s).__call)) then
    check.fail(who, 'lr_scheduler', 'a scheduler (mx.lr_scheduler.*) or a function(num_update)', s)
  end
  check.type(who, 'param_idx2name', o.param_idx2name, 'table', true)
  if o.sym ~= nil then check.symbol(who, 'sym', o.sym) end
  for _, k in ipairs {'centered', 'bias_correction', 'multi_precision', 'lazy_update'} do
    if o[k] ~= nil and type(o[k]) ~= 'boolean' then check.fail(who, k, 'a boolean', o[k]) end
  end
end

local function ends(s, suf) return #s >= #suf and s:sub(-#suf) == suf end

--- A new optimizer class registered under `name`; `defaults` fills missing options;
--- `init(self, o)` reads the class's own options.
--- `positional` lists the class's own arguments in MXNet's Python order: the constructor
--- takes them positionally (`mx.optimizer.SGD(0.9)`), or everything as one keyword table
--- (`mx.optimizer.SGD{momentum = 0.9}`), optionally after positional ones.
local function class(name, defaults, init, positional)
  local cls = setmetatable({}, {__index = Optimizer})
  cls.__index = cls
  cls.__tostring = Optimizer.__tostring
  cls._name = name
  cls._positional = positional or {}
  setmetatable(cls, {__index = Optimizer, __newindex = function(t, k, v)
    -- every class's update checks its arguments first (check_update)
    if k == 'update' and type(v) == 'function' then
      local f = v
      v = function(self, index, weight, grad, state)
        check_update(self, index, weight, grad, state)
        return f(self, index, weight, grad, state)
      end
    end
    rawset(t, k, v)
  end, __call = function(c, ...)
    local o = kwargs.parse('mx.optimizer.' .. name, cls._positional, ...)
    check_options('mx.optimizer.' .. name, o)
    -- Every option the class reads is recorded; one that nothing read is a misspelling
    -- (momentun) and an error, as MXNet's keyword arguments are.
    local read = {}
    local proxy = setmetatable({}, {__index = function(_, k) read[k] = true; return o[k] end})
    local self = setmetatable({}, c)
    self:_base_init(proxy, defaults)
    if init then init(self, proxy) end
    local unknown = {}
    for k in pairs(o) do
      if not read[k] and not M.IGNORED_OPTIONS[k] then unknown[#unknown + 1] = tostring(k) end
    end
    if #unknown > 0 then
      table.sort(unknown)
      local known = {}
      for k in pairs(read) do known[#known + 1] = tostring(k) end
      table.sort(known)
      raise(('mx.optimizer.%s: unknown option%s %s (it takes %s)'):format(name,
        #unknown > 1 and 's' or '', table.concat(unknown, ', '), table.concat(known, ', ')))
    end
    return self
  end})
  REGISTRY[name:lower()] = cls
  return cls
end
M.class = class

function Optimizer:_base_init(o, defaults)
  local lr = o.learning_rate
  self.lr = lr or defaults.learning_rate or 0.01
  self.lr_scheduler = o.lr_scheduler
  if self.lr_scheduler and lr ~= nil then self.lr_scheduler.base_lr = lr end
  self.wd = o.wd or 0
  self.rescale_grad = o.rescale_grad or 1
  self.clip_gradient = o.clip_gradient
  self.multi_precision = o.multi_precision and true or false
  self.begin_num_update = o.begin_num_update or 0
  self.num_update = self.begin_num_update
  self._index_update_count = {}
  self.idx2name = {}
  for k, v in pairs(o.param_idx2name or {}) do self.idx2name[k] = v end
  self._user_lr_mult, self._user_wd_mult = {}, {}
  self._sym_attrs, self._sym_args = nil, nil
  if o.sym then self:set_attrs_from(o.sym) end
  self:set_lr_mult({})
  self:set_wd_mult({})
end

--- Reads __lr_mult__ / __wd_mult__ attributes of a symbol's arguments.
function Optimizer:set_attrs_from(sym)
  self._sym_attrs, self._sym_args = sym:attr_dict(), sym:list_arguments()
  self:set_lr_mult(self._user_lr_mult)
  self:set_wd_mult(self._user_wd_mult)
end

function M._check_mult(self, fn, t)
  local who = 'mx.optimizer.' .. self._name .. ':' .. fn
  check.type(who, 'the multipliers', t, 'table')
  for k, v in pairs(t) do check.number(who, ('multiplier [%s]'):format(tostring(k)), v) end
  return t
end

local function sym_mult(self, key, out)
  if not self._sym_args then return end
  for _, name in ipairs(self._sym_args) do
    local a = self._sym_attrs[name]
    if a and a[key] ~= nil then out[name] = tonumber(a[key]) end
  end
end

--- Sets per-parameter learning-rate multipliers, as MXNet's `set_lr_mult`: the symbol's
-- `__lr_mult__` attributes first, then the entries of `t` (which win).
-- @param t table parameter name -> multiplier
-- @usage opt:set_lr_mult({fc1_weight = 0.1})
function Optimizer:set_lr_mult(t)
  self._user_lr_mult = M._check_mult(self, 'set_lr_mult', t)
  self.lr_mult = {}
  sym_mult(self, '__lr_mult__', self.lr_mult)
  for k, v in pairs(t) do self.lr_mult[k] = v end
end

--- Sets per-parameter weight-decay multipliers, as MXNet's `set_wd_mult`: parameters whose
-- names do not end in `_weight` or `_gamma` get 0, then the symbol's `__wd_mult__`
-- attributes, then the entries of `t` (which win).
-- @param t table parameter name -> multiplier
function Optimizer:set_wd_mult(t)
  self._user_wd_mult = M._check_mult(self, 'set_wd_mult', t)
  self.wd_mult = {}
  for _, n in pairs(self.idx2name) do
    if not (ends(n, '_weight') or ends(n, '_gamma')) then self.wd_mult[n] = 0 end
  end
  sym_mult(self, '__wd_mult__', self.wd_mult)
  for k, v in pairs(t) do self.wd_mult[k] = v end
end

--- Sets the base learning rate; raises when an `lr_scheduler` is set (change that instead).
-- @param lr the new learning rate
function Optimizer:set_learning_rate(lr)
  if self.lr_scheduler then
    raise('set_learning_rate: the optimizer has an lr_scheduler; change the scheduler instead')
  end
  self.lr = check.number('mx.optimizer.' .. self._name .. ':set_learning_rate', 'lr', lr, {min = 0})
end

--- The current learning rate: the scheduler's value at `num_update`, or `lr`.
-- @return number
function Optimizer:learning_rate()
  if self.lr_scheduler then return self.lr_scheduler(self.num_update) end
  return self.lr
end

function Optimizer:_update_count(index)
  local c = (self._index_update_count[index] or self.begin_num_update) + 1
  self._index_update_count[index] = c
  if c > self.num_update then self.num_update = c end
end

local function name_of(self, index)
  return self.idx2name[index] or (type(index) == 'string' and index or nil)
end

function Optimizer:_get_lr(index)
  local lr = self.lr_scheduler and self.lr_scheduler(self.num_update) or self.lr
  if self.lr_mult[index] ~= nil then return lr * self.lr_mult[index] end
  local n = name_of(self, index)
  if n and self.lr_mult[n] ~= nil then return lr * self.lr_mult[n] end
  return lr
end

function Optimizer:_get_wd(index)
  local wd = self.wd
  if self.wd_mult[index] ~= nil then return wd * self.wd_mult[index] end
  local n = name_of(self, index)
  if n then
    if self.wd_mult[n] ~= nil then return wd * self.wd_mult[n] end
    if not (ends(n, '_weight') or ends(n, '_gamma')) then return 0 end
  end
  return wd
end

--- The state an optimizer keeps per weight (momentum, ...); the base class keeps none.
-- Subclasses take `(index, weight)` and return an NDArray, a list of them, or nil.
-- @return nil
function Optimizer:create_state() return nil end

-- the weights multi_precision keeps a float32 master copy of
local function is_lowp(weight) return weight.dtype == 'float16' or weight.dtype == 'bfloat16' end

--- The state of a weight, with MXNet's multi-precision wrapper: with `multi_precision`
-- and a float16 or bfloat16 weight, `{weight32, inner...}` (a float32 master copy, then
-- the entries of `create_state(index, weight32)`); otherwise `create_state(index, weight)`. Optimizers
-- with their own multi-precision kernels (SGD, NAG) override it.
-- @param index the parameter's index
-- @param weight the NDArray
-- @return the state (nil, an NDArray or a list of NDArrays)
function Optimizer:create_state_multi_precision(index, weight)
  if self.multi_precision and is_lowp(weight) then
    local w32 = weight:astype('float32')
    local inner = self:create_state(index, w32)
    local st = {w32}
    if nd.is_ndarray(inner) then st[2] = inner
    elseif inner then for i, a in ipairs(inner) do st[i + 1] = a end end
    return st
  end
  return self:create_state(index, weight)
end

--- One update through MXNet's multi-precision wrapper: with `multi_precision` and a
-- float16 or bfloat16 weight the update runs on the float32 master copy (with the
-- gradient cast to float32) and the weight receives it rounded; otherwise `update`.
-- @param index the parameter's index
-- @param weight the NDArray, updated in place
-- @param grad its gradient
-- @param state what `create_state_multi_precision` returned
function Optimizer:update_multi_precision(index, weight, grad, state)
  if self.multi_precision and is_lowp(weight) and type(state) == 'table'
      and not nd.is_ndarray(state) then
    local w32 = state[1]
    local inner
    if #state == 2 and self._single_state then inner = state[2]
    elseif #state > 1 then inner = {unpack(state, 2)} end
    self:update(index, w32, grad:astype('float32'), inner)
    weight:set(w32:astype(weight.dtype))
    return
  end
  self:update(index, weight, grad, state)
end

function Optimizer:__tostring()
  return ('%s(learning_rate=%g, wd=%g, rescale_grad=%g)'):format(self._name, self.lr, self.wd, self.rescale_grad)
end

local function clip_arg(self) return (self.clip_gradient and self.clip_gradient > 0) and self.clip_gradient or -1 end

-- ------------------------------------------------------------------ SGD ------------
--- SGD{momentum=0}: w = (1 - lr*wd)*w - lr*clip(rescale*g); with momentum
--- m = momentum*m - lr*wd*w - lr*clip(rescale*g), w = w + m.
M.SGD = class('sgd', {}, function(self, o) self.momentum = o.momentum or 0 end, {'momentum', 'lazy_update'})

local function mp_of(self, weight) return self.multi_precision and is_lowp(weight) end

-- multi-precision state: {weight32} or {mom, weight32}, float32
local function mp_state(self, weight)
  local w32 = weight:astype('float32')
  if self.momentum == 0 then return {w32} end
  return {nd.zeros(weight.shape, {ctx = weight.context, dtype = 'float32'}), w32}
end

-- one multi-precision step (SGD, SGD with momentum, NAG), fused or in float32 arithmetic
local function mp_update(self, index, weight, grad, state, nag)
  self:_update_count(index)
  local lr, wd = self:_get_lr(index), self:_get_wd(index)
  local w32, mom = state[#state], #state > 1 and state[1] or nil
  local p = {weight = weight, grad = grad, weight32 = w32, out = weight, lr = lr, wd = wd,
             rescale_grad = self.rescale_grad, clip_gradient = clip_arg(self)}
  if mom then p.mom, p.momentum = mom, self.momentum end
  local name = not mom and 'mp_sgd_update' or nag and 'mp_nag_mom_update' or 'mp_sgd_mom_update'
  -- the mp_* kernels take float16 only (as MXNet's); bfloat16 runs the formulas below
  if weight.dtype == 'float16' and fused(self, index, name, p) then return end
  local g = clip(grad:astype('float32') * self.rescale_grad, self.clip_gradient)
  if not mom then
    w32:set(w32 * (1 - lr * wd) - g * lr)
  elseif nag then
    g = g + w32 * wd
    mom:set(mom * self.momentum + g)
    w32:set(w32 - (g + mom * self.momentum) * lr)
  else
    mom:set(mom * self.momentum - w32 * (lr * wd) - g * lr)
    w32:set(w32 + mom)
  end
  weight:set(w32:astype(weight.dtype))
end

-- SGD and NAG keep their own multi-precision states and kernels (mp_sgd_update, ...)
function M.SGD:create_state_multi_precision(index, weight) return self:create_state(index, weight) end
function M.SGD:update_multi_precision(index, weight, grad, state) return self:update(index, weight, grad, state) end
function M.SGD:create_state(_, weight)
  if mp_of(self, weight) then return mp_state(self, weight) end
  if self.momentum == 0 then return nil end
  return zeros_like(weight)
end
function M.SGD:update(index, weight, grad, state)
  if mp_of(self, weight) and type(state) == 'table' and not nd.is_ndarray(state) then
    return mp_update(self, index, weight, grad, state, false)
  end
  self:_update_count(index)
  local lr, wd = self:_get_lr(index), self:_get_wd(index)
  local p = {weight = weight, grad = grad, out = weight, lr = lr, wd = wd,
             rescale_grad = self.rescale_grad, clip_gradient = clip_arg(self)}
  if state then
    p.mom, p.momentum = state, self.momentum
    if fused(self, index, 'sgd_mom_update', p) then return end
    local g = clip(grad * self.rescale_grad, self.clip_gradient)
    state:set(state * self.momentum - weight * (lr * wd) - g * lr)
    weight:set(weight + state)
  else
    if fused(self, index, 'sgd_update', p) then return end
    local g = clip(grad * self.rescale_grad, self.clip_gradient)
    weight:set(weight * (1 - lr * wd) - g * lr)
  end
end

-- ------------------------------------------------------------------ NAG ------------
--- NAG{momentum=0}: g = clip(rescale*grad) + wd*w; m = momentum*m + g;
--- w = w - lr*(g + momentum*m). Without momentum it is SGD.
M.NAG = class('nag', {}, function(self, o) self.momentum = o.momentum or 0 end, {'momentum'})
M.NAG.create_state = M.SGD.create_state
M.NAG.create_state_multi_precision = M.SGD.create_state_multi_precision
M.NAG.update_multi_precision = M.SGD.update_multi_precision
function M.NAG:update(index, weight, grad, state)
  if mp_of(self, weight) and type(state) == 'table' and not nd.is_ndarray(state) then
    return mp_update(self, index, weight, grad, state, #state > 1)
  end
  if not state then return M.SGD.update(self, index, weight, grad, nil) end
  self:_update_count(index)
  local lr, wd = self:_get_lr(index), self:_get_wd(index)
  if fused(self, index, 'nag_mom_update', {weight = weight, grad = grad, mom = state, out = weight, lr = lr, wd = wd,
                              momentum = self.momentum, rescale_grad = self.rescale_grad,
                              clip_gradient = clip_arg(self)}) then return end
  local g = clip(grad * self.rescale_grad, self.clip_gradient) + weight * wd
  state:set(state * self.momentum + g)
  weight:set(weight - (g + state * self.momentum) * lr)
end

-- ------------------------------------------------------------------ Adam -----------
--- Adam{learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8}: with t the index's
--- update count, lr_t = lr*sqrt(1-beta2^t)/(1-beta1^t); g = clip(rescale*grad + wd*w);
--- mean = beta1*mean + (1-beta1)*g; var = beta2*var + (1-beta2)*g^2;
--- w = w - lr_t*mean/(sqrt(var) + epsilon).
M.Adam = class('adam', {learning_rate = 0.001}, function(self, o)
  self.beta1, self.beta2, self.epsilon = o.beta1 or 0.9, o.beta2 or 0.999, o.epsilon or 1e-8
end, {'learning_rate', 'beta1', 'beta2', 'epsilon', 'lazy_update'})
function M.Adam:create_state(_, weight) return {zeros_like(weight), zeros_like(weight)} end
function M.Adam:update(index, weight, grad, state)
  self:_update_count(index)
  local lr, wd = self:_get_lr(index), self:_get_wd(index)
  local t = self._index_update_count[index]
  lr = lr * math.sqrt(1 - self.beta2 ^ t) / (1 - self.beta1 ^ t)
  local mean, var = state[1], state[2]
  if fused(self, index, 'adam_update', {weight = weight, grad = grad, mean = mean, var = var, out = weight, lr = lr,
                           wd = wd, beta1 = self.beta1, beta2 = self.beta2, epsilon = self.epsilon,
                           rescale_grad = self.rescale_grad, clip_gradient = clip_arg(self)}) then return end
  local g = clip(grad * self.rescale_grad + weight * wd, self.clip_gradient)
  mean:set(mean * self.beta1 + g * (1 - self.beta1))
  var:set(var * self.beta2 + g * g * (1 - self.beta2))
  weight:set(weight - mean * lr / (sqrt(var) + self.epsilon))
end

-- ------------------------------------------------------------------ RMSProp --------
--- RMSProp{learning_rate=0.001, gamma1=0.9, gamma2=0.9, epsilon=1e-8, centered=false,
--- clip_weights=nil}: g = clip(rescale*grad + wd*w); n = (1-gamma1)*g^2 + gamma1*n;
--- w = w - lr*g/sqrt(n + epsilon). centered (Graves): also m = (1-gamma1)*g + gamma1*m,
--- delta = gamma2*delta - lr*g/sqrt(n - m^2 + epsilon), w = w + delta.
M.RMSProp = class('rmsprop', {learning_rate = 0.001}, function(self, o)
  self.gamma1, self.gamma2, self.epsilon = o.gamma1 or 0.9, o.gamma2 or 0.9, o.epsilon or 1e-8
  self.centered, self.clip_weights = o.centered and true or false, o.clip_weights
end, {'learning_rate', 'gamma1', 'gamma2', 'epsilon', 'centered', 'clip_weights'})
function M.RMSProp:create_state(_, weight)
  if self.centered then return {zeros_like(weight), zeros_like(weight), zeros_like(weight)} end
  return {zeros_like(weight)}
end
function M.RMSProp:update(index, weight, grad, state)
  self:_update_count(index)
  local lr, wd = self:_get_lr(index), self:_get_wd(index)
  local n = state[1]
  if not self.centered and fused(self, index, 'rmsprop_update', {weight = weight, grad = grad, n = n, out = weight,
      lr = lr, wd = wd, gamma1 = self.gamma1, epsilon = self.epsilon, rescale_grad = self.rescale_grad,
      clip_gradient = clip_arg(self),
      clip_weights = (self.clip_weights and self.clip_weights > 0) and self.clip_weights or -1}) then
    return
  end
  local g = clip(grad * self.rescale_grad + weight * wd, self.clip_gradient)
  n:set(g * g * (1 - self.gamma1) + n * self.gamma1)
  if self.centered then
    local m, delta = state[2], state[3]
    m:set(g * (1 - self.gamma1) + m * self.gamma1)
    delta:set(delta * self.gamma2 - g * lr / sqrt(n - m * m + self.epsilon))
    weight:set(weight + delta)
  else
    weight:set(weight - g * lr / sqrt(n + self.epsilon))
  end
  if self.clip_weights and self.clip_weights > 0 then weight:set(clip(weight, self.clip_weights)) end
end

-- ------------------------------------------------------------------ AdaGrad --------
--- AdaGrad{learning_rate=0.01, eps=1e-7}: g = clip(rescale*grad); h = h + g^2;
--- w = w - lr*(g/sqrt(h + eps) + wd*w).
M.AdaGrad = class('adagrad', {}, function(self, o)
  self.float_stable_eps, self._single_state = o.eps or o.epsilon or 1e-7, true
end,
  {'eps'})
function M.AdaGrad:create_state(_, weight) return zeros_like(weight) end
function M.AdaGrad:update(index, weight, grad, state)
  self:_update_count(index)
  local lr, wd = self:_get_lr(index), self:_get_wd(index)
  -- the fused operator (MXNet's _sparse_adagrad_update) has no weight decay
  if wd == 0 and fused(self, index, 'adagrad_update', {weight = weight, grad = grad, history = state, out = weight, lr = lr,
      epsilon = self.float_stable_eps, wd = 0, rescale_grad = self.rescale_grad,
      clip_gradient = clip_arg(self)}) then return end
  local g = clip(grad * self.rescale_grad, self.clip_gradient)
  state:set(state + g * g)
  weight:set(weight - (g / sqrt(state + self.float_stable_eps) + weight * wd) * lr)
end

-- ------------------------------------------------------------------ AdaDelta -------
--- AdaDelta{rho=0.9, epsilon=1e-5} (no learning rate): g = clip(rescale*grad);
--- acc_g = rho*acc_g + (1-rho)*g^2; d = sqrt(acc_d + eps)/sqrt(acc_g + eps)*g;
--- acc_d = rho*acc_d + (1-rho)*d^2; w = w - (d + wd*w).
M.AdaDelta = class('adadelta', {}, function(self, o) self.rho, self.epsilon = o.rho or 0.9, o.epsilon or 1e-5 end,
  {'rho', 'epsilon'})
function M.AdaDelta:create_state(_, weight) return {zeros_like(weight), zeros_like(weight)} end
function M.AdaDelta:update(index, weight, grad, state)
  local wd = self:_get_wd(index)
  self:_update_count(index)
  local acc_g, acc_d = state[1], state[2]
  local g = clip(grad * self.rescale_grad, self.clip_gradient)
  acc_g:set(acc_g * self.rho + g * g * (1 - self.rho))
  local d = sqrt(acc_d + self.epsilon) / sqrt(acc_g + self.epsilon) * g
  acc_d:set(acc_d * self.rho + d * d * (1 - self.rho))
  weight:set(weight - (d + weight * wd))
end

-- ------------------------------------------------------------------ create ---------
--- Creates an optimizer by registered name (case-insensitive), as `mx.optimizer.create`;
-- an optimizer object is returned as is.
-- @param name the name (`'sgd'`, `'adam'`, ...) or an optimizer
-- @param params constructor options (`learning_rate`, `wd`, `rescale_grad`, `clip_gradient`,
-- `lr_scheduler`, and the optimizer's own, such as `momentum`)
-- @return an Optimizer
-- @usage local opt = mx.optimizer.create('sgd', {learning_rate = 0.1, momentum = 0.9})
function M.create(name, params)
  if type(name) == 'table' and getmetatable(name) and name.update then return name end
  if type(name) ~= 'string' then raise('mx.optimizer.create: name must be a string, got ' .. type(name)) end
  local cls = REGISTRY[name:lower()]
  if not cls then
    local known = {}
    for k in pairs(REGISTRY) do known[#known + 1] = k end
    table.sort(known)
    raise(('mx.optimizer.create: unknown optimizer %q; known optimizers: %s'):format(name, table.concat(known, ', ')))
  end
  return cls(params)
end

--- Registers an optimizer class for `create`, under the lower-cased `cls._name`.
-- @param cls the optimizer class
function M.register(cls) REGISTRY[cls._name:lower()] = cls end

-- ------------------------------------------------------------------ Updater --------
--- get_updater(opt): a callable updater(index, grad, weight) keeping one state per index.
local Updater = {}
Updater.__index = Updater
M.Updater = Updater

local function key_of(index)
  if type(index) == 'number' then return 'i' .. ('%d'):format(index) end
  return 's' .. tostring(index)
end
local function index_of(key)
  if key:sub(1, 1) == 'i' then return tonumber(key:sub(2)) end
  return key:sub(2)
end

--- An Updater for `opt`: callable as `updater(index, grad, weight)`, creating and keeping
-- the optimizer state of each index, as MXNet's `get_updater`.
-- @param opt an Optimizer
-- @return an Updater
-- @usage local upd = mx.optimizer.get_updater(opt); upd(1, grad, weight)
function M.get_updater(opt)
  if type(opt) ~= 'table' or not opt.update then
    raise('mx.optimizer.get_updater: expected an optimizer, got ' .. type(opt))
  end
  return setmetatable({optimizer = opt, states = {}, _loaded = {}}, Updater)
end

local function as_ctx(state, weight)
  if state == nil or state == false then return state end
  if nd.is_ndarray(state) then
    if state.context ~= weight.context then return state:as_in_context(weight.context) end
    return state
  end
  local out = {}
  for i, s in ipairs(state) do out[i] = as_ctx(s, weight) end
  return out
end

local function describe_state(st)
  if st == nil then return 'no state' end
  if st == false then return 'None' end
  if nd.is_ndarray(st) then return ('(%s) %s'):format(table.concat(st.shape, ', '), st.dtype) end
  local t = {}
  for i, s in ipairs(st) do t[i] = describe_state(s) end
  return '{' .. table.concat(t, ', ') .. '}'
end

-- A state restored from a file (untrusted) must have the layout, shapes and dtypes of the
-- state the optimizer makes for the weight it is used with.
local function check_loaded_state(index, loaded, fresh)
  local a, b = describe_state(loaded), describe_state(fresh)
  if a ~= b then
    raise(('Updater: the loaded optimizer state of %s is %s, but the optimizer needs %s for this weight')
      :format(key_of(index), a, b))
  end
end

function Updater:__call(index, grad, weight)
  local st = self.states[index]
  if st == nil and not self._loaded[index] then
    st = self.optimizer:create_state_multi_precision(index, weight)
    self.states[index] = st
    self._loaded[index] = true
  elseif self._loaded[index] == 'file' then
    check_loaded_state(index, st, self.optimizer:create_state_multi_precision(index, weight))
    st = as_ctx(st, weight)
    self.states[index] = st
    self._loaded[index] = true
  end
  self.optimizer:update_multi_precision(index, weight, grad, st)
end

--- States and update counts as a name -> NDArray table (copies on the CPU).
function Updater:get_states()
  local cpu = require('luamx.context').cpu()
  local out, opt = {}, self.optimizer
  for index in pairs(self._loaded) do
    local k, st = key_of(index), self.states[index]
    if st == nil then out[k .. '/none'] = nd.zeros({1})
    elseif nd.is_ndarray(st) then out[k .. '/0'] = st:as_in_context(cpu):copy()
    else
      for j, s in ipairs(st) do
        if s == false then out[k .. '/' .. j .. 'none'] = nd.zeros({1}) -- a None entry
        else out[k .. '/' .. j] = s:as_in_context(cpu):copy() end
      end
    end
    local c = opt._index_update_count[index]
    if c then out[k .. '/count'] = nd.array({c}, {dtype = 'float64'}) end
  end
  out.num_update = nd.array({opt.num_update}, {dtype = 'float64'})
  out.random_state = require('luamx').random.get_state()
  return out
end

-- One entry of a states table (a file is untrusted): "num_update" or "<i|s><key>/<part>"
-- with part "count", "none" or a positive integer, holding an NDArray; count and
-- num_update hold one number.
local function check_state_entry(name, arr)
  local function bad(msg) raise(('set_states: entry %s: %s'):format(
    type(name) == 'string' and ('%q'):format(name) or tostring(name), msg)) end
  if type(name) ~= 'string' then bad('expected a name (a states file holds named arrays)') end
  if not nd.is_ndarray(arr) then bad('expected an NDArray, got ' .. type(arr)) end
  local k, part = name:match('^(.*)/([^/]+)$')
  if name ~= 'num_update' and name ~= 'random_state' then
    if not k then bad('expected "num_update", "random_state" or "<key>/<part>"') end
    if not (k:match('^i%-?%d+$') or k:match('^s.')) then
      bad('the key must be i<integer> or s<name>, got ' .. ('%q'):format(k))
    end
    if not (part == 'count' or part == 'none' or part:match('^%d+$') or part:match('^%d+none$')) then
      bad('the part must be count, none, an integer or <integer>none, got ' .. ('%q'):format(part))
    end
  end
  if (name == 'num_update' or part == 'count') and arr.size ~= 1 then
    bad(('expected one number, got an array of shape (%s)'):format(table.concat(arr.shape, ', ')))
  end
end

--- Restores states from get_states()'s table or from a file written by save_states.
function Updater:set_states(blob)
  if type(blob) == 'string' then blob = nd.load(blob) end
  if type(blob) ~= 'table' then raise('set_states: expected a table of NDArrays or a path, got ' .. type(blob)) end
  local opt, states, loaded, counts = self.optimizer, {}, {}, {}
  local tuples, random_state = {}, nil
  for name, arr in pairs(blob) do
    check_state_entry(name, arr)
    if name == 'num_update' then opt.num_update = arr:tonumber()
    elseif name == 'random_state' then
      if not nd.is_ndarray(arr) or arr.dtype ~= 'int64' or arr.size ~= 6 then
        raise(('set_states: entry random_state must be an int64 array of 6 elements (mx.random.get_state()), got %s')
          :format(nd.is_ndarray(arr) and ('%s of %d elements'):format(arr.dtype, arr.size) or type(arr)))
      end
      random_state = arr
    else
      local k, part = name:match('^(.*)/([^/]+)$')
      local index = index_of(k)
      if part == 'count' then counts[index] = arr:tonumber()
      elseif part == 'none' then loaded[index] = 'file'
      elseif part == '0' then states[index] = arr; loaded[index] = 'file'
      else
        local none_at = part:match('^(%d+)none$')
        tuples[index] = tuples[index] or {}
        if none_at then tuples[index][tonumber(none_at)] = false -- a None entry
        else tuples[index][tonumber(part)] = arr end
        loaded[index] = 'file'
      end
    end
  end
  for index, t in pairs(tuples) do
    local n = 0
    for j in pairs(t) do n = math.max(n, j) end
    for j = 1, n do
      if t[j] == nil then
        raise(('set_states: the states of %s have part %d but not part %d'):format(key_of(index), n, j))
      end
    end
    states[index] = t
  end
  self.states, self._loaded = states, loaded
  for index, c in pairs(counts) do opt._index_update_count[index] = c end
  if random_state then require('luamx').random.set_state(random_state) end
end

-- set_states runs interpreted. Compiled by LuaJIT (2.1.0-beta3, Debian 12), it began,
-- after some thousands of loads in one process, to leave the updater with no states
-- although the file held them, and kept doing so for every later load in that process;
-- never with -joff or with this function interpreted (checkpoint_concurrent_spec's stress
-- case, LUAMX_CKPT_STRESS=1). It runs once per load, so nothing is lost.
jit.off(Updater.set_states, true)

--- Saves the states (`get_states`) to a file with `mx.nd.save`.
-- @param path file path
function Updater:save_states(path) nd.save(path, self:get_states()) end

-- The helpers the optimizers of luamx.optimizer.more share with these.
M._util = {clip = clip, sqrt = sqrt, zeros_like = zeros_like, fused = fused, clip_arg = clip_arg}
require('luamx.optimizer.more').define(M)

--- Installs this module as `mx.optimizer` (with `mx.optimizer.lr_scheduler`).
-- @param mx the luamx module table
-- @return this module
function M.install(mx)
  mx.optimizer = M
  mx.optimizer.lr_scheduler = require 'luamx.lr_scheduler'
  return M
end

return M
