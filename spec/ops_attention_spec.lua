-- Issue 14's fused multi-head attention matmuls (MXNet 1.9 contrib/transformer.cc):
-- _contrib_interleaved_matmul_selfatt_qk, _selfatt_valatt, _encdec_qk, _encdec_valatt.
--
-- Each is checked against the explicit composition MXNet's documentation gives (reshape
-- to (L, S, heads, k, head_dim), take a slot with slice_axis, transpose to
-- (S, heads, L, head_dim), merge to (S * heads, L, head_dim), batch_dot), forward and,
-- through mx.autograd on that composition, backward; in an executor, through JSON, in
-- the help text; errors name op, argument, expected and actual. On a GPU context (the
-- simulator in CI) every form runs on gpu(0) and must agree with the CPU.
local mx = require 'luamx'
local H = require 'helpers'
local ops = require 'luamx.ndarray_ops'
local help = require 'luamx.repl.help'

local DTYPES = { float32 = 1e-5, float64 = 1e-12 }

local function flat(a) return a:toflat() end

local function rand_nd(shape, dt, ctx)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  local t = {}
  for i = 1, n do t[i] = 2 * math.random() - 1 end
  return mx.nd.array(t, { dtype = dt, ctx = ctx }):reshape(shape)
end

-- slot j (0-based) of k per head of x (L, S, heads * k * D) as (S * heads, L, D)
local function heads_of(x, heads, k, j)
  local L, S = x.shape[1], x.shape[2]
  local D = math.floor(x.shape[3] / (heads * k))
  local t = mx.nd.Reshape { data = x, shape = { L, S, heads, k, D } }
  t = mx.nd.slice_axis { data = t, axis = 3, begin = j, ['end'] = j + 1 }
  t = mx.nd.transpose(mx.nd.Reshape { data = t, shape = { L, S, heads, D } },
    { axes = { 1, 2, 0, 3 } })
  return mx.nd.Reshape { data = t, shape = { S * heads, L, D } }, D
end

-- (S * heads, L, D) back to (L, S, heads * D)
local function merge_heads(o, heads)
  local N, L, D = o.shape[1], o.shape[2], o.shape[3]
  local t = mx.nd.transpose(mx.nd.Reshape { data = o, shape = { math.floor(N / heads), heads, L, D } },
    { axes = { 2, 0, 1, 3 } })
  return mx.nd.Reshape { data = t, shape = { L, math.floor(N / heads), heads * D } }
end

-- the documented compositions
local REF = {
  _contrib_interleaved_matmul_selfatt_qk = function(h, qkv)
    local q, D = heads_of(qkv, h, 3, 0)
    local k = heads_of(qkv, h, 3, 1)
    return mx.nd.batch_dot(q / math.sqrt(D), k, { transpose_b = true })
  end,
  _contrib_interleaved_matmul_selfatt_valatt = function(h, qkv, att)
    return merge_heads(mx.nd.batch_dot(att, (heads_of(qkv, h, 3, 2))), h)
  end,
  _contrib_interleaved_matmul_encdec_qk = function(h, q, kv)
    local qh, D = heads_of(q, h, 1, 0)
    return mx.nd.batch_dot(qh / math.sqrt(D), heads_of(kv, h, 2, 0), { transpose_b = true })
  end,
  _contrib_interleaved_matmul_encdec_valatt = function(h, kv, att)
    return merge_heads(mx.nd.batch_dot(att, (heads_of(kv, h, 2, 1))), h)
  end,
}

-- op, heads, input names and shapes (S = 2 sequences; 3 heads of dim 2 or 2 of dim 3)
local CASES = {
  { '_contrib_interleaved_matmul_selfatt_qk', 3, { 'queries_keys_values' }, { { 4, 2, 18 } },
    { 6, 4, 4 } },
  { '_contrib_interleaved_matmul_selfatt_valatt', 3, { 'queries_keys_values', 'attention' },
    { { 4, 2, 18 }, { 6, 4, 4 } }, { 4, 2, 6 } },
  { '_contrib_interleaved_matmul_encdec_qk', 2, { 'queries', 'keys_values' },
    { { 3, 2, 6 }, { 5, 2, 12 } }, { 4, 3, 5 } },
  { '_contrib_interleaved_matmul_encdec_valatt', 2, { 'keys_values', 'attention' },
    { { 5, 2, 12 }, { 4, 3, 5 } }, { 3, 2, 6 } },
}

local function call(op, heads, names, xs)
  local args = { heads = heads }
  for i, n in ipairs(names) do args[n] = xs[i] end
  return mx.nd[op](args)
end

describe('interleaved attention matmuls', function()
  it('selfatt_qk gives hand-worked scores: one head, head_dim 4, scale 1/2', function()
    -- L = 2, S = 1: q0 = (1,0,0,0), q1 = (0,2,0,0), k0 = (1,1,0,0), k1 = (0,0,3,0)
    local qkv = mx.nd.array { { { 1, 0, 0, 0, 1, 1, 0, 0, 9, 9, 9, 9 } },
      { { 0, 2, 0, 0, 0, 0, 3, 0, 9, 9, 9, 9 } } }
    local y = mx.nd._contrib_interleaved_matmul_selfatt_qk { queries_keys_values = qkv, heads = 1 }
    assert.are.same({ 1, 2, 2 }, y.shape)
    H.near(flat(y), { 0.5, 0, 1, 0 }, 1e-7)
    -- valatt: v0 = (9,9,9,9) twice with weights (0.25, 0.75) -> 9 everywhere
    local att = mx.nd.array { { { 0.25, 0.75 }, { 1, 0 } } }
    local o = mx.nd._contrib_interleaved_matmul_selfatt_valatt { queries_keys_values = qkv,
      attention = att, heads = 1 }
    assert.are.same({ 2, 1, 4 }, o.shape)
    H.near(flat(o), { 9, 9, 9, 9, 9, 9, 9, 9 }, 1e-6)
  end)

  for _, cs in ipairs(CASES) do
    local op, heads, names, shapes, oshape = cs[1], cs[2], cs[3], cs[4], cs[5]
    for dt, tol in pairs(DTYPES) do
      it(op .. ' matches reshape/transpose/batch_dot, forward and backward (' .. dt .. ')',
        function()
          math.randomseed(#op + #dt)
          local xs = {}
          for i, s in ipairs(shapes) do xs[i] = rand_nd(s, dt) end
          local y = call(op, heads, names, xs)
          assert.are.same(oshape, y.shape)
          local G = rand_nd(oshape, dt)
          for _, x in ipairs(xs) do x:attach_grad() end
          local r = mx.autograd.record(function() return REF[op](heads, unpack(xs)) end)
          r:backward(G)
          H.near(flat(y), flat(r), tol * 10)
          local gr = ops.backward(op, { heads = heads }, xs, { y }, { G })
          for i = 1, #xs do
            assert.are.same(shapes[i], gr[i].shape)
            H.near(flat(gr[i]), flat(xs[i].grad), tol * 10)
          end
        end)
    end
  end

  it('zeroes the slots a form does not read, and accumulates with req add', function()
    math.randomseed(3)
    local qkv = rand_nd({ 2, 1, 6 }, 'float64')
    local y = mx.nd._contrib_interleaved_matmul_selfatt_qk { queries_keys_values = qkv, heads = 1 }
    local G = rand_nd({ 1, 2, 2 }, 'float64')
    local g = flat(ops.backward('_contrib_interleaved_matmul_selfatt_qk', { heads = 1 }, { qkv },
      { y }, { G })[1])
    -- value slots (elements 5, 6 and 11, 12 of the flat (2, 1, 6)) get nothing
    for _, i in ipairs { 5, 6, 11, 12 } do assert.are.equal(0, g[i]) end
    assert.is_true(math.abs(g[1]) + math.abs(g[3]) > 0)
    -- in an executor with grad_req add the gradient doubles over two backward passes
    local s = mx.sym._contrib_interleaved_matmul_selfatt_qk { queries_keys_values =
      mx.sym.Variable('x'), heads = 1, name = 'qk' }
    local exe = s:simple_bind { x = { 2, 1, 6 }, grad_req = 'add', type_dict = { x = 'float64' } }
    exe.arg_dict.x:set(qkv)
    exe.grad_dict.x:set(0)
    exe:forward { is_train = true }
    exe:backward(G)
    exe:backward(G)
    local want = {}
    for i = 1, 12 do want[i] = 2 * g[i] end
    H.near(flat(exe.grad_dict.x), want, 1e-12)
  end)

  it('infers shapes both ways, stores MXNet\'s names in JSON and has help text', function()
    local s = mx.sym._contrib_interleaved_matmul_selfatt_valatt {
      queries_keys_values = mx.sym.Variable('qkv'), attention = mx.sym.Variable('att'),
      heads = 4, name = 'va' }
    assert.are.same({ 'qkv', 'att' }, s:list_arguments())
    local args, outs = s:infer_shape { qkv = { 7, 3, 48 } }
    assert.are.same({ 12, 7, 7 }, args[2])
    assert.are.same({ { 7, 3, 16 } }, outs)
    local js = s:tojson()
    assert.truthy(js:find('"op": "_contrib_interleaved_matmul_selfatt_valatt"', 1, true))
    assert.truthy(js:find('"heads": "4"', 1, true))
    assert.are.equal(js, mx.sym.load_json(js):tojson())
    local e = mx.sym._contrib_interleaved_matmul_encdec_qk { queries = mx.sym.Variable('q'),
      keys_values = mx.sym.Variable('kv'), heads = 2 }
    local _, o2 = e:infer_shape { q = { 3, 5, 8 }, kv = { 6, 5, 16 } }
    assert.are.same({ { 10, 3, 6 } }, o2)
    for _, cs in ipairs(CASES) do
      local text = help.op_text(mx, cs[1])
      assert.truthy(text:find('multihead attention', 1, true), cs[1])
      assert.truthy(text:find('heads', 1, true), cs[1])
    end
  end)

  it('refuses bad shapes, heads and dtypes, naming op, argument, expected, actual', function()
    local qk = mx.sym._contrib_interleaved_matmul_selfatt_qk {
      queries_keys_values = mx.sym.Variable('x'), heads = 2, name = 'qk' }
    H.raises(function() qk:infer_shape { x = { 4, 2, 10 } } end,
      "_contrib_interleaved_matmul_selfatt_qk 'qk'", "input 'queries_keys_values'",
      'multiple of 3 * heads = 6', 'got 10')
    H.raises(function() qk:infer_shape { x = { 4, 12 } } end,
      "input 'queries_keys_values'", 'expected 3-D', 'got 2-D')
    local va = mx.sym._contrib_interleaved_matmul_selfatt_valatt {
      queries_keys_values = mx.sym.Variable('x'), attention = mx.sym.Variable('a'), heads = 2,
      name = 'va' }
    H.raises(function() va:infer_shape { x = { 4, 2, 12 }, a = { 4, 4, 3 } } end,
      "_contrib_interleaved_matmul_selfatt_valatt 'va'", "input 'attention'",
      'expected shape (4,4,4)', 'got (4,4,3)')
    H.raises(function()
      mx.nd._contrib_interleaved_matmul_encdec_qk { queries = mx.nd.ones { 3, 2, 4 },
        keys_values = mx.nd.ones { 5, 3, 8 }, heads = 2 }
    end, '_contrib_interleaved_matmul_encdec_qk', "input 'keys_values'",
      'expected shape (_,2,8)', 'got (5,3,8)')
    H.raises(function()
      mx.nd._contrib_interleaved_matmul_encdec_valatt { keys_values = mx.nd.ones { 5, 2, 8 },
        attention = mx.nd.ones { 4, 3, 4 }, heads = 2 }
    end, '_contrib_interleaved_matmul_encdec_valatt', "input 'attention'",
      'expected shape (4,_,5)', 'got (4,3,4)')
    H.raises(function()
      mx.nd._contrib_interleaved_matmul_selfatt_qk { queries_keys_values = mx.nd.ones { 2, 1, 6 } }
    end, '_contrib_interleaved_matmul_selfatt_qk', "'heads'")
    H.raises(function()
      mx.nd._contrib_interleaved_matmul_selfatt_qk { queries_keys_values = mx.nd.ones { 2, 1, 6 },
        heads = 0 }
    end, '_contrib_interleaved_matmul_selfatt_qk', "parameter 'heads'", 'value 0 is out of range',
      '[1, 1e+09]')
    H.raises(function()
      mx.nd._contrib_interleaved_matmul_selfatt_qk { heads = 1,
        queries_keys_values = mx.nd.ones({ 2, 1, 6 }, { dtype = 'int32' }) }
    end, '_contrib_interleaved_matmul_selfatt_qk', "input 'queries_keys_values'", 'got int32')
  end)
end)

describe('interleaved attention matmuls on gpu(0)', function()
  if mx.context.num_gpus() == 0 then
    pending('no GPU context (mx.context.num_gpus() == 0): GPU checks skipped')
    return
  end
  local gpu = mx.gpu(0)
  for _, cs in ipairs(CASES) do
    local op, heads, names, shapes, oshape = cs[1], cs[2], cs[3], cs[4], cs[5]
    for dt, tol in pairs { float32 = 1e-5, float64 = 1e-12, float16 = 5e-3 } do
      it(op .. ' agrees with the CPU, forward and backward (' .. dt .. ')', function()
        math.randomseed(#op * 7 + #dt)
        local xc, xg = {}, {}
        for i, s in ipairs(shapes) do
          xc[i] = rand_nd(s, 'float32'):astype(dt)
          xg[i] = xc[i]:copyto(gpu)
        end
        local yg = call(op, heads, names, xg)
        local yc
        if dt == 'float16' then -- the CPU reference in float32 (the CPU has no float16)
          local x32 = {}
          for i = 1, #xc do x32[i] = xc[i]:astype('float32') end
          yc = call(op, heads, names, x32)
        else
          yc = call(op, heads, names, xc)
        end
        H.near(flat(yg:copyto(mx.cpu()):astype('float32')), flat(yc:astype('float32')), tol * 10)
        if dt ~= 'float16' then
          local Gc = rand_nd(oshape, dt)
          local gc = ops.backward(op, { heads = heads }, xc, { yc }, { Gc })
          local gg = ops.backward(op, { heads = heads }, xg, { yg }, { Gc:copyto(gpu) })
          for i = 1, #xc do H.near(flat(gg[i]:copyto(mx.cpu())), flat(gc[i]), tol * 10) end
        end
      end)
    end
  end
end)
