-- docs/gen_operators.lua — writes the operator reference (HTML) from the registry, so it
-- never drifts from the engine: every operator and alias with its description, inputs,
-- outputs and parameters (type, default or "required", allowed values, meaning).
--   luajit docs/gen_operators.lua docs/html/operators.html
-- (run by docs/build.sh after LDoc; needs the built library: LUAMX_LIB or build/).
local out_path = assert(arg[1], 'usage: luajit docs/gen_operators.lua OUT.html')
local root = (arg[0]:match('^(.*)/[^/]*$') or '.') .. '/..'
package.path = root .. '/lua/?.lua;' .. package.path
local mx = require 'luamx'
local help = require 'luamx.repl.help'

local function esc(s)
  return (tostring(s):gsub('&', '&amp;'):gsub('<', '&lt;'):gsub('>', '&gt;'))
end

local names = mx.op.list()
local aliases = {}
local ffi = require 'ffi'
local C = mx.capi.C
local n = ffi.new('int[1]')
mx.capi.check(C.lmx_op_alias(-1, n, nil, nil))
local alias, canon, cname = ffi.new('const char *[1]'), ffi.new('int[1]'), ffi.new('const char *[1]')
for i = 0, n[0] - 1 do
  mx.capi.check(C.lmx_op_alias(i, nil, alias, canon))
  mx.capi.check(C.lmx_op_get_name(canon[0], cname))
  local c = ffi.string(cname[0])
  aliases[c] = aliases[c] or {}
  table.insert(aliases[c], ffi.string(alias[0]))
end

local html = {('<!DOCTYPE html><html><head><meta charset="utf-8"><title>luamx operators</title>'
  .. '<link rel="stylesheet" href="ldoc.css"></head><body><div id="main"><div id="content">'),
  ('<h1>Operators</h1><p>%d operators, generated from the registry of luamx %s. Each is '
  .. '<code>mx.sym.Name{...}</code> (symbolic) and <code>mx.nd.Name(...)</code> (imperative); '
  .. 'parameters keep MXNet\'s names and meaning. <a href="index.html">API reference</a></p>'):format(#names, mx.__version__),
  '<p>' }
for _, name in ipairs(names) do html[#html + 1] = ('<a href="#%s">%s</a> '):format(name, name) end
html[#html + 1] = '</p>'
for _, name in ipairs(names) do
  local text = help.op_text(mx, name)
  local al = aliases[name] and ('<p>Aliases: ' .. esc(table.concat(aliases[name], ', ')) .. '</p>') or ''
  html[#html + 1] = ('<h2 id="%s">%s</h2>%s<pre>%s</pre>'):format(name, name, al, esc(text))
end
html[#html + 1] = '</div></div></body></html>'
local f = assert(io.open(out_path, 'w'))
f:write(table.concat(html, '\n'), '\n')
f:close()
print(('%d operators written to %s'):format(#names, out_path))
