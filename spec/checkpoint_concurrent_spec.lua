-- spec/checkpoint_concurrent_spec.lua — loading an epoch while another process saves the
-- same epoch again. A load reads snapshots (hard links, or copies) of the parts it
-- verified, so the save's renames and the removal of its backups cannot change or remove
-- a file between the check and the read; a part replaced or removed before its snapshot
-- was taken makes the check start over (luamx.manifest.check). Also: the next epoch's save
-- removes the dead temporaries a re-save of a complete epoch left.
local mx = require 'luamx'
local K = require 'ckpt.common'
local manifest = require 'luamx.manifest'
mx.logging.set_level('error')

local raises = require('helpers').raises
local read, write, exists, listdir, dead_pid = K.read, K.write, K.exists, K.listdir, K.dead_pid
local SRC = os.getenv('LUAMX_SOURCE_DIR') or '.'

local function backups_of(text)
  local b = {}
  for name, backup in text:gmatch('\nprevious ([^ \n]+) %d+ %x+ ([^ \n]+)') do b[name] = backup end
  return b
end

describe('a load while the same epoch is saved again', function()
  local dir, prefix, link, retries
  before_each(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute('mkdir -p "' .. dir .. '"'))
    prefix = dir .. '/net'
    link, retries = manifest._link, {}
    manifest._on_retry = function(why) retries[#retries + 1] = why end
  end)
  after_each(function()
    manifest._link, manifest._on_retry, manifest._after_rename = link, nil, nil
    os.execute('rm -rf "' .. dir .. '"')
  end)

  -- the first snapshot of a load runs `between` first (another save landing between the
  -- check and the snapshot), then links as usual
  local function race_once(between)
    local done = false
    manifest._link = function(from, to)
      if not done then done = true between() end
      return link(from, to)
    end
  end

  it('a part replaced after the check: the load starts over and reads the new set', function()
    local mod = K.fresh('mod')
    K.fill(mod, 5)
    mod:save_checkpoint(prefix, 3, true)
    race_once(function() K.fill(mod, 9) mod:save_checkpoint(prefix, 3, true) end)
    assert.equal(9, K.serial_of(K.load('mod', prefix, 3), 'after a concurrent re-save'))
    assert.equal(1, #retries)
    assert.truthy(retries[1]:find('net-0003.params was replaced while it was checked', 1, true), retries[1])
  end)

  it('a backup removed after the check (the old code failed here): the load reads the new set', function()
    local mod = K.fresh('mod')
    K.fill(mod, 5)
    mod:save_checkpoint(prefix, 3, true)
    K.fill(mod, 9)
    manifest._after_rename = function(i) if i == 1 then error('killed (injected)', 0) end end
    raises(function() mod:save_checkpoint(prefix, 3, true) end, 'killed (injected)')
    manifest._after_rename = nil
    -- the old .params is only in its backup; a save completing now removes that backup
    assert.truthy(backups_of(read(prefix .. '-0003.manifest'))['net-0003.params'])
    race_once(function() K.fill(mod, 11) mod:save_checkpoint(prefix, 3, true) end)
    assert.equal(11, K.serial_of(K.load('mod', prefix, 3), 'after the backup went'))
    assert.equal(1, #retries)
    assert.truthy(retries[1]:find('disappeared after it was checked', 1, true), retries[1])
  end)

  it('a checkpoint that keeps changing is an error saying so, and leaves no snapshot', function()
    local mod = K.fresh('mod')
    K.fill(mod, 5)
    mod:save_checkpoint(prefix, 3, true)
    local before = listdir(dir)
    local serial = 5
    manifest._link = function(from, to)
      manifest._link = link -- the save's own backups link as usual
      serial = serial + 1
      K.fill(mod, serial)
      mod:save_checkpoint(prefix, 3, true)
      manifest._link = debug.getinfo(1, 'f').func
      return link(from, to)
    end
    raises(function() mx.mod.Module.load(prefix, 3, true) end,
      'Module.load: checkpoint "' .. prefix .. '" epoch 3 kept changing while it was read (another process is saving it?)')
    assert.equal(manifest._check_tries, #retries)
    manifest._link = link
    assert.same(before, listdir(dir))
    assert.equal(serial, K.serial_of(K.load('mod', prefix, 3), 'once it stops changing'))
  end)

  it('snapshots live until their file is read: .params at load, .states at init_optimizer', function()
    local mod = K.fresh('mod')
    K.fill(mod, 5)
    mod:save_checkpoint(prefix, 3, true)
    local before = listdir(dir)
    local loaded = mx.mod.Module.load(prefix, 3, true, {logger = false})
    local now = listdir(dir)
    assert.equal(#before + 1, #now)
    local snap
    for _, n in ipairs(now) do if n:match('^net%-0003%.states%.tmp%.%d+%.%d+$') then snap = n end end
    assert.truthy(snap, table.concat(now, ' '))
    -- the states are read from the snapshot, even when the name now holds another save's
    K.fill(mod, 9)
    mod:save_checkpoint(prefix, 3, true)
    loaded:bind{data_shapes = {{'data', {2, 4}}}, label_shapes = {{'softmax_label', {2}}}}
    loaded:init_optimizer{optimizer = 'sgd', optimizer_params = {learning_rate = 0.1, momentum = 0.9}}
    assert.same(before, listdir(dir))
    local arg = loaded:get_params()
    for _, v in pairs(arg) do assert.equal(5, v:toflat()[1]) end
    for _, st in pairs(loaded._updater.states) do
      for _, a in ipairs(mx.nd.is_ndarray(st) and {st} or st) do assert.equal(5, a:toflat()[1]) end
    end
  end)

  it('a module loaded with its states that never gets an optimizer removes its snapshot when collected', function()
    local mod = K.fresh('mod')
    mod:save_checkpoint(prefix, 3, true)
    local before = listdir(dir)
    local loaded = mx.mod.Module.load(prefix, 3, true, {logger = false})
    assert.equal(#before + 1, #listdir(dir))
    loaded = nil -- luacheck: ignore
    collectgarbage()
    collectgarbage()
    assert.same(before, listdir(dir))
  end)

  it('without links or a writable directory, the verified files are read in place', function()
    local mod = K.fresh('bkt')
    K.fill(mod, 5)
    mod:save_checkpoint(prefix, 3, true)
    local before = listdir(dir)
    local wa = manifest.write_atomic
    manifest._link = function() return -1 end
    manifest.write_atomic = function() error('read-only file system (injected)', 0) end
    local ok, got = pcall(function() return K.serial_of(K.load('bkt', prefix, 3), 'in place') end)
    manifest.write_atomic = wa
    assert(ok, got)
    assert.equal(5, got)
    assert.same(before, listdir(dir))
    assert.equal(0, #retries)
  end)

  it('mx.model.load_checkpoint reads a snapshot and removes it', function()
    local model = require 'luamx.model'
    local log = model.log
    model.log = function() end
    mx.model.save_checkpoint(prefix, 1, K.mod_symbol(), {w = mx.nd.array({1, 2, 3})}, {})
    local before = listdir(dir)
    race_once(function() mx.model.save_checkpoint(prefix, 1, K.mod_symbol(), {w = mx.nd.array({4, 5, 6})}, {}) end)
    local _, arg = mx.model.load_checkpoint(prefix, 1)
    model.log = log
    assert.same({4, 5, 6}, arg.w:toflat())
    assert.equal(1, #retries)
    assert.same(before, listdir(dir))
  end)

  -- Off by default (LUAMX_CKPT_STRESS=1 runs it). It found that after some thousands of
  -- loads in one process, the updater came back with no states although the .states file
  -- held them, and stayed so for every later load in that process: LuaJIT's compiled
  -- Updater:set_states (never with -joff). set_states now runs interpreted
  -- (luamx/optimizer.lua); with that, 16 runs of this case in a row passed where about
  -- half had failed. It stays off in CI until more runs show the cause is gone.
  local stress = os.getenv('LUAMX_CKPT_STRESS') == '1' and it or pending
  stress('a real process re-saving the epoch while this one loads it: every load is one whole save', function()
    assert(os.execute(('luajit "%s/spec/ckpt/resaver.lua" "%s" 4 > "%s/child.log" 2>&1 &'):format(SRC, dir, dir)))
    local t0 = os.time()
    while not exists(dir .. '/ready') do
      assert(os.time() - t0 < 60, 'the child did not save within 60 s: ' .. (exists(dir .. '/child.log') and read(dir .. '/child.log') or ''))
      os.execute('sleep 0.05')
    end
    local loads, serials = 0, {}
    while not exists(dir .. '/done') do
      local s = K.serial_of(K.load('mod', prefix, 3), 'load ' .. (loads + 1))
      serials[s] = true
      loads = loads + 1
      assert(os.time() - t0 < 120, 'the child did not finish')
    end
    local distinct = 0
    for _ in pairs(serials) do distinct = distinct + 1 end
    io.stderr:write(('\n# %d loads during the child\'s saves: %d distinct saves read, %d restarts\n')
      :format(loads, distinct, #retries))
    assert.truthy(loads >= 3, loads)
    assert.equal('', read(dir .. '/child.log'))
  end)
end)

describe('the next epoch\'s save', function()
  local dir, prefix
  before_each(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute('mkdir -p "' .. dir .. '"'))
    prefix = dir .. '/net'
  end)
  after_each(function()
    manifest._after_rename = nil
    os.execute('rm -rf "' .. dir .. '"')
  end)

  it('removes the dead temporaries of a complete epoch before it, never a live process\'s', function()
    local mod = K.fresh('mod')
    mod:save_checkpoint(prefix, 3, true)
    local pid = dead_pid()
    local dead = {('net-0003.params.tmp.%d.1000000001'):format(pid), ('net-0003.states.tmp.%d.1000000002'):format(pid),
      ('net-0003.manifest.tmp.%d.1000000003'):format(pid)}
    local live = ('net-0003.params.tmp.%d.1000000004'):format(require('ffi').C.getpid())
    for _, n in ipairs(dead) do write(dir .. '/' .. n, 'left by a killed re-save') end
    write(dir .. '/' .. live, 'a live process\'s')
    mod:save_checkpoint(prefix, 4, true)
    for _, n in ipairs(dead) do assert.falsy(exists(dir .. '/' .. n), n) end
    assert.truthy(exists(dir .. '/' .. live))
    os.remove(dir .. '/' .. live)
  end)

  it('keeps the backups a pending epoch before it still loads from', function()
    local mod = K.fresh('mod')
    K.fill(mod, 5)
    mod:save_checkpoint(prefix, 3, true)
    K.fill(mod, 9)
    manifest._after_rename = function(i) if i == 1 then error('killed (injected)', 0) end end
    raises(function() mod:save_checkpoint(prefix, 3, true) end, 'killed (injected)')
    manifest._after_rename = nil
    -- as if a killed process had made them
    local m = read(prefix .. '-0003.manifest')
    local pid = dead_pid()
    for name, b in pairs(backups_of(m)) do
      local nb = ('%s.tmp.%d.%d'):format(name, pid, 1000000001)
      assert(os.rename(dir .. '/' .. b, dir .. '/' .. nb))
      m = m:gsub((b:gsub('%p', '%%%0')), nb)
    end
    write(prefix .. '-0003.manifest', m)
    K.fill(mod, 12)
    mod:save_checkpoint(prefix, 4, true)
    for _, b in pairs(backups_of(m)) do assert.truthy(exists(dir .. '/' .. b), b) end
    assert.equal(5, K.serial_of(K.load('mod', prefix, 3), 'epoch 3 after epoch 4 was saved'))
    assert.equal(12, K.serial_of(K.load('mod', prefix, 4), 'epoch 4'))
  end)
end)
