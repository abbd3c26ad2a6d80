--- tests/fuzz/make_seeds.lua — writes the committed seed corpora of the fuzz targets
-- (tests/fuzz/seeds/<target>/) from the files luamx's own writers make, plus a few
-- hand-made records the writers never produce (V1 and V3 records, sparse markers).
--
--   LUAMX_LIB=build/libluamx.so luajit tests/fuzz/make_seeds.lua tests/fuzz/seeds
--
-- Run it again when a writer's format changes; the seeds are small (a few KB in all).
package.path = 'lua/?.lua;lua/?/init.lua;' .. package.path
local mx = require 'luamx'
local out = assert(arg[1], 'usage: make_seeds.lua <seeds dir>')

local function write(path, bytes)
  local f = assert(io.open(out .. '/' .. path, 'wb'))
  f:write(bytes)
  f:close()
end
local function mkdir(d) os.execute(('mkdir -p %q'):format(out .. '/' .. d)) end
local function le(v, n)
  local t = {}
  for i = 1, n do t[i] = string.char(v % 256); v = math.floor(v / 256) end
  return table.concat(t)
end
local function i32(v) return le(v < 0 and v + 2 ^ 32 or v, 4) end
local function i64(v) return le(v < 0 and v + 2 ^ 64 or v, 8) end
local function f32s(n)
  local ffi = require 'ffi'
  local b = ffi.new('float[?]', n)
  for i = 0, n - 1 do b[i] = i + 0.5 end
  return ffi.string(b, 4 * n)
end
local function list(records, names)
  local t = {le(0x112, 8), le(0, 8), le(#records, 8)}
  for _, r in ipairs(records) do t[#t + 1] = r end
  t[#t + 1] = le(names and #names or 0, 8)
  for _, s in ipairs(names or {}) do t[#t + 1] = le(#s, 8) .. s end
  return table.concat(t)
end

-- ---------------------------------------------------------------- params -----
mkdir('params')
local p = out .. '/params/'
mx.nd.save(p .. 'list_dtypes.params', {
  mx.nd.array({{1, 2, 3}, {4, 5, 6}}), mx.nd.array({1.5, -2}, {dtype = 'float64'}),
  mx.nd.array({1, 2}, {dtype = 'float16'}), mx.nd.array({7, 8, 9}, {dtype = 'uint8'}),
  mx.nd.array({-1, 2}, {dtype = 'int32'}), mx.nd.array({-3}, {dtype = 'int8'}),
  mx.nd.array({5}, {dtype = 'int64'}), mx.nd.zeros({0, 3}), mx.nd.array(4):reshape({})})
mx.nd.save(p .. 'named.params', {['arg:fc1_weight'] = mx.nd.ones({2, 2}),
                                 ['aux:bn_moving_mean'] = mx.nd.zeros({2})})
mx.nd.save(p .. 'empty.params', {})
-- the optimizer states file (SGD with momentum after one update; Adam's two states)
for _, o in ipairs({{'sgd', {momentum = 0.9}}, {'adam', {}}}) do
  local upd = mx.optimizer.get_updater(mx.optimizer.create(o[1], o[2]))
  local w = mx.nd.ones({2, 3})
  upd(0, mx.nd.ones({2, 3}), w)
  upd(3, mx.nd.ones({4}), mx.nd.ones({4}))
  upd:save_states(p .. o[1] .. '.states')
end
-- the bucket keys file, as BucketingModule:save_checkpoint writes it
mx.nd.save(p .. 'model.buckets', {mx.nd.array({10, 20, 30}, {dtype = 'int32'})})
-- hand-made records: V1 (int32 ndim, int64 dims, context, dtype), V3 scalar and "none",
-- V2 "none" (ndim 0), and the sparse storage types the reader refuses
local V1, V2, V3 = le(0xF993FAC8, 4), le(0xF993FAC9, 4), le(0xF993FACA, 4)
local cpu_f32 = i32(1) .. i32(0) .. i32(0)
write('params/v1.params', list({V1 .. i32(2) .. i64(2) .. i64(2) .. cpu_f32 .. f32s(4)}))
write('params/v3.params', list({V3 .. i32(0) .. i32(0) .. cpu_f32 .. f32s(1),
                                V3 .. i32(-1) .. i32(-1)}, {'scalar', 'none'}))
write('params/v2_none.params', list({V2 .. i32(-1) .. i32(0), V2 .. i32(0) .. i32(1) .. i64(3) ..
                                    i32(2) .. i32(1) .. i32(0) .. f32s(3)}))
write('params/row_sparse.params', list({V2 .. i32(1) .. i32(1) .. i64(4)}))
write('params/csr.params', list({V2 .. i32(2) .. i32(2) .. i64(2) .. i64(2)}))

-- ------------------------------------------------------------------- idx -----
mkdir('idx')
local function be32(v) return string.char(math.floor(v / 2 ^ 24) % 256, math.floor(v / 2 ^ 16) % 256,
                                          math.floor(v / 256) % 256, v % 256) end
write('idx/images-3x2x2', '\0\0\8\3' .. be32(3) .. be32(2) .. be32(2) .. ('\1\2\3\4'):rep(3))
write('idx/labels-3', '\0\0\8\1' .. be32(3) .. '\7\8\9')
write('idx/images-0x28x28', '\0\0\8\3' .. be32(0) .. be32(28) .. be32(28))

-- ------------------------------------------------------------------- csv -----
-- the first byte picks the row width (1 + byte % 8), the rest is the file
mkdir('csv')
write('csv/width3', '\2' .. '1,2,3\n4.5,-5e-3,6\r\n\n 7 , 0x10,inf\n')
write('csv/width1', '\0' .. '1\n2\n3')
write('csv/width4-blank', '\3' .. '   \n1,2,3,4\n\t\n')

-- ------------------------------------------------------------------ bind -----
-- symbols whose variables carry their shapes (__shape__), as simple_bind needs
mkdir('bind')
local data = mx.sym.Variable('data', {shape = {2, 4}})
local fc = mx.sym.FullyConnected{data = data, num_hidden = 3, name = 'fc'}
write('bind/mlp.json', mx.sym.SoftmaxOutput{data = mx.sym.Activation{data = fc, act_type = 'relu'},
                                            name = 'softmax'}:tojson())
local img = mx.sym.Variable('img', {shape = {1, 2, 5, 5}})
local conv = mx.sym.Convolution{data = img, kernel = {3, 3}, num_filter = 2, pad = {1, 1}, name = 'conv'}
local bn = mx.sym.BatchNorm{data = conv, name = 'bn'}
local pool = mx.sym.Pooling{data = bn, kernel = {2, 2}, stride = {2, 2}, pool_type = 'max'}
write('bind/conv.json', mx.sym.sum(mx.sym.Flatten(pool)):tojson())
local a, b = mx.sym.Variable('a', {shape = {3, 1}}), mx.sym.Variable('b', {shape = {1, 4}})
write('bind/broadcast.json', mx.sym.Group{mx.sym.broadcast_add(a, b), mx.sym.exp(a) * 2}:tojson())
print('seeds written to ' .. out)
