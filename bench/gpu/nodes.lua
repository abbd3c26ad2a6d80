--- bench/gpu/nodes.lua — where a ResNet-50 training step's time goes on a GPU, by
--- operator: forward and backward of one executor on gpu(0), with a monitor callback that
--- waits for each node's first output and charges the time since the previous callback to
--- that node's operator. The waits serialise host and device, so the sum is above the
--- step time of bench/gpu/train.lua (printed beside it, measured without the monitor);
--- the shares show which operators to look at. Also lists the kernel notes of debug_str
--- (cuDNN algorithm, cuBLAS or luamx's own kernel) per operator. Not a test.
--
--   luajit bench/gpu/nodes.lua [--dtype float16] [--batch 64] [--image 224] [--steps 3]
--                              [--ctx gpu|cpu]
local dir = debug.getinfo(1, 'S').source:match('^@(.-)[^/\\]*$') or './'
if dir == '' then dir = './' end
local B = dofile(dir .. '../common.lua')
local mx = B.mx
local o = B.args{dtype = 'float32', batch = 64, image = 224, steps = 3, top = 22, ctx = 'gpu'}

local ctx = o.ctx == 'cpu' and mx.cpu() or mx.gpu(0)
local net = dofile(dir .. 'resnet.lua')(mx, {num_classes = 1000, dtype = o.dtype})
-- parameters in the types the network infers (float16 ones after the cast), as Module does
local types = {}
local arg_types = net:infer_type{data = 'float32'}
for i, name in ipairs(net:list_arguments()) do types[name] = arg_types[i] end
local exe = net:simple_bind{ctx = ctx, data = {o.batch, 3, o.image, o.image},
                            softmax_label = {o.batch}, grad_req = 'write', type_dict = types}
local seed = 7
for name, a in pairs(exe.arg_dict) do
  local h = mx.nd.empty(a.shape)
  if name == 'softmax_label' then B.fill_int(h, 1000, 777)
  elseif name:match('_beta$') or name:match('_bias$') then h:fill(0)
  elseif name:match('_gamma$') then h:fill(1)
  else
    seed = seed + 1
    local s = name == 'data' and 1 or math.sqrt(6 / (a.shape[1] + a.size / a.shape[1]))
    B.fill_uniform(h, -s, s, seed)
  end
  h:astype(a.dtype):copyto(a)
end
for _, a in pairs(exe.aux_dict) do mx.nd.ones(a.shape):astype(a.dtype):copyto(a) end

local function step() exe:forward{is_train = true}; exe:backward() end
local dt = B.time_steps(step, 2, 5)
B.info('%s batch %d: %.2f ms per forward+backward (no monitor), %.1f samples/s', o.dtype,
       o.batch, dt * 1e3, o.batch / dt)

-- node name -> operator, from the symbol's JSON
local op_of = {}
for op, name in net:tojson():gmatch('"op":%s*"([^"]+)",%s*"name":%s*"([^"]+)"') do
  op_of[name], op_of[name .. '_backward'] = op, '_backward_' .. op
end
local node_cache = {}
local function node_of(out_name)
  local n = node_cache[out_name]
  if n then return n end
  n = out_name
  while n and not op_of[n] do n = n:match('^(.*)_[^_]*$') end
  node_cache[out_name] = n or out_name
  return node_cache[out_name]
end

local per_op, count, seen, last = {}, {}, {}, 0
exe:set_monitor_callback(function(name, arr)
  local node = node_of(name)
  if seen[node] then return end
  seen[node] = true
  arr:wait_to_read()
  local t = B.now()
  local op = op_of[node] or '?'
  per_op[op] = (per_op[op] or 0) + (t - last)
  count[op] = (count[op] or 0) + 1
  last = t
end)
local total = 0
for _ = 1, o.steps do
  seen = {}
  mx.nd.waitall()
  last = B.now()
  local t0 = last
  step()
  mx.nd.waitall()
  total = total + B.now() - t0
end
local ops = {}
for op in pairs(per_op) do ops[#ops + 1] = op end
table.sort(ops, function(a, b) return per_op[a] > per_op[b] end)
B.info('with the monitor: %.2f ms per step; by operator (ms per step, nodes, share):',
       total / o.steps * 1e3)
for i = 1, math.min(o.top, #ops) do
  local op = ops[i]
  B.info('  %-32s %8.3f ms %5d %5.1f %%', op, per_op[op] / o.steps * 1e3, count[op] / o.steps,
         100 * per_op[op] / total)
end

-- the kernel notes of debug_str, per operator
local notes = {}
local text = exe:debug_str()
for op, body in text:gmatch('Op:([%w_]+), Name=[^\n]*\n(.-)%-%-%-%-') do
  local k = body:match('Kernel: ([^\n]*)')
  if k then
    local key = op .. ': ' .. k:gsub('%d+x%d+', 'NxN')
    notes[key] = (notes[key] or 0) + 1
  end
end
local keys = {}
for k in pairs(notes) do keys[#keys + 1] = k end
table.sort(keys)
B.info('kernel notes (operator: note, nodes):')
for _, k in ipairs(keys) do B.info('  %s  x%d', k, notes[k]) end
