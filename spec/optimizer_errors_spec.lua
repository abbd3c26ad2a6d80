-- spec/optimizer_errors_spec.lua — a failed update is reported as the error it is (the
-- optimizer, the parameter, what was expected and got) and changes nothing for later
-- updates: every optimizer with a fused operator keeps calling it (no process-wide
-- switch to NDArray arithmetic); a Ctrl-C passes through unchanged; hyper-parameters are
-- checked when the optimizer is created.
local mx = require 'luamx'
local H = require 'helpers'
local nd = mx.nd

-- name, options, fused operator of each optimizer that has one
local FUSED = {
  {'sgd', {momentum = 0.9}, 'sgd_mom_update'},
  {'sgd', {}, 'sgd_update'},
  {'nag', {momentum = 0.9}, 'nag_mom_update'},
  {'adam', {}, 'adam_update'},
  {'rmsprop', {}, 'rmsprop_update'},
  {'adagrad', {}, 'adagrad_update'},
  {'ftrl', {}, 'ftrl_update'},
  {'signum', {}, 'signum_update'},
  {'signum', {momentum = 0}, 'signsgd_update'},
  {'ftml', {}, 'ftml_update'},
  {'lamb', {}, 'lamb_update_phase1'},
}

-- Runs fn with mx.nd.prepare spied on: returns the operator names prepared.
local function prepared_names(fn)
  local real = rawget(nd, 'prepare')
  local names = {}
  nd.prepare = function(name, params)
    names[#names + 1] = name
    return real(name, params)
  end
  mx.optimizer.clear_prepared()
  local ok, err = pcall(fn)
  nd.prepare = real
  mx.optimizer.clear_prepared()
  if not ok then error(err, 0) end
  return names
end

local function has(list, x)
  for _, v in ipairs(list) do if v == x then return true end end
  return false
end

describe('optimizer updates that fail', function()
  for _, case in ipairs(FUSED) do
    local name, opts, op = case[1], case[2], case[3]
    it(op .. ': an error names the optimizer and parameter; later updates stay fused', function()
      local o = {learning_rate = 0.1, param_idx2name = {[0] = 'fc_weight'}}
      for k, v in pairs(opts) do o[k] = v end
      local opt = mx.optimizer.create(name, o)
      local upd = mx.optimizer.get_updater(opt)
      local w = nd.array {1, 2, 3}
      -- a float64 gradient for a float32 weight: the fused operator refuses it
      local err = H.raises(function() upd(0, nd.array({0.1, 0.2, 0.3}, {dtype = 'float64'}), w) end,
        'mx.optimizer.' .. name, "parameter 'fc_weight'", 'mx.nd.' .. op, 'expected float32, got float64')
      assert.is_nil(err:find('attempt to', 1, true), err)
      local _, positions = err:gsub(':%d+: ', '')
      assert.equal(1, positions, 'one position (the caller\'s): ' .. err)
      -- a gradient of the wrong shape: refused before anything runs, naming both shapes
      H.raises(function() upd(0, nd.array {0.1, 0.2}, w) end,
        'mx.optimizer.' .. name .. ':update', "grad of parameter 'fc_weight'", 'shape (2)', "weight's (3)")
      -- and every later update still runs the fused operator
      local names = prepared_names(function() upd(0, nd.array {0.1, 0.2, 0.3}, w) end)
      assert.is_true(has(names, op), op .. ' was not called after a failed update: ' .. table.concat(names, ','))
      -- a fresh optimizer of another kind too
      local names2 = prepared_names(function()
        local u2 = mx.optimizer.get_updater(mx.optimizer.create('sgd', {learning_rate = 0.1, momentum = 0.9}))
        u2(0, nd.array {0.1, 0.2, 0.3}, nd.array {1, 2, 3})
      end)
      assert.is_true(has(names2, 'sgd_mom_update'), 'sgd_mom_update not called: ' .. table.concat(names2, ','))
    end)
  end

  it('passes a Ctrl-C through unchanged and keeps the fused path', function()
    local INTERRUPTED = require('luamx.repl.interrupt').INTERRUPTED
    local real = rawget(nd, 'prepare')
    local opt = mx.optimizer.create('sgd', {learning_rate = 0.1, momentum = 0.9})
    local upd = mx.optimizer.get_updater(opt)
    local w = nd.array {1, 2}
    nd.prepare = function() return setmetatable({set = function(s) return s end},
      {__call = function() error(INTERRUPTED, 0) end}) end
    mx.optimizer.clear_prepared()
    local ok, err = pcall(upd, 0, nd.array {1, 1}, w)
    nd.prepare = real
    mx.optimizer.clear_prepared()
    assert.is_false(ok)
    assert.equal(INTERRUPTED, err)
    local names = prepared_names(function() upd(0, nd.array {1, 1}, w) end)
    assert.same({'sgd_mom_update'}, names)
    H.near(w:toflat(), {0.9, 1.9}, 1e-6)
  end)

  it('checks the update\'s arguments, naming what was given', function()
    local opt = mx.optimizer.create('adadelta')
    local w = nd.array {1, 2}
    H.raises(function() opt:update(0, w, 'g', opt:create_state(0, w)) end,
      'mx.optimizer.adadelta:update', 'grad must be an NDArray', 'got a string')
    H.raises(function() opt:update(0, w, nd.array {1, 1}, nil) end,
      'mx.optimizer.adadelta:update: state of parameter index 0 must be the optimizer\'s state', 'got nil')
    H.raises(function() opt:update({}, w, nd.array {1, 1}, nil) end, 'mx.optimizer.adadelta:update: index must be')
  end)
end)

describe('optimizer hyper-parameters are checked at create', function()
  local bad = {
    {'sgd', {learning_rate = '0.1'}, 'learning_rate must be a number >= 0', 'got a string ("0.1")'},
    {'sgd', {learning_rate = -1}, 'learning_rate must be a number >= 0', 'got the number -1'},
    {'sgd', {momentum = 0 / 0}, 'momentum must be a number >= 0', 'got NaN'},
    {'sgd', {wd = {}}, 'wd must be a number', 'got a table'},
    {'adam', {beta1 = 1.5}, 'beta1 must be a number >= 0 <= 1', 'got the number 1.5'},
    {'adam', {epsilon = 'x'}, 'epsilon must be', 'got a string'},
    {'rmsprop', {centered = 1}, 'centered must be a boolean', 'got the number 1'},
    {'sgd', {clip_gradient = true}, 'clip_gradient must be a number', 'got the boolean true'},
    {'sgd', {rescale_grad = math.huge}, 'rescale_grad must be finite', 'got the number inf'},
    {'sgd', {lr_scheduler = 3}, 'lr_scheduler must be a scheduler', 'got the number 3'},
    {'ftrl', {lamda1 = 'a'}, 'lamda1 must be a number', 'got a string'},
    {'lamb', {lower_bound = false}, 'lower_bound must be a number', 'got the boolean false'},
  }
  for _, c in ipairs(bad) do
    it(c[1] .. ' ' .. c[3], function()
      H.raises(function() mx.optimizer.create(c[1], c[2]) end, 'mx.optimizer.' .. c[1] .. ': ' .. c[3], c[4])
    end)
  end
  it('set_learning_rate and the multipliers too', function()
    local opt = mx.optimizer.create('sgd')
    H.raises(function() opt:set_learning_rate('fast') end, 'mx.optimizer.sgd:set_learning_rate', 'lr must be', 'got a string')
    H.raises(function() opt:set_lr_mult {fc_weight = 'x'} end, 'mx.optimizer.sgd:set_lr_mult', 'multiplier [fc_weight]')
    H.raises(function() opt:set_wd_mult(3) end, 'mx.optimizer.sgd:set_wd_mult', 'must be a table', 'got the number 3')
    assert.equal(0.01, opt.lr)
  end)
  it('schedulers too', function()
    local S = mx.lr_scheduler
    H.raises(function() S.FactorScheduler(10, 'half') end, 'mx.lr_scheduler.FactorScheduler: factor must be', 'got a string')
    H.raises(function() S.FactorScheduler{step = 10, base_lr = 'x'} end, 'FactorScheduler: base_lr must be')
    H.raises(function() S.MultiFactorScheduler{step = {1, 'b'}} end, 'MultiFactorScheduler: step[2] must be an integer')
    H.raises(function() S.PolyScheduler{max_update = 10, pwr = {}} end, 'PolyScheduler: pwr must be a number', 'got a table')
    H.raises(function() S.CosineScheduler{max_update = 10, warmup_steps = 0.5} end, 'warmup_steps must be an integer')
  end)
end)
