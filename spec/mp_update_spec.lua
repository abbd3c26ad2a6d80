-- Multi-precision optimizer updates (mp_sgd_update, mp_sgd_mom_update, mp_nag_mom_update):
-- float16 weight and gradient, float32 momentum and master weights `weight32`; the rule
-- runs in float32 on weight32 (updated in place) and the float16 output receives it
-- rounded (MXNet 1.9 MP_SGDKernel / MP_SGDMomKernel / MP_NAGMomKernel). Checked against
-- the formulas on the CPU, then gpu(0) against the CPU where a GPU context exists.
local mx = require 'luamx'
local H = require 'helpers'

local function f16(t) return mx.nd.array(t):astype('float16') end
local function f32(t) return mx.nd.array(t) end
local function clip(v, c) if c >= 0 then return math.max(-c, math.min(c, v)) end return v end

local W = {1, -2, 3, 0.5, 0.25}
local G = {0.1, 0.2, -0.3, 4, -8}
local M = {0, 0.1, 0, -0.2, 0.3}
local P = {lr = 0.1, momentum = 0.9, wd = 0.01, rescale_grad = 0.5, clip_gradient = 1}

-- expected master weights and momentum after one step of rule on the float16 gradient
local function expect(rule)
  local g16 = f16(G):astype('float32'):toflat()
  local w, m = {}, {}
  for i = 1, #W do
    local g = clip(P.rescale_grad * g16[i], P.clip_gradient)
    if rule == 'sgd' then
      w[i] = (1 - P.lr * P.wd) * W[i] - P.lr * g
    elseif rule == 'mom' then
      m[i] = P.momentum * M[i] - P.lr * P.wd * W[i] - P.lr * g
      w[i] = W[i] + m[i]
    else
      g = g + P.wd * W[i]
      m[i] = P.momentum * M[i] + g
      w[i] = W[i] - P.lr * (P.momentum * m[i] + g)
    end
  end
  return w, m
end

local function run(ctx, rule)
  local w, g, m, w32 = f16(W):copyto(ctx), f16(G):copyto(ctx), f32(M):copyto(ctx), f32(W):copyto(ctx)
  local args = {weight = w, grad = g, weight32 = w32, out = w}
  for k, v in pairs(P) do args[k] = v end
  if rule == 'sgd' then
    args.momentum = nil
    mx.nd.mp_sgd_update(args)
  else
    args.mom = m
    if rule == 'mom' then mx.nd.mp_sgd_mom_update(args) else mx.nd.mp_nag_mom_update(args) end
  end
  return w, m, w32
end

describe('multi-precision updates', function()
  for _, rule in ipairs {'sgd', 'mom', 'nag'} do
    it(rule .. ': float32 rule on weight32, float16 weight rounded from it (cpu)', function()
      local ew, em = expect(rule)
      local w, m, w32 = run(mx.cpu(), rule)
      H.near(w32:toflat(), ew, 1e-6)
      if rule ~= 'sgd' then H.near(m:toflat(), em, 1e-6) end
      assert.are.equal('float16', w.dtype)
      assert.are.same(f32(w32:toflat()):astype('float16'):astype('float32'):toflat(),
        w:astype('float32'):toflat())
    end)
  end

  it('refuses a float32 weight and a float16 master copy, naming them', function()
    H.raises(function()
      mx.nd.mp_sgd_update {weight = f32(W), grad = f16(G), weight32 = f32(W), lr = 0.1}
    end, 'mp_sgd_update')
    H.raises(function()
      mx.nd.mp_sgd_update {weight = f16(W), grad = f16(G), weight32 = f16(W), lr = 0.1}
    end, "weight32")
  end)

  for _, name in ipairs {'sgd', 'nag'} do
    for _, fusedv in ipairs {true, false} do
      it(('mx.optimizer %s{multi_precision} keeps a float32 master copy (fused %s)'):format(name,
          tostring(fusedv)), function()
        local opt_mod = mx.optimizer
        local saved = opt_mod.use_fused
        opt_mod.use_fused = fusedv
        local o = {learning_rate = 0.1, momentum = 0.9, wd = 0.01, rescale_grad = 0.5}
        local mp = opt_mod.create(name, {learning_rate = 0.1, momentum = 0.9, wd = 0.01,
          rescale_grad = 0.5, multi_precision = true})
        local ref = opt_mod.create(name, o)
        local u_mp, u_ref = opt_mod.get_updater(mp), opt_mod.get_updater(ref)
        local w16, w32 = f16(W), f16(W):astype('float32')
        for step = 1, 3 do
          local g = f16({0.1 * step, -0.2, 0.3, 1, -2})
          u_mp(0, g, w16)
          u_ref(0, g:astype('float32'), w32)
        end
        opt_mod.use_fused = saved
        local st = u_mp.states[0]
        assert.are.equal(2, #st)
        assert.are.equal('float32', st[2].dtype)
        H.near(st[2]:toflat(), w32:toflat(), 1e-6)
        assert.are.same(w32:astype('float16'):astype('float32'):toflat(),
          w16:astype('float32'):toflat())
      end)
    end
  end

  if mx.context.num_gpus() == 0 then
    pending('no GPU context: the gpu(0) comparison is skipped')
    return
  end
  for _, rule in ipairs {'sgd', 'mom', 'nag'} do
    it(rule .. ': gpu(0) agrees with the CPU', function()
      local cw, cm, c32 = run(mx.cpu(), rule)
      local gw, gm, g32 = run(mx.gpu(0), rule)
      H.near(g32:toflat(), c32:toflat(), 1e-6)
      H.near(gm:toflat(), cm:toflat(), 1e-6)
      H.near(gw:astype('float32'):toflat(), cw:astype('float32'):toflat(), 1e-3)
    end)
  end
end)
