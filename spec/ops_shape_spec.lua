-- ops_shape_spec.lua — shape and dtype rules of every operator through mx.op.infer, with
-- MXNet's documented numbers and asserted error messages.
local mx = require 'luamx'
local op = mx.op

local function out(name, params, shapes, dtypes)
  local _, o = op.infer(name, params, shapes, dtypes)
  return o[1]
end

local function err(...)
  local ok, e = pcall(op.infer, ...)
  assert.is_false(ok)
  return (tostring(e):gsub('^.-:%d+: ', ''))
end

describe('nn ops', function()
  it('FullyConnected infers weight, bias, output (and data back from output)', function()
    local i, o = op.infer('FullyConnected', { num_hidden = 6 }, { { 2, 3, 4 }, {}, {} })
    assert.same({ 6, 12 }, i[2]); assert.same({ 6 }, i[3]); assert.same({ 2, 6 }, o[1])
    i, o = op.infer('FullyConnected', { num_hidden = 6, flatten = false }, { { 2, 3, 4 }, {}, {} })
    assert.same({ 6, 4 }, i[2]); assert.same({ 2, 3, 6 }, o[1])
    assert.equal("FullyConnected 'fc1': input 'weight': expected shape (6,4), got (6,5)",
      err('FullyConnected', { num_hidden = 6 }, { { 6, 4 }, { 6, 5 }, {} }, nil, 'fc1'))
  end)

  it('Activation / LeakyReLU / softmax keep the shape; prelu gamma is (C,)', function()
    assert.same({ 2, 3 }, out('Activation', { act_type = 'relu' }, { { 2, 3 } }))
    local i = op.infer('LeakyReLU', { act_type = 'prelu' }, { { 2, 5, 4 }, {} })
    assert.same({ 5 }, i[2])
    assert.same({ 2, 3 }, out('softmax', { axis = 1 }, { { 2, 3 } }))
    assert.same({ 2, 3 }, out('log_softmax', {}, { { 2, 3 } }))
    assert.same({ 2, 3 }, out('SoftmaxActivation', { mode = 'channel' }, { { 2, 3 } }))
    assert.equal("softmax: parameter 'axis': axis 2 is out of range for 2-D input (valid: -2..1)",
      err('softmax', { axis = 2 }, { { 2, 3 } }))
  end)

  it('Convolution 2-D with stride, pad, dilate and groups', function()
    local i, o = op.infer('Convolution', { kernel = { 3, 3 }, num_filter = 8, stride = { 2, 2 },
      pad = { 1, 1 } }, { { 1, 3, 32, 32 }, {}, {} })
    assert.same({ 1, 8, 16, 16 }, o[1]); assert.same({ 8, 3, 3, 3 }, i[2]); assert.same({ 8 }, i[3])
    -- dilate 2: effective kernel 5: (32 - 5) / 1 + 1 = 28
    assert.same({ 2, 4, 28, 28 }, out('Convolution', { kernel = { 3, 3 }, dilate = { 2, 2 },
      num_filter = 4 }, { { 2, 3, 32, 32 }, {}, {} }))
    i = op.infer('Convolution', { kernel = { 1, 1 }, num_filter = 6, num_group = 2, no_bias = true },
      { { 1, 4, 7, 7 }, {} })
    assert.same({ 6, 2, 1, 1 }, i[2])
    assert.same({ 1, 2, 9 }, out('Convolution', { kernel = { 3 }, num_filter = 2 }, { { 1, 1, 11 }, {}, {} }))
    assert.same({ 1, 2, 2, 2, 2 }, out('Convolution', { kernel = { 3, 3, 3 }, num_filter = 2 },
      { { 1, 1, 4, 4, 4 }, {}, {} }))
    assert.equal("Convolution 'c': input 'data': a 2-D kernel needs 4-D data (N, C, spatial...), got (1,3,32)",
      err('Convolution', { kernel = { 3, 3 }, num_filter = 8 }, { { 1, 3, 32 }, {}, {} }, nil, 'c'))
  end)

  it('Deconvolution with adj and target_shape', function()
    local i, o = op.infer('Deconvolution', { kernel = { 4, 4 }, stride = { 2, 2 }, pad = { 1, 1 },
      num_filter = 3 }, { { 1, 8, 16, 16 }, {} })
    assert.same({ 1, 3, 32, 32 }, o[1]); assert.same({ 8, 3, 4, 4 }, i[2])
    -- 2*(5-1) + 3 - 0 + 1 = 12
    assert.same({ 1, 2, 12, 12 }, out('Deconvolution', { kernel = { 3, 3 }, stride = { 2, 2 },
      adj = { 1, 1 }, num_filter = 2 }, { { 1, 4, 5, 5 }, {} }))
    assert.same({ 1, 2, 10, 10 }, out('Deconvolution', { kernel = { 3, 3 }, stride = { 2, 2 },
      target_shape = { 10, 10 }, num_filter = 2 }, { { 1, 4, 5, 5 }, {} }))
  end)

  it('Pooling valid vs full vs same, global', function()
    local p = { kernel = { 3, 3 }, stride = { 2, 2 } }
    assert.same({ 1, 1, 4, 4 }, out('Pooling', p, { { 1, 1, 10, 10 } }))
    p.pooling_convention = 'full'
    assert.same({ 1, 1, 5, 5 }, out('Pooling', p, { { 1, 1, 10, 10 } }))
    p.pooling_convention = 'same'
    assert.same({ 1, 1, 5, 5 }, out('Pooling', p, { { 1, 1, 10, 10 } }))
    assert.same({ 2, 3, 1, 1 }, out('Pooling', { global_pool = true, pool_type = 'avg' }, { { 2, 3, 7, 7 } }))
    assert.same({ 1, 1, 6, 6 }, out('Pooling', { kernel = { 3, 3 }, pad = { 1, 1 } }, { { 1, 1, 6, 6 } }))
    assert.equal("Pooling: input 'data': kernel size 5 exceeds input size 3 padded to 3 on spatial dim 0 of (1,1,3,3)",
      err('Pooling', { kernel = { 5, 5 } }, { { 1, 1, 3, 3 } }))
  end)

  it('BatchNorm and LayerNorm', function()
    local i, o, a = op.infer('BatchNorm', {}, { { 2, 5, 3, 3 }, {}, {} })
    assert.same({ 5 }, i[2]); assert.same({ 5 }, i[3]); assert.same({ { 5 }, { 5 } }, a)
    assert.same({ 2, 5, 3, 3 }, o[1]); assert.same({ 5 }, o[2])
    local _, _, _, dt = op.infer('BatchNorm', {}, { { 2, 5 }, {}, {} }, { 'float16' })
    assert.same({ 'float16', 'float32', 'float32' }, dt)
    i, o = op.infer('LayerNorm', {}, { { 2, 3, 7 }, {}, {} })
    assert.same({ 7 }, i[2]); assert.same({ 2, 3, 7 }, o[1]); assert.same({ 2, 3, 1 }, o[2])
  end)

  it('Dropout, Embedding', function()
    local _, o = op.infer('Dropout', { p = 0.2 }, { { 4, 5 } })
    assert.same({ 4, 5 }, o[1]); assert.same({ 4, 5 }, o[2])
    local i, o2, _, dt = op.infer('Embedding', { input_dim = 100, output_dim = 16 }, { { 4, 7 }, {} })
    assert.same({ 100, 16 }, i[2]); assert.same({ 4, 7, 16 }, o2[1]); assert.same({ 'float32' }, dt)
  end)

  it('RNN packed parameter size (MXNet GetRnnParamSize)', function()
    local p = { state_size = 20, num_layers = 2, bidirectional = true, mode = 'lstm', state_outputs = true }
    local i, o = op.infer('RNN', p, { { 5, 3, 10 }, {}, {}, {} })
    assert.same({ 15040 }, i[2]) -- (10+20+2)*160 + (40+20+2)*160
    assert.same({ 4, 3, 20 }, i[3]); assert.same({ 4, 3, 20 }, i[4])
    assert.same({ 5, 3, 40 }, o[1]); assert.same({ 4, 3, 20 }, o[2]); assert.same({ 4, 3, 20 }, o[3])
    i = op.infer('RNN', { state_size = 8, num_layers = 1, mode = 'gru' }, { { 2, 3, 4 }, {}, {} })
    assert.same({ (4 + 8 + 2) * 24 }, i[2])
    i = op.infer('RNN', { state_size = 8, num_layers = 1, mode = 'rnn_tanh' }, { { 2, 3, 4 }, {}, {} })
    assert.same({ 112 }, i[2])
    i = op.infer('RNN', { state_size = 8, num_layers = 2, mode = 'lstm', projection_size = 4 },
      { { 2, 3, 5 }, {}, {}, {} })
    assert.same({ (5 + 4 + 2) * 32 + (4 + 4 + 2) * 32 + 4 * 8 * 2 }, i[2])
    assert.same({ 2, 3, 4 }, i[3]); assert.same({ 2, 3, 8 }, i[4])
    assert.equal("RNN: input 'data': expected 3-D (sequence length, batch size, input size), got (3,4)",
      err('RNN', { state_size = 8, num_layers = 1, mode = 'gru' }, { { 3, 4 }, {}, {} }))
  end)

  it('Sequence ops', function()
    local i, o = op.infer('SequenceMask', { use_sequence_length = true }, { { 5, 3, 2 }, {} })
    assert.same({ 3 }, i[2]); assert.same({ 5, 3, 2 }, o[1])
    assert.same({ 3, 2 }, out('SequenceLast', {}, { { 5, 3, 2 } }))
    assert.same({ 5, 2 }, out('SequenceLast', { axis = 1 }, { { 5, 3, 2 } }))
    assert.same({ 5, 3, 2 }, out('SequenceReverse', {}, { { 5, 3, 2 } }))
  end)
end)

describe('losses', function()
  it('SoftmaxOutput label from data', function()
    local i = op.infer('SoftmaxOutput', {}, { { 4, 10 }, {} })
    assert.same({ 4 }, i[2])
    i = op.infer('SoftmaxOutput', { multi_output = true }, { { 4, 3, 5, 5 }, {} })
    assert.same({ 4, 25 }, i[2])
    i = op.infer('LinearRegressionOutput', {}, { { 4, 2 }, {} })
    assert.same({ 4, 2 }, i[2])
    assert.same({ 4, 2 }, out('MakeLoss', {}, { { 4, 2 } }))
    assert.same({ 4, 2 }, out('BlockGrad', {}, { { 4, 2 } }))
  end)
end)

describe('elementwise, scalar, broadcast', function()
  it('elemwise unifies both ways', function()
    local i, o = op.infer('elemwise_add', {}, { { 2, 0 }, { 0, 3 } })
    assert.same({ 2, 3 }, i[1]); assert.same({ 2, 3 }, i[2]); assert.same({ 2, 3 }, o[1])
    assert.equal("elemwise_add: input 'rhs': expected shape (2,3), got (2,4)",
      err('elemwise_add', {}, { { 2, 3 }, { 2, 4 } }))
    assert.same({ 2, 3 }, out('add_n', { num_args = 3 }, { { 2, 3 }, {}, {} }))
    assert.same({ 2 }, out('_mul_scalar', { scalar = 2 }, { { 2 } }))
    assert.same({ 2 }, out('exp', {}, { { 2 } }))
  end)
  it('broadcast', function()
    assert.same({ 2, 3, 4 }, out('broadcast_add', {}, { { 2, 1, 4 }, { 3, 1 } }))
    assert.same({ 2, 3 }, out('broadcast_greater', {}, { { 2, 3 }, { 1 } }))
    assert.equal("broadcast_mul: inputs 'lhs' (2,3) and 'rhs' (4,3) cannot be broadcast together",
      err('broadcast_mul', {}, { { 2, 3 }, { 4, 3 } }))
  end)
  it('dtypes propagate', function()
    local _, _, _, dt = op.infer('elemwise_mul', {}, { {}, { 2 } }, { false, 'float64' })
    assert.same({ 'float64' }, dt)
    assert.equal("elemwise_mul: input 'rhs': expected float32, got int32",
      err('elemwise_mul', {}, { { 2 }, { 2 } }, { 'float32', 'int32' }))
  end)
end)

describe('reductions and dot', function()
  it('reduce', function()
    assert.same({ 2, 4 }, out('sum', { axis = 1 }, { { 2, 3, 4 } }))
    assert.same({ 2, 1, 4 }, out('mean', { axis = 1, keepdims = true }, { { 2, 3, 4 } }))
    assert.same({ 3 }, out('max', { axis = { 0, 2 } }, { { 2, 3, 4 } }))
    assert.same({ 3 }, out('min', { axis = 1, exclude = true }, { { 2, 3, 4 } }))
    assert.same({ 1 }, out('prod', {}, { { 2, 3 } }))
    assert.same({ 2 }, out('norm', { axis = 1 }, { { 2, 3 } }))
    assert.same({ 2 }, out('argmax', { axis = 1 }, { { 2, 3 } }))
    assert.same({ 1 }, out('argmin', {}, { { 2, 3 } }))
  end)
  it('dot and batch_dot', function()
    assert.same({ 2, 5 }, out('dot', {}, { { 2, 3 }, { 3, 5 } }))
    assert.same({ 3, 5 }, out('dot', { transpose_a = true }, { { 2, 3 }, { 2, 5 } }))
    assert.same({ 2, 4 }, out('dot', { transpose_b = true }, { { 2, 3 }, { 4, 3 } }))
    assert.same({ 7, 2, 5 }, out('batch_dot', {}, { { 7, 2, 3 }, { 7, 3, 5 } }))
    assert.equal("dot: inputs 'lhs' (2,3) and 'rhs' (4,5): the contracted dims differ",
      err('dot', {}, { { 2, 3 }, { 4, 5 } }))
  end)
end)

describe('matrix ops', function()
  it('Reshape special codes (MXNet docs)', function()
    local function r(shape, d, extra)
      local p = extra or {}
      p.shape = shape
      return out('Reshape', p, { d })
    end
    assert.same({ 4, 3, 2 }, r({ 4, 0, 2 }, { 2, 3, 4 }))
    assert.same({ 2, 3, 4 }, r({ 2, 0, 0 }, { 2, 3, 4 }))
    assert.same({ 6, 1, 4 }, r({ 6, 1, -1 }, { 2, 3, 4 }))
    assert.same({ 3, 8 }, r({ 3, -1 }, { 2, 3, 4 }))
    assert.same({ 2, 3, 4 }, r({ -2 }, { 2, 3, 4 }))
    assert.same({ 2, 3, 4 }, r({ 2, -2 }, { 2, 3, 4 }))
    assert.same({ 2, 3, 4, 1, 1 }, r({ -2, 1, 1 }, { 2, 3, 4 }))
    assert.same({ 6, 4 }, r({ -3, 4 }, { 2, 3, 4 }))
    assert.same({ 6, 20 }, r({ -3, -3 }, { 2, 3, 4, 5 }))
    assert.same({ 2, 12 }, r({ 0, -3 }, { 2, 3, 4 }))
    assert.same({ 6, 4 }, r({ -3, -2 }, { 2, 3, 4 }))
    assert.same({ 1, 2, 3, 4 }, r({ -4, 1, 2, -2 }, { 2, 3, 4 }))
    assert.same({ 2, 1, 3, 4 }, r({ 2, -4, -1, 3, -2 }, { 2, 3, 4 }))
    assert.same({ 40, 5 }, r({ -1, 0 }, { 10, 5, 4 }))
    assert.same({ 50, 4 }, r({ -1, 0 }, { 10, 5, 4 }, { reverse = true }))
    assert.same({ 2, 12 }, out('Reshape', { target_shape = { 2, 0 } }, { { 2, 3, 4 } }))
    assert.equal("Reshape: target shape (5,5) (size 25) is incompatible with input 'data' shape (2,3,4) (size 24)",
      err('Reshape', { shape = { 5, 5 } }, { { 2, 3, 4 } }))
  end)
  it('Flatten, transpose, SwapAxis, expand_dims, squeeze', function()
    assert.same({ 2, 12 }, out('Flatten', {}, { { 2, 3, 4 } }))
    assert.same({ 4, 3, 2 }, out('transpose', {}, { { 2, 3, 4 } }))
    assert.same({ 3, 4, 2 }, out('transpose', { axes = { 1, 2, 0 } }, { { 2, 3, 4 } }))
    assert.same({ 4, 3, 2 }, out('SwapAxis', { dim1 = 0, dim2 = 2 }, { { 2, 3, 4 } }))
    assert.same({ 2, 1, 3 }, out('expand_dims', { axis = 1 }, { { 2, 3 } }))
    assert.same({ 2, 3, 1 }, out('expand_dims', { axis = -1 }, { { 2, 3 } }))
    assert.same({ 2, 3 }, out('squeeze', {}, { { 1, 2, 1, 3 } }))
    assert.same({ 2, 1, 3 }, out('squeeze', { axis = 0 }, { { 1, 2, 1, 3 } }))
    assert.equal("squeeze: input 'data': cannot squeeze axis 1 of size 2 (must be 1)",
      err('squeeze', { axis = 1 }, { { 1, 2 } }))
  end)
  it('slice and slice_axis', function()
    assert.same({ 2, 2 }, out('slice', { begin = { 0, 1 }, ['end'] = { 2, 3 } }, { { 3, 4 } }))
    assert.same({ 3, 2 }, out('slice', { begin = { 'None', 0 }, ['end'] = { 'None', 4 }, step = { 1, 2 } }, { { 3, 4 } }))
    assert.same({ 3, 4 }, out('slice', { begin = { -1 }, ['end'] = { 'None' }, step = { -1 } }, { { 3, 4 } }))
    assert.same({ 3, 2 }, out('slice_axis', { axis = 1, begin = 1, ['end'] = 3 }, { { 3, 4 } }))
    assert.same({ 3, 1 }, out('slice_axis', { axis = 1, begin = -1, ['end'] = 'None' }, { { 3, 4 } }))
  end)
  it('Concat both ways and SliceChannel', function()
    assert.same({ 2, 7 }, out('Concat', { num_args = 2 }, { { 2, 3 }, { 2, 4 } }))
    assert.same({ 5, 3 }, out('Concat', { num_args = 2, dim = 0 }, { { 2, 3 }, { 3, 3 } }))
    assert.equal("Concat 'concat0': input 'arg1': shape (3,4) does not match (2,3) except on dim 1",
      err('Concat', { num_args = 2 }, { { 2, 3 }, { 3, 4 } }, nil, 'concat0'))
    local _, o = op.infer('SliceChannel', { num_outputs = 3 }, { { 2, 6 } })
    assert.same({ { 2, 2 }, { 2, 2 }, { 2, 2 } }, o)
    _, o = op.infer('split', { num_outputs = 4, axis = 1, squeeze_axis = true }, { { 2, 4, 5 } })
    assert.same({ 2, 5 }, o[1])
    assert.equal("SliceChannel: input 'data': dim 1 of size 5 is not divisible by num_outputs 2",
      err('SliceChannel', { num_outputs = 2 }, { { 2, 5 } }))
  end)
  it('take, one_hot, where, clip, Cast, *_like, _copy', function()
    assert.same({ 2, 3, 4 }, out('take', {}, { { 5, 4 }, { 2, 3 } }))
    assert.same({ 5, 2, 3 }, out('take', { axis = 1 }, { { 5, 4 }, { 2, 3 } }))
    local _, o, _, dt = op.infer('one_hot', { depth = 10 }, { { 4 } })
    assert.same({ 4, 10 }, o[1]); assert.same({ 'float32' }, dt)
    assert.same({ 3, 2 }, out('where', {}, { { 3 }, { 3, 2 }, {} }))
    assert.same({ 3 }, out('clip', { a_min = 0, a_max = 1 }, { { 3 } }))
    _, _, _, dt = op.infer('Cast', { dtype = 'int32' }, { { 3 } }, { 'float32' })
    assert.same({ 'int32' }, dt)
    assert.same({ 3 }, out('zeros_like', {}, { { 3 } }))
    assert.same({ 3 }, out('ones_like', {}, { { 3 } }))
    assert.same({ 3 }, out('identity', {}, { { 3 } }))
  end)
end)

describe('optimizer updates', function()
  it('state shapes follow weight', function()
    local i, o = op.infer('adam_update', { lr = 0.01 }, { { 3, 4 }, {}, {}, {} })
    assert.same({ { 3, 4 }, { 3, 4 }, { 3, 4 }, { 3, 4 } }, i)
    assert.same({ 3, 4 }, o[1])
    for _, n in ipairs { 'sgd_update', 'sgd_mom_update', 'nag_mom_update', 'rmsprop_update', 'adagrad_update' } do
      local info = op.info(n, { lr = 0.1 })
      assert.equal(16 + 2, info.flags, n) -- UPDATE | NO_GRAD
      local shapes = {}
      for k = 1, #info.inputs do shapes[k] = k == 1 and { 5 } or {} end
      local ii = op.infer(n, { lr = 0.1 }, shapes)
      assert.same({ 5 }, ii[#ii], n)
    end
  end)
end)
