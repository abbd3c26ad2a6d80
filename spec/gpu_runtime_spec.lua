-- The GPU device runtime: loading without CUDA libraries, num_gpus / gpu_memory_info,
-- the caching allocator seen from Lua, asynchronous copies round-tripping every dtype,
-- out of memory and recovery, arrays on the wrong device given to an executor.
-- Parts that need a GPU run on a real one or on the simulator build
-- (-DLUAMX_CUDA=SIM) and are skipped with a message elsewhere.
local mx = require 'luamx'
local H = require 'helpers'

local ngpu = mx.context.num_gpus()
local lib = os.getenv('LUAMX_LIB')

local function needed_entries(path)
  local p = io.popen(('readelf -d %q 2>/dev/null'):format(path))
  local text = p:read('*a')
  p:close()
  local list = {}
  for name in text:gmatch('%(NEEDED%)%s+Shared library: %[([^%]]+)%]') do list[#list + 1] = name end
  return list, text
end

describe('loading', function()
  it('links no CUDA library dynamically (libluamx loads without a driver or CUDA libraries)', function()
    assert.is_truthy(lib, 'LUAMX_LIB is set by ctest')
    local list, text = needed_entries(lib)
    if text == '' then
      pending('readelf (binutils) is not installed: DT_NEEDED not checked')
      return
    end
    assert.is_true(#list > 0, 'readelf lists the DT_NEEDED entries')
    for _, name in ipairs(list) do
      for _, bad in ipairs {'libcuda%.', 'libcudart', 'libcublas', 'libcudnn', 'libnccl'} do
        assert.is_nil(name:find(bad), ('libluamx needs %s at load time'):format(name))
      end
    end
  end)

  it('num_gpus is a count, and a missing GPU is a clear error', function()
    assert.are.equal('number', type(ngpu))
    assert.is_true(ngpu >= 0)
    local err = H.raises(function() return mx.gpu(ngpu) end, ('gpu(%d)'):format(ngpu))
    if ngpu == 0 then assert.is_truthy(err:find('0 GPUs are present', 1, true) or err:find('no CUDA support', 1, true)) end
    H.raises(function() return mx.context.gpu_memory_info(ngpu) end, ('gpu(%d)'):format(ngpu))
    H.raises(function() return mx.context.empty_cache(ngpu) end, ('gpu(%d)'):format(ngpu))
    H.raises(function() return mx.context.gpu_memory_info(0.5) end, 'device id must be an integer')
  end)
end)

-- Runs everywhere: two CPU contexts are two devices to bind.
describe('arrays on the wrong device given to bind', function()
  local function fc()
    return mx.sym.FullyConnected{data = mx.sym.Variable('data'), num_hidden = 2, name = 'fc1'}
  end
  local function args(wctx)
    return {data = mx.nd.zeros{1, 3}, fc1_weight = mx.nd.zeros({2, 3}, {ctx = wctx}), fc1_bias = mx.nd.zeros{2}}
  end

  it('refuses an argument on another context, naming the argument and both contexts', function()
    H.raises(function() return fc():bind{ctx = mx.cpu(0), args = args(mx.cpu(1))} end,
             "argument 'fc1_weight' is on cpu(1)", "executor's context is cpu(0)")
  end)

  it('refuses a gradient array on another context, naming both', function()
    H.raises(function()
      return fc():bind{ctx = mx.cpu(0), args = args(mx.cpu(0)),
                       args_grad = {fc1_weight = mx.nd.zeros({2, 3}, {ctx = mx.cpu(1)})}}
    end, "gradient array of argument 'fc1_weight' is on cpu(1) but the argument is on cpu(0)")
  end)

  it('copies data given at forward time from another context', function()
    local exe = fc():bind{ctx = mx.cpu(0), args = args(mx.cpu(0))}
    exe:forward{data = mx.nd.ones({1, 3}, {ctx = mx.cpu(1)})}
    assert.are.same({0, 0}, exe.outputs[1]:toflat())
  end)
end)

if ngpu == 0 then
  describe('gpu runtime', function()
    pending('no GPU context in this build or on this machine (num_gpus() == 0): GPU runtime specs skipped')
  end)
  return
end

local dtypes = {'float32', 'float64', 'float16', 'uint8', 'int32', 'int8', 'int64'}

-- Values exactly representable in every dtype's range.
local function values(dtype, n)
  local v = {}
  for i = 1, n do
    local x = (i * 37) % 101
    if dtype == 'int8' then x = x - 50 end
    if dtype:find('float') then x = x / 4 - 7 end
    v[i] = x
  end
  return v
end

local function same_flat(a, b)
  assert.are.equal(#b, #a)
  for i = 1, #a do
    if a[i] ~= b[i] then error(('element %d: %s ~= %s'):format(i, tostring(a[i]), tostring(b[i]))) end
  end
end

describe('gpu runtime', function()
  it('reports memory like MXNet (free, total) plus the allocator figures', function()
    local free, total, pool = mx.context.gpu_memory_info(0)
    assert.is_true(total > 0 and free >= 0 and free <= total)
    for _, k in ipairs {'in_use', 'cached', 'peak', 'live_blocks', 'cached_blocks', 'requests',
                        'cache_hits', 'raw_allocs', 'raw_frees', 'oom_retries', 'ooms'} do
      assert.are.equal('number', type(pool[k]), k)
    end
    local a = mx.nd.zeros({1000}, {ctx = mx.gpu(0)}) -- 4000 bytes: a 4096-byte block
    local _, _, p1 = mx.context.gpu_memory_info(0)
    assert.are.equal(pool.in_use + 4096, p1.in_use)
    assert.is_true(p1.peak >= p1.in_use)
    a:free()
    local _, _, p2 = mx.context.gpu_memory_info(0)
    assert.are.equal(pool.in_use, p2.in_use)
    assert.is_true(p2.cached >= 4096)
  end)

  it('reuses freed blocks: the same size again makes no raw allocation', function()
    local a = mx.nd.zeros({12345}, {ctx = mx.gpu(0)})
    a:free()
    local _, _, p0 = mx.context.gpu_memory_info(0)
    for _ = 1, 50 do
      local b = mx.nd.zeros({12345}, {ctx = mx.gpu(0)})
      local c = mx.nd.zeros({77}, {ctx = mx.gpu(0), dtype = 'int8'})
      b:free()
      c:free()
    end
    local _, _, p1 = mx.context.gpu_memory_info(0)
    assert.is_true(p1.raw_allocs <= p0.raw_allocs + 1, 'at most one new block (the int8 one)')
    assert.is_true(p1.cache_hits >= p0.cache_hits + 99)
    assert.are.equal(p0.in_use, p1.in_use)
  end)

  it('round-trips every dtype exactly through host and device copies', function()
    for _, dt in ipairs(dtypes) do
      local v = values(dt, 1001)
      local h = mx.nd.array(v, {dtype = dt})
      local g = h:copyto(mx.gpu(0))
      local g2 = g:copyto(mx.nd.zeros({1001}, {ctx = mx.gpu(0), dtype = dt})) -- device to device
      local back = g2:copyto(mx.cpu(0))
      assert.are.equal(dt, back.dtype)
      same_flat(back:toflat(), h:toflat())
      if ngpu > 1 then -- across devices
        local other = g:copyto(mx.gpu(1))
        assert.are.equal(mx.gpu(1), other.context)
        same_flat(other:toflat(), h:toflat())
      end
      -- converting copies to and from the device
      same_flat(g:copyto(mx.nd.zeros({1001}, {dtype = 'float64'})):toflat(), h:astype('float64'):toflat())
    end
  end)

  it('copies arrays larger than the staging ring (chunks wrap around it)', function()
    local n = 5 * 1024 * 1024 + 3 -- 20 MiB of float32: five 4 MiB staging chunks and a tail
    local h = mx.nd.arange(0, n, 1, {dtype = 'float32'})
    local g = h:copyto(mx.gpu(0))
    local back = g:copyto(mx.cpu(0))
    local a, b = h:toflat(), back:toflat()
    assert.are.equal(n, #b)
    for i = 1, n, 4099 do assert.are.equal(a[i], b[i]) end
    assert.are.equal(a[n], b[n])
    g:wait_to_read()
    mx.nd.waitall()
    same_flat({b[1], b[n]}, {0, n - 1})
  end)

  it('reports out of memory with the bytes, the device and what is held, then recovers', function()
    local free, total = mx.context.gpu_memory_info(0)
    if total > 2 ^ 30 then
      pending(('gpu(0) has %.1f GiB: the out-of-memory check runs on small devices (set LUAMX_SIM_GPU_MEM)'):format(total / 2 ^ 30))
      return
    end
    mx.context.empty_cache(0)
    mx.nd.waitall()
    free = mx.context.gpu_memory_info(0)
    local chunk = math.floor(free * 0.6 / 4)
    local a = mx.nd.zeros({chunk}, {ctx = mx.gpu(0), dtype = 'float32'})
    a:free() -- cached now: the next, larger request empties the cache and retries
    local _, _, p0 = mx.context.gpu_memory_info(0)
    local b = mx.nd.zeros({chunk + 600000}, {ctx = mx.gpu(0), dtype = 'float32'})
    local _, _, p1 = mx.context.gpu_memory_info(0)
    assert.are.equal(p0.oom_retries + 1, p1.oom_retries)
    local err = H.raises(function() return mx.nd.zeros({chunk + 600000}, {ctx = mx.gpu(0)}) end,
                         'gpu(0): out of memory allocating', 'in use', 'cached', 'device free')
    assert.is_truthy(err:find(tostring((chunk + 600000) * 4) .. ' bytes', 1, true))
    local _, _, p2 = mx.context.gpu_memory_info(0)
    assert.are.equal(p1.ooms + 1, p2.ooms)
    b:free()
    local c = mx.nd.zeros({chunk + 600000}, {ctx = mx.gpu(0)})
    assert.are.equal(mx.gpu(0), c.context)
    c:free()
  end)

  it('empty_cache gives the cached blocks back', function()
    mx.nd.zeros({50000}, {ctx = mx.gpu(0)}):free()
    local _, _, p0 = mx.context.gpu_memory_info(0)
    assert.is_true(p0.cached > 0)
    local released = mx.context.empty_cache(0)
    assert.are.equal(p0.cached, released)
    local _, _, p1 = mx.context.gpu_memory_info(0)
    assert.are.equal(0, p1.cached)
  end)

  it('waits where data is read: wait_to_read and waitall exist and succeed', function()
    local g = mx.nd.array({1, 2, 3}, {ctx = mx.gpu(0)})
    assert.are.equal(g, g:wait_to_read())
    mx.nd.waitall()
    assert.are.same({1, 2, 3}, g:totable())
  end)

  it('refuses an array on another device given to a bound executor, naming both', function()
    local x = mx.sym.Variable('x')
    local y = mx.sym.Variable('y')
    local s = mx.sym.Group {x, y}
    local other = ngpu > 1 and mx.gpu(1) or mx.cpu(0)
    H.raises(function()
      return s:bind{ctx = mx.gpu(0), args = {x = mx.nd.zeros({2}, {ctx = mx.gpu(0)}), y = mx.nd.zeros({2}, {ctx = other})}}
    end, "'y' is on " .. tostring(other), "executor's context is gpu(0)")
  end)

  it("adds the device's allocator figures to debug_str", function()
    local x = mx.sym.Variable('x')
    local exe = x:bind{ctx = mx.gpu(0), args = {x = mx.nd.zeros({4}, {ctx = mx.gpu(0)})}}
    local text = exe:debug_str()
    assert.is_truthy(text:find('Device gpu(0): ', 1, true), text)
    assert.is_truthy(text:find('bytes in use in', 1, true))
    local lines = {}
    for l in (text .. '\n'):gmatch('([^\n]*)\n') do lines[#lines + 1] = l end
    assert.is_truthy(lines[#lines - 2]:find('^Total %d+ MB allocated'), text) -- MXNet's line [-3]
  end)
end)
