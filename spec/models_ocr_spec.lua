--- spec/models_ocr_spec.lua — mx.models.lstm_ocr, MXNet example/ctc's LSTM OCR network:
-- its structure and names, shapes at the example's input, the per-sequence CTC losses,
-- the softmax output and every gradient against the same network written out in PyTorch
-- with torch.nn.functional.ctc_loss (spec/models_seq_ref.py; pending without Debian's
-- python3-torch), and training on a small synthetic OCR task until greedy decoding reads
-- the labels.
local mx = require 'luamx'
local nd = mx.nd
local H = require 'helpers'

local src = os.getenv('LUAMX_SOURCE_DIR') or '.'

local function have_torch()
  return os.execute('/usr/bin/python3 -c "import torch" >/dev/null 2>&1') == 0
end

-- the input shapes: data (N, T, F), label (N, L), the initial states (N, H)
local function shapes(o, N, F)
  local s = {data = {N, o.seq_len, F}, label = {N, o.num_label}}
  for l = 0, o.num_lstm_layer - 1 do
    s[('l%d_init_c'):format(l)], s[('l%d_init_h'):format(l)] = {N, o.num_hidden}, {N, o.num_hidden}
  end
  return s
end

describe('mx.models.lstm_ocr', function()
  it('builds example/ctc\'s symbol: names, outputs, shapes at 80 x 30 images', function()
    local net = mx.models.lstm_ocr{}
    assert.same({'blockgrad0_output', 'makeloss0_output'}, net:list_outputs())
    local counts, names = {}, {}
    for op, name in net:tojson():gmatch('"op": "([^"]+)",%s*"name": "([^"]+)"') do
      counts[op] = (counts[op] or 0) + 1
      names[name] = op
    end
    assert.equal(80 * 2 * 2 + 1, counts.FullyConnected)
    assert.equal(80 * 2 * 5, counts.Activation)
    assert.equal(1 + 80 * 2, counts.SliceChannel)
    assert.equal(1, counts.CTCLoss)
    assert.equal('CTCLoss', names.ctc_loss0)
    assert.equal('FullyConnected', names.t79_l1_h2h)
    assert.equal('SliceChannel', names.t0_l0_slice)
    assert.equal('SoftmaxActivation', names.softmaxactivation0)
    local args = net:list_arguments()
    assert.same({'data', 'l0_i2h_weight', 'l0_i2h_bias', 'l0_init_h', 'l0_h2h_weight', 'l0_h2h_bias', 'l0_init_c'},
      {unpack(args, 1, 7)})
    local o = {num_lstm_layer = 2, seq_len = 80, num_hidden = 100, num_label = 4}
    local arg_shapes, out_shapes = net:infer_shape(shapes(o, 8, 30))
    assert.same({80 * 8, 11}, out_shapes[1])
    assert.same({8}, out_shapes[2])
    local idx = {}
    for i, n in ipairs(args) do idx[n] = i end
    assert.same({400, 30}, arg_shapes[idx.l0_i2h_weight])
    assert.same({400, 100}, arg_shapes[idx.l1_i2h_weight])
    assert.same({11, 100}, arg_shapes[idx.pred_fc_weight])
    -- the inference symbol ends in softmax over pred_fc, as lstm_unroll(loss_type=None)
    local infer = mx.models.lstm_ocr{loss_type = 'none'}
    assert.same({'softmax_output'}, infer:list_outputs())
    local json = net:tojson()
    assert.equal(json, mx.sym.load_json(json):tojson())
  end)

  it('rejects bad options', function()
    H.raises(function() mx.models.lstm_ocr{loss_type = 'warpctc'} end, 'mx.models.lstm_ocr', 'loss_type',
      'ctc, none', 'got warpctc')
    H.raises(function() mx.models.lstm_ocr{seq_len = 0} end, 'seq_len must be a positive integer', 'got 0')
  end)

  it('learns to read a synthetic strip of digits (greedy CTC decoding)', function()
    mx.random.seed(4)
    -- strips of T = 12 columns of 8 features: each of 2..3 digits (1..4) paints 3 columns
    -- with a pattern of its own, a blank column between digits; labels padded with 0
    local o = {num_lstm_layer = 1, seq_len = 12, num_hidden = 32, num_label = 3, num_classes = 5}
    local N, F = 48, 8
    local data, label = {}, {}
    for i = 1, N do
      data[i], label[i] = {}, {0, 0, 0}
      for t = 1, o.seq_len do data[i][t] = {} for f = 1, F do data[i][t][f] = 0 end end
      local n = 2 + i % 2
      for k = 1, n do
        local digit = 1 + (i * 3 + k * 5 + (i * k) % 3) % 4
        label[i][k] = digit
        for t = (k - 1) * 4 + 1, (k - 1) * 4 + 3 do
          for f = 1, F do data[i][t][f] = ((f + digit) % 4 == 0) and 1 or 0 end
        end
      end
    end
    local s = shapes(o, 16, F)
    local inputs = {data = nd.array(data)}
    for k, v in pairs(s) do
      if k:match('_init_') then inputs[k] = nd.zeros{N, v[2]} end -- the example feeds zero states
    end
    local it = mx.io.NDArrayIter{data = inputs, label = {label = nd.array(label)}, batch_size = 16}
    local names = {}
    for i, d in ipairs(it.provide_data) do names[i] = d.name end
    local mod = mx.mod.Module{symbol = mx.models.lstm_ocr(o), data_names = names, label_names = {'label'},
      logger = false}
    mod:bind{data_shapes = it.provide_data, label_shapes = it.provide_label}
    mod:init_params{initializer = mx.init.Xavier()}
    mod:init_optimizer{optimizer = 'adam', optimizer_params = {learning_rate = 0.02}}
    local function epoch(train)
      it:reset()
      local loss, right, total = 0, 0, 0
      for batch in it.next, it do
        if train then mod:forward_backward(batch) mod:update() else mod:forward(batch, false) end
        local out = mod:get_outputs()
        loss = loss + out[2]:sum():asscalar()
        -- greedy decoding: the best class per column, repeats merged, blanks dropped
        local prob = out[1]:toflat()
        local lab = batch.label[1]:toflat()
        for b = 0, 15 do
          local seq, prev = {}, 0
          for t = 0, o.seq_len - 1 do
            local row, best, arg = (t * 16 + b) * 5, -1, 0
            for c = 0, 4 do if prob[row + c + 1] > best then best, arg = prob[row + c + 1], c end end
            if arg ~= 0 and arg ~= prev then seq[#seq + 1] = arg end
            prev = arg
          end
          local want = {}
          for k = 1, 3 do local v = lab[b * 3 + k] if v ~= 0 then want[#want + 1] = v end end
          total = total + 1
          if table.concat(seq, ',') == table.concat(want, ',') then right = right + 1 end
        end
      end
      return loss / N, right / total
    end
    local first = epoch(true)
    for _ = 1, 59 do epoch(true) end
    local loss, acc = epoch(false)
    print(('  lstm_ocr: mean CTC loss %.3f after the first epoch, %.4f after 60; %.0f%% of strips read right')
      :format(first, loss, 100 * acc))
    assert.truthy(loss < first / 10, ('loss %.4f against %.4f'):format(loss, first))
    assert.truthy(acc >= 0.9, 'read right: ' .. acc)
  end)
end)

describe('mx.models.lstm_ocr against PyTorch', function()
  if not have_torch() then
    pending('PyTorch (Debian python3-torch) is not installed')
    return
  end

  local function write_case(dir, o, N, F, tamper)
    assert(os.execute('mkdir -p ' .. dir) == 0)
    local net = mx.models.lstm_ocr(o)
    mx.random.seed(23)
    local bind = {ctx = mx.cpu(), grad_req = 'write'}
    for k, v in pairs(shapes(o, N, F)) do bind[k] = v end
    local exe = net:simple_bind(bind)
    local f = assert(io.open(dir .. '/opts.txt', 'w'))
    f:write('model lstm_ocr\n')
    for k, v in pairs(o) do f:write(k, ' ', tostring(v), '\n') end
    f:close()
    for _, name in ipairs(exe:list_arguments()) do
      local a = exe.arg_dict[name]
      if name == 'label' then
        local lab = {}
        for i = 1, N do
          lab[i] = {}
          for k = 1, o.num_label do lab[i][k] = k <= 1 + i % o.num_label and 1 + (i * 7 + k * 3) % (o.num_classes - 1) or 0 end
        end
        a:set(nd.array(lab))
      else
        a:set(nd.random.uniform(-0.5, 0.5, a.shape))
      end
    end
    exe:forward{is_train = true}
    exe:backward()
    local w = H.array_writer(dir)
    for _, name in ipairs(exe:list_arguments()) do w.put('arg', name, exe.arg_dict[name]) end
    w.put('out', 'softmax', exe.outputs[1])
    w.put('loss', 'ctc', exe.outputs[2])
    local n = 0
    for _, name in ipairs(exe:list_arguments()) do
      if name ~= 'data' and name ~= 'label' and not name:match('_init_') then
        local g = exe.grad_dict[name]
        w.put('grad', name, name == tamper and g * 1.01 or g)
        n = n + 1
      end
    end
    w.close()
    return n
  end

  local cases = {
    {'2 layers, 9 steps, 4 labels, 11 classes', {num_lstm_layer = 2, seq_len = 9, num_hidden = 6, num_label = 4,
      num_classes = 11, loss_type = 'ctc'}, 3, 5},
    {'1 layer, 14 steps, labels up to 3 long', {num_lstm_layer = 1, seq_len = 14, num_hidden = 5, num_label = 3,
      num_classes = 6, loss_type = 'ctc'}, 4, 3},
    {'control: one gradient scaled by 1.01', {num_lstm_layer = 1, seq_len = 14, num_hidden = 5, num_label = 3,
      num_classes = 6, loss_type = 'ctc'}, 4, 3, 'l0_h2h_weight'},
  }
  local results, counts, text = {}, {}, ''
  setup(function()
    local root = os.tmpname()
    os.remove(root)
    local dirs = {}
    for i, c in ipairs(cases) do
      dirs[i] = ('%s/case%d'):format(root, i)
      counts[i] = write_case(dirs[i], c[2], c[3], c[4], c[5])
    end
    local p = io.popen(('/usr/bin/python3 %s/spec/models_seq_ref.py %s 2>&1'):format(src, table.concat(dirs, ' ')))
    text = p:read('*a')
    p:close()
    os.execute('rm -rf ' .. root)
    for i, d in ipairs(dirs) do
      local pat = d:gsub('%p', '%%%0')
      results[i] = {}
      for kind, name, err, ref in text:gmatch('cmp ' .. pat .. ' (%a+) (%S+) (%S+) (%S+)') do
        results[i][kind .. ' ' .. name] = {tonumber(err) or math.huge, tonumber(ref) or 0}
      end
    end
  end)

  local function check(label, res, n)
    assert.truthy(res['out softmax'] and res['loss ctc'], label .. ': nothing compared: ' .. text)
    local worst, at, ngrad = 0, nil, 0
    for key, r in pairs(res) do
      local rel = r[1] / math.max(r[2], 1e-12)
      if rel > worst then worst, at = rel, key end
      if key:match('^grad ') then ngrad = ngrad + 1 end
    end
    assert.equal(n, ngrad)
    print(('  %s: losses, softmax and %d gradients, worst relative difference %.2g (%s)'):format(label, ngrad, worst, at))
    assert(worst < 1e-4, ('%s: %s differs from PyTorch by %.3g of its largest value'):format(label, at, worst))
  end

  for i, c in ipairs(cases) do
    it(c[1], function()
      if c[5] then
        H.raises(function() check(c[1], results[i], counts[i]) end, 'grad ' .. c[5], 'differs from PyTorch')
      else
        check(c[1], results[i], counts[i])
      end
    end)
  end
end)
