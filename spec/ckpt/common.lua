-- spec/ckpt/common.lua — the two small models the checkpoint specs save, kill and resume:
-- 'mod', an mx.mod.Module (FC 4 -> 3, softmax), and 'bkt', an mx.mod.BucketingModule
-- (embedding 8x4 -> FC 8, softmax at every step; buckets 3 and 6), both with SGD +
-- momentum, so every save has parameters and optimizer states.
local mx = require 'luamx'
local nd = mx.nd

local M = {}

-- File helpers shared by checkpoint_spec and checkpoint_resave_spec.

--- The bytes of a file (it must exist).
function M.read(path)
  local f = assert(io.open(path, 'rb'))
  local s = f:read('*a')
  f:close()
  return s
end

--- Writes bytes to a file, replacing it.
function M.write(path, bytes)
  local f = assert(io.open(path, 'wb'))
  f:write(bytes)
  f:close()
end

--- Whether a file can be opened for reading.
function M.exists(path)
  local f = io.open(path, 'rb')
  if f then f:close() end
  return f ~= nil
end

--- The names in a directory, sorted (hidden ones included).
function M.listdir(dir)
  local p = io.popen('ls -A "' .. dir .. '"')
  local names = {}
  for l in p:lines() do names[#names + 1] = l end
  p:close()
  table.sort(names)
  return names
end

--- A pid no process has (kill says ESRCH).
function M.dead_pid()
  local ffi = require 'ffi'
  pcall(ffi.cdef, 'int kill(int pid, int sig);')
  for pid = 4000000, 3000000, -1 do
    if ffi.C.kill(pid, 0) ~= 0 and ffi.errno() == 3 then return pid end
  end
  error('no free pid found')
end
M.KINDS = {'mod', 'bkt'}
local N, V, E = 2, 8, 4
local OPT = {optimizer = 'sgd', optimizer_params = {learning_rate = 0.1, momentum = 0.9}}

function M.mod_symbol()
  local fc = mx.sym.FullyConnected{data = mx.sym.Variable('data'), num_hidden = 3, name = 'fc'}
  return mx.sym.SoftmaxOutput{data = fc, name = 'softmax'}
end

function M.sym_gen(T)
  local embed = mx.sym.Embedding{data = mx.sym.Variable('data'), input_dim = V, output_dim = E, name = 'embed'}
  local pred = mx.sym.FullyConnected{data = mx.sym.Reshape{data = embed, shape = {-1, E}}, num_hidden = V, name = 'pred'}
  local label = mx.sym.Reshape{data = mx.sym.Variable('softmax_label'), shape = {-1}}
  return mx.sym.SoftmaxOutput{data = pred, label = label, name = 'softmax'}, {'data'}, {'softmax_label'}
end

local function mod_batch()
  return mx.io.DataBatch{data = {nd.array{{1, 2, 3, 4}, {4, 3, 2, 1}}}, label = {nd.array{0, 2}}}
end

function M.bkt_batch(T, seed)
  local d, l = {}, {}
  for i = 1, N do
    d[i], l[i] = {}, {}
    for t = 1, T do d[i][t], l[i][t] = (i * 3 + t * 5 + seed) % V, (i + t * 7 + seed) % V end
  end
  return mx.io.DataBatch{data = {nd.array(d)}, label = {nd.array(l)}, bucket_key = T,
    provide_data = {mx.io.DataDesc('data', {N, T})}, provide_label = {mx.io.DataDesc('softmax_label', {N, T})}}
end

local function bind(kind, mod)
  if kind == 'mod' then
    mod:bind{data_shapes = {{'data', {N, 4}}}, label_shapes = {{'softmax_label', {N}}}}
  else
    mod:bind{data_shapes = {{'data', {N, 6}}}, label_shapes = {{'softmax_label', {N, 6}}}}
  end
end

--- A new model after one training step (so the optimizer has states).
function M.fresh(kind)
  local mod
  if kind == 'mod' then mod = mx.mod.Module{symbol = M.mod_symbol(), logger = false}
  else mod = mx.mod.BucketingModule{sym_gen = M.sym_gen, default_bucket_key = 6, logger = false} end
  bind(kind, mod)
  mod:init_params{initializer = mx.init.Uniform(0.1)}
  mod:init_optimizer(OPT)
  if kind == 'mod' then mod:forward_backward(mod_batch()); mod:update()
  else for _, T in ipairs {3, 6} do mod:forward_backward(M.bkt_batch(T, 1)); mod:update() end end
  return mod
end

--- Loads epoch e with its optimizer states, bound and ready to train (init_optimizer is
-- where an incomplete pair used to fail).
function M.load(kind, prefix, e)
  local mod
  if kind == 'mod' then mod = mx.mod.Module.load(prefix, e, true, {logger = false})
  else mod = mx.mod.BucketingModule.load(prefix, e, M.sym_gen, 6, true, {logger = false}) end
  bind(kind, mod)
  mod:init_optimizer(OPT)
  if kind == 'bkt' then mod:forward(M.bkt_batch(3, 2), false) end -- binds bucket 3 again
  return mod
end

local function updater(mod)
  return (mod._curr_module or mod)._updater
end

--- Fills every parameter and optimizer state array with s.
function M.fill(mod, s)
  local arg, aux = mod:get_params()
  local a2 = {}
  for k, v in pairs(arg) do a2[k] = nd.zeros(v.shape) + s end
  mod:set_params(a2, aux)
  for _, st in pairs(updater(mod).states) do
    for _, a in ipairs(nd.is_ndarray(st) and {st} or st) do a:fill(s) end
  end
end

--- The serial every parameter and state array holds; raises naming `where` when they differ.
function M.serial_of(mod, where)
  local seen
  local function see(what, a)
    for _, v in ipairs(a:toflat()) do
      if seen == nil then seen = v end
      if v ~= seen then error(('%s: %s holds %s, others %s: a mixed checkpoint'):format(where, what, v, seen)) end
    end
  end
  local arg = mod:get_params()
  for k, v in pairs(arg) do see('parameter ' .. k, v) end
  local n = 0
  for idx, st in pairs(updater(mod).states) do
    for _, a in ipairs(nd.is_ndarray(st) and {st} or st) do see('state ' .. tostring(idx), a); n = n + 1 end
  end
  if n == 0 then error(where .. ': no optimizer states were loaded') end
  return seen
end

--- The newest epoch (counting from 1) whose checkpoint is complete, or nil; also the
-- status of every epoch up to the first missing one.
function M.newest_complete(prefix)
  local newest, statuses = nil, {}
  local e = 1
  while true do
    local st = mx.model.checkpoint_status(prefix, e)
    if st == 'missing' then break end
    statuses[e] = st
    if st == 'complete' then newest = e end
    e = e + 1
  end
  return newest, statuses
end

return M
