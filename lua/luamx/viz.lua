--- luamx.viz — mx.viz.plot_network: a network as Graphviz text, as MXNet draws it.
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

function M.install(mx) mx.viz = M end

return M
