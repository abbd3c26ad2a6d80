--- luamx.ndarray — mx.nd: n-dimensional arrays over the engine's lmx_ndarray handles.
--
-- An NDArray is a Lua table {_h = cdata} whose handle is wrapped in ffi.gc at birth, so
-- the garbage collector frees it; a:free() frees it at once and later use of `a` is a
-- clean error ("NDArray has been freed"). The engine reference-counts storage, so views
-- (reshape, slice) stay valid whatever order handles are freed in.
--
-- Memory pressure: Lua sees only a small table per array, so the collector would not run
-- while large arrays pile up. The engine counts the bytes of the arrays we hold
-- (lmx_ndarray_hold / lmx_ndarray_drop, the finalizer) and a collection is forced when
-- they pass a threshold that doubles with the live set (`pressure`).
local ffi = require 'ffi'
local capi = require 'luamx.capi'
local context = require 'luamx.context'
local C, check, raise = capi.C, capi.check, capi.raise

local M = {}
local NDArray = {}
M.NDArray = NDArray

-- mx.autograd's state (luamx.autograd installs the functions): while recording,
-- arithmetic, dot, reshape, slices, row reads, astype and copy run as the equivalent
-- registered operators (recorded, differentiable) instead of direct C calls and views.
local ag = {recording = false, training = false}
M.autograd_state = ag

local dtype_names = {}
for i = 0, tonumber(C.LMX_NUM_DTYPES) - 1 do
  local name = C.lmx_dtype_name(i) -- NULL for the codes luamx does not support
  if name ~= nil then dtype_names[i] = ffi.string(name) end
end

--- dtype code from a name (or a code); errors name the bad value.
local function dtype_code(dt, level, who)
  if dt == nil then return tonumber(C.LMX_FLOAT32) end
  if type(dt) == 'number' and dtype_names[dt] then return dt end
  if type(dt) == 'string' then
    local out = ffi.new('int[1]')
    check(C.lmx_dtype_from_name(dt, out), (level or 2) + 1, who)
    return out[0]
  end
  raise((who and who .. ': ' or '') .. 'dtype must be a name such as \'float32\', got ' .. tostring(dt))
end
M.dtype_code = dtype_code
M.dtype_names = dtype_names

-- ---------------------------------------------------------------- memory pressure --
-- Lua's collector sees a wrapper's few bytes, not the array behind it, so the engine
-- counts the bytes of the handles we hold (lmx_ndarray_hold / lmx_ndarray_drop) and a
-- full collection runs when that total passes the threshold. The finalizer is the C
-- function itself: the collector calls it without running any Lua.
local threshold, BASE_THRESHOLD = 256 * 2 ^ 20, 256 * 2 ^ 20
local drop = C.lmx_ndarray_drop

local function pressure()
  collectgarbage('collect')
  threshold = math.max(BASE_THRESHOLD, 2 * C.lmx_ndarray_held())
end

--- Wraps a fresh handle (one reference owned by us) into an NDArray.
local function wrap(h)
  if C.lmx_ndarray_hold(h) > threshold then pressure() end
  return setmetatable({_h = ffi.gc(h, drop)}, NDArray)
end
M.wrap = wrap

local out_h = ffi.new('lmx_ndarray *[1]')
--- Calls fn(..., out) and wraps the new handle; fn is a C function with an out param.
local function new_from(level, fn, ...)
  local args = {...}
  args[#args + 1] = out_h
  check(fn(unpack(args, 1, #args)), level + 1)
  return wrap(out_h[0])
end

local function handle(a, level)
  if getmetatable(a) ~= NDArray then
    raise('expected an NDArray, got ' .. (type(a) == 'table' and 'a table' or type(a)))
  end
  local h = rawget(a, '_h')
  if not h then raise('NDArray has been freed') end
  return h
end
M.handle = handle

--- True when x is an NDArray.
function M.is_ndarray(x) return getmetatable(x) == NDArray end

-- ------------------------------------------------------------------ shapes ---------
local dims_buf = ffi.new('int64_t[?]', C.LMX_MAX_NDIM)

local function shape_arg(shape, level, what)
  if type(shape) == 'number' then shape = {shape} end
  if type(shape) ~= 'table' then
    raise(('%s: shape must be a table of integers such as {2, 3}, got %s'):format(what, type(shape)))
  end
  local n = #shape
  if n > C.LMX_MAX_NDIM then
    raise(('%s: at most %d dims are supported, got %d'):format(what, C.LMX_MAX_NDIM, n))
  end
  local d = ffi.new('int64_t[?]', math.max(n, 1))
  for i = 1, n do
    local v = shape[i]
    if type(v) ~= 'number' or v % 1 ~= 0 then
      raise(('%s: shape[%d] must be an integer, got %s'):format(what, i, tostring(v)))
    end
    if v > 2 ^ 62 then
      raise(('%s: shape[%d] = %.0f is too large'):format(what, i, v))
    end
    d[i - 1] = v
  end
  return d, n
end
M.shape_arg = shape_arg

--- Checks a shape that the Lua layer is about to copy into an FFI dims buffer: a table
-- without holes of at most LMX_MAX_NDIM integers in [0, 2^62] (`lo` = -1 admits the -1
-- of shapes still to infer). `what` names the caller and the shape in the message.
-- Returns the number of dims.
function M.check_dims(shape, what, lo)
  if type(shape) ~= 'table' then
    raise(('%s must be a table of integers such as {2, 3}, got %s'):format(what, type(shape)))
  end
  local n = #shape
  if (table.maxn(shape) or 0) ~= n then
    raise(('%s has a hole: entry %d is nil but entry %s is set (a shape is a list of integers)')
      :format(what, n + 1, tostring(table.maxn(shape))))
  end
  if n > C.LMX_MAX_NDIM then
    raise(('%s has %d dims; at most %d are supported'):format(what, n, C.LMX_MAX_NDIM))
  end
  lo = lo or 0
  for i = 1, n do
    local v = shape[i]
    if type(v) ~= 'number' or v % 1 ~= 0 or v < lo or v > 2 ^ 62 then
      raise(('%s: dim %d must be an integer in [%d, 2^62], got %s'):format(what, i, lo, tostring(v)))
    end
  end
  return n
end

local function shape_of(h)
  local nd = ffi.new('int[1]')
  C.lmx_ndarray_shape(h, dims_buf, C.LMX_MAX_NDIM, nd)
  local s = {}
  for i = 1, nd[0] do s[i] = tonumber(dims_buf[i - 1]) end
  return s
end

local function opts_of(opts, level, who)
  opts = opts or {}
  if context.is_context(opts) then opts = {ctx = opts} end -- mx.nd.zeros({2, 3}, mx.cpu())
  if type(opts) ~= 'table' or getmetatable(opts) ~= nil then
    require('luamx.check').fail(who or 'NDArray', 'options', 'a table {ctx =, dtype =}', opts)
  end
  local ctx = context.resolve(opts.ctx, level + 1)
  return ctx, dtype_code(opts.dtype, level + 1, who)
end

-- --------------------------------------------------------------- creation ----------
local function empty(shape, opts, level, what)
  level = level + 1
  local d, n = shape_arg(shape, level, what)
  local ctx, dt = opts_of(opts, level, what)
  return new_from(level, C.lmx_ndarray_new, d, n, dt, ctx.dev_code, ctx.device_id)
end

--- A new array of `shape` with unspecified contents.
-- @param shape table of integers, e.g. {2, 3}
-- @param opts `ctx` (default cpu), `dtype` (default 'float32')
-- @usage mx.nd.empty({2, 3}, {dtype = 'float64'})
function M.empty(shape, opts) return empty(shape, opts, 2, 'mx.nd.empty') end
--- A new array of `shape` filled with 0.
-- @usage mx.nd.zeros{2, 3}
function M.zeros(shape, opts) return empty(shape, opts, 2, 'mx.nd.zeros') end
--- A new array of `shape` filled with 1.
-- @usage mx.nd.ones({4}, {ctx = mx.cpu()})
function M.ones(shape, opts)
  local a = empty(shape, opts, 2, 'mx.nd.ones')
  check(C.lmx_ndarray_fill(a._h, 1), 2)
  return a
end

--- A new array of `shape` filled with `value`.
-- @usage mx.nd.full({2, 2}, 7)
function M.full(shape, value, opts)
  if type(value) ~= 'number' then raise('mx.nd.full: value must be a number, got ' .. type(value)) end
  local a = empty(shape, opts, 2, 'mx.nd.full')
  check(C.lmx_ndarray_fill(a._h, value), 2)
  return a
end

--- Flattens a nested table, checking that it is rectangular and numeric.
local function flatten(t, what)
  local shape, flat = {}, {}
  local probe = t
  while type(probe) == 'table' and getmetatable(probe) == nil do -- objects (a Symbol) end the probe
    shape[#shape + 1] = #probe
    probe = probe[1]
  end
  local function walk(x, depth, path)
    if depth > #shape then
      if type(x) ~= 'number' then
        raise(('%s: element %s must be a number, got %s'):format(what, path, type(x) == 'string' and ('string "' .. x .. '"')
          or (type(x) == 'table' and getmetatable(x)) and require('luamx.check').describe(x) or type(x)))
      end
      flat[#flat + 1] = x
      return
    end
    if type(x) ~= 'table' then
      raise(('%s: element %s must be a table of %d entries (rows must all have the same shape), got %s'):format(what, path, shape[depth], type(x)))
    end
    local maxn = table.maxn(x) -- # may stop at a hole or skip it: look for one
    for i = 1, maxn do
      if x[i] == nil then
        raise(('%s: element %s[%d] is nil (a hole before entry %d); every entry must be '
          .. 'a number'):format(what, path, i, maxn))
      end
    end
    if #x ~= shape[depth] then
      raise(('%s: element %s has %d entries, expected %d (rows must all have the same length)'):format(what, path, #x, shape[depth]))
    end
    for i = 1, #x do walk(x[i], depth + 1, path .. '[' .. i .. ']') end
  end
  walk(t, 1, '')
  return shape, flat
end

--- A new array from a nested table of numbers (or a copy of an NDArray).
-- @param src nested table, number or NDArray
-- @param opts `ctx`, `dtype`
-- @usage mx.nd.array{{1, 2}, {3, 4}}
function M.array(src, opts)
  if M.is_ndarray(src) then
    local ctx, dt = opts_of(opts, 2, 'mx.nd.array')
    local a = M.empty(src.shape, {ctx = ctx, dtype = dt})
    check(C.lmx_ndarray_copyto(handle(src, 2), a._h), 2)
    return a
  end
  if type(src) == 'number' then src = {src} end
  if type(src) ~= 'table' then raise('mx.nd.array: expected a (nested) table of numbers, got ' .. type(src)) end
  if getmetatable(src) ~= nil then -- an object (a Symbol indexes without end): not a nested list
    require('luamx.check').fail('mx.nd.array', 'source', 'a (nested) table of numbers or an NDArray', src)
  end
  local shape, flat = flatten(src, 'mx.nd.array')
  if #shape > C.LMX_MAX_NDIM then
    raise(('mx.nd.array: at most %d dims are supported, got %d'):format(C.LMX_MAX_NDIM, #shape))
  end
  local a = empty(shape, opts, 2, 'mx.nd.array')
  local n = #flat
  local buf = ffi.new('double[?]', math.max(n, 1))
  for i = 1, n do buf[i - 1] = flat[i] end
  check(C.lmx_ndarray_set_f64(a._h, buf, n), 2)
  return a
end

--- Values start, start + step, ... below stop (one argument: 0 .. start - 1).
-- @usage mx.nd.arange(0, 6):reshape{2, 3}
function M.arange(start, stop, step, opts)
  if stop == nil then start, stop = 0, start end
  step = step or 1
  for name, v in pairs {start = start, stop = stop, step = step} do
    if type(v) ~= 'number' then raise(('mx.nd.arange: %s must be a number, got %s'):format(name, type(v))) end
  end
  if step == 0 then raise('mx.nd.arange: step must not be 0') end
  local n = math.max(0, math.ceil((stop - start) / step))
  local a = empty({n}, opts, 2, 'mx.nd.arange')
  local buf = ffi.new('double[?]', math.max(n, 1))
  for i = 0, n - 1 do buf[i] = start + i * step end
  check(C.lmx_ndarray_set_f64(a._h, buf, n), 2)
  return a
end

-- -------------------------------------------------------------- properties ---------
local props = {}
--- a.shape: the dims as a fresh table.
function props.shape(a) return shape_of(handle(a, 3)) end
--- a.ndim: the number of dims.
function props.ndim(a) return #shape_of(handle(a, 3)) end
--- a.size: the number of elements.
function props.size(a)
  local s = ffi.new('int64_t[1]')
  check(C.lmx_ndarray_size(handle(a, 3), s), 3)
  return tonumber(s[0])
end
--- a.dtype: the element type's name ('float32', ...).
function props.dtype(a)
  local d = ffi.new('int[1]')
  check(C.lmx_ndarray_dtype(handle(a, 3), d), 3)
  return dtype_names[d[0]]
end
--- a.context: the device the array lives on.
function props.context(a)
  local t, i = ffi.new('int[1]'), ffi.new('int[1]')
  check(C.lmx_ndarray_context(handle(a, 3), t, i), 3)
  return context.from_code(t[0], i[0])
end

-- a[i] (1-based, negative from the end) is row i as a view with the first axis dropped,
-- as MXNet's a[i - 1]; a[{first, last}] is rows first..last (inclusive) as a view.
local function row_range(a, k, what)
  local shape = shape_of(handle(a, 4))
  if #shape == 0 then raise(what .. ': cannot index a 0-dim array') end
  local n = shape[1]
  local first, last
  if type(k) == 'number' then first, last = k, k
  else first, last = k[1], k[2] == nil and n or k[2] end
  if type(first) ~= 'number' or type(last) ~= 'number' or first % 1 ~= 0 or last % 1 ~= 0 then
    raise(('%s: positions must be integers, as a[2] or a[{2, 4}], got %s and %s')
      :format(what, tostring(first), tostring(last)))
  end
  local f0, l0 = first, last
  if first < 0 then first = n + 1 + first end
  if last < 0 then last = n + 1 + last end
  if first < 1 or last > n or first > last then
    raise(('%s: rows %d..%d are out of range for an array of %d rows (positions count from 1, '
      .. 'inclusive; negative ones from the end)'):format(what, f0, l0, n))
  end
  return first, last, shape
end

local function index(a, k)
  if ag.recording then return ag.index(a, k) end
  local first, last, shape = row_range(a, k, 'NDArray index')
  local v = M.wrap_slice(a, first, last)
  if type(k) == 'number' and #shape > 1 then
    local rest = {}
    for d = 2, #shape do rest[d - 1] = shape[d] end
    return v:reshape(rest)
  end
  return v
end

NDArray.__index = function(a, k)
  local p = props[k]
  if p then return p(a) end
  local m = NDArray[k]
  if m ~= nil then return m end
  local t = type(k)
  if t == 'number' or (t == 'table' and getmetatable(k) == nil) then return index(a, k) end
  return nil
end

--- a[i] = value / a[{first, last}] = value: writes rows (value: number, table or NDArray).
NDArray.__newindex = function(a, k, v)
  local t = type(k)
  if t == 'number' or (t == 'table' and getmetatable(k) == nil) then
    local first, last, shape = row_range(a, k, 'NDArray assignment')
    local view = M.wrap_slice(a, first, last)
    if type(k) == 'number' and #shape > 1 and type(v) == 'table' and not M.is_ndarray(v) then
      v = {v}
    end
    if M.is_ndarray(v) and v.size == view.size then v = v:reshape(view.shape) end
    view:set(v)
    return
  end
  rawset(a, k, v)
end

M.props = props

-- Property names, for completion and help (luamx.repl.complete reads __fields).
NDArray.__fields = props

-- ----------------------------------------------------------------- methods ---------
--- Frees the array now (later use is a clean error); the GC would otherwise.
function NDArray:free()
  local h = rawget(self, '_h')
  if h then
    self._h = nil
    ffi.gc(h, nil)
    drop(h)
  end
end

--- A new array with the same values, dtype and context.
function NDArray:copy()
  if ag.recording then return ag.copy(self) end
  return M.array(self, {ctx = self.context, dtype = self.dtype})
end

--- Copies into `target` (an NDArray) or into a new array on a context.
-- @usage a:copyto(mx.cpu())
function NDArray:copyto(target)
  local h = handle(self, 2)
  if M.is_ndarray(target) then
    check(C.lmx_ndarray_copyto(h, handle(target, 2)), 2)
    return target
  end
  local ctx = context.resolve(target, 2)
  local out = M.empty(self.shape, {ctx = ctx, dtype = self.dtype})
  check(C.lmx_ndarray_copyto(h, out._h), 2)
  return out
end

--- The array on `ctx`: itself when already there, else a copy.
function NDArray:as_in_context(ctx)
  ctx = context.resolve(ctx, 2)
  if ctx == self.context then return self end
  return self:copyto(ctx)
end

--- A copy converted to `dtype`.
-- @usage a:astype('int32')
function NDArray:astype(dtype)
  if ag.recording then return ag.astype(self, dtype) end
  local dt = dtype_code(dtype, 2, 'astype')
  local out = M.empty(self.shape, {ctx = self.context, dtype = dt})
  check(C.lmx_ndarray_copyto(handle(self, 2), out._h), 2)
  return out
end

--- A view with another shape of the same size (-1: inferred dim).
-- @usage mx.nd.arange(0, 6):reshape{2, -1}
function NDArray:reshape(shape, ...)
  if type(shape) == 'number' then shape = {shape, ...} end
  if ag.recording then return ag.reshape(self, shape) end
  local d, n = shape_arg(shape, 2, 'reshape')
  return new_from(2, C.lmx_ndarray_reshape, handle(self, 2), d, n)
end

--- Rows first..last (1-based, inclusive) along the first axis, as a view.
-- @param first first row (1 is the first; negative counts from the end)
-- @param last last row (default: first)
-- @usage mx.nd.arange(0, 6):reshape{3, 2}:slice(2, 3)  -- rows 2 and 3
function NDArray:slice(first, last)
  if type(first) ~= 'number' or (last ~= nil and type(last) ~= 'number') then
    raise('slice: first and last must be integers')
  end
  local f, l = row_range(self, {first, last or first}, 'slice')
  if ag.recording then return ag.rows(self, f, l) end
  return M.wrap_slice(self, f, l)
end

-- View of rows first..last (1-based, checked by the caller).
--- A view of rows first..last (1-based, inclusive; the caller checks the range).
function M.wrap_slice(a, first, last)
  return new_from(3, C.lmx_ndarray_slice, handle(a, 3), first - 1, last)
end

--- Sets every element to the number v; returns the array.
function NDArray:fill(v)
  if type(v) ~= 'number' then raise('fill: value must be a number, got ' .. type(v)) end
  check(C.lmx_ndarray_fill(handle(self, 2), v), 2)
  return self
end

--- Writes values from an NDArray, a number or a nested table of the same shape.
-- @usage a:set{{1, 2}, {3, 4}}
function NDArray:set(src)
  local h = handle(self, 2)
  if M.is_ndarray(src) then
    check(C.lmx_ndarray_copyto(handle(src, 2), h), 2)
    return self
  end
  if type(src) == 'number' then return self:fill(src) end
  if type(src) ~= 'table' then raise('set: expected an NDArray, a number or a table, got ' .. type(src)) end
  local shape, flat = flatten(src, 'set')
  local mine = self.shape
  local same = #shape == #mine
  for i = 1, #shape do same = same and shape[i] == mine[i] end
  if not same then
    raise(('set: table of shape {%s} does not match the array\'s shape {%s}'):format(
      table.concat(shape, ','), table.concat(mine, ',')))
  end
  local buf = ffi.new('double[?]', math.max(#flat, 1))
  for i = 1, #flat do buf[i - 1] = flat[i] end
  check(C.lmx_ndarray_set_f64(h, buf, #flat), 2)
  return self
end

--- Values as a flat Lua array (C order).
function NDArray:toflat()
  local n = self.size
  local buf = ffi.new('double[?]', math.max(n, 1))
  check(C.lmx_ndarray_get_f64(handle(self, 2), buf, n), 2)
  local t = {}
  for i = 1, n do t[i] = buf[i - 1] end
  return t
end

--- The values as a nested Lua table (a number for a 0-dim array).
function NDArray:totable()
  local shape, flat = self.shape, self:toflat()
  if #shape == 0 then return flat[1] end
  local pos = 0
  local function build(d)
    local t = {}
    for i = 1, shape[d] do
      if d == #shape then pos = pos + 1; t[i] = flat[pos]
      else t[i] = build(d + 1) end
    end
    return t
  end
  return build(1)
end

local function scalar(a, what)
  local n = a.size
  if n ~= 1 then raise(('%s: the array has %d elements, expected 1'):format(what, n)) end
  return a:toflat()[1]
end

--- The value of a one-element array as a Lua number.
-- @usage mx.nd.array{3}:tonumber()  --> 3
function NDArray:tonumber() return scalar(self, 'tonumber') end

--- The value of a one-element array as a Lua number (MXNet's name for tonumber).
-- @usage mx.nd.ones{1}:sum():asscalar()  --> 1
function NDArray:asscalar() return scalar(self, 'asscalar') end

--- The FFI pointer to a CPU array's elements (valid while the array lives).
function NDArray:data()
  local p = ffi.new('void *[1]')
  check(C.lmx_ndarray_data(handle(self, 2), p), 2)
  local ct = ({float32 = 'float *', float64 = 'double *', float16 = 'uint16_t *', bfloat16 = 'uint16_t *', uint8 = 'uint8_t *',
               int32 = 'int32_t *', int8 = 'int8_t *', int64 = 'int64_t *'})[self.dtype]
  return ffi.cast(ct, p[0])
end

--- Waits until pending writes to the array are done; returns it.
function NDArray:wait_to_read() check(C.lmx_ndarray_wait_to_read(handle(self, 2)), 2) return self end
--- Waits until every pending operation is done.
function M.waitall() check(C.lmx_waitall(), 2) end

-- ---------------------------------------------------------------- printing ---------
local EDGE, THRESHOLD = 3, 1000

local function fmt_num(v, is_int)
  if is_int then return ('%d'):format(v) end
  if v ~= v then return 'nan' end
  if v == math.huge then return 'inf' elseif v == -math.huge then return '-inf' end
  if v == math.floor(v) and math.abs(v) < 1e16 then return ('%d.'):format(v) end
  return ('%.6g'):format(v)
end

function NDArray.__tostring(a)
  if not rawget(a, '_h') then return '<NDArray freed>' end
  local shape, flat = a.shape, a:toflat()
  local is_int = not a.dtype:match('float')
  local summarise = #flat > THRESHOLD
  local strs, width = {}, 0
  for i, v in ipairs(flat) do
    strs[i] = fmt_num(v, is_int)
    if #strs[i] > width then width = #strs[i] end
  end
  local strides, s = {}, 1
  for d = #shape, 1, -1 do strides[d] = s; s = s * shape[d] end
  local function block(d, base, indent)
    if d > #shape then return ('%' .. width .. 's'):format(strs[base + 1] or '') end
    local n, parts = shape[d], {}
    local function add(i) parts[#parts + 1] = block(d + 1, base + (i - 1) * strides[d], indent .. ' ') end
    if summarise and n > 2 * EDGE then
      for i = 1, EDGE do add(i) end
      parts[#parts + 1] = '...'
      for i = n - EDGE + 1, n do add(i) end
    else
      for i = 1, n do add(i) end
    end
    local sep = d == #shape and ' ' or ('\n' .. indent .. ' ')
    if d < #shape - 1 then sep = '\n' .. sep end
    return '[' .. table.concat(parts, sep) .. ']'
  end
  local body = #shape == 0 and strs[1] or block(1, 0, '')
  local desc = ffi.new('char[128]')
  C.lmx_ndarray_describe(a._h, desc, 128)
  return body .. '\n<NDArray ' .. ffi.string(desc) .. '>'
end

-- -------------------------------------------------------------- arithmetic ---------
local BIN = {add = C.LMX_BIN_ADD, sub = C.LMX_BIN_SUB, mul = C.LMX_BIN_MUL, div = C.LMX_BIN_DIV,
             pow = C.LMX_BIN_POW, max = C.LMX_BIN_MAX, min = C.LMX_BIN_MIN}

M.BIN = BIN

local function arith(op, x, y, level)
  level = level + 1
  if ag.recording then return ag.arith(op, x, y, level) end
  local xa, ya = M.is_ndarray(x), M.is_ndarray(y)
  -- direct calls (not new_from): no table per operation on this hot path
  if xa and ya then
    check(C.lmx_ndarray_binary(op, handle(x, level), handle(y, level), out_h), level)
    return wrap(out_h[0])
  end
  if xa and type(y) == 'number' then
    check(C.lmx_ndarray_scalar(op, handle(x, level), y, 0, out_h), level)
    return wrap(out_h[0])
  end
  if ya and type(x) == 'number' then
    check(C.lmx_ndarray_scalar(op, handle(y, level), x, 1, out_h), level)
    return wrap(out_h[0])
  end
  raise(('arithmetic on an NDArray and a %s (expected an NDArray or a number)'):format(
    type(xa and y or x)))
end

NDArray.__add = function(x, y) return arith(BIN.add, x, y, 2) end
NDArray.__sub = function(x, y) return arith(BIN.sub, x, y, 2) end
NDArray.__mul = function(x, y) return arith(BIN.mul, x, y, 2) end
NDArray.__div = function(x, y) return arith(BIN.div, x, y, 2) end
NDArray.__pow = function(x, y) return arith(BIN.pow, x, y, 2) end
NDArray.__unm = function(x) return arith(BIN.mul, x, -1, 2) end

--- x + y (arrays broadcast, or an array and a number).
function M.add(x, y) return arith(BIN.add, x, y, 2) end
--- x - y.
function M.subtract(x, y) return arith(BIN.sub, x, y, 2) end
--- x * y, elementwise.
function M.multiply(x, y) return arith(BIN.mul, x, y, 2) end
--- x / y, elementwise.
function M.divide(x, y) return arith(BIN.div, x, y, 2) end
--- x ^ y, elementwise.
function M.power(x, y) return arith(BIN.pow, x, y, 2) end
--- Elementwise maximum of x and y.
function M.maximum(x, y) return arith(BIN.max, x, y, 2) end
--- Elementwise minimum of x and y.
function M.minimum(x, y) return arith(BIN.min, x, y, 2) end

--- Matrix product of two arrays.
-- @usage mx.nd.dot(a, mx.nd.ones{3, 1})
function M.dot(a, b)
  local chk = require 'luamx.check'
  chk.ndarray('mx.nd.dot', 'a', a)
  chk.ndarray('mx.nd.dot', 'b', b)
  if ag.recording then return ag.dot(a, b) end
  return new_from(2, C.lmx_ndarray_dot, handle(a, 2), handle(b, 2))
end

-- ------------------------------------------------------------------ random ---------
M.random = {}

function M.random.uniform(low, high, shape, opts)
  low, high = low or 0, high or 1
  local chk = require 'luamx.check'
  chk.number('mx.nd.random.uniform', 'low', low)
  chk.number('mx.nd.random.uniform', 'high', high)
  local a = empty(shape or {1}, opts, 2, 'mx.nd.random.uniform')
  check(C.lmx_random_uniform(a._h, low, high), 2)
  return a
end

function M.random.normal(mean, std, shape, opts)
  mean, std = mean or 0, std or 1
  local chk = require 'luamx.check'
  chk.number('mx.nd.random.normal', 'mean', mean)
  chk.number('mx.nd.random.normal', 'std', std)
  local a = empty(shape or {1}, opts, 2, 'mx.nd.random.normal')
  check(C.lmx_random_normal(a._h, mean, std), 2)
  return a
end

return M
