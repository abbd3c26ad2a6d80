-- Pooling on the CPU (src/ops/nn_pool.c, src/ops/cpu/conv.c, kernels/cpu/pool.c):
-- pooling_convention 'same' against an independent Lua reference of MXNet 1.9's rule
-- (out = ceil(x / stride), pad 0, windows start at o*stride and the last ones are clipped
-- at the end), 1-D to 3-D, max / avg / sum / lp, forward and backward; the fast max paths
-- (2x2 stride 2, general 2-D) against the generic kernel exactly, ties and NaN
-- included (the generic kernel is reached through the same problem with a trailing
-- spatial dim of 1, which no fast path takes); the fast avg / sum paths the same way
-- (exactly: they keep the generic sum order), with req add; and the errors bad
-- parameters give.
local mx = require 'luamx'
local H = require 'helpers'
local ops = require 'luamx.ndarray_ops'

local DTYPES = { float32 = 1e-5, float64 = 1e-12 }

local function prod(s)
  local p = 1
  for _, d in ipairs(s) do p = p * d end
  return p
end

local function rand_list(n)
  local t = {}
  for i = 1, n do t[i] = 2 * math.random() - 1 end
  return t
end

local function arr(flat, s, dt)
  return mx.nd.array(flat, { dtype = dt }):reshape(s)
end

-- Output size of one dim (MXNet 1.9 pooling.cc).
local function out_size(conv, x, k, s, p)
  if conv == 'same' then return math.ceil((x + 2 * p) / s) end
  if conv == 'full' then return math.ceil((x + 2 * p - k) / s) + 1 end
  return math.floor((x + 2 * p - k) / s) + 1
end

-- Reference pooling of x (N, C, spatial...) written from MXNet's pool.h rule, one window
-- at a time: start o*s - p, end min(start + k, x + p), the part inside [0, x) read.
-- Returns the flat output, its shape and, for max, the flat index (1-based) of each
-- window's first maximum.
local function pool_ref(x, xs, o)
  local nd = #xs - 2
  local k, s, p = o.kernel, o.stride or {}, o.pad or {}
  local conv, kind = o.pooling_convention or 'valid', o.pool_type or 'max'
  local incl = o.count_include_pad ~= false
  local sp, os, ys = {}, {}, { xs[1], xs[2] }
  for i = 1, nd do
    sp[i] = xs[2 + i]
    os[i] = out_size(conv, sp[i], k[i], s[i] or 1, p[i] or 0)
    ys[2 + i] = os[i]
  end
  -- pad the spatial dims to 3 (leading 1s) so one loop nest serves all
  while #sp < 3 do
    table.insert(sp, 1, 1); table.insert(os, 1, 1)
    table.insert(k, 1, 1); table.insert(s, 1, 1); table.insert(p, 1, 0)
  end
  local vol = sp[1] * sp[2] * sp[3]
  local y, arg = {}, {}
  for plane = 0, xs[1] * xs[2] - 1 do
    for a = 0, os[1] - 1 do for b = 0, os[2] - 1 do for c = 0, os[3] - 1 do
      local lo, hi, full = {}, {}, 1
      for i, oi in ipairs { a, b, c } do
        local st = oi * (s[i] or 1) - (p[i] or 0)
        local en = math.min(st + k[i], sp[i] + (p[i] or 0))
        full = full * math.max(en - st, 0)
        lo[i], hi[i] = math.max(st, 0), math.min(en, sp[i])
      end
      local best, where, acc, n = -math.huge, nil, 0, 0
      for d = lo[1], hi[1] - 1 do for h = lo[2], hi[2] - 1 do for w = lo[3], hi[3] - 1 do
        local idx = plane * vol + (d * sp[2] + h) * sp[3] + w + 1
        local v = x[idx]
        n = n + 1
        if where == nil or v > best then best, where = v, idx end
        if kind == 'lp' then acc = acc + (o.p_value == 1 and math.abs(v) or v * v)
        else acc = acc + v end
      end end end
      if kind == 'max' then y[#y + 1], arg[#y + 1] = best, where
      elseif kind == 'avg' then
        local size = incl and full or n
        y[#y + 1] = size > 0 and acc / size or 0
      elseif kind == 'lp' and o.p_value ~= 1 then y[#y + 1] = math.sqrt(acc)
      else y[#y + 1] = acc end
    end end end
  end
  return y, ys, arg
end

-- Forward through the operator; backward with head gradient g (req WRITE).
local function run(x, o, g)
  local args = { data = x }
  for key, v in pairs(o) do args[key] = v end
  local y = mx.nd.Pooling(args)
  if not g then return y end
  local gx = ops.backward('Pooling', o, { x }, { y }, { g })[1]
  return y, gx
end

local function copy(t)
  local r = {}
  for key, v in pairs(t) do r[key] = type(v) == 'table' and copy(v) or v end
  return r
end

-- Exact equality of two flat lists, NaN equal to NaN.
local function same_bits(a, b, what)
  assert(#a == #b, ('%s: length %d ~= %d'):format(what, #a, #b))
  for i = 1, #a do
    local ok = a[i] == b[i] or (a[i] ~= a[i] and b[i] ~= b[i])
    assert(ok, ('%s: element %d: %.10g ~= %.10g'):format(what, i, a[i], b[i]))
  end
end

describe("Pooling pooling_convention='same'", function()
  local cases = {
    { { 2, 3, 7 }, { kernel = { 3 }, stride = { 2 } } },
    { { 1, 2, 9 }, { kernel = { 3 }, stride = { 3 }, pool_type = 'avg' } },
    { { 1, 2, 8 }, { kernel = { 4 }, stride = { 3 }, pool_type = 'sum' } },
    { { 1, 2, 5 }, { kernel = { 3 }, stride = { 2 }, pool_type = 'lp', p_value = 2 } },
    { { 1, 2, 5 }, { kernel = { 2 }, stride = { 1 }, pool_type = 'lp', p_value = 1 } },
    { { 2, 2, 5, 6 }, { kernel = { 3, 3 }, stride = { 2, 2 } } },
    { { 1, 2, 7, 5 }, { kernel = { 2, 3 }, stride = { 3, 2 }, pool_type = 'avg' } },
    { { 1, 2, 7, 5 }, { kernel = { 2, 3 }, stride = { 3, 2 }, pool_type = 'avg',
      count_include_pad = false } },
    { { 1, 1, 4, 4 }, { kernel = { 3, 3 }, stride = { 1, 1 }, pool_type = 'sum' } },
    { { 1, 2, 7, 5 }, { kernel = { 2, 2 }, stride = { 2, 2 } } },
    { { 1, 2, 3, 3, 3 }, { kernel = { 2, 2, 2 }, stride = { 2, 2, 2 } } },
    { { 1, 1, 3, 4, 3 }, { kernel = { 2, 3, 2 }, stride = { 2, 2, 1 }, pool_type = 'avg' } },
  }
  for dt, tol in pairs(DTYPES) do
    it('forward and max gradient match the Lua reference (' .. dt .. ')', function()
      math.randomseed(11)
      for ci, c in ipairs(cases) do
        local xs, o = c[1], copy(c[2])
        o.pooling_convention = 'same'
        local x = rand_list(prod(xs))
        local ref, rs, arg = pool_ref(x, xs, copy(o))
        local g = rand_list(#ref)
        local y, gx = run(arr(x, xs, dt), o, arr(g, rs, dt))
        assert.are.same(rs, y.shape, 'case ' .. ci)
        for i = 3, #xs do assert.equal(math.ceil(xs[i] / o.stride[i - 2]), rs[i]) end
        H.near(y:toflat(), ref, tol)
        if (o.pool_type or 'max') == 'max' then
          local want = {}
          for i = 1, #x do want[i] = 0 end
          for j, at in ipairs(arg) do want[at] = want[at] + g[j] end
          H.near(gx:toflat(), want, tol)
        end
      end
    end)
  end

  it('places no padding in front: the first window starts at 0, the last is clipped', function()
    -- x = 1..7, kernel 3, stride 2: windows [0,3) [2,5) [4,7) [6,7)
    local x = arr({ 1, 2, 3, 4, 5, 6, 7 }, { 1, 1, 7 }, 'float64')
    local o = { kernel = { 3 }, stride = { 2 }, pooling_convention = 'same' }
    o.pool_type = 'sum'
    assert.are.same({ 6, 12, 18, 7 }, run(x, o):toflat())
    o.pool_type = 'avg' -- the clipped window divides by what it holds (pad is 0)
    assert.are.same({ 2, 4, 6, 7 }, run(x, o):toflat())
    o.pool_type = 'max'
    assert.are.same({ 3, 5, 7, 7 }, run(x, o):toflat())
  end)
end)

-- The generic kernel's twin of a 2-D problem: pool (N, C, H, W, 1) with a kernel of
-- depth 1 last (3-D pooling always takes the generic kernel).
local function twin(o)
  local t = copy(o)
  t.kernel[3], t.stride[3] = 1, 1
  if t.pad then t.pad[3] = 0 end
  return t
end

describe('Pooling fast max paths against the generic kernel', function()
  -- 2-D problems; the generic twin pools (N, C, H, W, 1) with a kernel of depth 1 last.
  local cases = {
    { { 2, 3, 8, 8 }, { kernel = { 2, 2 }, stride = { 2, 2 } } },
    { { 2, 3, 24, 24 }, { kernel = { 2, 2 }, stride = { 2, 2 } } },
    { { 1, 2, 5, 7 }, { kernel = { 2, 2 }, stride = { 2, 2 } } },
    { { 2, 2, 5, 7 }, { kernel = { 2, 2 }, stride = { 2, 2 }, pooling_convention = 'full' } },
    { { 1, 3, 7, 5 }, { kernel = { 2, 2 }, stride = { 2, 2 }, pooling_convention = 'same' } },
    { { 1, 1, 3, 27 }, { kernel = { 2, 2 }, stride = { 2, 2 }, pooling_convention = 'full' } },
    { { 1, 2, 6, 13 }, { kernel = { 2, 2 }, stride = { 2, 2 } } }, -- rows of 4 + overlapping 4
    { { 1, 1, 5, 11 }, { kernel = { 2, 2 }, stride = { 2, 2 }, pooling_convention = 'full' } },
    { { 1, 2, 7, 9 }, { kernel = { 3, 3 }, stride = { 2, 2 }, pad = { 1, 1 } } },
    { { 1, 1, 5, 5 }, { kernel = { 2, 2 }, stride = { 2, 2 }, pad = { 1, 1 },
      pooling_convention = 'full' } }, -- last windows empty: -inf, no gradient
    { { 1, 2, 5, 6 }, { kernel = { 3, 3 }, stride = { 1, 1 } } },
    { { 1, 2, 6, 7 }, { kernel = { 2, 3 }, stride = { 1, 2 }, pad = { 1, 1 },
      pooling_convention = 'full' } },
    { { 1, 1, 7, 8 }, { kernel = { 3, 3 }, stride = { 3, 3 }, pooling_convention = 'full' } },
    { { 1, 1, 3, 140 }, { kernel = { 2, 3 }, stride = { 1, 1 } } },
    { { 1, 2, 6, 9 }, { kernel = { 3, 3 }, stride = { 2, 2 }, pooling_convention = 'same' } },
  }
  -- Values with many ties (a few small integers, some -0.0 next to 0.0), and NaN sprinkled.
  local function tied(n, nan)
    local t = {}
    for i = 1, n do
      local r = math.random(0, 4)
      t[i] = r == 0 and -0.0 or r - 2
      if nan and math.random() < 0.05 then t[i] = 0 / 0 end
    end
    return t
  end
  for dt in pairs(DTYPES) do
    for _, nan in ipairs { false, true } do
      local what = (nan and 'ties and NaN' or 'ties') .. ', ' .. dt
      it('forward and backward agree exactly (' .. what .. ')', function()
        math.randomseed(nan and 13 or 12)
        for ci, c in ipairs(cases) do
          local xs, o = c[1], c[2]
          local x = tied(prod(xs), nan)
          local y, gx = run(arr(x, xs, dt), o, nil)
          local g = rand_list(prod(y.shape))
          y, gx = run(arr(x, xs, dt), o, arr(g, y.shape, dt))
          local xs5 = { xs[1], xs[2], xs[3], xs[4], 1 }
          local ys5 = { y.shape[1], y.shape[2], y.shape[3], y.shape[4], 1 }
          local y5, gx5 = run(arr(x, xs5, dt), twin(o), arr(g, ys5, dt))
          same_bits(y:toflat(), y5:toflat(), 'forward, case ' .. ci)
          same_bits(gx:toflat(), gx5:toflat(), 'backward, case ' .. ci)
          if not nan then -- and both agree with the reference
            local ref = pool_ref(x, xs, copy(o))
            same_bits(y:toflat(), ref, 'reference, case ' .. ci)
          end
        end
      end)
    end
  end

  it('accumulates with req add and leaves uncovered elements alone', function()
    local xs, o = { 1, 2, 5, 7 }, { kernel = { 2, 2 }, stride = { 2, 2 } }
    math.randomseed(14)
    local x = arr(rand_list(prod(xs)), xs, 'float64')
    local y = run(x, o)
    local g = arr(rand_list(prod(y.shape)), y.shape, 'float64')
    local once = ops.backward('Pooling', o, { x }, { y }, { g })[1]:toflat()
    local acc = mx.nd.ones(xs, { dtype = 'float64' })
    ops.backward('Pooling', o, { x }, { y }, { g }, { grads = { acc }, reqs = { 3 } })
    local want = {}
    for i, v in ipairs(once) do want[i] = 1 + v end
    H.near(acc:toflat(), want, 1e-15)
    -- 'valid' over 5x7 reads rows 0-3 and columns 0-5: row 4 and column 6 get 0
    for w = 0, 6 do assert.equal(0, once[4 * 7 + w + 1]) end
    for h = 0, 4 do assert.equal(0, once[h * 7 + 6 + 1]) end
  end)
end)

describe('Pooling fast avg / sum paths against the generic kernel', function()
  -- The fast paths sum each window in the generic kernel's scan order, divide by the same
  -- count (or scale by 1/4, 1/2, exact) and spread gradient shares in its order, so they
  -- agree exactly (== : only the sign of a zero may differ). The generic twin pools
  -- (N, C, H, W, 1) with a kernel of depth 1 last, as for max.
  local cases = {
    { { 2, 3, 8, 8 }, { kernel = { 2, 2 }, stride = { 2, 2 } } },
    { { 2, 3, 24, 24 }, { kernel = { 2, 2 }, stride = { 2, 2 } } },
    { { 1, 2, 5, 7 }, { kernel = { 2, 2 }, stride = { 2, 2 } } },
    { { 2, 2, 5, 7 }, { kernel = { 2, 2 }, stride = { 2, 2 }, pooling_convention = 'full' } },
    { { 1, 3, 7, 5 }, { kernel = { 2, 2 }, stride = { 2, 2 }, pooling_convention = 'same' } },
    { { 1, 1, 3, 27 }, { kernel = { 2, 2 }, stride = { 2, 2 }, pooling_convention = 'full' } },
    { { 1, 2, 6, 13 }, { kernel = { 2, 2 }, stride = { 2, 2 } } },
    { { 1, 2, 7, 9 }, { kernel = { 3, 3 }, stride = { 2, 2 }, pad = { 1, 1 } } },
    { { 1, 1, 5, 5 }, { kernel = { 2, 2 }, stride = { 2, 2 }, pad = { 1, 1 },
      pooling_convention = 'full' } }, -- last windows empty: 0, no gradient
    { { 1, 2, 5, 6 }, { kernel = { 3, 3 }, stride = { 1, 1 }, pad = { 1, 1 } } },
    { { 1, 2, 6, 7 }, { kernel = { 2, 3 }, stride = { 1, 2 }, pad = { 1, 1 },
      pooling_convention = 'full' } },
    { { 1, 1, 7, 8 }, { kernel = { 3, 3 }, stride = { 3, 3 }, pooling_convention = 'full' } },
    { { 1, 1, 3, 300 }, { kernel = { 2, 3 }, stride = { 1, 1 }, pad = { 0, 1 } } }, -- 3 blocks
    { { 1, 2, 6, 9 }, { kernel = { 3, 3 }, stride = { 2, 2 }, pooling_convention = 'same' } },
    { { 1, 2, 9, 9 }, { kernel = { 4, 4 }, stride = { 3, 2 }, pad = { 2, 3 } } },
  }
  for dt, tol in pairs(DTYPES) do
    for _, kind in ipairs { 'avg', 'sum', 'avg excluding pad' } do
      it(kind .. ': forward and backward agree exactly (' .. dt .. ')', function()
        math.randomseed(21)
        for ci, c in ipairs(cases) do
          local xs, o = c[1], copy(c[2])
          o.pool_type = kind == 'sum' and 'sum' or 'avg'
          if kind == 'avg excluding pad' then o.count_include_pad = false end
          local x = rand_list(prod(xs))
          local y = run(arr(x, xs, dt), o, nil)
          local g = rand_list(prod(y.shape))
          local gx
          y, gx = run(arr(x, xs, dt), o, arr(g, y.shape, dt))
          local xs5 = { xs[1], xs[2], xs[3], xs[4], 1 }
          local ys5 = { y.shape[1], y.shape[2], y.shape[3], y.shape[4], 1 }
          local y5, gx5 = run(arr(x, xs5, dt), twin(o), arr(g, ys5, dt))
          same_bits(y:toflat(), y5:toflat(), 'forward, case ' .. ci)
          same_bits(gx:toflat(), gx5:toflat(), 'backward, case ' .. ci)
          H.near(y:toflat(), (pool_ref(x, xs, copy(o))), tol)
        end
      end)
    end
  end

  it('1-D windows take the general path and match the reference', function()
    math.randomseed(22)
    for _, o in ipairs {
      { kernel = { 3 }, stride = { 1 }, pad = { 1 }, pool_type = 'avg', count_include_pad = false },
      { kernel = { 3 }, stride = { 2 }, pad = { 1 }, pool_type = 'avg' },
      { kernel = { 4 }, stride = { 3 }, pool_type = 'sum', pooling_convention = 'same' },
    } do
      local xs = { 2, 3, 17 }
      local x = rand_list(prod(xs))
      H.near(run(arr(x, xs, 'float64'), o):toflat(), (pool_ref(x, xs, copy(o))), 1e-12)
    end
  end)

  it('accumulates with req add, and req write zeroes uncovered elements', function()
    math.randomseed(23)
    for _, c in ipairs {
      { { 1, 2, 5, 7 }, { kernel = { 2, 2 }, stride = { 2, 2 }, pool_type = 'avg' } },
      { { 1, 2, 5, 7 }, { kernel = { 2, 2 }, stride = { 2, 2 }, pool_type = 'sum',
        pooling_convention = 'full' } },
      { { 1, 2, 6, 7 }, { kernel = { 3, 3 }, stride = { 1, 1 }, pad = { 1, 1 },
        pool_type = 'avg', count_include_pad = false } },
      { { 1, 1, 7, 8 }, { kernel = { 3, 3 }, stride = { 3, 3 }, pool_type = 'sum' } },
    } do
      local xs, o = c[1], c[2]
      local x = arr(rand_list(prod(xs)), xs, 'float64')
      local y = run(x, o)
      local g = arr(rand_list(prod(y.shape)), y.shape, 'float64')
      local once = ops.backward('Pooling', o, { x }, { y }, { g })[1]:toflat()
      local acc = mx.nd.ones(xs, { dtype = 'float64' })
      ops.backward('Pooling', o, { x }, { y }, { g }, { grads = { acc }, reqs = { 3 } })
      local want = {}
      for i, v in ipairs(once) do want[i] = 1 + v end
      H.near(acc:toflat(), want, 1e-15)
    end
    -- 'valid' 2x2 over 5x7 reads rows 0-3 and columns 0-5: row 4 and column 6 get 0
    local x = arr(rand_list(35), { 1, 1, 5, 7 }, 'float64')
    local o = { kernel = { 2, 2 }, stride = { 2, 2 }, pool_type = 'avg' }
    local y = run(x, o)
    local gx = mx.nd.ones({ 1, 1, 5, 7 }, { dtype = 'float64' })
    ops.backward('Pooling', o, { x }, { y }, { mx.nd.ones(y.shape, { dtype = 'float64' }) },
      { grads = { gx } })
    local once = gx:toflat()
    for w = 0, 6 do assert.equal(0, once[4 * 7 + w + 1]) end
    for h = 0, 4 do assert.equal(0, once[h * 7 + 6 + 1]) end
    assert.equal(0.25, once[1])
  end)
end)

describe('Pooling parameter errors', function()
  local x1 = mx.nd.zeros { 1, 1, 3 }
  local x2 = mx.nd.zeros { 1, 1, 3, 3 }
  it('same with a pad names the parameter, expected and actual', function()
    H.raises(function()
      mx.nd.Pooling { data = x2, kernel = { 2, 2 }, pad = { 1, 1 }, pooling_convention = 'same' }
    end, 'Pooling', "parameter 'pad'", "pooling_convention 'same' takes no padding",
      'expected 0', 'got 1')
  end)
  it('a kernel larger than the input is refused for same too (as MXNet does)', function()
    H.raises(function()
      mx.nd.Pooling { data = x1, kernel = { 4 }, pooling_convention = 'same' }
    end, 'Pooling', 'kernel size 4 exceeds input size 3 padded to 3')
  end)
  it('zero stride and kernel entries', function()
    H.raises(function() mx.nd.Pooling { data = x2, kernel = { 2, 2 }, stride = { 0, 1 } } end,
      'Pooling', "parameter 'stride'", 'entries must be >= 1', 'got 0')
    H.raises(function() mx.nd.Pooling { data = x2, kernel = { 2, 0 } } end,
      'Pooling', "parameter 'kernel'", 'entries must be >= 1', 'got 0')
  end)
  it('negative pad, wrong tuple lengths, bad p_value', function()
    H.raises(function() mx.nd.Pooling { data = x2, kernel = { 2, 2 }, pad = { -1, 0 } } end,
      'Pooling', "parameter 'pad'", 'entries must be >= 0', 'got -1')
    H.raises(function() mx.nd.Pooling { data = x2, kernel = { 2, 2 }, stride = { 1 } } end,
      'Pooling', "parameter 'stride'", 'expected 2 entries like kernel', 'got 1')
    H.raises(function()
      mx.nd.Pooling { data = x2, kernel = { 2, 2 }, pool_type = 'lp', p_value = 3 }
    end, 'Pooling', "parameter 'p_value'", 'expected 1 or 2', 'got 3')
  end)
  it('an output of the wrong size', function()
    local bad = mx.nd.zeros { 1, 1, 2, 2 }
    H.raises(function()
      mx.nd.Pooling { data = x2, kernel = { 2, 2 }, stride = { 2, 2 }, out = bad }
    end, 'Pooling', 'output 0', 'expected (1,1,1,1)', 'got (1,1,2,2)')
  end)
end)
