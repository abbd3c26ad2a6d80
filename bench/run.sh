#!/bin/sh
# bench/run.sh — runs every workload of BENCHMARKS.md for luamx and PyTorch alternately
# (A B B A A B ..., ROUNDS rounds), measures the OpenBLAS sgemm rate at the workloads' shapes
# and the machine's FMA peak (bench/fma_peak.c: AVX-512 and AVX2, 1 and 2 threads) in each
# round, and prints the table (medians, ratio, % of the sgemm bound, % of the FMA peak)
# through bench/report.lua. Not a test: nothing asserts a time.
#
#   sh bench/run.sh                  # 3 rounds, 2 threads for both sides
#   ROUNDS=5 THREADS=1 sh bench/run.sh
#   ONLY="w1_mlp w4_dispatch" sh bench/run.sh
#
# Environment (all optional):
#   LUAMX_LIB   libluamx.so to load (default: build-bench/libluamx.so under the repository)
#   LUAJIT      luajit (default: luajit)    PYTHON  Debian's python3 with torch (/usr/bin/python3)
#   ROUNDS      rounds (default 3)          THREADS OMP_NUM_THREADS for both sides (default 2)
#   TORCH_OPENMP_BLAS  1 (default): run PyTorch with the OpenMP OpenBLAS first on its library
#               path (Debian's alternatives default to the pthreads build, which fights
#               PyTorch's OpenMP pool); 0: the system default
#   RESULTS     file to keep the raw RESULT lines (default: a temporary file)
#   ONLY        space-separated subset of: w1_mlp w2_lenet w3_lstm w4_dispatch w5_infer
#   BLAS_CORETYPE  OpenBLAS core type for both sides (default: none, see below)
#   CC          C compiler for bench/fma_peak.c (default: cc)
# The BLAS environment is the same for both sides. By default luamx runs with
# OPENBLAS_CORETYPE unset, as on a user's machine, so it picks the kernels from the CPU's
# features itself (mx.runtime.features()); PyTorch gets that same core type explicitly
# (its OpenBLAS would otherwise pick from its own table of CPU models, which may not know
# the CPU: its best setting). BLAS_CORETYPE=<name> sets OPENBLAS_CORETYPE=<name> for both.
set -eu
cd "$(dirname "$0")/.."
LUAMX_LIB=${LUAMX_LIB:-build-bench/libluamx.so}
LUAJIT=${LUAJIT:-luajit}
PYTHON=${PYTHON:-/usr/bin/python3}
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-2}
TORCH_OPENMP_BLAS=${TORCH_OPENMP_BLAS:-1}
ONLY=${ONLY:-"w1_mlp w2_lenet w3_lstm w4_dispatch w5_infer"}
BLAS_CORETYPE=${BLAS_CORETYPE:-}
RESULTS=${RESULTS:-$(mktemp /tmp/luamx-bench.XXXXXX)}
export LUAMX_LIB

[ -f "$LUAMX_LIB" ] || { echo "run.sh: $LUAMX_LIB not found; build first:
  cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release && cmake --build build-bench -j2" >&2; exit 1; }
"$PYTHON" -c 'import torch' 2>/dev/null || { echo "run.sh: $PYTHON cannot import torch (apt-get install -y python3-torch)" >&2; exit 1; }

TORCH_LDPATH=
if [ "$TORCH_OPENMP_BLAS" = 1 ]; then
  for d in /usr/lib/*/openblas-openmp; do [ -d "$d" ] && TORCH_LDPATH=$d && break; done
fi

# the FMA peak program, compiled for this run
PEAK_DIR=$(mktemp -d /tmp/luamx-peak.XXXXXX)
PEAK_BIN=$PEAK_DIR/fma_peak
${CC:-cc} -O2 -fopenmp -o "$PEAK_BIN" bench/fma_peak.c ||
  { echo "run.sh: cannot compile bench/fma_peak.c (needs gcc with OpenMP)" >&2; exit 1; }
trap 'rm -rf "$PEAK_DIR"' EXIT

# lmx/pt: a command with each side's BLAS environment (see the top of this file)
if [ -n "$BLAS_CORETYPE" ]; then
  lmx() { env OPENBLAS_CORETYPE="$BLAS_CORETYPE" OMP_NUM_THREADS="$THREADS" "$LUAJIT" "$@"; }
else
  lmx() { env -u OPENBLAS_CORETYPE OMP_NUM_THREADS="$THREADS" "$LUAJIT" "$@"; }
fi
LMX_CORE=$(LUA_PATH="lua/?.lua;lua/?/init.lua;;" lmx -e \
  "local b = require('luamx').runtime.features().blas; io.write(b.corename, ' (', b.source, ')')") ||
  { echo "run.sh: luamx does not load ($LUAMX_LIB)" >&2; exit 1; }
PT_CORETYPE=${BLAS_CORETYPE:-${LMX_CORE%% *}}
pt() {
  if [ -n "$TORCH_LDPATH" ]; then
    env OPENBLAS_CORETYPE="$PT_CORETYPE" OMP_NUM_THREADS="$THREADS" TORCH_THREADS="$THREADS" \
      LD_LIBRARY_PATH="$TORCH_LDPATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$PYTHON" "$@"
  else
    env OPENBLAS_CORETYPE="$PT_CORETYPE" OMP_NUM_THREADS="$THREADS" TORCH_THREADS="$THREADS" "$PYTHON" "$@"
  fi
}
# what PyTorch's OpenBLAS runs (the library torch mapped, asked through ctypes)
PT_CORE=$(pt -c '
import ctypes, torch
lib = [l.split()[-1] for l in open("/proc/self/maps") if "libopenblas" in l or "libblas" in l]
c = ctypes.CDLL(lib[0]) if lib else None
f = getattr(c, "openblas_get_corename", None)
f and setattr(f, "restype", ctypes.c_char_p)
print((f().decode() if f else "?") + " from " + (lib[0] if lib else "?"))' 2>/dev/null || echo '?')

# run <side> <round> <command...>: keeps the RESULT lines, tagged
run() {
  side=$1; round=$2; shift 2
  "$@" 2>/dev/null | grep '^RESULT ' | sed "s/^/$side $round /" >> "$RESULTS" ||
    echo "run.sh: $side round $round failed: $*" >&2
}

echo "# luamx bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)," \
     "THREADS=$THREADS, ROUNDS=$ROUNDS, torch BLAS path: ${TORCH_LDPATH:-system default}" >> "$RESULTS"
echo "# blas: luamx runs OpenBLAS ${LMX_CORE} kernels (OPENBLAS_CORETYPE ${BLAS_CORETYPE:-unset});" \
     "PyTorch OPENBLAS_CORETYPE=$PT_CORETYPE: $PT_CORE" >> "$RESULTS"
r=1
while [ "$r" -le "$ROUNDS" ]; do
  echo "# round $r of $ROUNDS" >&2
  run lmx "$r" lmx bench/sgemm.lua
  run lmx "$r" "$PEAK_BIN" 0.3
  for w in $ONLY; do
    if [ "$w" = w3_lstm ]; then set -- "--mode fused" "--mode cell"; else set -- ""; fi
    for extra in "$@"; do
      # odd rounds luamx first, even rounds PyTorch first, so slow drifts cancel
      # ($extra is deliberately unquoted: empty or "--mode X")
      if [ $((r % 2)) = 1 ]; then
        run lmx "$r" lmx "bench/$w.lua" $extra
        run pt "$r" pt "bench/torch/$w.py" $extra
      else
        run pt "$r" pt "bench/torch/$w.py" $extra
        run lmx "$r" lmx "bench/$w.lua" $extra
      fi
    done
  done
  r=$((r + 1))
done
echo "# raw results: $RESULTS" >&2
"$LUAJIT" bench/report.lua "$RESULTS"
