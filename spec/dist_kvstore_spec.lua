-- dist_sync / dist_device_sync over MPI with real processes (mpirun -np 2 and 3 on
-- loopback): broadcast at init and all-reduce in every dtype, barrier, fused and chunked
-- pushpull with an updater, a large key without one (worker script:
-- spec/dist/kv_basics.lua), and the same script as one worker in a plain luajit. Skipped with the reason where mpirun or the plugin is
-- missing.
local D = require 'dist_run'

local skip = D.skip_reason()

local function expect_ok(np, rc, out, checks)
  assert.are.equal(0, rc, out)
  for r = 0, np - 1 do
    for _, what in ipairs(checks) do
      assert.truthy(out:find(('R%d OK %s'):format(r, what), 1, true), ('rank %d did not pass %q:\n%s'):format(r, what, out))
    end
  end
end

describe('dist kvstore over MPI', function()
  if skip then
    pending('skipped: ' .. skip)
    return
  end
  local checks = {'dtypes', 'barrier', 'large without updater', 'fused and chunked', 'done'}

  it('2 workers: every dtype, barrier, fused + chunked keys (small chunks and fusion buffers)', function()
    local rc, out = D.run(2, 'kv_basics.lua', 'dist_sync',
      'LUAMX_DIST_SMALL_BYTES=4096 LUAMX_DIST_CHUNK_BYTES=65536 LUAMX_DIST_FUSION_BYTES=16384')
    expect_ok(2, rc, out, {'workers 2', unpack(checks)})
  end)

  it('2 workers: the same on MPI messages only (LUAMX_DIST_SHM_BYTES=0: chunked all-reduces)', function()
    local rc, out = D.run(2, 'kv_basics.lua', 'dist_sync',
      'LUAMX_DIST_SMALL_BYTES=4096 LUAMX_DIST_CHUNK_BYTES=65536 LUAMX_DIST_FUSION_BYTES=16384 LUAMX_DIST_SHM_BYTES=0')
    expect_ok(2, rc, out, {'workers 2', unpack(checks)})
  end)

  it('3 workers: the same with dist_device_sync and the default sizes', function()
    local rc, out = D.run(3, 'kv_basics.lua', 'dist_device_sync')
    expect_ok(3, rc, out, {'workers 3', unpack(checks)})
  end)

  it('one worker without mpirun', function()
    local rc, out = D.run1('kv_basics.lua', 'dist_sync')
    assert.are.equal(0, rc, out)
    assert.truthy(out:find('R0 OK workers 1', 1, true), out)
    assert.truthy(out:find('R0 OK fused and chunked', 1, true), out)
  end)
end)
