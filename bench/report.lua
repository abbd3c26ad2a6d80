--- bench/report.lua — turns the tagged RESULT lines bench/run.sh collects
--- (`<lmx|pt> <round> RESULT <id> <metric> <value>`) into BENCHMARKS.md's table: medians
--- over the rounds, the ratio (luamx's speed over PyTorch's: > 1 means luamx is faster,
--- for times and memory too), % of the sgemm-bound limit and % of the machine's FMA peak
--- (bench/fma_peak.c), both measured in the same run, and the target (issue 13's, which
--- raised BENCHMARKS.md's first ones: W1 ≥2× PyTorch and ≥65% of the peak, and so on).
--
--   luajit bench/report.lua results.txt
local path = assert(arg[1], 'usage: luajit bench/report.lua <results file>')
local vals = {}  -- vals[side][id .. ' ' .. metric] = {v1, v2, ...}
local header
local notes = {}  -- '# blas ...' lines: the BLAS each side ran
for line in io.lines(path) do
  local side, id, metric, v = line:match('^(%S+) %S+ RESULT (%S+) (%S+) (%S+)$')
  if side then
    vals[side] = vals[side] or {}
    local k = id .. ' ' .. metric
    vals[side][k] = vals[side][k] or {}
    table.insert(vals[side][k], tonumber(v))
  elseif line:match('^# luamx bench') then header = line
  elseif line:match('^# blas') then notes[#notes + 1] = line end
end

local function median(t)
  if not t or #t == 0 then return nil end
  local s = {unpack(t)}
  table.sort(s)
  local n = #s
  if n % 2 == 1 then return s[(n + 1) / 2] end
  return (s[n / 2] + s[n / 2 + 1]) / 2
end
local function med(side, k) return median(vals[side] and vals[side][k]) end

-- The FMA peak at the run's thread count (the best ISA: AVX-512 where there is one), and
-- each workload's float32 FLOPs per sample (or token): training from BENCHMARKS.md;
-- inference is the forward pass alone (MLP 2·(784·512 + 512·512 + 512·10), LeNet's two
-- convolutions and two FC layers).
local threads = header and tonumber(header:match('THREADS=(%d+)')) or 2
local peak = med('lmx', ('PEAK best_%dt_gflops'):format(threads)) or med('lmx', 'PEAK best_2t_gflops')
local MFLOP = {W1 = 3.21, W2 = 13.2, W3 = 15.8, W5mlp = 1.337, W5lenet = 4.586}
local function pct_peak(v, mflop)
  if not (v and mflop and peak) then return '—' end
  return ('%.0f%%'):format(v * mflop / 1e3 / peak * 100)
end
local function spread(side, k)
  local t = vals[side] and vals[side][k]
  if not t or #t < 2 then return '' end
  local lo, hi = math.huge, -math.huge
  for _, v in ipairs(t) do lo, hi = math.min(lo, v), math.max(hi, v) end
  local m = median(t)
  return m ~= 0 and (' ±%.0f%%'):format((hi - lo) / 2 / math.abs(m) * 100) or ''
end

local function fmt(v, unit)
  if v == nil then return 'n/a' end
  if unit == 'µs/op' or unit == 'µs' then return ('%.3g'):format(v) end
  if unit == 'MB' then return ('%.0f'):format(v) end
  if unit == 'ratio' then return ('%.3f'):format(v) end
  if v >= 1e4 then return ('%.1fk'):format(v / 1e3) end
  return ('%.0f'):format(v)
end

local rows = {}
local function row(name, unit, key, opts)
  opts = opts or {}
  local a, b = med('lmx', key), med('pt', opts.ptkey or key)
  local ratio
  if a and b and a ~= 0 and b ~= 0 then ratio = opts.lower and b / a or a / b end
  local bound = opts.bound and med('lmx', opts.bound)
  rows[#rows + 1] = {name, unit,
    fmt(a, unit) .. spread('lmx', key),
    b and (fmt(b, unit) .. spread('pt', opts.ptkey or key)) or '—',
    ratio and ('%.2f×'):format(ratio) or '—',
    (bound and a) and ('%.0f%%'):format(a / bound * 100) or '—',
    (bound and b) and ('%.0f%%'):format(b / bound * 100) or '—',
    pct_peak(a, opts.mflop), pct_peak(b, opts.mflop),
    opts.target or ''}
end

row('W1 train (MLP, b128)', 'samples/s', 'W1 train_samples_per_s', {bound = 'W1 bound_per_s', mflop = MFLOP.W1, target = '≥2× PT, ≥65% peak'})
row('W2 train (LeNet, b64)', 'samples/s', 'W2 train_samples_per_s', {bound = 'W2 bound_per_s', mflop = MFLOP.W2, target = '≥2.5× PT, ≥45% peak'})
row('W3a train (fused RNN)', 'tokens/s', 'W3a train_tokens_per_s', {bound = 'W3a bound_per_s', mflop = MFLOP.W3, target = '≥2× PT, ≥60% peak'})
row('W3b train (LSTMCell unrolled)', 'tokens/s', 'W3b train_tokens_per_s', {bound = 'W3b bound_per_s', mflop = MFLOP.W3, target = '≥2× PT, ≥60% peak; ≤1.1× W3a time'})
row('W4 forward', 'µs/op', 'W4 us_per_op_fwd', {lower = true, target = '≤0.2 µs/op'})
row('W4 forward+backward', 'µs/op', 'W4 us_per_op_fwd_bwd', {lower = true})
row('W4 forward, no grad', 'µs/op', 'W4 us_per_op_nograd', {lower = true})
row('W5 MLP infer b1', 'samples/s', 'W5 mlp_b1_samples_per_s', {mflop = MFLOP.W5mlp, target = '≥3× PT, ≤25 µs/sample'})
row('W5 MLP infer b128', 'samples/s', 'W5 mlp_b128_samples_per_s', {mflop = MFLOP.W5mlp, target = '≥1.5× PT'})
row('W5 LeNet infer b1', 'samples/s', 'W5 lenet_b1_samples_per_s', {mflop = MFLOP.W5lenet, target = '≥3× PT'})
row('W5 LeNet infer b128', 'samples/s', 'W5 lenet_b128_samples_per_s', {mflop = MFLOP.W5lenet, target = '≥3× PT'})
row('M1 W2 plan / naive', 'ratio', 'M1 w2_planned_over_naive', {target = '≤0.5'})
row('M1 W3a pool: 6 buckets / largest', 'ratio', 'M1 W3a_all_over_largest', {target = '≤1.1'})
row('M1 W3b pool: 6 buckets / largest', 'ratio', 'M1 W3b_all_over_largest', {target = '≤1.1'})
row('M1 W3a RSS above baseline (HWM)', 'MB', 'W3a rss_above_base_mb', {lower = true, target = '≤½ PT (ratio ≥2×)'})
row('M1 W3b RSS above baseline (HWM)', 'MB', 'W3b rss_above_base_mb', {lower = true, target = '≤½ PT (ratio ≥2×)'})
row('W1 share of step in the updates', 'ratio', 'W1 update_share', {lower = true})
row('RSS W1 run (HWM)', 'MB', 'W1 hwm_mb', {lower = true})
row('RSS W2 run (HWM)', 'MB', 'W2 hwm_mb', {lower = true})
row('RSS baseline (after import)', 'MB', 'W1 base_rss_mb', {lower = true})
for _, k in ipairs({'W1', 'W2', 'W3a', 'W3b', 'W4'}) do
  row(('engine allocs/step %s'):format(k), 'count', k .. ' allocs_per_step', {target = '0'})
end

if header then print(header) end
for _, l in ipairs(notes) do print(l) end
local function pk(k) local v = med('lmx', 'PEAK ' .. k .. '_gflops') return v and ('%.0f'):format(v) or 'n/a' end
print(('FMA peak (bench/fma_peak.c, same run, medians, GFLOP/s): AVX-512 %s (1 thread) / %s (2 threads), AVX2 %s / %s; %% peak uses %s at %d thread(s)'):format(
  pk('avx512_1t'), pk('avx512_2t'), pk('avx2_1t'), pk('avx2_2t'), peak and ('%.0f'):format(peak) or 'n/a', threads))
print(('sgemm (OpenBLAS, same run, medians): at W1 shapes %s GFLOP/s, W2 %s, W3 %s, 2048³ %s'):format(
  fmt(med('lmx', 'SGEMM W1_gflops'), 'MB'), fmt(med('lmx', 'SGEMM W2_gflops'), 'MB'),
  fmt(med('lmx', 'SGEMM W3_gflops'), 'MB'), fmt(med('lmx', 'SGEMM large_gflops'), 'MB')))
print(('bounds: W1 %s samples/s (3.21 MFLOP/sample), W2 %s (13.2), W3 %s tokens/s (15.8)'):format(
  fmt(med('lmx', 'W1 bound_per_s')), fmt(med('lmx', 'W2 bound_per_s')), fmt(med('lmx', 'W3a bound_per_s'))))
local w3a, w3b = med('lmx', 'W3a train_tokens_per_s'), med('lmx', 'W3b train_tokens_per_s')
if w3a and w3b then print(('W3 unrolled / fused time (luamx): %.2f'):format(w3a / w3b)) end
print('')
local head = {'workload', 'unit', 'luamx (median)', 'PyTorch (median)', 'ratio', 'luamx % bound', 'PyTorch % bound',
              'luamx % peak', 'PyTorch % peak', 'target'}
print('| ' .. table.concat(head, ' | ') .. ' |')
print('|' .. ('---|'):rep(#head))
for _, r in ipairs(rows) do print('| ' .. table.concat(r, ' | ') .. ' |') end
print('')
print('ratio: luamx over PyTorch in speed (for µs/op and MB: PyTorch\'s figure over luamx\'s), > 1 is luamx ahead;')
print('± is half the spread over the rounds as % of the median. % peak: the workload\'s float32 FLOPs per second')
print('(MFLOP per sample: W1 3.21, W2 13.2, W3 15.8 per token; inference MLP 1.34, LeNet 4.59) over the FMA peak.')
