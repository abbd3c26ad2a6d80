--- spec/reduce_large_spec.lua — reductions, broadcasting and strided copies on arrays
-- large enough to take the kernels' parallel paths (one long row split among threads,
-- many rows, column blocks) and their collapsed-shape fast paths, against plain Lua
-- loops in float64.
local mx = require 'luamx'
local H = require 'helpers'

-- Deterministic values in [-1, 1) from an index (no RNG dependence).
local function val(i) return ((i * 7919) % 2001 - 1000) / 1000 end

local function filled(shape, dtype)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  local t = {}
  for i = 1, n do t[i] = val(i) end
  return mx.nd.array(t, { dtype = dtype or 'float64' }):reshape(shape), t
end

-- Reference reduction of flat t (C order over shape) along the axes set `red`.
local function ref_reduce(t, shape, red, kind)
  local nd, ostride, osize = #shape, {}, 1
  for d = nd, 1, -1 do
    if not red[d] then ostride[d] = osize; osize = osize * shape[d] else ostride[d] = 0 end
  end
  local init = kind == 'max' and -math.huge or kind == 'min' and math.huge or 0
  local out = {}
  for i = 1, osize do out[i] = init end
  local idx = {}
  for d = 1, nd do idx[d] = 0 end
  for i = 1, #t do
    local o = 1
    for d = 1, nd do o = o + idx[d] * ostride[d] end
    local v = t[i]
    if kind == 'sum' then out[o] = out[o] + v
    elseif kind == 'max' then out[o] = math.max(out[o], v)
    elseif kind == 'min' then out[o] = math.min(out[o], v)
    elseif kind == 'norm' then out[o] = out[o] + v * v end
    for d = nd, 1, -1 do
      idx[d] = idx[d] + 1
      if idx[d] < shape[d] then break end
      idx[d] = 0
    end
  end
  if kind == 'norm' then for i = 1, osize do out[i] = math.sqrt(out[i]) end end
  return out
end

describe('reductions on large arrays (parallel paths)', function()
  local cases = {
    { shape = { 300000 }, axis = nil, red = { true } },                 -- one long row
    { shape = { 1, 270000 }, axis = { 1 }, red = { false, true } },     -- one long row
    { shape = { 3000, 100 }, axis = { 1 }, red = { false, true } },     -- many rows
    { shape = { 100, 3000 }, axis = { 0 }, red = { true, false } },     -- columns
    { shape = { 5, 300, 200 }, axis = { 1 }, red = { false, true, false } },
    { shape = { 40, 50, 150 }, axis = { 0, 2 }, red = { true, false, true } }, -- serial walk
  }
  for _, kind in ipairs { 'sum', 'max', 'min', 'norm' } do
    it(kind .. ' matches a Lua loop for every reduction form', function()
      for _, c in ipairs(cases) do
        local x, t = filled(c.shape)
        local want = ref_reduce(t, c.shape, c.red, kind)
        local got = mx.nd[kind](x, c.axis and { axis = c.axis } or nil):toflat()
        H.near(got, want, 1e-12)
      end
    end)
  end

  it('sum with req add (out given twice) accumulates', function()
    local x, t = filled { 3000, 100 }
    local want = ref_reduce(t, { 3000, 100 }, { false, true }, 'sum')
    local out = mx.nd.sum(x, { axis = 1 })
    local grad = mx.nd.zeros { 3000, 100 }
    -- the gradient of sum is the head broadcast back: ones everywhere
    local e = mx.sym.sum(mx.sym.Variable 'x', { axis = 1 }):simple_bind { x = { 3000, 100 } }
    e.arg_dict.x:set(x)
    e:forward { is_train = true }
    e:backward { mx.nd.ones { 3000 } }
    grad = e.grad_dict.x:toflat()
    for i = 1, #grad, 997 do assert.are.equal(1, grad[i]) end
    H.near(out:toflat(), want, 1e-12)
  end)

  it('float32 sums of long rows stay accurate (partial sums per lane)', function()
    local x, t = filled({ 1, 1048576 }, 'float32')
    local xs = x:toflat()
    local s = 0
    for i = 1, #xs do s = s + xs[i] end
    local got = mx.nd.sum(x):toflat()[1]
    assert.is_true(math.abs(got - s) <= 1e-4 * math.max(1, math.abs(s)), ('%g vs %g'):format(got, s))
    local _ = t
  end)
end)

describe('broadcasting and strided copies on large arrays', function()
  it('broadcast_add/mul with a row, a column and both match loops', function()
    local a, ta = filled { 1200, 300 }
    local row, trow = filled { 300 }
    local col, tcol = filled { 1200, 1 }
    local s = mx.nd.broadcast_add(a, row):toflat()
    local m = mx.nd.broadcast_mul(a, col):toflat()
    local o = mx.nd.broadcast_sub(col, row:reshape { 1, 300 }):toflat()
    for i = 0, 1199 do
      for j = 0, 299 do
        local k = i * 300 + j + 1
        assert(s[k] == ta[k] + trow[j + 1], 'add ' .. k)
        assert(m[k] == ta[k] * tcol[i + 1], 'mul ' .. k)
        assert(o[k] == tcol[i + 1] - trow[j + 1], 'sub ' .. k)
      end
    end
  end)

  it('broadcast_add gradients sum over the broadcast axes', function()
    local e = mx.sym.broadcast_add(mx.sym.Variable 'a', mx.sym.Variable 'b')
      :simple_bind { a = { 1200, 300 }, b = { 1, 300 } }
    e:forward { is_train = true }
    local head, th = filled { 1200, 300 }
    e:backward { head }
    -- the executor is float32: compare with the head as float32 saw it
    th = head:astype('float32'):toflat()
    local want = ref_reduce(th, { 1200, 300 }, { true, false }, 'sum')
    H.near(e.grad_dict.b:toflat(), want, 1e-5)
    H.near(e.grad_dict.a:toflat(), th)
  end)

  it('transpose and slice of a large array match index arithmetic', function()
    local a, ta = filled { 700, 400 }
    local tr = mx.nd.transpose(a):toflat()
    for i = 0, 399, 7 do
      for j = 0, 699, 5 do assert(tr[i * 700 + j + 1] == ta[j * 400 + i + 1]) end
    end
    local sl = mx.nd.slice(a, { ['begin'] = { 10, 100 }, ['end'] = { 690, 350 } }):toflat()
    for i = 0, 679, 3 do
      for j = 0, 249, 3 do assert(sl[i * 250 + j + 1] == ta[(i + 10) * 400 + j + 100 + 1]) end
    end
  end)
end)

describe('softmax over a non-last axis (column blocks)', function()
  -- (outer, len, inner) = (3, 40, 700): three column blocks per outer, the last partial
  local shape = { 3, 40, 700 }
  local function ref(t, logm)
    local out = {}
    for o = 0, 2 do
      for i = 0, 699 do
        local m = -math.huge
        for j = 0, 39 do m = math.max(m, t[(o * 40 + j) * 700 + i + 1]) end
        local s = 0
        for j = 0, 39 do s = s + math.exp(t[(o * 40 + j) * 700 + i + 1] - m) end
        for j = 0, 39 do
          local k = (o * 40 + j) * 700 + i + 1
          out[k] = logm and (t[k] - m - math.log(s)) or math.exp(t[k] - m) / s
        end
      end
    end
    return out
  end

  it('softmax and log_softmax match the formula (float64)', function()
    local x, t = filled(shape)
    H.near(mx.nd.softmax(x, { axis = 1 }):toflat(), ref(t, false), 1e-12)
    H.near(mx.nd.log_softmax(x, { axis = 1 }):toflat(), ref(t, true), 1e-12)
  end)

  it('the gradient is y * (g - sum(g * y)) along the axis', function()
    local x, t = filled(shape)
    local e = mx.sym.softmax(mx.sym.Variable 'x', { axis = 1 }):simple_bind { x = shape, type_dict = { x = 'float64' } }
    e.arg_dict.x:set(x)
    e:forward { is_train = true }
    local head, th = filled(shape)
    e:backward { head }
    local y, gx = e.outputs[1]:toflat(), e.grad_dict.x:toflat()
    for o = 0, 2 do
      for i = 0, 699, 13 do
        local s = 0
        for j = 0, 39 do local k = (o * 40 + j) * 700 + i + 1; s = s + th[k] * y[k] end
        for j = 0, 39 do
          local k = (o * 40 + j) * 700 + i + 1
          assert(math.abs(gx[k] - y[k] * (th[k] - s)) <= 1e-12, 'gradient ' .. k)
        end
      end
    end
    local _ = t
  end)
end)
