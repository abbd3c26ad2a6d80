#!/bin/sh
# bench/gpu/run.sh — run ON THE GPU MACHINE after bench/gpu/pack.sh packed .gpu-carry/:
# measures the cuBLAS sgemm/hgemm bound (bench/gpu/gemm_bound.cu, built by pack.sh) and
# then every workload of issue 10 on gpu(0) in the same run, and
# prints one table: samples/s, achieved TFLOP/s, and % of the GEMM bound (the hgemm rate
# for float16 runs, the sgemm rate otherwise). Not a test: nothing asserts a time.
#
#   sh bench/gpu/run.sh                       # every workload
#   ONLY="w1 r50" STEPS=50 sh bench/gpu/run.sh
set -eu
cd "$(dirname "$0")/../.."
. bench/gpu/env.sh
STEPS=${STEPS:-30}
ONLY=${ONLY:-"w1 w2 w3a w3b r50 r50-fp16 w4"}
OUTF=${OUT:-/tmp}/gpu-bench.txt
: >"$OUTF"
"$C/bin/gemm_bound" | tee -a "$OUTF"
# cuBLAS against cuBLASLt at the FullyConnected shapes (settles LUAMX_CUBLASLT=auto's rule)
"$C/bin/lt_bound" | tee -a "$OUTF"
for w in $ONLY; do
  case $w in
    *-fp16) args="--workload ${w%-fp16} --dtype float16" ;;
    *) args="--workload $w" ;;
  esac
  echo "# $w" >&2
  "$LUAJIT" bench/gpu/train.lua $args --steps "$STEPS" 2>&1 | tee -a "$OUTF" || echo "RESULT $w failed 1" >>"$OUTF"
done
"$LUAJIT" bench/gpu/report.lua "$OUTF"
