--- luamx.bucketing — a thin object over the engine's bucketing pool (src/exec/bucket.c),
-- for BucketingModule and scripts that bucket by hand.
--
--   local B = require('luamx.bucketing')
--   local pool = B.new(32, sym_gen, {ctx = mx.cpu(), grad_req = 'write',
--                                   data_shapes = {{'data', {32, 4}}},
--                                   label_shapes = {{'softmax_label', {32}}}})
--   local exe = pool:switch(8, {{'data', {8, 4}}}, {{'softmax_label', {8}}})
--
-- sym_gen(key) returns a Symbol (optionally followed by data_names, label_names, as
-- BucketingModule's sym_gen does); it is called once per new key (the symbols are
-- kept) and anything but a Symbol is an error naming the key. The default bucket is bound
-- first with simple_bind (ctx, grad_req, type_dict, and the shapes); every other bucket
-- is bound by the engine against it, sharing parameters, gradients, aux states and one
-- memory pool. Shapes are lists of DataDesc / {name, shape} pairs or a name -> shape
-- table. Keys are integers (the engine's keys are int64).
local ffi = require 'ffi'
local capi = require 'luamx.capi'
local C, check, raise = capi.C, capi.check, capi.raise

local M = {}
local Pool = {}
Pool.__index = Pool
M.BucketingPool = Pool

local function key_of(key, who)
  if type(key) ~= 'number' or key % 1 ~= 0 then
    raise(('%s: bucket keys are integers here, got %s'):format(who, tostring(key)))
  end
  return key
end

--- name, shape of a DataDesc, a {name, shape} pair, or a (name, shape) table entry.
local function desc(d, k)
  if type(k) == 'string' then return k, d end
  local name = d.name or d[1]
  local shape = d.shape or d[2]
  if type(name) ~= 'string' or type(shape) ~= 'table' then
    raise('bucketing: shapes are DataDesc objects or {name, shape} pairs')
  end
  return name, shape
end

local function shape_list(...)
  local names, shapes = {}, {}
  for _, list in ipairs({...}) do
    local iter = #list > 0 and ipairs or pairs
    for k, d in iter(list) do
      local name, shape = desc(d, k)
      names[#names + 1], shapes[#shapes + 1] = name, shape
    end
  end
  return names, shapes
end

local function gen(self, key)
  local sym, data_names, label_names = self.sym_gen(key)
  if not self._sym_mod.is_symbol(sym) then
    raise(('bucketing: sym_gen(%s) must return a Symbol, got %s'):format(tostring(key),
      type(sym) == 'table' and 'a table' or type(sym)))
  end
  self.symbols[key] = sym
  self.data_names[key], self.label_names[key] = data_names, label_names
  self.sym_gen_calls = self.sym_gen_calls + 1
  return sym
end

--- new(default_key, sym_gen, opts): opts = {ctx=, grad_req=, type_dict=, data_shapes=,
--- label_shapes=}.
function M.new(default_key, sym_gen, opts)
  opts = opts or {}
  key_of(default_key, 'bucketing.new')
  if type(sym_gen) ~= 'function' then raise('bucketing.new: sym_gen must be a function') end
  local mx = require 'luamx'
  local self = setmetatable({sym_gen = sym_gen, symbols = {}, data_names = {}, label_names = {},
                             executors = {}, sym_gen_calls = 0, default_key = default_key,
                             _sym_mod = mx.sym, _wrap = require('luamx.executor').wrap,
                             ctx = opts.ctx or mx.cpu()}, Pool)
  local sym = gen(self, default_key)
  local bind_opts = {ctx = self.ctx, grad_req = opts.grad_req or 'write', type_dict = opts.type_dict}
  local names, shapes = shape_list(opts.data_shapes or {}, opts.label_shapes or {})
  for i, n in ipairs(names) do bind_opts[n] = shapes[i] end
  local exe = sym:simple_bind(bind_opts)
  local out = ffi.new('lmx_bucketing *[1]')
  check(C.lmx_bucketing_new(default_key, exe._h, out), 2)
  self._h = ffi.gc(out[0], C.lmx_bucketing_free)
  self.executors[default_key] = exe
  self.current_key, self.current = default_key, exe
  return self
end

--- pool:switch(key, data_shapes, label_shapes) -> the bucket's Executor (made current).
function Pool:switch(key, data_shapes, label_shapes)
  key_of(key, 'bucketing:switch')
  local exe = self.executors[key]
  if not exe then
    local sym = self.symbols[key] or gen(self, key)
    local names, shapes = shape_list(data_shapes or {}, label_shapes or {})
    local n = #names
    local cnames = ffi.new('const char *[?]', n + 1)
    local ndims = ffi.new('int[?]', n + 1)
    local total = 0
    for i, s in ipairs(shapes) do
      total = total + require('luamx.ndarray').check_dims(s, ("bucketing:switch: shape of '%s'"):format(names[i]))
    end
    local dims = ffi.new('int64_t[?]', total + 1)
    local at = 0
    for i = 1, n do
      cnames[i - 1] = names[i]
      ndims[i - 1] = #shapes[i]
      for _, d in ipairs(shapes[i]) do dims[at] = d; at = at + 1 end
    end
    local out = ffi.new('lmx_executor *[1]')
    check(C.lmx_bucketing_bind(self._h, key, sym._h, n, cnames, dims, ndims, out), 2)
    exe = self._wrap(out[0], sym, self.ctx)
    self.executors[key] = exe
  end
  self.current_key, self.current = key, exe
  return exe
end

--- Bound keys, the default first.
function Pool:keys()
  local n = ffi.new('int[1]')
  check(C.lmx_bucketing_keys(self._h, 0, nil, n), 2)
  local buf = ffi.new('int64_t[?]', n[0] + 1)
  check(C.lmx_bucketing_keys(self._h, n[0], buf, n), 2)
  local t = {}
  for i = 0, n[0] - 1 do t[i + 1] = tonumber(buf[i]) end
  return t
end

--- pool_bytes, array_bytes (argument, gradient and aux arrays of all buckets, shared
--- ones counted once).
function Pool:memory()
  local p, a = ffi.new('int64_t[1]'), ffi.new('int64_t[1]')
  check(C.lmx_bucketing_memory(self._h, p, a), 2)
  return tonumber(p[0]), tonumber(a[0])
end

Pool.__tostring = function(p)
  return ('<BucketingPool: %d buckets, current %s>'):format(#p:keys(), tostring(p.current_key))
end

-- Custom ops (luamx.operator) call back into Lua from these C calls: keep them out of traces.
jit.off(Pool.switch)

--- Installs this module as `mx.bucketing` (called once by `require 'luamx'`).
-- @param mx the luamx module table
function M.install(mx) mx.bucketing = M end

return M
