--- spec/everyday_spec.lua — the everyday-use fixes of the REPL issue: fit's return value,
--- the exhausted-iterator warning, unknown optimizer options, forward(is_train, inputs),
--- the progress bar's frames, LogMetrics and print_summary.
local mx = require 'luamx'
local H = require 'helpers'

local function toy()
  mx.random.seed(3)
  local data = mx.nd.random.uniform(0, 1, {60, 4})
  local lbl = {}
  for i, v in ipairs(data:sum {axis = 1}:toflat()) do lbl[i] = v > 2 and 1 or 0 end
  local net = mx.sym.SoftmaxOutput {name = 'softmax',
    data = mx.sym.FullyConnected {data = mx.sym.Variable('data'), num_hidden = 2, name = 'fc'}}
  local function it() return mx.io.NDArrayIter {data = data, label = mx.nd.array(lbl), batch_size = 20} end
  return net, it
end

local function quiet_module(net, logs)
  return mx.mod.Module {symbol = net, logger = function(level, msg) logs[#logs + 1] = level .. ' ' .. msg end}
end

describe('fit', function()
  it('returns the last epoch\'s training and validation metrics', function()
    local net, it = toy()
    local logs = {}
    local mod = quiet_module(net, logs)
    local res = mod:fit(it(), {num_epoch = 2, eval_data = it(), optimizer_params = {learning_rate = 0.3}})
    assert.are.equal(1, res.epoch)
    assert.is_number(res.train.accuracy)
    assert.is_number(res.validation.accuracy)
    local logged = logs[#logs]:match('Validation%-accuracy=([%d.]+)')
    assert.is_truthy(logged)
    assert.is_true(math.abs(tonumber(logged) - res.validation.accuracy) < 1e-6)
  end)

  it('warns when the training iterator is exhausted', function()
    local net, it = toy()
    local train = it()
    for _ in train do end
    local logs = {}
    local mod = quiet_module(net, logs)
    mod:fit(train, {num_epoch = 1})
    local found = false
    for _, l in ipairs(logs) do found = found or l:find('warning Epoch[0]: the training iterator gave no batch', 1, true) ~= nil end
    assert.is_true(found, table.concat(logs, '\n'))
  end)

  it('rejects an unknown optimizer option, naming it and the known ones', function()
    local net, it = toy()
    local mod = quiet_module(net, {})
    H.raises(function() mod:fit(it(), {num_epoch = 1, optimizer_params = {learning_rate = 0.1, momentun = 0.9}}) end,
      'mx.optimizer.sgd: unknown option momentun', 'momentum')
    H.raises(function() mx.optimizer.create('adam', {beta = 0.9}) end, 'mx.optimizer.adam: unknown option beta', 'beta1')
    assert.is_truthy(mx.optimizer.create('sgd', {momentum = 0.9, multi_precision = false}))
  end)
end)

describe('Executor:forward(is_train, inputs)', function()
  it('copies the inputs in, as Python\'s exe.forward(is_train, data=x)', function()
    local x = mx.sym.Variable('x')
    local exe = (x * 2):simple_bind {x = {2}}
    local out = exe:forward(false, {x = mx.nd.array {1, 2}})
    assert.are.same({2, 4}, out[1]:totable())
    out = exe:forward(true, {x = mx.nd.array {3, 4}})
    assert.are.same({6, 8}, out[1]:totable())
    H.raises(function() exe:forward(false, 5) end, 'forward: the second argument must be a table of inputs')
    H.raises(function() exe:forward(false, {y = mx.nd.array {1, 2}}) end, 'y')
  end)
end)

describe('ProgressBar', function()
  local function capture(total, tty, batches)
    local buf = {}
    local out = {write = function(_, ...) for _, s in ipairs {...} do buf[#buf + 1] = s end end, flush = function() end}
    local cb = mx.callback
    local clock, t = cb.clock, 0
    cb.clock = function() t = t + 0.5; return t end
    local bar = cb.ProgressBar(total, 10, {out = out, tty = tty})
    local m = mx.metric.create('acc')
    for n = 1, batches do bar {epoch = 0, nbatch = n, eval_metric = m} end
    cb.clock = clock
    return table.concat(buf)
  end

  it('redraws in place on a terminal, clears stale text and ends with the total time', function()
    local s = capture(4, true, 4)
    local frames = {}
    for f in s:gmatch('\r([^\r]*)') do frames[#frames + 1] = f end
    assert.are.equal(4, #frames)
    for _, f in ipairs(frames) do assert.is_truthy(f:find('\27[K', 1, true), f) end
    assert.is_truthy(frames[2]:find('ETA', 1, true))
    assert.is_truthy(frames[4]:find('[==========] 100% 4/4', 1, true), frames[4])
    assert.is_truthy(frames[4]:find(' in 0:00:0', 1, true), frames[4])
    assert.is_falsy(frames[4]:find('ETA', 1, true))
    assert.are.equal('\n', s:sub(-1))
  end)

  it('writes plain lines at each tenth without a terminal', function()
    local s = capture(20, false, 20)
    assert.is_falsy(s:find('\r', 1, true))
    local n = 0
    for _ in s:gmatch('\n') do n = n + 1 end
    assert.are.equal(11, n)
  end)
end)

describe('LogMetrics and print_summary', function()
  it('records train and validation metrics per epoch and per N batches', function()
    local net, it = toy()
    local rec = mx.callback.LogMetrics {every = 1}
    local mod = quiet_module(net, {})
    mod:fit(it(), {num_epoch = 2, eval_data = it(), batch_end_callback = rec.batch_end_callback,
      eval_end_callback = rec.eval_end_callback})
    assert.are.equal(2, #rec.epochs)
    assert.is_number(rec.epochs[2].train.accuracy)
    assert.is_number(rec.epochs[2].validation.accuracy)
    assert.are.equal(6, #rec.batches)
    H.raises(function() mx.callback.LogMetrics {every = 0} end, 'every must be a positive number')
    H.raises(function() mx.viz.plot_metrics(rec, 'x.jpg') end, 'must end in .png or .svg')
    H.raises(function() mx.viz.plot_metrics(mx.callback.LogMetrics(), 'x.png') end, 'nothing recorded')
  end)

  it('print_summary lists layers, shapes and parameter counts', function()
    local net = toy()
    local lines = {}
    local out = {write = function(_, ...) for _, s in ipairs {...} do lines[#lines + 1] = s end end}
    local total = mx.viz.print_summary(net, {data = {20, 4}}, {out = out})
    assert.are.equal(10, total)
    local text = table.concat(lines)
    assert.is_truthy(text:find('fc(FullyConnected)', 1, true))
    assert.is_truthy(text:find('20x2', 1, true))
    assert.is_truthy(text:find('Total params: 10', 1, true))
    H.raises(function() mx.viz.print_summary(5) end, 'print_summary: expected a Symbol')
  end)
end)

local has_gnuplot = mx.viz.gnuplot_available()
local describe_plot = has_gnuplot and describe or pending

describe_plot('training-curve plots (gnuplot)', function()
  it('fit{plot = path} writes a PNG, and plot_metrics an SVG, of a short fit', function()
    local net, it = toy()
    local png = os.tmpname() .. '.png'
    local mod = quiet_module(net, {})
    mod:fit(it(), {num_epoch = 3, eval_data = it(), plot = {path = png, every = 1}})
    local f = assert(io.open(png, 'rb'))
    local bytes = f:read('*a')
    f:close()
    assert.are.equal('\137PNG\r\n\26\n', bytes:sub(1, 8))
    assert.is_true(#bytes > 2000)
    -- the data file holds the three epochs' train and validation accuracies
    local dat = io.open(png .. '.dat'):read('*a')
    assert.is_truthy(dat:find('# accuracy: epoch train validation\n1 [%d.]+ [%d.]+\n2 [%d.]+ [%d.]+\n3 [%d.]+ [%d.]+'), dat)
    local rec = mx.callback.LogMetrics()
    mod:fit(it(), {num_epoch = 2, eval_data = it(), batch_end_callback = rec.batch_end_callback,
      eval_end_callback = rec.eval_end_callback, force_init = true})
    local svg = os.tmpname() .. '.svg'
    assert.are.equal(svg, rec:plot(svg))
    local text = io.open(svg):read('*a')
    assert.is_truthy(text:find('<svg', 1, true))
    assert.is_truthy(text:find('validation', 1, true))
    for _, p in ipairs {png, png .. '.dat', png .. '.gp', svg, svg .. '.dat', svg .. '.gp'} do os.remove(p) end
  end)
end)

describe('plot_metrics without gnuplot', function()
  it('says that gnuplot is missing and how to install it', function()
    local rec = {epochs = {{epoch = 0, train = {accuracy = 0.5}, validation = {}}}}
    local saved = mx.viz.gnuplot_available
    mx.viz.gnuplot_available = function() return false end
    local ok, err = pcall(mx.viz.plot_metrics, rec, os.tmpname() .. '.png')
    mx.viz.gnuplot_available = saved
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find('gnuplot is not installed (apt-get install gnuplot-nox)', 1, true), err)
  end)
end)

describe('REPL summaries of executors and modules', function()
  it('show bound shapes, memory, parameter counts and the optimizer', function()
    local pretty = require 'luamx.repl.pretty'
    local net = toy()
    local exe = net:simple_bind {data = {4, 4}}
    local s = pretty.format(exe)
    assert.is_truthy(s:find('arguments: data(4x4), fc_weight(2x4), fc_bias(2), softmax_label(4)', 1, true), s)
    assert.is_truthy(s:find('memory:', 1, true), s)
    local mod = mx.mod.Module {symbol = net, logger = false}
    assert.is_truthy(pretty.format(mod):find('bound: false', 1, true))
    mod:bind {data_shapes = {{'data', {4, 4}}}, label_shapes = {{'softmax_label', {4}}}}
    mod:init_params()
    mod:init_optimizer {optimizer_params = {learning_rate = 0.1}}
    s = pretty.format(mod)
    assert.is_truthy(s:find('parameters: 10 in 2 arrays', 1, true), s)
    assert.is_truthy(s:find('optimizer: sgd(learning_rate=0.1', 1, true), s)
  end)
end)

describe('examples on the command line', function()
  local SRC = os.getenv('LUAMX_SOURCE_DIR') or '.'
  local function run(args)
    local p = io.popen(('{ luajit %s/examples/%s; echo "rc=$?"; } 2>&1'):format(SRC, args))
    local out = p:read('*a')
    p:close()
    return out
  end

  it('answer --help with the usage, and a bad option with the usage and status 2', function()
    for _, ex in ipairs {'mnist_mlp.lua', 'lenet.lua', 'lstm_bucketing.lua', 'multi_device.lua'} do
      local out = run(ex .. ' --help')
      assert.is_truthy(out:find('options (default in brackets):', 1, true), out)
      assert.is_truthy(out:find('--num-epochs VALUE', 1, true), out)
      assert.is_truthy(out:find('rc=0', 1, true), out)
      out = run(ex .. ' --bogus')
      assert.is_truthy(out:find('unknown option --bogus', 1, true), out)
      assert.is_truthy(out:find('rc=2', 1, true), out)
      assert.is_falsy(out:find('stack traceback', 1, true), out)
    end
    local out = run('mnist_mlp.lua --num-epochs many')
    assert.is_truthy(out:find('option --num-epochs needs a number, got "many"', 1, true), out)
  end)
end)

local has_dot = io.popen('command -v dot || true'):read('*a'):match('%S')
local describe_dot = has_dot and describe or pending

describe_dot('plot_network with Graphviz', function()
  it('renders PNG and SVG files', function()
    local net = mx.sym.SoftmaxOutput {name = 'softmax',
      data = mx.sym.FullyConnected {data = mx.sym.Variable('data'), num_hidden = 2, name = 'fc'}}
    local g = mx.viz.plot_network(net, {shape = {data = {1, 4}}})
    local base = os.tmpname()
    local png = g:render(base, 'png')
    local bytes = io.open(png, 'rb'):read('*a')
    assert.are.equal('\137PNG', bytes:sub(1, 4))
    local svg = g:render(base, 'svg')
    assert.is_truthy(io.open(svg):read('*a'):find('FullyConnected', 1, true))
    for _, p in ipairs {png, svg, base .. '.dot', base} do os.remove(p) end
  end)
end)
