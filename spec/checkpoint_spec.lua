-- spec/checkpoint_spec.lua — what makes checkpoints crash-safe, piece by piece: the
-- random state (mx.random.get_state / set_state), stale temporaries of killed saves, and
-- the manifest that commits a checkpoint (luamx.manifest) with its load-time checks.
-- checkpoint_kill_spec kills real saves; checkpoint_resume_spec resumes training.
local ffi = require 'ffi'
local mx = require 'luamx'
local K = require 'ckpt.common'
local C = mx.capi.C
mx.logging.set_level('error')

pcall(ffi.cdef, [[
  int getpid(void);
  int kill(int pid, int sig);
]])
local libc = ffi.C

local raises = require('helpers').raises
local read, write, exists, listdir, dead_pid = K.read, K.write, K.exists, K.listdir, K.dead_pid

describe('the random state', function()
  it('set_state repeats the draws that followed get_state', function()
    mx.random.seed(3)
    mx.nd.random.uniform(0, 1, {5})
    local st = mx.random.get_state()
    assert.equal('int64', st.dtype)
    assert.same({6}, st.shape)
    local a = mx.nd.random.uniform(0, 1, {7}):toflat()
    local b = mx.nd.random.normal(0, 1, {3}):toflat()
    mx.random.seed(99)
    mx.random.set_state(st)
    assert.same(a, mx.nd.random.uniform(0, 1, {7}):toflat())
    assert.same(b, mx.nd.random.normal(0, 1, {3}):toflat())
  end)

  it('set_state repeats Dropout masks, which a plain seed-less run does not', function()
    local x = mx.sym.Variable('x')
    local e = mx.sym.Dropout{data = x, p = 0.5}:simple_bind{ctx = mx.cpu(), x = {64}, grad_req = 'null'}
    e.arg_dict.x:fill(1)
    local st = mx.random.get_state()
    e:forward{is_train = true}
    local m1 = e.outputs[1]:toflat()
    e:forward{is_train = true}
    local m2 = e.outputs[1]:toflat()
    assert.are_not.same(m1, m2)
    mx.random.set_state(st)
    e:forward{is_train = true}
    assert.same(m1, e.outputs[1]:toflat())
  end)

  it('checks what it restores', function()
    raises(function() mx.random.set_state(mx.nd.zeros({6})) end,
      'mx.random.set_state: state must be an int64 NDArray of 6 elements (from get_state), got float32 of 6 elements')
    raises(function() mx.random.set_state(42) end, 'mx.random.set_state:', 'got number')
    raises(function() mx.random.set_state(mx.nd.zeros({6}, {dtype = 'int64'})) end,
      'lmx_random_set_state: state words 1..4 (the CPU generator) are all zero')
    local buf = ffi.new('uint64_t[6]')
    assert.equal(C.LMX_ERR_ARG, C.lmx_random_get_state(buf, 5))
    assert.truthy(ffi.string(C.lmx_last_error()):find('lmx_random_get_state: n must be >= 6, got 5', 1, true))
    assert.equal(C.LMX_ERR_ARG, C.lmx_random_set_state(buf, 7))
    assert.truthy(ffi.string(C.lmx_last_error()):find('lmx_random_set_state: n must be 6, got 7', 1, true))
    -- the generator still works after the refusals
    assert.equal(3, #mx.nd.random.uniform(0, 1, {3}):toflat())
  end)

  it('travels in the optimizer states and is restored with them', function()
    local mod = K.fresh('mod')
    local states = mod._updater:get_states()
    assert.truthy(states.random_state)
    local after = mx.nd.random.uniform(0, 1, {4}):toflat()
    mod._updater:set_states(states)
    assert.same(after, mx.nd.random.uniform(0, 1, {4}):toflat())
    -- a states file is untrusted: a bad random_state is named, and changes nothing
    local st = mx.random.get_state()
    states.random_state = mx.nd.zeros({6})
    raises(function() mod._updater:set_states(states) end,
      'set_states: entry random_state must be an int64 array of 6 elements (mx.random.get_state()), got float32 of 6 elements')
    states.random_state = mx.nd.zeros({2}, {dtype = 'int64'})
    raises(function() mod._updater:set_states(states) end, 'got int64 of 2 elements')
    assert.same(st:toflat(), mx.random.get_state():toflat())
  end)
end)

describe('temporaries of killed saves', function()
  local dir
  before_each(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute('mkdir -p "' .. dir .. '"'))
  end)
  after_each(function() os.execute('rm -rf "' .. dir .. '"') end)

  it('the next save of the same file removes those of dead processes, and only those', function()
    local dead, me = dead_pid(), libc.getpid()
    local names = {
      stale = ('x.params.tmp.%d.3'):format(dead),
      stale2 = ('x.params.tmp.%d.0'):format(dead),
      mine = ('x.params.tmp.%d.9'):format(me),      -- a live process (this one)
      init = 'x.params.tmp.1.2',                    -- pid 1 is alive
      other = ('y.params.tmp.%d.1'):format(dead),   -- another target
      longer = ('xx.params.tmp.%d.1'):format(dead), -- another target sharing a suffix
      odd1 = 'x.params.tmp.abc.1', odd2 = ('x.params.tmp.%d.1x'):format(dead),
      odd3 = ('x.params.tmp.%d'):format(dead), odd4 = 'x.params.tmp',
    }
    for _, n in pairs(names) do write(dir .. '/' .. n, 'partial') end
    mx.nd.save(dir .. '/x.params', {mx.nd.array({1, 2})})
    assert.is_false(exists(dir .. '/' .. names.stale))
    assert.is_false(exists(dir .. '/' .. names.stale2))
    for k, n in pairs(names) do
      if k ~= 'stale' and k ~= 'stale2' then assert.is_true(exists(dir .. '/' .. n), n) end
    end
    -- the file itself is the new one, never a temporary
    assert.same({1, 2}, mx.nd.load(dir .. '/x.params')[1]:toflat())
    -- the C entry point counts what it removes
    local removed = ffi.new('int[1]')
    assert.equal(0, C.lmx_file_clean_temporaries(dir .. '/y.params', removed))
    assert.equal(1, removed[0])
    assert.is_false(exists(dir .. '/' .. names.other))
    assert.equal(0, C.lmx_file_clean_temporaries(dir .. '/nowhere/z', removed))
    assert.equal(0, removed[0])
  end)

  it('symbol and manifest files clean theirs too', function()
    local dead = dead_pid()
    local t1 = ('%s/m-symbol.json.tmp.%d.4'):format(dir, dead)
    local t2 = ('%s/m-0001.manifest.tmp.%d.4'):format(dir, dead)
    write(t1, '{')
    write(t2, 'luamx')
    local mod = K.fresh('mod')
    mod:save_checkpoint(dir .. '/m', 1)
    assert.is_false(exists(t1))
    assert.is_false(exists(t2))
    assert.same({'m-0001.manifest', 'm-0001.params', 'm-symbol.json'}, listdir(dir))
  end)

  it('lmx_file_write_atomic checks its arguments and names the file on failure', function()
    assert.equal(C.LMX_ERR_ARG, C.lmx_file_write_atomic('', 'x', 1))
    assert.truthy(ffi.string(C.lmx_last_error()):find('lmx_file_write_atomic: path must not be empty', 1, true))
    assert.equal(C.LMX_ERR_IO, C.lmx_file_write_atomic(dir .. '/no/such', 'x', 1))
    assert.truthy(ffi.string(C.lmx_last_error()):find(dir .. '/no/such: cannot create temporary file ' .. dir .. '/no/such.tmp.', 1, true))
    assert.equal(0, C.lmx_file_write_atomic(dir .. '/ok', 'abc', 3))
    assert.equal('abc', read(dir .. '/ok'))
    local crc, size = ffi.new('uint32_t[1]'), ffi.new('int64_t[1]')
    assert.equal(0, C.lmx_file_crc32(dir .. '/ok', crc, size))
    assert.equal(0x352441c2, tonumber(crc[0])) -- CRC-32 of "abc"
    assert.equal(3, tonumber(size[0]))
    assert.equal(C.LMX_ERR_IO, C.lmx_file_crc32(dir, crc, size))
    assert.truthy(ffi.string(C.lmx_last_error()):find('lmx_file_crc32: ' .. dir .. ': not a regular file', 1, true))
  end)
end)

describe('the checkpoint manifest', function()
  local dir, prefix
  before_each(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute('mkdir -p "' .. dir .. '"'))
    prefix = dir .. '/net'
  end)
  after_each(function() os.execute('rm -rf "' .. dir .. '"') end)

  local function saved(kind, states)
    local mod = K.fresh(kind)
    mod:save_checkpoint(prefix, 3, states)
    return mod
  end

  it('is written last and lists every part with its size and CRC-32', function()
    saved('mod', true)
    local m = read(prefix .. '-0003.manifest')
    assert.truthy(m:find('^luamx checkpoint 1\nstatus complete\npart net%-0003%.params %d+ %x+\npart net%-0003%.states %d+ %x+\nshared net%-symbol%.json\n$'), m)
    assert.equal('complete', mx.model.checkpoint_status(prefix, 3))
    local back = K.load('mod', prefix, 3)
    assert.truthy(back.optimizer_initialized)
  end)

  it('BucketingModule: the bucket symbols and .buckets are shared parts', function()
    saved('bkt', true)
    local m = read(prefix .. '-0003.manifest')
    for _, p in ipairs {'part net-0003.params', 'part net-0003.states', 'shared net.buckets',
                        'shared net-3-symbol.json', 'shared net-6-symbol.json'} do
      assert.truthy(m:find(p, 1, true), p)
    end
    K.load('bkt', prefix, 3)
    os.remove(prefix .. '.buckets')
    assert.equal('damaged', mx.model.checkpoint_status(prefix, 3))
    raises(function() K.load('bkt', prefix, 3) end,
      'BucketingModule.load: checkpoint', 'epoch 3 is damaged: ', 'lists ' .. prefix .. '.buckets, which does not exist')
  end)

  it('an interrupted save (pending) does not load, and says so', function()
    saved('mod', true)
    local m = read(prefix .. '-0003.manifest')
    -- killed before the renames of a first save: the new parts are not in place
    write(prefix .. '-0003.manifest', (m:gsub('status complete', 'status pending'):gsub('(part net%-0003%.params %d+ )%x+', '%100000000')))
    local st, why = mx.model.checkpoint_status(prefix, 3)
    assert.equal('pending', st)
    assert.truthy(why:find('did not finish', 1, true))
    raises(function() mx.mod.Module.load(prefix, 3, true) end,
      ('Module.load: checkpoint "%s" epoch 3 is incomplete: %s-0003.manifest says the save of this checkpoint did not finish'):format(prefix, prefix),
      'neither all new nor all old', 'load an earlier epoch')
    raises(function() mx.model.load_checkpoint(prefix, 3) end, 'load_checkpoint: checkpoint', 'is incomplete')
    -- killed after the renames, before the final rewrite: every new part is in place
    write(prefix .. '-0003.manifest', (m:gsub('status complete', 'status pending')))
    assert.equal('complete', mx.model.checkpoint_status(prefix, 3))
    K.load('mod', prefix, 3)
  end)

  it('an interrupted re-save of an epoch keeps the previous checkpoint of that epoch', function()
    local mod = saved('mod', true)
    local old = read(prefix .. '-0003.manifest')
    K.fill(mod, 9)
    mod:save_checkpoint(prefix, 3, true)
    -- as if killed before the renames: the new parts staged, the old ones in place
    local pending = 'luamx checkpoint 1\nstatus pending\npart net-0003.params 10 0badf00d\n' ..
      old:gsub('^.-status complete\n', ''):gsub('part ', 'previous ')
    local newparams, newstates = read(prefix .. '-0003.params'), read(prefix .. '-0003.states')
    K.fill(mod, 5) -- recreate the old files: save them under another prefix and move them
    mod:save_checkpoint(dir .. '/old', 3, true)
    write(prefix .. '-0003.manifest', pending)
    assert.equal('pending', (mx.model.checkpoint_status(prefix, 3))) -- neither set matches
    os.rename(dir .. '/old-0003.params', prefix .. '-0003.params')
    os.rename(dir .. '/old-0003.states', prefix .. '-0003.states')
    local m2 = read(dir .. '/old-0003.manifest'):gsub('old%-', 'net-')
    write(prefix .. '-0003.manifest', 'luamx checkpoint 1\nstatus pending\npart net-0003.params 10 0badf00d\n' ..
      m2:gsub('^.-status complete\n', ''):gsub('part ', 'previous '))
    assert.equal('complete', (mx.model.checkpoint_status(prefix, 3))) -- the previous set
    assert.equal(5, K.serial_of(K.load('mod', prefix, 3), 'old set'))
    -- half new, half old: incomplete
    write(prefix .. '-0003.params', newparams)
    assert.equal('pending', (mx.model.checkpoint_status(prefix, 3)))
    assert.truthy(#newstates > 0)
  end)

  it('a part replaced after the save is found (a .states from another save)', function()
    saved('mod', true)
    local other = dir .. '/other'
    local mod2 = K.fresh('mod')
    K.fill(mod2, 5)
    mod2:save_checkpoint(other, 3, true)
    os.rename(other .. '-0003.states', prefix .. '-0003.states')
    assert.equal('damaged', mx.model.checkpoint_status(prefix, 3))
    raises(function() mx.mod.Module.load(prefix, 3, true) end,
      'Module.load: checkpoint', 'epoch 3 is damaged: ', prefix .. '-0003.states is not the file ' .. prefix .. '-0003.manifest recorded',
      'it was replaced after the checkpoint was saved')
  end)

  it('asking for states a checkpoint was saved without fails at load, not at init_optimizer', function()
    saved('mod', true)
    saved('mod', false) -- the same epoch again, without states: the old .states stays
    assert.is_true(exists(prefix .. '-0003.states'))
    raises(function() mx.mod.Module.load(prefix, 3, true) end,
      'Module.load: checkpoint', 'has no net-0003.states', 'it was saved without it')
    mx.mod.Module.load(prefix, 3, false) -- without states it loads
  end)

  it('a checkpoint without a manifest (MXNet\'s) loads as MXNet would', function()
    saved('mod', true)
    os.remove(prefix .. '-0003.manifest')
    assert.equal('unmanaged', mx.model.checkpoint_status(prefix, 3))
    K.load('mod', prefix, 3)
    os.remove(prefix .. '-0003.states')
    raises(function() mx.mod.Module.load(prefix, 3, true) end,
      'Module.load: ' .. prefix .. '-0003.states does not exist')
    local st, why = mx.model.checkpoint_status(prefix, 4)
    assert.equal('missing', st)
    assert.equal(prefix .. '-0004.params does not exist', why)
    raises(function() mx.mod.Module.load(prefix, 4) end, 'Module.load: checkpoint', 'epoch 4: ' .. prefix .. '-0004.params does not exist')
  end)

  it('a damaged manifest is an error naming its line, and names nothing outside its directory', function()
    saved('mod', false)
    local cases = {
      {'garbage', 'line 1: expected "luamx checkpoint 1"'},
      {'luamx checkpoint 1\n', 'line 2: the file ends early'},
      {'luamx checkpoint 1\nstatus maybe\n', 'line 2: expected "status pending" or "status complete"'},
      {'luamx checkpoint 1\nstatus complete\npart ../x 3 00000000\n', 'line 3: expected "part <name> <size> <crc32>"'},
      {'luamx checkpoint 1\nstatus complete\nshared /etc/passwd\n', 'line 3:'},
      {'luamx checkpoint 1\nstatus complete\npart net-0003.params 1 zz\n', 'line 3:'},
    }
    for _, c in ipairs(cases) do
      write(prefix .. '-0003.manifest', c[1])
      local st, why = mx.model.checkpoint_status(prefix, 3)
      assert.equal('damaged', st)
      assert.truthy(why:find(prefix .. '-0003.manifest: ' .. c[2], 1, true), why)
      raises(function() mx.mod.Module.load(prefix, 3) end, 'Module.load:', c[2], '(the manifest is damaged)')
    end
  end)

  it('mx.model.save_checkpoint / load_checkpoint commit and check the same way', function()
    local w = mx.nd.array({1, 2, 3})
    local model = require 'luamx.model'
    local old = model.log
    model.log = function() end
    mx.model.save_checkpoint(prefix, 1, K.mod_symbol(), {w = w}, {})
    model.log = old
    assert.equal('complete', mx.model.checkpoint_status(prefix, 1))
    local sym, arg = mx.model.load_checkpoint(prefix, 1)
    assert.truthy(sym)
    assert.same({1, 2, 3}, arg.w:toflat())
    write(prefix .. '-0001.params', 'torn')
    raises(function() mx.model.load_checkpoint(prefix, 1) end, 'load_checkpoint: checkpoint', 'is not the file')
    raises(function() mx.model.save_checkpoint(prefix, 1.5) end, 'save_checkpoint: epoch must be a non-negative integer, got 1.5')
    raises(function() mx.model.checkpoint_status(prefix) end, 'checkpoint_status: epoch must be a number, got nil')
  end)

  it('a save that fails before its renames leaves the epoch as it was, and no staging file', function()
    local mod = saved('mod', true)
    local before = listdir(dir)
    mod.save_optimizer_states = function() error('disk full (injected)') end
    raises(function() mod:save_checkpoint(prefix, 3, true) end, 'disk full (injected)')
    assert.same(before, listdir(dir))
    assert.equal('complete', mx.model.checkpoint_status(prefix, 3))
    raises(function() mod:save_checkpoint(prefix, 4, true) end, 'disk full (injected)')
    assert.equal('missing', mx.model.checkpoint_status(prefix, 4))
    assert.same(before, listdir(dir))
  end)

  it('a failed rename leaves the epoch pending, never complete', function()
    local mod = K.fresh('mod')
    os.execute('mkdir "' .. prefix .. '-0003.params"') -- the rename over it fails
    raises(function() mod:save_checkpoint(prefix, 3, true) end, 'save_checkpoint: cannot rename ' .. prefix .. '-0003.params.tmp.',
      'to ' .. prefix .. '-0003.params: ')
    assert.equal('pending', mx.model.checkpoint_status(prefix, 3))
    for _, name in ipairs(listdir(dir)) do assert.falsy(name:find('.tmp.', 1, true), name) end
    raises(function() mod:save_checkpoint(prefix, 3.5) end, 'save_checkpoint: epoch must be a non-negative integer, got 3.5')
  end)
end)
