--- luamx.lr_scheduler — mx.lr_scheduler: learning-rate schedules (MXNet 1.9
--- python/mxnet/lr_scheduler.py).
--
--   local s = mx.lr_scheduler.FactorScheduler{step = 100, factor = 0.5, base_lr = 0.1}
--   local s = mx.lr_scheduler.FactorScheduler(100, 0.5)   -- MXNet's positional order
--   s(num_update) -> learning rate
--
-- Schedulers: FactorScheduler, MultiFactorScheduler, PolyScheduler, CosineScheduler; each
-- takes MXNet 1.9's arguments positionally in Python's order or as one keyword table.
--
-- Invariants: a scheduler is called with the optimizer's update count (num_update, which
-- starts at 1 for the first update); the rate changes only once num_update is strictly
-- greater than the next boundary (FactorScheduler: count + step; MultiFactorScheduler:
-- step[i]), a while loop catches up after resumed training, and each change is logged
-- through M.log as MXNet does ("Update[%d]: Change learning rate to %0.5e").
-- Warm-up (warmup_steps, warmup_begin_lr, warmup_mode 'linear'|'constant') as MXNet.
local capi = require 'luamx.capi'
local kwargs = require 'luamx.kwargs'
local check = require 'luamx.check'
local raise = capi.raise
local WARMUP = {'warmup_steps', 'warmup_begin_lr', 'warmup_mode'}
local function sig(...)
  local t = {...}
  for _, n in ipairs(WARMUP) do t[#t + 1] = n end
  return t
end

local M = {}

--- Where log lines go (replace to capture them).
function M.log(msg) io.stderr:write(msg, '\n') end

local function base(self, o, who)
  check.number(who, 'base_lr', o.base_lr, {optional = true, min = 0})
  check.number(who, 'warmup_steps', o.warmup_steps, {optional = true, integer = true})
  check.number(who, 'warmup_begin_lr', o.warmup_begin_lr, {optional = true, min = 0})
  self.base_lr = o.base_lr or 0.01
  self.warmup_steps = o.warmup_steps or 0
  self.warmup_begin_lr = o.warmup_begin_lr or 0
  self.warmup_final_lr = self.base_lr
  self.warmup_mode = o.warmup_mode or 'linear'
  if self.warmup_begin_lr > self.warmup_final_lr then
    raise(who .. ': base_lr must be no less than warmup_begin_lr')
  end
  if self.warmup_steps < 0 then raise(who .. ': warmup_steps must be non-negative') end
  if self.warmup_mode ~= 'linear' and self.warmup_mode ~= 'constant' then
    raise(who .. ": warmup_mode must be 'linear' or 'constant', got " .. tostring(self.warmup_mode))
  end
end

local function warmup_lr(self, n)
  if self.warmup_mode == 'linear' then
    return self.warmup_begin_lr + (self.warmup_final_lr - self.warmup_begin_lr) * n / self.warmup_steps
  end
  return self.warmup_begin_lr
end

-- ------------------------------------------------------------------ Factor ---------
local Factor = {}
Factor.__index = Factor
local FACTOR_ARGS = sig('step', 'factor', 'stop_factor_lr', 'base_lr')
M.FactorScheduler = setmetatable(Factor, {__call = function(cls, ...)
  local who = 'mx.lr_scheduler.FactorScheduler'
  local o = kwargs.parse(who, FACTOR_ARGS, ...)
  if type(o.step) ~= 'number' or o.step < 1 then
    raise(who .. ': step must be greater or equal than 1 round, got ' .. tostring(o.step))
  end
  local factor = check.number(who, 'factor', o.factor, {optional = true, min = 0}) or 1
  if factor > 1 then raise(who .. ': factor must be no more than 1 to make lr reduce, got ' .. factor) end
  check.number(who, 'stop_factor_lr', o.stop_factor_lr, {optional = true, min = 0})
  local self = setmetatable({step = o.step, factor = factor, stop_factor_lr = o.stop_factor_lr or 1e-8, count = 0}, cls)
  base(self, o, who)
  return self
end})

function Factor:__call(num_update)
  if num_update < self.warmup_steps then return warmup_lr(self, num_update) end
  while num_update > self.count + self.step do
    self.count = self.count + self.step
    self.base_lr = self.base_lr * self.factor
    if self.base_lr < self.stop_factor_lr then
      self.base_lr = self.stop_factor_lr
      M.log(('Update[%d]: now learning rate arrived at %0.5e, will not change in the future')
        :format(num_update, self.base_lr))
    else
      M.log(('Update[%d]: Change learning rate to %0.5e'):format(num_update, self.base_lr))
    end
  end
  return self.base_lr
end

-- ------------------------------------------------------------------ MultiFactor ----
local Multi = {}
Multi.__index = Multi
local MULTI_ARGS = sig('step', 'factor', 'base_lr')
M.MultiFactorScheduler = setmetatable(Multi, {__call = function(cls, ...)
  local who = 'mx.lr_scheduler.MultiFactorScheduler'
  local o = kwargs.parse(who, MULTI_ARGS, ...)
  if type(o) ~= 'table' or type(o.step) ~= 'table' or #o.step < 1 then
    raise(who .. ': step must be a non-empty array of increasing integers')
  end
  for i, s in ipairs(o.step) do
    check.number(who, ('step[%d]'):format(i), s, {integer = true})
    if i > 1 and s <= o.step[i - 1] then raise(who .. ': step must be an increasing integer list') end
    if s < 1 then raise(who .. ': step must be greater or equal than 1 round') end
  end
  local factor = check.number(who, 'factor', o.factor, {optional = true, min = 0}) or 1
  if factor > 1 then raise(who .. ': factor must be no more than 1 to make lr reduce, got ' .. factor) end
  local steps = {}
  for i, s in ipairs(o.step) do steps[i] = s end
  local self = setmetatable({step = steps, factor = factor, cur_step_ind = 1, count = 0}, cls)
  base(self, o, who)
  return self
end})

function Multi:__call(num_update)
  if num_update < self.warmup_steps then return warmup_lr(self, num_update) end
  while self.cur_step_ind <= #self.step do
    if num_update > self.step[self.cur_step_ind] then
      self.count = self.step[self.cur_step_ind]
      self.cur_step_ind = self.cur_step_ind + 1
      self.base_lr = self.base_lr * self.factor
      M.log(('Update[%d]: Change learning rate to %0.5e'):format(num_update, self.base_lr))
    else
      return self.base_lr
    end
  end
  return self.base_lr
end

-- ------------------------------------------------------------------ Poly / Cosine -
-- Both decay from base_lr to final_lr over the max_update - warmup_steps updates after
-- the warm-up, then stay at final_lr (MXNet 1.9: the rate is recomputed only while
-- num_update <= max_update). As MXNet 1.9, the decay starts from the base_lr given to the
-- scheduler (base_lr_orig): an optimizer's learning_rate, which overwrites base_lr, does
-- not change it.
local function decaying(who, o)
  if type(o.max_update) ~= 'number' or o.max_update ~= math.floor(o.max_update) then
    raise(who .. ': max_update must be an integer, got ' .. tostring(o.max_update))
  end
  if o.max_update < 1 then raise(who .. ': maximum number of updates must be strictly positive, got ' .. o.max_update) end
  check.number(who, 'final_lr', o.final_lr, {optional = true, min = 0})
  local self = {max_update = o.max_update, final_lr = o.final_lr or 0}
  base(self, o, who)
  self.base_lr_orig = self.base_lr
  self.max_steps = self.max_update - self.warmup_steps
  if self.max_steps < 1 then
    raise(('%s: max_update (%d) must be greater than warmup_steps (%d)'):format(who, self.max_update, self.warmup_steps))
  end
  return self
end

--- PolyScheduler(max_update, base_lr=0.01, pwr=2, final_lr=0, warmup_steps=0,
-- warmup_begin_lr=0, warmup_mode='linear'), or the same names in one table: after the
-- warm-up, lr = final_lr + (base_lr - final_lr) * (1 - (n - warmup_steps) / (max_update -
-- warmup_steps))^pwr for n <= max_update.
-- @function PolyScheduler
local Poly = {}
Poly.__index = Poly
local POLY_ARGS = {'max_update', 'base_lr', 'pwr', 'final_lr', unpack(WARMUP)}
M.PolyScheduler = setmetatable(Poly, {__call = function(cls, ...)
  local who = 'mx.lr_scheduler.PolyScheduler'
  local o = kwargs.parse(who, POLY_ARGS, ...)
  local self = setmetatable(decaying(who, o), cls)
  self.power = check.number(who, 'pwr', o.pwr, {optional = true}) or 2
  return self
end})
function Poly:__call(num_update)
  if num_update < self.warmup_steps then return warmup_lr(self, num_update) end
  if num_update <= self.max_update then
    self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr)
      * (1 - (num_update - self.warmup_steps) / self.max_steps) ^ self.power
  end
  return self.base_lr
end

--- CosineScheduler(max_update, base_lr=0.01, final_lr=0, warmup_steps=0,
-- warmup_begin_lr=0, warmup_mode='linear'), or the same names in one table: after the
-- warm-up, lr = final_lr + (base_lr - final_lr) * (1 + cos(pi * (n - warmup_steps) /
-- (max_update - warmup_steps))) / 2 for n <= max_update.
-- @function CosineScheduler
local Cosine = {}
Cosine.__index = Cosine
local COSINE_ARGS = {'max_update', 'base_lr', 'final_lr', unpack(WARMUP)}
M.CosineScheduler = setmetatable(Cosine, {__call = function(cls, ...)
  local who = 'mx.lr_scheduler.CosineScheduler'
  return setmetatable(decaying(who, kwargs.parse(who, COSINE_ARGS, ...)), cls)
end})
function Cosine:__call(num_update)
  if num_update < self.warmup_steps then return warmup_lr(self, num_update) end
  if num_update <= self.max_update then
    self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr)
      * (1 + math.cos(math.pi * (num_update - self.warmup_steps) / self.max_steps)) / 2
  end
  return self.base_lr
end

--- Installs this module as `mx.lr_scheduler`.
-- @param mx the luamx module table
-- @return this module
function M.install(mx)
  mx.lr_scheduler = M
  return M
end

return M
