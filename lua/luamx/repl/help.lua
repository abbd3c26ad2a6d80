--- luamx.repl.help — help(x): what an operator, function or object is, as text.
--
--   print(mx.help(mx.sym.FullyConnected))   -- registry: description, inputs, outputs,
--                                           -- every parameter (type, default, choices)
--   print(mx.help('Convolution'))           -- an operator by name
--   print(mx.help(mx.nd.array))             -- a luamx function: its doc comment
--   print(mx.help(a))                       -- an NDArray/Symbol/Executor/Module: summary
--
-- Operators are recognised by identity: every mx.sym.<Op>, mx.nd.<Op> and mx.nd.op.<Op>
-- (canonical names and aliases) maps back to its registry name, so nothing here is
-- per-operator. A function's doc comment is the block of `--` lines right above its
-- definition in the source file that debug.getinfo names.
local M = {}

local op_of -- function -> operator name, built on first use

local function build_op_map(mx)
  op_of = {}
  local names = mx.op.list()
  local seen = {}
  for _, n in ipairs(names) do seen[n] = true end
  for _, tbl in ipairs {mx.sym, mx.nd, mx.nd.op or {}} do
    for k, v in pairs(tbl) do
      if type(k) == 'string' and (type(v) == 'function' or type(v) == 'table') and not op_of[v] then
        local ok = pcall(mx.op.info, k)
        if ok and (seen[k] or rawget(mx.nd.op or {}, k) ~= nil) then op_of[v] = k end
      end
    end
  end
end

--- The operator name behind x (a name or an mx.sym/mx.nd operator function), or nil.
function M.op_name(mx, x)
  if type(x) == 'string' then
    return pcall(mx.op.info, x) and x or nil
  end
  if not op_of then build_op_map(mx) end
  return op_of[x]
end

local function wrap_text(s, width, indent)
  local out, line = {}, indent
  for word in s:gmatch('%S+') do
    if #line + #word + 1 > width and line ~= indent then
      out[#out + 1] = line
      line = indent
    end
    line = line .. (line == indent and '' or ' ') .. word
  end
  if line ~= indent then out[#out + 1] = line end
  return table.concat(out, '\n')
end

--- Text describing operator `name` from the registry.
function M.op_text(mx, name)
  local info = mx.op.info(name)
  if not info.inputs then
    -- required parameters decide the inputs: ask again with placeholder values
    local guess = {}
    for _, p in ipairs(info.params) do
      if p.required then
        local first = p.choices and p.choices:match("[%w_]+")
        guess[p.name] = first or ({int = 1, float = 1, shape = {1}, floats = {1}, opt_int = 1,
          bool = false, string = 'x', dtype = 'float32'})[p.type] or 1
      end
    end
    local ok, again = pcall(mx.op.info, name, guess)
    if ok and again.inputs then info.inputs, info.outputs, info.aux = again.inputs, again.outputs, again.aux end
  end
  local lines = {}
  local canon = info.name ~= name and (' (alias of ' .. info.name .. ')') or ''
  lines[#lines + 1] = ('%s%s — mx.sym.%s{...} / mx.nd.%s(...)'):format(name, canon, name, name)
  if info.hint and info.hint ~= '' and info.hint ~= info.name:lower() then lines[#lines + 1] = '  ' .. info.hint end
  if info.doc and info.doc ~= '' then
    lines[#lines + 1] = ''
    for para in (info.doc .. '\n'):gmatch('(.-)\n') do
      lines[#lines + 1] = para == '' and '' or wrap_text(para, 88, '  ')
    end
  end
  local function list(title, xs)
    if xs and #xs > 0 then lines[#lines + 1] = ('%-10s %s'):format(title, table.concat(xs, ', ')) end
  end
  lines[#lines + 1] = ''
  list('Inputs:', info.inputs)
  list('Outputs:', info.outputs)
  list('Aux:', info.aux)
  if not info.inputs then
    lines[#lines + 1] = 'Inputs and outputs depend on the parameters (see mx.op.info).'
  end
  if #info.params > 0 then
    lines[#lines + 1] = 'Parameters:'
    for _, p in ipairs(info.params) do
      local spec = p.type
      if p.choices then spec = spec .. ' {' .. p.choices .. '}' end
      if p.required then spec = spec .. ', required'
      else spec = spec .. ', default ' .. (p.default == '' and "''" or p.default) end
      lines[#lines + 1] = ('  %-22s %s'):format(p.name, spec)
      if p.doc and p.doc ~= '' then lines[#lines + 1] = wrap_text(p.doc, 88, '      ') end
    end
  else
    lines[#lines + 1] = 'Parameters: none'
  end
  return table.concat(lines, '\n')
end

-- The comment block above line `line` of file `path` (nil when there is none).
local function doc_above(path, line)
  local f = io.open(path, 'r')
  if not f then return nil end
  local all = {}
  for l in f:lines() do all[#all + 1] = l end
  f:close()
  local def = all[line] or ''
  local block = {}
  local i = line - 1
  while i >= 1 and all[i]:match('^%s*%-%-') do
    table.insert(block, 1, (all[i]:gsub('^%s*%-%-%-?%s?', '')))
    i = i - 1
  end
  if #block == 0 then return nil, def end
  return table.concat(block, '\n'), def
end
M.doc_above = doc_above

--- Text for a Lua function: its definition line and doc comment, when it has one.
function M.function_text(f)
  local info = debug.getinfo(f, 'S')
  if info.what == 'C' then return 'a built-in function (no Lua source)' end
  local path = info.source:match('^@(.*)$')
  if not path then return ('a function defined in %s'):format(info.short_src) end
  local doc, def = doc_above(path, info.linedefined)
  local where = ('%s:%d'):format(path:match('lua/(luamx.*)$') or path, info.linedefined)
  def = def and def:gsub('^%s+', '') or ''
  if not doc then return ('%s\n  (%s; no doc comment)'):format(def, where) end
  return ('%s\n  (%s)\n\n%s'):format(def, where, doc)
end

--- Text describing anything; `mx` is the luamx module.
function M.text(mx, x)
  if x == nil then
    return table.concat({
      'help(x) or ?x describes x: an operator (help(mx.sym.FullyConnected), ?Convolution),',
      'a luamx function (help(mx.nd.array)), an NDArray, Symbol, Executor or Module.',
      'Tab completes names, fields and methods; Ctrl-C stops a running statement;',
      'Ctrl-D leaves. _ holds the last result. mx.op.list() lists the operators.'}, '\n')
  end
  local opname = M.op_name(mx, x)
  if opname then return M.op_text(mx, opname) end
  if type(x) == 'function' then return M.function_text(x) end
  if type(x) == 'string' then return ('no operator named %q (mx.op.list() lists them)'):format(x) end
  if mx.nd.is_ndarray(x) then
    return ('NDArray of shape {%s}, %s, on %s (%d elements).\nMethods: a:%s'):format(
      table.concat(x.shape, ', '), x.dtype, tostring(x.context), x.size,
      table.concat(M.methods_of(x), ', a:'))
  end
  local pretty = require 'luamx.repl.pretty'
  local text = pretty.format(x, {depth = 2, items = 20})
  if type(x) == 'table' and getmetatable(x) then
    local ms = M.methods_of(x)
    if #ms > 0 then text = text .. '\nMethods: ' .. table.concat(ms, ', ') end
  end
  return text
end

--- Sorted method names of an object (through its metatable).
function M.methods_of(x)
  local complete = require 'luamx.repl.complete'
  local out = {}
  local mt = getmetatable(x)
  if not mt then return out end
  for k, kind in pairs(complete.keys_of(x, {})) do
    if kind == 'function' and not k:match('^_') and rawget(type(x) == 'table' and x or {}, k) == nil then
      out[#out + 1] = k
    end
  end
  table.sort(out)
  return out
end

return M
