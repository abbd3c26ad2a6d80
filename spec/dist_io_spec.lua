-- Distributed reading: num_parts / part_index of NDArrayIter, MNISTIter, CSVIter and
-- BucketSentenceIter (every worker gets an equal, disjoint part; their union is the data
-- minus the remainder rows).
local mx = require 'luamx'
local H = require 'helpers'

local function labels_of(it)
  local out = {}
  for b in function() return it:next() end do
    for _, v in ipairs(b.label[1]:toflat()) do out[#out + 1] = v end
  end
  return out
end

local function tmp(tag)
  local p = os.tmpname()
  os.remove(p)
  return p .. tag
end

describe('num_parts / part_index', function()
  it('NDArrayIter: equal disjoint parts, remainder dropped', function()
    local x = mx.nd.array{{0}, {1}, {2}, {3}, {4}, {5}, {6}}
    local y = mx.nd.array{0, 1, 2, 3, 4, 5, 6}
    local seen = {}
    for p = 0, 2 do
      local it = mx.io.NDArrayIter{data = x, label = y, batch_size = 2, num_parts = 3, part_index = p}
      local l = labels_of(it)
      assert.same({2 * p, 2 * p + 1}, l)
      for _, v in ipairs(l) do seen[#seen + 1] = v end
    end
    assert.same({0, 1, 2, 3, 4, 5}, seen)
    H.raises(function() mx.io.NDArrayIter{data = x, num_parts = 3, part_index = 3} end,
      'part_index must be an integer in [0, 3)', 'got 3')
    H.raises(function() mx.io.NDArrayIter{data = x, num_parts = 0} end, 'num_parts must be a positive integer')
    H.raises(function() mx.io.NDArrayIter{data = x, num_parts = 8} end, '7 rows cannot be split into 8 parts')
  end)

  it('MNISTIter: parts of the same shuffled order', function()
    local function be32(n)
      return string.char(math.floor(n / 16777216) % 256, math.floor(n / 65536) % 256, math.floor(n / 256) % 256, n % 256)
    end
    local img, lab = tmp('img'), tmp('lab')
    local f = assert(io.open(img, 'wb'))
    f:write('\0\0\8\3' .. be32(6) .. be32(1) .. be32(1) .. string.char(0, 1, 2, 3, 4, 5))
    f:close()
    f = assert(io.open(lab, 'wb'))
    f:write('\0\0\8\1' .. be32(6) .. string.char(0, 1, 2, 3, 4, 5))
    f:close()
    local all = {}
    for p = 0, 1 do
      mx.random.seed(3)
      local it = mx.io.MNISTIter{image = img, label = lab, batch_size = 1, num_parts = 2, part_index = p}
      local l = labels_of(it)
      assert.are.equal(3, #l)
      for _, v in ipairs(l) do all[#all + 1] = v end
    end
    table.sort(all)
    assert.same({0, 1, 2, 3, 4, 5}, all)
    os.remove(img); os.remove(lab)
  end)

  it('CSVIter: rows of its part', function()
    local d, l = tmp('d.csv'), tmp('l.csv')
    local fd, fl = assert(io.open(d, 'w')), assert(io.open(l, 'w'))
    for i = 0, 4 do fd:write(('%d,%d\n'):format(i, i)); fl:write(('%d\n'):format(i)) end
    fd:close(); fl:close()
    local it = mx.io.CSVIter{data_csv = d, label_csv = l, data_shape = {2}, batch_size = 2,
                             num_parts = 2, part_index = 1}
    assert.same({2, 3}, labels_of(it))
    os.remove(d); os.remove(l)
  end)

  it('BucketSentenceIter: every part has the same batches per bucket', function()
    local sents = {}
    for i = 1, 8 do sents[i] = {i, i, i} end      -- bucket 3: 8 sentences
    for i = 1, 5 do sents[#sents + 1] = {i, i, i, i, i} end -- bucket 5: 5 sentences
    local keys = {}
    for p = 0, 1 do
      mx.random.seed(7)
      local it = mx.rnn.BucketSentenceIter{sentences = sents, batch_size = 2, buckets = {3, 5},
                                           invalid_label = 0, num_parts = 2, part_index = p}
      local k = {}
      for b in function() return it:next() end do k[#k + 1] = b.bucket_key end
      keys[p] = k
    end
    assert.are.equal(3, #keys[0]) -- bucket 3: 4 sentences -> 2 batches; bucket 5: 2 -> 1
    assert.same(keys[0], keys[1])
  end)
end)
