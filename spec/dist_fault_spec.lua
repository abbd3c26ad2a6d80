-- Faults in a dist_sync job (real processes, worker spec/dist/train.lua): a rank killed
-- with SIGKILL, a rank raising a Lua error, a rank that hangs, workers with different
-- parameter shapes or different numbers of batches. Every case must end the whole job
-- with a non-zero status and a message naming the rank (and the key), within a bound.
local D = require 'dist_run'

local skip = D.skip_reason()
local TIMEOUT = 4 -- LUAMX_DIST_TIMEOUT for these jobs

describe('dist_sync faults', function()
  if skip then
    pending('skipped: ' .. skip)
    return
  end
  local env = 'LUAMX_DIST_TIMEOUT=' .. TIMEOUT

  it('kill -9 of rank 1 mid-epoch ends the job at once, naming rank 1', function()
    local rc, out, t = D.run(2, 'train.lua', 'kill', env, 60)
    assert.are_not.equal(0, rc, out)
    assert.are_not.equal(124, rc, 'the job hung:\n' .. out)
    assert.truthy(out:find('process rank 1 with PID %d+ on node %S+ exited on signal 9'), out)
    assert.is_true(t < 30, ('took %.1f s'):format(t))
  end)

  it('a Lua error on rank 1 ends the job, naming rank 1', function()
    local rc, out, t = D.run(2, 'train.lua', 'error', env, 60)
    assert.are_not.equal(0, rc, out)
    assert.are_not.equal(124, rc, 'the job hung:\n' .. out)
    assert.truthy(out:find('rank 1 gives up', 1, true), out)
    assert.truthy(out:find('Process name: %[%[%d+,%d+%],1%]'), out) -- mpirun names rank 1
    assert.is_true(t < 30, ('took %.1f s'):format(t))
  end)

  it('a rank that hangs is named by the others after LUAMX_DIST_TIMEOUT', function()
    local rc, out, t = D.run(2, 'train.lua', 'hang', env, 60)
    assert.are_not.equal(0, rc, out)
    assert.are_not.equal(124, rc, 'the job hung:\n' .. out)
    assert.truthy(out:find("rank 0: push of key fc1_weight: no answer for 4 s (LUAMX_DIST_TIMEOUT): lost rank 1", 1, true), out)
    assert.is_true(t < TIMEOUT + 25, ('took %.1f s'):format(t))
  end)

  it('different parameter shapes: an error naming the key and both ranks', function()
    local rc, out = D.run(2, 'train.lua', 'shape', env, 60)
    assert.are_not.equal(0, rc, out)
    assert.truthy(out:find("R0 ERROR .*the workers disagree: rank 0 calls init of key 'fc1_weight' %(512,784%) float32, " ..
      "but rank 1 calls init of key 'fc1_weight' %(515,784%) float32"), out)
    assert.truthy(out:find("R1 ERROR .*rank 1 calls init of key 'fc1_weight' %(515,784%)"), out)
  end)

  it('a different number of batches: an error naming the epoch and the ranks', function()
    local rc, out = D.run(2, 'train.lua', 'batches', env, 60)
    assert.are_not.equal(0, rc, out)
    assert.truthy(out:find("R1 ERROR .*the workers disagree: rank 1 calls check 'batches in epoch 0' = 39, but rank 0 calls push of key 'fc1_weight'"), out)
  end)
end)
