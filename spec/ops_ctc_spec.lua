-- CTCLoss (aliases ctc_loss, _contrib_CTCLoss, _contrib_ctc_loss; MXNet 1.9
-- src/operator/nn/ctc_loss.cc): data (T, N, C) activations, label (N, L), optional
-- data_lengths and label_lengths, blank_label 'first' (class 0, labels padded with 0) or
-- 'last' (class C - 1, padded with -1).
--
-- The loss is checked against a hand-worked case and against brute force: every frame
-- alignment (C^T of them for tiny T) collapsed (repeats merged, blanks dropped) and its
-- probability summed, independent of the α/β recursion; the gradient against the
-- posteriors of the same enumeration (finite differences are in tests/gradcheck_cases.h).
-- Lengths and padding, an executor, JSON, help text, errors naming op, argument, expected
-- and actual. On a GPU context (the simulator in CI) it must agree with the CPU.
local mx = require 'luamx'
local H = require 'helpers'
local ops = require 'luamx.ndarray_ops'
local help = require 'luamx.repl.help'

local function flat(a) return a:toflat() end

local function rand_list(n, lo, hi)
  local t = {}
  for i = 1, n do t[i] = lo + (hi - lo) * math.random() end
  return t
end

-- softmax over classes of frame t of sequence n in x (flat [T, N, C])
local function probs(x, T, N, C)
  local p = {}
  for t = 0, T - 1 do
    for n = 0, N - 1 do
      local base, m, z = (t * N + n) * C, -math.huge, 0
      for c = 1, C do m = math.max(m, x[base + c]) end
      for c = 1, C do z = z + math.exp(x[base + c] - m) end
      for c = 1, C do p[base + c] = math.exp(x[base + c] - m) / z end
    end
  end
  return p
end

-- brute force for sequence n: loss and d loss / d x (flat [Tn, C] rows of that sequence)
local function brute(x, T, N, C, n, Tn, lab, blank)
  local p = probs(x, T, N, C)
  local total, post = 0, {}
  for i = 1, Tn * C do post[i] = 0 end
  local path = {}
  local function walk(t)
    if t == Tn then
      local out, prev = {}, nil
      for i = 1, Tn do
        local c = path[i]
        if c ~= blank and c ~= prev then out[#out + 1] = c end
        prev = c
      end
      if #out ~= #lab then return end
      for i = 1, #lab do if out[i] ~= lab[i] then return end end
      local pr = 1
      for i = 1, Tn do pr = pr * p[((i - 1) * N + n) * C + path[i] + 1] end
      total = total + pr
      for i = 1, Tn do
        local k = (i - 1) * C + path[i] + 1
        post[k] = post[k] + pr
      end
      return
    end
    for c = 0, C - 1 do
      path[t + 1] = c
      walk(t + 1)
    end
  end
  walk(0)
  local g = {}
  for t = 0, T - 1 do
    for c = 0, C - 1 do
      local k = t * C + c + 1
      g[k] = t < Tn and p[(t * N + n) * C + c + 1] - post[k] / total or 0
    end
  end
  return -math.log(total), g
end

-- the gradient rows of sequence n from a flat [T, N, C] gradient
local function rows_of(g, T, N, C, n)
  local r = {}
  for t = 0, T - 1 do
    for c = 1, C do r[t * C + c] = g[(t * N + n) * C + c] end
  end
  return r
end

describe('CTCLoss', function()
  it('gives the hand-worked loss log 3 and gradient of a uniform 2-frame case', function()
    -- 3 classes, blank 0, label "1": alignments 1-1, 1-b, b-1, 1/9 each
    local y = mx.nd.CTCLoss(mx.nd.zeros { 2, 1, 3 }, mx.nd.array { { 1 } })
    assert.are.same({ 1 }, y.shape)
    H.near(flat(y), { math.log(3) }, 1e-6)
    local x = mx.nd.zeros({ 2, 1, 3 }, { dtype = 'float64' })
    local L = mx.nd.array({ { 1 } }, { dtype = 'float64' })
    local o = ops.forward_all('CTCLoss', {}, { x, L }, true)
    local g = ops.backward('CTCLoss', {}, { x, L }, o, { mx.nd.ones({ 1 }, { dtype = 'float64' }) })
    local third = 1 / 3
    H.near(flat(g[1]), { 0, -third, third, 0, -third, third }, 1e-12)
    -- the blank last: class 2 is the blank, label "0" (aliases and the contrib names)
    H.near(flat(mx.nd.ctc_loss(mx.nd.zeros { 2, 1, 3 }, mx.nd.array { { 0 } },
      { blank_label = 'last' })), { math.log(3) }, 1e-6)
    H.near(flat(mx.nd._contrib_CTCLoss(mx.nd.zeros { 2, 1, 3 }, mx.nd.array { { 2 } })),
      { math.log(3) }, 1e-6)
    assert.are.equal(mx.nd._contrib_ctc_loss, mx.nd.contrib.ctc_loss)
  end)

  for _, dt in ipairs { 'float32', 'float64' } do
    local tol = dt == 'float32' and 1e-5 or 1e-11
    it('matches brute force over every alignment, padding and both blanks (' .. dt .. ')',
      function()
        math.randomseed(50)
        local T, N, C = 4, 3, 3
        local x = rand_list(T * N * C, -2, 2)
        for _, blank_last in ipairs { false, true } do
          local blank = blank_last and C - 1 or 0
          local pad = blank_last and -1 or 0
          -- labels: "a b" (distinct), "a a" (a repeat needs a blank between), "a" + padding
          local a, b = blank_last and 0 or 1, blank_last and 1 or 2
          local labels = { { a, b }, { a, a }, { b, pad } }
          local X = mx.nd.array(x, { dtype = dt }):reshape { T, N, C }
          local Lb = mx.nd.array(labels, { dtype = dt })
          local p = { blank_label = blank_last and 'last' or 'first' }
          local o = ops.forward_all('CTCLoss', p, { X, Lb }, true)
          local G = mx.nd.array({ 1, -0.5, 2 }, { dtype = dt })
          local g = flat(ops.backward('CTCLoss', p, { X, Lb }, o, { G })[1])
          local loss = flat(o[1])
          local heads = { 1, -0.5, 2 }
          for n = 0, N - 1 do
            local lab = {}
            for _, v in ipairs(labels[n + 1]) do if v ~= pad then lab[#lab + 1] = v end end
            local want, wg = brute(x, T, N, C, n, T, lab, blank)
            assert.is_true(math.abs(loss[n + 1] - want) < tol * 10,
              ('sequence %d: loss %g, brute force %g'):format(n, loss[n + 1], want))
            for i = 1, #wg do wg[i] = wg[i] * heads[n + 1] end
            H.near(rows_of(g, T, N, C, n), wg, tol * 10)
          end
        end
      end)
  end

  it('takes data_lengths and label_lengths: frames past a length get no gradient', function()
    math.randomseed(51)
    local T, N, C = 4, 2, 3
    local x = rand_list(T * N * C, -1, 1)
    local X = mx.nd.array(x, { dtype = 'float64' }):reshape { T, N, C }
    -- label rows hold junk past their lengths: lengths decide, not padding
    local Lb = mx.nd.array({ { 1, 2 }, { 2, 2 } }, { dtype = 'float64' })
    local DL = mx.nd.array({ 3, 4 }, { dtype = 'int32' })
    local LL = mx.nd.array({ 1, 2 }, { dtype = 'int32' })
    local p = { use_data_lengths = true, use_label_lengths = true }
    local o = ops.forward_all('CTCLoss', p, { X, Lb, DL, LL }, true)
    local g = flat(ops.backward('CTCLoss', p, { X, Lb, DL, LL }, o,
      { mx.nd.ones({ 2 }, { dtype = 'float64' }) })[1])
    local l0, g0 = brute(x, T, N, C, 0, 3, { 1 }, 0)
    local l1, g1 = brute(x, T, N, C, 1, 4, { 2, 2 }, 0)
    H.near(flat(o[1]), { l0, l1 }, 1e-11)
    H.near(rows_of(g, T, N, C, 0), g0, 1e-11)
    H.near(rows_of(g, T, N, C, 1), g1, 1e-11)
    for c = 1, C do assert.are.equal(0, g[(3 * N + 0) * C + c]) end -- frame 3 of sequence 0
    -- the symbol lists the inputs MXNet lists
    local s = mx.sym.CTCLoss { data = mx.sym.Variable('x'), label = mx.sym.Variable('l'),
      data_lengths = mx.sym.Variable('dl'), label_lengths = mx.sym.Variable('ll'),
      use_data_lengths = true, use_label_lengths = true, name = 'ctc' }
    assert.are.same({ 'x', 'l', 'dl', 'll' }, s:list_arguments())
    assert.are.same({ 'ctc_output' }, s:list_outputs())
  end)

  it('trains in an executor, round-trips JSON and has help text', function()
    local s = mx.sym.ctc_loss { data = mx.sym.Variable('x'), label = mx.sym.Variable('l'),
      blank_label = 'last', name = 'ctc' }
    local js = s:tojson()
    assert.truthy(js:find('"op": "CTCLoss"', 1, true))
    assert.truthy(js:find('"blank_label": "last"', 1, true))
    assert.are.equal(js, mx.sym.load_json(js):tojson())
    local _, outs = s:infer_shape { x = { 5, 2, 4 }, l = { 2, 3 } }
    assert.are.same({ { 2 } }, outs)
    local loss = mx.sym.MakeLoss(s)
    local exe = loss:simple_bind { x = { 2, 1, 3 }, l = { 1, 1 } }
    exe.arg_dict.x:set(0)
    exe.arg_dict.l:set { { 0 } }
    H.near(flat(exe:forward { is_train = true }[1]), { math.log(3) }, 1e-6)
    exe:backward()
    local third = 1 / 3
    H.near(flat(exe.grad_dict.x), { -third, third, 0, -third, third, 0 }, 1e-6)
    local text = help.op_text(mx, 'CTCLoss')
    for _, w in ipairs { 'Connectionist Temporal Classification', 'use_data_lengths',
      'blank_label', 'padded with -1' } do
      assert.truthy(text:find(w, 1, true), w)
    end
  end)

  it('refuses bad shapes, lengths and labels, naming op, argument, expected, actual', function()
    local s = mx.sym.CTCLoss { data = mx.sym.Variable('x'), label = mx.sym.Variable('l'),
      name = 'ctc' }
    H.raises(function() s:infer_shape { x = { 5, 2, 4 }, l = { 3, 2 } } end,
      "CTCLoss 'ctc'", "input 'label'", 'expected 2 sequences', 'got 3')
    H.raises(function() s:infer_shape { x = { 2, 2, 4 }, l = { 2, 3 } } end,
      "CTCLoss 'ctc'", "input 'label'", 'expected at most 2 labels', 'got 3')
    H.raises(function() s:infer_shape { x = { 5, 8 }, l = { 2, 3 } } end,
      "CTCLoss 'ctc'", "input 'data'", 'expected 3-D', 'got 2-D')
    local x = mx.nd.zeros { 3, 1, 3 }
    H.raises(function() mx.nd.CTCLoss(x, mx.nd.array { { 1, 3 } }) end,
      'CTCLoss', "input 'label'", 'expected class indices in [0, 3) other than the blank 0',
      'got 3 at element 1')
    H.raises(function() mx.nd.CTCLoss(x, mx.nd.array { { 2 } }, { blank_label = 'last' }) end,
      'CTCLoss', "input 'label'", 'other than the blank 2', 'got 2 at element 0')
    H.raises(function()
      mx.nd.CTCLoss { data = x, label = mx.nd.array { { 1 } }, data_lengths = mx.nd.array { 4 },
        use_data_lengths = true }
    end, 'CTCLoss', "input 'data_lengths'", 'expected whole numbers in [0, 3]', 'got 4')
    H.raises(function()
      mx.nd.CTCLoss { data = x, label = mx.nd.array { { 1 } },
        label_lengths = mx.nd.array { 1.5 }, use_label_lengths = true }
    end, 'CTCLoss', "input 'label_lengths'", 'expected whole numbers in [0, 1]', 'got 1.5')
    H.raises(function()
      mx.nd.CTCLoss(mx.nd.zeros({ 3, 1, 3 }, { dtype = 'int32' }), mx.nd.array { { 1 } })
    end, 'CTCLoss', "input 'data'", 'got int32')
    H.raises(function()
      mx.nd.CTCLoss(x, mx.nd.array({ { 1 } }, { dtype = 'uint8' }))
    end, 'CTCLoss', "input 'label'", 'expected float32, float64, int32 or int64', 'got uint8')
    H.raises(function() mx.nd.CTCLoss(x, mx.nd.array { { 1 } }, { blank_label = 'middle' }) end,
      'CTCLoss', "parameter 'blank_label'", 'middle')
    -- a label that cannot be aligned in the frames given: loss +inf, gradient zero
    local xs = { x, mx.nd.array { { 1, 1 } }, mx.nd.array { 2 } }
    local o = ops.forward_all('CTCLoss', { use_data_lengths = true }, xs, true)
    assert.are.equal(math.huge, flat(o[1])[1])
    local g = ops.backward('CTCLoss', { use_data_lengths = true }, xs, o, { mx.nd.ones { 1 } })
    for _, v in ipairs(flat(g[1])) do assert.are.equal(0, v) end
  end)
end)

describe('CTCLoss on gpu(0)', function()
  if mx.context.num_gpus() == 0 then
    pending('no GPU context (mx.context.num_gpus() == 0): GPU checks skipped')
    return
  end
  local gpu = mx.gpu(0)
  for _, dt in ipairs { 'float32', 'float64' } do
    it('agrees with the CPU with lengths, both blanks, forward and backward (' .. dt .. ')',
      function()
        math.randomseed(52)
        local T, N, C = 6, 3, 5
        local Xc = mx.nd.array(rand_list(T * N * C, -2, 2), { dtype = dt }):reshape { T, N, C }
        for _, last in ipairs { false, true } do
          local labels = last and { { 0, 1, 1 }, { 3, 2, -1 }, { 2, 0, 0 } }
            or { { 1, 2, 2 }, { 4, 3, 0 }, { 2, 1, 1 } }
          local Lc = mx.nd.array(labels, { dtype = dt })
          local DLc = mx.nd.array({ 6, 5, 6 }, { dtype = 'int32' })
          local p = { use_data_lengths = true, blank_label = last and 'last' or 'first' }
          local oc = ops.forward_all('CTCLoss', p, { Xc, Lc, DLc }, true)
          local xg = { Xc:copyto(gpu), Lc:copyto(gpu), DLc:copyto(gpu) }
          local og = ops.forward_all('CTCLoss', p, xg, true)
          local tol = dt == 'float32' and 1e-5 or 1e-12
          H.near(flat(og[1]:copyto(mx.cpu())), flat(oc[1]), tol)
          local G = mx.nd.array({ 1, 2, -1 }, { dtype = dt })
          local gc = ops.backward('CTCLoss', p, { Xc, Lc, DLc }, oc, { G })
          local gg = ops.backward('CTCLoss', p, xg, og, { G:copyto(gpu) })
          H.near(flat(gg[1]:copyto(mx.cpu())), flat(gc[1]), tol)
        end
      end)
  end

  it('reports a bad label found on the device in the CPU\'s words', function()
    local x = mx.nd.zeros({ 3, 1, 3 }):copyto(gpu)
    H.raises(function()
      mx.nd.CTCLoss(x, mx.nd.array({ { 1, 3 } }):copyto(gpu)):copyto(mx.cpu())
    end, 'CTCLoss', "input 'label'", 'other than the blank 0', 'got 3 at element 1')
  end)
end)
