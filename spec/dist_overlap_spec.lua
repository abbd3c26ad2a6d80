-- The overlapped push on real processes (worker spec/dist/train.lua): with a dist kvstore
-- and one context per worker, backward starts the all-reduce of every gradient (or fused
-- bucket) as soon as the executor knows it is final, and update() waits for the sums.
-- On 2 workers the result is bit-identical to the plain push (LUAMX_DIST_OVERLAP=0), on
-- 3 within float rounding (MPI orders the additions by message size);
-- a worker in the other mode (or on the other path for large keys: shared memory or MPI
-- messages) is a disagreement with a message; a rank killed or hung
-- while the others have all-reduces in flight ends the job within the bound; the
-- overlapped forward_backward allocates nothing. The executor side (finality per step,
-- shared weights) is spec/executor_grad_final_spec.lua.
local D = require 'dist_run'

local TIMEOUT = 4

local max_diff = D.max_diff

D.describe('dist_sync overlapped push', function(dir)
  local function twice(mode)
    local on, off = dir .. '/' .. mode .. '_on.params', dir .. '/' .. mode .. '_off.params'
    local rc, out = D.run(2, 'train.lua', mode .. ' ' .. on .. ' dist_sync')
    assert.are.equal(0, rc, out)
    assert.truthy(out:find('R0 overlap true', 1, true), 'overlap was not armed:\n' .. out)
    assert.truthy(out:find('R1 overlap true', 1, true), out)
    local rc0, out0 = D.run(2, 'train.lua', mode .. ' ' .. off .. ' dist_sync', 'LUAMX_DIST_OVERLAP=0')
    assert.are.equal(0, rc0, out0)
    assert.truthy(out0:find('R0 overlap false', 1, true), out0)
    assert.are.equal(0, max_diff(on, off), 'overlapped and plain training differ')
  end

  it('W1 MLP, 20 steps on 2 workers: the same parameters, bit for bit, as without overlap', function()
    twice('mlp')
  end)

  it('BucketingModule (buckets 3 and 5): the same parameters as without overlap', function()
    twice('bucket')
  end)

  it('small fusion buffers (many buckets, chunked large keys): still the same parameters', function()
    local env = 'LUAMX_DIST_SMALL_BYTES=4096 LUAMX_DIST_FUSION_BYTES=8192 LUAMX_DIST_CHUNK_BYTES=262144'
    local rc, out = D.run(2, 'train.lua', 'mlp ' .. dir .. '/s_on.params dist_sync', env)
    assert.are.equal(0, rc, out)
    rc, out = D.run(2, 'train.lua', 'mlp ' .. dir .. '/s_off.params dist_sync', env .. ' LUAMX_DIST_OVERLAP=0')
    assert.are.equal(0, rc, out)
    assert.are.equal(0, max_diff(dir .. '/s_on.params', dir .. '/mlp_on.params'))
    assert.are.equal(0, max_diff(dir .. '/s_off.params', dir .. '/mlp_on.params'))
  end)

  it('3 workers: overlapped and plain training agree within float rounding', function()
    local rc, out = D.run(3, 'train.lua', 'mlp48 ' .. dir .. '/t_on.params dist_sync')
    assert.are.equal(0, rc, out)
    assert.truthy(out:find('R2 overlap true', 1, true), out)
    rc, out = D.run(3, 'train.lua', 'mlp48 ' .. dir .. '/t_off.params dist_sync', 'LUAMX_DIST_OVERLAP=0')
    assert.are.equal(0, rc, out)
    assert.is_true(max_diff(dir .. '/t_on.params', dir .. '/t_off.params') < 1e-5)
  end)

  it('allocates nothing in forward_backward with the overlap armed, and update no more than without', function()
    local rc, out = D.run(2, 'train.lua', 'allocs ' .. dir .. '/al.params dist_sync')
    assert.are.equal(0, rc, out)
    assert.truthy(out:find('R0 overlap true', 1, true), out)
    assert.truthy(out:find('R0 forward_backward allocations 0\n', 1, true), out)
    assert.truthy(out:find('R1 forward_backward allocations 0\n', 1, true), out)
    local rc0, out0 = D.run(2, 'train.lua', 'allocs ' .. dir .. '/al0.params dist_sync', 'LUAMX_DIST_OVERLAP=0')
    assert.are.equal(0, rc0, out0)
    local on, off = out:match('R0 update allocations (%d+)'), out0:match('R0 update allocations (%d+)')
    assert.truthy(on and off, out .. out0)
    assert.are.equal(tonumber(off), tonumber(on))
  end)

  -- runs the worker in `mode` on 2 ranks; the job must fail (not hang) within `bound`
  -- seconds with output matching the Lua pattern `pat`
  local function fails_within(mode, pat, bound)
    local rc, out, t = D.run(2, 'train.lua', mode, 'LUAMX_DIST_TIMEOUT=' .. TIMEOUT, 60)
    assert.are_not.equal(0, rc, out)
    assert.are_not.equal(124, rc, 'the job hung:\n' .. out)
    assert.truthy(out:find(pat), out)
    assert.is_true(t < bound, ('took %.1f s'):format(t))
  end

  it('kill -9 of rank 1 between its backward and its update ends the job at once, naming rank 1', function()
    fails_within('killov', 'process rank 1 with PID %d+ on node %S+ exited on signal 9', 30)
  end)

  it('a rank that hangs with all-reduces in flight is named after LUAMX_DIST_TIMEOUT', function()
    fails_within('hangov', 'rank 0: push of key %S+: no answer for 4 s %(LUAMX_DIST_TIMEOUT%): lost rank 1',
      TIMEOUT + 25)
  end)

  -- runs the W1 worker on 2 ranks, rank 1 with the shell line `rank1` first and both
  -- with `both`; the job must fail (not hang); returns its output
  local function mixed(name, rank1, both)
    local f = assert(io.open(dir .. '/' .. name .. '.sh', 'w'))
    f:write(('#!/bin/sh\n%s\n[ "$OMPI_COMM_WORLD_RANK" = 1 ] && %s\n' ..
      'exec luajit %s/spec/dist/train.lua mlp %s/%s.params dist_sync\n')
      :format(both or '', rank1, os.getenv('LUAMX_SOURCE_DIR') or '.', dir, name))
    f:close()
    os.execute('chmod +x ' .. dir .. '/' .. name .. '.sh')
    local cmd = ('env LUAMX_DIST_TIMEOUT=%d %s timeout 60 %s -x LUAMX_DIST_TIMEOUT %s -np 2 %s/%s.sh 2>&1; echo "EXIT=$?"')
      :format(TIMEOUT, D.ASAN_ENV, D.MPIRUN, D.asan and '-x LD_PRELOAD -x ASAN_OPTIONS' or '', dir, name)
    local p = io.popen(cmd)
    local out = p:read('*a')
    p:close()
    local rc = tonumber(out:match('EXIT=(%d+)%s*$'))
    assert.are_not.equal(0, rc, out)
    assert.are_not.equal(124, rc, 'the job hung:\n' .. out)
    return out
  end

  it('a worker without overlap next to one with it: an error naming both, no hang', function()
    local out = mixed('mixed', 'export LUAMX_DIST_OVERLAP=0')
    assert.truthy(out:find("the workers disagree: rank %d calls push of key 'fc1_weight'.-%(overlapped with backward[;)]"), out)
  end)

  it('large keys through shared memory on one rank and MPI messages on the other: an error naming both', function()
    -- keys from 4 KiB are large; rank 1 turns the shared-memory path off
    local out = mixed('mixshm', 'export LUAMX_DIST_SHM_BYTES=0', 'export LUAMX_DIST_SMALL_BYTES=4096')
    assert.truthy(out:find('the workers disagree: rank %d calls push of key .-%(overlapped with backward; ' ..
      'large keys through shared memory, LUAMX_DIST_SHM_BYTES=262144%), but rank %d calls push of key .-' ..
      '%(overlapped with backward%)') or
      out:find('the workers disagree: rank %d calls push of key .-%(overlapped with backward%), but rank %d ' ..
      'calls push of key .-%(overlapped with backward; large keys through shared memory, ' ..
      'LUAMX_DIST_SHM_BYTES=262144%)'), out)
  end)
end)
