--- spec/docs_spec.lua — the API reference: every public function of lua/ has a doc
--- comment (`---` block right above it), and the LDoc build (docs/build.sh) runs without
--- warnings and writes the operator reference from the registry.
---
--- Public: `function T.name(` / `function T:name(` / `T.name = function(` at the top
--- level of a file, name not starting with '_'. spec/undocumented.txt lists the functions
--- that had no doc comment when this check was introduced; the list may only shrink: a
--- function missing from it fails, and so does an entry that is now documented or gone.
local SRC = os.getenv('LUAMX_SOURCE_DIR') or '.'

local function public_functions()
  local found = {}
  local p = io.popen('cd ' .. SRC .. ' && find lua -name "*.lua" | sort')
  for path in p:lines() do
    local lines = {}
    for l in io.lines(SRC .. '/' .. path) do lines[#lines + 1] = l end
    for i, l in ipairs(lines) do
      local name = l:match('^function ([%w_]+[.:][%w_]+)%s*%(') or l:match('^([%w_]+%.[%w_]+)%s*=%s*function%s*%(')
      if name and not name:match('[.:]_') then
        local j, doc = i - 1, false
        while j >= 1 and lines[j]:match('^%s*%-%-') do
          if lines[j]:match('^%s*%-%-%-') then doc = true end
          j = j - 1
        end
        found[#found + 1] = {key = path .. ' ' .. name, line = i, doc = doc}
      end
    end
  end
  p:close()
  return found
end

local function allowlist()
  local t = {}
  for l in io.lines(SRC .. '/spec/undocumented.txt') do
    if l:match('^%S') and not l:match('^#') then t[l] = true end
  end
  return t
end

describe('doc comments', function()
  it('every public function has one (or is a listed, older debt)', function()
    local allowed = allowlist()
    local missing, seen = {}, {}
    for _, f in ipairs(public_functions()) do
      seen[f.key] = f.doc
      if not f.doc and not allowed[f.key] then
        missing[#missing + 1] = ('%s (line %d)'):format(f.key, f.line)
      end
    end
    assert.are.same({}, missing, 'public functions without a doc comment:\n' .. table.concat(missing, '\n'))
    local stale = {}
    for k in pairs(allowed) do
      if seen[k] ~= false then stale[#stale + 1] = k end
    end
    table.sort(stale)
    assert.are.same({}, stale, 'documented or removed; delete from spec/undocumented.txt:\n' .. table.concat(stale, '\n'))
  end)
end)

local has_ldoc = io.popen('command -v ldoc || true'):read('*a'):match('%S')
local describe_ldoc = has_ldoc and describe or pending

describe_ldoc('docs/build.sh', function()
  it('builds the API reference without warnings and the operator page from the registry', function()
    local p = io.popen('sh ' .. SRC .. '/docs/build.sh 2>&1; echo "rc=$?"')
    local out = p:read('*a')
    p:close()
    assert.is_truthy(out:find('rc=0', 1, true), out)
    local ops = io.open(SRC .. '/docs/html/operators.html'):read('*a')
    local mx = require 'luamx'
    for _, name in ipairs(mx.op.list()) do
      assert.is_truthy(ops:find('<h2 id="' .. name .. '">', 1, true), name)
    end
    assert.is_truthy(ops:find('num_hidden%s+int, required'))
    local index = io.open(SRC .. '/docs/html/index.html'):read('*a')
    assert.is_truthy(index:find('operators.html', 1, true))
    local nd = io.open(SRC .. '/docs/html/modules/luamx.ndarray.html')
    assert.is_truthy(nd, 'no page for luamx.ndarray')
    local text = nd:read('*a')
    nd:close()
    assert.is_truthy(text:find('arange', 1, true))
  end)
end)
