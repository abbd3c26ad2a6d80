--- luamx.initializer.more — mx.init: MSRAPrelu, Orthogonal, Bilinear and Load (MXNet 1.9
-- python/mxnet/initializer.py).
--
--   mx.init.MSRAPrelu('in', 0)        mx.init.Orthogonal{scale = 1.414, rand_type = 'normal'}
--   mx.init.Load('model-0010.params', mx.init.Uniform(0.01))
--
-- Invariants: weights only (other names keep the base class's rules, except Load, which
-- looks every name up first); arrays are written in place, in their own dtype.
-- Orthogonal draws an (out, in) matrix (in = product of the other dims) and makes its
-- rows (out <= in) or columns (out > in) orthonormal, as MXNet's SVD-based rule gives;
-- here by modified Gram-Schmidt in double precision (no LAPACK dependency).
local capi = require 'luamx.capi'
local nd = require 'luamx.ndarray'
local raise = capi.raise

local P = {}

local function write(arr, flat)
  local src = nd.array(flat):reshape(arr.shape)
  if src.dtype ~= arr.dtype then src = src:astype(arr.dtype) end
  if src.context ~= arr.context then src = src:as_in_context(arr.context) end
  arr:set(src)
end

--- Defines the initializers in the initializer module `M` (called by luamx.initializer).
-- @param M the luamx.initializer module table
-- @param H its helpers: `class`, `args`, `fill`, `desc_parts`
function P.define(M, H)
  local class, args = H.class, H.args

  --- MSRAPrelu(factor_type='avg', slope=0.25): Xavier with rnd_type 'gaussian' and
  --- magnitude 2 / (1 + slope^2) (He et al., for PReLU).
  M.MSRAPrelu = class('msraprelu', function(self, ...)
    local o = args('MSRAPrelu', {'factor_type', 'slope'}, ...)
    local slope = o.slope or 0.25
    local x = M.Xavier{rnd_type = 'gaussian', factor_type = o.factor_type or 'avg', magnitude = 2 / (1 + slope * slope)}
    self.rnd_type, self.factor_type, self.magnitude = x.rnd_type, x.factor_type, x.magnitude
    self.kwargs = {factor_type = self.factor_type, slope = slope}
  end)
  M.MSRAPrelu.scale_for = M.Xavier.scale_for
  M.MSRAPrelu._init_weight = M.Xavier._init_weight

  --- Orthogonal(scale=1.414, rand_type='uniform'): an orthonormal matrix (rows or columns)
  --- from U(-1, 1) or N(0, 1) draws, times scale, reshaped to the weight.
  M.Orthogonal = class('orthogonal', function(self, ...)
    local o = args('Orthogonal', {'scale', 'rand_type'}, ...)
    self.scale, self.rand_type = o.scale or 1.414, o.rand_type or 'uniform'
    if self.rand_type ~= 'uniform' and self.rand_type ~= 'normal' then
      raise("mx.init.Orthogonal: rand_type must be 'uniform' or 'normal', got " .. tostring(self.rand_type))
    end
    self.kwargs = {scale = self.scale, rand_type = self.rand_type}
  end)
  function M.Orthogonal:_init_weight(name, arr)
    local shape = arr.shape
    if #shape < 2 then raise(('mx.init.Orthogonal: %s must have at least 2 dims, got %d'):format(name, #shape)) end
    local nout, nin = shape[1], 1
    for i = 2, #shape do nin = nin * shape[i] end
    local draw = self.rand_type == 'uniform' and nd.random.uniform(-1, 1, {nout, nin}, {dtype = 'float64'})
      or nd.random.normal(0, 1, {nout, nin}, {dtype = 'float64'})
    local a = draw:toflat()
    -- orthonormalize the k = min(nout, nin) vectors of length L: rows when nout <= nin
    local rows = nout <= nin
    local k, L = rows and nout or nin, rows and nin or nout
    local function at(v, j) return rows and ((v - 1) * nin + j) or ((j - 1) * nin + v) end
    for v = 1, k do
      for u = 1, v - 1 do
        local dot = 0
        for j = 1, L do dot = dot + a[at(v, j)] * a[at(u, j)] end
        for j = 1, L do a[at(v, j)] = a[at(v, j)] - dot * a[at(u, j)] end
      end
      local norm = 0
      for j = 1, L do norm = norm + a[at(v, j)] ^ 2 end
      norm = math.sqrt(norm)
      if norm == 0 then raise('mx.init.Orthogonal: the random draw was degenerate; retry') end
      for j = 1, L do a[at(v, j)] = a[at(v, j)] / norm end
    end
    for i = 1, #a do a[i] = a[i] * self.scale end
    write(arr, a)
  end

  --- Bilinear(): the weights of a bilinear upsampling (deconvolution) filter:
  --- w[..., y, x] = (1 - |x/f - c|) * (1 - |y/f - c|), f = ceil(width / 2),
  --- c = (2f - 1 - f mod 2) / (2f).
  M.Bilinear = class('bilinear', function(self, ...) args('Bilinear', {}, ...) end)
  function M.Bilinear:_init_weight(name, arr)
    local shape = arr.shape
    if #shape ~= 4 then raise(('mx.init.Bilinear: %s must be 4-D, got %d dims'):format(name, #shape)) end
    local f = math.ceil(shape[4] / 2)
    local c = (2 * f - 1 - f % 2) / (2 * f)
    local n = shape[1] * shape[2] * shape[3] * shape[4]
    local w = {}
    for i = 0, n - 1 do
      local x, y = i % shape[4], math.floor(i / shape[4]) % shape[3]
      w[i + 1] = (1 - math.abs(x / f - c)) * (1 - math.abs(y / f - c))
    end
    write(arr, w)
  end

  --- Load(param, default_init=nil, verbose=false): initializes from saved arrays (a file
  --- name for mx.nd.load, or a name -> NDArray table; 'arg:' / 'aux:' prefixes dropped);
  --- a name not found goes to default_init (an error without one); shapes must match.
  -- @function Load
  local Load = {}
  Load.__index = Load
  M.Load = setmetatable(Load, {__call = function(cls, ...)
    local o = args('Load', {'param', 'default_init', 'verbose'}, ...)
    local param = o.param
    if type(param) == 'string' then param = require('luamx.files').load(param) end
    if type(param) ~= 'table' then
      raise('mx.init.Load: param must be a file name or a name -> NDArray table, got ' .. type(param))
    end
    local self = setmetatable({param = {}, default_init = o.default_init, verbose = o.verbose and true or false}, cls)
    for name, a in pairs(param) do
      if type(name) ~= 'string' then raise('mx.init.Load: param must be keyed by name (a file saved with names)') end
      local short = (name:sub(1, 4) == 'arg:' or name:sub(1, 4) == 'aux:') and name:sub(5) or name
      self.param[short] = a
    end
    return self
  end})
  Load.log = function(msg) io.stderr:write(msg, '\n') end
  --- Initializes `arr` from the loaded array of that name, or with default_init.
  -- @param desc the parameter name (or a description with `name`)
  -- @param arr the NDArray to fill
  function Load:init_array(desc, arr)
    local name = H.desc_parts(desc)
    local src = self.param[name]
    if src then
      local a, b = table.concat(arr.shape, ', '), table.concat(src.shape, ', ')
      if a ~= b then
        raise(('Parameter %s cannot be initialized from loading. Shape mismatch, target (%s) vs loaded (%s)')
          :format(name, a, b))
      end
      local v = src
      if v.dtype ~= arr.dtype then v = v:astype(arr.dtype) end
      if v.context ~= arr.context then v = v:as_in_context(arr.context) end
      arr:set(v)
      if self.verbose then Load.log(('Initialized %s by loading'):format(name)) end
    else
      if not self.default_init then
        raise(('Cannot Initialize %s. Not found in loaded param and no default Initializer is provided.'):format(name))
      end
      self.default_init(desc, arr)
      if self.verbose then Load.log(('Initialized %s by default'):format(name)) end
    end
  end
  Load.__call = function(self, desc, arr) return self:init_array(desc, arr) end
end

return P
