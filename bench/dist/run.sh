#!/usr/bin/env bash
# bench/dist/run.sh — the dist kvstore benchmark (not a test): OpenMPI's MPI_Allreduce
# (mpi_allreduce.c) and the dist_sync kvstore's pushpull (kv.lua) at the same sizes, fused
# small keys against one call per key, and W1 / W3a global throughput on 1 and 2 workers
# with one thread each (train.lua), on 2 workers with the overlapped push (backward starts
# the all-reduces) and without it (LUAMX_DIST_OVERLAP=0). Rounds alternate MPI and kvstore (A B A B ...); the
# table shows the best round of each, because the numbers of a shared machine drift.
#
#   LUAMX_LIB=build/libluamx.so bench/dist/run.sh [rounds=3]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
rounds=${1:-3}
: "${LUAMX_LIB:=$root/build/libluamx.so}"
export LUAMX_LIB LUA_PATH="$root/lua/?.lua;$root/lua/?/init.lua;;"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset OPENBLAS_CORETYPE
MPIRUN="mpirun --oversubscribe --mca btl self,vader,tcp -x LUAMX_LIB -x LUA_PATH -x OMP_NUM_THREADS -x OPENBLAS_NUM_THREADS"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpicc -O2 -o "$tmp/mpi_allreduce" "$here/mpi_allreduce.c"
for r in $(seq "$rounds"); do
  $MPIRUN -np 2 "$tmp/mpi_allreduce" >> "$tmp/out"
  $MPIRUN -np 2 luajit "$here/kv.lua" >> "$tmp/out"
  luajit "$here/train.lua" W1 >> "$tmp/out"
  $MPIRUN -np 2 luajit "$here/train.lua" W1 >> "$tmp/out"
  LUAMX_DIST_OVERLAP=0 $MPIRUN -x LUAMX_DIST_OVERLAP -np 2 luajit "$here/train.lua" W1 >> "$tmp/out"
  luajit "$here/train.lua" W3a >> "$tmp/out"
  $MPIRUN -np 2 luajit "$here/train.lua" W3a >> "$tmp/out"
  LUAMX_DIST_OVERLAP=0 $MPIRUN -x LUAMX_DIST_OVERLAP -np 2 luajit "$here/train.lua" W3a >> "$tmp/out"
done
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(getconf _NPROCESSORS_ONLN) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
awk '
  $1 != "RESULT" { next }
  $2 == "mpi_allreduce" { if (!($3 in mpi) || $4 < mpi[$3]) mpi[$3] = $4 }
  $2 == "kv_pushpull"   { if (!($3 in kv)  || $4 < kv[$3])  kv[$3]  = $4 }
  $2 == "kv_small_keys" { if (!fz || $5 < fz) { fz = $5; nk = $3; per = $4 } if (!one || $6 < one) one = $6 }
  $2 == "W1" || $2 == "W3a" { k = $2 " " $3 ($3 > 1 && $6 == "off" ? " off" : ""); if (!(k in tp) || $4 > tp[k]) { tp[k] = $4; us[k] = $5 } }
  END {
    print "| size | MPI_Allreduce GB/s | kvstore pushpull GB/s | ratio |"
    print "|---|---|---|---|"
    n = split("4096 65536 1048576 4194304 16777216 67108864", s, " ")
    for (i = 1; i <= n; i++) {
      b = s[i]; if (!(b in mpi) || !(b in kv)) continue
      lab = b >= 1048576 ? (b / 1048576) " MB" : (b / 1024) " KB"
      printf "| %s | %.2f | %.2f | %.2f |\n", lab, b / mpi[b] / 1e9, b / kv[b] / 1e9, mpi[b] / kv[b]
    }
    printf "\n| %d keys of %d floats | fused: %.0f us | one call per key: %.0f us | %.1fx |\n\n", nk, per, fz * 1e6, one * 1e6, one / fz
    print "| workload | 1 worker | 2 workers, overlap | scaling efficiency | update share | 2 workers, no overlap | scaling efficiency | update share |"
    print "|---|---|---|---|---|---|---|---|"
    split("W1 W3a", w, " ")
    for (i = 1; i <= 2; i++) {
      a = tp[w[i] " 1"]; c = tp[w[i] " 2"]; o = tp[w[i] " 2 off"]
      if (a && c && o) printf "| %s | %.0f | %.0f | %.0f%% | %.0f%% | %.0f | %.0f%% | %.0f%% |\n", w[i], a, c, 100 * c / (2 * a), 100 * us[w[i] " 2"], o, 100 * o / (2 * a), 100 * us[w[i] " 2 off"]
    }
  }' "$tmp/out"
