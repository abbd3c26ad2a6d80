--- luamx.rnn.modifiers — the cells of MXNet 1.9's rnn_cell.py that wrap or combine other
--- cells: DropoutCell, ModifierCell, ZoneoutCell, ResidualCell, BidirectionalCell.
--
--   local bi = mx.rnn.BidirectionalCell(mx.rnn.LSTMCell(8, 'l_'), mx.rnn.LSTMCell(8, 'r_'))
--   local out, states = bi:unroll(5, data, nil, 'NTC', true)   -- (N, 5, 16), node 'bi_out'
--
-- Invariants (MXNet's, so graphs and checkpoints interchange):
-- * Node names: DropoutCell's Dropout nodes and ZoneoutCell's masks take automatic names
--   (dropout0, ...); ResidualCell names its sums '<output name>_plus_residual';
--   BidirectionalCell concatenates per step into '<output_prefix>t<i>' or, merged, into
--   '<output_prefix>out' (dim 1 per step, dim 2 merged); merged backward outputs are put
--   back in order by a `reverse` node along the T axis (automatic name, as MXNet's).
-- * A modifier cell marks its base cell modified: calling the base cell's begin_state
--   directly is an error, the modifier's begin_state works. A modifier owns no
--   parameters: `params` is the base cell's container.
-- * Bidirectional states come back nested, {left states, right states}, as MXNet's.
-- * Dropout only acts in training (is_train forward); at inference Dropout is the
--   identity, so Zoneout always takes the new output/state and DropoutCell passes through.
local capi = require 'luamx.capi'
local raise = capi.raise

local M = {}

--- Installs the classes into the cells module `C` (which holds BaseRNNCell and class).
-- @param C the luamx.rnn.cells module
-- @param mx the luamx module table
function M.install(C, mx)
  local Base, class, ctor_args, check_arg = C.BaseRNNCell, C.class, C.ctor_args, C.check_arg
  local function S() return mx.sym end

  -- ---------------------------------------------------------------- DropoutCell ----
  --- DropoutCell(dropout, prefix='dropout_', params=nil), or the same as a table: Dropout
  --- with probability `dropout` on each step's input (nothing when dropout is 0).
  C.DropoutCell = class(function(self, ...)
    local who = 'mx.rnn.DropoutCell'
    local dropout, prefix, params = ctor_args(who, {'dropout', 'prefix', 'params'}, ...)
    if type(dropout) ~= 'number' or dropout < 0 or dropout >= 1 then
      raise(('%s: dropout must be a number in [0, 1), got %s'):format(who, tostring(dropout)))
    end
    self:_set_params(check_arg(who, 'prefix', prefix, 'string', true) or 'dropout_', params)
    self.dropout = dropout
  end)
  local Drop = C.DropoutCell
  function Drop:state_info() return {} end
  function Drop:step(inputs, states)
    if self.dropout > 0 then inputs = S().Dropout{data = inputs, p = self.dropout} end
    return inputs, states
  end
  --- Unrolls: one Dropout over the whole sequence when `inputs` is one symbol (and
  -- merge_outputs is not false), else one per step.
  -- @param length number of time steps
  -- @param inputs one symbol with a T axis or a list of `length` symbols
  -- @param begin_state ignored (no states)
  -- @param layout `'NTC'` (default) or `'TNC'`
  -- @param merge_outputs as BaseRNNCell:unroll
  -- @return outputs, empty list of states
  function Drop:unroll(length, inputs, begin_state, layout, merge_outputs)
    self:reset()
    inputs = C.normalize(length, inputs, layout or 'NTC', merge_outputs)
    if mx.sym.is_symbol(inputs) then return self:step(inputs, {}) end
    return Base.unroll(self, length, inputs, begin_state, layout, merge_outputs)
  end

  -- ---------------------------------------------------------------- ModifierCell ---
  --- ModifierCell(base_cell): the base class of cells that modify another cell; the base
  --- cell can no longer be used directly (its begin_state raises).
  local function modifier_init(self, who, base_cell)
    if type(base_cell) ~= 'table' or not base_cell.state_info then
      raise(('%s: base_cell must be an RNN cell, got %s'):format(who, type(base_cell)))
    end
    base_cell._modified = true
    self.base_cell = base_cell
    self._prefix = ''
    self.params, self._params, self._own_params = base_cell.params, base_cell._params, false
  end
  C.ModifierCell = class(function(self, ...)
    modifier_init(self, 'mx.rnn.ModifierCell', (ctor_args('mx.rnn.ModifierCell', {'base_cell'}, ...)))
  end)
  local Mod = C.ModifierCell
  function Mod:state_info() return self.base_cell:state_info() end
  function Mod:begin_state(func, opts)
    if self._modified then
      raise('begin_state: after applying modifier cells (e.g. DropoutCell) the base cell cannot be '
            .. 'called directly. Call the modifier cell instead.')
    end
    self.base_cell._modified = false
    local ok, r = pcall(self.base_cell.begin_state, self.base_cell, func, opts)
    self.base_cell._modified = true
    if not ok then error(r, 0) end
    return r
  end
  function Mod:unpack_weights(args) return self.base_cell:unpack_weights(args) end
  function Mod:pack_weights(args) return self.base_cell:pack_weights(args) end
  function Mod:step() raise('ModifierCell: step is not implemented by this modifier') end

  -- ---------------------------------------------------------------- ZoneoutCell ----
  --- ZoneoutCell(base_cell, zoneout_outputs=0, zoneout_states=0), or the same as a table:
  --- in training each output (state) element keeps its previous value with probability
  --- zoneout_outputs (zoneout_states): where(Dropout(ones_like(new)), new, previous).
  C.ZoneoutCell = class(function(self, ...)
    local who = 'mx.rnn.ZoneoutCell'
    local base_cell, zo, zs = ctor_args(who, {'base_cell', 'zoneout_outputs', 'zoneout_states'}, ...)
    if getmetatable(base_cell) == C.FusedRNNCell then
      raise(who .. ": FusedRNNCell doesn't support zoneout. Please unfuse first.")
    end
    if getmetatable(base_cell) == C.BidirectionalCell then
      raise(who .. ": BidirectionalCell doesn't support zoneout since it doesn't support step. "
            .. 'Please add ZoneoutCell to the cells underneath instead.')
    end
    for name, v in pairs({zoneout_outputs = zo or 0, zoneout_states = zs or 0}) do
      if type(v) ~= 'number' or v < 0 or v >= 1 then
        raise(('%s: %s must be a number in [0, 1), got %s'):format(who, name, tostring(v)))
      end
    end
    modifier_init(self, who, base_cell)
    self.zoneout_outputs, self.zoneout_states = zo or 0, zs or 0
  end, Mod)
  local Zone = C.ZoneoutCell
  --- Resets the counters and forgets the previous output.
  function Zone:reset()
    Base.reset(self)
    self.prev_output = nil
  end
  function Zone:step(inputs, states)
    local sym = S()
    local po, ps = self.zoneout_outputs, self.zoneout_states
    local next_output, next_states = self.base_cell(inputs, states)
    local function mask(p, like) return sym.Dropout{data = sym.ones_like{data = like}, p = p} end
    local prev_output = self.prev_output or sym.zeros({0, 0})
    local output = next_output
    if po ~= 0 then output = sym.where{condition = mask(po, next_output), x = next_output, y = prev_output} end
    local out_states = next_states
    if ps ~= 0 then
      out_states = {}
      for i, new_s in ipairs(next_states) do
        out_states[i] = sym.where{condition = mask(ps, new_s), x = new_s, y = states[i]}
      end
    end
    self.prev_output = output
    return output, out_states
  end

  -- ---------------------------------------------------------------- ResidualCell ---
  --- ResidualCell(base_cell), or {base_cell = ...}: the base cell's output plus its input
  --- (elemwise_add named '<output name>_plus_residual'), as Wu et al. 2016.
  C.ResidualCell = class(function(self, ...)
    local base_cell = ctor_args('mx.rnn.ResidualCell', {'base_cell'}, ...)
    modifier_init(self, 'mx.rnn.ResidualCell', base_cell)
  end, Mod)
  local Res = C.ResidualCell
  local function residual(out, inp)
    return S().elemwise_add{lhs = out, rhs = inp, name = out.name .. '_plus_residual'}
  end
  function Res:step(inputs, states)
    local output
    output, states = self.base_cell(inputs, states)
    return residual(output, inputs), states
  end
  --- Unrolls the base cell, then adds the inputs (merged or per step, like the outputs).
  -- @param length number of time steps
  -- @param inputs one symbol with a T axis or a list of `length` symbols
  -- @param begin_state list of state symbols (defaults to `begin_state()`)
  -- @param layout `'NTC'` (default) or `'TNC'`
  -- @param merge_outputs as BaseRNNCell:unroll
  -- @return outputs, list of final states
  function Res:unroll(length, inputs, begin_state, layout, merge_outputs)
    self:reset()
    layout = layout or 'NTC'
    self.base_cell._modified = false
    local ok, outputs, states = pcall(self.base_cell.unroll, self.base_cell, length, inputs, begin_state,
                                      layout, merge_outputs)
    self.base_cell._modified = true
    if not ok then error(outputs, 0) end
    if merge_outputs == nil then merge_outputs = mx.sym.is_symbol(outputs) end
    inputs = C.normalize(length, inputs, layout, merge_outputs)
    if merge_outputs then return residual(outputs, inputs), states end
    local res = {}
    for i, o in ipairs(outputs) do res[i] = residual(o, inputs[i]) end
    return res, states
  end

  -- ---------------------------------------------------------------- BidirectionalCell
  --- BidirectionalCell(l_cell, r_cell, params=nil, output_prefix='bi_'), or the same as a
  --- table: l_cell reads the sequence forwards, r_cell backwards; outputs are
  --- concatenated along the feature axis. Cannot be stepped.
  C.BidirectionalCell = class(function(self, ...)
    local who = 'mx.rnn.BidirectionalCell'
    local l_cell, r_cell, params, output_prefix = ctor_args(who, {'l_cell', 'r_cell', 'params', 'output_prefix'}, ...)
    self:_set_params('', params)
    self._override_cell_params = params ~= nil
    self._output_prefix = check_arg(who, 'output_prefix', output_prefix, 'string', true) or 'bi_'
    C.adopt_params(self, l_cell, who .. ' l_cell', 'BidirectionalCell')
    C.adopt_params(self, r_cell, who .. ' r_cell', 'BidirectionalCell')
    self._cells = {l_cell, r_cell}
    self.is_bidirectional = true
  end)
  local Bi = C.BidirectionalCell
  function Bi:step() raise('BidirectionalCell cannot be stepped. Please use unroll') end
  function Bi:reset()
    Base.reset(self)
    for _, c in ipairs(self._cells) do c:reset() end
  end
  Bi.state_info = C.SequentialRNNCell.state_info
  Bi.begin_state = C.SequentialRNNCell.begin_state
  Bi.unpack_weights = C.SequentialRNNCell.unpack_weights
  Bi.pack_weights = C.SequentialRNNCell.pack_weights

  local function reverse(s, axis) return S().reverse{data = s, axis = axis} end

  --- Unrolls l_cell over the inputs and r_cell over them reversed; step i's output is
  -- concat(l_i, r_i) named '<output_prefix>t<i>', or merged '<output_prefix>out'.
  -- @param length number of time steps
  -- @param inputs one symbol with a T axis or a list of `length` symbols
  -- @param begin_state list of state symbols, left cell's first (defaults to `begin_state()`)
  -- @param layout `'NTC'` (default) or `'TNC'`
  -- @param merge_outputs true: one symbol; false: a list; nil: merged when both cells merge
  -- @return outputs, {left states, right states}
  function Bi:unroll(length, inputs, begin_state, layout, merge_outputs)
    C.check_unroll(length, layout, merge_outputs, begin_state)
    local sym = S()
    self:reset()
    layout = layout or 'NTC'
    local axis
    inputs, axis = C.normalize(length, inputs, layout, false)
    begin_state = begin_state or self:begin_state()
    local l_cell, r_cell = self._cells[1], self._cells[2]
    local nl = #l_cell:state_info()
    local ls, rs = {}, {}
    for i = 1, #begin_state do
      if i <= nl then ls[#ls + 1] = begin_state[i] else rs[#rs + 1] = begin_state[i] end
    end
    local rev = {}
    for i = 1, #inputs do rev[i] = inputs[#inputs + 1 - i] end
    local l_out, l_states = l_cell:unroll(length, inputs, ls, layout, merge_outputs)
    local r_out, r_states = r_cell:unroll(length, rev, rs, layout, merge_outputs)
    if merge_outputs == nil then
      merge_outputs = sym.is_symbol(l_out) and sym.is_symbol(r_out)
      if not merge_outputs then
        if sym.is_symbol(l_out) then l_out = C.normalize(length, l_out, layout, false) end
        if sym.is_symbol(r_out) then r_out = C.normalize(length, r_out, layout, false) end
      end
    end
    if merge_outputs then
      l_out, r_out = {l_out}, {reverse(r_out, axis)}
    else
      local r = {}
      for i = 1, #r_out do r[i] = r_out[#r_out + 1 - i] end
      r_out = r
    end
    local outputs = {}
    for i = 1, #l_out do
      outputs[i] = sym.Concat{l_out[i], r_out[i], dim = merge_outputs and 2 or 1,
                              name = merge_outputs and (self._output_prefix .. 'out')
                                     or ('%st%d'):format(self._output_prefix, i - 1)}
    end
    if merge_outputs then outputs = outputs[1] end
    return outputs, {l_states, r_states}
  end
end

return M
