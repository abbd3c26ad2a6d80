#!/bin/sh
# bench/gpu/specs.sh — run ON THE GPU MACHINE after bench/gpu/pack.sh staged .gpu-carry/:
# the correctness checks that the CUDA simulator runs in CI, now against the real device:
#   - the C kernel and runtime tests pack.sh staged (tests/test_cu_*.c, test_cuda_*.c, ...);
#   - the gradient checker: every op with a CUDA kernel against the CPU (--agree, float32
#     and float16) and finite differences on gpu(0)'s kernels in float64 (--device gpu:0);
#   - every spec that uses a GPU context (SPECS overrides the list), JOBS at a time.
# Each check's output goes to $OUT/specs.log; the last lines printed are one line per check
# and a closing "N passed, N failed".
#
#   sh bench/gpu/specs.sh
#   SPECS="gpu_spec gpu_nn_spec" sh bench/gpu/specs.sh
set -u
cd "$(dirname "$0")/../.." || exit 1
. bench/gpu/env.sh
LOG=${OUT:-/tmp}/specs.log
W=$(mktemp -d)
JOBS=${JOBS:-6}
LIMIT=${LIMIT:-240}
SPECS=${SPECS:-$(grep -l 'mx.gpu\|gpu(0)\|num_gpus' spec/*_spec.lua | xargs -n1 basename | sed 's/\.lua$//')}
nvidia-smi -L 2>&1 | tee "$LOG"
# every check is one line "name<TAB>command" in $W/list; run JOBS at a time under a limit
: >"$W/list"
for t in "$C"/tests/test_*; do
  [ -x "$t" ] || continue
  n=$(basename "$t")
  if [ "$n" = test_gradcheck ]; then
    printf 'c_gradcheck_agree\t%s --agree\n' "$t" >>"$W/list"
    printf 'c_gradcheck_gpu64\t%s --device gpu:0\n' "$t" >>"$W/list"
  else
    printf 'c_%s\t%s\n' "$n" "$t" >>"$W/list"
  fi
done
for s in $SPECS; do
  printf '%s\t%s %s --output=plainTerminal spec/%s.lua\n' "$s" "$LUAJIT" "$C/busted" "$s" >>"$W/list"
done
run_one() { # name command...: its output to $W/name.log, its status to $W/name.rc
  n=$1; shift
  start=$(date +%s)
  timeout "$LIMIT" "$@" >"$W/$n.log" 2>&1
  echo "$? $(( $(date +%s) - start ))" >"$W/$n.rc"
}
while IFS="$(printf '\t')" read -r name cmd; do
  while [ "$(jobs -p | wc -l)" -ge "$JOBS" ]; do sleep 0.2; done
  # shellcheck disable=SC2086  # cmd is a command line of plain words
  run_one "$name" $cmd &
done <"$W/list"
wait
pass=0 fail=0
: >"$W/summary"
while IFS="$(printf '\t')" read -r name cmd; do
  # shellcheck disable=SC2046  # the two words of the .rc file: status and seconds
  set -- $(cat "$W/$name.rc" 2>/dev/null || echo "? ?")
  { echo "=== $name (exit $1, $2 s)"; cat "$W/$name.log"; } >>"$LOG"
  last=$(grep -E '[0-9]+ success|passed|failed|skipped|agree' "$W/$name.log" | tail -1)
  if [ "$1" = 0 ]; then pass=$((pass + 1)); st=ok; else fail=$((fail + 1)); st="FAIL($1)"; fi
  printf '%-32s %-8s %4ss  %s\n' "$name" "$st" "$2" "$last" >>"$W/summary"
done <"$W/list"
cat "$W/summary"
echo "$pass passed, $fail failed"
rm -rf "$W"
[ "$fail" = 0 ]
