-- ops_params_spec.lua — the operator registry and parameter tables (mx.op.info), and
-- parsing of MXNet's string forms with asserted messages. Expected defaults and names
-- are MXNet 1.9's (src/operator/*, DMLC_DECLARE_PARAMETER).
local mx = require 'luamx'
local op = mx.op

local function defaults(name)
  local d = {}
  for _, p in ipairs(op.info(name).params) do d[p.name] = p.default or 'REQUIRED' end
  return d
end

local function err(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok)
  return (tostring(e):gsub('^.-:%d+: ', ''))
end

describe('operator registry', function()
  it('lists every operator of the issue', function()
    local have = {}
    for _, n in ipairs(op.list()) do have[n] = true end
    for _, n in ipairs { 'FullyConnected', 'Activation', 'LeakyReLU', 'SoftmaxOutput',
      'SoftmaxActivation', 'softmax', 'log_softmax', 'LinearRegressionOutput',
      'LogisticRegressionOutput', 'MAERegressionOutput', 'MakeLoss', 'BlockGrad',
      'Convolution', 'Deconvolution', 'Pooling', 'BatchNorm', 'LayerNorm', 'Dropout',
      'Embedding', 'Concat', 'SliceChannel', 'Reshape', 'Flatten', 'transpose', 'SwapAxis',
      'expand_dims', 'squeeze', 'slice', 'slice_axis', 'take', 'one_hot', 'where', 'clip',
      'Cast', 'broadcast_add', 'broadcast_lesser', 'elemwise_add', 'elemwise_div',
      '_plus_scalar', '_rminus_scalar', '_lesser_equal_scalar', 'exp', 'round', 'sum',
      'mean', 'max', 'min', 'prod', 'norm', 'argmax', 'argmin', 'dot', 'batch_dot', 'add_n',
      'zeros_like', 'ones_like', '_copy', 'RNN', 'SequenceMask', 'SequenceLast',
      'SequenceReverse', 'sgd_update', 'sgd_mom_update', 'nag_mom_update', 'adam_update',
      'rmsprop_update', 'adagrad_update' } do
      assert.is_true(have[n] == true, n)
    end
  end)

  it('resolves aliases to the canonical op', function()
    assert.equal('SliceChannel', op.info('split').name)
    assert.equal('BlockGrad', op.info('stop_gradient').name)
    assert.equal('elemwise_add', op.info('_Plus').name)
    assert.equal('_mul_scalar', op.info('_MulScalar').name)
    assert.equal('add_n', op.info('ElementWiseSum').name)
    assert.equal('_copy', op.info('identity').name)
    assert.equal('Flatten', op.info('flatten').name)
    assert.equal('SwapAxis', op.info('swapaxes').name)
    assert.equal('Cast', op.info('cast').name)
  end)

  it('gives MXNet hints', function()
    assert.equal('fullyconnected', op.info('FullyConnected').hint)
    assert.equal('_plusscalar', op.info('_plus_scalar').hint)
    local ffi = require 'ffi'
    local buf = ffi.new('char[64]')
    for called, hint in pairs { _Plus = '_plus', _PlusScalar = '_plusscalar',
      _MulScalar = '_mulscalar', _RMinusScalar = '_rminusscalar', split = 'split',
      SliceChannel = 'slicechannel', _Power = '_power' } do
      mx.capi.check(mx.capi.C.lmx_op_hint(called, buf, 64))
      assert.equal(hint, ffi.string(buf))
    end
  end)

  it('suggests close names for unknown ops', function()
    assert.equal("unknown operator 'FullyConected' (did you mean FullyConnected?)",
      err(op.info, 'FullyConected'))
  end)

  it('lists inputs, outputs and aux per parameters', function()
    local fc = op.info('FullyConnected', { num_hidden = 3 })
    assert.same({ 'data', 'weight', 'bias' }, fc.inputs)
    assert.same({ 'data', 'weight' }, op.info('FullyConnected', { num_hidden = 3, no_bias = true }).inputs)
    local bn = op.info('BatchNorm')
    assert.same({ 'data', 'gamma', 'beta' }, bn.inputs)
    assert.same({ 'moving_mean', 'moving_var' }, bn.aux)
    assert.same({ 'output', 'mean', 'var' }, bn.outputs)
    assert.equal(1, bn.num_visible_outputs)
    assert.equal(3, op.info('BatchNorm', { output_mean_var = true }).num_visible_outputs)
    assert.same({ 'arg0', 'arg1', 'arg2' }, op.info('Concat', { num_args = 3 }).inputs)
    assert.same({ 'output0', 'output1' }, op.info('split', { num_outputs = 2 }).outputs)
    assert.same({ 'data', 'gamma' }, op.info('LeakyReLU', { act_type = 'prelu' }).inputs)
    assert.same({ 'data', 'parameters', 'state', 'state_cell' },
      op.info('RNN', { state_size = 4, num_layers = 1, mode = 'lstm' }).inputs)
    assert.same({ 'data', 'parameters', 'state', 'sequence_length' },
      op.info('RNN', { state_size = 4, num_layers = 1, mode = 'gru', use_sequence_length = true }).inputs)
    local rnn = op.info('RNN', { state_size = 4, num_layers = 1, mode = 'lstm', state_outputs = true })
    assert.same({ 'output', 'state_output', 'statecell_output', 'reserve' }, rnn.outputs) -- reserve: hidden
    assert.equal(3, rnn.num_visible_outputs)
    assert.same({ 'weight', 'grad', 'mean', 'var' }, op.info('adam_update', { lr = 0.1 }).inputs)
    assert.same({ 'lhs', 'rhs' }, op.info('broadcast_add').inputs)
    assert.same({ 'a', 'indices' }, op.info('take').inputs)
    assert.same({ 'condition', 'x', 'y' }, op.info('where').inputs)
    assert.same({ 'data', 'sequence_length' },
      op.info('SequenceMask', { use_sequence_length = true }).inputs)
  end)
end)

describe('parameter defaults (MXNet 1.9)', function()
  local cases = {
    FullyConnected = { num_hidden = 'REQUIRED', no_bias = 'False', flatten = 'True' },
    Activation = { act_type = 'REQUIRED' },
    LeakyReLU = { act_type = 'leaky', slope = '0.25', lower_bound = '0.125', upper_bound = '0.334' },
    SoftmaxOutput = { grad_scale = '1.0', ignore_label = '-1.0', multi_output = 'False',
      use_ignore = 'False', preserve_shape = 'False', normalization = 'null', out_grad = 'False',
      smooth_alpha = '0.0' },
    SoftmaxActivation = { mode = 'instance' },
    softmax = { axis = '-1', temperature = 'None', dtype = 'None', use_length = 'False' },
    MakeLoss = { grad_scale = '1.0', valid_thresh = '0.0', normalization = 'null' },
    MAERegressionOutput = { grad_scale = '1.0' },
    Convolution = { kernel = 'REQUIRED', stride = '()', dilate = '()', pad = '()',
      num_filter = 'REQUIRED', num_group = '1', workspace = '1024', no_bias = 'False',
      cudnn_tune = 'None', cudnn_off = 'False', layout = 'None' },
    Deconvolution = { adj = '()', target_shape = '()', no_bias = 'True', workspace = '512' },
    Pooling = { kernel = '()', pool_type = 'max', global_pool = 'False', cudnn_off = 'False',
      pooling_convention = 'valid', stride = '()', pad = '()', p_value = 'None',
      count_include_pad = 'None', layout = 'None' },
    BatchNorm = { eps = '0.001', momentum = '0.9', fix_gamma = 'True', use_global_stats = 'False',
      output_mean_var = 'False', axis = '1', cudnn_off = 'False' },
    LayerNorm = { axis = '-1', eps = '1e-05', output_mean_var = 'False' },
    Dropout = { p = '0.5', mode = 'training', axes = '()' },
    Embedding = { input_dim = 'REQUIRED', output_dim = 'REQUIRED', dtype = 'float32',
      sparse_grad = 'False' },
    Concat = { num_args = 'REQUIRED', dim = '1' },
    SliceChannel = { num_outputs = 'REQUIRED', axis = '1', squeeze_axis = 'False' },
    Reshape = { shape = '()', reverse = 'False', target_shape = '()', keep_highest = 'False' },
    transpose = { axes = '()' },
    SwapAxis = { dim1 = '0', dim2 = '0' },
    expand_dims = { axis = 'REQUIRED' },
    squeeze = { axis = 'None' },
    slice = { begin = 'REQUIRED', ['end'] = 'REQUIRED', step = '()' },
    slice_axis = { axis = 'REQUIRED', begin = 'REQUIRED', ['end'] = 'REQUIRED' },
    take = { axis = '0', mode = 'clip' },
    one_hot = { depth = 'REQUIRED', on_value = '1.0', off_value = '0.0', dtype = 'float32' },
    clip = { a_min = 'REQUIRED', a_max = 'REQUIRED' },
    Cast = { dtype = 'REQUIRED' },
    _plus_scalar = { scalar = '1.0' },
    sum = { axis = 'None', keepdims = 'False', exclude = 'False' },
    norm = { ord = '2', axis = 'None', keepdims = 'False' },
    argmax = { axis = 'None', keepdims = 'False' },
    dot = { transpose_a = 'False', transpose_b = 'False' },
    batch_dot = { transpose_a = 'False', transpose_b = 'False' },
    add_n = { num_args = 'REQUIRED' },
    RNN = { state_size = 'REQUIRED', num_layers = 'REQUIRED', bidirectional = 'False',
      mode = 'REQUIRED', p = '0.0', state_outputs = 'False', projection_size = 'None',
      lstm_state_clip_min = 'None', lstm_state_clip_max = 'None', use_sequence_length = 'False' },
    SequenceMask = { use_sequence_length = 'False', value = '0.0', axis = '0' },
    SequenceLast = { use_sequence_length = 'False', axis = '0' },
    SequenceReverse = { use_sequence_length = 'False', axis = '0' },
    sgd_update = { lr = 'REQUIRED', wd = '0.0', rescale_grad = '1.0', clip_gradient = '-1.0',
      lazy_update = 'True' },
    sgd_mom_update = { momentum = '0.0' },
    adam_update = { beta1 = '0.9', beta2 = '0.999', epsilon = '1e-08' },
    rmsprop_update = { gamma1 = '0.95', epsilon = '1e-08', clip_weights = '-1.0' },
    adagrad_update = { epsilon = '1e-07' },
  }
  for name, want in pairs(cases) do
    it(name, function()
      local d = defaults(name)
      for k, v in pairs(want) do assert.equal(v, d[k], name .. '.' .. k) end
    end)
  end

  it('enum choices', function()
    local c = {}
    for _, p in ipairs(op.info('Activation').params) do c[p.name] = p.choices end
    assert.equal('relu|sigmoid|tanh|softrelu|softsign', c.act_type)
    for _, p in ipairs(op.info('RNN').params) do c[p.name] = p.choices end
    assert.equal('rnn_relu|rnn_tanh|lstm|gru', c.mode)
  end)
end)

describe('parameter parsing and messages', function()
  local function fc(params) return op.infer('FullyConnected', params, { { 2, 4 }, {}, {} }, nil, 'fc1') end

  it('accepts the string forms', function()
    for _, v in ipairs { '3', ' 3', 3 } do
      local _, o = fc { num_hidden = v }
      assert.same({ 2, 3 }, o[1])
    end
    for _, v in ipairs { 'True', 'true', '1', true } do
      local i = op.infer('FullyConnected', { num_hidden = 3, no_bias = v }, { { 2, 4 }, {} })
      assert.equal(2, #i)
    end
    for _, k in ipairs { '(3, 3)', '[3,3]', '(3,3)', { 3, 3 } } do
      local _, o = op.infer('Convolution', { kernel = k, num_filter = 1 }, { { 1, 1, 5, 5 }, {}, {} })
      assert.same({ 1, 1, 3, 3 }, o[1])
    end
    local _, o = op.infer('Convolution', { kernel = '3', num_filter = 1 }, { { 1, 1, 5 }, {}, {} })
    assert.same({ 1, 1, 3 }, o[1]) -- a bare int is a 1-tuple
    _, o = op.infer('Convolution', { kernel = '(3,)', num_filter = 1 }, { { 1, 1, 5 }, {}, {} })
    assert.same({ 1, 1, 3 }, o[1])
    _, o = op.infer('LeakyReLU', { slope = '1e-3' }, { { 2 } })
    assert.same({ 2 }, o[1])
    _, o = op.infer('clip', { a_min = '-inf', a_max = 'inf' }, { { 2 } })
    assert.same({ 2 }, o[1])
    _, o = op.infer('sum', { axis = 'None' }, { { 2, 3 } })
    assert.same({ 1 }, o[1])
    _, o = op.infer('slice', { begin = '(None, 1)', ['end'] = '(None, None)' }, { { 4, 5 } })
    assert.same({ 4, 4 }, o[1])
  end)

  it('skips __attr__ keys', function()
    local _, o = fc { num_hidden = 2, __lr_mult__ = '0.1', __ctx_group__ = 'dev1' }
    assert.same({ 2, 2 }, o[1])
  end)

  it('reports bad values naming op, node and parameter', function()
    assert.equal("FullyConnected 'fc1': parameter 'num_hidden': expected an integer, got 'abc'",
      err(fc, { num_hidden = 'abc' }))
    assert.equal("FullyConnected 'fc1': unknown parameter 'num_hiden' (known: num_hidden, no_bias, flatten)",
      err(fc, { num_hiden = 3 }))
    assert.equal("FullyConnected 'fc1': required parameter 'num_hidden' is missing", err(fc, {}))
    assert.equal("FullyConnected 'fc1': parameter 'no_bias': expected a boolean (True, False, true, false, 1, 0), got 'yes'",
      err(fc, { num_hidden = 2, no_bias = 'yes' }))
    assert.equal("FullyConnected 'fc1': parameter 'num_hidden': value 0 is out of range [1, 2.14748e+09]",
      err(fc, { num_hidden = 0 }))
    assert.equal("Activation: parameter 'act_type': expected one of relu, sigmoid, tanh, softrelu, softsign, got 'relu6'",
      err(op.infer, 'Activation', { act_type = 'relu6' }, { { 2 } }))
    assert.equal("Dropout: parameter 'p': value 1.5 is out of range [0, 1]",
      err(op.infer, 'Dropout', { p = 1.5 }, { { 2 } }))
    assert.equal("Cast: parameter 'dtype': expected a dtype (float32, float64, float16, uint8, int32, int8, int64, bfloat16), got 'float8'",
      err(op.infer, 'Cast', { dtype = 'float8' }, { { 2 } }))
    assert.equal("Convolution: parameter 'kernel': expected a tuple of integers like (2, 2) or 2, got '(3, x)'",
      err(op.infer, 'Convolution', { kernel = '(3, x)', num_filter = 1 }, { { 1, 1, 5, 5 }, {}, {} }))
    assert.equal("Convolution: parameter 'stride': expected 2 entries like kernel, got 1",
      err(op.infer, 'Convolution', { kernel = { 3, 3 }, stride = { 2 }, num_filter = 1 }, { { 1, 1, 5, 5 }, {}, {} }))
    assert.equal("Concat: expected 2 input shapes for these parameters, got 1",
      err(op.infer, 'Concat', { num_args = 2 }, { { 1 } }))
  end)
end)

describe('canonical formatting', function()
  it('converts Lua values to MXNet strings', function()
    local s = op.to_param_string
    assert.equal('128', s(128))
    assert.equal('0.5', s(0.5))
    assert.equal('0.001', s(0.001))
    assert.equal('True', s(true))
    assert.equal('False', s(false))
    assert.equal('(2, 2)', s({ 2, 2 }))
    assert.equal('(2,)', s({ 2 }))
    assert.equal('(None, 2)', s({ 'None', 2 }))
    assert.equal('relu', s('relu'))
  end)
end)
