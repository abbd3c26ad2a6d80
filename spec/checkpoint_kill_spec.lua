-- spec/checkpoint_kill_spec.lua — checkpoints survive SIGKILL at any instant.
--
-- A child (spec/ckpt/saver.lua) resumes from the newest complete checkpoint of a Module
-- and of a BucketingModule and saves further epochs of both in a loop; it is killed
-- (SIGKILL) at a random moment, KILLS times (most land inside a save: the loop does
-- nothing else). After every kill: each epoch is 'complete' or 'pending' (never
-- 'damaged', never 'unmanaged': no part is taken for a checkpoint without its
-- manifest), the newest complete epoch is at least the last one the child reported done
-- and at most the last it began, it loads with its optimizer states and
-- holds one save's serial in every array (no mixed set), every pending epoch fails to
-- load with a message saying it is incomplete, and the temporaries the previous kill
-- left behind are gone once the next run has saved the same file again. The child saves
-- every epoch twice, the second time over the complete first save: an epoch that was
-- ever complete is never lost (it stays 'complete' and loads as one of its saves, old or
-- new, whatever the kill interrupted), and some kills must land in such re-saves.
local ffi = require 'ffi'
local mx = require 'luamx'
local K = require 'ckpt.common'
mx.logging.set_level('error')

pcall(ffi.cdef, [[
  int posix_spawnp(int *pid, const char *file, const void *file_actions, const void *attrp,
                   char *const argv[], char *const envp[]);
  int waitpid(int pid, int *status, int options);
  int kill(int pid, int sig);
  int usleep(unsigned int usec);
  extern char **environ;
]])
local libc = ffi.C

local KILLS = tonumber(os.getenv('CKPT_KILLS') or '50')
local SRC = os.getenv('LUAMX_SOURCE_DIR') or '.'

local function spawn(args)
  local argv = ffi.new('char *[?]', #args + 1)
  local keep = {}
  for i, a in ipairs(args) do
    keep[i] = ffi.new('char[?]', #a + 1, a)
    argv[i - 1] = keep[i]
  end
  local pid = ffi.new('int[1]')
  local rc = libc.posix_spawnp(pid, args[1], nil, nil, argv, libc.environ)
  assert(rc == 0, 'posix_spawnp failed: ' .. rc)
  return pid[0]
end

local function wait(pid)
  local st = ffi.new('int[1]')
  assert(libc.waitpid(pid, st, 0) == pid)
  return st[0]
end

local function lines(path)
  local out = {}
  local f = io.open(path, 'rb')
  if not f then return out end
  for l in f:lines() do out[#out + 1] = l end
  f:close()
  return out
end

local function listdir(dir)
  local p = io.popen('ls -A "' .. dir .. '"')
  local names = {}
  for l in p:lines() do names[#names + 1] = l end
  p:close()
  return names
end

local function exists(path)
  local f = io.open(path, 'rb')
  if f then f:close() end
  return f ~= nil
end

-- The kind ('mod'/'bkt') and the epoch (nil for a shared file) of a checkpoint file name.
local function target_of(name)
  local kind, rest = name:match('^(%a+)(.*)$')
  local e = rest:match('^%-(%d%d%d%d)%.%a+$')
  return kind, e and tonumber(e)
end

describe('checkpoints killed at random moments', function()
  local dir

  before_each(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute('mkdir -p "' .. dir .. '"'))
  end)
  after_each(function() os.execute('rm -rf "' .. dir .. '"') end)

  it(('survive %d SIGKILLs of a process saving Module and BucketingModule checkpoints'):format(KILLS), function()
    math.randomseed(tonumber(os.getenv('CKPT_SEED') or os.time()))
    local log = dir .. '/log'
    local saves = dir .. '/ckpt'
    assert(os.execute('mkdir -p "' .. saves .. '"'))
    local pending_seen, temps_seen, temps_cleaned, mid_save, mid_resave, between_renames = 0, 0, 0, 0, 0, 0
    local ever_done, serials = {}, {} -- [kind][epoch] = true; [kind .. epoch][serial] = true
    local prev_temps = {}
    local reached = 0
    for run = 1, KILLS do
      os.remove(log)
      local pid = spawn {'luajit', SRC .. '/spec/ckpt/saver.lua', saves, log, tostring(run * 100000)}
      -- wait for the child to be ready (it loaded the newest complete checkpoints)
      local t = 0
      while true do
        local l = lines(log)
        if l[1] == 'ready' then break end
        libc.usleep(2000)
        t = t + 1
        if t >= 15000 then
          libc.kill(pid, 9)
          wait(pid)
          error('the child did not get ready within 30 s')
        end
      end
      libc.usleep(math.random(0, 300000)) -- a save takes tens of ms (fsync)
      assert(libc.kill(pid, 9) == 0)
      local status = wait(pid)
      local l = lines(log)
      assert(l[#l] ~= 'finished', 'the child stopped saving before the kill (60 s passed)')
      -- an exit other than by SIGKILL is a failure of the child (its stderr is the test's)
      assert(status % 128 == 9, ('run %d: the child exited with status %d, not by SIGKILL'):format(run, status))
      if (l[#l] or ''):match('^begin ') or (l[#l] or ''):match('^between ') then mid_save = mid_save + 1 end
      local began, done = {}, {}
      for i, line in ipairs(l) do
        local what, kind, e, s = line:match('^(%a+) (%a+) (%d+) (%d+)$')
        if what then
          ever_done[kind] = ever_done[kind] or {}
          serials[kind .. e] = serials[kind .. e] or {}
          serials[kind .. e][tonumber(s)] = true
          if what == 'done' then ever_done[kind][tonumber(e)] = true
          elseif i == #l and ever_done[kind][tonumber(e)] then
            mid_resave = mid_resave + 1
            if what == 'between' then between_renames = between_renames + 1 end
          end
        end
        if what == 'begin' then began[kind] = {tonumber(e), tonumber(s), began[kind]}
        elseif what == 'done' then done[kind] = tonumber(e) end
        if what then began[kind .. e] = began[kind .. e] or {} ; began[kind .. e][tonumber(s)] = true end
      end
      for _, kind in ipairs(K.KINDS) do
        local prefix = saves .. '/' .. kind
        local newest, statuses = K.newest_complete(prefix)
        for e in pairs(ever_done[kind] or {}) do
          assert(statuses[e] == 'complete', ('run %d: %s epoch %d was complete and is now %s: a re-save lost it')
            :format(run, kind, e, tostring(statuses[e])))
          if began[kind .. e] then -- saved in this run: it loads as one of its saves
            local s = K.serial_of(K.load(kind, prefix, e), ('run %d: %s epoch %d'):format(run, kind, e))
            assert(serials[kind .. e][s], ('run %d: %s epoch %d holds serial %d, not one of its saves'):format(run, kind, e, s))
          end
        end
        for e, st in pairs(statuses) do
          assert(st == 'complete' or st == 'pending', ('run %d: %s epoch %d is %s'):format(run, kind, e, st))
          if st == 'pending' then
            pending_seen = pending_seen + 1
            local ok, err = pcall(K.load, kind, prefix, e)
            assert(not ok, ('run %d: pending %s epoch %d loaded'):format(run, kind, e))
            assert(tostring(err):find(('epoch %d is incomplete'):format(e), 1, true), tostring(err))
          end
        end
        if done[kind] then
          assert(newest and newest >= done[kind],
            ('run %d: %s: newest complete epoch %s, but the child finished saving %d'):format(run, kind, tostring(newest), done[kind]))
        end
        if newest then
          if began[kind] then assert(newest <= began[kind][1], ('run %d: %s epoch %d complete but never begun'):format(run, kind, newest)) end
          local mod = K.load(kind, prefix, newest)
          local s = K.serial_of(mod, ('run %d: %s epoch %d'):format(run, kind, newest))
          -- the serial is that of a save of this epoch (this run's or an earlier run's)
          assert(s % 100000 ~= 0 and s >= 100000, ('run %d: serial %s'):format(run, s))
          reached = math.max(reached, newest)
        end
      end
      -- temporaries: those left by the previous kill are gone where this run saved again
      local temps = {}
      for _, name in ipairs(listdir(saves)) do
        -- <target>.tmp.<pid>.<n>, or a temporary of one (a staging file's own temporary)
        local target = name:match('^(.-)%.tmp%.%d+%.%d+')
        if target and name:sub(#target + 1):gsub('%.tmp%.%d+%.%d+', '') == '' then
          temps[name] = target
          temps_seen = temps_seen + 1
        end
        assert(not name:find('%.tmp$'), 'a temporary without a pid: ' .. name)
      end
      for name, target in pairs(prev_temps) do
        local kind, e = target_of(target)
        local resaved = done[kind] and (e == nil or (began[kind .. e] ~= nil and done[kind] >= e))
        if resaved then
          assert(not exists(saves .. '/' .. name), ('run %d: stale temporary %s survived a new save of %s'):format(run, name, target))
          temps_cleaned = temps_cleaned + 1
        end
      end
      prev_temps = temps
    end
    -- the kills landed inside saves, and left temporaries that later saves removed
    assert(mid_save >= KILLS / 2, ('only %d of %d kills interrupted a save'):format(mid_save, KILLS))
    assert(temps_seen > 0, 'no kill left a temporary: the test did not test')
    assert(between_renames > 0, 'no kill landed between the renames of a re-save of a complete epoch: the test did not test')
    assert(temps_cleaned > 0, ('no stale temporary was cleaned (%d seen)'):format(temps_seen))
    assert(reached >= 2, 'the children never got past epoch 1')
    io.stderr:write(('\n# %d kills, %d of them inside a save (%d inside a re-save of a complete epoch, %d of those ' ..
      'between its renames; none lost): ' ..
      '%d pending epochs seen, %d temporaries seen, %d cleaned by a later save, epoch %d reached\n')
      :format(KILLS, mid_save, mid_resave, between_renames, pending_seen, temps_seen, temps_cleaned, reached))
  end)
end)
