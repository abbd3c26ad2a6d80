#!/usr/bin/env bash
# bench/dist/ab.sh — two or more builds (or settings) of the dist store's all-reduce against
# each other (not a test): runs kv.lua under `mpirun -np 2` for each variant in turn, the
# order rotating from run to run, so that every variant meets the same moments of a shared
# machine; each kv.lua run times OpenMPI's in-place MPI_Allreduce next to the store in one
# process (interleaved rounds), so its kvstore / MPI ratio is the figure compared. Prints,
# per size and variant, the median over runs of kv.lua's median ratios, their spread (min
# to max) and the median GB/s of the store and of MPI, for pushpull(key, v, out) and (variant
# "LABEL,in-place") pushpull(key, g, g) against MPI in place, and (variant
# "LABEL,vs-MPI-out-of-place") pushpull(key, v, out) against MPI from v into out; then the load.
#
#   bench/dist/ab.sh RUNS ROUNDS SIZES LABEL LIB ENV [LABEL LIB ENV ...]
#   e.g. bench/dist/ab.sh 7 5 1048576,4194304 old build-old/libluamx.so '' \
#          new build/libluamx.so 'LUAMX_DIST_SHM_BYTES=65536'
# LIB: a libluamx.so with its libluamx_mpi.so next to it; ENV: NAME=value words ('' for none).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
runs=$1 rounds=$2 sizes=$3
shift 3
labels=() libs=() envs=()
while [ $# -ge 3 ]; do labels+=("$1") libs+=("$(realpath "$2")") envs+=("$3"); shift 3; done
nv=${#labels[@]}
export LUA_PATH="$root/lua/?.lua;$root/lua/?/init.lua;;"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset OPENBLAS_CORETYPE
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for r in $(seq "$runs"); do
  for j in $(seq 0 $((nv - 1))); do
    v=$(((r + j) % nv))
    xs="-x LUAMX_LIB -x LUA_PATH -x OMP_NUM_THREADS -x OPENBLAS_NUM_THREADS"
    for w in ${envs[$v]}; do xs="$xs -x ${w%%=*}"; done
    env LUAMX_LIB="${libs[$v]}" ${envs[$v]} mpirun --oversubscribe --mca btl self,vader,tcp $xs -np 2 \
      luajit "$here/kv.lua" "$rounds" "$sizes" |
      sed -n -e "s/^RESULT kv_ratio /${labels[$v]} /p" \
        -e "s/^RESULT kv_ratio_inplace \([^ ]*\) \([^ ]*\) \([^ ]*\) \([^ ]*\) .*/${labels[$v]},in-place \1 \2 \3 - \4/p" \
        -e "s/^RESULT kv_ratio_outofplace \([^ ]*\) \([^ ]*\) \([^ ]*\) \([^ ]*\) .*/${labels[$v]},vs-MPI-out-of-place \1 \2 \3 - \4/p" >> "$out"
  done
done
awk '
  function med(arr, k, m,    i, j, t, v) {
    for (i = 1; i <= m; i++) v[i] = arr[k, i]
    for (i = 2; i <= m; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
    lo = v[1]; hi = v[m]
    return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
  }
  { k = $2 " " $1; if (!(k in n)) order[++no] = k; m = ++n[k]; ratio[k, m] = $6; kv[k, m] = $4; mp[k, m] = $3 }
  END {
    print "| size | variant | kvstore / MPI (median of runs) | spread | kvstore GB/s | MPI GB/s | runs |"
    print "|---|---|---|---|---|---|---|"
    for (i = 1; i <= no; i++) {
      k = order[i]; split(k, p, " "); b = p[1]
      lab = b >= 1048576 ? (b / 1048576) " MB" : (b / 1024) " KB"
      r = med(ratio, k, n[k]); l = lo; h = hi
      printf "| %s | %s | %.2f | %.2f-%.2f | %.2f | %.2f | %d |\n", lab, p[2], r, l, h, med(kv, k, n[k]), med(mp, k, n[k]), n[k]
    }
  }' <(sort -s -n -k2,2 "$out")
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(getconf _NPROCESSORS_ONLN) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
