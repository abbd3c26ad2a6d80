--- luamx.rnn.cells — mx.rnn cells built from mx.sym (MXNet 1.9 python/mxnet/rnn/rnn_cell.py).
--
--   local cell = mx.rnn.LSTMCell(200, 'lstm_l0_')
--   local outputs, states = cell:unroll(35, embed, nil, 'NTC', true)
--
-- Invariants (MXNet's naming, so checkpoints interchange):
-- * Parameters are variables '<prefix><name>' created once per cell (RNNParams):
--   i2h_weight, i2h_bias, h2h_weight, h2h_bias; LSTM's i2h_bias carries
--   __init__ = LSTMBias(forget_bias). FusedRNNCell has one 'parameters' variable with a
--   FusedRNN initializer.
-- * Step t names its nodes '<prefix>t<t>_' + 'i2h' / 'h2h' / 'slice' / 'i' / 'f' / 'c' /
--   'o' / 'state' / 'out' (GRU: '<prefix>t<t>__i2h', as MXNet); t counts from 0 and
--   restarts at reset() (unroll resets). Begin states are _zeros nodes named
--   '<prefix>begin_state_<k>' of shape (0, H) (batch inferred), or whatever `func`
--   builds: func(name, opts) gets opts with shape = (0, H) and attr.__layout__ merged in,
--   as MXNet does (mx.sym.Variable for explicit state inputs).
-- * Every constructor takes MXNet's positional arguments or one table of MXNet's keyword
--   names (mx.rnn.LSTMCell{num_hidden = 8, prefix = 'l0_'}); unknown keys are errors.
--   `params` (an mx.rnn.RNNParams) shares variables between cells as MXNet's.
-- * unroll(length, inputs, begin_state, layout='NTC', merge_outputs): inputs is one
--   symbol (split along T into `length` steps) or a Lua array of step symbols; outputs
--   come back as an array of step symbols, or one (N, T, C) / (T, N, C) symbol when
--   merge_outputs is true.
local capi = require 'luamx.capi'
local raise = capi.raise
local init_mod = require 'luamx.initializer'

local M = {}
local mx

local function S()
  if not mx or not mx.sym then raise('mx.rnn cells need mx.sym, which is not available') end
  return mx.sym
end

-- ------------------------------------------------------------------ base -----------
local Base = {}
Base.__index = Base
M.BaseRNNCell = Base

-- ------------------------------------------------------------------ RNNParams ------
local RNNParams = {}
RNNParams.__index = RNNParams
--- RNNParams([prefix='']): a container of variables '<prefix><name>', shared by every
--- cell built with it (MXNet's mx.rnn.RNNParams).
M.RNNParams = setmetatable(RNNParams, {__call = function(cls, prefix)
  if type(prefix) == 'table' and getmetatable(prefix) == nil then prefix = prefix.prefix end
  if prefix ~= nil and type(prefix) ~= 'string' then
    raise('mx.rnn.RNNParams: prefix must be a string, got ' .. type(prefix))
  end
  return setmetatable({_prefix = prefix or '', _params = {}}, cls)
end})
--- The variable '<prefix><name>', created on first use (MXNet's RNNParams.get).
-- @param name the name after the prefix
-- @param opts options of mx.sym.Variable (init, attr, shape, ...), used on creation
-- @return the Symbol
function RNNParams:get(name, opts)
  local full = self._prefix .. name
  local v = self._params[full]
  if not v then
    v = S().Variable(full, opts)
    self._params[full] = v
  end
  return v
end

--- Reads a constructor's arguments: MXNet's positional order, or one plain table keyed by
--- MXNet's keyword names (`names`). Unknown keys are errors that list the known ones.
function M.ctor_args(who, names, ...)
  local first = ...
  if select('#', ...) == 1 and type(first) == 'table' and getmetatable(first) == nil then
    local known = {}
    for _, k in ipairs(names) do known[k] = true end
    for k in pairs(first) do
      if not known[k] then
        raise(('%s: unknown argument %s (expected one of %s)'):format(who, tostring(k), table.concat(names, ', ')))
      end
    end
    local out = {}
    for i, k in ipairs(names) do out[i] = first[k] end
    return unpack(out, 1, #names)
  end
  return ...
end
local ctor_args = M.ctor_args

--- Checks a constructor argument's type (`what`: 'string', 'number', 'boolean', 'table').
function M.check_arg(who, name, v, what, optional)
  if v == nil and optional then return v end
  if type(v) ~= what then raise(('%s: %s must be a %s, got %s'):format(who, name, what, type(v))) end
  return v
end

local function check_hidden(who, v)
  if type(v) ~= 'number' or v < 1 or v % 1 ~= 0 then
    raise(('%s: num_hidden must be a positive integer, got %s'):format(who, tostring(v)))
  end
  return v
end
M.check_hidden = check_hidden

local function check_params(who, params)
  if params ~= nil and getmetatable(params) ~= RNNParams then
    raise(('%s: params must be an mx.rnn.RNNParams, got %s'):format(who, type(params)))
  end
  return params
end

--- A cell class: `init(self, ...)` gets the constructor's arguments.
function M.class(init, base)
  base = base or Base
  local cls = setmetatable({}, {__index = base})
  cls.__index = cls
  cls.__call = function(self, inputs, states) return self:step(inputs, states) end
  setmetatable(cls, {__index = base, __call = function(c, ...)
    local self = setmetatable({_counter = -1, _init_counter = -1, _modified = false}, c)
    init(self, ...)
    return self
  end})
  return cls
end
local class = M.class

--- Sets the cell's prefix and parameter container (a new RNNParams(prefix) when nil).
function Base:_set_params(prefix, params)
  self._prefix = prefix
  self.params = params or RNNParams(prefix)
  self._own_params = params == nil
  self._params = self.params._params
end

--- The variable '<params prefix><name>', created once (MXNet's RNNParams.get).
function Base:param(name, opts) return self.params:get(name, opts) end

--- The shapes of the states (MXNet's state_shape: the `shape` of each state_info entry).
-- @return list of shapes (0 = the batch size, inferred)
function Base:state_shape()
  local out = {}
  for i, info in ipairs(self:state_info()) do out[i] = info.shape end
  return out
end

--- MXNet's _gate_names: the per-gate suffixes used by unpack_weights / pack_weights.
-- @return list of strings (empty: nothing to unpack)
function Base:gate_names() return {} end

--- Splits each '<prefix>i2h_weight' / '_bias' (and h2h) into one array per gate,
-- '<prefix>i2h<gate>_weight', ... (copies), as MXNet's unpack_weights.
-- @param args table name -> NDArray (not modified)
-- @return a new table with this cell's weights unpacked
function Base:unpack_weights(args)
  local out = {}
  for k, v in pairs(args) do out[k] = v end
  local gates = self:gate_names()
  if #gates == 0 then return out end
  local h = self._num_hidden
  for _, group in ipairs({'i2h', 'h2h'}) do
    for _, kind in ipairs({'weight', 'bias'}) do
      local key = ('%s%s_%s'):format(self._prefix, group, kind)
      local arr = out[key]
      if arr == nil then raise(('unpack_weights: no array %s in args'):format(key)) end
      out[key] = nil
      for j, g in ipairs(gates) do
        out[('%s%s%s_%s'):format(self._prefix, group, g, kind)] = arr:slice((j - 1) * h + 1, j * h):copy()
      end
    end
  end
  return out
end

--- Concatenates the per-gate arrays back into '<prefix>i2h_weight', ... (MXNet's pack_weights).
-- @param args table name -> NDArray (not modified)
-- @return a new table with this cell's weights packed
function Base:pack_weights(args)
  local out = {}
  for k, v in pairs(args) do out[k] = v end
  local gates = self:gate_names()
  if #gates == 0 then return out end
  for _, group in ipairs({'i2h', 'h2h'}) do
    for _, kind in ipairs({'weight', 'bias'}) do
      local parts = {}
      for j, g in ipairs(gates) do
        local key = ('%s%s%s_%s'):format(self._prefix, group, g, kind)
        parts[j] = out[key]
        if parts[j] == nil then raise(('pack_weights: no array %s in args'):format(key)) end
        out[key] = nil
      end
      parts.dim, parts.num_args = 0, #parts
      out[('%s%s_%s'):format(self._prefix, group, kind)] = mx.nd.Concat(parts)
    end
  end
  return out
end

--- Resets the step and begin-state counters (used in generated names); `unroll` calls it.
function Base:reset() self._counter, self._init_counter = -1, -1 end

--- begin_state([func [, opts]]): one symbol per state_info entry.
function Base:begin_state(func, opts)
  local sym = S()
  local fmt = type(func) == 'table' and getmetatable(func)
  if func ~= nil and type(func) ~= 'function' and not (fmt and fmt.__call) then
    require('luamx.check').fail('begin_state', 'func', 'a function(name, opts) such as mx.sym.zeros', func)
  end
  require('luamx.check').type('begin_state', 'opts', opts, 'table', true)
  if self._modified then
    raise('begin_state: after applying modifier cells (e.g. DropoutCell) the base cell cannot be '
          .. 'called directly. Call the modifier cell instead.')
  end
  local states = {}
  for _, info in ipairs(self:state_info()) do
    self._init_counter = self._init_counter + 1
    local name = ('%sbegin_state_%d'):format(self._prefix, self._init_counter)
    if func then
      -- MXNet merges the state's info into the keyword arguments: shape (0 = unknown
      -- batch, left to shape inference) and the __layout__ attribute
      local o = {}
      for k, v in pairs(opts or {}) do o[k] = v end
      o.shape = o.shape or info.shape
      local attr = {}
      for k, v in pairs(o.attr or {}) do attr[k] = v end
      attr.__layout__ = info.__layout__
      o.attr = attr
      states[#states + 1] = func(name, o)
    else
      states[#states + 1] = sym.zeros{shape = info.shape, name = name, attr = {__layout__ = info.__layout__}}
    end
  end
  return states
end

--- Checks unroll's arguments (every cell's unroll calls it): length a positive integer,
--- layout nil or a string, merge_outputs nil or a boolean, begin_state nil or a list.
function M.check_unroll(length, layout, merge_outputs, begin_state)
  local check = require 'luamx.check'
  check.number('unroll', 'length', length, {integer = true, min = 1})
  check.type('unroll', 'layout', layout, 'string', true)
  check.type('unroll', 'merge_outputs', merge_outputs, 'boolean', true)
  if begin_state ~= nil and not (type(begin_state) == 'table' and getmetatable(begin_state) == nil) then
    check.fail('unroll', 'begin_state', 'nil or a list of state Symbols', begin_state)
  end
end

--- MXNet's _normalize_sequence: a symbol or an array of step symbols, split or merged.
local function normalize(length, inputs, layout, merge)
  local sym = S()
  local axis = layout:find('T', 1, true)
  if not axis then raise(('unroll: layout %q has no T axis'):format(layout)) end
  axis = axis - 1
  if sym.is_symbol and sym.is_symbol(inputs) or getmetatable(inputs) == sym.Symbol then
    if merge == false then
      local parts = sym.split{data = inputs, axis = axis, num_outputs = length, squeeze_axis = true}
      local out = {}
      for i = 1, length do out[i] = parts[i] end
      return out, axis
    end
    return inputs, axis
  end
  if type(inputs) ~= 'table' then
    require('luamx.check').fail('unroll', 'inputs', 'a Symbol or an array of Symbols', inputs)
  end
  if length and #inputs ~= length then
    raise(('unroll: %d step inputs given for length %d'):format(#inputs, length))
  end
  if merge == true then
    local ex = {}
    for i, s in ipairs(inputs) do ex[i] = sym.expand_dims{data = s, axis = axis} end
    ex.dim, ex.num_args = axis, #ex
    return sym.Concat(ex), axis
  end
  return inputs, axis
end
M.normalize = normalize

--- Unrolls the cell over `length` steps, as MXNet's `BaseRNNCell.unroll`.
-- @param length number of time steps
-- @param inputs one symbol with a T axis (split per step) or a list of `length` symbols
-- @param begin_state list of state symbols (defaults to `begin_state()`)
-- @param layout `'NTC'` (default) or `'TNC'`
-- @param merge_outputs true: one symbol with the T axis; false or nil: a list per step
-- @return outputs, list of final states
-- @usage local outs, states = cell:unroll(10, data, nil, 'NTC', true)
function Base:unroll(length, inputs, begin_state, layout, merge_outputs)
  M.check_unroll(length, layout, merge_outputs, begin_state)
  self:reset()
  layout = layout or 'NTC'
  inputs = normalize(length, inputs, layout, false)
  local states = begin_state or self:begin_state()
  local outputs = {}
  for i = 1, length do
    local out
    out, states = self(inputs[i], states)
    outputs[i] = out
  end
  outputs = normalize(length, outputs, layout, merge_outputs)
  return outputs, states
end

local function act(data, act_type, name)
  return S().Activation{data = data, act_type = act_type, name = name}
end

local function fc(data, w, b, n, name)
  return S().FullyConnected{data = data, weight = w, bias = b, num_hidden = n, name = name}
end

-- ------------------------------------------------------------------ RNNCell --------
--- RNNCell(num_hidden, activation='tanh', prefix='rnn_', params=nil), or the same as a table.
M.RNNCell = class(function(self, ...)
  local who = 'mx.rnn.RNNCell'
  local num_hidden, activation, prefix, params = ctor_args(who, {'num_hidden', 'activation', 'prefix', 'params'}, ...)
  self._num_hidden, self._activation = check_hidden(who, num_hidden), M.check_arg(who, 'activation', activation, 'string', true) or 'tanh'
  self:_set_params(M.check_arg(who, 'prefix', prefix, 'string', true) or 'rnn_', check_params(who, params))
  self._iW, self._iB = self:param('i2h_weight'), self:param('i2h_bias')
  self._hW, self._hB = self:param('h2h_weight'), self:param('h2h_bias')
end)
function M.RNNCell:state_info() return {{shape = {0, self._num_hidden}, __layout__ = 'NC'}} end
function M.RNNCell:gate_names() return {''} end
function M.RNNCell:step(inputs, states)
  self._counter = self._counter + 1
  local name = ('%st%d_'):format(self._prefix, self._counter)
  local i2h = fc(inputs, self._iW, self._iB, self._num_hidden, name .. 'i2h')
  local h2h = fc(states[1], self._hW, self._hB, self._num_hidden, name .. 'h2h')
  local out = act(i2h + h2h, self._activation, name .. 'out')
  return out, {out}
end

-- ------------------------------------------------------------------ LSTMCell -------
--- LSTMCell(num_hidden, prefix='lstm_', params=nil, forget_bias=1.0), or the same as a
--- table; a number in third place is taken as forget_bias (luamx's older form).
M.LSTMCell = class(function(self, ...)
  local who = 'mx.rnn.LSTMCell'
  local num_hidden, prefix, params, forget_bias = ctor_args(who, {'num_hidden', 'prefix', 'params', 'forget_bias'}, ...)
  if type(params) == 'number' and forget_bias == nil then params, forget_bias = nil, params end
  self._num_hidden = check_hidden(who, num_hidden)
  self:_set_params(M.check_arg(who, 'prefix', prefix, 'string', true) or 'lstm_', check_params(who, params))
  self._forget_bias = M.check_arg(who, 'forget_bias', forget_bias, 'number', true) or 1.0
  self._iW = self:param('i2h_weight')
  self._hW = self:param('h2h_weight')
  self._iB = self:param('i2h_bias', {attr = {__init__ = init_mod.LSTMBias{forget_bias = self._forget_bias}:dumps()}})
  self._hB = self:param('h2h_bias')
end)
function M.LSTMCell:state_info()
  return {{shape = {0, self._num_hidden}, __layout__ = 'NC'}, {shape = {0, self._num_hidden}, __layout__ = 'NC'}}
end
function M.LSTMCell:gate_names() return {'_i', '_f', '_c', '_o'} end
function M.LSTMCell:step(inputs, states)
  local sym = S()
  self._counter = self._counter + 1
  local name = ('%st%d_'):format(self._prefix, self._counter)
  local H = self._num_hidden
  local i2h = fc(inputs, self._iW, self._iB, 4 * H, name .. 'i2h')
  local h2h = fc(states[1], self._hW, self._hB, 4 * H, name .. 'h2h')
  local gates = i2h + h2h
  local sl = sym.SliceChannel{data = gates, num_outputs = 4, name = name .. 'slice'}
  local in_gate = act(sl[1], 'sigmoid', name .. 'i')
  local forget_gate = act(sl[2], 'sigmoid', name .. 'f')
  local in_transform = act(sl[3], 'tanh', name .. 'c')
  local out_gate = act(sl[4], 'sigmoid', name .. 'o')
  local next_c = sym._plus{lhs = forget_gate * states[2], rhs = in_gate * in_transform, name = name .. 'state'}
  local next_h = sym._mul{lhs = out_gate, rhs = sym.Activation{data = next_c, act_type = 'tanh'}, name = name .. 'out'}
  return next_h, {next_h, next_c}
end

-- ------------------------------------------------------------------ GRUCell --------
--- GRUCell(num_hidden, prefix='gru_', params=nil), or the same as a table.
M.GRUCell = class(function(self, ...)
  local who = 'mx.rnn.GRUCell'
  local num_hidden, prefix, params = ctor_args(who, {'num_hidden', 'prefix', 'params'}, ...)
  self._num_hidden = check_hidden(who, num_hidden)
  self:_set_params(M.check_arg(who, 'prefix', prefix, 'string', true) or 'gru_', check_params(who, params))
  self._iW, self._iB = self:param('i2h_weight'), self:param('i2h_bias')
  self._hW, self._hB = self:param('h2h_weight'), self:param('h2h_bias')
end)
M.GRUCell.state_info = M.RNNCell.state_info
function M.GRUCell:gate_names() return {'_r', '_z', '_o'} end
function M.GRUCell:step(inputs, states)
  local sym = S()
  self._counter = self._counter + 1
  local name = ('%st%d_'):format(self._prefix, self._counter)
  local H, prev = self._num_hidden, states[1]
  local i2h = fc(inputs, self._iW, self._iB, 3 * H, name .. '_i2h')
  local h2h = fc(prev, self._hW, self._hB, 3 * H, name .. '_h2h')
  local is = sym.SliceChannel{data = i2h, num_outputs = 3, name = name .. '_i2h_slice'}
  local hs = sym.SliceChannel{data = h2h, num_outputs = 3, name = name .. '_h2h_slice'}
  local reset_gate = act(is[1] + hs[1], 'sigmoid', name .. '_r_act')
  local update_gate = act(is[2] + hs[2], 'sigmoid', name .. '_z_act')
  local next_h_tmp = act(is[3] + reset_gate * hs[3], 'tanh', name .. '_h_act')
  local next_h = sym._plus{lhs = (1 - update_gate) * next_h_tmp, rhs = update_gate * prev, name = name .. 'out'}
  return next_h, {next_h}
end

-- ------------------------------------------------------------------ Sequential -----
--- SequentialRNNCell(params=nil), or {params = ...}: cells stacked with `add`.
M.SequentialRNNCell = class(function(self, ...)
  local params = ctor_args('mx.rnn.SequentialRNNCell', {'params'}, ...)
  self:_set_params('', check_params('mx.rnn.SequentialRNNCell', params))
  self._override_cell_params = params ~= nil
  self._cells = {}
end)
local Seq = M.SequentialRNNCell

--- Merges the parameters of `cells` into `self` (MXNet's params override rules).
function M.adopt_params(self, cell, who, cls)
  if type(cell) ~= 'table' or not cell.state_info then
    raise(('%s: expected an RNN cell, got %s'):format(who, type(cell)))
  end
  if self._override_cell_params then
    if not cell._own_params then
      raise(('%s: either specify params for %s or for the child cells, not both'):format(who, cls))
    end
    for k, v in pairs(self._params) do cell._params[k] = v end
  end
  for k, v in pairs(cell._params) do self._params[k] = v end
end

--- Appends a cell to the stack (its parameters join this cell's).
-- @param cell an RNN cell
-- @return self, for chaining
function Seq:add(cell)
  M.adopt_params(self, cell, 'SequentialRNNCell:add', 'SequentialRNNCell')
  self._cells[#self._cells + 1] = cell
  return self
end
--- Unpacks the weights of every stacked cell in turn (see `BaseRNNCell:unpack_weights`).
-- @param args table name -> NDArray
-- @return a new table
function Seq:unpack_weights(args)
  for _, c in ipairs(self._cells) do args = c:unpack_weights(args) end
  return args
end
--- Packs the weights of every stacked cell in turn (see `BaseRNNCell:pack_weights`).
-- @param args table name -> NDArray
-- @return a new table
function Seq:pack_weights(args)
  for _, c in ipairs(self._cells) do args = c:pack_weights(args) end
  return args
end
--- The state descriptions of all stacked cells, in order.
-- @return list of `{shape =, __layout__ =}`
function Seq:state_info()
  local out = {}
  for _, c in ipairs(self._cells) do for _, i in ipairs(c:state_info()) do out[#out + 1] = i end end
  return out
end
--- Resets the counters of this cell and of every stacked cell.
function Seq:reset()
  Base.reset(self)
  for _, c in ipairs(self._cells) do c:reset() end
end
--- Initial states of all stacked cells, in order.
-- @param func called as `func(name, opts)` for each state (defaults to zeros of the state shape)
-- @param opts extra options merged into each call of `func` (shape and `__layout__` added)
-- @return list of symbols
function Seq:begin_state(func, opts)
  if self._modified then
    raise('begin_state: after applying modifier cells (e.g. ZoneoutCell) the base cell cannot be '
          .. 'called directly. Call the modifier cell instead.')
  end
  local out = {}
  for _, c in ipairs(self._cells) do for _, s in ipairs(c:begin_state(func, opts)) do out[#out + 1] = s end end
  return out
end
--- One time step through every stacked cell, each taking its own slice of `states`.
-- @param inputs the step's input symbol
-- @param states list of state symbols (all cells, in order)
-- @return output symbol, list of next states
function Seq:step(inputs, states)
  self._counter = self._counter + 1
  local p, next_states = 1, {}
  for _, c in ipairs(self._cells) do
    if c.is_bidirectional then raise('SequentialRNNCell: a BidirectionalCell cannot be stepped; use unroll') end
    local n = #c:state_info()
    local st = {}
    for k = 1, n do st[k] = states[p + k - 1] end
    p = p + n
    local ns
    inputs, ns = c(inputs, st)
    for _, s in ipairs(ns) do next_states[#next_states + 1] = s end
  end
  return inputs, next_states
end
--- Unrolls each stacked cell in turn over the whole sequence (only the last one applies
-- `merge_outputs`); arguments and results as `BaseRNNCell:unroll`.
-- @param length number of time steps
-- @param inputs one symbol with a T axis or a list of `length` symbols
-- @param begin_state list of state symbols (defaults to `begin_state()`)
-- @param layout `'NTC'` (default) or `'TNC'`
-- @param merge_outputs true: one symbol with the T axis; false or nil: a list per step
-- @return outputs, list of final states
function Seq:unroll(length, inputs, begin_state, layout, merge_outputs)
  M.check_unroll(length, layout, merge_outputs, begin_state)
  self:reset()
  begin_state = begin_state or self:begin_state()
  local p, next_states = 1, {}
  for i, c in ipairs(self._cells) do
    local n = #c:state_info()
    local st = {}
    for k = 1, n do st[k] = begin_state[p + k - 1] end
    p = p + n
    local ns
    local merge = nil
    if i == #self._cells then merge = merge_outputs end
    inputs, ns = c:unroll(length, inputs, st, layout, merge)
    for _, s in ipairs(ns) do next_states[#next_states + 1] = s end
  end
  return inputs, next_states
end

-- ------------------------------------------------------------------ FusedRNNCell ---
local GATES = {lstm = {'_i', '_f', '_c', '_o'}, gru = {'_r', '_z', '_o'}, rnn_relu = {''}, rnn_tanh = {''}}

--- The named views of a fused parameter vector (MXNet's FusedRNNCell._slice_weights).
function M.fused_slices(arr, num_hidden, num_layers, mode, bidirectional, prefix)
  local gates = GATES[mode]
  if not gates then raise(('FusedRNNCell: mode must be lstm, gru, rnn_relu or rnn_tanh, got %s'):format(tostring(mode))) end
  local dirs = bidirectional and {'l', 'r'} or {'l'}
  local b, m, h = #dirs, #gates, num_hidden
  local li = arr.size / b / h / m - (num_layers - 1) * (h + b * h + 2) - h - 2
  if li < 1 or li % 1 ~= 0 then raise(('FusedRNNCell: %d parameters do not fit the layout'):format(arr.size)) end
  local flat, p, out = arr:reshape{arr.size}, 0, {}
  local function take(name, shape)
    local n = 1
    for _, d in ipairs(shape) do n = n * d end
    out[#out + 1] = {prefix .. name, flat:slice(p + 1, p + n):reshape(shape)}
    p = p + n
  end
  for layer = 0, num_layers - 1 do
    for _, d in ipairs(dirs) do
      for _, g in ipairs(gates) do
        take(('%s%d_i2h%s_weight'):format(d, layer, g), layer > 0 and {h, b * h} or {h, li})
      end
      for _, g in ipairs(gates) do take(('%s%d_h2h%s_weight'):format(d, layer, g), {h, h}) end
    end
  end
  for layer = 0, num_layers - 1 do
    for _, d in ipairs(dirs) do
      for _, g in ipairs(gates) do take(('%s%d_i2h%s_bias'):format(d, layer, g), {h}) end
      for _, g in ipairs(gates) do take(('%s%d_h2h%s_bias'):format(d, layer, g), {h}) end
    end
  end
  if p ~= arr.size then raise('FusedRNNCell: invalid parameter size') end
  return out
end

--- FusedRNN(init, num_hidden, num_layers, mode, bidirectional=false, forget_bias=1.0):
--- initializes each unpacked array by its name with `init` (when nil: the initializer
--- that was called, as MXNet's global_init, else Uniform(0.07)), so weights follow the
--- rule, biases are 0, and LSTM forget-gate biases (i2h and h2h) are forget_bias.
M.FusedRNN = init_mod.class('fusedrnn', function(self, o, num_hidden, num_layers, mode, bidirectional, forget_bias)
  if type(o) == 'table' and not getmetatable(o) and (o.num_hidden or o.mode) then
    self.init = o.init and init_mod.create(o.init) or nil
    num_hidden, num_layers, mode, bidirectional, forget_bias = o.num_hidden, o.num_layers, o.mode, o.bidirectional, o.forget_bias
  else
    self.init = o
  end
  self.num_hidden, self.num_layers, self.mode = num_hidden, num_layers or 1, mode or 'lstm'
  self.bidirectional, self.forget_bias = bidirectional and true or false, forget_bias or 1.0
  self.kwargs = {init = self.init and self.init:dumps() or nil, num_hidden = self.num_hidden,
                 num_layers = self.num_layers, mode = self.mode, bidirectional = self.bidirectional,
                 forget_bias = self.forget_bias}
end)
function M.FusedRNN:_init_weight(_, arr, global_init)
  local inner = self.init or global_init or init_mod.Uniform(0.07)
  for _, p in ipairs(M.fused_slices(arr, self.num_hidden, self.num_layers, self.mode, self.bidirectional, '')) do
    local name, view = p[1], p[2]
    if self.mode == 'lstm' and name:sub(-7) == '_f_bias' then view:fill(self.forget_bias)
    else inner(name, view) end
  end
end
init_mod.install_fused(M.FusedRNN)

--- FusedRNNCell(num_hidden, num_layers=1, mode='lstm', bidirectional=false, dropout=0,
--- get_next_state=false, forget_bias=1.0, prefix=mode..'_', params=nil) as MXNet, or the
--- same as a table; luamx's older form (num_hidden, num_layers, mode, bidirectional,
--- prefix, {dropout=, get_next_state=, forget_bias=}) is recognised by a string in fifth place.
M.FusedRNNCell = class(function(self, ...)
  local who = 'mx.rnn.FusedRNNCell'
  local num_hidden, num_layers, mode, bidirectional, dropout, get_next_state, forget_bias, prefix, params =
    ctor_args(who, {'num_hidden', 'num_layers', 'mode', 'bidirectional', 'dropout', 'get_next_state',
                    'forget_bias', 'prefix', 'params'}, ...)
  if type(dropout) == 'string' or (dropout == nil and type(get_next_state) == 'table') then
    local opts = get_next_state or {}
    prefix, dropout, get_next_state, forget_bias = dropout, opts.dropout, opts.get_next_state, opts.forget_bias
  end
  self._num_hidden = check_hidden(who, num_hidden)
  self._num_layers = M.check_arg(who, 'num_layers', num_layers, 'number', true) or 1
  self._mode, self._bidirectional = mode or 'lstm', bidirectional and true or false
  if not GATES[self._mode] then raise(who .. ': mode must be lstm, gru, rnn_relu or rnn_tanh, got ' .. tostring(mode)) end
  self:_set_params(M.check_arg(who, 'prefix', prefix, 'string', true) or (self._mode .. '_'), check_params(who, params))
  self._dropout = M.check_arg(who, 'dropout', dropout, 'number', true) or 0
  self._get_next_state = get_next_state and true or false
  self._forget_bias = M.check_arg(who, 'forget_bias', forget_bias, 'number', true) or 1.0
  local fi = M.FusedRNN(nil, num_hidden, self._num_layers, self._mode, self._bidirectional, self._forget_bias)
  self._parameter = self:param('parameters', {attr = {__init__ = fi:dumps()}})
end)
local Fused = M.FusedRNNCell
--- The per-gate suffixes of this cell's mode.
-- @return list of strings
function Fused:gate_names() return GATES[self._mode] end
--- Splits the fused '<prefix>parameters' vector into MXNet's per-layer, per-direction,
-- per-gate arrays '<prefix>l0_i2h_i_weight', ... (copies).
-- @param args table name -> NDArray (not modified)
-- @return a new table
function Fused:unpack_weights(args)
  local out = {}
  for k, v in pairs(args) do out[k] = v end
  local key = self._prefix .. 'parameters'
  local arr = out[key]
  if arr == nil then raise(('FusedRNNCell:unpack_weights: no array %s in args'):format(key)) end
  out[key] = nil
  for _, p in ipairs(M.fused_slices(arr, self._num_hidden, self._num_layers, self._mode, self._bidirectional, self._prefix)) do
    out[p[1]] = p[2]:copy()
  end
  return out
end
--- Packs the per-gate arrays back into one '<prefix>parameters' vector (MXNet's pack_weights).
-- @param args table name -> NDArray (not modified)
-- @return a new table
function Fused:pack_weights(args)
  local out = {}
  for k, v in pairs(args) do out[k] = v end
  local gates, h, L = GATES[self._mode], self._num_hidden, self._num_layers
  local b, m = self._bidirectional and 2 or 1, #GATES[self._mode]
  local w0 = out[('%sl0_i2h%s_weight'):format(self._prefix, gates[1])]
  if w0 == nil then raise(('FusedRNNCell:pack_weights: no array %sl0_i2h%s_weight in args'):format(self._prefix, gates[1])) end
  local ni = w0.shape[2]
  local total = (ni + h + 2) * h * m * b + (L - 1) * m * h * (h + b * h + 2) * b
  local arr = mx.nd.zeros({total}, {ctx = w0.context, dtype = w0.dtype})
  for _, p in ipairs(M.fused_slices(arr, h, L, self._mode, self._bidirectional, self._prefix)) do
    local src = out[p[1]]
    if src == nil then raise(('FusedRNNCell:pack_weights: no array %s in args'):format(p[1])) end
    p[2]:set(src)
    out[p[1]] = nil
  end
  out[self._prefix .. 'parameters'] = arr
  return out
end
--- The same network as stacked unfused cells (MXNet's unfuse): per layer an RNNCell /
-- LSTMCell / GRUCell prefixed '<prefix>l<i>_' (a BidirectionalCell with '<prefix>r<i>_'
-- and output prefix '<prefix>bi_l<i>_' when bidirectional), a DropoutCell
-- '<prefix>_dropout<i>_' between layers when dropout > 0. `unpack_weights` gives its
-- parameters from the fused ones.
-- @return a SequentialRNNCell
function Fused:unfuse()
  local stack = M.SequentialRNNCell()
  local H, mode = self._num_hidden, self._mode
  local function cell(p)
    if mode == 'rnn_relu' then return M.RNNCell(H, 'relu', p)
    elseif mode == 'rnn_tanh' then return M.RNNCell(H, 'tanh', p)
    elseif mode == 'lstm' then return M.LSTMCell{num_hidden = H, prefix = p}
    else return M.GRUCell(H, p) end
  end
  for i = 0, self._num_layers - 1 do
    if self._bidirectional then
      stack:add(M.BidirectionalCell(cell(('%sl%d_'):format(self._prefix, i)), cell(('%sr%d_'):format(self._prefix, i)),
                                    nil, ('%sbi_l%d_'):format(self._prefix, i)))
    else
      stack:add(cell(('%sl%d_'):format(self._prefix, i)))
    end
    if self._dropout > 0 and i ~= self._num_layers - 1 then
      stack:add(M.DropoutCell(self._dropout, ('%s_dropout%d_'):format(self._prefix, i)))
    end
  end
  return stack
end
--- The fused states: `h` (and `c` for LSTM), each of shape
-- `(layers * directions, batch, num_hidden)` in layout `LNC`.
-- @return list of `{shape =, __layout__ =}`
function Fused:state_info()
  local b = self._bidirectional and 2 or 1
  local info = {{shape = {b * self._num_layers, 0, self._num_hidden}, __layout__ = 'LNC'}}
  if self._mode == 'lstm' then info[2] = {shape = {b * self._num_layers, 0, self._num_hidden}, __layout__ = 'LNC'} end
  return info
end
--- Not supported: a fused cell runs whole sequences only; raises (use `unroll`).
function Fused:step() raise('FusedRNNCell cannot be stepped; use unroll') end
--- Unrolls as one `RNN` operator over the whole sequence.
-- @param length number of time steps
-- @param inputs one symbol with a T axis or a list of `length` symbols
-- @param begin_state list of state symbols (defaults to `begin_state()`)
-- @param layout `'NTC'` (default) or `'TNC'`
-- @param merge_outputs true: one symbol with the T axis; false or nil: a list per step
-- @return outputs, list of final states (empty unless `get_next_state` was set)
function Fused:unroll(length, inputs, begin_state, layout, merge_outputs)
  M.check_unroll(length, layout, merge_outputs, begin_state)
  local sym = S()
  self:reset()
  layout = layout or 'NTC'
  local axis
  inputs, axis = normalize(length, inputs, layout, true)
  if axis == 1 then inputs = sym.swapaxes{data = inputs, dim1 = 0, dim2 = 1} end
  local states = begin_state or self:begin_state()
  local args = {data = inputs, parameters = self._parameter, state = states[1], state_size = self._num_hidden,
                num_layers = self._num_layers, bidirectional = self._bidirectional, p = self._dropout,
                state_outputs = self._get_next_state, mode = self._mode, name = self._prefix .. 'rnn'}
  if self._mode == 'lstm' then args.state_cell = states[2] end
  local rnn = sym.RNN(args)
  local outputs, out_states
  if not self._get_next_state then outputs, out_states = rnn, {}
  elseif self._mode == 'lstm' then outputs, out_states = rnn[1], {rnn[2], rnn[3]}
  else outputs, out_states = rnn[1], {rnn[2]} end
  -- MXNet marks the state outputs' layout (on the RNN node, which they share)
  for _, st in ipairs(out_states) do st:_set_attr{__layout__ = 'LNC'} end
  if axis == 1 then outputs = sym.swapaxes{data = outputs, dim1 = 0, dim2 = 1} end
  outputs = normalize(length, outputs, layout, merge_outputs)
  return outputs, out_states
end

--- Installs the cell classes into `mx.rnn` and the FusedRNN initializer as `mx.init.FusedRNN`.
-- @param rnn the `mx.rnn` table
-- @param mxmod the luamx module table
function M.install(rnn, mxmod)
  mx = mxmod
  require('luamx.rnn.modifiers').install(M, mx)
  for _, k in ipairs({'BaseRNNCell', 'RNNParams', 'RNNCell', 'LSTMCell', 'GRUCell', 'SequentialRNNCell',
                      'FusedRNNCell', 'FusedRNN', 'DropoutCell', 'ModifierCell', 'ZoneoutCell',
                      'ResidualCell', 'BidirectionalCell'}) do
    rnn[k] = M[k]
  end
  mxmod.init.FusedRNN = M.FusedRNN
end

return M
