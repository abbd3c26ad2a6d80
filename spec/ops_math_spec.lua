-- ops_math_spec.lua — the math family (ops14a): MXNet 1.9's remaining unary functions,
-- comparisons and logical ops (equal shapes, scalar, broadcast), hypot, mod and
-- smooth_l1. Forward values against Lua's math library and the numbers MXNet's
-- documentation gives, in float32 and float64 (and float16 for a few); gradients against
-- closed forms through autograd (tests/test_gradcheck.c checks them all by finite
-- differences); aliases, help text, JSON round trip and the errors of bad input.
local mx = require 'luamx'
local H = require 'helpers'

local DTYPES = { float32 = 2e-6, float64 = 1e-13 }
local PI = math.pi

local function arr(t, dt) return mx.nd.array(t, { dtype = dt or 'float64' }) end
local function map(t, f)
  local r = {}
  for i, v in ipairs(t) do r[i] = f(v) end
  return r
end

-- Lua references (LuaJIT's math has no inverse hyperbolic functions, erf or gamma)
local function asinh(x) return math.log(x + math.sqrt(x * x + 1)) end
local function acosh(x) return math.log(x + math.sqrt(x * x - 1)) end
local function atanh(x) return 0.5 * math.log((1 + x) / (1 - x)) end
local function cbrt(x) return x < 0 and -(-x) ^ (1 / 3) or x ^ (1 / 3) end

local XS = { -0.9, -0.35, -0.01, 0, 0.2, 0.5, 0.77 }
local PS = { 0.05, 0.5, 1, 1.7, 3.25, 10 }

describe('math family: unary functions', function()
  local cases = {
    { 'log1p', PS, function(x) return math.log(1 + x) end },
    { 'expm1', XS, function(x) return math.exp(x) - 1 end },
    { 'log2', PS, function(x) return math.log(x) / math.log(2) end },
    { 'log10', PS, math.log10 },
    { 'cbrt', { -27, -0.5, 0, 2, 8, 1000 }, cbrt },
    { 'rcbrt', { -27, 0.5, 2, 8, 1000 }, function(x) return 1 / cbrt(x) end },
    { 'degrees', XS, function(x) return x * 180 / PI end },
    { 'radians', { -180, -45, 0, 30, 720 }, function(x) return x * PI / 180 end },
    { 'tan', XS, math.tan },
    { 'arcsin', XS, math.asin },
    { 'arccos', XS, math.acos },
    { 'arctan', { -30, -1, 0, 0.3, 4 }, math.atan },
    { 'sinh', XS, math.sinh },
    { 'cosh', XS, math.cosh },
    { 'arcsinh', { -3, -0.5, 0, 0.25, 7 }, asinh },
    { 'arccosh', { 1, 1.5, 2, 10 }, acosh },
    { 'arctanh', XS, atanh },
    { 'softsign', { -3, -0.5, 0, 0.25, 7 }, function(x) return x / (1 + math.abs(x)) end },
    { 'logical_not', { -2, 0, 0.5, 0, 3 }, function(x) return x == 0 and 1 or 0 end },
  }
  for dt, tol in pairs(DTYPES) do
    it('match Lua references (' .. dt .. ')', function()
      for _, c in ipairs(cases) do
        local name, xs, f = c[1], c[2], c[3]
        local y = mx.nd[name](arr(xs, dt))
        assert.equal(dt, y.dtype, name)
        local ok, e = pcall(H.near, y:toflat(), map(xs, f), tol * 4)
        assert(ok, name .. ': ' .. tostring(e))
      end
    end)
  end

  it('erf, erfinv, gamma and gammaln match known values', function()
    -- erf(0.5), erf(1), erf(-2) (Abramowitz & Stegun table 7.1)
    H.near(mx.nd.erf(arr { 0, 0.5, 1, -2 }):toflat(),
      { 0, 0.5204998778130465, 0.8427007929497149, -0.9953222650189527 }, 1e-15)
    -- erfinv inverts erf to double precision; the ends are infinite
    local xs = { -2.5, -1, -0.3, 0, 0.01, 0.7, 1.9, 3 }
    local back = mx.nd.erfinv(mx.nd.erf(arr(xs))):toflat()
    H.near(back, xs, 1e-12)
    local ends = mx.nd.erfinv(arr { 1, -1, 0.5 }):toflat()
    assert.equal(math.huge, ends[1])
    assert.equal(-math.huge, ends[2])
    H.near({ ends[3] }, { 0.4769362762044699 }, 1e-15)
    -- Γ(5) = 24, Γ(0.5) = √π, Γ(-0.5) = -2√π; lnΓ(10) = ln 9!
    H.near(mx.nd.gamma(arr { 5, 0.5, -0.5, 1 }):toflat(),
      { 24, math.sqrt(PI), -2 * math.sqrt(PI), 1 }, 1e-14)
    H.near(mx.nd.gammaln(arr { 10, 1, 0.5, 100 }):toflat(),
      { math.log(362880), 0, 0.5 * math.log(PI), 359.13420536957540 }, 1e-13)
    -- float32 too
    H.near(mx.nd.gamma(arr({ 5, 0.5 }, 'float32')):toflat(), { 24, math.sqrt(PI) }, 1e-6)
    H.near(mx.nd.erfinv(arr({ 0.5 }, 'float32')):toflat(), { 0.4769362762044699 }, 1e-6)
  end)

  it('fix, rint, trunc and degrees give the numbers of MXNet\'s documentation', function()
    for _, dt in ipairs { 'float32', 'float64', 'float16' } do
      assert.same({ -2, -1, 1, 2 }, mx.nd.fix(arr({ -2.1, -1.9, 1.9, 2.1 }, dt)):toflat())
      -- rint: n.5 goes to n (not to even, not away from zero)
      assert.same({ -2, -2, 1, 2, 2 }, mx.nd.rint(arr({ -2.1, -1.9, 1.5, 1.9, 2.1 }, dt)):toflat())
      assert.same({ -2, 1, 2, -3 }, mx.nd.rint(arr({ -1.5, 1.5, 2.5, -2.5 }, dt)):toflat())
      assert.same({ -2, -1, 1, 1, 2 }, mx.nd.trunc(arr({ -2.1, -1.9, 1.5, 1.9, 2.1 }, dt)):toflat())
    end
    H.near(mx.nd.degrees(arr { 0, PI / 2, PI, 3 * PI / 2, 2 * PI }):toflat(),
      { 0, 90, 180, 270, 360 }, 1e-14)
    H.near(mx.nd.radians(arr { 0, 90, 180, 270, 360 }):toflat(),
      { 0, PI / 2, PI, 3 * PI / 2, 2 * PI }, 1e-14)
    -- float16 computes in float32 and rounds once
    H.near(mx.nd.cbrt(arr({ 8, -27, 0.125 }, 'float16')):toflat(), { 2, -3, 0.5 }, 1e-3)
  end)

  it('gradients follow the closed forms (autograd)', function()
    local function grad(name, xs, params)
      local x = arr(xs)
      x:attach_grad()
      mx.autograd.record(function() return mx.nd[name](x, params) end):backward()
      return x.grad:toflat()
    end
    H.near(grad('log1p', { 0.5, 2 }), { 1 / 1.5, 1 / 3 }, 1e-14)
    H.near(grad('cbrt', { 8, -27 }), { 1 / 12, 1 / 27 }, 1e-14)
    H.near(grad('tan', { 0.3 }), { 1 + math.tan(0.3) ^ 2 }, 1e-14)
    H.near(grad('arccosh', { 2 }), { 1 / math.sqrt(3) }, 1e-14)
    H.near(grad('erf', { 0.5 }), { 2 / math.sqrt(PI) * math.exp(-0.25) }, 1e-14)
    H.near(grad('erfinv', { 0.5 }), { math.sqrt(PI) / 2 * math.exp(0.4769362762044699 ^ 2) }, 1e-12)
    -- d/dx Γ(x) = Γ(x) ψ(x): ψ(1) = -γ, ψ(5) = 1 + 1/2 + 1/3 + 1/4 - γ
    local euler = 0.57721566490153286
    H.near(grad('gamma', { 1, 5 }), { -euler, 24 * (25 / 12 - euler) }, 1e-12)
    local psi_half = -euler - 2 * math.log(2) -- ψ(1/2); ψ(-1/2) = ψ(1/2) + 2
    H.near(grad('gammaln', { 0.5, -0.5 }), { psi_half, psi_half + 2 }, 1e-12)
    assert.same({ 0, 0, 0 }, grad('rint', { 0.4, 1.5, -3 }))
    assert.same({ 0, 0 }, grad('logical_not', { 0, 2 }))
  end)

  it('help text comes from the registry', function()
    assert.truthy(mx.op.info('erfinv').doc:find('inverse gauss error function', 1, true))
    assert.truthy(mx.op.info('rint').doc:find('rint([-1.5, 1.5, 2.5]) = [-2, 1, 2]', 1, true))
    assert.truthy(mx.op.info('smooth_l1').doc:find('[0.5, 1.5, 2.5, 3.5]', 1, true))
  end)

  it('refuses integer input naming the operator and argument', function()
    H.raises(function() mx.nd.log1p(mx.nd.array({ 1, 2 }, { dtype = 'int32' })) end,
      'log1p', "input 'data'", 'int32')
  end)
end)

describe('math family: comparisons, logical ops, hypot, mod, smooth_l1', function()
  local A = { -2, -1, 0, 0.5, 3, 3 }
  local B = { -2, 1, 0, 0, 2, 4 }
  for dt, tol in pairs(DTYPES) do
    it('equal shapes (' .. dt .. ')', function()
      local a, b = arr(A, dt), arr(B, dt)
      local function cmp(name, f)
        local y = mx.nd[name](a, b)
        assert.equal(dt, y.dtype)
        local ref = {}
        for i = 1, #A do ref[i] = f(A[i], B[i]) and 1 or 0 end
        assert.same(ref, y:toflat(), name)
      end
      cmp('_equal', function(x, y) return x == y end)
      cmp('_not_equal', function(x, y) return x ~= y end)
      cmp('_greater', function(x, y) return x > y end)
      cmp('_greater_equal', function(x, y) return x >= y end)
      cmp('_lesser', function(x, y) return x < y end)
      cmp('_lesser_equal', function(x, y) return x <= y end)
      cmp('_logical_and', function(x, y) return x ~= 0 and y ~= 0 end)
      cmp('_logical_or', function(x, y) return x ~= 0 or y ~= 0 end)
      cmp('_logical_xor', function(x, y) return (x ~= 0) ~= (y ~= 0) end)
      H.near(mx.nd._hypot(arr({ 3, -5, 0 }, dt), arr({ 4, 12, -2 }, dt)):toflat(), { 5, 13, 2 }, tol)
    end)

    it('mod takes the divisor\'s sign, and 0 for a zero divisor (' .. dt .. ')', function()
      local x = arr({ -3, 3, -3, 3, 5, 4, -4, 7.5 }, dt)
      local y = arr({ 2, 2, -2, -2, 0, 2, 2, -2 }, dt)
      assert.same({ 1, 1, -1, -1, 0, 0, 0, -0.5 }, mx.nd._mod(x, y):toflat())
      assert.same({ 1, 0.5, 0 }, mx.nd._mod_scalar(arr({ -3, 2.5, 4 }, dt), { scalar = 2 }):toflat())
      -- _rmod_scalar: scalar mod data
      assert.same({ 1, -1, 0 }, mx.nd._rmod_scalar(arr({ 2, -2, 0 }, dt), { scalar = 5 }):toflat())
    end)

    it('scalar forms and smooth_l1 (' .. dt .. ')', function()
      local x = arr({ -1, 0, 2 }, dt)
      assert.same({ 1, 0, 1 }, mx.nd._logical_and_scalar(x, { scalar = 3 }):toflat())
      assert.same({ 0, 0, 0 }, mx.nd._logical_and_scalar(x, { scalar = 0 }):toflat())
      assert.same({ 1, 0, 1 }, mx.nd._logical_or_scalar(x, { scalar = 0 }):toflat())
      assert.same({ 0, 1, 0 }, mx.nd._logical_xor_scalar(x, { scalar = 1 }):toflat())
      H.near(mx.nd._hypot_scalar(arr({ 3, -12 }, dt), { scalar = 4 }):toflat(),
        { 5, math.sqrt(160) }, tol)
      -- MXNet's example: smooth_l1([1, 2, 3, 4], scalar=1) = [0.5, 1.5, 2.5, 3.5]
      assert.same({ 0.5, 1.5, 2.5, 3.5 }, mx.nd.smooth_l1(arr({ 1, 2, 3, 4 }, dt), { scalar = 1 }):toflat())
      -- sigma 2: quadratic inside |x| < 1/4: 0.5 (2x)^2; outside |x| - 0.125
      H.near(mx.nd.smooth_l1(arr({ -1, -0.1, 0.2, 0.5 }, dt), { scalar = 2 }):toflat(),
        { 0.875, 0.02, 0.08, 0.375 }, tol)
    end)

    it('broadcasting (' .. dt .. ')', function()
      local a = arr({ 1, 2, 3 }, dt):reshape { 3, 1 }
      local b = arr({ 0, 2, 3, 4 }, dt):reshape { 1, 4 }
      local ge = mx.nd.broadcast_greater_equal(a, b)
      assert.same({ 3, 4 }, ge.shape)
      assert.same({ 1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0 }, ge:toflat())
      assert.same({ 0, 1, 1, 1, 0, 1, 1, 1, 0, 0, 1, 1 }, mx.nd.broadcast_lesser_equal(a, b):toflat())
      local z = arr({ 0, 1 }, dt):reshape { 2, 1 }
      local w = arr({ 0, 5, -1 }, dt):reshape { 1, 3 }
      assert.same({ 0, 0, 0, 0, 1, 1 }, mx.nd.broadcast_logical_and(z, w):toflat())
      assert.same({ 0, 1, 1, 1, 1, 1 }, mx.nd.broadcast_logical_or(z, w):toflat())
      assert.same({ 0, 1, 1, 1, 0, 0 }, mx.nd.broadcast_logical_xor(z, w):toflat())
      local h = mx.nd.broadcast_hypot(arr({ 3, 5 }, dt):reshape { 2, 1 }, arr({ 4, 12 }, dt))
      H.near(h:toflat(), { 5, math.sqrt(153), math.sqrt(41), 13 }, tol)
      local m = mx.nd.broadcast_mod(arr({ -3, 7 }, dt):reshape { 2, 1 }, arr({ 2, -4, 0 }, dt))
      assert.same({ 1, -3, 0, 1, -1, 0 }, m:toflat())
    end)
  end

  it('broadcast gradients sum over the broadcast axes', function()
    local a = arr({ 3, 5 }):reshape { 2, 1 }
    local b = arr { 4, 12 }
    a:attach_grad()
    b:attach_grad()
    mx.autograd.record(function() return mx.nd.broadcast_hypot(a, b) end):backward()
    local ha = { { 5, math.sqrt(153) }, { math.sqrt(41), 13 } } -- hypot(a_i, b_j)
    H.near(a.grad:toflat(), { 3 / ha[1][1] + 3 / ha[1][2], 5 / ha[2][1] + 5 / ha[2][2] }, 1e-14)
    H.near(b.grad:toflat(), { 4 / ha[1][1] + 4 / ha[2][1], 12 / ha[1][2] + 12 / ha[2][2] }, 1e-14)
    -- mod: d/dlhs = 1, d/drhs = -floor(lhs / rhs)
    local x, y = arr({ 7, -7 }):reshape { 2, 1 }, arr { 2, 3 }
    x:attach_grad()
    y:attach_grad()
    mx.autograd.record(function() return mx.nd.broadcast_mod(x, y) end):backward()
    assert.same({ 2, 2 }, x.grad:toflat())
    assert.same({ -(3 + -4), -(2 + -3) }, y.grad:toflat())
  end)

  it('resolve MXNet\'s aliases', function()
    for alias, name in pairs { _Equal = '_equal', _Not_Equal = '_not_equal', _Greater = '_greater',
      _Greater_Equal = '_greater_equal', _Lesser = '_lesser', _Lesser_Equal = '_lesser_equal',
      _Logical_And = '_logical_and', _Logical_Or = '_logical_or', _Logical_Xor = '_logical_xor',
      _Hypot = '_hypot', _Mod = '_mod', _HypotScalar = '_hypot_scalar', _ModScalar = '_mod_scalar',
      _RModScalar = '_rmod_scalar', _LogicalAndScalar = '_logical_and_scalar',
      _LogicalOrScalar = '_logical_or_scalar', _LogicalXorScalar = '_logical_xor_scalar' } do
      assert.equal(name, mx.op.info(alias).name)
    end
  end)

  it('reports bad shapes and parameters', function()
    H.raises(function() mx.nd._equal(arr { 1, 2 }, arr { 1, 2, 3 }) end, '_equal', "input 'rhs'", 'expected shape (2,), got (3,)')
    H.raises(function() mx.nd.broadcast_hypot(arr { 1, 2 }, arr { 1, 2, 3 }) end,
      'broadcast_hypot', "inputs 'lhs' (2,) and 'rhs' (3,) cannot be broadcast together")
    H.raises(function() mx.nd.smooth_l1(arr { 1 }, { scalar = 'abc' }) end,
      'smooth_l1', "parameter 'scalar'", "'abc'")
    H.raises(function() mx.nd.broadcast_mod(arr { 1 }, mx.nd.array({ 1 }, { dtype = 'int32' })) end,
      'broadcast_mod', "input 'rhs'", 'expected float64, got int32')
  end)
end)

describe('math family: symbols', function()
  it('round-trip through JSON and compute the same', function()
    local x, y = mx.sym.var('x'), mx.sym.var('y')
    local s = mx.sym.broadcast_mod(mx.sym.erfinv(mx.sym.smooth_l1(x, { scalar = 2 })),
      mx.sym._hypot_scalar(mx.sym.gammaln(y), { scalar = 0.5 }), { name = 'm' })
    s = mx.sym.Group { s, mx.sym.broadcast_logical_or(s, mx.sym._greater_equal(x, x)) }
    local js = s:tojson()
    for _, op in ipairs { '"erfinv"', '"smooth_l1"', '"broadcast_mod"', '"_hypot_scalar"',
      '"gammaln"', '"broadcast_logical_or"', '"_greater_equal"' } do
      assert.truthy(js:find('"op": ' .. op, 1, true), op)
    end
    local back = mx.sym.load_json(js)
    assert.equal(js, back:tojson())
    local args = { x = arr({ 0.1, -0.2, 0.3 }):reshape { 1, 3 }, y = arr { 2, 3, 4 } }
    local e1 = s:bind { ctx = mx.cpu(), args = args }
    local e2 = back:bind { ctx = mx.cpu(), args = args }
    e1:forward()
    e2:forward()
    for i = 1, 2 do assert.same(e1.outputs[i]:toflat(), e2.outputs[i]:toflat()) end
    -- the same computed imperatively
    local ref = mx.nd.broadcast_mod(mx.nd.erfinv(mx.nd.smooth_l1(args.x, { scalar = 2 })),
      mx.nd._hypot_scalar(mx.nd.gammaln(args.y), { scalar = 0.5 }))
    assert.same({ 1, 3 }, e1.outputs[1].shape)
    assert.same(ref:toflat(), e1.outputs[1]:toflat())
    assert.same({ 1, 1, 1 }, e1.outputs[2]:toflat())
  end)
end)

describe('math family: nansum, nanprod, moments', function()
  local nan = 0 / 0
  for dt, tol in pairs(DTYPES) do
    it('nansum / nanprod treat NaN as 0 / 1 (' .. dt .. ')', function()
      local a = arr({ 1, 2, nan, 4, nan, 6 }, dt):reshape { 2, 3 }
      assert.same({ 5, 2, 6 }, mx.nd.nansum(a, { axis = 0 }):toflat())
      assert.same({ 3, 10 }, mx.nd.nansum(a, { axis = 1 }):toflat())
      assert.same({ 13 }, mx.nd.nansum(a):toflat())
      assert.same({ 4, 2, 6 }, mx.nd.nanprod(a, { axis = 0 }):toflat())
      assert.same({ 48 }, mx.nd.nanprod(a):toflat())
      local k = mx.nd.nansum(a, { axis = 0, keepdims = true, exclude = true })
      assert.same({ 2, 1 }, k.shape)
      assert.same({ 3, 10 }, k:toflat())
      -- the gradient skips NaN: nansum 1, nanprod y / x
      local x = arr({ 2, nan, 3, 4 }, dt)
      x:attach_grad()
      mx.autograd.record(function() return mx.nd.nanprod(x) end):backward()
      local g = x.grad:toflat()
      H.near({ g[1], g[2], g[3], g[4] }, { 12, 0, 8, 6 }, tol)
      mx.autograd.record(function() return mx.nd.nansum(x) end):backward()
      assert.same({ 1, 0, 1, 1 }, x.grad:toflat())
    end)

    it('moments gives the numbers of MXNet\'s documentation (' .. dt .. ')', function()
      local x = arr({ 1, 2, 3, 4, 5, 6 }, dt):reshape { 2, 3 }
      local m = mx.nd.moments(x, { axes = { 0 } })
      H.near(m[1]:toflat(), { 2.5, 3.5, 4.5 }, tol)
      H.near(m[2]:toflat(), { 2.25, 2.25, 2.25 }, tol)
      m = mx.nd.moments(x, { axes = { 1 } })
      H.near(m[1]:toflat(), { 2, 5 }, tol)
      H.near(m[2]:toflat(), { 2 / 3, 2 / 3 }, tol)
      m = mx.nd.moments(x, { axes = { 0, 1 }, keepdims = true })
      assert.same({ 1, 1 }, m[1].shape)
      H.near(m[1]:toflat(), { 3.5 }, tol)
      H.near(m[2]:toflat(), { 35 / 12 }, tol)
    end)
  end

  it('moments: outputs named mean and var, gradient of both, axes checked by name', function()
    local info = mx.op.info('moments', { axes = '(1,)' })
    assert.same({ 'mean', 'var' }, info.outputs)
    local x = arr { 1, 2, 4, 7 }
    x:attach_grad()
    local outs = mx.autograd.record(function() return mx.nd.moments(x) end)
    mx.autograd.backward({ outs[1], outs[2] }, { arr { 1 }, arr { 2 } })
    -- d mean = 1/4; d var = 2 (x - 3.5) / 4, times the head 2
    H.near(x.grad:toflat(), { 0.25 - 2.5, 0.25 - 1.5, 0.25 + 0.5, 0.25 + 3.5 }, 1e-14)
    H.raises(function() mx.nd.moments(arr { 1, 2 }, { axes = { 3 } }) end,
      'moments', "parameter 'axes'", 'axis 3 is out of range for 1-D input')
  end)
end)

describe('math family: hard_sigmoid, softmin', function()
  for dt, tol in pairs(DTYPES) do
    it('hard_sigmoid clips alpha x + beta to [0, 1] (' .. dt .. ')', function()
      local x = arr({ -5, -2.5, -1, 0, 1, 2.5, 5 }, dt)
      H.near(mx.nd.hard_sigmoid(x):toflat(), { 0, 0, 0.3, 0.5, 0.7, 1, 1 }, tol)
      H.near(mx.nd.hard_sigmoid(x, { alpha = 0.5, beta = 0.25 }):toflat(),
        { 0, 0, 0, 0.25, 0.75, 1, 1 }, tol)
      x:attach_grad()
      mx.autograd.record(function() return mx.nd.hard_sigmoid(x) end):backward()
      H.near(x.grad:toflat(), { 0, 0, 0.2, 0.2, 0.2, 0, 0 }, tol)
    end)

    it('softmin gives the numbers of MXNet\'s documentation (' .. dt .. ')', function()
      local x = arr({ 1, 2, 3, 3, 2, 1 }, dt):reshape { 2, 3 }
      H.near(mx.nd.softmin(x, { axis = 0 }):toflat(),
        { 0.88079703, 0.5, 0.11920292, 0.11920292, 0.5, 0.88079703 }, 1e-7)
      H.near(mx.nd.softmin(x):toflat(),
        { 0.66524094, 0.24472848, 0.09003057, 0.09003057, 0.24472848, 0.66524094 }, 1e-7)
      -- temperature 2: softmax(-x / 2); large spreads stay finite
      local e1, e2, e3 = math.exp(-0.5), math.exp(-1), math.exp(-1.5)
      local s = e1 + e2 + e3
      H.near(mx.nd.softmin(x, { temperature = 2 }):toflat(),
        { e1 / s, e2 / s, e3 / s, e3 / s, e2 / s, e1 / s }, tol * 10)
      H.near(mx.nd.softmin(arr({ -1000, 0, 1000 }, dt)):toflat(), { 1, 0, 0 }, tol)
    end)
  end

  it('softmin\'s gradient is softmax\'s of -x', function()
    local x = arr { 0.3, -1.2, 2 }
    local head = arr { 1, -2, 0.5 }
    x:attach_grad()
    local y = mx.autograd.record(function() return mx.nd.softmin(x) end)
    y:backward(head)
    local yv, hv = y:toflat(), head:toflat()
    local dot = 0
    for i = 1, 3 do dot = dot + yv[i] * hv[i] end
    local ref = {}
    for i = 1, 3 do ref[i] = -yv[i] * (hv[i] - dot) end
    H.near(x.grad:toflat(), ref, 1e-14)
    H.raises(function() mx.nd.softmin(arr { 1, 2 }, { temperature = 0 }) end,
      'softmin', "parameter 'temperature': must not be 0")
  end)
end)
