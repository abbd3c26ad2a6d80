--- luamx.viz — mx.viz: networks drawn with Graphviz, layer summaries, training curves.
--
--   mx.viz.print_summary(net, {data = {1, 784}})   -- layers, output shapes, parameters
--   mx.viz.plot_metrics(rec, 'curve.png')          -- a LogMetrics recorder, via gnuplot
--
--   local g = mx.viz.plot_network(net, {shape = {data = {1, 1, 28, 28}}})
--   print(g)                -- the DOT source
--   g:save('net.dot')       -- write the source
--   g:render('net', 'svg')  -- net.svg through Graphviz's `dot`, when installed
--
-- The graph is read from the symbol's MXNet JSON (decoded with lua-cjson), so what is
-- drawn is exactly what would be saved. Nodes are coloured by operator family as in
-- MXNet's plot_network; parameters (variables named *_weight, *_bias, *_gamma, *_beta,
-- *_moving_mean, *_moving_var) are hidden unless hide_weights = false; with `shape`,
-- every edge is labelled with the shape flowing along it (batch axis included).
local capi = require 'luamx.capi'
local raise = capi.raise

local M = {}

local PALETTE = {
  '#8dd3c7', '#fb8072', '#ffffb3', '#bebada', '#80b1d3', '#fdb462', '#b3de69', '#fccde5',
}
local FAMILY = {
  null = 1, FullyConnected = 2, Convolution = 2, Deconvolution = 2, Activation = 3,
  LeakyReLU = 3, BatchNorm = 4, LayerNorm = 4, Pooling = 5, Concat = 6, Flatten = 6,
  Reshape = 6, SliceChannel = 6, SoftmaxOutput = 7, softmax = 7, log_softmax = 7,
}

local PARAM_SUFFIXES = {'_weight', '_bias', '_gamma', '_beta', '_moving_mean', '_moving_var',
                        '_parameters', '_state', '_state_cell'}

local function is_param(name)
  for _, s in ipairs(PARAM_SUFFIXES) do
    if #name > #s and name:sub(-#s) == s then return true end
  end
  return false
end

local function tuple_text(s)
  if not s then return nil end
  return (s:gsub('[%(%)%[%] ]', ''):gsub(',', 'x'))
end

-- The label MXNet gives each kind of node: the op and its key parameters.
local function label_of(node)
  local a, op = node.attrs or node.param or {}, node.op
  if op == 'null' then return node.name end
  if op == 'FullyConnected' then return ('FullyConnected\n%s'):format(a.num_hidden or '') end
  if op == 'Convolution' or op == 'Deconvolution' then
    return ('%s\n%s/%s, %s'):format(op, tuple_text(a.kernel) or '', tuple_text(a.stride) or '1',
                                    a.num_filter or '')
  end
  if op == 'Pooling' then
    if a.global_pool == 'True' then return ('Pooling\nglobal %s'):format(a.pool_type or 'max') end
    return ('Pooling\n%s, %s/%s'):format(a.pool_type or 'max', tuple_text(a.kernel) or '',
                                         tuple_text(a.stride) or '1')
  end
  if op == 'Activation' or op == 'LeakyReLU' then
    return ('%s\n%s'):format(op, a.act_type or 'leaky')
  end
  return op .. '\n' .. node.name
end

local function quote(s) return '"' .. tostring(s):gsub('\\', '\\\\'):gsub('"', '\\"'):gsub('\n', '\\n') .. '"' end

-- Shapes of every node output, keyed "<node>_output" names from the internals.
local function shapes_of(sym, shape)
  local internals = sym:get_internals()
  local ok, _, outs = pcall(internals.infer_shape, internals, shape)
  if not ok then raise('plot_network: cannot infer shapes from the given shape table: ' .. tostring(_)) end
  local by_name = {}
  for i, name in ipairs(internals:list_outputs()) do by_name[name] = outs[i] end
  return by_name
end

local Graph = {}
Graph.__index = Graph
Graph.__tostring = function(g) return g.source end

--- Writes the DOT source to `path` (through a temporary file); returns path.
function Graph:save(path)
  local tmp = path .. '.tmp'
  local f, err = io.open(tmp, 'wb')
  if not f then raise('plot_network: cannot write ' .. path .. ': ' .. tostring(err)) end
  f:write(self.source)
  f:close()
  local ok, rerr = os.rename(tmp, path)
  if not ok then os.remove(tmp) raise('plot_network: cannot write ' .. path .. ': ' .. tostring(rerr)) end
  return path
end

--- Renders through Graphviz's dot into <path>.<format>; returns that file name.
function Graph:render(path, format)
  format = format or 'svg'
  if not format:match('^%w+$') then raise('render: bad format ' .. tostring(format)) end
  local src = self:save(path .. '.dot')
  local out = path .. '.' .. format
  local ok = os.execute(('dot -T%s %q -o %q 2>/dev/null'):format(format, src, out))
  if ok ~= true and ok ~= 0 then
    raise('render: Graphviz `dot` failed or is not installed (apt-get install graphviz); the source is in ' .. src)
  end
  return out
end

--- mx.viz.plot_network(sym [, {shape=, title=, hide_weights=, node_attrs=}]) -> Graph
function M.plot_network(sym, opts)
  local symmod = require 'luamx.symbol'
  if not symmod.is_symbol or not symmod.is_symbol(sym) then
    raise('plot_network: expected a Symbol, got ' .. type(sym))
  end
  opts = opts or {}
  local okc, cjson = pcall(require, 'cjson')
  if not okc then raise('plot_network needs lua-cjson (apt-get install lua-cjson)') end
  local graph = cjson.decode(sym:tojson())
  local hide = opts.hide_weights ~= false
  local shapes = opts.shape and shapes_of(sym, opts.shape) or nil
  local lines = {('digraph %s {'):format(quote(opts.title or 'plot')),
                 '  node [shape=box, style="rounded,filled", fixedsize=false, fontsize=10];'}
  for k, v in pairs(opts.node_attrs or {}) do lines[#lines + 1] = ('  node [%s=%s];'):format(k, quote(v)) end
  local hidden = {}
  for i, node in ipairs(graph.nodes) do
    if node.op == 'null' and hide and is_param(node.name) then
      hidden[i - 1] = true
    else
      local colour = PALETTE[FAMILY[node.op] or 8]
      local shape = node.op == 'null' and 'oval' or 'box'
      lines[#lines + 1] = ('  n%d [label=%s, fillcolor=%s, shape=%s];'):format(
        i - 1, quote(label_of(node)), quote(colour), shape)
    end
  end
  for i, node in ipairs(graph.nodes) do
    for _, input in ipairs(node.inputs or {}) do
      local src = input[1]
      if not hidden[src] then
        local attrs = 'dir=back, arrowtail=open'
        if shapes then
          local from = graph.nodes[src + 1]
          local key = from.op == 'null' and from.name or (from.name .. '_output')
          local s = shapes[key] or shapes[from.name .. '_output' .. (input[2] or 0)]
          if s then attrs = attrs .. ', label=' .. quote(table.concat(s, 'x')) end
        end
        lines[#lines + 1] = ('  n%d -> n%d [%s];'):format(i - 1, src, attrs)
      end
    end
  end
  lines[#lines + 1] = '}'
  return setmetatable({source = table.concat(lines, '\n') .. '\n'}, Graph)
end

-- ------------------------------------------------------------------ print_summary --
--- mx.viz.print_summary(sym [, shape [, {out = file, line_length = 98}]]): MXNet's layer
--- table: each operator with its output shape, parameter count and input layers, then
--- the total. `shape` ({data = {1, 784}}) gives the shapes and the parameter counts;
--- without it those columns stay empty. Returns the total parameter count.
-- @param sym a Symbol
-- @param shape input shapes by name (optional)
-- @param opts `out` (default io.stdout), `line_length`
-- @usage mx.viz.print_summary(net, {data = {1, 1, 28, 28}})
function M.print_summary(sym, shape, opts)
  local symmod = require 'luamx.symbol'
  if not symmod.is_symbol(sym) then raise('print_summary: expected a Symbol, got ' .. type(sym)) end
  opts = opts or {}
  local out = opts.out or io.stdout
  local okc, cjson = pcall(require, 'cjson')
  if not okc then raise('print_summary needs lua-cjson (apt-get install lua-cjson)') end
  local graph = cjson.decode(sym:tojson())
  local shapes, arg_shapes = nil, {}
  if shape then
    shapes = shapes_of(sym, shape)
    local ok, a = pcall(sym.infer_shape, sym, shape)
    if ok then
      for i, n in ipairs(sym:list_arguments()) do arg_shapes[n] = a[i] end
      local okx, _, _, aux = pcall(sym.infer_shape, sym, shape)
      if okx then for i, n in ipairs(sym:list_auxiliary_states()) do arg_shapes[n] = aux[i] end end
    end
  end
  local widths = {40, 22, 12}
  local total_w = opts.line_length or 98
  local function row(a, b, c, d)
    return ('%-' .. widths[1] .. 's%-' .. widths[2] .. 's%-' .. widths[3] .. 's%s'):format(a, b, c, d)
  end
  local lines = {('_'):rep(total_w), row('Layer (type)', 'Output Shape', 'Param #', 'Previous Layer'),
    ('='):rep(total_w)}
  local total = 0
  local function count(s)
    if not s then return 0 end
    local n = 1
    for _, d in ipairs(s) do n = n * d end
    return n
  end
  for _, node in ipairs(graph.nodes) do
    if node.op ~= 'null' then
      local params, prev = 0, {}
      for _, input in ipairs(node.inputs or {}) do
        local src = graph.nodes[input[1] + 1]
        if src.op == 'null' and is_param(src.name) then
          params = params + count(arg_shapes[src.name])
        else
          prev[#prev + 1] = src.name
        end
      end
      total = total + params
      local s = shapes and shapes[node.name .. '_output']
      lines[#lines + 1] = row(('%s(%s)'):format(node.name, node.op), s and table.concat(s, 'x') or '',
        shapes and tostring(params) or '', table.concat(prev, ', '))
      lines[#lines + 1] = ('_'):rep(total_w)
    end
  end
  lines[#lines + 1] = ('Total params: %d'):format(total)
  lines[#lines + 1] = ('_'):rep(total_w)
  out:write(table.concat(lines, '\n'), '\n')
  return total
end

-- ------------------------------------------------------------------ plot_metrics ---
local function gnuplot_available()
  local ok = os.execute('command -v gnuplot >/dev/null 2>&1')
  return ok == true or ok == 0
end
M.gnuplot_available = gnuplot_available

local function sorted_names(rows, field)
  local seen, names = {}, {}
  for _, r in ipairs(rows) do
    for k in pairs(r[field] or {}) do
      if not seen[k] then seen[k] = true; names[#names + 1] = k end
    end
  end
  table.sort(names)
  return names
end

local function fmt(v) return v ~= v and 'NaN' or ('%.10g'):format(v) end

--- mx.viz.plot_metrics(rec, path [, {title =, gnuplot = 'gnuplot'}]): draws the metrics a
--- mx.callback.LogMetrics recorder holds, one panel per metric name, training (per
--- epoch, and per N batches when recorded) and validation against the epoch, into
--- `path` (.png, or .svg). Uses gnuplot; without it raises an error that says so.
--- The data and script files are written next to `path` (path .. '.dat', '.gp') so
--- the plot can be redrawn or restyled. Returns path.
-- @param rec a recorder from mx.callback.LogMetrics (or a table with `epochs`)
-- @param path output file, ending in .png or .svg
-- @param opts `title`, `gnuplot` (the command)
-- @usage mx.viz.plot_metrics(rec, 'curve.png')
function M.plot_metrics(rec, path, opts)
  opts = opts or {}
  if type(rec) ~= 'table' or type(rec.epochs) ~= 'table' then
    raise('plot_metrics: expected a recorder from mx.callback.LogMetrics, got ' .. type(rec))
  end
  if type(path) ~= 'string' then raise('plot_metrics: path must be a string, got ' .. type(path)) end
  local ext = path:match('%.(%w+)$')
  local term = ({png = 'pngcairo size 900,%d font ",10"', svg = 'svg size 900,%d dynamic font "sans,10"'})[ext and ext:lower()]
  if not term then raise('plot_metrics: ' .. path .. ': the file name must end in .png or .svg') end
  if #rec.epochs == 0 then raise('plot_metrics: nothing recorded (was the recorder passed to fit?)') end
  local cmd = opts.gnuplot or 'gnuplot'
  if not opts.gnuplot and not M.gnuplot_available() then
    raise('plot_metrics: gnuplot is not installed (apt-get install gnuplot-nox); the metrics are in the recorder\'s epochs table')
  end
  local names = sorted_names(rec.epochs, 'train')
  for _, n in ipairs(sorted_names(rec.epochs, 'validation')) do
    local found = false
    for _, m in ipairs(names) do found = found or m == n end
    if not found then names[#names + 1] = n end
  end
  -- data: one block per metric (epoch-level rows: x train validation), then batch rows
  local data = {}
  for _, n in ipairs(names) do
    data[#data + 1] = '# ' .. n .. ': epoch train validation'
    for _, r in ipairs(rec.epochs) do
      local t, v = r.train[n], r.validation[n]
      data[#data + 1] = ('%d %s %s'):format(r.epoch + 1, t and fmt(t) or 'NaN', v and fmt(v) or 'NaN')
    end
    data[#data + 1] = '\n'
  end
  local per = rec.batches_per_epoch and rec.batches_per_epoch()
  local has_batches = rec.batches and #rec.batches > 0 and per
  for _, n in ipairs(names) do
    data[#data + 1] = '# ' .. n .. ' per batch: epoch train'
    for _, b in ipairs(rec.batches or {}) do
      if b.train[n] and per then data[#data + 1] = ('%s %s'):format(fmt(b.epoch + b.nbatch / per), fmt(b.train[n])) end
    end
    data[#data + 1] = 'NaN NaN\n'
  end
  local dat, gp = path .. '.dat', path .. '.gp'
  local f, err = io.open(dat, 'w')
  if not f then raise('plot_metrics: cannot write ' .. dat .. ': ' .. tostring(err)) end
  f:write(table.concat(data, '\n'), '\n')
  f:close()
  local k = #names
  local script = {
    ('set terminal ' .. term):format(300 * k),
    ('set output %q'):format(path),
    ('set multiplot layout %d,1 title %q'):format(k, opts.title or 'training curve'),
    'set grid', 'set key outside right', 'set xlabel "epoch"', 'set style data linespoints',
  }
  for i, n in ipairs(names) do
    script[#script + 1] = ('set ylabel %q'):format(n)
    local parts = {}
    if has_batches then
      parts[#parts + 1] = ('%q index %d using 1:2 with lines lc rgb "#9ecae1" title "train (per %d batches)"'):format(
        dat, k + i - 1, rec.every)
    end
    parts[#parts + 1] = ('%q index %d using 1:2 lc rgb "#1f77b4" pt 7 title "train"'):format(dat, i - 1)
    parts[#parts + 1] = ('%q index %d using 1:3 lc rgb "#d62728" pt 5 title "validation"'):format(dat, i - 1)
    script[#script + 1] = 'plot ' .. table.concat(parts, ', ')
  end
  script[#script + 1] = 'unset multiplot'
  f, err = io.open(gp, 'w')
  if not f then raise('plot_metrics: cannot write ' .. gp .. ': ' .. tostring(err)) end
  f:write(table.concat(script, '\n'), '\n')
  f:close()
  local ok = os.execute(('%s %q 2>%q'):format(cmd, gp, path .. '.log'))
  if ok ~= true and ok ~= 0 then
    local lf = io.open(path .. '.log')
    local log = lf and lf:read('*a') or ''
    if lf then lf:close() end
    raise(('plot_metrics: %s failed on %s: %s'):format(cmd, gp, log:gsub('%s+$', '')))
  end
  os.remove(path .. '.log')
  return path
end

--- Adds mx.viz.
function M.install(mx) mx.viz = M end

return M
