-- spec/api_args_spec.lua — the public Lua functions called with wrong arguments (a string,
-- nil, a table, a negative number, NaN, a Symbol where an NDArray goes, ...): every error
-- is a Lua error string that names the function and the argument, says what was got,
-- and is no raw runtime error from inside luamx ("attempt to index", "attempt to perform
-- arithmetic", "cannot convert", "bad argument" at a luamx file's line).
-- Each row: {label, function that must fail, fragments the message must contain...}.
local mx = require 'luamx'
local nd, sym = mx.nd, mx.sym

mx.logging.set_level('error')

local NaN = 0 / 0
local x = nd.ones {4, 3}
local v = sym.Variable('data')
local net = sym.SoftmaxOutput {data = sym.FullyConnected {data = v, num_hidden = 2, name = 'fc'}, name = 'softmax'}
local function iter() return mx.io.NDArrayIter {data = x, label = nd.zeros {4}, batch_size = 2} end
local function module() return mx.mod.Module {symbol = net, logger = false} end
local function bound()
  local m = module()
  local it = iter()
  m:bind {data_shapes = it.provide_data, label_shapes = it.provide_label}
  m:init_params()
  return m
end
local function bucketing()
  return mx.mod.BucketingModule {sym_gen = function() return net end, default_bucket_key = 1, logger = false}
end
local tmp = os.tmpname()

local ROWS = {
  -- mx.nd
  {'nd.array string', function() return nd.array('x') end, 'mx.nd.array', 'got string'},
  {'nd.zeros shape string', function() return nd.zeros('a') end, 'mx.nd.zeros', 'shape', 'got string'},
  {'nd.zeros NaN dim', function() return nd.zeros {NaN} end, 'mx.nd.zeros', 'shape[1]', 'nan'},
  {'nd.ones bad dtype', function() return nd.ones({2}, {dtype = 'bogus'}) end, 'mx.nd.ones', 'dtype', 'bogus'},
  {'nd.full value string', function() return nd.full({2}, 'a') end, 'mx.nd.full', 'value', 'got string'},
  {'nd.arange start string', function() return nd.arange('a', 3) end, 'mx.nd.arange', 'start', 'got string'},
  {'nd.dot with a Symbol', function() return nd.dot(x, v) end, 'mx.nd.dot', 'b must be an NDArray', "a Symbol 'data'"},
  {'nd.dot with a number', function() return nd.dot(3, x) end, 'mx.nd.dot', 'a must be an NDArray', 'the number 3'},
  {'nd.random.uniform low string', function() return nd.random.uniform('a', 1, {2}) end,
    'mx.nd.random.uniform', 'low', 'a string'},
  {'nd.random.normal std negative', function() return nd.random.normal(0, -1, {2}) end,
    'random.normal', 'std must be >= 0', 'got -1'},
  {'nd.random.normal std string', function() return nd.random.normal(0, 'a', {2}) end,
    'mx.nd.random.normal', 'std', 'a string ("a")'},
  {'nd.random.normal shape string', function() return nd.random.normal(0, 1, 'x') end,
    'mx.nd.random.normal', 'shape', 'got string'},
  {'astype bad dtype', function() return x:astype('bogus') end, 'astype', 'bogus'},
  {'reshape nil', function() return x:reshape(nil) end, 'reshape', 'shape', 'got nil'},
  {'reshape {"a", 4}', function() return x:reshape {'a', 4} end, 'reshape', 'shape[1]', 'got a'},
  {'mx.nd.reshape shape {"a", 4}', function() return nd.reshape {data = x, shape = {'a', 4}} end,
    'Reshape', "parameter 'shape'", "'(a, 4)'"},
  {'mx.nd.reshape positional table', function() return nd.reshape(x, {'a', 4}) end,
    'mx.nd.reshape', 'entry [1]', 'a string ("a")'},
  {'mx.nd.reshape data a table', function() return nd.reshape {data = {'a', 4}} end,
    'mx.nd.reshape', "input 'data' must be an NDArray", 'a table'},
  {'fill string', function() return x:fill('a') end, 'fill', 'value', 'got string'},
  {'set string', function() return x:set('a') end, 'set', 'got string'},
  {'copyto number', function() return x:copyto(3) end, 'context', 'got 3'},
  {'nd.save path number', function() return nd.save(3, {x}) end, 'mx.nd.save', 'path', 'got number'},
  {'nd.save element number', function() return nd.save(tmp, {3}) end, 'mx.nd.save', 'element [1]', 'got number'},
  {'nd.load path number', function() return nd.load(3) end, 'mx.nd.load', 'path', 'got number'},
  {'nd.concat string', function() return nd.concat(x, 'a') end, 'mx.nd.concat', 'argument 2', 'got string'},
  {'nd.relu{data = Symbol}', function() return nd.relu {data = v} end,
    'mx.nd.relu', "input 'data' must be an NDArray", "a Symbol 'data'"},
  {'nd.relu{data = 42}', function() return nd.relu {data = 42} end,
    'mx.nd.relu', "input 'data' must be an NDArray", 'the number 42'},
  {'nd.Activation act_type number', function() return nd.Activation(x, {act_type = 3}) end,
    'Activation', "parameter 'act_type'", "'3'"},
  {'nd.FullyConnected num_hidden NaN', function()
    return nd.FullyConnected {data = x, weight = nd.ones {2, 3}, bias = nd.ones {2}, num_hidden = NaN} end,
    'FullyConnected', "parameter 'num_hidden'", 'nan'},
  {'nd.FullyConnected num_hidden negative', function()
    return nd.FullyConnected {data = x, weight = nd.ones {2, 3}, bias = nd.ones {2}, num_hidden = -2} end,
    'FullyConnected', "parameter 'num_hidden'", '-2'},
  {'nd.slice begin > end', function() return nd.slice {data = x, begin = {0, 2}, ['end'] = {2, 1}} end,
    'slice', "parameter 'begin'", 'begin[1]=2', 'end[1]=1'},
  {'nd.Convolution oversized pad', function()
    return nd.Convolution {data = nd.ones {1, 1, 4, 4}, weight = nd.ones {1, 1, 3, 3}, no_bias = true,
                           kernel = {3, 3}, num_filter = 1, pad = {1e9, 1e9}} end,
    'Convolution', "output 'output'", '2000000002'},
  {'nd.Deconvolution adj >= stride', function()
    return nd.Deconvolution {data = nd.ones {1, 1, 4, 4}, weight = nd.ones {1, 1, 3, 3}, no_bias = true,
                             kernel = {3, 3}, num_filter = 1, stride = {2, 2}, adj = {2, 2}} end,
    'Deconvolution', "parameter 'adj'", "stride's (2)", 'got 2'},
  -- mx.sym
  {'sym.Variable name number', function() return sym.Variable(42) end, 'mx.sym.Variable', 'name', 'the number 42'},
  {'sym.Variable shape string', function() return sym.Variable('a', {shape = 'x'}) end,
    'mx.sym.Variable', 'shape', 'a string'},
  {'sym.Variable shape negative', function() return sym.Variable('a', {shape = {2, -1}}) end,
    'mx.sym.Variable', 'shape[2]', 'the number -1'},
  {'sym + string', function() return v + 'a' end, 'Symbol +', 'string'},
  {'sym.FullyConnected{data = 42}', function() return sym.FullyConnected {data = 42, num_hidden = 3} end,
    'mx.sym.FullyConnected', "input 'data' must be a Symbol", 'the number 42'},
  {'sym.FullyConnected{data = NDArray}', function() return sym.FullyConnected {data = x, num_hidden = 3} end,
    'mx.sym.FullyConnected', "input 'data' must be a Symbol", 'an NDArray of shape (4,3)'},
  {'sym.FullyConnected num_hidden string', function() return sym.FullyConnected {data = v, num_hidden = 'a'} end,
    'FullyConnected', "parameter 'num_hidden'", "'a'"},
  {'sym.Group{1, "a"}', function() return sym.Group {1, 'a'} end, 'mx.sym.Group', 'symbols[1]', 'the number 1'},
  {'sym.Group{v, "a"}', function() return sym.Group {v, 'a'} end, 'mx.sym.Group', 'symbols[2]', 'a string ("a")'},
  {'sym.Group(Symbol)', function() return sym.Group(v) end, 'mx.sym.Group', 'array of Symbols', 'a Symbol'},
  {'infer_shape shape string', function() return v:infer_shape {data = 'a'} end, 'infer_shape', "'data'"},
  {'infer_shape negative dim', function() return net:infer_shape {data = {-1, 3}} end,
    'infer_shape', "'data'", '-1'},
  {'sym.load path number', function() return sym.load(3) end, 'mx.sym.load', 'path'},
  {'sym.Deconvolution adj >= stride', function()
    return sym.Deconvolution {data = v, kernel = {3, 3}, num_filter = 1, stride = {2, 2}, adj = {3, 3},
                              name = 'd1'}:infer_shape {data = {1, 1, 4, 4}} end,
    "Deconvolution 'd1'", "parameter 'adj'", 'got 3'},
  {'sym.slice begin > end', function()
    return sym.slice {data = v, begin = {0, 3}, ['end'] = {2, 1}, name = 's1'}:infer_shape {data = {2, 4}} end,
    "slice 's1'", "parameter 'begin'", 'begin[1]=3'},
  -- Module
  {'Module symbol number', function() return mx.mod.Module {symbol = 42} end, 'mx.mod.Module', 'symbol', 'number'},
  {'Module data_names string', function() return mx.mod.Module {symbol = net, data_names = 'data'} end,
    'mx.mod.Module', 'data_names', 'a string ("data")'},
  {'Module label_names entry', function() return mx.mod.Module {symbol = net, label_names = {3}} end,
    'mx.mod.Module', 'label_names[1]', 'the number 3'},
  {'bind data_shapes string', function() module():bind {data_shapes = 'x'} end, 'bind', 'data_shapes', 'string'},
  {'bind negative dim', function() module():bind {data_shapes = {{'data', {-2, 3}}}} end,
    'bind', 'data_shapes', '(-2, 3)'},
  {'init_params initializer number', function()
    local m = module()
    m:bind {data_shapes = iter().provide_data, label_shapes = iter().provide_label}
    m:init_params {initializer = 3} end, 'init_params', 'initializer', 'the number 3'},
  {'init_params arg_params entry number', function()
    local m = module()
    m:bind {data_shapes = iter().provide_data, label_shapes = iter().provide_label}
    m:init_params {arg_params = {fc_weight = 3}} end, 'init_params', 'arg_params["fc_weight"]', 'the number 3'},
  {'set_params entry string', function() bound():set_params({fc_weight = 'a'}, {}) end,
    'set_params', 'arg_params["fc_weight"]', 'a string'},
  {'init_optimizer optimizer number', function() bound():init_optimizer {optimizer = 3} end,
    'init_optimizer', 'optimizer', 'got number'},
  {'init_optimizer optimizer_params string', function() bound():init_optimizer {optimizer_params = 'x'} end,
    'init_optimizer', 'optimizer_params', 'a string ("x")'},
  {'init_optimizer learning_rate string', function()
    bound():init_optimizer {optimizer_params = {learning_rate = 'x'}} end,
    'mx.optimizer.sgd', 'learning_rate', 'a string ("x")'},
  {'forward number', function() bound():forward(3) end, 'forward', 'got number'},
  {'fit train_data number', function() module():fit(3, {num_epoch = 1}) end, 'fit', 'train_data'},
  {'fit num_epoch "two"', function() module():fit(iter(), {num_epoch = 'two'}) end,
    'fit', 'num_epoch', 'a string ("two")'},
  {'fit num_epoch -1', function() module():fit(iter(), {num_epoch = -1}) end, 'fit', 'num_epoch', 'the number -1'},
  {'fit num_epoch NaN', function() module():fit(iter(), {num_epoch = NaN}) end, 'fit', 'num_epoch', 'NaN'},
  {'fit begin_epoch string', function() module():fit(iter(), {num_epoch = 1, begin_epoch = 'a'}) end,
    'fit', 'begin_epoch', 'a string'},
  {'fit optimizer_params number', function() module():fit(iter(), {num_epoch = 1, optimizer_params = 3}) end,
    'fit', 'optimizer_params', 'the number 3'},
  {'fit initializer string', function() module():fit(iter(), {num_epoch = 1, initializer = 'x'}) end,
    'init_params', 'initializer', 'a string ("x")'},
  {'fit batch_end_callback number', function() module():fit(iter(), {num_epoch = 1, batch_end_callback = 3}) end,
    'fit', 'batch_end_callback', 'the number 3'},
  {'fit eval_metric number', function() module():fit(iter(), {num_epoch = 1, eval_metric = 3}) end,
    'mx.metric.create', 'metric', 'got number'},
  {'score eval_data number', function() bound():score(3, 'acc') end, 'score', 'eval_data', 'the number 3'},
  {'predict eval_data string', function() bound():predict('x') end, 'predict', 'eval_data', 'a string'},
  {'save_checkpoint prefix number', function() bound():save_checkpoint(3, 1) end,
    'save_checkpoint', 'prefix', 'got number'},
  {'save_checkpoint epoch string', function() bound():save_checkpoint(tmp, 'a') end,
    'save_checkpoint', 'epoch', 'got string'},
  {'Module.load prefix number', function() mx.mod.Module.load(3, 1) end, 'Module.load', 'prefix', 'got number'},
  {'mx.model.save_checkpoint params entry number', function()
    mx.model.save_checkpoint(tmp, 1, nil, {w = 3}, {}) end,
    'mx.model.save_checkpoint', 'arg_params["w"]', 'the number 3'},
  {'mx.model.save_checkpoint aux_params string', function()
    mx.model.save_checkpoint(tmp, 1, nil, {}, 'x') end, 'mx.model.save_checkpoint', 'aux_params', 'a string'},
  {'mx.model.save_checkpoint symbol number', function() mx.model.save_checkpoint(tmp, 1, 3, {}, {}) end,
    'mx.model.save_checkpoint', 'symbol', 'the number 3'},
  -- BucketingModule
  {'BucketingModule sym_gen number', function() mx.mod.BucketingModule {sym_gen = 3, default_bucket_key = 1} end,
    'mx.mod.BucketingModule', 'sym_gen', 'got number'},
  {'BucketingModule sym_gen result', function()
    mx.mod.BucketingModule {sym_gen = function() return 3 end, default_bucket_key = 1} end,
    'BucketingModule', 'sym_gen(1)', 'got number'},
  {'BucketingModule save_checkpoint epoch', function()
    local b = bucketing()
    b:bind {data_shapes = iter().provide_data, label_shapes = iter().provide_label}
    b:init_params()
    b:save_checkpoint(tmp, 'x') end, 'save_checkpoint', 'epoch', 'got string'},
  {'BucketingModule fit num_epoch', function() bucketing():fit(iter(), {num_epoch = 'two'}) end,
    'fit', 'num_epoch', 'a string ("two")'},
  -- optimizers and schedulers
  {'optimizer learning_rate string', function() mx.optimizer.create('sgd', {learning_rate = '0.1'}) end,
    'mx.optimizer.sgd', 'learning_rate', 'a string ("0.1")'},
  {'optimizer momentum NaN', function() mx.optimizer.SGD {momentum = NaN} end, 'mx.optimizer.sgd', 'momentum', 'NaN'},
  {'optimizer create name number', function() mx.optimizer.create(3) end, 'mx.optimizer.create', 'name', 'number'},
  {'optimizer update grad Symbol', function()
    local o = mx.optimizer.create('adam')
    o:update(0, x, v, o:create_state(0, x)) end, 'mx.optimizer.adam:update', 'grad', "a Symbol 'data'"},
  {'get_updater number', function() mx.optimizer.get_updater(3) end, 'mx.optimizer.get_updater', 'got number'},
  {'FactorScheduler factor string', function() mx.lr_scheduler.FactorScheduler(10, 'x') end,
    'mx.lr_scheduler.FactorScheduler', 'factor', 'a string'},
  {'MultiFactorScheduler step entry', function() mx.lr_scheduler.MultiFactorScheduler {step = {'a'}} end,
    'mx.lr_scheduler.MultiFactorScheduler', 'step[1]', 'a string'},
  -- initializers
  {'Uniform scale string', function() return mx.init.Uniform('a') end, 'mx.init.Uniform', 'scale', 'a string'},
  {'Uniform scale negative', function() return mx.init.Uniform(-1) end, 'mx.init.Uniform', 'scale', 'the number -1'},
  {'Normal sigma NaN', function() return mx.init.Normal(NaN) end, 'mx.init.Normal', 'sigma', 'NaN'},
  {'Xavier magnitude string', function() return mx.init.Xavier {magnitude = 'a'} end,
    'mx.init.Xavier', 'magnitude', 'a string'},
  {'Xavier rnd_type', function() return mx.init.Xavier {rnd_type = 'bogus'} end, 'mx.init.Xavier', 'rnd_type', 'bogus'},
  {'Constant value string', function() return mx.init.Constant('a') end, 'mx.init.Constant', 'value', 'string'},
  {'LSTMBias forget_bias table', function() return mx.init.LSTMBias {forget_bias = {}} end,
    'mx.init.LSTMBias', 'forget_bias', 'a table'},
  {'initializer call arr number', function() mx.init.Uniform(0.1)('fc_weight', 3) end,
    'initializer', 'arr', 'got number'},
  {'init.create number', function() mx.init.create(3) end, 'mx.init.create', 'got number'},
  -- metrics
  {'metric.create number', function() mx.metric.create(3) end, 'mx.metric.create', 'metric', 'got number'},
  {'metric update strings', function() mx.metric.Accuracy():update('a', 'b') end, 'metric update', 'labels'},
  {'metric update label number', function() mx.metric.Accuracy():update({3}, {x}) end,
    'metric update', 'labels[1]', 'the number 3'},
  {'metric update pred Symbol', function() mx.metric.MSE():update({x}, {v}) end,
    'metric update', 'preds[1]', "a Symbol 'data'"},
  {'Accuracy axis string', function() mx.metric.Accuracy {axis = 'a'} end, 'mx.metric.Accuracy', 'axis', 'a string'},
  {'TopKAccuracy top_k string', function() mx.metric.TopKAccuracy {top_k = 'a'} end, 'TopKAccuracy', 'top_k', 'got a'},
  {'Perplexity ignore_label string', function() mx.metric.Perplexity('a') end,
    'mx.metric.Perplexity', 'ignore_label', 'a string'},
  {'CustomMetric feval number', function() mx.metric.CustomMetric {feval = 3} end, 'CustomMetric', 'feval', 'number'},
  -- io
  {'NDArrayIter data string', function() mx.io.NDArrayIter {data = 'x', batch_size = 2} end,
    'mx.io.NDArrayIter', 'data', 'got string'},
  {'NDArrayIter batch_size 0', function() mx.io.NDArrayIter {data = x, batch_size = 0} end,
    'mx.io.NDArrayIter', 'batch_size', 'got 0'},
  {'NDArrayIter batch_size NaN', function() mx.io.NDArrayIter {data = x, batch_size = NaN} end,
    'mx.io.NDArrayIter', 'batch_size', 'nan'},
  {'NDArrayIter label number', function() mx.io.NDArrayIter {data = x, label = 3, batch_size = 2} end,
    'mx.io.NDArrayIter', 'label', 'got number'},
  {'NDArrayIter last_batch_handle', function() mx.io.NDArrayIter {data = x, batch_size = 2, last_batch_handle = 'x'} end,
    'mx.io.NDArrayIter', 'last_batch_handle', 'got x'},
  {'CSVIter data_csv number', function() mx.io.CSVIter {data_csv = 3, data_shape = {3}, batch_size = 2} end,
    'mx.io.CSVIter', 'data_csv', 'got number'},
  {'CSVIter data_shape string', function() mx.io.CSVIter {data_csv = tmp, data_shape = 'a', batch_size = 2} end,
    'mx.io.CSVIter', 'data_shape', 'got string'},
  {'MNISTIter image number', function() mx.io.MNISTIter {image = 3, label = 4, batch_size = 2} end,
    'mx.io.MNISTIter', 'image', 'got number'},
  {'DataDesc name number', function() mx.io.DataDesc(3, {2}) end, 'mx.io.DataDesc', 'name', 'got number'},
  {'DataDesc shape string', function() mx.io.DataDesc('data', 'x') end, 'mx.io.DataDesc', 'shape', 'got string'},
  {'ResizeIter data_iter number', function() mx.io.ResizeIter(3, 2) end, 'mx.io.ResizeIter', 'data_iter', 'got number'},
  -- kvstore
  {'kv.create number', function() mx.kv.create(3) end, 'mx.kv.create', 'got number'},
  {'kv.create unknown type', function() mx.kv.create('bogus') end, 'kvstore', "'bogus'"},
  {'kv:init value string', function() mx.kv.create('local'):init('a', 'b') end,
    'kvstore:init', 'value of key a', 'a string ("b")'},
  {'kv:init empty key list', function() mx.kv.create('local'):init({}, x) end, 'kvstore:init', 'key', 'a table'},
  {'kv:push value number', function()
    local kv = mx.kv.create('local')
    kv:init('a', x)
    kv:push('a', 3) end, 'kvstore:push', 'key a'},
  {'kv:pull uninitialised key', function() mx.kv.create('local'):pull('zz', x) end, 'pull', "key 'zz'"},
  {'kv:set_optimizer number', function() mx.kv.create('local'):set_optimizer(3) end, 'optimizer', 'got number'},
  -- rnn cells
  {'LSTMCell num_hidden string', function() mx.rnn.LSTMCell('a') end, 'mx.rnn.LSTMCell', 'num_hidden', 'got a'},
  {'LSTMCell num_hidden negative', function() mx.rnn.LSTMCell(-1) end, 'mx.rnn.LSTMCell', 'num_hidden', 'got -1'},
  {'GRUCell prefix number', function() mx.rnn.GRUCell(4, 3) end, 'mx.rnn.GRUCell', 'prefix', 'got number'},
  {'LSTMCell:unroll(0)', function() mx.rnn.LSTMCell(4):unroll(0, v) end, 'unroll', 'length', 'the number 0'},
  {'LSTMCell:unroll("a")', function() mx.rnn.LSTMCell(4):unroll('a', v) end, 'unroll', 'length', 'a string'},
  {'LSTMCell:unroll(NaN)', function() mx.rnn.LSTMCell(4):unroll(NaN, v) end, 'unroll', 'length', 'NaN'},
  {'LSTMCell:unroll inputs number', function() mx.rnn.LSTMCell(4):unroll(2, 3) end, 'unroll', 'inputs', 'the number 3'},
  {'LSTMCell:unroll layout number', function() mx.rnn.LSTMCell(4):unroll(2, v, nil, 3) end,
    'unroll', 'layout', 'the number 3'},
  {'FusedRNNCell:unroll(0)', function() mx.rnn.FusedRNNCell(4):unroll(0, v) end, 'unroll', 'length', 'the number 0'},
  {'SequentialRNNCell:unroll(-1)', function()
    local s = mx.rnn.SequentialRNNCell()
    s:add(mx.rnn.LSTMCell(4))
    s:unroll(-1, v) end, 'unroll', 'length', 'the number -1'},
  {'BidirectionalCell:unroll(0)', function()
    mx.rnn.BidirectionalCell(mx.rnn.LSTMCell(4, 'l_'), mx.rnn.LSTMCell(4, 'r_')):unroll(0, v) end,
    'unroll', 'length', 'the number 0'},
  {'SequentialRNNCell:add number', function() mx.rnn.SequentialRNNCell():add(3) end,
    'SequentialRNNCell:add', 'got number'},
  {'DropoutCell dropout string', function() mx.rnn.DropoutCell('a') end, 'mx.rnn.DropoutCell', 'dropout', 'got a'},
  {'begin_state func number', function() mx.rnn.LSTMCell(4):begin_state(3) end,
    'begin_state', 'func', 'the number 3'},
  -- executors, data batches
  {'Executor:forward string', function()
    local e = sym.FullyConnected {data = v, num_hidden = 2, name = 'fc'}:simple_bind {ctx = mx.cpu(), data = {2, 3}}
    e:forward('a') end, 'forward', 'the first argument', 'a string ("a")'},
  {'Executor:copy_params_from number', function()
    local e = sym.FullyConnected {data = v, num_hidden = 2, name = 'fc'}:simple_bind {ctx = mx.cpu(), data = {2, 3}}
    e:copy_params_from(3) end, 'copy_params_from', 'arg_params', 'the number 3'},
  {'infer_type bad dtype', function() net:infer_type {data = 'bogus'} end, 'infer_type', "'bogus'"},
  {'DataBatch data number', function() mx.io.DataBatch {data = 3} end, 'mx.io.DataBatch', 'data', 'the number 3'},
  {'DataBatch data entry string', function() mx.io.DataBatch {data = {'a'}} end,
    'mx.io.DataBatch', 'data[1]', 'a string ("a")'},
  {'DataBatch pad negative', function() mx.io.DataBatch {data = {x}, pad = -1} end,
    'mx.io.DataBatch', 'pad', 'the number -1'},
  {'Module work_load_list string', function() mx.mod.Module {symbol = net, work_load_list = 'a'} end,
    'mx.mod.Module', 'work_load_list', 'a string ("a")'},
  -- objects where lists or options go (mx.nd.array of a Symbol used to loop forever)
  {'nd.array of a Symbol', function() return nd.array(v) end, 'mx.nd.array', 'source', "a Symbol 'data'"},
  {'nd.array with a Symbol element', function() return nd.array {{1, 2}, {v, 3}} end,
    'mx.nd.array', 'element [2][1]', "a Symbol 'data'"},
  {'nd.zeros options a Symbol', function() return nd.zeros({2}, v) end, 'mx.nd.zeros', 'options', "a Symbol 'data'"},
  {'sym.zeros options number', function() return sym.zeros({2}, 3) end, 'mx.sym.zeros', 'options', 'the number 3'},
  {'model.load_checkpoint prefix table', function() mx.model.load_checkpoint({}, 1) end,
    'mx.model.load_checkpoint', 'prefix', 'a table'},
  {'model.load_checkpoint epoch string', function() mx.model.load_checkpoint(tmp, 'a') end,
    'mx.model.load_checkpoint', 'epoch', 'a string'},
  {'rnn.load_rnn_checkpoint cells Symbol', function() mx.rnn.load_rnn_checkpoint(v, tmp, 1) end,
    'mx.rnn.load_rnn_checkpoint', 'cells', "a Symbol 'data'"},
  {'autograd.mark_variables number', function() mx.autograd.mark_variables(3, 4) end,
    'mx.autograd.mark_variables', 'variables', 'the number 3'},
  {'autograd.mark_variables gradient entry', function() mx.autograd.mark_variables({x}, {'g'}) end,
    'mx.autograd.mark_variables', 'gradients[1]', 'got string'},
  {'context.empty_cache id string', function() mx.context.empty_cache('a') end,
    'mx.context.empty_cache', 'id', 'a string'},
  {'metric.register name number', function() mx.metric.register(3, {}) end, 'mx.metric.register', 'name', 'the number 3'},
  {'do_checkpoint period string', function() mx.callback.do_checkpoint(tmp, 'x') end,
    'mx.callback.do_checkpoint', 'period', 'a string ("x")'},
  {'Symbol call with a number', function() return net(3) end, 'Symbol call', 'the number 3'},
  {'Symbol index 1.5', function() return sym.Group {v, v}[1.5] end, 'Symbol index', 'got 1.5'},
  {'monitor.re_match name number', function() return mx.monitor.re_match('fc.*', 3) end,
    'mx.monitor.re_match', 'name', 'the number 3'},
  {'Monitor pattern number', function() return mx.monitor.Monitor(1, nil, 3) end, 'mx.monitor', 'pattern', 'number'},
  -- callbacks
  {'Speedometer batch_size string', function() mx.callback.Speedometer('a') end,
    'mx.callback.Speedometer', 'batch_size', 'got a'},
  {'do_checkpoint prefix number', function() mx.callback.do_checkpoint(3) end,
    'mx.callback.do_checkpoint', 'prefix', 'got number'},
}

-- A raw runtime error raised inside luamx's own files (not an error luamx raised on
-- purpose, which carries the caller's position).
local RAW = {'attempt to index', 'attempt to perform arithmetic', 'attempt to call', 'attempt to compare',
             'attempt to concatenate', 'cannot convert', 'bad argument', 'stack traceback'}

describe('public functions given wrong arguments', function()
  teardown(function()
    for _, f in ipairs {'', '-0001.params', '-symbol.json'} do os.remove(tmp .. f) end
  end)
  for _, row in ipairs(ROWS) do
    it(row[1], function()
      local ok, err = pcall(row[2])
      assert(not ok, row[1] .. ': the call was accepted')
      assert.equal('string', type(err), 'the error is not a string')
      for i = 3, #row do
        assert(err:find(row[i], 1, true), ('message %q lacks %q'):format(err, row[i]))
      end
      for _, raw in ipairs(RAW) do
        assert(not err:find(raw, 1, true), ('message %q is a raw runtime error (%s)'):format(err, raw))
      end
      local own = err:match('lua/luamx[%w_/]*%.lua:%d+:') or err:match('luamx%.lua:%d+:')
      assert(not own, ('message %q is positioned inside luamx (%s)'):format(err, tostring(own)))
    end)
  end

  it('leaves objects usable after the error', function()
    local m = bound()
    assert.is_false(pcall(m.init_optimizer, m, {optimizer_params = 'x'}))
    m:init_optimizer {optimizer_params = {learning_rate = 0.1}}
    assert.is_false(pcall(m.score, m, 3, 'acc'))
    local it = iter()
    local res = m:score(it, 'acc')
    assert.equal('accuracy', res[1][1])
    local cell = mx.rnn.LSTMCell(4)
    assert.is_false(pcall(cell.unroll, cell, 0, v))
    local outs = cell:unroll(2, v)
    assert.equal(2, #outs)
    local kv = mx.kv.create('local')
    assert.is_false(pcall(kv.init, kv, 'a', 'b'))
    kv:init('a', x)
    local out = nd.zeros {4, 3}
    kv:pull('a', out)
    assert.same(x:toflat(), out:toflat())
  end)
end)
