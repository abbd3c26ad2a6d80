-- spec/ckpt/saver.lua <dir> <log> <serial0> — the child that checkpoint_kill_spec kills.
--
-- Resumes as a user would after a crash: for each of a Module ('mod') and a
-- BucketingModule ('bkt') checkpoint in <dir>, finds the newest complete epoch
-- (mx.model.checkpoint_status from 1 up), loads it with its optimizer states (checking
-- that the parameters and states hold one save's serial), then saves epochs E+1, E+2,
-- ... for both kinds, alternately, until killed (or after 60 s). Every parameter
-- and optimizer state array of a save is filled with that save's serial, so a mixed set
-- shows (serials count up from <serial0>). Appends to <log>: 'ready', then 'begin <kind> <epoch> <serial>' before and
-- 'done <kind> <epoch> <serial>' after each save (flushed: a SIGKILL loses none).
local mx = require 'luamx'
local K = require 'ckpt.common'
mx.logging.set_level('error')
require('luamx.model').log = function() end

local dir, logpath = arg[1], arg[2]
local log = assert(io.open(logpath, 'a'))
local function say(s) log:write(s, '\n') log:flush() end

local serial = tonumber(arg[3] or '1')
local mods, next_epoch = {}, {}
for _, kind in ipairs(K.KINDS) do
  local prefix = dir .. '/' .. kind
  local e = K.newest_complete(prefix)
  local mod
  if e then
    mod = K.load(kind, prefix, e)
    local s = K.serial_of(mod, ('%s epoch %d'):format(kind, e))
    assert(s > 0, 'no serial')
  else
    mod = K.fresh(kind)
  end
  mods[kind], next_epoch[kind] = mod, (e or 0) + 1
end
say('ready')
local t0 = os.time()
while os.time() - t0 < 60 do -- until killed (60 s: a safety net if the parent is gone)
  for _, kind in ipairs(K.KINDS) do
    local e = next_epoch[kind]
    serial = serial + 1
    K.fill(mods[kind], serial)
    say(('begin %s %d %d'):format(kind, e, serial))
    mods[kind]:save_checkpoint(dir .. '/' .. kind, e, true)
    say(('done %s %d %d'):format(kind, e, serial))
    next_epoch[kind] = e + 1
  end
end
say('finished')
log:close()
