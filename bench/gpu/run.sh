#!/bin/sh
# bench/gpu/run.sh — run ON THE GPU MACHINE after bench/gpu/pack.sh staged .gpu-carry/:
# measures the cuBLAS sgemm/hgemm bound (bench/gpu/gemm_bound.cu, built here with the
# machine's nvcc) and then every workload of issue 10 on gpu(0) in the same run, and
# prints one table: samples/s, achieved TFLOP/s, and % of the GEMM bound (the hgemm rate
# for float16 runs, the sgemm rate otherwise). Not a test: nothing asserts a time.
#
#   sh bench/gpu/run.sh                       # every workload
#   ONLY="w1 r50" STEPS=50 sh bench/gpu/run.sh
set -eu
cd "$(dirname "$0")/../.."
C=.gpu-carry
[ -x "$C/luajit" ] || { echo "run.sh: $C missing: run bench/gpu/pack.sh on the build machine" >&2; exit 1; }
CUDA=${CUDA_HOME:-/usr/local/cuda}
# cuBLAS / cuDNN / NCCL from the CUDA install or from Python's nvidia-* wheels
EXTRA=$(python3 - <<'PY' 2>/dev/null || true
import glob, os, site
dirs = set()
for sp in site.getsitepackages():
    for lib in ("cublas", "cudnn", "nccl"):
        dirs.update(os.path.dirname(p) for p in glob.glob(f"{sp}/nvidia/{lib}*/lib/lib*.so*"))
print(":".join(sorted(dirs)))
PY
)
export LD_LIBRARY_PATH="$PWD/$C/lib:$CUDA/lib64:${EXTRA}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LUAMX_LIB="$PWD/$C/lib/libluamx.so" OPENBLAS_NUM_THREADS=1
LUAJIT="$PWD/$C/luajit"
STEPS=${STEPS:-30}
ONLY=${ONLY:-"w1 w2 w3a w3b r50 r50-fp16 w4"}
OUTF=${OUT:-/tmp}/gpu-bench.txt
: >"$OUTF"
"$CUDA/bin/nvcc" -O2 -o /tmp/gemm_bound bench/gpu/gemm_bound.cu -lcublas
/tmp/gemm_bound | tee -a "$OUTF"
# cuBLAS against cuBLASLt at the FullyConnected shapes (settles LUAMX_CUBLASLT=auto's rule)
"$CUDA/bin/nvcc" -O2 -Isrc -o /tmp/lt_bound bench/gpu/lt_bound.cu kernels/cuda/blaslt_args.c \
  -lcublas -lcublasLt
/tmp/lt_bound | tee -a "$OUTF"
for w in $ONLY; do
  case $w in
    *-fp16) args="--workload ${w%-fp16} --dtype float16" ;;
    *) args="--workload $w" ;;
  esac
  echo "# $w" >&2
  "$LUAJIT" bench/gpu/train.lua $args --steps "$STEPS" 2>&1 | tee -a "$OUTF" || echo "RESULT $w failed 1" >>"$OUTF"
done
"$LUAJIT" bench/gpu/report.lua "$OUTF"
