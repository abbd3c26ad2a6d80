-- cuDNN against luamx's own CUDA kernels on gpu(0): Convolution (1-D, 2-D with groups,
-- stride, pad and dilation, 3-D; float32 and float16), Pooling (max, avg with and
-- without the padding, global, a 'full' case cuDNN takes and one it refuses) and
-- BatchNorm (training with the moving statistics, fix_gamma, use_global_stats,
-- inference), forward and backward with write and add. Each case runs twice on the
-- device, with cudnn_off = false (cuDNN where src/ops/cuda/dnn.c accepts the
-- configuration) and cudnn_off = true (the own kernels), and the results must agree to
-- float rounding (cuDNN's algorithms sum in other orders). In builds without cuDNN, or
-- with LUAMX_CUDNN=0, both runs take the own path and agree exactly. Skips with a
-- message when there is no GPU context.
local mx = require 'luamx'
local ops = require 'luamx.ndarray_ops'

describe('cuDNN and the own kernels agree on gpu(0)', function()
  if mx.context.num_gpus() == 0 then
    pending('no GPU context (mx.context.num_gpus() == 0): cuDNN specs skipped')
    return
  end
  local gpu = mx.gpu(0)
  math.randomseed(5)

  local function size(shape)
    local n = 1
    for _, d in ipairs(shape) do n = n * d end
    return n
  end
  local function rand(shape)
    local v = {}
    for i = 1, size(shape) do v[i] = 2 * math.random() - 1 end
    return v
  end
  local function arr(v, shape, dtype) return mx.nd.array(v, {dtype = dtype, ctx = gpu}):reshape(shape) end
  local function flat(a) return a:astype('float32'):copyto(mx.cpu()):toflat() end
  local function close(what, x, y, tol)
    assert.are.equal(#x, #y, what .. ': sizes')
    for i = 1, #x do
      local ok = math.abs(x[i] - y[i]) <= tol * (1 + math.max(math.abs(x[i]), math.abs(y[i])))
      assert(ok, ('%s element %d: own %.9g, cuDNN %.9g'):format(what, i, x[i], y[i]))
    end
  end
  local function with(params, off)
    local p = {}
    for k, v in pairs(params) do p[k] = v end
    p.cudnn_off = off
    return p
  end

  -- forward and backward of op with cudnn_off true and false; inputs {v, shape} in dtype,
  -- params[] the op's (dtype for float32-only inputs given per input as .dtype)
  local function agree(op, params, inputs, dtype, tol, reqs, nvis)
    local res = {}
    local head
    for run, off in ipairs {true, false} do
      local p = with(params, off)
      local list = {}
      for i, a in ipairs(inputs) do list[i] = arr(a.v, a.shape, a.dtype or dtype) end
      local outs = ops.forward_all(op, p, list, true)
      head = head or arr(rand(outs[1].shape), outs[1].shape, dtype)
      local heads = {head}
      -- reqs: write, then add onto a copy of the first run's gradients
      local grads = ops.backward(op, p, list, outs, heads, {reqs = reqs})
      res[run] = {outs = outs, grads = grads}
    end
    for i = 1, nvis or 1 do
      close(op .. ' output ' .. i, flat(res[1].outs[i]), flat(res[2].outs[i]), tol)
    end
    for i = 1, #inputs do
      if res[1].grads[i] then
        close(op .. ' gradient ' .. i, flat(res[1].grads[i]), flat(res[2].grads[i]), tol)
      end
    end
  end

  -- req 'add': the gradients accumulate onto given arrays in both runs
  local function agree_add(op, params, inputs, dtype, tol)
    local res = {}
    local head
    for run, off in ipairs {true, false} do
      local p = with(params, off)
      local list, grads, reqs = {}, {}, {}
      for i, a in ipairs(inputs) do
        list[i] = arr(a.v, a.shape, a.dtype or dtype)
        grads[i] = arr(a.g, a.shape, a.dtype or dtype)
        reqs[i] = 3
      end
      local outs = ops.forward_all(op, p, list, true)
      head = head or arr(rand(outs[1].shape), outs[1].shape, dtype)
      res[run] = ops.backward(op, p, list, outs, {head}, {reqs = reqs, grads = grads})
    end
    for i = 1, #inputs do
      close(op .. ' add gradient ' .. i, flat(res[1][i]), flat(res[2][i]), tol)
    end
  end

  local TOL = {float32 = 2e-4, float16 = 2e-2}

  it('Convolution: 1-D, 2-D with groups / stride / pad / dilate, 3-D, with and without bias', function()
    for _, dtype in ipairs {'float32', 'float16'} do
      for _, c in ipairs {
        {{kernel = '(3,)', num_filter = 4, pad = '(1,)', stride = '(2,)'}, {2, 3, 11}, {4, 3, 3}},
        {{kernel = '(3,3)', num_filter = 6, num_group = 2, pad = '(1,1)', stride = '(2,1)',
          dilate = '(1,2)'}, {2, 4, 9, 8}, {6, 2, 3, 3}},
        {{kernel = '(2,2,2)', num_filter = 3, no_bias = true}, {1, 2, 4, 5, 3}, {3, 2, 2, 2, 2}},
      } do
        local params, xs, ws = c[1], c[2], c[3]
        local inputs = {{v = rand(xs), shape = xs}, {v = rand(ws), shape = ws}}
        if not params.no_bias then inputs[3] = {v = rand({ws[1]}), shape = {ws[1]}} end
        agree('Convolution', params, inputs, dtype, TOL[dtype])
        for _, a in ipairs(inputs) do a.g = rand(a.shape) end
        agree_add('Convolution', params, inputs, dtype, TOL[dtype])
      end
    end
  end)

  it('Pooling: max, avg with and without the padding, global, full', function()
    for _, dtype in ipairs {'float32', 'float16'} do
      for _, params in ipairs {
        {kernel = '(3,3)', pool_type = 'max', stride = '(2,2)', pad = '(1,1)'},
        {kernel = '(3,3)', pool_type = 'avg', stride = '(2,2)', pad = '(1,1)'},
        {kernel = '(3,3)', pool_type = 'avg', stride = '(2,2)', pad = '(1,1)',
         count_include_pad = false},
        {kernel = '(2,2)', pool_type = 'max', global_pool = true},
        {kernel = '(3,3)', pool_type = 'avg', stride = '(2,2)', pooling_convention = 'full'},
      } do
        for _, xs in ipairs {{2, 3, 9, 9}, {2, 3, 10, 8}} do
          local inputs = {{v = rand(xs), shape = xs}}
          agree('Pooling', params, inputs, dtype, TOL[dtype])
          inputs[1].g = rand(xs)
          agree_add('Pooling', params, inputs, dtype, TOL[dtype])
        end
      end
      local xs = {1, 2, 4, 3, 5} -- 3-D max
      agree('Pooling', {kernel = '(2,2,2)', pool_type = 'max', stride = '(1,2,2)'},
            {{v = rand(xs), shape = xs}}, dtype, TOL[dtype])
    end
  end)

  it('BatchNorm: training, fix_gamma, use_global_stats; outputs, gradients, moving statistics', function()
    for _, dtype in ipairs {'float32', 'float16'} do
      for _, params in ipairs {
        {fix_gamma = false, eps = 1e-3, momentum = 0.9},
        {fix_gamma = true, eps = 2e-5, momentum = 0.8},
        {fix_gamma = false, use_global_stats = true},
      } do
        for _, xs in ipairs {{4, 3}, {2, 3, 4, 5}} do
          local C = xs[2]
          local x, g, b = rand(xs), rand({C}), rand({C})
          local mm, mv = rand({C}), {}
          for i = 1, C do mv[i] = 0.5 + math.random() end
          -- the forward with the moving statistics as aux arrays
          local got = {}
          for run, off in ipairs {true, false} do
            local amm, amv = arr(mm, {C}, 'float32'), arr(mv, {C}, 'float32')
            local p = with(params, off)
            p.data, p.gamma, p.beta = arr(x, xs, dtype), arr(g, {C}, 'float32'), arr(b, {C}, 'float32')
            p.moving_mean, p.moving_var, p.is_train = amm, amv, true
            local y = mx.nd.BatchNorm(p)
            got[run] = {y, amm, amv}
          end
          for i, what in ipairs {'output', 'moving_mean', 'moving_var'} do
            close('BatchNorm ' .. what, flat(got[1][i]), flat(got[2][i]), TOL[dtype])
          end
          local inputs = {{v = x, shape = xs}, {v = g, shape = {C}, dtype = 'float32'},
                          {v = b, shape = {C}, dtype = 'float32'}}
          agree('BatchNorm', params, inputs, dtype, TOL[dtype], nil, 1)
          agree('BatchNorm', params, inputs, dtype, TOL[dtype], {1, 0, 1}, 1)
          for _, a in ipairs(inputs) do a.g = rand(a.shape) end
          agree_add('BatchNorm', params, inputs, dtype, TOL[dtype])
        end
      end
    end
  end)
end)
