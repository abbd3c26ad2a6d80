--- luamx.monitor — mx.monitor.Monitor: per-operator statistics of executors (MXNet 1.9
--- python/mxnet/monitor.py), and re_match, the name-pattern matcher used here and by
--- mx.init.Mixed.
--
--   local mon = mx.monitor.Monitor(10)          -- every 10th batch, RMS of each array
--   mon:install(exe); mon:tic(); exe:forward(...); for _, e in ipairs(mon:toc()) do ... end
--
-- Invariants (MXNet's): tic() activates collection when step % interval == 0 and always
-- increments step, so the first reported step is 1. While active, the executor's monitor
-- callback queues {step, name, stat_func(array)} for names matching the pattern; the
-- statistic is computed during the callback (arrays are only valid then). toc() adds
-- every matching argument and auxiliary state of the installed executors, deactivates,
-- sorts by name when asked, and returns entries {step, name, value} (also .step, .name,
-- .value) where value is MXNet's text: each statistic, a (1,)-shaped array as its
-- float32 scalar, followed by a tab. The default stat_func is norm(x)/sqrt(x.size)
-- (the root mean square) as a 1-element float32 NDArray.
--
-- Patterns: MXNet uses Python's re.match (anchored at the start, not at the end). We
-- translate a subset to Lua patterns: literals, '.', '*', '+', '?', lazy '*?', '^', '$',
-- character classes '[...]', escapes '\d \w \s \D \W \S \.', top-level alternation
-- 'a|b', and groups without quantifiers. Repetition counts '{m,n}' and quantified
-- groups raise an error. A pattern starting with 'lua:' is used as a raw Lua pattern
-- (anchored at the start).
local ffi = require 'ffi'
local capi = require 'luamx.capi'
local nd = require 'luamx.ndarray'
local raise = capi.raise

local M = {}

--- Writes a log line to stderr (used by `toc_print`; replace it to redirect).
-- @param msg the message
function M.log(msg) io.stderr:write(msg, '\n') end

-- ------------------------------------------------------------------ patterns -------
local ESC = {d = '%d', w = '[%w_]', s = '%s', D = '%D', W = '[^%w_]', S = '%S'}
local CLASS_ESC = {d = '%d', w = '%w_', s = '%s'}

local function translate_alt(re, full)
  local out, i, n = {}, 1, #re
  local function unsupported(what) raise(('pattern %q: %s is not supported'):format(full, what)) end
  while i <= n do
    local c = re:sub(i, i)
    if c == '\\' then
      local e = re:sub(i + 1, i + 1)
      if e == '' then unsupported('a trailing backslash') end
      out[#out + 1] = ESC[e] or (e:match('%w') and e or '%' .. e)
      i = i + 2
    elseif c == '[' then
      local j, cls = i + 1, {'['}
      if re:sub(j, j) == '^' then cls[#cls + 1] = '^'; j = j + 1 end
      if re:sub(j, j) == ']' then cls[#cls + 1] = '%]'; j = j + 1 end
      while j <= n and re:sub(j, j) ~= ']' do
        local d = re:sub(j, j)
        if d == '\\' then
          local e = re:sub(j + 1, j + 1)
          cls[#cls + 1] = CLASS_ESC[e] or '%' .. e
          j = j + 2
        else
          cls[#cls + 1] = (d == '%') and '%%' or d
          j = j + 1
        end
      end
      if j > n then unsupported('an unterminated [') end
      cls[#cls + 1] = ']'
      out[#out + 1] = table.concat(cls)
      i = j + 1
    elseif c == '*' and re:sub(i + 1, i + 1) == '?' then
      out[#out + 1] = '-'; i = i + 2
    elseif c == '*' or c == '+' or c == '?' then
      if re:sub(i - 1, i - 1) == ')' then unsupported('a quantified group') end
      out[#out + 1] = c; i = i + 1
    elseif c == '{' then unsupported("a repetition count '{m,n}'")
    elseif c == '(' then
      if re:sub(i + 1, i + 2) == '?:' then i = i + 3 else i = i + 1 end
    elseif c == ')' then
      local q = re:sub(i + 1, i + 1)
      if q == '*' or q == '+' or q == '?' or q == '{' then unsupported('a quantified group') end
      i = i + 1
    elseif c == '^' and i == 1 then i = i + 1
    elseif c == '$' and i == n then out[#out + 1] = '$'; i = i + 1
    elseif c:match('[%%%-%^%$]') then out[#out + 1] = '%' .. c; i = i + 1
    else out[#out + 1] = c; i = i + 1 end
  end
  return '^' .. table.concat(out)
end

--- Splits at top-level '|' (outside classes and groups).
local function alternatives(re, full)
  local parts, depth, start, i, inclass = {}, 0, 1, 1, false
  while i <= #re do
    local c = re:sub(i, i)
    if c == '\\' then i = i + 1
    elseif inclass then if c == ']' then inclass = false end
    elseif c == '[' then inclass = true
    elseif c == '(' then depth = depth + 1
    elseif c == ')' then depth = depth - 1
    elseif c == '|' then
      if depth > 0 then raise(('pattern %q: alternation inside a group is not supported'):format(full)) end
      parts[#parts + 1] = re:sub(start, i - 1); start = i + 1
    end
    i = i + 1
  end
  parts[#parts + 1] = re:sub(start)
  return parts
end

local cache = {}
--- Lua patterns for a Python-regex-ish pattern (see the top of this file).
function M.translate(re)
  if type(re) ~= 'string' then raise('mx.monitor: pattern must be a string, got ' .. type(re)) end
  local t = cache[re]
  if t then return t end
  if re:sub(1, 4) == 'lua:' then
    local p = re:sub(5)
    t = {p:sub(1, 1) == '^' and p or '^' .. p}
  else
    t = {}
    for i, alt in ipairs(alternatives(re, re)) do t[i] = translate_alt(alt, re) end
  end
  cache[re] = t
  return t
end

--- True when `name` matches `re` at its start (Python's re.match).
function M.re_match(re, name)
  require('luamx.check').type('mx.monitor.re_match', 'name', name, 'string')
  for _, p in ipairs(M.translate(re)) do
    if name:find(p) then return true end
  end
  return false
end

-- ------------------------------------------------------------------ statistics -----
--- Shortest decimal text that reads back as the same float32 (numpy's str()).
local function f32_text(v)
  if v ~= v then return 'nan' end
  if v == math.huge then return 'inf' elseif v == -math.huge then return '-inf' end
  local f = ffi.new('float[1]')
  for p = 1, 9 do
    local s = ('%.' .. p .. 'g'):format(v)
    f[0] = tonumber(s)
    if f[0] == v then
      if not s:find('[%.eEn]') then s = s .. '.0' end
      return s
    end
  end
  return ('%.9g'):format(v)
end
M.f32_text = f32_text

--- Root mean square of an array, as a 1-element float32 NDArray (MXNet's default stat).
function M.rms(x)
  local src = x
  if x.context.device_type ~= 'cpu' or (x.dtype ~= 'float32' and x.dtype ~= 'float64') then
    src = x:as_in_context(require('luamx.context').cpu()):astype('float64')
  end
  src:wait_to_read()
  local p, n, s = src:data(), src.size, 0
  for i = 0, n - 1 do s = s + p[i] * p[i] end
  return nd.array({n > 0 and math.sqrt(s) / math.sqrt(n) or 0})
end

local function render(v)
  if nd.is_ndarray(v) then v = {v} end
  local parts = {}
  for _, a in ipairs(v) do
    if not nd.is_ndarray(a) then raise('Monitor: stat_func must return an NDArray or an array of NDArrays') end
    local shape = a.shape
    if #shape == 1 and shape[1] == 1 then
      local f = ffi.new('float[1]', a:tonumber())
      parts[#parts + 1] = f32_text(f[0]) .. '\t'
    else
      parts[#parts + 1] = tostring(a) .. '\t'
    end
  end
  return table.concat(parts)
end

-- ------------------------------------------------------------------ Monitor --------
local Monitor = {}
Monitor.__index = Monitor

local Entry = {__index = function(e, k)
  if k == 'step' then return e[1] elseif k == 'name' then return e[2] elseif k == 'value' then return e[3] end
end}

--- Monitor(interval [, stat_func [, pattern='.*' [, sort=false [, monitor_all=false]]]]).
function M.Monitor(interval, stat_func, pattern, sort, monitor_all)
  if type(interval) ~= 'number' or interval < 1 or interval % 1 ~= 0 then
    raise('mx.monitor.Monitor: interval must be a positive integer, got ' .. tostring(interval))
  end
  pattern = pattern or '.*'
  M.translate(pattern)
  return setmetatable({interval = interval, stat_func = stat_func or M.rms, pattern = pattern,
                       sort = sort and true or false, monitor_all = monitor_all and true or false,
                       exes = {}, step = 0, activated = false, queue = {}}, Monitor)
end

--- Executor callback: queues `stat_func(arr)` for `name` when the monitor is active and
-- the name matches the pattern.
-- @param name array name
-- @param arr the NDArray
function Monitor:stat_helper(name, arr)
  if not self.activated or not M.re_match(self.pattern, name) then return end
  self.queue[#self.queue + 1] = {self.step, name, self.stat_func(arr)}
end

--- Attaches the monitor to an executor (sets its monitor callback).
-- @param exe an Executor (or anything with `set_monitor_callback`)
function Monitor:install(exe)
  exe:set_monitor_callback(function(name, arr) self:stat_helper(name, arr) end, self.monitor_all)
  self.exes[#self.exes + 1] = exe
end

local function names_of(exe, what)
  if exe[what] then return exe[what](exe) end
  if exe.symbol then return exe.symbol[what](exe.symbol) end
  raise('Monitor: the executor has neither ' .. what .. '() nor a symbol')
end

local function wait_all(self)
  for _, exe in ipairs(self.exes) do
    for _, a in ipairs(exe.arg_arrays or {}) do a:wait_to_read() end
    for _, a in ipairs(exe.aux_arrays or {}) do a:wait_to_read() end
  end
end

--- Starts a batch: every `interval` batches it activates collection.
function Monitor:tic()
  if self.step % self.interval == 0 then
    wait_all(self)
    self.queue = {}
    self.activated = true
  end
  self.step = self.step + 1
end

--- Ends a batch: when active, adds the stats of the matching arguments and auxiliary
-- states and returns everything collected (sorted by name when `sort` is set).
-- @return list of `{step, name, stat_string}` entries (empty when inactive)
function Monitor:toc()
  if not self.activated then return {} end
  wait_all(self)
  for _, exe in ipairs(self.exes) do
    local args, auxs = names_of(exe, 'list_arguments'), names_of(exe, 'list_auxiliary_states')
    for i, name in ipairs(args) do
      if M.re_match(self.pattern, name) then
        self.queue[#self.queue + 1] = {self.step, name, self.stat_func(exe.arg_arrays[i])}
      end
    end
    for i, name in ipairs(auxs) do
      if M.re_match(self.pattern, name) then
        self.queue[#self.queue + 1] = {self.step, name, self.stat_func(exe.aux_arrays[i])}
      end
    end
  end
  self.activated = false
  local q = self.queue
  if self.sort then
    for i, e in ipairs(q) do e[4] = i end
    table.sort(q, function(a, b) if a[2] ~= b[2] then return a[2] < b[2] end return a[4] < b[4] end)
  end
  local res = {}
  for i, e in ipairs(q) do res[i] = setmetatable({e[1], e[2], render(e[3])}, Entry) end
  self.queue = {}
  return res
end

--- Calls `toc` and logs each entry as MXNet does (`Batch: step name value`).
function Monitor:toc_print()
  for _, e in ipairs(self:toc()) do
    M.log(('Batch: %7d %-30s %s'):format(e[1], e[2], e[3]))
  end
end

--- Installs this module as `mx.monitor`.
-- @param mx the luamx module table
-- @return this module
function M.install(mx)
  mx.monitor = M
  return M
end

return M
