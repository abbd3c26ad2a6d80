--- luamx.repl.pretty — how the REPL shows values.
--
--   pretty.format(value, {color = true, depth = 3, items = 30}) -> string
--
-- Objects with a __tostring (NDArray, Symbol, Executor, Module, Context, ...) print
-- through it: an NDArray elides large arrays with `...` and ends with its
-- shape/dtype/context footer, a Symbol shows its name, op, outputs and arguments.
-- Plain tables print as Lua constructors, nested up to `depth` levels and `items`
-- entries per table (then `...` and the count), with cycles shown as <cycle>.
-- Colours (ANSI) only when `color` is true: the REPL passes true on a terminal and
-- never into a pipe.
local M = {}

local COL = {number = '36', string = '32', boolean = '35', ['nil'] = '35',
             ['function'] = '33', footer = '2', key = '0', err = '31'}

local function paint(s, kind, color)
  if not color or not COL[kind] then return s end
  return '\27[' .. COL[kind] .. 'm' .. s .. '\27[0m'
end
M.paint = paint

local function num(v)
  if v % 1 == 0 and math.abs(v) < 2 ^ 53 then return ('%d'):format(v) end
  return ('%.14g'):format(v)
end

local function is_ident(k)
  return type(k) == 'string' and k:match('^[%a_][%w_]*$') ~= nil
end

local function head_op(s)
  local okj, cjson = pcall(require, 'cjson')
  if not okj then return nil end
  local ok, g = pcall(cjson.decode, s:tojson())
  if not ok or type(g) ~= 'table' or not g.heads or not g.nodes then return nil end
  local ops = {}
  for _, h in ipairs(g.heads) do
    local node = g.nodes[h[1] + 1]
    ops[#ops + 1] = node and (node.op == 'null' and 'Variable' or node.op) or '?'
  end
  return table.concat(ops, ', ')
end

local function is_symbol(v)
  local ok, S = pcall(require, 'luamx.symbol')
  return ok and S.is_symbol(v)
end
M.is_symbol = is_symbol

local function symbol_summary(s)
  local ok, text = pcall(function()
    local outs = s:list_outputs()
    local args = s:list_arguments()
    local aux = s:list_auxiliary_states()
    local op = head_op(s)
    local lines = {('<Symbol %s%s>'):format(s.name or '(group)', op and (' = ' .. op) or '')}
    lines[2] = '  outputs:   ' .. table.concat(outs, ', ')
    lines[3] = '  arguments: ' .. table.concat(args, ', ')
    if #aux > 0 then lines[4] = '  aux:       ' .. table.concat(aux, ', ') end
    return table.concat(lines, '\n')
  end)
  return ok and text or nil
end

local function shape_text(a)
  local ok, shape = pcall(function() return a.shape end)
  return ok and shape and ('(' .. table.concat(shape, 'x') .. ')') or '?'
end

local function mib(b)
  if b < 2 ^ 20 then return ('%.1f KiB'):format(b / 1024) end
  return ('%.2f MiB'):format(b / 2 ^ 20)
end

-- Executor: bound shapes, device, memory planned.
local function executor_summary(e, s)
  local ok, text = pcall(function()
    local lines = {s}
    local args = {}
    for i, name in ipairs(e._arg_names) do args[i] = name .. shape_text(e.arg_arrays[i]) end
    lines[#lines + 1] = '  arguments: ' .. table.concat(args, ', ')
    local outs = {}
    for i, name in ipairs(e._out_names) do outs[i] = name .. shape_text(e.outputs[i]) end
    lines[#lines + 1] = '  outputs:   ' .. table.concat(outs, ', ')
    local okm, planned, naive = pcall(e.memory, e)
    if okm then lines[#lines + 1] = ('  memory:    %s planned for intermediates (naive %s)'):format(mib(planned), mib(naive)) end
    return table.concat(lines, '\n')
  end)
  return ok and text or s
end

-- Module: bound or not, parameter count, optimizer.
local function module_summary(m, s)
  local ok, text = pcall(function()
    local lines = {s}
    lines[#lines + 1] = ('  bound: %s%s'):format(tostring(m.binded), m.binded and (m.for_training and ' (training)' or ' (inference)') or '')
    if m.params_initialized then
      local args, aux = m:get_params()
      local n, k = 0, 0
      for _, a in pairs(args or {}) do n = n + a.size; k = k + 1 end
      for _, a in pairs(aux or {}) do n = n + a.size end
      lines[#lines + 1] = ('  parameters: %d in %d arrays'):format(n, k)
    else
      lines[#lines + 1] = '  parameters: not initialized'
    end
    local opt = rawget(m, '_optimizer')
    lines[#lines + 1] = '  optimizer: ' .. (opt and tostring(opt) or 'none')
    return table.concat(lines, '\n')
  end)
  return ok and text or s
end

local function object_text(v, color)
  local mt = getmetatable(v)
  local ok, s = pcall(tostring, v)
  if not ok then return '<' .. tostring(s) .. '>' end
  if is_symbol(v) then s = symbol_summary(v) or s
  elseif type(v) == 'table' and rawget(v, '_arg_names') and rawget(v, '_out_names') and rawget(v, '_h') then
    s = executor_summary(v, s)
  elseif type(v) == 'table' and rawget(v, 'params_initialized') ~= nil and rawget(v, 'binded') ~= nil then
    s = module_summary(v, s)
  end
  if color and mt then
    -- colour the first line (<Symbol ...>) of a summary and dim the trailing <...> footer line of arrays and objects
    s = s:gsub('\n(<[^\n]*>)$', function(f) return '\n' .. paint(f, 'footer', true) end)
  end
  return s
end

--- Formats one value for display.
function M.format(v, opts)
  opts = opts or {}
  local color, maxdepth, maxitems = opts.color, opts.depth or 3, opts.items or 30
  local seen = {}
  local function fmt(x, depth, indent)
    local t = type(x)
    if t == 'string' then return paint(('%q'):format(x):gsub('\\\n', '\\n'), 'string', color) end
    if t == 'number' then return paint(num(x), 'number', color) end
    if t == 'boolean' or t == 'nil' then return paint(tostring(x), t, color) end
    if t == 'function' then return paint(tostring(x), 'function', color) end
    if t ~= 'table' then return tostring(x) end
    local mt = getmetatable(x)
    if mt and (mt.__tostring or is_symbol(x)) then return object_text(x, color) end
    if seen[x] then return '<cycle>' end
    if depth >= maxdepth then return '{...}' end
    seen[x] = true
    local keys, n = {}, #x
    for k in pairs(x) do
      if not (type(k) == 'number' and k >= 1 and k <= n and k % 1 == 0) then keys[#keys + 1] = k end
    end
    table.sort(keys, function(a, b)
      local ta, tb = type(a), type(b)
      if ta ~= tb then return ta < tb end
      if ta == 'number' or ta == 'string' then return a < b end
      return tostring(a) < tostring(b)
    end)
    local parts, count, total = {}, 0, n + #keys
    local inner = indent .. '  '
    for i = 1, n do
      if count >= maxitems then break end
      parts[#parts + 1] = fmt(x[i], depth + 1, inner); count = count + 1
    end
    for _, k in ipairs(keys) do
      if count >= maxitems then break end
      local ks = is_ident(k) and k or ('[' .. fmt(k, maxdepth, inner) .. ']')
      parts[#parts + 1] = ks .. ' = ' .. fmt(x[k], depth + 1, inner); count = count + 1
    end
    if total > count then parts[#parts + 1] = ('... (%d entries)'):format(total) end
    seen[x] = nil
    if #parts == 0 then return '{}' end
    local flat = '{' .. table.concat(parts, ', ') .. '}'
    if #flat <= 78 and not flat:find('\n') then return flat end
    return '{\n' .. inner .. table.concat(parts, ',\n' .. inner) .. '\n' .. indent .. '}'
  end
  return fmt(v, 0, '')
end

return M
