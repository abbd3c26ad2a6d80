-- Long graphs: a recorded chain of 100,000 calls is released without recursing once per
-- call (it used to overflow the C stack and crash), and composing a node checks for a
-- cycle without walking the whole input graph when the node cannot be in it (which made
-- building an n-node graph take n^2 steps), while real cycles are still refused.
local ffi = require 'ffi'
local mx = require 'luamx'
local C = mx.capi.C

local function last_error() return ffi.string(C.lmx_last_error()) end

-- runs a Lua chunk in a child luajit with a 256 KiB C stack; returns its exit code and output
local function child(code)
  local path = os.tmpname()
  local f = assert(io.open(path, 'w'))
  f:write(code)
  f:close()
  local p = assert(io.popen(('ulimit -s 256 && luajit "%s" 2>&1; echo "EXIT=$?"'):format(path)))
  local out = p:read('*a')
  p:close()
  os.remove(path)
  return tonumber(out:match('EXIT=(%d+)')), out
end

describe('a long recorded chain', function()
  it('is released without deep recursion (100,000 calls, 256 KiB of C stack)', function()
    local rc, out = child [[
      local mx = require 'luamx'
      local x = mx.nd.ones{4}
      x:attach_grad()
      local y = mx.autograd.record(function()
        local v = x
        for _ = 1, 100000 do v = v * 1.0 end
        return v
      end)
      y:backward()
      assert(x.grad:totable()[1] == 1, 'gradient')
      y = nil
      collectgarbage(); collectgarbage()
      print('released')
    ]]
    assert.equal(0, rc, out)
    assert.truthy(out:find('released', 1, true), out)
  end)

  it('turns into a Symbol of every call (get_symbol of 5,000 calls)', function()
    local x = mx.nd.ones{4}
    x:attach_grad()
    local y = mx.autograd.record(function()
      local v = x
      for _ = 1, 5000 do v = mx.nd.relu(v) end
      return v
    end)
    local s = mx.autograd.get_symbol(y, {data = x})
    assert.same({'data'}, s:list_arguments())
    local n = 0
    for _ in s:tojson():gmatch('"op": "relu"') do n = n + 1 end
    assert.equal(5000, n)
  end)
end)

describe('composition refuses cycles', function()
  local function new_op(name)
    local out = ffi.new('lmx_symbol *[1]')
    assert.equal(0, C.lmx_symbol_new_op('relu', name, 0, nil, nil, out))
    return ffi.gc(out[0], C.lmx_symbol_free)
  end
  local function compose(s, input)
    local inputs = ffi.new('lmx_symbol *[1]', {input})
    return C.lmx_symbol_compose(s, 1, nil, inputs)
  end

  it('a node given itself as its input', function()
    local a = new_op('a')
    assert.are_not.equal(0, compose(a, a))
    assert.truthy(last_error():find("relu 'a': cannot use a graph that contains 'a' as its own input (cycle)",
      1, true), last_error())
  end)

  it('a node given a graph that already uses it', function()
    local a, b = new_op('a'), new_op('b')
    assert.equal(0, compose(b, a)) -- b = relu(a), a not yet composed
    assert.are_not.equal(0, compose(a, b))
    assert.truthy(last_error():find("relu 'a': cannot use a graph that contains 'a' as its own input (cycle)",
      1, true), last_error())
  end)

  it('a fresh node composed with a large graph (no cycle)', function()
    local v = mx.sym.Variable('data')
    for _ = 1, 3000 do v = mx.sym.relu(v) end
    assert.equal(3001, #mx.sym.Group{v}:get_internals():list_outputs())
  end)
end)
