-- optimizer_lamb_spec.lua — LAMB's fused operators (issue 17): lamb_update_phase1,
-- lamb_update_phase2, mp_lamb_update_phase1, mp_lamb_update_phase2 (MXNet 1.9
-- optimizer_op-inl.h LambUpdatePhaseOne/Two and the MP twins), checked against steps
-- worked by hand in the comments and against a scalar reference written here in plain Lua
-- doubles (not the engine's code); the LAMB optimizer's fused path against its NDArray
-- arithmetic (mx.optimizer.use_fused = false); multi_precision with float16 weights and a
-- float32 master copy; zero engine allocations per steady step; gpu(0) (the simulator in
-- SIM builds) against the CPU; names, defaults and JSON as MXNet's; error paths.
local mx = require 'luamx'
local H = require 'helpers'
local nd = mx.nd

local function f32(t) return nd.array(t) end
local function f64(t) return nd.array(t, {dtype = 'float64'}) end
local function f16(t) return nd.array(t):astype('float16') end
local function flat(a) return a:as_in_context(mx.cpu()):astype('float64'):toflat() end
local function clipv(x, c) if c and c >= 0 then return math.max(-c, math.min(c, x)) end return x end

local function with_fused(flag, fn)
  local old = mx.optimizer.use_fused
  mx.optimizer.use_fused = flag
  local ok, err = pcall(fn)
  mx.optimizer.use_fused = old
  if not ok then error(err, 0) end
end

-- The scalar reference of MXNet's kernels over several steps. o: lr, beta1, beta2, eps,
-- wd, rescale, clip (>= 0 on), lower, upper (>= 0 set), bias (bool); grads: list of
-- gradient lists. Returns the weights after each step and the final mean / var.
local function lamb_ref(o, w0, grads)
  local w, m, v, out = {}, {}, {}, {}
  for i, x in ipairs(w0) do w[i], m[i], v[i] = x, 0, 0 end
  for t, gr in ipairs(grads) do
    local r = {}
    for i = 1, #w do
      local g = clipv(gr[i] * o.rescale, o.clip)
      m[i] = o.beta1 * m[i] + (1 - o.beta1) * g
      v[i] = o.beta2 * v[i] + (1 - o.beta2) * g * g
      local mh, vh = m[i], v[i]
      if o.bias then mh, vh = mh / (1 - o.beta1 ^ t), vh / (1 - o.beta2 ^ t) end
      r[i] = mh / (math.sqrt(vh) + o.eps) + o.wd * w[i]
    end
    local r1, r2 = 0, 0
    for i = 1, #w do r1, r2 = r1 + w[i] ^ 2, r2 + r[i] ^ 2 end
    r1, r2 = math.sqrt(r1), math.sqrt(r2)
    if o.lower and o.lower >= 0 then r1 = math.max(r1, o.lower) end
    if o.upper and o.upper >= 0 then r1 = math.min(r1, o.upper) end
    local rate = (r1 == 0 or r2 == 0) and o.lr or o.lr * r1 / r2
    local copy = {}
    for i = 1, #w do w[i] = w[i] - rate * r[i]; copy[i] = w[i] end
    out[t] = copy
  end
  return out, m, v
end

local W0 = {0.5, -1.0, 2.0, 0.25, -0.75}
local GRADS = {{0.1, -0.2, 0.3, 0.0, 0.5}, {-0.5, 0.4, 0.05, 1.0, -0.25}, {0.2, 0.2, -0.3, -0.1, 0.7},
               {0.05, -0.6, 0.1, 0.3, 0.0}}

-- one step through the operators, as MXNet's LAMB.update does (phase1, norm, norm, phase2)
local function op_step(w, g, m, v, p1, p2, w32)
  local r
  if w32 then
    r = nd.mp_lamb_update_phase1(w, g, m, v, w32, p1)
  else
    r = nd.lamb_update_phase1(w, g, m, v, p1)
  end
  local r1, r2 = nd.norm(w32 or w), nd.norm(r)
  local a = {lr = p2.lr, lower_bound = p2.lower_bound, upper_bound = p2.upper_bound, out = w}
  if w32 then nd.mp_lamb_update_phase2(w, r, r1, r2, w32, a)
  else nd.lamb_update_phase2(w, r, r1, r2, a) end
  return r
end

describe('lamb_update_phase1 (by hand)', function()
  it('returns the bias-corrected direction and updates mean and var in place', function()
    local w, m, v = f32{1, -2}, nd.zeros{2}, nd.zeros{2}
    local g = nd.lamb_update_phase1(w, f32{0.1, -0.4}, m, v, {t = 1, wd = 0.1, epsilon = 0,
      rescale_grad = 2, clip_gradient = 0.3})
    -- element 1: g = 0.2; m = 0.1*0.2 = 0.02; v = 0.001*0.04 = 4e-5; m/(1-0.9) = 0.2,
    --   v/(1-0.999) = 0.04, sqrt 0.2: 0.2/0.2 + 0.1*1 = 1.1
    -- element 2: g = clip(-0.8, 0.3) = -0.3; m = -0.03, v = 9e-5: -0.3/0.3 + 0.1*-2 = -1.2
    H.near(flat(g), {1.1, -1.2}, 1e-5)
    H.near(flat(m), {0.02, -0.03}, 1e-7)
    H.near(flat(v), {4e-5, 9e-5}, 5e-9) -- float32 (1 - 0.999)
    H.near(flat(w), {1, -2}, 0) -- the weight is only read
  end)
  it('without bias correction divides the raw moments, and adds epsilon', function()
    local w, m, v = f64{1, -2}, f64{0, 0}, f64{0, 0}
    local g = nd.lamb_update_phase1(w, f64{0.1, -0.4}, m, v, {t = 1, wd = 0.1, epsilon = 1e-3,
      bias_correction = false})
    -- element 1: m = 0.01, v = 1e-5: 0.01/(sqrt(1e-5) + 1e-3) + 0.1
    -- element 2: m = -0.04, v = 1.6e-4: -0.04/(sqrt(1.6e-4) + 1e-3) - 0.2
    H.near(flat(g), {0.01 / (math.sqrt(1e-5) + 1e-3) + 0.1, -0.04 / (math.sqrt(1.6e-4) + 1e-3) - 0.2}, 1e-12)
    assert.equal('float64', g.dtype)
  end)
  it('uses t for the bias correction of later steps', function()
    local m, v = f32{0.02}, f32{4e-5}
    local g = nd.lamb_update_phase1(f32{0}, f32{0.2}, m, v, {t = 2, wd = 0, epsilon = 0})
    -- m = 0.9*0.02 + 0.1*0.2 = 0.038, v = 0.999*4e-5 + 0.001*0.04 = 7.996e-5;
    -- m/(1-0.81) = 0.2, v/(1-0.998001) = 0.04: 0.2/0.2 = 1
    H.near(flat(g), {1}, 1e-5)
    H.near(flat(m), {0.038}, 1e-7)
  end)
end)

describe('lamb_update_phase2 (by hand)', function()
  -- weight (3, 4), g (1, 0), lr 0.1: the step is 0.1 * ratio on the first element
  local function step(r1, r2, extra)
    local w = f32{3, 4}
    local p = {lr = 0.1, out = w}
    for k, x in pairs(extra or {}) do p[k] = x end
    nd.lamb_update_phase2(w, f32{1, 0}, f32{r1}, f32{r2}, p)
    return flat(w)
  end
  it('scales lr by r1/r2', function()
    H.near(step(5, 1), {2.5, 4}, 1e-6)      -- 3 - 0.1*5
    H.near(step(5, 2), {2.75, 4}, 1e-6)     -- 3 - 0.1*2.5
  end)
  it('clamps r1 to lower_bound / upper_bound, each only when >= 0', function()
    H.near(step(5, 1, {upper_bound = 2}), {2.8, 4}, 1e-6)    -- min(5, 2) = 2
    H.near(step(5, 1, {lower_bound = 10}), {2, 4}, 1e-6)     -- max(5, 10) = 10
    H.near(step(5, 1, {lower_bound = 0}), {2.5, 4}, 1e-6)    -- max(5, 0)
    H.near(step(5, 1, {lower_bound = -3, upper_bound = -1}), {2.5, 4}, 1e-6) -- neither set
    H.near(step(0.5, 1, {lower_bound = 1, upper_bound = 4}), {2.9, 4}, 1e-6) -- 0.5 -> 1
  end)
  it('keeps lr when r1 (after clamping) or r2 is 0', function()
    H.near(step(0, 1), {2.9, 4}, 1e-6)
    H.near(step(5, 0), {2.9, 4}, 1e-6)
    H.near(step(5, 1, {upper_bound = 0}), {2.9, 4}, 1e-6) -- min(5, 0) = 0
  end)
  it('writes a new array when no out is given, leaving the weight', function()
    local w = f64{3, 4}
    local o = nd.lamb_update_phase2(w, f64{1, 0}, f64{5}, f64{1}, {lr = 0.1})
    H.near(flat(o), {2.5, 4}, 1e-12)
    H.near(flat(w), {3, 4}, 0)
  end)
end)

describe('LAMB through the operators against the scalar reference', function()
  local cases = {
    {lr = 0.01, beta1 = 0.9, beta2 = 0.999, eps = 1e-6, wd = 0.01, rescale = 1, clip = -1, bias = true},
    {lr = 0.05, beta1 = 0.8, beta2 = 0.99, eps = 1e-4, wd = 0.1, rescale = 1.5, clip = 0.35, bias = true,
     lower = 0.5, upper = 2},
    {lr = 0.02, beta1 = 0.9, beta2 = 0.999, eps = 1e-6, wd = 0, rescale = 1, clip = -1, bias = false, upper = 1},
    {lr = 0.02, beta1 = 0.9, beta2 = 0.999, eps = 1e-6, wd = 0.05, rescale = 1, clip = 0.2, bias = true, lower = 5},
  }
  local function params(o, t)
    return {t = t, beta1 = o.beta1, beta2 = o.beta2, epsilon = o.eps, wd = o.wd, rescale_grad = o.rescale,
            clip_gradient = o.clip, bias_correction = o.bias},
           {lr = o.lr, lower_bound = o.lower or -1, upper_bound = o.upper or -1}
  end
  for k, o in ipairs(cases) do
    it(('case %d: four steps, float32 and float64'):format(k), function()
      local want, wm, wv = lamb_ref(o, W0, GRADS)
      for _, dt in ipairs{'float32', 'float64'} do
        local mk = function(t) return nd.array(t, {dtype = dt}) end
        local w, m, v = mk(W0), nd.zeros({#W0}, {dtype = dt}), nd.zeros({#W0}, {dtype = dt})
        for t, g in ipairs(GRADS) do
          local p1, p2 = params(o, t)
          op_step(w, mk(g), m, v, p1, p2)
          H.near(flat(w), want[t], dt == 'float64' and 1e-12 or 2e-6)
        end
        H.near(flat(m), wm, dt == 'float64' and 1e-14 or 1e-7)
        H.near(flat(v), wv, dt == 'float64' and 1e-14 or 5e-8) -- float32 (1 - beta2)
      end
    end)
  end
  it('multi-precision: float16 weight, float32 master copy updated in place', function()
    local o = cases[2]
    -- the master copy is not the float16 weight: phase 1's weight decay and phase 2's
    -- step read weight32, and r1 is ||weight32||
    local w32_0 = {0.5001, -1.0003, 2.0007, 0.2501, -0.7502}
    local want = lamb_ref(o, w32_0, GRADS)
    local g16 = {}
    for i, g in ipairs(GRADS) do g16[i] = flat(f16(g)) end
    want = lamb_ref(o, w32_0, g16) -- the gradient as float16 holds it
    local w, w32, m, v = f16(W0), f32(w32_0), nd.zeros{#W0}, nd.zeros{#W0}
    for t, g in ipairs(GRADS) do
      local p1, p2 = params(o, t)
      local r = op_step(w, f16(g), m, v, p1, p2, w32)
      assert.equal('float32', r.dtype)
      assert.equal('float16', w.dtype)
      H.near(flat(w32), want[t], 2e-6)
      H.near(flat(w), flat(f32(want[t]):astype('float16')), 1e-3) -- rounded (one ulp of double rounding)
      H.near(flat(w), flat(w32:astype('float16')), 0)
    end
  end)
end)

describe('mx.optimizer.LAMB', function()
  local function run(opt, dtype, ctx)
    local w = nd.array(W0, {dtype = dtype or 'float32', ctx = ctx})
    local upd = mx.optimizer.get_updater(opt)
    local out = {}
    for s, g in ipairs(GRADS) do
      upd(0, nd.array(g, {dtype = dtype or 'float32', ctx = ctx}), w)
      out[s] = flat(w)
    end
    return out, upd
  end
  local function same(a, b, tol) for t = 1, #b do H.near(a[t], b[t], tol) end end
  local makers = {
    function() return mx.optimizer.LAMB{learning_rate = 0.01, wd = 0.01} end,
    function() return mx.optimizer.LAMB{learning_rate = 0.05, beta1 = 0.8, beta2 = 0.99, epsilon = 1e-4,
      wd = 0.1, rescale_grad = 1.5, clip_gradient = 0.35, lower_bound = 0.5, upper_bound = 2} end,
    function() return mx.optimizer.LAMB(0.02, 0.9, 0.999, 1e-6, nil, 1.0, false) end,
  }
  it('the fused operators and the NDArray arithmetic give the same steps', function()
    for _, make in ipairs(makers) do
      local fused, plain
      local names = {}
      local real = rawget(nd, 'prepare')
      nd.prepare = function(name, p) names[name] = true return real(name, p) end
      mx.optimizer.clear_prepared()
      local ok, err = pcall(with_fused, true, function() fused = run(make()) end)
      nd.prepare = real
      mx.optimizer.clear_prepared()
      assert(ok, err)
      assert.is_true(names.lamb_update_phase1 and names.lamb_update_phase2 and names.norm)
      with_fused(false, function() plain = run(make()) end)
      same(fused, plain, 2e-6)
    end
  end)
  it('matches the scalar reference (bias correction, bounds, clip, wd, rescale)', function()
    local got = run(makers[2]())
    same(got, lamb_ref({lr = 0.05, beta1 = 0.8, beta2 = 0.99, eps = 1e-4, wd = 0.1, rescale = 1.5, clip = 0.35,
      bias = true, lower = 0.5, upper = 2}, W0, GRADS), 2e-6)
  end)
  it('follows a weight whose shape changes under the same index (scratch arrays remade)', function()
    local opt = mx.optimizer.LAMB{learning_rate = 0.1}
    local st = opt:create_state(0, nd.ones{2, 3})
    opt:update(0, nd.ones{2, 3}, nd.ones{2, 3}, st)
    local w = nd.ones{3, 2}
    opt:update(0, w, nd.ones{3, 2}, opt:create_state(0, w))
    -- every element of the direction is one value c, so r1 / r2 = sqrt(6) / (sqrt(6) c) and
    -- w = 1 - 0.1 / c * c = 0.9 whatever t and the states
    H.near(flat(w), {0.9, 0.9, 0.9, 0.9, 0.9, 0.9}, 1e-6)
  end)
  it('passes a bound only when set and not 0, as MXNet\'s optimizer (lower_bound = 0 is no bound)', function()
    local a = run(mx.optimizer.LAMB{learning_rate = 0.01, lower_bound = 0, upper_bound = 0})
    same(a, run(mx.optimizer.LAMB{learning_rate = 0.01}), 0)
  end)
  it('multi_precision: mp_lamb_update_phase1/2 on {weight32, mean, var}, as the arithmetic wrapper', function()
    local function make() return mx.optimizer.LAMB{learning_rate = 0.05, wd = 0.1, clip_gradient = 0.35,
      multi_precision = true, lower_bound = 0.5} end
    local fused, upd = run(make(), 'float16')
    local st = upd.states[0]
    assert.equal(3, #st)
    assert.same({'float32', 'float32', 'float32'}, {st[1].dtype, st[2].dtype, st[3].dtype})
    local plain, upd2
    with_fused(false, function() plain, upd2 = run(make(), 'float16') end)
    same(fused, plain, 0)
    H.near(flat(st[1]), flat(upd2.states[0][1]), 2e-6)
    -- and the float16 weight is the master copy rounded
    H.near(fused[#GRADS], flat(st[1]:astype('float16')), 0)
  end)
  it('runs steady updates without engine allocations', function()
    local ffi = require 'ffi'
    local total = ffi.new('int64_t[1]')
    for _, o in ipairs{{}, {multi_precision = true}} do
      local opt = mx.optimizer.LAMB{learning_rate = 0.01, wd = 0.001, multi_precision = o.multi_precision}
      local upd = mx.optimizer.get_updater(opt)
      local dt = o.multi_precision and 'float16' or 'float32'
      local w, g = nd.ones({64}, {dtype = dt}), nd.full({64}, 0.5, {dtype = dt})
      upd(1, g, w)
      upd(1, g, w)
      mx.capi.C.lmx_debug_alloc_stats(nil, nil, total)
      local before = tonumber(total[0])
      for _ = 1, 20 do upd(1, g, w) end -- t changes every step: set in place, not re-prepared
      mx.capi.C.lmx_debug_alloc_stats(nil, nil, total)
      assert.equal(0, tonumber(total[0]) - before, dt)
    end
  end)
  it('runs on gpu(0) with the CPU\'s values (float32, float16 with multi_precision)', function()
    if mx.context.num_gpus() == 0 then pending('no GPU context') return end
    for _, make in ipairs(makers) do
      same(run(make(), 'float32', mx.gpu(0)), run(make()), 2e-6)
    end
    local function mp() return mx.optimizer.LAMB{learning_rate = 0.05, wd = 0.1, multi_precision = true} end
    same(run(mp(), 'float16', mx.gpu(0)), run(mp(), 'float16'), 0)
  end)
end)

describe('LAMB operators on gpu(0) against the CPU', function()
  it('phase1 and phase2 in float32, float64, float16; the mp_ pair', function()
    if mx.context.num_gpus() == 0 then pending('no GPU context') return end
    local gpu = mx.gpu(0)
    local p1 = {t = 3, wd = 0.1, rescale_grad = 1.5, clip_gradient = 0.4, epsilon = 1e-4}
    local p2 = {lr = 0.05, lower_bound = 0.5, upper_bound = 2}
    for _, dt in ipairs{'float32', 'float64'} do
      local res = {}
      for _, ctx in ipairs{mx.cpu(), gpu} do
        local mk = function(t) return nd.array(t, {dtype = dt, ctx = ctx}) end
        local w, m, v = mk(W0), mk{0.1, 0, -0.2, 0.05, 0}, mk{0.01, 0, 0.04, 0.001, 0}
        local r = op_step(w, mk(GRADS[2]), m, v, p1, p2)
        res[#res + 1] = {flat(w), flat(r), flat(m), flat(v)}
      end
      for i = 1, 4 do H.near(res[2][i], res[1][i], dt == 'float64' and 1e-13 or 1e-6) end
    end
    -- float16 on the GPU (float math) against the float32 CPU result, to float16 precision
    local w = nd.array(W0, {ctx = gpu}):astype('float16')
    local m, v = nd.zeros({#W0}, {ctx = gpu, dtype = 'float16'}), nd.zeros({#W0}, {ctx = gpu, dtype = 'float16'})
    op_step(w, nd.array(GRADS[1], {ctx = gpu}):astype('float16'), m, v, {t = 1, wd = 0.1}, {lr = 0.05})
    local wc, mc, vc = f32(W0), nd.zeros{#W0}, nd.zeros{#W0}
    op_step(wc, f32(flat(f16(GRADS[1]))), mc, vc, {t = 1, wd = 0.1}, {lr = 0.05})
    H.near(flat(w), flat(wc), 3e-3)
    -- mp on both devices: bit-identical float16 weights
    local res = {}
    for _, ctx in ipairs{mx.cpu(), gpu} do
      local w16, w32 = f16(W0):as_in_context(ctx), f32(W0):as_in_context(ctx)
      local mm, vv = nd.zeros({#W0}, {ctx = ctx}), nd.zeros({#W0}, {ctx = ctx})
      op_step(w16, f16(GRADS[3]):as_in_context(ctx), mm, vv, p1, p2, w32)
      res[#res + 1] = {flat(w16), flat(w32)}
    end
    H.near(res[2][1], res[1][1], 0)
    H.near(res[2][2], res[1][2], 1e-6)
  end)
end)

describe('LAMB operators: names, parameters, JSON and errors', function()
  it('have MXNet\'s inputs, parameters and defaults', function()
    local P1, P2 = {t = 1, wd = 0}, {lr = 0.1}
    local function info(n, p)
      local i = mx.op.info(n, p)
      local d = {}
      for _, q in ipairs(i.params) do d[q.name] = q.default or 'REQUIRED' end
      return i, d
    end
    local i1, d1 = info('lamb_update_phase1', P1)
    assert.same({beta1 = '0.9', beta2 = '0.999', epsilon = '1e-06', t = 'REQUIRED', bias_correction = 'True',
                 wd = 'REQUIRED', rescale_grad = '1.0', clip_gradient = '-1.0'}, d1)
    assert.same({'weight', 'grad', 'mean', 'var'}, i1.inputs)
    local i2, d2 = info('lamb_update_phase2', P2)
    assert.same({lr = 'REQUIRED', lower_bound = '-1.0', upper_bound = '-1.0'}, d2)
    assert.same({'weight', 'g', 'r1', 'r2'}, i2.inputs)
    assert.same({'weight', 'grad', 'mean', 'var', 'weight32'}, info('mp_lamb_update_phase1', P1).inputs)
    assert.same({'weight', 'g', 'r1', 'r2', 'weight32'}, info('mp_lamb_update_phase2', P2).inputs)
    for _, n in ipairs{'lamb_update_phase1', 'lamb_update_phase2', 'mp_lamb_update_phase1', 'mp_lamb_update_phase2'} do
      local i = mx.op.info(n)
      assert.equal(16 + 2, i.flags, n) -- UPDATE | NO_GRAD
      assert.truthy(i.doc:find('lamb update', 1, true), n)
      assert.truthy(i.doc:find('1904.00962', 1, true), n)
      assert.is_true(i.kernels.cpu.forward, n)
      if mx.context.num_gpus() > 0 then assert.is_true(i.kernels.gpu.forward, n) end
    end
  end)
  it('infer shapes and dtypes (r1, r2 of shape (1,); the mp_ dtypes)', function()
    local ii, oo = mx.op.infer('lamb_update_phase2', {lr = 0.1}, {{3, 4}, {}, {}, {}})
    assert.same({{3, 4}, {3, 4}, {1}, {1}}, ii)
    assert.same({3, 4}, oo[1])
    local w, g, m, v, w32 = mx.sym.var('w'), mx.sym.var('g'), mx.sym.var('m'), mx.sym.var('v'), mx.sym.var('w32')
    local s1 = mx.sym.mp_lamb_update_phase1(w, g, m, v, w32, {t = 1, wd = 0})
    local args, outs = s1:infer_type{w = 'float16'}
    assert.same({'float16', 'float16', 'float32', 'float32', 'float32'}, args)
    assert.same({'float32'}, outs)
    local s2 = mx.sym.mp_lamb_update_phase2(w, g, m, v, w32, {lr = 0.1})
    local args2, outs2 = s2:infer_type{w = 'float16'}
    assert.same({'float16', 'float32', 'float32', 'float32', 'float32'}, args2)
    assert.same({'float16'}, outs2)
  end)
  it('survive a JSON round trip under MXNet\'s names', function()
    local w, g, m, v = mx.sym.var('w'), mx.sym.var('g'), mx.sym.var('m'), mx.sym.var('v')
    local s = mx.sym.lamb_update_phase1(w, g, m, v, {t = 3, wd = 0.1, bias_correction = false})
    local json = s:tojson()
    assert.truthy(json:find('"op": "lamb_update_phase1"', 1, true))
    assert.truthy(json:find('"bias_correction": "False"', 1, true) or json:find('"bias_correction": "0"', 1, true), json)
    local back = mx.sym.load_json(json)
    assert.equal(json, back:tojson())
    local s2 = mx.sym.lamb_update_phase2(w, g, m, v, {lr = 0.01, upper_bound = 10})
    local j2 = s2:tojson()
    assert.truthy(j2:find('"op": "lamb_update_phase2"', 1, true))
    assert.equal(j2, mx.sym.load_json(j2):tojson())
    local _, outs = mx.sym.load_json(j2):infer_shape{w = {2, 3}}
    assert.same({{2, 3}}, outs)
  end)
  it('reject bad shapes, dtypes and parameters, naming the operator and argument', function()
    local w, m, v = f32{1, 2}, f32{0, 0}, f32{0, 0}
    H.raises(function() nd.lamb_update_phase1(w, f32{1, 2}, m, v, {wd = 0}) end,
      'lamb_update_phase1', "required parameter 't' is missing")
    H.raises(function() nd.lamb_update_phase1(w, f32{1, 2}, m, v, {t = 1}) end,
      'lamb_update_phase1', "required parameter 'wd' is missing")
    H.raises(function() nd.lamb_update_phase1(w, f32{1, 2, 3}, m, v, {t = 1, wd = 0}) end,
      'lamb_update_phase1', "input 'grad': expected shape (2,), got (3,)")
    H.raises(function() nd.lamb_update_phase1(w, f64{1, 2}, m, v, {t = 1, wd = 0}) end,
      'lamb_update_phase1', 'expected float32, got float64')
    H.raises(function() nd.lamb_update_phase1(w, f32{1, 2}, m, v, {t = 1, wd = 0, beta1 = 'x'}) end,
      'lamb_update_phase1', "parameter 'beta1'", 'x')
    H.raises(function() nd.lamb_update_phase2(w, f32{1, 2}, f32{1, 1}, f32{1}, {lr = 0.1}) end,
      'lamb_update_phase2', "input 'r1': expected one element (shape (1,)), got shape (2,)")
    H.raises(function() nd.lamb_update_phase2(w, f32{1, 2}, f32{1}, f64{1}, {lr = 0.1}) end,
      'lamb_update_phase2', 'expected float32, got float64')
    H.raises(function() nd.lamb_update_phase2(w, f32{1, 2}, f32{1}, f32{1}, {}) end,
      'lamb_update_phase2', "required parameter 'lr' is missing")
    H.raises(function() nd.mp_lamb_update_phase1(w, f32{1, 2}, m, v, f32{1, 2}, {t = 1, wd = 0}) end,
      'mp_lamb_update_phase1', "input 'weight'", 'expected float16, got float32')
    H.raises(function() nd.mp_lamb_update_phase1(f16{1, 2}, f16{1, 2}, m, v, f16{1, 2}, {t = 1, wd = 0}) end,
      'mp_lamb_update_phase1', "input 'weight32'", 'expected float32, got float16')
    H.raises(function() nd.mp_lamb_update_phase2(f16{1, 2}, f32{1, 2}, f32{1}, f32{1}, f32{1, 2, 3}, {lr = 0.1}) end,
      'mp_lamb_update_phase2', "input 'weight32'", '(3,)')
    -- the arrays are unchanged and usable after each refusal
    H.near(flat(w), {1, 2}, 0)
    H.near(flat(m), {0, 0}, 0)
    local g = nd.lamb_update_phase1(w, f32{1, 2}, m, v, {t = 1, wd = 0})
    assert.same({2}, g.shape)
  end)
  it('LAMB names the parameter when a fused operator refuses the update', function()
    local opt = mx.optimizer.LAMB{param_idx2name = {[0] = 'fc_weight'}}
    local upd = mx.optimizer.get_updater(opt)
    local w = f32{1, 2, 3}
    H.raises(function() upd(0, f64{0.1, 0.2, 0.3}, w) end,
      'mx.optimizer.lamb', "parameter 'fc_weight'", 'mx.nd.lamb_update_phase1', 'expected float32, got float64')
    upd(0, f32{0.1, 0.2, 0.3}, w)
    assert.is_true(flat(w)[1] < 1)
  end)
end)
