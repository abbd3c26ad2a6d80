--- bench/gpu/report.lua — the table of bench/gpu/run.sh from its RESULT lines: each
--- workload's throughput, achieved TFLOP/s, and that as % of the cuBLAS GEMM bound measured
--- in the same run (hgemm for float16 workloads, sgemm otherwise; large square products).
--
--   luajit bench/gpu/report.lua RESULTS_FILE
local r = {}
for line in io.lines((assert(arg[1], 'usage: report.lua RESULTS_FILE'))) do
  local id, metric, v = line:match('^RESULT (%S+) (%S+) (%S+)')
  if id then r[id] = r[id] or {}; r[id][metric] = tonumber(v) end
end
local g = r.GEMM or {}
local s32, s16 = g.sgemm_square8192, g.hgemm_square8192
print(('GEMM bound: sgemm %s TFLOP/s, hgemm %s TFLOP/s (8192^3, median of 20)'):format(
  tostring(s32), tostring(s16)))
print(('%-10s %14s %10s %12s %10s'):format('workload', 'per second', 'TFLOP/s', '% of bound', 'allocs'))
local ids = {}
for id in pairs(r) do if id ~= 'GEMM' and id ~= 'LT' then ids[#ids + 1] = id end end
table.sort(ids)
for _, id in ipairs(ids) do
  local x = r[id]
  if x.us_per_op_fwd then
    print(('%-10s %11.2f us/op fwd, %.2f us/op fwd+bwd'):format(id, x.us_per_op_fwd, x.us_per_op_fwd_bwd or 0))
  else
    local rate = x.samples_per_s or x.tokens_per_s
    local bound = id:match('fp16') and s16 or s32
    local pct = (x.tflops and bound) and ('%.1f'):format(100 * x.tflops / bound) or '-'
    print(('%-10s %14.1f %10.2f %12s %10s'):format(id, rate or 0, x.tflops or 0, pct,
                                                   tostring(x.allocs_per_step)))
  end
end

-- cuBLAS against cuBLASLt (bench/gpu/lt_bound.cu): µs per product, and which is faster
local lt, cases = {}, {}
for line in io.lines(arg[1]) do
  local case, side, v = line:match('^RESULT LT (%S+)_(%a+) (%S+)')
  if case then
    if not lt[case] then lt[case] = {}; cases[#cases + 1] = case end
    lt[case][side] = v
  end
end
if #cases > 0 then
  print(('\n%-32s %12s %12s %10s'):format('FullyConnected product', 'cuBLAS us', 'cuBLASLt us', 'faster'))
  for _, case in ipairs(cases) do
    local c, l = tonumber(lt[case].cublas), tonumber(lt[case].lt)
    local who = (c and l) and (l < c and ('Lt %.2fx'):format(c / l) or ('cuBLAS %.2fx'):format(l / c)) or '-'
    print(('%-32s %12s %12s %10s'):format(case, tostring(lt[case].cublas), tostring(lt[case].lt), who))
  end
end
