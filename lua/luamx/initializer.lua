--- luamx.initializer — mx.init: parameter initializers (MXNet 1.9 python/mxnet/initializer.py).
--
--   local init = mx.init.Xavier{factor_type = 'in', magnitude = 2.34}
--   init('fc1_weight', arr)                                   -- by name
--   init(mx.init.InitDesc('w', {__init__ = '["constant", {"value": 2}]'}), arr)
--
-- Invariants:
-- * Dispatch (init(desc, arr) = init:init_array(desc, arr)): a `__init__` attribute on the
--   description wins (JSON '["name", {kwargs}]' as MXNet writes it, or a bare name);
--   otherwise by name suffix: weight → the initializer's rule, bias → 0, gamma → 1,
--   beta → 0, moving_mean / moving_inv_var / moving_avg → 0, moving_var → 1, min → 0,
--   max → 1; any other name is an error (MXNet's "Unknown initialization pattern").
-- * Draws come from mx.nd.random, so mx.random.seed(n) repeats them. Arrays are written
--   in place (views included).
-- * dumps() gives MXNet's JSON form, which create() reads back.
local capi = require 'luamx.capi'
local kwargs = require 'luamx.kwargs'
local nd = require 'luamx.ndarray'
local raise = capi.raise
local check = require 'luamx.check'

local M = {}

-- ------------------------------------------------------------------ JSON (small) ---
--- Decodes the JSON subset MXNet writes in attributes (objects, arrays, strings,
--- numbers, true/false/null).
local function json_decode(s)
  local pos = 1
  local function fail(msg) raise(('mx.init: bad __init__ JSON %q: %s at character %d'):format(s, msg, pos)) end
  local function ws() pos = s:find('[^ \t\r\n]', pos) or #s + 1 end
  local value
  local function str()
    local out = {}
    pos = pos + 1
    while true do
      local c = s:sub(pos, pos)
      if c == '' then fail('unterminated string') end
      if c == '"' then pos = pos + 1 break end
      if c == '\\' then
        local e = s:sub(pos + 1, pos + 1)
        out[#out + 1] = ({n = '\n', t = '\t', r = '\r', b = '\b', f = '\f'})[e] or e
        pos = pos + 2
      else out[#out + 1] = c; pos = pos + 1 end
    end
    return table.concat(out)
  end
  function value()
    ws()
    local c = s:sub(pos, pos)
    if c == '{' then
      local t = {}
      pos = pos + 1; ws()
      if s:sub(pos, pos) == '}' then pos = pos + 1 return t end
      while true do
        ws()
        if s:sub(pos, pos) ~= '"' then fail('expected a key') end
        local k = str(); ws()
        if s:sub(pos, pos) ~= ':' then fail("expected ':'") end
        pos = pos + 1
        t[k] = value(); ws()
        local d = s:sub(pos, pos); pos = pos + 1
        if d == '}' then return t end
        if d ~= ',' then fail("expected ',' or '}'") end
      end
    elseif c == '[' then
      local t = {}
      pos = pos + 1; ws()
      if s:sub(pos, pos) == ']' then pos = pos + 1 return t end
      while true do
        t[#t + 1] = value(); ws()
        local d = s:sub(pos, pos); pos = pos + 1
        if d == ']' then return t end
        if d ~= ',' then fail("expected ',' or ']'") end
      end
    elseif c == '"' then return str()
    elseif s:sub(pos, pos + 3) == 'true' then pos = pos + 4 return true
    elseif s:sub(pos, pos + 4) == 'false' then pos = pos + 5 return false
    elseif s:sub(pos, pos + 3) == 'null' then pos = pos + 4 return nil
    end
    local num = s:match('^-?%d+%.?%d*[eE]?[-+]?%d*', pos)
    if not num or num == '' or not tonumber(num) then fail('unexpected input') end
    pos = pos + #num
    return tonumber(num)
  end
  local v = value(); ws()
  if pos <= #s then fail('trailing characters') end
  return v
end
M.json_decode = json_decode

local function json_encode(v)
  if type(v) == 'table' then
    if #v > 0 then
      local t = {}
      for i, x in ipairs(v) do t[i] = json_encode(x) end
      return '[' .. table.concat(t, ', ') .. ']'
    end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys)
    local t = {}
    for i, k in ipairs(keys) do t[i] = ('"%s": %s'):format(k, json_encode(v[k])) end
    return '{' .. table.concat(t, ', ') .. '}'
  elseif type(v) == 'string' then return '"' .. v:gsub('[\\"]', '\\%0') .. '"'
  elseif type(v) == 'boolean' then return tostring(v)
  elseif type(v) == 'number' then
    if v % 1 == 0 and math.abs(v) < 2 ^ 53 then return ('%d'):format(v) end
    for p = 1, 17 do
      local t = ('%.' .. p .. 'g'):format(v)
      if tonumber(t) == v then return t end
    end
    return ('%.17g'):format(v)
  end
  return 'null'
end
M.json_encode = json_encode

-- ------------------------------------------------------------------ descriptions ---
--- InitDesc(name [, attrs]): a parameter name with its attributes (`__init__`, ...).
function M.InitDesc(name, attrs)
  return {name = name, attrs = attrs or {}}
end

local function desc_parts(desc)
  if type(desc) == 'string' then return desc, nil end
  if type(desc) == 'table' and type(desc.name) == 'string' then
    local attrs = desc.attrs or {}
    return desc.name, attrs.__init__ or desc.__init__
  end
  raise('initializer: expected a parameter name or a description {name=, attrs=}, got ' .. type(desc))
end

local function ends(s, suffix) return #s >= #suffix and s:sub(-#suffix) == suffix end

-- ------------------------------------------------------------------ base class -----
local Initializer = {}
Initializer.__index = Initializer
M.Initializer = Initializer

local REGISTRY = {}

--- A new initializer class named `name` (MXNet's lower-case registry name); the
--- constructor `init(self, ...)` sets fields and self.kwargs (for dumps()).
local function class(name, init)
  local cls = setmetatable({}, {__index = Initializer})
  cls.__index = cls
  cls.__call = Initializer.__call
  cls.__tostring = Initializer.__tostring
  cls._name = name
  setmetatable(cls, {__index = Initializer, __call = function(c, ...)
    local self = setmetatable({kwargs = {}}, c)
    init(self, ...)
    return self
  end})
  REGISTRY[name] = cls
  return cls
end
M.class = class

local function fill(arr, v) arr:fill(v) end

--- Initialises one array, as MXNet's `Initializer.__call__(desc, arr)`: a parameter with
-- an `__init__` attribute uses that initializer; otherwise the name's suffix decides
-- (`weight`, `bias`, `gamma`, `beta`, moving statistics, ...).
-- @param desc the parameter name, or an InitDesc-like table (`name`, `attrs`)
-- @param arr the NDArray to fill
-- @usage mx.init.Xavier():init_array('fc1_weight', w)
function Initializer:init_array(desc, arr)
  if not nd.is_ndarray(arr) then raise('initializer: arr must be an NDArray, got ' .. type(arr)) end
  local name, attr = desc_parts(desc)
  if attr and attr ~= '' then
    M.create(attr):_init_weight(name, arr, self) -- self: the global initializer (FusedRNN uses it)
    return
  end
  if ends(name, 'weight') then self:_init_weight(name, arr)
  elseif ends(name, 'bias') then self:_init_bias(name, arr)
  elseif ends(name, 'gamma') then self:_init_gamma(name, arr)
  elseif ends(name, 'beta') then self:_init_beta(name, arr)
  elseif ends(name, 'moving_mean') or ends(name, 'moving_inv_var') or ends(name, 'moving_avg') then fill(arr, 0)
  elseif ends(name, 'moving_var') then fill(arr, 1)
  elseif ends(name, 'min') then fill(arr, 0)
  elseif ends(name, 'max') then fill(arr, 1)
  else self:_init_default(name, arr) end
end
Initializer.__call = function(self, desc, arr) return self:init_array(desc, arr) end

function Initializer:_init_bias(_, arr) fill(arr, 0) end
function Initializer:_init_gamma(_, arr) fill(arr, 1) end
function Initializer:_init_beta(_, arr) fill(arr, 0) end
function Initializer:_init_weight(name)
  raise(('initializer %s cannot initialize weight %s'):format(self._name, name))
end
function Initializer:_init_default(name)
  raise(('Unknown initialization pattern for %s. Default initialization is limited to ' ..
         '"weight", "bias", "gamma" (1.0) and "beta" (0.0); give the variable an init ' ..
         'attribute to set its initializer'):format(name))
end

--- MXNet's JSON form: '["<name>", {kwargs}]'.
function Initializer:dumps()
  return ('["%s", %s]'):format(self._name, json_encode(self.kwargs))
end
Initializer.__tostring = function(self) return 'Initializer' .. self:dumps() end

local function rand_into(arr, fn, a, b)
  arr:set(fn(a, b, arr.shape, {ctx = arr.context, dtype = arr.dtype}))
end

-- ------------------------------------------------------------------ initializers ---
-- Constructors take MXNet's arguments positionally or as one keyword table (luamx.kwargs).
local function args(who, names, ...) return kwargs.parse('mx.init.' .. who, names, ...) end

--- Uniform(scale=0.07): U(-scale, scale).
M.Uniform = class('uniform', function(self, ...)
  self.scale = check.number('mx.init.Uniform', 'scale', args('Uniform', {'scale'}, ...).scale, {optional = true, min = 0}) or 0.07
  self.kwargs = {scale = self.scale}
end)
function M.Uniform:_init_weight(_, arr) rand_into(arr, nd.random.uniform, -self.scale, self.scale) end

--- Normal(sigma=0.01): N(0, sigma).
M.Normal = class('normal', function(self, ...)
  self.sigma = check.number('mx.init.Normal', 'sigma', args('Normal', {'sigma'}, ...).sigma, {optional = true, min = 0}) or 0.01
  self.kwargs = {sigma = self.sigma}
end)
function M.Normal:_init_weight(_, arr) rand_into(arr, nd.random.normal, 0, self.sigma) end

--- Constant(value).
M.Constant = class('constant', function(self, ...)
  self.value = args('Constant', {'value'}, ...).value
  if type(self.value) ~= 'number' then raise('mx.init.Constant: value must be a number, got ' .. type(self.value)) end
  self.kwargs = {value = self.value}
end)
function M.Constant:_init_weight(_, arr) fill(arr, self.value) end

M.Zero = class('zero', function() end)
function M.Zero:_init_weight(_, arr) fill(arr, 0) end
REGISTRY.zeros = M.Zero
M.One = class('one', function() end)
function M.One:_init_weight(_, arr) fill(arr, 1) end
REGISTRY.ones = M.One

--- Xavier{rnd_type='uniform', factor_type='avg', magnitude=3}: scale =
--- sqrt(magnitude / factor) with fan_in = shape[2] * prod(shape[3..]), fan_out =
--- shape[1] * prod(shape[3..]); uniform → U(-scale, scale), gaussian → N(0, scale).
M.Xavier = class('xavier', function(self, ...)
  local o = args(self._name == 'msraprelu' and 'MSRAPrelu' or 'Xavier', {'rnd_type', 'factor_type', 'magnitude'}, ...)
  check.number('mx.init.Xavier', 'magnitude', o.magnitude, {optional = true, min = 0})
  self.rnd_type, self.factor_type, self.magnitude = o.rnd_type or 'uniform', o.factor_type or 'avg', o.magnitude or 3
  if self.rnd_type ~= 'uniform' and self.rnd_type ~= 'gaussian' then
    raise("mx.init.Xavier: rnd_type must be 'uniform' or 'gaussian', got " .. tostring(self.rnd_type))
  end
  if self.factor_type ~= 'avg' and self.factor_type ~= 'in' and self.factor_type ~= 'out' then
    raise("mx.init.Xavier: factor_type must be 'avg', 'in' or 'out', got " .. tostring(self.factor_type))
  end
  self.kwargs = {rnd_type = self.rnd_type, factor_type = self.factor_type, magnitude = self.magnitude}
end)
function M.Xavier:scale_for(name, shape)
  if #shape < 2 then
    raise(('Xavier initializer cannot be applied to vector %s. It requires at least 2D.'):format(name))
  end
  local hw = 1
  for i = 3, #shape do hw = hw * shape[i] end
  local fan_in, fan_out = shape[2] * hw, shape[1] * hw
  local factor = ({avg = (fan_in + fan_out) / 2, ['in'] = fan_in, out = fan_out})[self.factor_type]
  return math.sqrt(self.magnitude / factor)
end
function M.Xavier:_init_weight(name, arr)
  local s = self:scale_for(name, arr.shape)
  if self.rnd_type == 'uniform' then rand_into(arr, nd.random.uniform, -s, s)
  else rand_into(arr, nd.random.normal, 0, s) end
end

--- LSTMBias(forget_bias=1.0): zeros with the forget-gate quarter (i, f, c, o) = forget_bias.
M.LSTMBias = class('lstmbias', function(self, ...)
  self.forget_bias = check.number('mx.init.LSTMBias', 'forget_bias', args('LSTMBias', {'forget_bias'}, ...).forget_bias, true) or 1.0
  self.kwargs = {forget_bias = self.forget_bias}
end)
function M.LSTMBias:_init_weight(_, arr)
  fill(arr, 0)
  local h = arr.shape[1] / 4
  arr:slice(h + 1, 2 * h):fill(self.forget_bias)
end

--- Mixed(patterns, initializers): the first pattern matching the name (MXNet's re.match,
--- see mx.monitor.re_match for the supported syntax) picks the initializer.
M.Mixed = class('mixed', function(self, ...)
  local o = args('Mixed', {'patterns', 'initializers'}, ...)
  local patterns, inits = o.patterns, o.initializers
  if type(patterns) ~= 'table' or type(inits) ~= 'table' or #patterns ~= #inits then
    raise('mx.init.Mixed: patterns and initializers must be arrays of the same length')
  end
  self.patterns, self.inits = patterns, inits
end)
function M.Mixed:init_array(desc, arr)
  local name = desc_parts(desc)
  local re_match = require('luamx.monitor').re_match
  for i, p in ipairs(self.patterns) do
    if re_match(p, name) then return self.inits[i](desc, arr) end
  end
  raise(('Parameter name %s did not match any pattern. Consider adding a ".*" pattern at the end ' ..
         'with a default initializer.'):format(name))
end
M.Mixed.__call = function(self, desc, arr) return self:init_array(desc, arr) end

require('luamx.initializer.more').define(M, {class = class, args = args, fill = fill, desc_parts = desc_parts})

-- FusedRNN lives with the cells (it needs their weight layout).
--- Registers the FusedRNN initializer class (called by luamx.rnn, which knows the fused
-- weight layout).
-- @param cls the FusedRNN initializer class
function M.install_fused(cls) REGISTRY.fusedrnn = cls end

-- ------------------------------------------------------------------ create ---------
--- create(name_or_json_or_initializer [, kwargs]).
function M.create(spec, kwargs)
  if type(spec) == 'table' and getmetatable(spec) and spec.init_array then return spec end
  if type(spec) ~= 'string' then raise('mx.init.create: expected a name or JSON string, got ' .. type(spec)) end
  local name = spec
  if spec:sub(1, 1) == '[' then
    local v = json_decode(spec)
    if type(v) ~= 'table' or type(v[1]) ~= 'string' then
      raise(('mx.init.create: __init__ %q must be ["name", {kwargs}]'):format(spec))
    end
    name, kwargs = v[1], v[2]
  end
  local cls = REGISTRY[name:lower()]
  if not cls then
    local known = {}
    for k in pairs(REGISTRY) do known[#known + 1] = k end
    table.sort(known)
    raise(('mx.init.create: unknown initializer %q; known: %s'):format(name, table.concat(known, ', ')))
  end
  return cls(kwargs or {})
end

--- Installs this module as `mx.init` and `mx.initializer`.
-- @param mx the luamx module table
-- @return this module
function M.install(mx)
  mx.init = M
  mx.initializer = M
  return M
end

return M
