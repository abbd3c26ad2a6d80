-- spec/io_wrappers_spec.lua — mx.io.ResizeIter and mx.io.PrefetchingIter (MXNet's
-- semantics) over NDArrayIter and ImageRecordIter.
local mx = require 'luamx'
local H = require 'helpers'

local function column(n, from)
  local t = {}
  for i = 1, n do t[i] = {from + i - 1} end
  return mx.nd.array(t)
end

local function firsts(it, k)
  local out = {}
  for _ = 1, k or math.huge do
    local b = it:next()
    if not b then break end
    out[#out + 1] = b.data[1]:toflat()[1]
  end
  return out
end

describe('mx.io.ResizeIter', function()
  it('wraps a short iterator around to give exactly size batches', function()
    local inner = mx.io.NDArrayIter{data = column(6, 0), batch_size = 2} -- 3 batches: 0, 2, 4
    local it = mx.io.ResizeIter(inner, 5)
    assert.equal(2, it.batch_size)
    assert.same(inner.provide_data, it.provide_data)
    assert.same({0, 2, 4, 0, 2}, firsts(it))
    assert.is_nil(it:next())
    it:reset() -- reset_internal: the inner iterator starts again too
    assert.same({0, 2, 4, 0, 2}, firsts(it))
  end)

  it('stops a long iterator early; without reset_internal the next epoch continues it', function()
    local inner = mx.io.NDArrayIter{data = column(10, 0), batch_size = 2} -- 0, 2, 4, 6, 8
    local it = mx.io.ResizeIter(inner, 2, false)
    assert.same({0, 2}, firsts(it))
    it:reset()
    assert.same({4, 6}, firsts(it))
    it:reset()
    assert.same({8, 0}, firsts(it)) -- the inner iterator ended and was reset
  end)

  it('checks its arguments', function()
    H.raises(function() mx.io.ResizeIter(nil, 2) end, 'mx.io.ResizeIter: data_iter must be a data iterator, got nil')
    H.raises(function() mx.io.ResizeIter(mx.io.NDArrayIter{data = column(2, 0)}, -1) end,
             'size must be a non-negative integer, got -1')
    local empty = mx.io.NDArrayIter{data = column(1, 0), batch_size = 2, last_batch_handle = 'discard'}
    H.raises(function() mx.io.ResizeIter(empty, 1):next() end, 'the inner iterator yields no batch after reset')
  end)
end)

describe('mx.io.PrefetchingIter', function()
  it('joins the batches of several iterators and renames their descriptions', function()
    local a = mx.io.NDArrayIter{data = column(5, 0), label = column(5, 100), batch_size = 2}
    local b = mx.io.NDArrayIter{data = column(5, 50), label = column(5, 200), batch_size = 2}
    local it = mx.io.PrefetchingIter({a, b}, {{data = 'data_a'}, {data = 'data_b'}},
                                     {{softmax_label = 'la'}, {softmax_label = 'lb'}})
    assert.same({'data_a', 'data_b'}, {it.provide_data[1].name, it.provide_data[2].name})
    assert.same({'la', 'lb'}, {it.provide_label[1].name, it.provide_label[2].name})
    assert.same({2, 1}, it.provide_data[2].shape)
    assert.equal(2, it.batch_size)
    local pads, seen = {}, {}
    for batch in it do
      assert.equal(2, #batch.data)
      assert.equal(2, #batch.label)
      seen[#seen + 1] = {batch.data[1]:toflat()[1], batch.data[2]:toflat()[1],
                         batch.label[1]:toflat()[1], batch.label[2]:toflat()[1]}
      pads[#pads + 1] = batch.pad
    end
    assert.same({{0, 50, 100, 200}, {2, 52, 102, 202}, {4, 54, 104, 204}}, seen)
    assert.same({0, 0, 1}, pads)
    it:reset()
    assert.same({0, 2, 4}, firsts(it))
  end)

  it('accepts one iterator, and without renames keeps the names', function()
    local a = mx.io.NDArrayIter{data = column(4, 0), batch_size = 2}
    local it = mx.io.PrefetchingIter(a)
    assert.equal('data', it.provide_data[1].name)
    assert.same({0, 2}, firsts(it))
  end)

  it('says "Number of entry mismatches between iterators" when they disagree', function()
    local a = mx.io.NDArrayIter{data = column(4, 0), batch_size = 2}
    local b = mx.io.NDArrayIter{data = column(6, 0), batch_size = 2}
    local it = mx.io.PrefetchingIter{a, b}
    it:next()
    it:next()
    H.raises(function() it:next() end, 'Number of entry mismatches between iterators')
    local c = mx.io.NDArrayIter{data = column(3, 0), batch_size = 2}
    local d = mx.io.NDArrayIter{data = column(4, 0), batch_size = 2}
    local it2 = mx.io.PrefetchingIter{c, d}
    it2:next()
    H.raises(function() it2:next() end, 'Number of entry mismatches between iterators') -- pad 1 vs 0
    H.raises(function() mx.io.PrefetchingIter({a, b}, {{data = 'x'}}) end,
             'rename_data must be an array of 2 name tables')
    H.raises(function() mx.io.PrefetchingIter({a}, {{other = 'x'}}) end, 'rename_data[1] has no new name for "data"')
    H.raises(function() mx.io.PrefetchingIter({a, 3}) end, 'iters[2] is not a data iterator')
  end)

  it('wraps an ImageRecordIter (its workers decode ahead) under ResizeIter', function()
    local fix = (os.getenv('LUAMX_FIXTURES') or 'spec/fixtures') .. '/recordio/tiny'
    local rec = mx.io.ImageRecordIter{path_imgrec = fix .. '.rec', data_shape = {3, 6, 8}, batch_size = 4}
    local it = mx.io.PrefetchingIter(mx.io.ResizeIter(rec, 4))
    local labels = {}
    for b in it do labels[#labels + 1] = b.label[1]:toflat()[1] end
    assert.same({0, 4, 8, 0}, labels) -- 3 batches, then the record iterator starts again
  end)
end)
