-- examples/lstm_bucketing.lua — an LSTM language model trained with mx.mod.BucketingModule
-- (MXNet 1.9 example/rnn/bucketing/lstm_bucketing.py).
--
--   luajit examples/lstm_bucketing.lua --num-hidden 64 --num-embed 64 --num-layers 1 \
--     --vocab-size 2000 --mom 0.9 --num-epochs 5     -- the shipped text, scaled down:
--                                                    -- validation perplexity 331 -> 228
--   luajit examples/lstm_bucketing.lua --num-epochs 1 --quick   -- 400 sentences only
--   luajit examples/lstm_bucketing.lua --train-file ptb.train.txt --valid-file ptb.valid.txt
--
-- Defaults are MXNet's: 2 LSTM layers of 200, embedding 200, buckets 10..60, batch 32,
-- SGD lr 0.01, momentum 0, wd 1e-5, Xavier(factor_type 'in', magnitude 2.34), 25 epochs,
-- Perplexity ignoring label 0; ids start at 1. Without --train-file it trains on the
-- shipped public-domain text (examples/data/devils_dictionary.txt, split into PTB-style
-- sentences by mx.datasets.ptb_lines; 90% train, the rest validation). A PTB-style file
-- has one sentence of space-separated words per line. It prints per epoch
--   Epoch[0] Train-perplexity=...     Epoch[0] Time cost=...     Epoch[0] Validation-perplexity=...
-- (Speedometer lines every --disp-batches batches) and ends with
--   final validation perplexity: <value>
-- falling epoch after epoch.
local common = dofile(((arg and arg[0] or ''):match('^(.-)[^/\\]*$') or '') .. 'common.lua')

local mx, args = common.setup{['num-layers'] = 2, ['num-hidden'] = 200, ['num-embed'] = 200,
  ['num-epochs'] = 25, lr = 0.01, mom = 0.0, wd = 0.00001, ['batch-size'] = 32,
  ['disp-batches'] = 50, ['kv-store'] = 'device', buckets = '10,20,30,40,50,60',
  ['vocab-size'] = 0, quick = false, seed = 1, ['train-file'] = '', ['valid-file'] = ''}
mx.random.seed(args.seed)

local buckets = {}
for b in args.buckets:gmatch('%d+') do buckets[#buckets + 1] = tonumber(b) end
local invalid_label, start_label = 0, 1

local function read_lines(path)
  local out = {}
  for line in io.lines(path) do
    if line:find('%S') then out[#out + 1] = line end
  end
  return out
end

local train_lines, valid_lines
if args['train-file'] ~= '' then
  train_lines = read_lines(args['train-file'])
  valid_lines = args['valid-file'] ~= '' and read_lines(args['valid-file']) or {}
else
  local vs = args['vocab-size'] > 0 and {vocab_size = args['vocab-size']} or nil
  local lines = mx.datasets.ptb_lines(nil, vs)
  local n_train = math.floor(#lines * 0.9)
  train_lines, valid_lines = {}, {}
  for i, l in ipairs(lines) do
    if i <= n_train then train_lines[#train_lines + 1] = l else valid_lines[#valid_lines + 1] = l end
  end
end
if args.quick then
  local function head(t, n) local o = {} for i = 1, math.min(n, #t) do o[i] = t[i] end return o end
  train_lines, valid_lines = head(train_lines, 400), head(valid_lines, 100)
end

local train_sent, vocab = mx.rnn.encode_sentences(mx.datasets.split_words(train_lines), nil,
  invalid_label, '\n', start_label)
local vocab_size = 0
for _ in pairs(vocab) do vocab_size = vocab_size + 1 end
-- validation words never seen in training map to '<unk>', which needs an id of its own
if vocab['<unk>'] == nil then vocab['<unk>'] = vocab_size; vocab_size = vocab_size + 1 end
local valid_sent = mx.rnn.encode_sentences(mx.datasets.split_words(valid_lines), vocab,
  invalid_label, '\n', start_label, '<unk>')
local bs = args['batch-size']
local data_train = mx.rnn.BucketSentenceIter(train_sent, bs, buckets, invalid_label)
local data_val = mx.rnn.BucketSentenceIter(valid_sent, bs, buckets, invalid_label)
print(('luamx %s: LSTM LM, %d training / %d validation sentences, vocabulary %d, buckets %s')
  :format(mx.__version__, #train_sent, #valid_sent, vocab_size, args.buckets))

local H, E, L = args['num-hidden'], args['num-embed'], args['num-layers']
-- Begin states are _zeros nodes, as in MXNet: their batch size is left to shape inference.

local function sym_gen(seq_len)
  local data = mx.sym.Variable('data')
  local label = mx.sym.Variable('softmax_label')
  local embed = mx.sym.Embedding{data = data, input_dim = vocab_size, output_dim = E, name = 'embed'}
  local stack = mx.rnn.SequentialRNNCell()
  for i = 0, L - 1 do stack:add(mx.rnn.LSTMCell(H, ('lstm_l%d_'):format(i))) end
  stack:reset()
  local outputs = stack:unroll(seq_len, embed, nil, 'NTC', true)
  local pred = mx.sym.Reshape{data = outputs, shape = {-1, H}}
  pred = mx.sym.FullyConnected{data = pred, num_hidden = vocab_size, name = 'pred'}
  label = mx.sym.Reshape{data = label, shape = {-1}}
  pred = mx.sym.SoftmaxOutput{data = pred, label = label, name = 'softmax'}
  return pred, {'data'}, {'softmax_label'}
end
local model = mx.mod.BucketingModule{sym_gen = sym_gen, default_bucket_key = data_train.default_bucket_key,
                                     context = mx.cpu()}
local tic = mx.callback.clock()
model:fit(data_train, {
  eval_data = data_val,
  eval_metric = mx.metric.Perplexity(invalid_label),
  kvstore = args['kv-store'],
  optimizer = 'sgd',
  optimizer_params = {learning_rate = args.lr, momentum = args.mom, wd = args.wd},
  initializer = mx.init.Xavier{factor_type = 'in', magnitude = 2.34},
  num_epoch = args['num-epochs'],
  batch_end_callback = mx.callback.Speedometer(bs, args['disp-batches'], false)})
local ppl = model:score(data_val, mx.metric.Perplexity(invalid_label))[1][2]
print(('final validation perplexity: %.2f (%d epochs, %.1f s)'):format(ppl, args['num-epochs'], mx.callback.clock() - tic))
