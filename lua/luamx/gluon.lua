--- luamx.gluon — a small Gluon-like layer over mx.autograd (MXNet's mx.gluon).
--
--   local nn = mx.gluon.nn
--   local net = nn.Sequential()
--   net:add(nn.Dense(128, {activation = 'relu'}), nn.Dense(10))
--   net:initialize(mx.init.Xavier{magnitude = 2})
--   local trainer = mx.gluon.Trainer(net:collect_params(), 'sgd', {learning_rate = 0.1})
--   local out = mx.autograd.record(function()
--     return mx.nd.SoftmaxOutput(net(x), y)
--   end)
--   out:backward()
--   trainer:step(batch_size)
--
-- Blocks: nn.Dense, nn.Conv2D, nn.BatchNorm, nn.Activation, nn.Dropout and the
-- nn.Sequential container; a block is called like a function on an NDArray. Parameters
-- (gluon.Parameter) are created with shapes that may be partly unknown (0: in_units,
-- in_channels) and are initialised on the first call that fixes the shape (deferred
-- initialisation, as MXNet's). Names follow MXNet's prefixes: dense0_weight, ...
-- BatchNorm's running statistics are named <prefix>moving_mean / moving_var (the aux
-- state names a BatchNorm symbol node gives them), so hybridize can bind them.
-- loss.SoftmaxCrossEntropyLoss gives per-sample losses (sparse labels).
-- save_parameters / load_parameters use Gluon's structural names ("0.weight");
-- export writes a hybridized block as an MXNet checkpoint (symbol JSON + arg:/aux:).
-- Trainer drives any mx.optimizer with the parameter names as indices (so bias and
-- gamma/beta get MXNet's wd_mult = 0, as in Module) and rescale_grad = 1 / batch_size.
-- hybridize() records one forward (prediction mode), turns it into a Symbol with
-- mx.autograd.get_symbol, binds it (planned memory) with the parameters' arrays, and
-- from then on runs the executor; while recording, the executor call is one tape node
-- (an mx.autograd.Function) whose backward writes the parameters' gradients.
local capi = require 'luamx.capi'
local nd = require 'luamx.ndarray'
local raise = capi.raise

local M = {}
local mx -- set by install

-- ------------------------------------------------------------------ Parameter ----------
local Parameter = {}
Parameter.__index = Parameter

--- A named parameter: shape (0 for unknown dims), opts: init (an mx.init initializer
-- or name), grad_req ('write', 'add', 'null'), dtype, lr_mult, wd_mult.
function M.Parameter(name, shape, opts)
  opts = opts or {}
  return setmetatable({name = name, shape = shape, init = opts.init, grad_req = opts.grad_req or 'write',
    dtype = opts.dtype or 'float32'}, Parameter)
end

local function known(shape)
  for _, d in ipairs(shape) do if d == 0 then return false end end
  return #shape > 0
end

local function init_of(x)
  if type(x) == 'string' then return mx.init.create and mx.init.create(x) or mx.init[x]() end
  return x
end

--- Allocates and initialises the array (deferred until the shape is known).
function Parameter:initialize(init, ctx, force_reinit)
  if self._data and not force_reinit then return self end
  self._init = self.init and init_of(self.init) or init_of(init) or mx.init.Uniform()
  self._ctx = ctx or mx.cpu()
  if known(self.shape) then self:_finish() end
  return self
end

function Parameter:_finish()
  local a = nd.zeros(self.shape, {ctx = self._ctx, dtype = self.dtype})
  self._init(mx.init.InitDesc(self.name), a)
  self._data = a
  if self.grad_req ~= 'null' then a:attach_grad(self.grad_req) end
end

-- Fixes unknown dims from a call's input, then runs a deferred initialisation.
function Parameter:_infer(shape)
  if self._data then return end
  for i, d in ipairs(shape) do if self.shape[i] == 0 then self.shape[i] = d end end
  if not self._init then
    raise(('Parameter \'%s\' has not been initialized: call initialize() on the block or '
      .. 'its collect_params() first'):format(self.name), 4)
  end
  self:_finish()
end

--- The parameter's array.
function Parameter:data()
  if not self._data then
    raise(('Parameter \'%s\' has not been initialized (expected initialize() and a first '
      .. 'forward to fix its shape %s)'):format(self.name, table.concat(self.shape, 'x')), 2)
  end
  return self._data
end

--- The gradient array (nil with grad_req 'null').
function Parameter:grad() return self:data().grad end

--- Replaces the values (copied into the existing array).
function Parameter:set_data(arr) self:data():set(arr) end

--- Sets the gradient to zero (for grad_req 'add').
function Parameter:zero_grad()
  local g = self._data and self._data.grad
  if g then g:fill(0) end
end

-- -------------------------------------------------------------- ParameterDict ----------
local ParameterDict = {}
ParameterDict.__index = ParameterDict

local function new_dict() return setmetatable({_list = {}, _by = {}}, ParameterDict) end

function ParameterDict:_add(p)
  if not self._by[p.name] then
    self._list[#self._list + 1] = p
    self._by[p.name] = p
  end
end

--- The parameter named name (nil when absent).
function ParameterDict:get(name) return self._by[name] end

--- The parameters in creation order.
function ParameterDict:list() return {unpack(self._list)} end

--- Parameter names in order.
function ParameterDict:keys()
  local k = {}
  for i, p in ipairs(self._list) do k[i] = p.name end
  return k
end

--- Initialises every parameter (init: an mx.init initializer; ctx: default cpu).
function ParameterDict:initialize(init, ctx, force_reinit)
  for _, p in ipairs(self._list) do p:initialize(init, ctx, force_reinit) end
  return self
end

--- Zeroes every gradient.
function ParameterDict:zero_grad()
  for _, p in ipairs(self._list) do p:zero_grad() end
end

--- Sets grad_req on every parameter that has a gradient.
function ParameterDict:setattr(key, value)
  for _, p in ipairs(self._list) do
    p[key] = value
    if key == 'grad_req' and p._data then p._data:attach_grad(value) end
  end
end

-- -------------------------------------------------------------------- Block -------------
local counters = {}
local function auto_prefix(kind)
  local n = counters[kind] or 0
  counters[kind] = n + 1
  return ('%s%d_'):format(kind, n)
end

local Block = {}
Block.__index = Block
M.Block = Block

--- A new block class: Block.class(kind, init) returns a constructor.
local function class(kind, init)
  local cls = setmetatable({}, {__index = Block})
  cls.__index = cls
  cls.__call = function(self, ...) return self:_call(...) end
  local ctor = function(...)
    local self = setmetatable({_params = {}, _children = {}, _kind = kind}, cls)
    init(self, ...)
    self.prefix = self.prefix or auto_prefix(kind)
    if self._make_params then self:_make_params() end
    return self
  end
  return cls, ctor
end
M.class = class

--- Creates parameter prefix..name.
function Block:param(name, shape, opts)
  local p = M.Parameter(self.prefix .. name, shape, opts)
  p._local = name
  self._params[#self._params + 1] = p
  return p
end

--- Adds a child block.
function Block:register_child(b) self._children[#self._children + 1] = b; return b end

--- Every parameter of the block and its children, in order (a ParameterDict).
function Block:collect_params()
  local d = new_dict()
  local function walk(b)
    for _, p in ipairs(b._params) do d:_add(p) end
    for _, c in ipairs(b._children) do walk(c) end
  end
  walk(self)
  return d
end

--- Initialises the parameters (init default mx.init.Uniform(), ctx default cpu).
function Block:initialize(init, ctx, force_reinit)
  self:collect_params():initialize(init, ctx, force_reinit)
  return self
end

-- Parameters by structural name, as Gluon's _collect_params_with_prefix: a child's
-- position in its parent (from 0) then the parameter's own name ("0.weight",
-- "1.gamma"), so two instances of one architecture share the names.
local function structural(block, prefix, out)
  for _, p in ipairs(block._params) do out[#out + 1] = {prefix .. p._local, p} end
  for i, c in ipairs(block._children) do structural(c, prefix .. (i - 1) .. '.', out) end
  return out
end

--- Saves the parameters as an MXNet NDArray file keyed by structural name ("0.weight",
-- as Gluon's save_parameters; no arg:/aux: prefixes).
function Block:save_parameters(path)
  local t = {}
  for _, e in ipairs(structural(self, '', {})) do t[e[1]] = e[2]:data() end
  mx.nd.save(path, t)
end

--- Loads parameters saved by save_parameters into the block's arrays (by structural
-- name); every parameter must be present with its shape.
function Block:load_parameters(path)
  local t = mx.nd.load(path)
  for _, e in ipairs(structural(self, '', {})) do
    local key, p = e[1], e[2]
    local a = t[key]
    if not a then
      raise(('load_parameters: %s has no parameter \'%s\' (%s)'):format(path, key, p.name), 2)
    end
    if not p._data then p.shape = a.shape; p._ctx = p._ctx or mx.cpu(); p._init = p._init or mx.init.Zero(); p:_finish() end
    local want, got = table.concat(p:data().shape, 'x'), table.concat(a.shape, 'x')
    if want ~= got then
      raise(('load_parameters: parameter \'%s\' (%s): expected shape %s, got %s'):format(
        key, p.name, want, got), 2)
    end
    p:data():set(a)
  end
end

--- Writes <prefix>-symbol.json and <prefix>-<epoch>.params (arg:/aux: names) from the
-- hybridized block's traced symbol, as Gluon's export: loadable by Module and MXNet.
-- Needs hybridize() and one call.
function Block:export(prefix, epoch)
  local entry = self._hybrid and select(2, next(self._hybrid))
  if not entry then
    raise(('%s:export: expected a hybridized block that has run once (hybridize(), then a call)'):format(self._kind), 2)
  end
  local params = self:collect_params()
  local args, aux = {}, {}
  for _, nm in ipairs(entry.sym:list_arguments()) do
    if params:get(nm) then args[nm] = params:get(nm):data() end
  end
  for _, nm in ipairs(entry.sym:list_auxiliary_states()) do aux[nm] = params:get(nm):data() end
  mx.model.save_checkpoint(prefix, epoch or 0, entry.sym, args, aux)
end

--- hybridize([active = true]): from the next call on, run through a bound executor.
function Block:hybridize(active)
  if active == nil then active = true end
  self._hybrid = active and {} or nil
  return self
end

function Block:_call(x, ...)
  if self._hybrid then return require('luamx.gluon_hybrid').call(self, x, ...) end
  return self:forward(x, ...)
end

--- The block's computation on NDArrays (each block class defines it).
function Block:forward()
  raise(('%s: forward is not defined'):format(self._kind), 2)
end

-- ----------------------------------------------------------------------- nn ---------------
local nn = {}
M.nn = nn

local function act(x, activation)
  if not activation then return x end
  return mx.nd.Activation(x, {act_type = activation})
end

local Dense
Dense, nn.Dense = class('dense', function(self, units, opts)
  opts = opts or {}
  if type(units) ~= 'number' or units < 1 then
    raise(('nn.Dense: units: expected a positive integer, got %s'):format(tostring(units)), 3)
  end
  self.units, self.activation, self.prefix = units, opts.activation, opts.prefix
  self.use_bias = opts.use_bias ~= false
  self.flatten = opts.flatten ~= false
  self.in_units = opts.in_units or 0
  self.opts = opts
end)
--- Dense's parameters: weight (units x in_units), bias (units).
function Dense:_make_params()
  self.weight = self:param('weight', {self.units, self.in_units}, {init = self.opts.weight_initializer})
  if self.use_bias then self.bias = self:param('bias', {self.units}, {init = self.opts.bias_initializer or mx.init.Zero()}) end
end
--- FullyConnected (+ activation).
function Dense:forward(x)
  local s = x.shape
  local fan = 1
  if self.flatten then for i = 2, #s do fan = fan * s[i] end else fan = s[#s] end
  self.weight:_infer({self.units, fan})
  local args = {data = x, weight = self.weight:data(), num_hidden = self.units,
    no_bias = not self.use_bias, flatten = self.flatten, name = self.prefix .. 'fwd'}
  if self.use_bias then self.bias:_infer({self.units}); args.bias = self.bias:data() end
  return act(mx.nd.FullyConnected(args), self.activation)
end

local function pair(v, n)
  if type(v) == 'table' then return v end
  local t = {}
  for i = 1, n do t[i] = v end
  return t
end

local Conv2D
Conv2D, nn.Conv2D = class('conv', function(self, channels, kernel_size, opts)
  opts = opts or {}
  if type(channels) ~= 'number' or channels < 1 then
    raise(('nn.Conv2D: channels: expected a positive integer, got %s'):format(tostring(channels)), 3)
  end
  self.channels, self.kernel = channels, pair(kernel_size or 3, 2)
  self.strides, self.padding = pair(opts.strides or 1, 2), pair(opts.padding or 0, 2)
  self.dilation, self.groups = pair(opts.dilation or 1, 2), opts.groups or 1
  self.activation, self.prefix = opts.activation, opts.prefix
  self.use_bias = opts.use_bias ~= false
  self.in_channels = opts.in_channels or 0
  self.opts = opts
end)
--- Conv2D's parameters: weight (channels x in/groups x kh x kw), bias (channels).
function Conv2D:_make_params()
  self.weight = self:param('weight', {self.channels, self.in_channels, self.kernel[1], self.kernel[2]},
    {init = self.opts.weight_initializer})
  if self.use_bias then self.bias = self:param('bias', {self.channels}, {init = self.opts.bias_initializer or mx.init.Zero()}) end
end
--- Convolution (NCHW) (+ activation).
function Conv2D:forward(x)
  self.weight:_infer({self.channels, x.shape[2] / self.groups, self.kernel[1], self.kernel[2]})
  local args = {data = x, weight = self.weight:data(), num_filter = self.channels,
    kernel = self.kernel, stride = self.strides, pad = self.padding, dilate = self.dilation,
    num_group = self.groups, no_bias = not self.use_bias, name = self.prefix .. 'fwd'}
  if self.use_bias then self.bias:_infer({self.channels}); args.bias = self.bias:data() end
  return act(mx.nd.Convolution(args), self.activation)
end

local BatchNorm
BatchNorm, nn.BatchNorm = class('batchnorm', function(self, opts)
  opts = opts or {}
  self.momentum, self.epsilon = opts.momentum or 0.9, opts.epsilon or 1e-5
  self.center, self.scale = opts.center ~= false, opts.scale ~= false
  self.in_channels, self.prefix = opts.in_channels or 0, opts.prefix
  if opts.axis and opts.axis ~= 1 then raise('nn.BatchNorm: only axis = 1 (channels first) is supported', 3) end
end)
--- BatchNorm's parameters: gamma, beta, moving_mean, moving_var (no gradient).
function BatchNorm:_make_params()
  local c = self.in_channels
  self.gamma = self:param('gamma', {c}, {init = mx.init.One(), grad_req = self.scale and 'write' or 'null'})
  self.beta = self:param('beta', {c}, {init = mx.init.Zero(), grad_req = self.center and 'write' or 'null'})
  self.moving_mean = self:param('moving_mean', {c}, {init = mx.init.Zero(), grad_req = 'null'})
  self.moving_var = self:param('moving_var', {c}, {init = mx.init.One(), grad_req = 'null'})
end
--- BatchNorm over axis 1: batch statistics in training mode (running ones updated),
-- the running ones in prediction mode.
function BatchNorm:forward(x)
  local c = x.shape[2]
  for _, p in ipairs({self.gamma, self.beta, self.moving_mean, self.moving_var}) do p:_infer({c}) end
  return mx.nd.BatchNorm{data = x, gamma = self.gamma:data(), beta = self.beta:data(),
    moving_mean = self.moving_mean:data(), moving_var = self.moving_var:data(),
    eps = self.epsilon, momentum = self.momentum, fix_gamma = not self.scale,
    name = self.prefix:sub(1, -2)}
end

local Activation
Activation, nn.Activation = class('activation', function(self, activation, opts)
  if type(activation) ~= 'string' then
    raise(('nn.Activation: expected an activation name (relu, sigmoid, tanh, softrelu, '
      .. 'softsign), got %s'):format(type(activation)), 3)
  end
  self.activation, self.prefix = activation, opts and opts.prefix
end)
--- Activation(act_type).
function Activation:forward(x)
  return mx.nd.Activation(x, {act_type = self.activation, name = self.prefix .. 'fwd'})
end

local Dropout
Dropout, nn.Dropout = class('dropout', function(self, rate, opts)
  if type(rate) ~= 'number' or rate < 0 or rate >= 1 then
    raise(('nn.Dropout: rate: expected a number in [0, 1), got %s'):format(tostring(rate)), 3)
  end
  self.rate, self.prefix = rate, opts and opts.prefix
end)
--- Dropout(p = rate), active in training mode only.
function Dropout:forward(x)
  return mx.nd.Dropout(x, {p = self.rate, name = self.prefix .. 'fwd'})
end

local Sequential
Sequential, nn.Sequential = class('sequential', function(self, opts)
  self.prefix = opts and opts.prefix
end)
--- Appends blocks (in call order).
function Sequential:add(...)
  for _, b in ipairs({...}) do self:register_child(b) end
  return self
end
--- Runs the children in order.
function Sequential:forward(x)
  for _, b in ipairs(self._children) do x = b(x) end
  return x
end
--- Number of children.
function Sequential:__len() return #self._children end

-- -------------------------------------------------------------------- Trainer ------------
local Trainer = {}
Trainer.__index = Trainer

--- Trainer(params, optimizer, optimizer_params): params a ParameterDict (or a list of
-- Parameters); optimizer an mx.optimizer name or object.
function M.Trainer(params, optimizer, optimizer_params)
  local list = getmetatable(params) == ParameterDict and params:list() or params
  if type(list) ~= 'table' then
    raise('gluon.Trainer: params: expected a ParameterDict or a list of Parameters', 2)
  end
  local opt = optimizer
  if type(optimizer) == 'string' then opt = mx.optimizer.create(optimizer, optimizer_params or {}) end
  if type(opt) ~= 'table' or not opt.update then
    raise('gluon.Trainer: optimizer: expected an optimizer name or object', 2)
  end
  -- parameter names are the optimizer's indices: MXNet's wd_mult = 0 for names not
  -- ending in _weight / _gamma (biases, beta) applies as in Module
  for _, p in ipairs(list) do opt.idx2name[p.name] = p.name end
  opt:set_wd_mult(opt._user_wd_mult or {})
  return setmetatable({params = list, optimizer = opt, states = {},
    scale = opt.rescale_grad or 1}, Trainer)
end

--- One update of every parameter with a gradient, gradients scaled by 1 / batch_size
-- (never recorded: it runs paused when called inside mx.autograd.record).
function Trainer:step(batch_size)
  if mx.autograd.is_recording() then
    return mx.autograd.pause(function() return self:step(batch_size) end)
  end
  batch_size = batch_size or 1
  local opt = self.optimizer
  opt.rescale_grad = self.scale / batch_size
  for _, p in ipairs(self.params) do
    if p.grad_req ~= 'null' then
      local w = p:data()
      if self.states[p.name] == nil then self.states[p.name] = opt:create_state(p.name, w) or false end
      opt:update(p.name, w, w.grad, self.states[p.name] or nil)
    end
  end
end

--- The optimizer's learning rate.
function Trainer:learning_rate() return self.optimizer:learning_rate() end

--- Sets the optimizer's learning rate.
function Trainer:set_learning_rate(lr) self.optimizer:set_learning_rate(lr) end

-- ---------------------------------------------------------------------- loss -----------
local loss = {}
M.loss = loss

--- SoftmaxCrossEntropyLoss{axis = -1}: a callable (pred, label) -> per-sample loss
-- -log softmax(pred)[label] (labels are class indices), as Gluon's with sparse labels.
-- Its backward with the default head gradient gives softmax(pred) - one_hot(label)
-- per sample, SoftmaxOutput's gradient; Trainer:step(batch_size) then averages.
function loss.SoftmaxCrossEntropyLoss(opts)
  opts = opts or {}
  local axis = opts.axis or -1
  return function(pred, label)
    if not nd.is_ndarray(pred) or not nd.is_ndarray(label) then
      raise('SoftmaxCrossEntropyLoss: expected (pred, label) NDArrays', 2)
    end
    local shape = pred.shape
    local logp = mx.nd.log_softmax(pred, {axis = axis})
    local hot = mx.nd.one_hot(label, {depth = shape[#shape]})
    return mx.nd.negative(mx.nd.sum(logp * hot, {axis = axis}))
  end
end

-- The mx table (for luamx.gluon_hybrid).
function M._mx() return mx end

--- Installs mx.gluon.
function M.install(m)
  mx = m
  mx.gluon = M
end

return M
