-- bfloat16 (MXNet dtype code 12) and float16 on the CPU: arrays (create, fill, copy,
-- astype, totable, the data pointer), and the elementwise operators and Cast, which
-- compute in float32 and round once to nearest even. The expected values below are
-- worked by hand from the bit layouts (bfloat16 = the top 16 bits of a float32, 8
-- significant bits; float16 = IEEE binary16, 11), or are the float32 operator's result
-- rounded once, so a second rounding or a float64 detour would show.
local ffi = require 'ffi'
local mx = require 'luamx'
local H = require 'helpers'
local ops = require 'luamx.ndarray_ops'

local function flat(a) return a:toflat() end

describe('bfloat16 arrays', function()
  it('round values to nearest even on the way in', function()
    local a = mx.nd.array({1, -2, 3.14159, 1 + 2 ^ -8, 1 + 3 * 2 ^ -8, 1 + 2 ^ -8 + 2 ^ -20,
                           2 ^ -133, 1.5 * 2 ^ -133, 3.4e38, -1e39, 1 / 3}, {dtype = 'bfloat16'})
    assert.are.equal('bfloat16', a.dtype)
    -- 1 + 2^-8 is a tie between 1 (even) and 1 + 2^-7: down; 1 + 3 * 2^-8 a tie between
    -- 1 + 2^-7 (odd) and 1 + 2^-6: up; subnormals are kept; 3.4e38 is past the largest
    -- bfloat16 (0x7f7f): infinity
    assert.are.same({1, -2, 3.140625, 1, 1 + 2 ^ -6, 1 + 2 ^ -7, 2 ^ -133, 2 ^ -132, math.huge,
                     -math.huge, 0.333984375}, flat(a))
    local nan = mx.nd.array({0 / 0}, {dtype = 'bfloat16'}):tonumber()
    assert.is_true(nan ~= nan)
  end)

  it('fills, copies and converts to and from every float dtype', function()
    assert.are.same({0.10009765625, 0.10009765625}, flat(mx.nd.full({2}, 0.1, {dtype = 'bfloat16'})))
    assert.are.same({0, 0}, flat(mx.nd.zeros({2}, {dtype = 'bfloat16'})))
    assert.are.same({{1, 1}}, mx.nd.ones({1, 2}, {dtype = 'bfloat16'}):totable())
    local f32 = mx.nd.array {0.1, -0.7, 2.5e-3, 65535}
    local b = f32:astype('bfloat16')
    assert.are.same({0.10009765625, -0.69921875, 0.00250244140625, 65536}, flat(b))
    -- widening is exact; bfloat16 values with 8 significant bits fit float16 too
    assert.are.same(flat(b), flat(b:astype('float32')))
    assert.are.same(flat(b), flat(b:astype('float64')))
    assert.are.same({0.10009765625, -0.69921875, 0.00250244140625, math.huge},
      flat(b:astype('float16')))
    -- integers: through float32, truncating; back from bfloat16 with saturation
    assert.are.same({0, -1, 255}, flat(mx.nd.array({0.4, -1.2, 255.2}):astype('bfloat16'):astype('int32')))
    local wide = mx.nd.array({-3, 300}, {dtype = 'int32'}):astype('bfloat16')
    assert.are.same({-3, 300}, flat(wide))
    assert.are.same({0, 255}, flat(wide:astype('uint8')))
    local dst = mx.nd.zeros({4}, {dtype = 'bfloat16'})
    dst:set(f32)
    assert.are.same(flat(b), flat(dst))
    local c = b:copy()
    assert.are.equal('bfloat16', c.dtype)
    assert.are.same(flat(b), flat(c))
  end)

  it('exposes its bits through the data pointer and prints', function()
    local a = mx.nd.array({1, -2, 0.5}, {dtype = 'bfloat16'})
    local p = a:data()
    assert.is_true(ffi.istype('uint16_t *', p))
    assert.are.same({0x3f80, 0xc000, 0x3f00}, {p[0], p[1], p[2]})
    local text = tostring(mx.nd.array({1, -2, 0.5, 2 ^ -133}, {dtype = 'bfloat16'}))
    assert.is_truthy(text:find('bfloat16', 1, true))
    assert.is_truthy(text:find('0.5', 1, true), text) -- printed as a float, not an integer
    assert.is_truthy(text:find('9.18355e-41', 1, true), text)
  end)

  it('draws random values on the CPU', function()
    mx.random.seed(7)
    local a = mx.nd.random.uniform(-1, 1, {500}, {dtype = 'bfloat16'})
    assert.are.equal('bfloat16', a.dtype)
    local lo, hi, distinct = 1, -1, {}
    for _, v in ipairs(flat(a)) do
      lo, hi = math.min(lo, v), math.max(hi, v)
      distinct[v] = true
      assert.are.equal(v, flat(mx.nd.array({v}, {dtype = 'bfloat16'}))[1]) -- representable
    end
    assert.is_true(lo >= -1 and hi <= 1 and lo < -0.9 and hi > 0.9)
    local count = 0
    for _ in pairs(distinct) do count = count + 1 end
    assert.is_true(count > 100)
  end)

  it('is refused by the GPU primitives, by name', function()
    if mx.context.num_gpus() == 0 then return pending('no GPU') end
    H.raises(function() mx.nd.ones({2}, {ctx = mx.gpu(0), dtype = 'bfloat16'}) end,
      'gpu(0): fill: dtype bfloat16 is not supported')
    local a = mx.nd.array({1, 2}, {dtype = 'bfloat16'})
    H.raises(function() a:astype('float32'):copyto(mx.gpu(0)):astype('bfloat16') end,
      'gpu(0): convert: dtype bfloat16 is not supported')
  end)

  it('names the unsupported MXNet dtypes in errors', function()
    H.raises(function() mx.nd.zeros({2}, {dtype = 'bool'}) end,
      "unknown dtype 'bool' (expected one of float32, float64, float16, uint8, int32, int8, int64, bfloat16)")
    H.raises(function() mx.nd.zeros({2}, {dtype = 9}) end, "dtype must be a name such as 'float32', got 9")
    assert.are.equal('bfloat16', mx.nd.zeros({1}, {dtype = 12}).dtype)
  end)
end)

describe('bfloat16 in symbols', function()
  it('stores code 12 in __dtype__, infers through operators and rejects the gaps', function()
    local x = mx.sym.Variable('x', {dtype = 'bfloat16'})
    assert.are.equal('12', x:attr_dict().x.__dtype__)
    local args, outs = mx.sym.exp(x):infer_type{}
    assert.are.same({'bfloat16'}, args)
    assert.are.same({'bfloat16'}, outs)
    local back = mx.sym.load_json(x:tojson())
    assert.are.same({'bfloat16'}, (back * 2):infer_type{})
    local bad = x:tojson():gsub('"12"', '"9"')
    local y = mx.sym.load_json(bad)
    H.raises(function() return y:infer_type{} end,
      "variable 'x': attribute __dtype__ '9' is not a dtype code (0..6 or 12)")
  end)
end)

describe('float16 / bfloat16 elementwise operators on the CPU', function()
  -- inputs chosen so that every op is defined; 700 elements span two float32 chunks
  local N = 700
  local function values(lo, hi)
    local t = {}
    for i = 1, N do t[i] = lo + (hi - lo) * ((i * 37) % N) / N end
    return t
  end

  for _, dt in ipairs {'float16', 'bfloat16'} do
    -- The float32 op on the widened input, rounded once.
    local function want(f, ...)
      local args = {...}
      for i, a in ipairs(args) do args[i] = a:astype('float32') end
      return flat(f(unpack(args)):astype(dt))
    end

    it(dt .. ': unary, scalar and binary forwards match float32 rounded once', function()
      local x = mx.nd.array(values(-3, 3), {dtype = dt})
      local pos = mx.nd.array(values(0.25, 4), {dtype = dt})
      for _, op in ipairs {'exp', 'sigmoid', 'tanh', 'relu', 'square', 'negative', 'sin', 'abs'} do
        local y = mx.nd[op](x)
        assert.are.equal(dt, y.dtype)
        assert.are.same(want(mx.nd[op], x), flat(y), op)
      end
      for _, op in ipairs {'sqrt', 'log', 'rsqrt', 'reciprocal'} do
        assert.are.same(want(mx.nd[op], pos), flat(mx.nd[op](pos)), op)
      end
      local sc = function(a) return mx.nd._mul_scalar(a, {scalar = 1.7}) end
      assert.are.same(want(sc, x), flat(sc(x)))
      local rp = function(a) return mx.nd._rpower_scalar(a, {scalar = 1.3}) end
      assert.are.same(want(rp, x), flat(rp(x)))
      for _, op in ipairs {'elemwise_add', 'elemwise_mul', 'elemwise_div', '_maximum'} do
        assert.are.same(want(mx.nd[op], x, pos), flat(mx.nd[op](x, pos)), op)
      end
    end)

    it(dt .. ': backwards match float32 rounded once, also when accumulating', function()
      local x = mx.nd.array(values(-2, 2), {dtype = dt})
      local b = mx.nd.array(values(0.5, 3), {dtype = dt})
      local g = mx.nd.array(values(-1, 1), {dtype = dt})
      local x32, b32, g32 = x:astype('float32'), b:astype('float32'), g:astype('float32')
      for _, op in ipairs {'exp', 'tanh', 'sigmoid', 'square'} do
        local y = mx.nd[op](x)
        local gx = ops.backward(op, {}, {x}, {y}, {g})[1]
        local w = ops.backward(op, {}, {x32}, {y:astype('float32')}, {g32})[1]
        assert.are.equal(dt, gx.dtype)
        assert.are.same(flat(w:astype(dt)), flat(gx), op)
      end
      local y = mx.nd.elemwise_div(x, b)
      local gs = ops.backward('elemwise_div', {}, {x, b}, {y}, {g})
      local ws = ops.backward('elemwise_div', {}, {x32, b32}, {y:astype('float32')}, {g32})
      assert.are.same(flat(ws[1]:astype(dt)), flat(gs[1]))
      assert.are.same(flat(ws[2]:astype(dt)), flat(gs[2]))
      -- req 'add': the old gradient widens, the sum is float32, one rounding
      local acc = mx.nd.array(values(-5, 5), {dtype = dt})
      local old = flat(acc:astype('float32'))
      local e = mx.nd.exp(x)
      ops.backward('exp', {}, {x}, {e}, {g}, {grads = {acc}, reqs = {3}})
      local d = flat(ops.backward('exp', {}, {x32}, {e:astype('float32')}, {g32})[1])
      local exp32 = {}
      local f32 = ffi.new('float[1]')
      for i = 1, N do
        f32[0] = old[i] + d[i]
        exp32[i] = f32[0]
      end
      assert.are.same(flat(mx.nd.array(exp32):astype(dt)), flat(acc))
    end)

    it(dt .. ': Cast to and from float32, and its gradient', function()
      local x32 = mx.nd.array(values(-100, 100))
      local y = mx.nd.Cast(x32, {dtype = dt})
      assert.are.equal(dt, y.dtype)
      assert.are.same(flat(x32:astype(dt)), flat(y))
      local back = mx.nd.Cast(y, {dtype = 'float32'})
      assert.are.same(flat(y), flat(back))
      local g = mx.nd.array(values(-1, 1), {dtype = dt})
      local gx = ops.backward('Cast', {dtype = dt}, {x32}, {y}, {g})[1]
      assert.are.equal('float32', gx.dtype)
      assert.are.same(flat(g), flat(gx))
    end)

    it(dt .. ': trains an elementwise graph in an executor', function()
      local x = mx.sym.Variable('x')
      local net = mx.sym.elemwise_mul(mx.sym.tanh(x), x)
      local exe = net:simple_bind{x = {3, 5}, type_dict = {x = dt}}
      local v = values(-1, 1)
      exe.arg_dict.x:set(mx.nd.array({v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10],
                                      v[11], v[12], v[13], v[14], v[15]}):reshape{3, 5}:astype(dt))
      local y = exe:forward{is_train = true}[1]
      assert.are.equal(dt, y.dtype)
      local x32 = exe.arg_dict.x:astype('float32')
      local t = mx.nd.tanh(x32)
      assert.are.same(flat(mx.nd.elemwise_mul(mx.nd.tanh(exe.arg_dict.x), exe.arg_dict.x)), flat(y))
      exe:backward(mx.nd.ones({3, 5}, {dtype = dt}))
      -- d/dx tanh(x) x = tanh(x) + x (1 - tanh(x)^2), within the dtype's precision
      local want, tf, xf = {}, flat(t), flat(x32)
      for i = 1, 15 do want[i] = tf[i] + xf[i] * (1 - tf[i] ^ 2) end
      H.near(flat(exe.grad_dict.x), want, dt == 'bfloat16' and 2 ^ -5 or 2 ^ -8)
    end)
  end

  it('refuses integer dtypes, naming the operator, the argument and the dtypes it takes', function()
    H.raises(function() mx.nd.sigmoid(mx.nd.ones({2}, {dtype = 'int8'})) end,
      "sigmoid: input 'data': expected float32, float64, float16 or bfloat16 on the CPU, got int8")
    local a = mx.nd.ones({2}, {dtype = 'bfloat16'})
    H.raises(function() mx.nd.elemwise_add(a, mx.nd.ones {2}) end, 'elemwise_add')
    assert.are.same({2, 2}, flat(mx.nd.elemwise_add(a, a))) -- still usable
  end)
end)
