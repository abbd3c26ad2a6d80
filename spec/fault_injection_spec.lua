-- Fault injection: fail the Nth engine allocation (N = 1, 2, ... until the operation
-- succeeds) for each operation that allocates. Every failure must be a clean Lua error
-- saying "out of memory", the objects involved must stay usable, and once the garbage
-- collector has run the engine's live block count must be back where it started.
local ffi = require 'ffi'
local mx = require 'luamx'
local C = mx.capi.C

local function live_blocks()
  local n = ffi.new('int64_t[1]')
  C.lmx_debug_alloc_stats(n, nil, nil)
  return tonumber(n[0])
end

local function full_gc()
  collectgarbage('collect')
  collectgarbage('collect')
end

local function read(path)
  local f = assert(io.open(path, 'rb'))
  local s = f:read('*a')
  f:close()
  return s
end

--- Runs op with the Nth allocation failing, N = 1, 2, ... until it succeeds; checks each
-- failure's message and calls after_failure() (usability checks) after each. Returns the
-- successful result and the number of injected failures.
local function each_fault(op, after_failure)
  local n = 0
  while true do
    n = n + 1
    assert(n < 1000, 'the operation never succeeded')
    C.lmx_debug_alloc_fail_at(n)
    local ok, res = pcall(op)
    C.lmx_debug_alloc_fail_at(0)
    if ok then return res, n - 1 end
    assert(tostring(res):find('out of memory', 1, true),
           ('failure %d: message %q does not say "out of memory"'):format(n, tostring(res)))
    if after_failure then after_failure() end
  end
end

--- Runs `setup` (objects kept), then the fault loop over `op`, then checks for leaks:
-- the result of op is checked by `check` and dropped before counting.
local function fault_case(setup, op, check, after_failure)
  local ctx = setup()
  op(ctx) -- warm up: anything allocated once per process is allocated now
  full_gc()
  local before = live_blocks()
  local res, failures = each_fault(function() return op(ctx) end,
                                   after_failure and function() after_failure(ctx) end)
  assert.is_true(failures >= 1, 'no allocation was ever made, so nothing was tested')
  check(res, ctx)
  res = nil -- luacheck: ignore
  full_gc()
  assert.are.equal(before, live_blocks())
  return failures
end

local function src_ok(ctx)
  assert.are.same({{1, 2, 3}, {4, 5, 6}}, ctx.a:totable())
end

describe('fault injection', function()
  after_each(function() C.lmx_debug_alloc_fail_at(0) end)

  local function setup() return {a = mx.nd.array({{1, 2, 3}, {4, 5, 6}})} end

  it('mx.nd.zeros', function()
    local n = fault_case(function() return {} end,
      function() return mx.nd.zeros({4, 5}, {dtype = 'float64'}) end,
      function(z) assert.are.same({4, 5}, z.shape); assert.are.equal(0, z:toflat()[20]) end)
    assert.is_true(n >= 1) -- one block: a small host array's header, storage and data
  end)

  it('mx.nd.array from a table', function()
    fault_case(function() return {} end,
      function() return mx.nd.array({{1, 2}, {3, 4}}, {dtype = 'int32'}) end,
      function(z) assert.are.same({{1, 2}, {3, 4}}, z:totable()) end)
  end)

  it('copyto a context, astype, copy', function()
    fault_case(setup, function(ctx) return ctx.a:copyto(mx.cpu(0)) end,
      function(z, ctx) assert.are.same(ctx.a:totable(), z:totable()) end, src_ok)
    fault_case(setup, function(ctx) return ctx.a:astype('float16') end,
      function(z) assert.are.equal('float16', z.dtype); assert.are.same({1, 2, 3, 4, 5, 6}, z:toflat()) end,
      src_ok)
    fault_case(setup, function(ctx) return ctx.a:copy() end,
      function(z, ctx) assert.are.same(ctx.a:totable(), z:totable()) end, src_ok)
  end)

  it('reshape and slice views', function()
    fault_case(setup, function(ctx) return ctx.a:reshape({3, 2}) end,
      function(z) assert.are.same({{1, 2}, {3, 4}, {5, 6}}, z:totable()) end, src_ok)
    fault_case(setup, function(ctx) return ctx.a:slice(2) end,
      function(z) assert.are.same({{4, 5, 6}}, z:totable()) end, src_ok)
  end)

  it('mx.nd.save, leaving the previous file intact after each failure', function()
    local path = os.tmpname()
    local old = 'previous contents'
    local function setup_save()
      local f = assert(io.open(path, 'wb'))
      f:write(old)
      f:close()
      return {a = mx.nd.array({{1, 2, 3}, {4, 5, 6}}), b = mx.nd.zeros({}, {dtype = 'int64'})}
    end
    local first = true
    local n = fault_case(setup_save, function(ctx)
        if first then first = false; return true end -- the warm-up must not replace the file
        mx.nd.save(path, {w = ctx.a, s = ctx.b})
        return true
      end,
      function() assert.are.same({'s', 'w'}, (function()
          local t = mx.nd.load(path)
          local k = {}
          for name in pairs(t) do k[#k + 1] = name end
          table.sort(k)
          return k
        end)())
      end,
      function(ctx)
        src_ok(ctx)
        assert.are.equal(old, read(path))
        local p = io.popen('ls "' .. path .. '".tmp.* 2>/dev/null')
        assert.are.equal('', p:read('*a'))
        p:close()
      end)
    assert.is_true(n >= 1)
    os.remove(path)
  end)

  it('symbols named by a Prefix name manager', function()
    fault_case(function() return {x = mx.sym.Variable('x')} end,
      function(ctx)
        return mx.name.Prefix('p_'):with(function()
          mx.sym.Activation{data = ctx.x, act_type = 'relu'}
          return mx.sym.FullyConnected{data = ctx.x, num_hidden = 2, name = 'fc'}
        end)
      end,
      function(s) assert.are.same({'x', 'p_fc_weight', 'p_fc_bias'}, s:list_arguments()) end,
      function() assert.are.equal(mx.name.default, mx.name.current()) end)
  end)

  it('mx.nd.load', function()
    local path = os.tmpname()
    local function setup_load()
      mx.nd.save(path, {['arg:w'] = mx.nd.array({{1, 2}, {3, 4}}), ['aux:m'] = mx.nd.array({7}, {dtype = 'int8'})})
      return {}
    end
    local n = fault_case(setup_load, function() return mx.nd.load(path) end,
      function(t)
        assert.are.same({{1, 2}, {3, 4}}, t['arg:w']:totable())
        assert.are.same({7}, t['aux:m']:toflat())
        assert.are.equal('int8', t['aux:m'].dtype)
      end)
    -- read buffer, list, array vector, one block per array (header, storage and data),
    -- name vector, 2 names
    assert.is_true(n >= 8, 'only ' .. n .. ' allocations failed')
    os.remove(path)
  end)
end)
