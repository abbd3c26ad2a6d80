--- luamx.lr_scheduler — mx.lr_scheduler: learning-rate schedules (MXNet 1.9
--- python/mxnet/lr_scheduler.py).
--
--   local s = mx.lr_scheduler.FactorScheduler{step = 100, factor = 0.5, base_lr = 0.1}
--   s(num_update) -> learning rate
--
-- Invariants: a scheduler is called with the optimizer's update count (num_update, which
-- starts at 1 for the first update); the rate changes only once num_update is strictly
-- greater than the next boundary (FactorScheduler: count + step; MultiFactorScheduler:
-- step[i]), a while loop catches up after resumed training, and each change is logged
-- through M.log as MXNet does ("Update[%d]: Change learning rate to %0.5e").
-- Warm-up (warmup_steps, warmup_begin_lr, warmup_mode 'linear'|'constant') as MXNet.
local capi = require 'luamx.capi'
local raise = capi.raise

local M = {}

--- Where log lines go (replace to capture them).
function M.log(msg) io.stderr:write(msg, '\n') end

local function base(self, o, who)
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
M.FactorScheduler = setmetatable(Factor, {__call = function(cls, o)
  if type(o) ~= 'table' then o = {step = o} end
  local who = 'mx.lr_scheduler.FactorScheduler'
  if type(o.step) ~= 'number' or o.step < 1 then
    raise(who .. ': step must be greater or equal than 1 round, got ' .. tostring(o.step))
  end
  local factor = o.factor or 1
  if factor > 1 then raise(who .. ': factor must be no more than 1 to make lr reduce, got ' .. factor) end
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
M.MultiFactorScheduler = setmetatable(Multi, {__call = function(cls, o)
  local who = 'mx.lr_scheduler.MultiFactorScheduler'
  if type(o) ~= 'table' or type(o.step) ~= 'table' or #o.step < 1 then
    raise(who .. ': step must be a non-empty array of increasing integers')
  end
  for i, s in ipairs(o.step) do
    if i > 1 and s <= o.step[i - 1] then raise(who .. ': step must be an increasing integer list') end
    if s < 1 then raise(who .. ': step must be greater or equal than 1 round') end
  end
  local factor = o.factor or 1
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

--- Installs this module as `mx.lr_scheduler`.
-- @param mx the luamx module table
-- @return this module
function M.install(mx)
  mx.lr_scheduler = M
  return M
end

return M
