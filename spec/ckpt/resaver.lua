-- spec/ckpt/resaver.lua <dir> <seconds>: the child of checkpoint_concurrent_spec. Saves
-- epoch 3 of the 'mod' model in <dir>/net over and over (each save replaces the complete
-- one before, with a new serial in every parameter and optimizer state array), writing
-- <dir>/ready after the first save and <dir>/done when <seconds> have passed.
local mx = require 'luamx'
local K = require 'ckpt.common'
mx.logging.set_level('error')

local dir, secs = arg[1], tonumber(arg[2])
local function touch(name) local f = assert(io.open(dir .. '/' .. name, 'w')) f:close() end
local mod = K.fresh('mod')
local serial, t0 = 100, os.time()
repeat
  serial = serial + 1
  K.fill(mod, serial)
  mod:save_checkpoint(dir .. '/net', 3, true)
  if serial == 101 then touch('ready') end
until os.time() - t0 >= secs
touch('done')
