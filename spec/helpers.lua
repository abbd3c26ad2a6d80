--- spec/helpers.lua — shared test utilities: error assertions, near-equality, leak checks.
local ffi = require 'ffi'
local mx = require 'luamx'
local C = mx.capi.C

local H = {}

--- Asserts fn raises an error whose message contains every given plain-text fragment.
function H.raises(fn, ...)
  local ok, err = pcall(fn)
  assert(not ok, 'expected an error, but the call succeeded')
  err = tostring(err)
  for _, frag in ipairs {...} do
    assert(err:find(frag, 1, true), ('error message %q does not contain %q'):format(err, frag))
  end
  return err
end

--- n pseudo-random numbers in [lo, hi) (default [-0.5, 0.5)) from math.random seeded
--- with seed, so a spec's data is the same in every run.
function H.uniform(n, seed, lo, hi)
  math.randomseed(seed)
  lo, hi = lo or -0.5, hi or 0.5
  local t = {}
  for i = 1, n do t[i] = lo + (hi - lo) * math.random() end
  return t
end

--- Flat list equality within tol (exact when tol is nil).
function H.near(actual, expected, tol)
  assert(#actual == #expected, ('length %d ~= %d'):format(#actual, #expected))
  for i = 1, #expected do
    local a, e = actual[i], expected[i]
    local ok = tol and math.abs(a - e) <= tol * math.max(1, math.abs(e)) or a == e
    assert(ok, ('element %d: got %.10g, expected %.10g'):format(i, a, e))
  end
  return true
end

--- sym bound on the CPU for data of o.shape (dtype o.dtype, grad_req o.req or 'write'),
--- its arrays filled from the generator seeded with o.seed, in name order: labels
--- (`*_label`) with i * o.step % o.classes, other arguments from normal(0, o.scale or 1),
--- moving means from uniform(-0.5, 0.5) and moving variances from uniform(0.5, 2). With
--- o.monitor a no-op monitor is installed (the executor then runs fused steps one by one).
function H.bind_filled(sym, o)
  local exe = sym:simple_bind{ctx = mx.cpu(), data = o.shape, grad_req = o.req or 'write',
                              type_dict = o.dtype and {data = o.dtype} or nil}
  mx.random.seed(o.seed or 11)
  for _, dict in ipairs{'arg_dict', 'aux_dict'} do
    local names = {}
    for name in pairs(exe[dict]) do names[#names + 1] = name end
    table.sort(names)
    for _, name in ipairs(names) do
      local a = exe[dict][name]
      local v
      if name:match('_label$') then
        local t = {}
        for i = 1, a.shape[1] do t[i] = i * (o.step or 1) % (o.classes or 10) end
        v = mx.nd.array(t)
      elseif name:match('_moving_var$') then
        v = mx.nd.random.uniform(0.5, 2, a.shape)
      elseif name:match('_moving_mean$') then
        v = mx.nd.random.uniform(-0.5, 0.5, a.shape)
      else
        v = mx.nd.random.normal(0, o.scale or 1, a.shape)
      end
      v:astype(a.dtype):copyto(a)
    end
  end
  if o.monitor then exe:set_monitor_callback(function() end) end
  return exe
end

--- One forward of exe (is_train = train), and a backward when train.
function H.step(exe, train)
  exe:forward{is_train = train or false}
  if train then exe:backward() end
end

--- sym bound twice with H.bind_filled(sym, o), the second with a monitor (which runs an
--- executor's fused steps one by one), a forward run on both (and a backward when
--- o.train), then their outputs checked within tol and, with o.train, their gradients
--- within gtol. Returns both executors (fused, step by step).
function H.fused_vs_steps(sym, o, tol, gtol)
  local exes = {}
  for k, monitor in ipairs{false, true} do
    local bo = {monitor = monitor}
    for key, v in pairs(o) do bo[key] = v end
    if not o.train then bo.req = 'null' end
    exes[k] = H.bind_filled(sym, bo)
    H.step(exes[k], o.train)
  end
  local a, b = exes[1], exes[2]
  H.near(a.outputs[1]:toflat(), b.outputs[1]:toflat(), tol)
  if o.train then
    for nm, g in pairs(b.grad_dict) do H.near(a.grad_dict[nm]:toflat(), g:toflat(), gtol) end
  end
  return a, b
end

--- Live blocks of the engine allocator.
function H.live_blocks()
  local n = ffi.new('int64_t[1]')
  C.lmx_debug_alloc_stats(n, nil, nil)
  return tonumber(n[0])
end

--- Bytes the engine allocator holds live.
function H.live_bytes()
  local n = ffi.new('int64_t[1]')
  C.lmx_debug_alloc_stats(nil, n, nil)
  return tonumber(n[0])
end

--- Allocations the engine has made since it was loaded (a counter that only grows).
function H.total_allocs()
  local n = ffi.new('int64_t[1]')
  C.lmx_debug_alloc_stats(nil, nil, n)
  return tonumber(n[0])
end

--- Collects until the engine's live block count stops falling. A finalizer can release
--- engine objects that hold the last reference to further Lua objects, so one or two
--- cycles are not always enough, and how much each cycle frees depends on the order the
--- finalizers run in (LuaJIT keeps them in a table keyed by address). Compiled traces
--- go first: a trace keeps the objects it specialised on (a closure and what its upvalues
--- reach, such as a whole Module) alive as constants, and which loops get compiled, and
--- when, depends on where the bytecode lies in memory (the hot counters are hashed by
--- address), so without the flush an object can outlive its last reference in one run
--- out of twenty.
function H.full_gc()
  jit.flush()
  collectgarbage('collect')
  local n = H.live_blocks()
  for _ = 1, 10 do
    collectgarbage('collect')
    local m = H.live_blocks()
    if m == n then break end
    n = m
  end
end

--- An array file pair for the PyTorch reference scripts: `put(kind, name, arr)` appends
--- arr's float32 values to <dir>/arrays.bin and a line `<kind> <name> <ndim> <dims...>` to
--- <dir>/manifest.txt; `line(text)` appends a line of its own; `close()` ends both.
function H.array_writer(dir)
  local man = assert(io.open(dir .. '/manifest.txt', 'w'))
  local bin = assert(io.open(dir .. '/arrays.bin', 'wb'))
  local w = {}
  function w.put(kind, name, arr)
    local flat = arr:toflat()
    local buf = ffi.new('float[?]', #flat)
    for i = 1, #flat do buf[i - 1] = flat[i] end
    bin:write(ffi.string(buf, 4 * #flat))
    man:write(('%s %s %d %s\n'):format(kind, name, #arr.shape, table.concat(arr.shape, ' ')))
  end
  function w.line(text) man:write(text, '\n') end
  function w.close() man:close() bin:close() end
  return w
end

return H
