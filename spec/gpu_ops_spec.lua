-- Every registered operator that has a kernel on gpu(0), forward and backward on gpu(0)
-- against cpu(0) on small random inputs (MXNet's check_consistency). The cases are the
-- gradient checker's (tests/gradcheck_cases.h: op, parameters, input shapes and kinds),
-- read from the source tree, so a case added there is compared here too. float32:
-- |cpu - gpu| <= 1e-5 + 1e-4 max(|cpu|, |gpu|) for the visible outputs and the input
-- gradients. Cases whose CPU forward changes with the seed are skipped as pending (the
-- generators of the two devices differ). Skips with a message when there is no GPU context.
-- LUAMX_GPU_OPS_CTX=cpu1 runs the same comparisons against cpu(1) (checks this spec in
-- a build without a GPU).
local bit = require 'bit'
local mx = require 'luamx'
local ops = require 'luamx.ndarray_ops'

local self_check = os.getenv('LUAMX_GPU_OPS_CTX') == 'cpu1'
local dev_name = self_check and 'cpu' or 'gpu'

describe('operators on gpu(0) agree with cpu(0)', function()
  if not self_check and mx.context.num_gpus() == 0 then
    pending('no GPU context (mx.context.num_gpus() == 0): GPU operator specs skipped')
    return
  end
  local ctx = self_check and mx.cpu(1) or mx.gpu(0)

  -- The case tables of tests/gradcheck_cases.h: {"op", "k=v;k=v", "(2,3);(3)", "uu", K, train}.
  local src = assert(os.getenv('LUAMX_SOURCE_DIR'), 'LUAMX_SOURCE_DIR must be set (ctest sets it)')
  local f = assert(io.open(src .. '/tests/gradcheck_cases.h'))
  local text = f:read('*a')
  f:close()
  local cases = {}
  for op, params, shapes, kinds, K, train in
      text:gmatch('{"([%w_]+)",%s*"([^"]*)",%s*"([^"]*)",%s*"([^"]*)",%s*(%d+),%s*(%d)}') do
    cases[#cases + 1] = {op = op, params = params, shapes = shapes, kinds = kinds,
      K = tonumber(K), train = train == '1'}
  end
  assert(#cases > 200, 'could not read the gradient checker cases')

  local function parse_params(s)
    local p = {}
    for k, v in s:gmatch('([%w_]+)=([^;]+)') do p[k] = v end
    return p
  end

  local function parse_shapes(s)
    local list = {}
    for tuple in s:gmatch('%(([^)]*)%)') do
      local shape = {}
      for d in tuple:gmatch('%d+') do shape[#shape + 1] = tonumber(d) end
      list[#list + 1] = shape
    end
    return list
  end

  local function draw(kind, n, K)
    local v = {}
    for i = 1, n do
      local u = math.random()
      if kind == 'a' then v[i] = (0.2 + 0.8 * u) * (math.random() < 0.5 and -1 or 1)
      elseif kind == 'p' then v[i] = 0.5 + u
      elseif kind == 'l' then v[i] = math.floor(u * K)
      elseif kind == 'n' then v[i] = math.floor(u * (K + 1))
      elseif kind == 'c' then v[i] = 1
      elseif kind == 'z' then v[i] = 0
      elseif kind == 'g' then v[i] = 1.5 + u
      elseif kind == 'h' then v[i] = u - 0.5
      elseif kind == 's' then v[i] = 2.6 * u - 1.3 -- sampler grids, partly outside
      elseif kind == 'r' then -- rois: batch index in [-1, K), x1 y1 x2 y2 (test_gradcheck.c)
        local col = (i - 1) % 5
        v[i] = col == 0 and math.floor(u * (K + 1)) - 1 or col < 3 and -2 + 8 * u
          or v[i - 2] + 1 + 7 * u
      else v[i] = 2 * u - 1 end
    end
    return v
  end

  local function size(shape)
    local n = 1
    for _, d in ipairs(shape) do n = n * d end
    return n
  end

  local function compare(what, a, b)
    local x, y = a:toflat(), b:copyto(mx.cpu()):toflat()
    assert(#x == #y, ('%s: %d elements on cpu, %d on %s'):format(what, #x, #y, dev_name))
    for i = 1, #x do
      local ok = math.abs(x[i] - y[i]) <= 1e-5 + 1e-4 * math.max(math.abs(x[i]), math.abs(y[i]))
      assert(ok, ('%s element %d: cpu %.9g, %s %.9g'):format(what, i, x[i], dev_name, y[i]))
    end
  end

  local on = function(list)
    local r = {}
    for i, a in ipairs(list) do r[i] = a:copyto(ctx) end
    return r
  end

  math.randomseed(11)
  local ncompared = 0
  for _, c in ipairs(cases) do
    local info = mx.op.info(c.op)
    local k = self_check and info.kernels.cpu or info.kernels.gpu
    if k.forward then
      ncompared = ncompared + 1
      it(('%s {%s}'):format(c.op, c.params), function()
        local params = parse_params(c.params)
        local full = mx.op.info(c.op, params)
        local shapes, values = parse_shapes(c.shapes), {}
        for i, shape in ipairs(shapes) do values[i] = draw(c.kinds:sub(i, i), size(shape), c.K) end
        local function make(dtype) -- the case's inputs, float ones in dtype
          local list = {}
          for i, shape in ipairs(shapes) do
            local kind, flat = c.kinds:sub(i, i), values[i]
            list[i] = mx.nd.array(#flat > 0 and flat or {0},
                                  {dtype = kind == 'n' and 'int32' or dtype}):reshape(shape)
          end
          return list
        end
        -- float32, or float64 where the parameters ask for it (Cast, Embedding dtype=...)
        local inputs, ginputs, oc
        for _, dtype in ipairs {'float32', 'float64'} do
          inputs = make(dtype)
          ginputs = on(inputs) -- before the CPU call: update ops write their inputs
          mx.random.seed(7)
          local ok, res = pcall(ops.forward_all, c.op, params, inputs, c.train)
          if ok then oc = res break end
          if dtype == 'float64' then error(res, 0) end
        end
        mx.random.seed(8)
        local again = ops.forward_all(c.op, params, make(inputs[1] and inputs[1].dtype or 'float32'),
                                      c.train)
        for i = 1, #oc do
          if table.concat(oc[i]:toflat(), ',') ~= table.concat(again[i]:toflat(), ',') then
            return pending('draws random numbers: the devices\' generators differ')
          end
        end
        mx.random.seed(7)
        local og = ops.forward_all(c.op, params, ginputs, c.train)
        for i = 1, full.num_visible_outputs do compare('output ' .. i, oc[i], og[i]) end
        if not (k.backward and info.kernels.cpu.backward) or bit.band(info.flags, 2) ~= 0 then
          return
        end
        local heads = {}
        for i = 1, #oc do
          if i <= full.num_visible_outputs then
            heads[i] = mx.nd.array(draw('u', size(oc[i].shape)), {dtype = oc[i].dtype})
                         :reshape(oc[i].shape)
          end
        end
        local reqs = {}
        for i = 1, #inputs do
          local kind = c.kinds:sub(i, i)
          reqs[i] = (kind == 'l' or kind == 'c' or kind == 'n') and 0 or 1
        end
        local gc = ops.backward(c.op, params, inputs, oc, heads, {reqs = reqs, is_train = c.train})
        local gg = ops.backward(c.op, params, ginputs, og, on(heads),
                                {reqs = reqs, is_train = c.train})
        for i = 1, #inputs do
          if reqs[i] == 1 then compare('gradient of input ' .. i, gc[i], gg[i]) end
        end
      end)
    end
  end
  if ncompared == 0 then
    pending(('no operator has a kernel on %s(0) yet: nothing to compare'):format(dev_name))
  end
end)
