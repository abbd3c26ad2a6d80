-- Training with kvstore = 'dist_sync' on real processes: the W1 MLP for 20 steps on 2
-- workers with batch b each ends with the same parameters as 1 worker with batch 2b (float
-- tolerance), and so does a BucketingModule; without synchronisation (each worker on
-- 'local') they differ, so the comparison is not vacuous. Worker: spec/dist/train.lua.
local D = require 'dist_run'
local max_diff = D.max_diff

D.describe('Module.fit and BucketingModule.fit with dist_sync', function(dir)
  it('W1 MLP, 20 steps: 2 workers x batch 32 == 1 worker x batch 64', function()
    local rc1, out1 = D.run1('train.lua', 'mlp ' .. dir .. '/one.params local')
    assert.are.equal(0, rc1, out1)
    local rc, out = D.run(2, 'train.lua', 'mlp ' .. dir .. '/two.params dist_sync')
    assert.are.equal(0, rc, out)
    assert.is_true(max_diff(dir .. '/one.params', dir .. '/two.params') < 1e-5)
    -- the same two workers without synchronisation train apart
    rc, out = D.run(2, 'train.lua', 'mlp ' .. dir .. '/apart.params local')
    assert.are.equal(0, rc, out)
    assert.is_true(max_diff(dir .. '/one.params', dir .. '/apart.params') > 1e-3)
  end)

  it('BucketingModule, 20 steps over buckets 3 and 5: 2 workers == 1 worker', function()
    local rc1, out1 = D.run1('train.lua', 'bucket ' .. dir .. '/b1.params local')
    assert.are.equal(0, rc1, out1)
    local rc, out = D.run(2, 'train.lua', 'bucket ' .. dir .. '/b2.params dist_sync')
    assert.are.equal(0, rc, out)
    assert.is_true(max_diff(dir .. '/b1.params', dir .. '/b2.params') < 1e-4)
  end)

  local function checksums(out)
    local c = {}
    for r, v in out:gmatch('rank (%d+): parameter checksum (%S+)') do c[tonumber(r)] = v end
    return c
  end

  it('examples/dist_mnist.lua on 2 workers: rank 0 logs and checkpoints, resume keeps ranks identical', function()
    local prefix = dir .. '/mlp'
    local rc, out = D.example(2, 'dist_mnist', '--num-epochs 2 --quick --speed-every 2 --model-prefix ' .. prefix)
    assert.are.equal(0, rc, out)
    local _, n0 = out:gsub('Epoch%[0%] Train%-accuracy=', '')
    assert.are.equal(1, n0, 'only rank 0 logs the epoch summary:\n' .. out)
    local _, nspeed = out:gsub('Speed: [%d.]+ samples/sec', '')
    assert.are.equal(4, nspeed, 'rank 0 alone logs the (global) speed, twice per epoch:\n' .. out)
    assert.truthy(out:find('final validation accuracy: 0%.%d+'), out)
    local c = checksums(out)
    assert.truthy(c[0] and c[0] == c[1], out)
    assert.truthy(io.open(prefix .. '-0002.params', 'rb'), 'no checkpoint written:\n' .. out)
    rc, out = D.example(2, 'dist_mnist', '--num-epochs 3 --quick --model-prefix ' .. prefix .. ' --load-epoch 2')
    assert.are.equal(0, rc, out)
    assert.truthy(out:find('Epoch%[2%] Train%-accuracy='), out)
    assert.falsy(out:find('Epoch%[1%]'), out)
    c = checksums(out)
    assert.truthy(c[0] and c[0] == c[1], out)
  end)
end)
