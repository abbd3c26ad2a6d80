-- The dist store's hot pushpull (src/exec/kv_dist.c: a large key without an updater
-- reduced straight into the output in chunks of LUAMX_DIST_HOT_BYTES, each chunk copied
-- into the stored value while in the cache) against the plain path, with real processes
-- (mpirun -np 2 and 3 on loopback): every dtype, sizes around the chunk boundaries,
-- in place and apart, lists with fused keys and aliasing outputs, the fallbacks, no
-- engine allocation per call, ranks on different paths (a disagreement) (worker
-- script: spec/dist/kv_hot.lua). Skipped with the reason where mpirun or the plugin is
-- missing.
local D = require 'dist_run'

local skip = D.skip_reason()
local ENV = 'LUAMX_DIST_SMALL_BYTES=4096 LUAMX_DIST_CHUNK_BYTES=65536 LUAMX_DIST_FUSION_BYTES=16384 LUAMX_DIST_SHM_BYTES=0'

describe('dist kvstore: the hot pushpull', function()
  if skip then
    pending('skipped: ' .. skip)
    return
  end
  for _, np in ipairs{2, 3} do
    it(np .. ' workers: bit for bit the plain path and the exact sums', function()
      local rc, out = D.run(np, 'kv_hot.lua', '', ENV, 300)
      assert.are.equal(0, rc, out)
      for r = 0, np - 1 do
        for _, what in ipairs{'every dtype and size', 'lists and aliasing', 'plain fallbacks', 'no allocations', 'disagreement', 'done'} do
          assert.truthy(out:find(('R%d OK %s'):format(r, what), 1, true), ('rank %d did not pass %q:\n%s'):format(r, what, out))
        end
      end
    end)
  end
end)
