-- spec/checkpoint_resave_spec.lua — re-saving an epoch that is already complete never
-- loses it: killed at any step of the re-save (simulated by a hook that raises between
-- the renames, and by the on-disk states a kill leaves, built by hand), the epoch loads
-- afterwards as the old set or the new one, and the backups of the old set
-- (`previous <name> <size> <crc> <backup>` in the pending manifest) are cleaned.
-- checkpoint_kill_spec does the same with real SIGKILLs.
local mx = require 'luamx'
local K = require 'ckpt.common'
local manifest = require 'luamx.manifest'
mx.logging.set_level('error')

local raises = require('helpers').raises
local read, write, exists, listdir, dead_pid = K.read, K.write, K.exists, K.listdir, K.dead_pid

-- The backups a manifest lists: {[name] = backup}.
local function backups_of(text)
  local b = {}
  for name, backup in text:gmatch('\nprevious ([^ \n]+) %d+ %x+ ([^ \n]+)') do b[name] = backup end
  return b
end

describe('re-saving a complete epoch', function()
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

  -- saves epoch 3 of kind with serial 5, then re-saves it with serial 9, "killed" after
  -- `step` renames (0: after the pending manifest, before any rename); returns the module
  local function killed_resave(kind, step)
    local mod = K.fresh(kind)
    K.fill(mod, 5)
    mod:save_checkpoint(prefix, 3, true)
    K.fill(mod, 9)
    manifest._after_rename = function(i) if i == step then error('killed (injected)', 0) end end
    raises(function() mod:save_checkpoint(prefix, 3, true) end, 'killed (injected)')
    manifest._after_rename = nil
    return mod
  end

  for _, kind in ipairs(K.KINDS) do
    for step, want in pairs {[0] = 5, [1] = 5, [2] = 9} do
      it(('%s: killed after %d of 2 renames, the epoch loads as the %s set, then re-saves cleanly')
        :format(kind, step, want == 5 and 'old' or 'new'), function()
        local mod = killed_resave(kind, step)
        local m = read(prefix .. '-0003.manifest')
        assert.truthy(m:find('\nstatus pending\n', 1, true), m)
        local backups = backups_of(m)
        assert.truthy(backups['net-0003.params'] and backups['net-0003.states'], m)
        for _, b in pairs(backups) do assert.truthy(exists(dir .. '/' .. b), b) end
        assert.equal('complete', (mx.model.checkpoint_status(prefix, 3)))
        assert.equal(want, K.serial_of(K.load(kind, prefix, 3), ('%s after %d renames'):format(kind, step)))
        -- the next save restores what it needs, replaces the epoch and cleans the backups
        K.fill(mod, 11)
        mod:save_checkpoint(prefix, 3, true)
        local m2 = read(prefix .. '-0003.manifest')
        assert.truthy(m2:find('\nstatus complete\n', 1, true), m2)
        assert.falsy(m2:find('previous', 1, true), m2)
        for _, b in pairs(backups) do assert.falsy(exists(dir .. '/' .. b), b) end
        for _, b in pairs(backups_of(m)) do assert.falsy(exists(dir .. '/' .. b), b) end
        assert.equal(11, K.serial_of(K.load(kind, prefix, 3), kind .. ' re-saved'))
      end)
    end
  end

  it('a re-save that is not interrupted leaves no backup', function()
    local mod = K.fresh('mod')
    K.fill(mod, 5)
    mod:save_checkpoint(prefix, 3, true)
    local before = listdir(dir)
    K.fill(mod, 9)
    mod:save_checkpoint(prefix, 3, true)
    assert.same(before, listdir(dir))
    assert.equal(9, K.serial_of(K.load('mod', prefix, 3), 'new'))
  end)

  it('a killed process\'s backups are restored before the next save cleans its temporaries', function()
    local mod = killed_resave('mod', 1) -- .params is new, the old one only in its backup
    local m = read(prefix .. '-0003.manifest')
    local pid = dead_pid()
    for name, b in pairs(backups_of(m)) do
      local nb = ('%s.tmp.%d.%d'):format(name, pid, 1000000001)
      assert(os.rename(dir .. '/' .. b, dir .. '/' .. nb))
      m = m:gsub((b:gsub('%p', '%%%0')), nb)
    end
    write(prefix .. '-0003.manifest', m)
    assert.equal(5, K.serial_of(K.load('mod', prefix, 3), 'old set in a dead process\'s backups'))
    -- another process re-saves epoch 3, killed before its renames: the old set is still there
    local other = K.fresh('mod')
    K.fill(other, 7)
    manifest._after_rename = function(i) if i == 0 then error('killed (injected)', 0) end end
    raises(function() other:save_checkpoint(prefix, 3, true) end, 'killed (injected)')
    manifest._after_rename = nil
    for name in pairs(backups_of(m)) do -- restored (or cleaned where the part was whole)
      assert.falsy(exists(('%s/%s.tmp.%d.1000000001'):format(dir, name, pid)), name)
    end
    assert.equal(5, K.serial_of(K.load('mod', prefix, 3), 'old set after a second interrupted re-save'))
    K.fill(mod, 11)
    mod:save_checkpoint(prefix, 3, true)
    assert.equal(11, K.serial_of(K.load('mod', prefix, 3), 're-saved'))
  end)

  it('killed while a later save restores the backups, the old set still loads', function()
    killed_resave('mod', 1)
    local m = read(prefix .. '-0003.manifest')
    -- the restore renames the backup of .params over it; the manifest still lists backups
    local b = backups_of(m)['net-0003.params']
    assert(os.rename(dir .. '/' .. b, prefix .. '-0003.params'))
    assert.equal('complete', (mx.model.checkpoint_status(prefix, 3)))
    assert.equal(5, K.serial_of(K.load('mod', prefix, 3), 'half restored'))
  end)

  it('mx.model.load_checkpoint reads the old .params from its backup', function()
    local model = require 'luamx.model'
    local log = model.log
    model.log = function() end
    mx.model.save_checkpoint(prefix, 1, K.mod_symbol(), {w = mx.nd.array({1, 2, 3})}, {})
    manifest._after_rename = function(i) if i == 1 then error('killed (injected)', 0) end end
    local ok, err = pcall(mx.model.save_checkpoint, prefix, 1, K.mod_symbol(), {w = mx.nd.array({4, 5, 6})}, {})
    manifest._after_rename = nil
    model.log = log
    assert(not ok and tostring(err):find('killed (injected)', 1, true), tostring(err))
    -- one part: its rename completes the new set
    local _, arg = mx.model.load_checkpoint(prefix, 1)
    assert.same({4, 5, 6}, arg.w:toflat())
    -- the old .params back in place of the new one and the new one gone: only the backup
    -- holds the whole old set
    local m = read(prefix .. '-0001.manifest')
    local bk = backups_of(m)['net-0001.params']
    write(prefix .. '-0001.params', 'torn')
    _, arg = mx.model.load_checkpoint(prefix, 1)
    assert.same({1, 2, 3}, arg.w:toflat())
    assert.truthy(bk and exists(dir .. '/' .. bk))
  end)

  it('a backup that differs from what the manifest lists is not taken: the epoch is incomplete', function()
    killed_resave('mod', 1)
    local m = read(prefix .. '-0003.manifest')
    write(dir .. '/' .. backups_of(m)['net-0003.params'], 'not the old params')
    assert.equal('pending', (mx.model.checkpoint_status(prefix, 3)))
    raises(function() K.load('mod', prefix, 3) end, 'Module.load: checkpoint', 'epoch 3 is incomplete',
      'neither all new nor all old')
  end)

  it('without a manifest, backups are ignored (the epoch is MXNet\'s: the names load)', function()
    killed_resave('mod', 1)
    os.remove(prefix .. '-0003.manifest')
    assert.equal('unmanaged', (mx.model.checkpoint_status(prefix, 3)))
    -- the names hold the new .params and the old .states: MXNet would load those
    local mod = mx.mod.Module.load(prefix, 3, false)
    assert.truthy(mod)
  end)

  it('a backup is a copy where hard links fail', function()
    local mod = K.fresh('mod')
    K.fill(mod, 5)
    mod:save_checkpoint(prefix, 3, true)
    local link = manifest._link
    manifest._link = function() return -1 end
    K.fill(mod, 9)
    manifest._after_rename = function(i) if i == 1 then error('killed (injected)', 0) end end
    local ok = pcall(mod.save_checkpoint, mod, prefix, 3, true)
    manifest._after_rename, manifest._link = nil, link
    assert.falsy(ok)
    assert.equal(5, K.serial_of(K.load('mod', prefix, 3), 'old set from copied backups'))
  end)

  it('the pending manifest\'s previous lines are checked (untrusted input)', function()
    K.fresh('mod'):save_checkpoint(prefix, 3, false)
    local head = 'luamx checkpoint 1\nstatus pending\npart net-0003.params 1 00000000\n'
    local cases = {
      {'previous net-0003.params 1 00000000 ../x.tmp.1.2\n', 'line 4: expected "part <name> <size> <crc32>", ' ..
        '"previous <name> <size> <crc32> [<backup>]"'},
      {'previous net-0003.params 1 00000000 net-0003.states\n', 'line 4: the backup of net-0003.params must be ' ..
        'named net-0003.params.tmp.<pid>.<n>, got "net-0003.states"'},
      {'previous net-0003.params 1 00000000 net-0003.params.tmp.x.2\n', 'line 4: the backup of net-0003.params must be named'},
      {'previous net-0002.params 1 00000000\n', 'line 4: previous part "net-0002.params" is not a file of this ' ..
        'checkpoint (expected net-0003.<ext>)'},
      {'previous net-0003.params.tmp.1.2 1 00000000\n', 'line 4: previous part "net-0003.params.tmp.1.2" is not a file'},
      {'previous net-0003.params 1 00000000 a b\n', 'line 4: expected "part <name>'},
      {'part net-0003.params 1 00000000 net-0003.params.tmp.1.2\n', 'line 4: expected "part <name>'},
    }
    for _, c in ipairs(cases) do
      write(prefix .. '-0003.manifest', head .. c[1])
      local st, why = mx.model.checkpoint_status(prefix, 3)
      assert.equal('damaged', st)
      assert.truthy(why:find(prefix .. '-0003.manifest: ' .. c[2], 1, true), why)
      raises(function() mx.mod.Module.load(prefix, 3) end, 'Module.load:', c[2], '(the manifest is damaged)')
    end
  end)
end)
