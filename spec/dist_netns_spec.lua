-- Two "hosts": 2 workers in two network namespaces joined by a veth pair, launched by
-- mpirun through a hostfile (spec/dist/netns_job.sh), so the all-reduces really cross a
-- network interface (the veth's byte counter proves it). Needs root and `ip netns`;
-- skipped with the reason where namespaces cannot be made.
local D = require 'dist_run'

local skip = D.skip_reason()

describe('dist_sync across two network namespaces', function()
  if skip then
    pending('skipped: ' .. skip)
    return
  end
  it('kv_basics on 10.200.0.1 and 10.200.0.2 over a veth pair', function()
    local src = os.getenv('LUAMX_SOURCE_DIR') or '.'
    local p = io.popen(('env %s sh %s/spec/dist/netns_job.sh %s/spec/dist 2>&1; echo "EXIT=$?"')
      :format(D.ASAN_ENV, src, src))
    local out = p:read('*a')
    p:close()
    local rc = tonumber(out:match('EXIT=(%d+)%s*$'))
    if rc == 77 then
      pending('skipped: ' .. (out:match('SKIP ([^\n]*)') or out))
      return
    end
    assert.are.equal(0, rc, out)
    for r = 0, 1 do
      for _, what in ipairs{'workers 2', 'dtypes', 'barrier', 'fused and chunked', 'done'} do
        assert.truthy(out:find(('R%d OK %s'):format(r, what), 1, true), out)
      end
    end
    local sent = tonumber(out:match('VETH_TX_BYTES=(%d+)'))
    assert.truthy(sent and sent > 1000000, 'the veth carried too little traffic:\n' .. out)
  end)
end)
