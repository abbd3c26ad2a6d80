--- bench/gpu/report.lua — the table of bench/gpu/run.sh from its RESULT lines: each
--- workload's throughput, achieved TFLOP/s, and that as % of the cuBLAS GEMM bound measured
--- in the same run (hgemm for float16 workloads, sgemm otherwise; large square products).
--
--   luajit bench/gpu/report.lua RESULTS_FILE
local r = {}
for line in io.lines(assert(arg[1], 'usage: report.lua RESULTS_FILE')) do
  local id, metric, v = line:match('^RESULT (%S+) (%S+) (%S+)')
  if id then r[id] = r[id] or {}; r[id][metric] = tonumber(v) end
end
local g = r.GEMM or {}
local s32, s16 = g.sgemm_square8192, g.hgemm_square8192
print(('GEMM bound: sgemm %s TFLOP/s, hgemm %s TFLOP/s (8192^3, median of 20)'):format(
  tostring(s32), tostring(s16)))
print(('%-10s %14s %10s %12s %10s'):format('workload', 'per second', 'TFLOP/s', '% of bound', 'allocs'))
local ids = {}
for id in pairs(r) do if id ~= 'GEMM' then ids[#ids + 1] = id end end
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
