-- ops_sort_spec.lua — the ordering operators of issue 14 (topk, sort, argsort): forward
-- values from the examples of MXNet 1.9's documentation of each operator, in float32,
-- float64 and int32; the tie order (stable: equal values keep their original order);
-- index dtypes; gradients against values worked by hand (the finite-difference checks
-- are tests/test_gradcheck.c's); JSON round trips; bad parameters with their messages;
-- gpu(0) against the CPU where there is one.
local mx = require 'luamx'
local H = require 'helpers'
local op = mx.nd.op

local function arr(t, dt) return mx.nd.array(t, { dtype = dt or 'float32' }) end

-- rounds nested float32 values for comparison with the decimal examples
local function round(t)
  if type(t) ~= 'table' then return math.floor(t * 1e4 + 0.5) / 1e4 end
  local r = {}
  for i, v in ipairs(t) do r[i] = round(v) end
  return r
end

local X = { { 0.3, 0.2, 0.4 }, { 0.1, 0.3, 0.2 } }

describe('topk (MXNet docs)', function()
  for _, dt in ipairs { 'float32', 'float64' } do
    it('indices, values, both, along an axis (' .. dt .. ')', function()
      local x = arr(X, dt)
      local i = op.topk(x)
      assert.are.same({ { 2 }, { 1 } }, i:totable())
      assert.are.equal('float32', i.dtype)
      assert.are.same({ { 0.4, 0.3 }, { 0.3, 0.2 } },
        round(op.topk(x, { ret_typ = 'value', k = 2 }):totable()))
      assert.are.same({ { 0.2, 0.3 }, { 0.1, 0.2 } },
        round(op.topk(x, { ret_typ = 'value', k = 2, is_ascend = 1 }):totable()))
      assert.are.same({ { 0.3, 0.3, 0.4 }, { 0.1, 0.2, 0.2 } },
        round(op.topk(x, { axis = 0, ret_typ = 'value', k = 2 }):totable()))
      local b = op.topk(x, { ret_typ = 'both', k = 2 })
      assert.are.same({ { 0.4, 0.3 }, { 0.3, 0.2 } }, round(b[1]:totable()))
      assert.are.same({ { 2, 0 }, { 1, 2 } }, b[2]:totable())
      assert.are.equal(dt, b[1].dtype)
    end)
  end

  it('flattens with axis None, returns a mask, takes the whole axis for k < 1', function()
    local x = arr(X)
    -- flattened 0.3 0.2 0.4 0.1 0.3 0.2: the tie of 0.3 keeps index 0 before 4
    assert.are.same({ 2, 0, 4 }, op.topk(x, { axis = 'None', k = 3 }):totable())
    assert.are.same({ { 1, 0, 1 }, { 0, 1, 1 } }, op.topk(x, { ret_typ = 'mask', k = 2 }):totable())
    local m = op.topk(x, { ret_typ = 'mask', k = 1, axis = 0 })
    assert.are.same({ { 1, 0, 1 }, { 0, 1, 0 } }, m:totable())
    assert.are.equal('float32', m.dtype)
    assert.are.same({ { 2, 0, 1 }, { 1, 2, 0 } }, op.topk(x, { k = 0 }):totable())
    assert.are.same({ 2, 3 }, op.topk(x, { k = -1 }).shape)
  end)

  it('writes indices in dtype, and works on int32 data', function()
    local x = arr(X)
    for _, dt in ipairs { 'int32', 'int64', 'float64', 'uint8', 'float16' } do
      local i = op.topk(x, { k = 3, dtype = dt })
      assert.are.equal(dt, i.dtype)
      assert.are.same({ { 2, 0, 1 }, { 1, 2, 0 } }, i:totable())
    end
    local n = arr({ { 5, -2, 9, 0 } }, 'int32')
    local v = op.topk(n, { ret_typ = 'value', k = 3 })
    assert.are.equal('int32', v.dtype)
    assert.are.same({ { 9, 5, 0 } }, v:totable())
  end)

  it('keeps ties in their original order in both directions', function()
    local x = arr { 1, 3, 1, 3, 2, 1 }
    assert.are.same({ 1, 3, 4, 0, 2, 5 }, op.topk(x, { k = 0 }):totable())
    assert.are.same({ 0, 2, 5, 4, 1, 3 }, op.topk(x, { k = 0, is_ascend = true }):totable())
    assert.are.same({ 0, 2, 5, 4, 1, 3 }, op.argsort(x):totable())
    assert.are.same({ 1, 3, 4, 0, 2, 5 }, op.argsort(x, { is_ascend = false }):totable())
  end)

  it('scatters the values\' gradient back to the picked positions', function()
    local x = arr(X, 'float64')
    x:attach_grad()
    local w = arr({ { 10, 20 }, { 30, 40 } }, 'float64')
    mx.autograd.record(function()
      return mx.nd.sum(op.topk(x, { ret_typ = 'value', k = 2 }) * w)
    end):backward()
    -- row 0: 0.4 (index 2) gets 10, 0.3 (index 0) gets 20; row 1: 0.3 (1) 30, 0.2 (2) 40
    assert.are.same({ { 20, 0, 10 }, { 0, 30, 40 } }, x.grad:totable())
    mx.autograd.record(function()
      local b = op.topk(x, { ret_typ = 'both', k = 1, axis = 0 })
      return mx.nd.sum(b[1] * arr({ { 1, 2, 3 } }, 'float64'))
    end):backward()
    assert.are.same({ { 1, 0, 3 }, { 0, 2, 0 } }, x.grad:totable())
    mx.autograd.record(function()
      return mx.nd.sum(op.topk(x, { ret_typ = 'mask', k = 2 }) * 5)
    end):backward()
    assert.are.same({ { 0, 0, 0 }, { 0, 0, 0 } }, x.grad:totable())
  end)
end)

describe('sort and argsort (MXNet docs)', function()
  for _, dt in ipairs { 'float32', 'float64', 'int32' } do
    it('sort along an axis, flattened, descending (' .. dt .. ')', function()
      local x = arr({ { 1, 4 }, { 3, 1 } }, dt)
      assert.are.same({ { 1, 4 }, { 1, 3 } }, op.sort(x):totable())
      assert.are.same({ 1, 1, 3, 4 }, op.sort(x, { axis = 'None' }):totable())
      assert.are.same({ { 1, 1 }, { 3, 4 } }, op.sort(x, { axis = 0 }):totable())
      assert.are.same({ { 4, 1 }, { 3, 1 } }, op.sort(x, { is_ascend = 0 }):totable())
      assert.are.equal(dt, op.sort(x).dtype)
    end)
  end

  it('sorts long rows like table.sort, in float16 too, and as fluent methods', function()
    local v = {}
    for i = 1, 300 do v[i] = ((i * 7919) % 1009) / 8 end -- distinct, shuffled
    local want = {}
    for i = 1, 300 do want[i] = v[i] end
    table.sort(want)
    local x = arr({ v, v }, 'float64')
    local s = op.sort(x):totable()
    assert.are.same(want, s[1])
    assert.are.same(want, s[2])
    local i = op.argsort(x, { dtype = 'int32' }):totable()[1]
    for j = 1, 300 do assert.are.equal(want[j], v[i[j] + 1]) end
    local h = arr({ 0.5, -2, 8, 1.5 }, 'float16')
    assert.are.same({ 8, 1.5, 0.5, -2 }, op.sort(h, { is_ascend = false }):totable())
    assert.are.equal('float16', op.sort(h).dtype)
    local f = arr(X)
    assert.are.same({ { 1, 0, 2 }, { 0, 2, 1 } }, f:argsort():totable())
    assert.are.same({ { 0.4, 0.3 }, { 0.3, 0.2 } }, round(f:topk { k = 2, ret_typ = 'value' }:totable()))
    assert.are.same({ { 0.2, 0.3, 0.4 }, { 0.1, 0.2, 0.3 } }, round(f:sort():totable()))
  end)

  it('argsort along an axis and flattened, in dtype', function()
    local x = arr(X)
    assert.are.same({ { 1, 0, 2 }, { 0, 2, 1 } }, op.argsort(x):totable())
    assert.are.same({ { 1, 0, 1 }, { 0, 1, 0 } }, op.argsort(x, { axis = 0 }):totable())
    assert.are.same({ 3, 1, 5, 0, 4, 2 }, op.argsort(x, { axis = 'None' }):totable())
    local i = op.argsort(x, { dtype = 'int64' })
    assert.are.equal('int64', i.dtype)
    assert.are.same({ { 1, 0, 2 }, { 0, 2, 1 } }, i:totable())
  end)

  it('sort sends each gradient to the value\'s original position', function()
    local x = arr({ { 1, 4, 2 }, { 3, 0, 5 } }, 'float64')
    x:attach_grad()
    local w = arr({ { 1, 2, 3 }, { 4, 5, 6 } }, 'float64')
    mx.autograd.record(function() return mx.nd.sum(op.sort(x) * w) end):backward()
    -- row 0 sorted 1, 2, 4 from positions 0, 2, 1; row 1: 0, 3, 5 from 1, 0, 2
    assert.are.same({ { 1, 3, 2 }, { 5, 4, 6 } }, x.grad:totable())
    mx.autograd.record(function()
      return mx.nd.sum(op.sort(x, { axis = 'None', is_ascend = false }) * arr({ 1, 2, 3, 4, 5, 6 }, 'float64'))
    end):backward()
    -- descending 5, 4, 3, 2, 1, 0 from flat positions 5, 1, 3, 2, 0, 4
    assert.are.same({ { 5, 2, 4 }, { 3, 6, 1 } }, x.grad:totable())
  end)
end)

describe('topk, sort, argsort: symbols and errors', function()
  it('infer shapes and dtypes and survive a JSON round trip', function()
    local a = mx.sym.var('a')
    local cases = {
      { mx.sym.topk(a, { k = 2 }), { 3, 5 }, { { 3, 2 } } },
      { mx.sym.topk(a, { k = 2, axis = 0, ret_typ = 'both' }), { 3, 5 }, { { 2, 5 }, { 2, 5 } } },
      { mx.sym.topk(a, { k = 4, axis = 'None', ret_typ = 'value' }), { 3, 5 }, { { 4 } } },
      { mx.sym.topk(a, { k = 2, ret_typ = 'mask' }), { 3, 5 }, { { 3, 5 } } },
      { mx.sym.sort(a, { axis = 'None', is_ascend = false }), { 3, 5 }, { { 15 } } },
      { mx.sym.argsort(a, { axis = 0, dtype = 'int32' }), { 3, 5 }, { { 3, 5 } } },
    }
    for _, c in ipairs(cases) do
      local s, shp, want = c[1], c[2], c[3]
      local _, outs = s:infer_shape { a = shp }
      assert.are.same(want, outs)
      local json = s:tojson()
      local back = mx.sym.load_json(json)
      assert.are.equal(json, back:tojson())
      local _, outs2 = back:infer_shape { a = shp }
      assert.are.same(want, outs2)
    end
    local both = mx.sym.topk(a, { ret_typ = 'both', dtype = 'int64' })
    local names = both:list_outputs()
    assert.are.equal(2, #names)
    assert.truthy(names[1]:match('^topk%d+_value$'), names[1])
    assert.truthy(names[2]:match('^topk%d+_indices$'), names[2])
    local _, types = both:infer_type { a = 'float64' }
    assert.are.same({ 'float64', 'int64' }, types)
    local _, t2 = mx.sym.argsort(a):infer_type { a = 'float64' }
    assert.are.same({ 'float32' }, t2)
  end)

  it('reject bad parameters, naming the operator and the parameter', function()
    local x = arr(X)
    H.raises(function() return op.topk(x, { k = 4 }) end,
      'topk', "parameter 'k': expected at most 3 (the length of the sorted axis), got 4")
    H.raises(function() return op.topk(x, { ret_typ = 'values' }) end,
      'topk', "parameter 'ret_typ'", 'values')
    H.raises(function() return op.topk(x, { axis = 2 }) end,
      'topk', "parameter 'axis': axis 2 is out of range for 2-D input")
    H.raises(function() return op.argsort(x, { dtype = 'int8' }) end, 'argsort',
      "parameter 'dtype': expected one of float16, float32, float64, int32, int64, uint8, got int8")
    local long = mx.nd.zeros { 2, 300 }
    H.raises(function() return op.argsort(long, { dtype = 'uint8' }) end, 'argsort',
      "parameter 'dtype': uint8 cannot represent the indices of an axis of length 300 exactly")
    assert.are.same({ 2, 300 }, op.argsort(long, { dtype = 'int32' }).shape)
    assert.are.same({ 256 }, op.topk(mx.nd.zeros { 256 }, { k = 0, dtype = 'uint8' }).shape)
    H.raises(function() return op.sort(x, { is_ascend = 'maybe' }) end, 'sort', "parameter 'is_ascend'")
    H.raises(function() return op.sort(x, { k = 2 }) end, 'sort', "'k'")
    assert.are.same({ { 2 }, { 1 } }, op.topk(x):totable()) -- still usable
  end)

  it('gives the same values on gpu(0)', function()
    if mx.context.num_gpus() == 0 then return pending('no GPU context') end
    local x = mx.nd.array { { 3, 1, 3, 0, 2, 1 }, { 5, 5, 4, 6, 4, 7 } }
    local g = x:copyto(mx.gpu(0))
    local function same(f, both)
      local c, d = f(x), f(g)
      if not both then c, d = { c }, { d } end
      for i = 1, #c do
        assert.are.equal(mx.gpu(0), d[i].context)
        assert.are.same(c[i]:totable(), d[i]:copyto(mx.cpu()):totable())
      end
    end
    same(function(a) return op.topk(a, { k = 4 }) end)
    same(function(a) return op.topk(a, { k = 2, ret_typ = 'both', is_ascend = true }) end, true)
    same(function(a) return op.topk(a, { k = 1, axis = 0, ret_typ = 'mask' }) end)
    same(function(a) return op.sort(a, { axis = 'None', is_ascend = false }) end)
    same(function(a) return op.argsort(a, { dtype = 'int64' }) end)
    local v = {}
    for i = 1, 300 do v[i] = (i * 37) % 101 end -- ties (each value about three times)
    x, g = arr({ v }), arr({ v }):copyto(mx.gpu(0))
    same(function(a) return op.argsort(a, { is_ascend = false }) end)
    same(function(a) return op.topk(a, { k = 50, ret_typ = 'mask' }) end)
    -- the values' gradient on gpu(0) against the CPU's
    local w = mx.nd.arange(0, 50):reshape { 1, 50 }
    local function grad(a, ww)
      a:attach_grad()
      mx.autograd.record(function()
        return mx.nd.sum(op.topk(a, { k = 50, ret_typ = 'value' }) * ww)
      end):backward()
      return a.grad
    end
    assert.are.same(grad(x, w):totable(), grad(g, w:copyto(mx.gpu(0))):copyto(mx.cpu()):totable())
  end)
end)
