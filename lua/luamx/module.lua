--- luamx.module — mx.mod: Module, BucketingModule and BaseModule (MXNet 1.9
--- python/mxnet/module), and mx.logging, the logger modules write their lines through.
--
--   local mod = mx.mod.Module{symbol = net, context = mx.cpu()}
--   mod:fit(train_iter, {eval_data = val_iter, num_epoch = 10})
--
-- The classes live in lua/luamx/module/: base.lua (fit/score/predict and helpers),
-- module.lua (Module over a DataParallelExecutorGroup), bucketing_module.lua,
-- sequential_module.lua (modules chained), lua_module.lua (modules written in Lua).
local M = {}

--- Adds mx.mod (Module, BucketingModule, BaseModule, SequentialModule, LuaModule,
--- LuaLossModule; PythonModule / PythonLossModule are the Lua ones) and mx.logging.
function M.install(mx)
  local base = require 'luamx.module.base'
  local module = require 'luamx.module.module'
  local bucketing = require 'luamx.module.bucketing_module'
  M.BaseModule = base.BaseModule
  M.Module = module.Module
  M.BucketingModule = bucketing.BucketingModule
  M.SequentialModule = require('luamx.module.sequential_module').SequentialModule
  local lua_module = require 'luamx.module.lua_module'
  M.LuaModule, M.LuaLossModule = lua_module.LuaModule, lua_module.LuaLossModule
  M.PythonModule, M.PythonLossModule = M.LuaModule, M.LuaLossModule -- MXNet's names
  mx.mod = M
  mx.module = M
  mx.logging = mx.logging or base.logging
  return M
end

return M
