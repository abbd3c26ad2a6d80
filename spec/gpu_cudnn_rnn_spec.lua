-- cuDNN's RNN against luamx's own cell kernels on gpu(0), forward and backward: rnn_relu,
-- rnn_tanh, lstm and gru, one and two layers, one and two directions, with the state
-- outputs and every gradient (data, parameters, state, state_cell). MXNet's RNN has no
-- cudnn_off, so the own path is the same script run in a child process with
-- LUAMX_CUDNN=0; the two runs must agree to float rounding, and each run's debug_str
-- must name the path its RNN nodes took. In builds without cuDNN (the simulator) both
-- runs take the own kernels and agree exactly. Skips with a message without a GPU.
local mx = require 'luamx'

-- What each child runs: every case bound on gpu(0), one training step with fixed head
-- gradients, then per case a "note" line (forward and backward Kernel notes) and a "vals"
-- line (outputs and gradients, flattened).
local SCRIPT = [[
local mx = require 'luamx'
local T, N, In, H = 5, 3, 4, 6
local cases = {
  {'rnn_relu', 2, false}, {'rnn_tanh', 1, true}, {'lstm', 2, true}, {'lstm', 1, false},
  {'gru', 2, false}, {'gru', 1, true},
}
local gpu = mx.gpu(0)
local function ramp(shape, k, scale)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  local v = {}
  for i = 1, n do v[i] = scale * math.sin(i * 0.37 + k) end
  return mx.nd.array(v, {ctx = gpu}):reshape(shape)
end
local function note(text, op, name)
  local at = text:find('Op:' .. op .. ', Name=' .. name .. '\n', 1, true)
  if not at then return 'missing' end
  local stop = text:find('--------------------', at, true) or #text + 1
  return text:sub(at, stop - 1):match('\nKernel: ([^\n]*)') or 'none'
end
for ci, c in ipairs(cases) do
  local mode, L, bi = c[1], c[2], c[3]
  local D, G = bi and 2 or 1, ({rnn_relu = 1, rnn_tanh = 1, lstm = 4, gru = 3})[mode]
  local np = 0
  for l = 1, L do np = np + D * G * H * ((l == 1 and In or D * H) + H) end
  np = np + L * D * 2 * G * H
  local V = mx.sym.Variable
  local lstm = mode == 'lstm'
  local sym = mx.sym.RNN{data = V'data', parameters = V'parameters', state = V'state',
    state_cell = lstm and V'state_cell' or nil, mode = mode, state_size = H, num_layers = L,
    bidirectional = bi, state_outputs = true, name = 'rnn'}
  local hs = {L * D, N, H}
  local args = {data = ramp({T, N, In}, ci, 1), parameters = ramp({np}, ci + 1, 0.3),
                state = ramp(hs, ci + 2, 0.5)}
  if lstm then args.state_cell = ramp(hs, ci + 3, 0.5) end
  local grads = {}
  for k, a in pairs(args) do grads[k] = mx.nd.zeros(a.shape, {ctx = gpu}) end
  local exe = sym:bind{ctx = gpu, args = args, args_grad = grads, grad_req = 'write'}
  exe:forward{is_train = true}
  local heads = {}
  for i, o in ipairs(exe.outputs) do heads[i] = ramp(o.shape, 10 + i, 1) end
  exe:backward(heads)
  mx.nd.waitall()
  local text = exe:debug_str()
  io.write(('note %d %s|%s\n'):format(ci, note(text, 'RNN', 'rnn'),
                                       note(text, '_backward_RNN', 'rnn_backward')))
  local vals = {}
  local function add(a) for _, v in ipairs(a:copyto(mx.cpu()):toflat()) do vals[#vals + 1] = ('%.9g'):format(v) end end
  for _, o in ipairs(exe.outputs) do add(o) end
  for _, k in ipairs {'data', 'parameters', 'state', 'state_cell'} do if grads[k] then add(grads[k]) end end
  io.write(('vals %d %s\n'):format(ci, table.concat(vals, ' ')))
end
]]

local function child(env)
  local path = os.tmpname()
  local f = assert(io.open(path, 'w'))
  f:write(SCRIPT)
  f:close()
  local p = io.popen(("%s luajit %s 2>&1"):format(env, path))
  local out = p:read('*a')
  p:close()
  os.remove(path)
  local notes, vals = {}, {}
  for ci, n in out:gmatch('note (%d+) ([^\n]*)') do notes[tonumber(ci)] = n end
  for ci, v in out:gmatch('vals (%d+) ([^\n]*)') do
    local t = {}
    for x in v:gmatch('%S+') do t[#t + 1] = tonumber(x) end
    vals[tonumber(ci)] = t
  end
  assert(#vals == 6, 'the child run failed (' .. env .. '):\n' .. out)
  return notes, vals
end

describe('cuDNN RNN and the own cell kernels agree on gpu(0)', function()
  if mx.context.num_gpus() == 0 then
    pending('no GPU context (mx.context.num_gpus() == 0): cuDNN RNN specs skipped')
    return
  end

  it('rnn_relu, rnn_tanh, lstm, gru; layers, directions, states; forward and backward', function()
    local dnn_notes, dnn = child('LUAMX_CUDNN=1')
    local own_notes, own = child('LUAMX_CUDNN=0')
    local not_built = dnn_notes[1]:find('cuDNN not built', 1, true) ~= nil
    for ci = 1, 6 do
      -- the own run names its reason; the other names cuDNN (or why it did not run)
      for part in own_notes[ci]:gmatch('[^|]+') do
        assert.is_truthy(part == 'own kernels (cuDNN off: LUAMX_CUDNN=0 in the environment)' or
                         (not_built and part:find('^own kernels %(cuDNN not built: ')), part)
      end
      -- every case is float32 without inter-layer dropout: with cuDNN built and loaded it
      -- must have run (a refusal or a decline would leave nothing compared)
      for part in dnn_notes[ci]:gmatch('[^|]+') do
        assert.is_truthy(part == 'cuDNN' or part:find('^own kernels %(cuDNN off: ') or
                         (not_built and part:find('^own kernels %(cuDNN not built: ')), part)
      end
      local x, y = own[ci], dnn[ci]
      assert.are.equal(#x, #y, 'case ' .. ci .. ': sizes')
      for i = 1, #x do
        local ok = math.abs(x[i] - y[i]) <= 1e-4 * (1 + math.max(math.abs(x[i]), math.abs(y[i])))
        assert(ok, ('case %d value %d: own %.9g, cuDNN path %.9g (%s)'):format(ci, i, x[i], y[i],
                    dnn_notes[ci]))
      end
    end
  end)
end)
