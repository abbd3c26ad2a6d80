-- spec/ops_sampling_torch_spec.lua — BilinearSampler, GridGenerator (affine) and
-- SpatialTransformer against PyTorch's grid_sample / affine_grid (align_corners=True,
-- zero padding), output and every input's gradient, with grids that reach outside the
-- image (spec/ops_sampling_torch_ref.py). Pending without Debian's python3-torch.
local mx = require 'luamx'
local nd = mx.nd
local H = require 'helpers'

local src = os.getenv('LUAMX_SOURCE_DIR') or '.'

local function have_torch()
  return os.execute('/usr/bin/python3 -c "import torch" >/dev/null 2>&1') == 0
end

-- runs op on the inputs (name -> array) through an executor, compares with PyTorch;
-- returns {kind .. ' ' .. name = relative error} and the reference's text
local function compare(op, sym, inputs, opts)
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute('mkdir -p ' .. dir) == 0)
  local bind = {ctx = mx.cpu()}
  for k, v in pairs(inputs) do bind[k] = v.shape end
  local exe = sym:simple_bind(bind)
  for k, v in pairs(inputs) do exe.arg_dict[k]:set(v) end
  exe:forward{is_train = true}
  local head = nd.random.uniform(-1, 1, exe.outputs[1].shape)
  exe:backward{head}
  local w = H.array_writer(dir)
  for k, v in pairs(inputs) do w.put('in', k, v) end
  w.put('in', 'head', head)
  w.put('out', 'output', exe.outputs[1])
  for k in pairs(inputs) do w.put('grad', k, exe.grad_dict[k]) end
  w.close()
  local f = assert(io.open(dir .. '/opts.txt', 'w'))
  f:write('op ', op, '\n')
  for k, v in pairs(opts or {}) do f:write(k, ' ', tostring(v), '\n') end
  f:close()
  local p = io.popen(('/usr/bin/python3 %s/spec/ops_sampling_torch_ref.py %s 2>&1'):format(src, dir))
  local text = p:read('*a')
  p:close()
  os.execute('rm -rf ' .. dir)
  local res = {}
  for kind, name, err, ref in text:gmatch('cmp (%a+) (%S+) (%S+) (%S+)') do
    res[kind .. ' ' .. name] = (tonumber(err) or math.huge) / math.max(tonumber(ref) or 0, 1e-12)
  end
  return res, text
end

local function check(label, res, text, want)
  local n, worst, at = 0, 0, nil
  for k, r in pairs(res) do
    n = n + 1
    if r > worst then worst, at = r, k end
  end
  assert.equal(want, n, label .. ': compared ' .. n .. ' arrays: ' .. text)
  print(('  %s: worst relative difference %.2g (%s)'):format(label, worst, tostring(at)))
  assert(worst < 1e-5, ('%s: %s differs from PyTorch by %.3g'):format(label, at, worst))
end

describe('spatial sampling operators against PyTorch', function()
  if not have_torch() then
    pending('PyTorch (Debian python3-torch) is not installed')
    return
  end
  mx.random.seed(31)

  it('BilinearSampler: grid_sample, grids partly outside [-1, 1]', function()
    local data = nd.random.uniform(-1, 1, {2, 3, 5, 6})
    local grid = nd.random.uniform(-1.3, 1.3, {2, 2, 4, 7})
    local sym = mx.sym.BilinearSampler{data = mx.sym.Variable('data'), grid = mx.sym.Variable('grid')}
    local res, text = compare('BilinearSampler', sym, {data = data, grid = grid})
    check('BilinearSampler', res, text, 3)
  end)

  it('GridGenerator (affine): affine_grid', function()
    local theta = nd.random.uniform(-1, 1, {3, 6})
    local sym = mx.sym.GridGenerator{data = mx.sym.Variable('theta'), transform_type = 'affine', target_shape = {4, 5}}
    local res, text = compare('GridGenerator', sym, {theta = theta}, {H = 4, W = 5})
    check('GridGenerator', res, text, 2)
  end)

  it('SpatialTransformer (affine, bilinear): affine_grid then grid_sample', function()
    local data = nd.random.uniform(-1, 1, {2, 2, 6, 5})
    -- values that put no sampling point exactly on a pixel (bilinear sampling has a kink
    -- there, where the two sides may pick different one-sided derivatives)
    local theta = nd.array{{0.913, 0.171, 0.1037, -0.1529, 1.0917, -0.2113}, {1.1891, -0.3137, 0.2953, 0.2571, 0.8173, 0.0519}}
    local sym = mx.sym.SpatialTransformer{data = mx.sym.Variable('data'), loc = mx.sym.Variable('theta'),
      target_shape = {4, 7}, transform_type = 'affine', sampler_type = 'bilinear'}
    local res, text = compare('SpatialTransformer', sym, {data = data, theta = theta}, {H = 4, W = 7})
    check('SpatialTransformer', res, text, 3)
  end)
end)
