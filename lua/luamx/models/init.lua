--- luamx.models — mx.models: builders for MXNet's classic symbol zoo (MXNet 1.9's
-- example/image-classification/symbols), each giving the symbol MXNet's Python builder
-- gives: the same operators in the same order, node and parameter names, attributes.
--
--   local net = mx.models.resnet{num_layers = 50}              -- ResNet-50 v2, ImageNet
--   local cifar = mx.models.resnet{num_layers = 20, num_classes = 10, image_shape = {3, 28, 28}}
--   print(mx.models.num_params(net, {data = {1, 3, 224, 224}}))
--
-- Builders take one table of options (unknown options are errors) and run in a fresh
-- name scope (luamx.models.common), so the automatic names (`_plus0`, `flatten0`) match a
-- fresh MXNet process whatever was built before.
-- luamx.lua loads this file as 'luamx.models.init'.
local raise = require('luamx.capi').raise

local M = {}

local sources = {'luamx.models.resnet', 'luamx.models.mobilenet', 'luamx.models.classic',
  'luamx.models.inception', 'luamx.models.inception_v3',
  'luamx.models.densenet', 'luamx.models.squeezenet', 'luamx.models.ssd', 'luamx.models.seq',
  'luamx.models.ocr'}

--- Adds mx.models: the builders, `list`, `get_symbol` and `num_params`.
-- @param mx the luamx module table
function M.install(mx)
  local models = {}
  local names = {}
  for _, src in ipairs(sources) do
    for name, fn in pairs(require(src).make(mx)) do
      models[name] = fn
      names[#names + 1] = name
    end
  end
  table.sort(names)

  --- The names of the builders, sorted.
  -- @return a list of strings
  function models.list()
    local out = {}
    for i, n in ipairs(names) do out[i] = n end
    return out
  end

  --- Builds the network `name` (one of `mx.models.list()`) with options `opts`.
  -- @param name the builder's name, e.g. 'resnet'
  -- @param opts the builder's options (a table, may be nil)
  -- @return the network's symbol
  -- @usage local net = mx.models.get_symbol('vgg', {num_layers = 11})
  function models.get_symbol(name, opts)
    local fn = type(name) == 'string' and name ~= 'list' and name ~= 'get_symbol'
      and name ~= 'num_params' and models[name]
    if not fn then
      raise(('mx.models.get_symbol: name must be one of %s, got %s'):format(
        table.concat(names, ', '), tostring(name)))
    end
    return fn(opts)
  end

  --- Counts the learnable parameters and auxiliary states of `sym` at the input shapes
  -- `shapes`: every argument except those named in `shapes` and those ending in `_label`.
  -- @param sym a symbol
  -- @param shapes the input shapes, e.g. `{data = {1, 3, 224, 224}}`
  -- @return the number of learnable parameters, the number of auxiliary-state elements
  -- @usage local n = mx.models.num_params(net, {data = {1, 3, 224, 224}})
  function models.num_params(sym, shapes)
    if type(shapes) ~= 'table' then
      raise('mx.models.num_params: shapes must be a table of input shapes, got ' .. type(shapes))
    end
    local arg_shapes, _, aux_shapes = sym:infer_shape(shapes)
    if not arg_shapes then
      raise('mx.models.num_params: the shapes given do not determine every argument\'s shape')
    end
    local function count(list) local n = 1 for _, d in ipairs(list) do n = n * d end return n end
    local params, aux = 0, 0
    for i, name in ipairs(sym:list_arguments()) do
      if shapes[name] == nil and not name:match('_label$') then params = params + count(arg_shapes[i]) end
    end
    for _, s in ipairs(aux_shapes) do aux = aux + count(s) end
    return params, aux
  end

  mx.models = models
  return models
end

return M
