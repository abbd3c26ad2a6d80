-- spec/datasets_spec.lua — mx.datasets: the shipped digits and text, and the PTB-style
-- text loader.
local mx = require 'luamx'
local H = require 'helpers'

describe('mx.datasets.digits', function()
  it('loads the 1797 8x8 digits scaled to [0, 1] with labels 0..9', function()
    local x, y = mx.datasets.digits()
    assert.same({1797, 64}, x.shape)
    assert.same({1797}, y.shape)
    local first = x:slice(1, 1):toflat()
    assert.same({0, 0, 5 / 16, 13 / 16, 9 / 16, 1 / 16, 0, 0}, {unpack(first, 1, 8)})
    assert.same({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, y:slice(1, 10):toflat())
    local counts = {}
    for _, v in ipairs(y:toflat()) do counts[v + 1] = (counts[v + 1] or 0) + 1 end
    assert.same({178, 182, 177, 183, 181, 182, 181, 179, 174, 180}, counts)
    local lo, hi = math.huge, -math.huge
    for _, v in ipairs(x:toflat()) do lo, hi = math.min(lo, v), math.max(hi, v) end
    assert.same({0, 1}, {lo, hi})
  end)

  it('names the file and line of a bad row', function()
    local p = os.tmpname()
    local f = assert(io.open(p, 'w'))
    f:write(('1,'):rep(64) .. '3\n' .. ('1,'):rep(10) .. '2\n')
    f:close()
    H.raises(function() mx.datasets.digits(p) end, p .. ' line 2: expected 65 values (64 pixels and a label), got 11')
    os.remove(p)
    H.raises(function() mx.datasets.digits(p) end, 'cannot open ' .. p)
  end)
end)

describe('mx.datasets text', function()
  it('turns text into PTB-style sentences', function()
    local lines = mx.datasets.ptb_from_text("Hello, World! It cost 1911 dollars; isn't it -- odd?\n\nNo end\nhere\n")
    assert.same({'hello world', 'it cost N dollars', "isn't it odd", 'no end here'}, lines)
    local unk = mx.datasets.ptb_from_text('a b a c a b.', {vocab_size = 3})
    assert.same({'a b a <unk> a b'}, unk)
    assert.same({{'a', 'b'}, {'c'}}, mx.datasets.split_words({'a b', ' c '}))
  end)

  it("loads the shipped public-domain text (The Devil's Dictionary)", function()
    local lines = mx.datasets.ptb_lines()
    assert.equal(3760, #lines)
    assert.equal('the internet wiretap N st online edition of', lines[1])
    local words = 0
    for _, l in ipairs(lines) do words = words + select(2, l:gsub('%S+', '')) end
    assert.equal(45664, words)
    local coded, vocab = mx.rnn.encode_sentences(mx.datasets.split_words(lines), nil, 0, '\n', 1)
    assert.equal(#lines, #coded)
    assert.equal(1, vocab.the)
  end)
end)
