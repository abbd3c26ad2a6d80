--- spec/gpu_helpers.lua — what the GPU training specs share (not a spec itself):
--- deterministic data without the random generator (so every device sees the same),
--- a data batch around it, the relative difference of two arrays on any device, and the
--- skip where no GPU context exists.
local assert = require 'luassert'
local mx = require 'luamx'

local G = {}

--- True, after a pending describe block `name` with the reason, where no GPU context
--- exists; the spec then returns: `if G.skip_without_gpu('...') then return end`.
function G.skip_without_gpu(name)
  if mx.context.num_gpus() > 0 then return false end
  local busted = require 'busted'
  busted.describe(name, function() busted.pending('no GPU context on this machine: skipped') end)
  return true
end

--- An array of `shape` filled with sin(i * 0.37 + k), or with (i * 7 + k) % mod when mod is
--- given (class labels).
function G.ramp(shape, k, mod)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  local t = {}
  for i = 1, n do t[i] = mod and ((i * 7 + k) % mod) or math.sin(i * 0.37 + k) end
  return mx.nd.array(t):reshape(shape)
end

--- A DataBatch of one data array and one label array named 'data' and 'softmax_label'.
function G.batch_of(data, label)
  return mx.io.DataBatch{data = {data}, label = {label},
    provide_data = {mx.io.DataDesc('data', data.shape)},
    provide_label = {mx.io.DataDesc('softmax_label', label.shape)}}
end

--- Largest |a - b| / max(1e-3, |b|) over the elements (both copied to the CPU).
function G.max_rel(a, b)
  local x, y = a:copyto(mx.cpu()):toflat(), b:copyto(mx.cpu()):toflat()
  assert.are.equal(#x, #y)
  local worst = 0
  for i = 1, #x do
    worst = math.max(worst, math.abs(x[i] - y[i]) / math.max(1e-3, math.abs(y[i])))
  end
  return worst
end

return G
