-- spec/ckpt/saver.lua <dir> <log> <serial0> — the child that checkpoint_kill_spec kills.
--
-- Resumes as a user would after a crash: for each of a Module ('mod') and a
-- BucketingModule ('bkt') checkpoint in <dir>, finds the newest complete epoch
-- (mx.model.checkpoint_status from 1 up), loads it with its optimizer states (checking
-- that the parameters and states hold one save's serial), then saves epochs E+1, E+2,
-- ... for both kinds, alternately, each twice (the second save re-saves an epoch that is
-- complete, in place), until killed (or after 60 s). Every parameter
-- and optimizer state array of a save is filled with that save's serial, so a mixed set
-- shows (serials count up from <serial0>). Appends to <log>: 'ready', then 'begin <kind> <epoch> <serial>' before,
-- 'between <kind> <epoch> <serial>' after the first rename of (it then waits 20 ms), and
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
-- dwell between the renames of a save's .params and .states (where a kill finds neither
-- set whole under the files' names), so that kills land there too; 'between' says so
local ffi = require 'ffi'
pcall(ffi.cdef, 'int usleep(unsigned int usec);')
local saving
require('luamx.manifest')._after_rename = function(i)
  if i == 1 then
    say('between ' .. saving)
    ffi.C.usleep(20000)
  end
end
say('ready')
local t0 = os.time()
while os.time() - t0 < 60 do -- until killed (60 s: a safety net if the parent is gone)
  for _, kind in ipairs(K.KINDS) do
    local e = next_epoch[kind]
    for _ = 1, 2 do -- the second save re-saves a complete epoch in place
      serial = serial + 1
      K.fill(mods[kind], serial)
      say(('begin %s %d %d'):format(kind, e, serial))
      saving = ('%s %d %d'):format(kind, e, serial)
      mods[kind]:save_checkpoint(dir .. '/' .. kind, e, true)
      say(('done %s %d %d'):format(kind, e, serial))
    end
    next_epoch[kind] = e + 1
  end
end
say('finished')
log:close()
