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

  it('zoo_resnet_cifar.lua --num-epochs 1 --quick: the zoo\'s ResNet-20 trains an epoch', function()
    local status, out = example('zoo_resnet_cifar', '--num-epochs 1 --quick')
    assert.equal(0, status, out)
    assert.truthy(has_line(out, '^luamx [%d.]+: ResNet%-20 %(CIFAR form, 272154 parameters%) on 128 synthetic 3x16x16 images, 32 held out$'), out)
    assert.truthy(has_line(out, '^Epoch%[0%] Train%-accuracy=' .. NUM .. '$'), out)
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

  it('custom_softmax.lua --num-epochs 2 --quick: a Lua loss trains and its checkpoint reloads', function()
    local status, out = example('custom_softmax', '--num-epochs 2 --quick')
    assert.equal(0, status, out)
    assert.truthy(has_line(out, '^luamx [%d.]+: MLP with a Lua softmax on digits: 300 training and 100 held%-out 8x8 images$'), out)
    local first = tonumber(out:match('Epoch%[0%] Validation%-accuracy=([%d.]+)'))
    local last = tonumber(out:match('Epoch%[1%] Validation%-accuracy=([%d.]+)'))
    assert.truthy(first and last, out)
    assert.is_true(last > 0.3, out) -- ten classes: chance is 0.1
    assert.truthy(has_line(out, '^final validation accuracy: %d%.%d%d%d%d %(reloaded checkpoint agrees: yes%)$'), out)
  end)

  it('autograd_mlp.lua with its defaults reaches 0.95 held-out accuracy; --hybridize agrees', function()
    local status, out = example('autograd_mlp')
    assert.equal(0, status, out)
    assert.truthy(has_line(out, '^luamx [%d.]+: eager MLP on digits: 1498 training and 299 held%-out 8x8 images$'), out)
    assert.truthy(has_line(out, '^Epoch%[19%] Validation%-accuracy=' .. NUM .. '$'), out)
    local acc = tonumber(out:match('final validation accuracy: ([%d.]+)'))
    assert.is_true(acc >= 0.95, out)
    local hstatus, hout = example('autograd_mlp', '--num-epochs 2 --quick --hybridize')
    local estatus, eout = example('autograd_mlp', '--num-epochs 2 --quick')
    assert.equal(0, hstatus, hout)
    assert.equal(0, estatus, eout)
    assert.equal(eout:match('final validation accuracy: ([%d.]+)'),
                 hout:match('final validation accuracy: ([%d.]+)'))
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

  -- Small files in the full data sets' formats: IDX (MNIST) and PTB-style text.
  local function be32(n)
    return string.char(math.floor(n / 16777216) % 256, math.floor(n / 65536) % 256, math.floor(n / 256) % 256, n % 256)
  end
  local function write(path, bytes)
    local f = assert(io.open(path, 'wb'))
    f:write(bytes)
    f:close()
  end
  local function fake_mnist(dir, n)
    local px, lb = {}, {}
    for i = 0, n - 1 do
      lb[#lb + 1] = string.char(i % 10)
      for k = 0, 28 * 28 - 1 do px[#px + 1] = string.char((k * 7 + i * 13) % 256) end
    end
    write(dir .. '/images', be32(0x803) .. be32(n) .. be32(28) .. be32(28) .. table.concat(px))
    write(dir .. '/labels', be32(0x801) .. be32(n) .. table.concat(lb))
  end

  it('mnist_mlp.lua and lenet.lua read MNIST IDX files given by flags', function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute('mkdir -p ' .. dir))
    fake_mnist(dir, 64)
    local flags = ('--num-epochs 1 --train-images %s/images --train-labels %s/labels ' ..
                   '--test-images %s/images --test-labels %s/labels'):format(dir, dir, dir, dir)
    local status, out = example('mnist_mlp', flags)
    assert.equal(0, status, out)
    assert.truthy(has_line(out, '^luamx [%d.]+: MLP on MNIST IDX files$'), out)
    assert.truthy(has_line(out, '^Epoch%[0%] Validation%-accuracy=' .. NUM .. '$'), out)
    status, out = example('lenet', flags)
    assert.equal(0, status, out)
    assert.truthy(has_line(out, '^luamx [%d.]+: LeNet on MNIST IDX files %(1x28x28%)$'), out)
    assert.truthy(has_line(out, '^final validation accuracy: %d%.%d%d%d%d'), out)
    os.execute('rm -rf ' .. dir)
  end)

  it('lstm_bucketing.lua reads PTB-style text files given by flags', function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute('mkdir -p ' .. dir))
    local lines = {}
    for i = 1, 120 do
      local words = {}
      for t = 1, 4 + i % 7 do words[t] = ('w%d'):format((i * 3 + t * 5) % 40) end
      lines[i] = table.concat(words, ' ')
    end
    write(dir .. '/train.txt', table.concat(lines, '\n') .. '\n')
    write(dir .. '/valid.txt', table.concat(lines, '\n', 1, 40) .. '\n')
    local status, out = example('lstm_bucketing', ('--num-epochs 1 --num-layers 1 --num-hidden 8 --num-embed 8 ' ..
      '--batch-size 8 --buckets 5,10 --train-file %s/train.txt --valid-file %s/valid.txt'):format(dir, dir))
    assert.equal(0, status, out)
    assert.truthy(has_line(out, '^luamx [%d.]+: LSTM LM, 120 training / 40 validation sentences, vocabulary 42, buckets 5,10$'), out)
    assert.truthy(has_line(out, '^Epoch%[0%] Validation%-perplexity=' .. NUM .. '$'), out)
    os.execute('rm -rf ' .. dir)
  end)

  it('an unknown flag stops an example with a message', function()
    local status, out = example('mnist_mlp', '--bogus 1')
    assert.are_not.equal(0, status)
    assert.truthy(out:find('unknown option --bogus', 1, true), out)
  end)
end)
