--- bench/repro_shared_bind.lua — reproduction for M1 (W3): binding a bucket against the
--- default executor (simple_bind{shared_exec=}, as BucketingModule does through the
--- executor group) allocates engine memory outside the shared pool, about 2.3x the
--- bucket's N*len*V output, which exe:memory()'s pool figure does not show. Prints the
--- engine's live bytes (lmx_debug_alloc_stats) before and after each bind.
--
--   LUAMX_LIB=build-bench/libluamx.so luajit bench/repro_shared_bind.lua
local dir = debug.getinfo(1, 'S').source:match('^@(.-)[^/\\]*$') or './'
local B = dofile((dir == '' and './' or dir) .. 'common.lua')
local mx = B.mx
local function sym_gen(len)
  local data = mx.sym.Variable('data')
  local label = mx.sym.Variable('softmax_label')
  local embed = mx.sym.Embedding{data = data, input_dim = 10000, output_dim = 200, name = 'embed'}
  local cell = mx.rnn.FusedRNNCell(200, 2, 'lstm', false, 'lstm_')
  local outputs = cell:unroll(len, embed, nil, 'NTC', true)
  local pred = mx.sym.Reshape{data = outputs, shape = {-1, 200}}
  pred = mx.sym.FullyConnected{data = pred, num_hidden = 10000, name = 'pred'}
  label = mx.sym.Reshape{data = label, shape = {-1}}
  return mx.sym.SoftmaxOutput{data = pred, label = label, name = 'softmax'}
end
local function live() local _, _, lb = B.allocs(); return lb / 2^20 end
local req = {}
for _, n in ipairs(sym_gen(60):list_arguments()) do req[n] = (n == 'data' or n == 'softmax_label') and 'null' or 'write' end
local l0 = live()
local e60 = sym_gen(60):simple_bind{ctx = mx.cpu(), data = {32, 60}, softmax_label = {32, 60}, grad_req = req}
print(('simple_bind 60: live +%.1f MB, memory() planned/naive/pool %.1f %.1f %.1f MB'):format(live() - l0, e60:memory() / 2^20, select(2, e60:memory()) / 2^20, select(3, e60:memory()) / 2^20))
l0 = live()
local e50 = sym_gen(50):simple_bind{ctx = mx.cpu(), data = {32, 50}, softmax_label = {32, 50}, grad_req = req, shared_exec = e60}
print(('simple_bind 50 shared_exec: live +%.1f MB (the output alone is %.1f MB)'):format(live() - l0, 32 * 50 * 10000 * 4 / 2^20))
l0 = live()
local e30 = e60:reshape{data = {32, 30}, softmax_label = {32, 30}, allow_up_sizing = false}
print(('reshape 60 -> 30: live +%.1f MB'):format(live() - l0))
