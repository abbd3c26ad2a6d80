-- spec/examples_spec.lua — runs every training example as a child process (`luajit
-- examples/<name>.lua`, with flags that make it tiny) from the repository root and checks
-- its exit status and the lines it promises at the top of its file; the default example
-- also runs with its defaults and must reach the accuracy the README states.
local function run(cmd)
  local p = assert(io.popen(cmd .. ' 2>&1; echo "exit status $?"'))
  local out = p:read('*a')
  p:close()
  local status = tonumber(out:match('exit status (%d+)%s*$'))
  return status, out
end

local function example(name, flags)
  return run(('luajit examples/%s.lua %s'):format(name, flags or ''))
end

local function has_line(out, pattern)
  for line in out:gmatch('[^\n]+') do
    if line:match(pattern) then return line end
  end
  return nil
end

local NUM = '%d+%.%d%d%d%d%d%d'

describe('examples', function()
  it('mnist_mlp.lua --num-epochs 1 --quick', function()
    local status, out = example('mnist_mlp', '--num-epochs 1 --quick')
    assert.equal(0, status, out)
    assert.truthy(has_line(out, '^luamx [%d.]+: MLP on digits: 300 training and 100 held%-out 8x8 images$'), out)
    assert.truthy(has_line(out, '^Epoch%[0%] Train%-accuracy=' .. NUM .. '$'), out)
    assert.truthy(has_line(out, '^Epoch%[0%] Time cost=%d+%.%d%d%d$'), out)
    assert.truthy(has_line(out, '^Epoch%[0%] Validation%-accuracy=' .. NUM .. '$'), out)
    assert.truthy(has_line(out, '^final validation accuracy: %d%.%d%d%d%d %(1 epochs, [%d.]+ s%)$'), out)
    assert.falsy(has_line(out, '^Epoch%[1%]'), out)
  end)

  it('mnist_mlp.lua with its defaults reaches 0.95 held-out accuracy, rising over the epochs', function()
    local status, out = example('mnist_mlp')
    assert.equal(0, status, out)
    local acc = tonumber(out:match('final validation accuracy: ([%d.]+)'))
    assert.truthy(acc, out)
    assert.is_true(acc >= 0.95, out)
    local first = tonumber(out:match('Epoch%[0%] Validation%-accuracy=([%d.]+)'))
    local last = tonumber(out:match('Epoch%[19%] Validation%-accuracy=([%d.]+)'))
    assert.is_true(last > first, out)
  end)

  it('lenet.lua --num-epochs 1 --quick', function()
    local status, out = example('lenet', '--num-epochs 1 --quick')
    assert.equal(0, status, out)
    assert.truthy(has_line(out, '^luamx [%d.]+: LeNet on digits %(1x8x8%): 300 training and 100 held%-out images$'), out)
    assert.truthy(has_line(out, '^Epoch%[0%] Train%-accuracy=' .. NUM .. '$'), out)
    assert.truthy(has_line(out, '^Epoch%[0%] Validation%-accuracy=' .. NUM .. '$'), out)
    assert.truthy(has_line(out, '^final validation accuracy: %d%.%d%d%d%d'), out)
  end)

  it('lstm_bucketing.lua --num-epochs 2 --quick (small sizes): perplexity falls', function()
    local status, out = example('lstm_bucketing',
      '--num-epochs 2 --quick --num-layers 1 --num-hidden 16 --num-embed 16 --disp-batches 5')
    assert.equal(0, status, out)
    assert.truthy(has_line(out, '^luamx [%d.]+: LSTM LM, 400 training / 100 validation sentences'), out)
    assert.truthy(has_line(out, '^Epoch%[0%] Batch %[0%-5%]\tSpeed: [%d.]+ samples/sec\tperplexity=' .. NUM .. '$'), out)
    local p0 = tonumber(out:match('Epoch%[0%] Train%-perplexity=([%d.]+)'))
    local p1 = tonumber(out:match('Epoch%[1%] Train%-perplexity=([%d.]+)'))
    assert.truthy(p0 and p1, out)
    assert.is_true(p1 < p0, out)
    assert.truthy(has_line(out, '^Epoch%[1%] Validation%-perplexity=' .. NUM .. '$'), out)
    assert.truthy(has_line(out, '^final validation perplexity: [%d.]+ %(2 epochs'), out)
  end)

  it('multi_device.lua --num-epochs 1 --quick: two contexts agree with one', function()
    local status, out = example('multi_device', '--num-epochs 1 --quick')
    assert.equal(0, status, out)
    local l1, a1 = out:match('1 context:  loss ([%d.]+)  accuracy ([%d.]+)')
    local l2, a2 = out:match('2 contexts: loss ([%d.]+)  accuracy ([%d.]+)')
    assert.truthy(l1 and l2, out)
    assert.is_true(math.abs(tonumber(l1) - tonumber(l2)) < 1e-4, out)
    assert.equal(a1, a2)
    local d = tonumber(out:match('max parameter difference ([%d.e+-]+)'))
    assert.truthy(d, out)
    assert.is_true(d < 1e-4, out)
  end)

  it('an unknown flag stops an example with a message', function()
    local status, out = example('mnist_mlp', '--bogus 1')
    assert.are_not.equal(0, status)
    assert.truthy(out:find('unknown option --bogus', 1, true), out)
  end)
end)
