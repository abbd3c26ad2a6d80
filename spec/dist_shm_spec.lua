-- The dist store's shared-memory all-reduce (src/exec/kv_dist_shm.c: large keys of ranks
-- on one node summed through a segment they share, two barriers per slot) with real
-- processes (mpirun -np 2 and 3 on one machine): every dtype, sizes around the slot and
-- rank boundaries, each way into the path, bit for bit against the MPI-message path;
-- ranks on different paths (a disagreement); a rank that stops or is killed between two
-- keys while the others wait in a shared-memory barrier: named within a bound (worker
-- script: spec/dist/kv_shm.lua). Skipped with the reason where mpirun or the plugin is
-- missing.
local D = require 'dist_run'

local skip = D.skip_reason()
local ENV = 'LUAMX_DIST_SMALL_BYTES=4096'
local TIMEOUT = 4

describe('dist kvstore: the shared-memory all-reduce', function()
  if skip then
    pending('skipped: ' .. skip)
    return
  end
  for _, np in ipairs{2, 3} do
    it(np .. ' workers: bit for bit the MPI-message path and the exact sums', function()
      local rc, out = D.run(np, 'kv_shm.lua', '', ENV, 300)
      assert.are.equal(0, rc, out)
      for r = 0, np - 1 do
        for _, what in ipairs{'every dtype and size', 'float16 rounding', '8-bit overflow wraps', 'updater', 'lists', 'no allocations',
                              'disagreement', 'done'} do
          assert.truthy(out:find(('R%d OK %s'):format(r, what), 1, true), ('rank %d did not pass %q:\n%s'):format(r, what, out))
        end
      end
    end)
  end

  it('a rank that stops between two keys is named after LUAMX_DIST_TIMEOUT', function()
    local rc, out, t = D.run(2, 'kv_shm.lua', 'hang', ENV .. ' LUAMX_DIST_TIMEOUT=' .. TIMEOUT, 90)
    assert.are_not.equal(0, rc, out)
    assert.are_not.equal(124, rc, 'the job hung:\n' .. out)
    assert.truthy(out:find("R0 ERROR .*rank 0: push of key 'b' %(shared%-memory all%-reduce%): no answer for 4 s " ..
      "%(LUAMX_DIST_TIMEOUT%): lost rank 1"), out)
    assert.is_true(t < TIMEOUT + 30, ('took %.1f s'):format(t))
  end)

  it('a rank killed between two keys ends the job at once, naming it', function()
    local rc, out, t = D.run(2, 'kv_shm.lua', 'kill', ENV .. ' LUAMX_DIST_TIMEOUT=60', 90)
    assert.are_not.equal(0, rc, out)
    assert.are_not.equal(124, rc, 'the job hung:\n' .. out)
    assert.truthy(out:find('process rank 1 with PID %d+ on node %S+ exited on signal 9'), out)
    assert.is_true(t < 30, ('took %.1f s'):format(t))
  end)
end)
