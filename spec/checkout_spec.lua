-- The module works from a source checkout as the README shows: `luajit -e` with no
-- LUA_PATH, from the repository root.
local src = assert(os.getenv('LUAMX_SOURCE_DIR'))

local function run(cmd)
  local p = io.popen('cd "' .. src .. '" && env -u LUA_PATH ' .. cmd .. ' 2>&1')
  local out = p:read('*a')
  local ok = p:close()
  return out, ok
end

describe('a source checkout', function()
  it('runs the README one-liner and prints the doubled matrix with its footer', function()
    local out = run([[luajit -e "local mx=require'luamx'; print(mx.nd.array{{1,2},{3,4}} * 2)"]])
    assert.are.equal('[[2. 4.]\n [6. 8.]]\n<NDArray 2x2 float32 @cpu(0)>\n', out)
  end)

  it('reports errors at the script line with the engine message', function()
    local out = run([[luajit -e "local mx=require'luamx'; local a = mx.nd.ones{2,3} + mx.nd.ones{4}"]])
    assert.truthy(out:find('(command line):1: add: shapes (2,3) and (4,) cannot be broadcast together', 1, true), out)
  end)
end)
