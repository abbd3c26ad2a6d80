-- softmax / log_softmax with use_length, and LeakyReLU act_type='rrelu' in training.
--
-- use_length (MXNet 1.9 src/operator/nn/softmax-inl.h, softmax.cc): a second input
-- 'length' (int32 or int64, data's shape without the softmax axis, (1,) for 1-D data)
-- keeps the first length[r] positions of each row; the rest are 0 in the output and in
-- the gradient, and 'length' gets a zero gradient. Checked against a Lua loop over every
-- axis of a 3-D array with lengths 0, 1, partial and full, in float32 and float64.
-- rrelu (src/operator/leaky_relu-inl.h): in training one slope per element, uniform in
-- [lower_bound, upper_bound], drawn from the global seed into the hidden output 'mask';
-- the backward multiplies negative inputs' gradients by that stored slope; in inference
-- the slope is (lower_bound + upper_bound) / 2. Error paths assert on their messages.
local mx = require 'luamx'
local H = require 'helpers'
local ops = require 'luamx.ndarray_ops'

local DTYPES = { float32 = 1e-5, float64 = 1e-12 }

local function flat(a) return a:toflat() end

local function rand_list(n)
  local t = {}
  for i = 1, n do t[i] = 4 * math.random() - 2 end
  return t
end

local function prod(s, from, to)
  local p = 1
  for i = from, to do p = p * s[i] end
  return p
end

-- Softmax (log_softmax when logm) of the flat array x of shape s along axis a (1-based),
-- each row r (0-based, rows ordered as data's shape without the axis) limited to its first
-- lens[r + 1] positions; the rest are 0. Temperature t.
local function softmax_ref(x, s, a, lens, logm, t)
  local outer, M, inner = prod(s, 1, a - 1), s[a], prod(s, a + 1, #s)
  local y = {}
  for o = 0, outer - 1 do
    for i = 0, inner - 1 do
      local r = o * inner + i
      local len = lens[r + 1]
      local at = function(j) return o * M * inner + j * inner + i + 1 end
      local mx_ = -math.huge
      for j = 0, len - 1 do mx_ = math.max(mx_, x[at(j)]) end
      local sum = 0
      for j = 0, len - 1 do sum = sum + math.exp((x[at(j)] - mx_) / t) end
      for j = 0, M - 1 do
        local z = (x[at(j)] - mx_) / t
        if j >= len then y[at(j)] = 0
        elseif logm then y[at(j)] = z - math.log(sum)
        else y[at(j)] = math.exp(z) / sum end
      end
    end
  end
  return y
end

-- Gradient of sum(g * y) through the masked softmax above, from its output y.
local function softmax_grad_ref(y, g, s, a, lens, logm, t)
  local outer, M, inner = prod(s, 1, a - 1), s[a], prod(s, a + 1, #s)
  local gx = {}
  for o = 0, outer - 1 do
    for i = 0, inner - 1 do
      local len = lens[o * inner + i + 1]
      local at = function(j) return o * M * inner + j * inner + i + 1 end
      local dot = 0
      for j = 0, len - 1 do dot = dot + g[at(j)] * (logm and 1 or y[at(j)]) end
      for j = 0, M - 1 do
        local q = at(j)
        if j >= len then gx[q] = 0
        elseif logm then gx[q] = (g[q] - math.exp(y[q]) * dot) / t
        else gx[q] = y[q] * (g[q] - dot) / t end
      end
    end
  end
  return gx
end

-- Lengths for the rows of shape s without axis a: 0, 1, full, then cycling partial ones.
local function lengths_for(s, a)
  local n, M = prod(s, 1, #s) / s[a], s[a]
  local t, pick = {}, { 0, 1, M }
  for r = 1, n do t[r] = pick[r] or ((r * 7) % (M + 1)) end
  return t
end

local function length_shape(s, a)
  local l = {}
  for i = 1, #s do if i ~= a then l[#l + 1] = s[i] end end
  if #l == 0 then l = { 1 } end
  return l
end

describe('softmax with use_length', function()
  it('lists the length argument only with use_length, by MXNet\'s names', function()
    local d, l = mx.sym.Variable('data'), mx.sym.Variable('length')
    assert.are.same({ 'data', 'length' },
      mx.sym.softmax { data = d, length = l, use_length = true }:list_arguments())
    assert.are.same({ 'data', 'sm_length' },
      mx.sym.softmax { data = d, use_length = true, name = 'sm' }:list_arguments())
    assert.are.same({ 'data', 'lsm_length' },
      mx.sym.log_softmax { data = d, use_length = true, name = 'lsm' }:list_arguments())
    assert.are.same({ 'data' }, mx.sym.softmax { data = d, name = 'p' }:list_arguments())
    assert.are.same({ 'data' },
      mx.sym.softmax { data = d, use_length = false, name = 'q' }:list_arguments())
  end)

  it('infers the length shape: data\'s without the axis, (1,) for 1-D data', function()
    local d, l = mx.sym.Variable('data'), mx.sym.Variable('length')
    local cases = { { -1, { 2, 3 } }, { 0, { 3, 4 } }, { 1, { 2, 4 } }, { 2, { 2, 3 } },
      { -3, { 3, 4 } } }
    for _, c in ipairs(cases) do
      local s = mx.sym.softmax { data = d, length = l, use_length = true, axis = c[1] }
      local args, outs = s:infer_shape { data = { 2, 3, 4 } }
      assert.are.same(c[2], args[2])
      assert.are.same({ 2, 3, 4 }, outs[1])
    end
    local s1 = mx.sym.softmax { data = d, length = l, use_length = true }
    assert.are.same({ 1 }, (s1:infer_shape { data = { 5 } })[2])
  end)

  for dt, tol in pairs(DTYPES) do
    for _, logm in ipairs { false, true } do
      local opname = logm and 'log_softmax' or 'softmax'
      it(opname .. ' forward and backward match a Lua loop on every axis (' .. dt .. ')', function()
        math.randomseed(11)
        local s = { 2, 3, 4 }
        for a = 1, 3 do
          for _, ldt in ipairs { 'int32', 'int64' } do
            local t = a == 2 and 2.5 or 1
            local x = rand_list(24)
            local lens = lengths_for(s, a)
            local X = mx.nd.array(x, { dtype = dt }):reshape(s)
            local L = mx.nd.array(lens, { dtype = ldt }):reshape(length_shape(s, a))
            local p = { axis = a - 1, use_length = true }
            if t ~= 1 then p.temperature = t end
            local pa = { data = X, length = L }
            for k, v in pairs(p) do pa[k] = v end
            local y = mx.nd[opname](pa)
            local ref = softmax_ref(x, s, a, lens, logm, t)
            H.near(flat(y), ref, tol * 10)
            -- negative axis: the same op
            p.axis = a - 4
            H.near(flat(ops.forward_all(opname, p, { X, L })[1]), ref, tol * 10)
            -- backward: masked gradient for data, zeros for length
            local g = rand_list(24)
            local G = mx.nd.array(g, { dtype = dt }):reshape(s)
            local gr = ops.backward(opname, p, { X, L }, { y }, { G })
            H.near(flat(gr[1]), softmax_grad_ref(flat(y), g, s, a, lens, logm, t), tol * 100)
            assert.are.equal(ldt, gr[2].dtype)
            for _, v in ipairs(flat(gr[2])) do assert.are.equal(0, v) end
          end
        end
      end)
    end

    it('length 0 gives a zero row, 1 a one-hot (or 0 for log), full the plain softmax (' .. dt .. ')', function()
      local x = mx.nd.array({ { 1, 2, 3 }, { 1, 2, 3 }, { 1, 2, 3 } }, { dtype = dt })
      local L = mx.nd.array({ 0, 1, 3 }, { dtype = 'int32' })
      local y = flat(mx.nd.softmax { data = x, length = L, use_length = true })
      local full = flat(mx.nd.softmax(mx.nd.array({ 1, 2, 3 }, { dtype = dt })))
      H.near(y, { 0, 0, 0, 1, 0, 0, full[1], full[2], full[3] }, tol)
      local ly = flat(mx.nd.log_softmax { data = x, length = L, use_length = true })
      H.near({ ly[1], ly[2], ly[3], ly[4], ly[5], ly[6] }, { 0, 0, 0, 0, 0, 0 }, tol)
      -- 1-D data takes a (1,) length
      local y1 = mx.nd.softmax { data = mx.nd.array({ 1, 2, 3 }, { dtype = dt }),
        length = mx.nd.array({ 2 }, { dtype = 'int64' }), use_length = true }
      H.near(flat(y1), { 1 / (1 + math.exp(1)), 1 / (1 + math.exp(-1)), 0 }, tol)
    end)
  end

  it('runs in an executor: forward, data gradient masked, length gradient zeros', function()
    local d, l = mx.sym.Variable('data'), mx.sym.Variable('length')
    local s = mx.sym.softmax { data = d, length = l, use_length = true, axis = 0, name = 'sm' }
    local exe = s:simple_bind { data = { 3, 2 }, type_dict = { data = 'float64', length = 'int32' } }
    assert.are.same({ 2 }, exe.arg_dict.length.shape)
    exe.arg_dict.data:set { { 1, 4 }, { 2, 5 }, { 3, 6 } }
    exe.arg_dict.length:set { 2, 0 }
    local y = flat(exe:forward { is_train = true }[1])
    local ref = softmax_ref({ 1, 4, 2, 5, 3, 6 }, { 3, 2 }, 1, { 2, 0 }, false, 1)
    H.near(y, ref, 1e-12)
    local g = { 1, 2, 3, 4, 5, 6 }
    exe:backward(mx.nd.array(g, { dtype = 'float64' }):reshape { 3, 2 })
    H.near(flat(exe.grad_dict.data), softmax_grad_ref(y, g, { 3, 2 }, 1, { 2, 0 }, false, 1), 1e-12)
    assert.are.same({ 0, 0 }, flat(exe.grad_dict.length))
  end)

  it('refuses a length of the wrong shape, naming op, argument, expected and actual', function()
    local d, l = mx.sym.Variable('data'), mx.sym.Variable('length')
    local s = mx.sym.softmax { data = d, length = l, use_length = true, name = 'sm' }
    H.raises(function() s:infer_shape { data = { 2, 3 }, length = { 3 } } end,
      "softmax 'sm'", "input 'length'", 'expected shape (2,)', 'got (3,)')
    local s0 = mx.sym.softmax { data = d, length = l, use_length = true, axis = 0, name = 'sm0' }
    H.raises(function() s0:infer_shape { data = { 2, 3 }, length = { 2 } } end,
      "softmax 'sm0'", "input 'length'", 'expected shape (3,)', 'got (2,)')
    local x = mx.nd.ones { 2, 3 }
    H.raises(function()
      mx.nd.softmax { data = x, length = mx.nd.array({ 1, 2, 3 }, { dtype = 'int32' }), use_length = true }
    end, 'softmax', "input 'length'", 'expected shape (2,)', 'got (3,)')
  end)

  it('refuses use_length without a length input, naming op and argument', function()
    local x = mx.nd.ones { 2, 3 }
    H.raises(function() mx.nd.softmax(x, { use_length = true }) end,
      'mx.nd.softmax', "missing input 'length'")
    H.raises(function() ops.forward_all('log_softmax', { use_length = true }, { x }) end,
      'log_softmax', 'expected 2 inputs', 'got 1')
    -- a symbol without one gets an automatic variable, float32 under simple_bind's
    -- defaults, which the CPU kernel refuses as MXNet does (integer lengths only)
    local s = mx.sym.softmax { data = mx.sym.Variable('data'), use_length = true, name = 'sm' }
    local exe = s:simple_bind { data = { 2, 3 } }
    assert.are.same({ 2 }, exe.arg_dict.sm_length.shape)
    H.raises(function() exe:forward() end,
      "softmax 'sm'", "input 'length'", 'expected int32 or int64', 'got float32')
  end)

  it('refuses float lengths and lengths outside [0, axis size]', function()
    local x = mx.nd.ones { 2, 3 }
    H.raises(function()
      mx.nd.softmax { data = x, length = mx.nd.array({ 1, 2 }, { dtype = 'float64' }), use_length = true }
    end, 'softmax', "input 'length'", 'expected int32 or int64', 'got float64')
    H.raises(function()
      mx.nd.softmax { data = x, length = mx.nd.array({ 1, 4 }, { dtype = 'int32' }), use_length = true }
    end, 'softmax', "input 'length'", 'element 1 is 4', 'expected a length in [0, 3]')
    H.raises(function()
      mx.nd.log_softmax { data = x, length = mx.nd.array({ -1, 2 }, { dtype = 'int64' }),
        use_length = true }
    end, 'log_softmax', "input 'length'", 'element 0 is -1', 'expected a length in [0, 3]')
  end)
end)

describe('LeakyReLU rrelu', function()
  local LO, HI = 0.125, 0.334 -- MXNet's defaults

  local function data(n)
    local t = {}
    for i = 1, n do t[i] = (i % 3 == 0 and 1 or -1) * (0.25 + (i % 7) / 7) end
    return t
  end

  for dt, tol in pairs(DTYPES) do
    it('draws one slope per element in [lower, upper], repeatable under a seed (' .. dt .. ')', function()
      local x = data(600)
      local X = mx.nd.array(x, { dtype = dt })
      mx.random.seed(42)
      local a = ops.forward_all('LeakyReLU', { act_type = 'rrelu' }, { X }, true)
      mx.random.seed(42)
      local b = ops.forward_all('LeakyReLU', { act_type = 'rrelu' }, { X }, true)
      assert.are.equal(2, #a)
      local ya, ma = flat(a[1]), flat(a[2])
      assert.are.same(ya, flat(b[1]))
      assert.are.same(ma, flat(b[2]))
      local distinct, lo, hi = {}, math.huge, -math.huge
      for i, s in ipairs(ma) do
        assert.is_true(s >= LO - tol and s <= HI + tol, ('slope %g out of bounds'):format(s))
        lo, hi = math.min(lo, s), math.max(hi, s)
        distinct[s] = true
        local want = x[i] > 0 and x[i] or s * x[i]
        H.near({ ya[i] }, { want }, tol)
      end
      -- spread over the interval, not one value
      assert.is_true(lo < LO + 0.02 and hi > HI - 0.02)
      local nd = 0
      for _ in pairs(distinct) do nd = nd + 1 end
      assert.is_true(nd > 500)
      -- another seed, other slopes
      mx.random.seed(43)
      local c = ops.forward_all('LeakyReLU', { act_type = 'rrelu' }, { X }, true)
      assert.are_not.same(ma, flat(c[2]))
      -- the visible output alone, through mx.nd
      mx.random.seed(42)
      local v = mx.nd.LeakyReLU(X, { act_type = 'rrelu', is_train = true })
      assert.are.same(ya, flat(v))
    end)

    it('honours lower_bound / upper_bound (' .. dt .. ')', function()
      local X = mx.nd.array(data(300), { dtype = dt })
      mx.random.seed(5)
      local r = ops.forward_all('LeakyReLU', { act_type = 'rrelu', lower_bound = 0.5,
        upper_bound = 0.75 }, { X }, true)
      for _, s in ipairs(flat(r[2])) do assert.is_true(s >= 0.5 - tol and s <= 0.75 + tol) end
    end)

    it('uses the mean slope in inference (' .. dt .. ')', function()
      local X = mx.nd.array({ -2, -1, 0, 1.5 }, { dtype = dt })
      local y = mx.nd.LeakyReLU(X, { act_type = 'rrelu' })
      local m = (LO + HI) / 2
      H.near(flat(y), { -2 * m, -m, 0, 1.5 }, tol)
      local y2 = mx.nd.LeakyReLU(X, { act_type = 'rrelu', lower_bound = 0.2, upper_bound = 0.6 })
      H.near(flat(y2), { -0.8, -0.4, 0, 1.5 }, tol)
    end)

    it('backward multiplies negative inputs\' gradients by the stored slope (' .. dt .. ')', function()
      local x = data(40)
      local X = mx.nd.array(x, { dtype = dt })
      mx.random.seed(9)
      local outs = ops.forward_all('LeakyReLU', { act_type = 'rrelu' }, { X }, true)
      local g = {}
      for i = 1, 40 do g[i] = i / 10 end
      local G = mx.nd.array(g, { dtype = dt })
      local gr = ops.backward('LeakyReLU', { act_type = 'rrelu' }, { X }, outs, { G })
      local m = flat(outs[2])
      local want = {}
      for i = 1, 40 do want[i] = x[i] > 0 and g[i] or g[i] * m[i] end
      H.near(flat(gr[1]), want, tol)
    end)
  end

  it('trains in an executor: the backward sees the slopes the forward drew', function()
    local s = mx.sym.LeakyReLU { data = mx.sym.Variable('x'), act_type = 'rrelu', name = 'rr' }
    assert.are.same({ 'rr_output' }, s:list_outputs())
    local exe = s:simple_bind { x = { 4, 5 }, type_dict = { x = 'float64' } }
    local x, rows = data(20), {}
    for r = 1, 4 do rows[r] = { (table.unpack or unpack)(x, r * 5 - 4, r * 5) } end
    exe.arg_dict.x:set(rows)
    mx.random.seed(1)
    local y = flat(exe:forward { is_train = true }[1])
    exe:backward(mx.nd.ones({ 4, 5 }, { dtype = 'float64' }))
    local gx = flat(exe.grad_dict.x)
    for i = 1, 20 do
      if x[i] > 0 then
        assert.are.equal(1, gx[i])
        assert.are.equal(x[i], y[i])
      else
        H.near({ gx[i] }, { y[i] / x[i] }, 1e-12)
        assert.is_true(gx[i] >= LO and gx[i] <= HI)
      end
    end
    -- same seed, same step
    mx.random.seed(1)
    assert.are.same(y, flat(exe:forward { is_train = true }[1]))
    -- inference: the mean slope
    local yi = flat(exe:forward { is_train = false }[1])
    for i = 1, 20 do
      H.near({ yi[i] }, { x[i] > 0 and x[i] or x[i] * (LO + HI) / 2 }, 1e-12)
    end
  end)
end)
