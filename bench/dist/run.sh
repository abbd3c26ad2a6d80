#!/usr/bin/env bash
# bench/dist/run.sh — the dist kvstore benchmark (not a test): the dist_sync kvstore's
# pushpull against OpenMPI's in-place MPI_Allreduce at the same sizes, interleaved in one
# process (kv.lua: rounds that rotate MPI, the store's default path (shared memory on one
# node), the default path called in place (the form Module's update() uses), MPI_Allreduce
# out of place between the arrays of the store's call, and its MPI-message path
# (LUAMX_DIST_SHM_BYTES=0)), OpenMPI's
# MPI_Allreduce alone in its own program (mpi_allreduce.c), fused small keys against one
# call per key, and W1 / W3a global throughput on 1 and 2 workers with one thread each
# (train.lua), on 2 workers with the overlapped push (backward starts the all-reduces) and
# without it (LUAMX_DIST_OVERLAP=0). The outer rounds repeat all of it; the first table
# shows the median over them of kv.lua's median ratios (and the best round's figures), the
# others the best round, because the numbers of a shared machine drift.
#
#   LUAMX_LIB=build/libluamx.so bench/dist/run.sh [rounds=3] [kv.lua rounds=9]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
rounds=${1:-3}
kvrounds=${2:-9}
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
  $MPIRUN -np 2 luajit "$here/kv.lua" "$kvrounds" >> "$tmp/out"
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
  $2 == "kv_ratio" { b = $3; m = ++nr[b]; rh[b, m] = $7; rp[b, m] = $8; gm[b, m] = $4; gh[b, m] = $5
                     if ($11 > bh[b]) { bm[b] = $10; bh[b] = $11; bx[b] = $13 } }
  $2 == "kv_ratio_inplace" { b = $3; m = ++ni[b]; ri[b, m] = $6; gi[b, m] = $5 }
  $2 == "kv_ratio_outofplace" { b = $3; m = ++no[b]; ro[b, m] = $6; go[b, m] = $4 }
  $2 == "kv_small_keys" { if (!fz || $5 < fz) { fz = $5; nk = $3; per = $4 } if (!one || $6 < one) one = $6 }
  $2 == "W1" || $2 == "W3a" { k = $2 " " $3 ($3 > 1 && $6 == "off" ? " off" : ""); if (!(k in tp) || $4 > tp[k]) { tp[k] = $4; us[k] = $5 } }
  function med(arr, b, m,    i, j, t, v) {
    for (i = 1; i <= m; i++) v[i] = arr[b, i]
    for (i = 2; i <= m; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
    return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
  }
  END {
    print "| size | MPI_Allreduce GB/s, own program (best) | MPI_Allreduce GB/s, in the kvstore process | kvstore pushpull GB/s | kvstore / MPI (median) | in place: GB/s, kvstore / MPI (median) | MPI out of place: GB/s, kvstore / it (median) | MPI-message path / MPI (median) | best rounds: MPI, kvstore GB/s, ratio |"
    print "|---|---|---|---|---|---|---|---|---|"
    n = split("4096 65536 1048576 4194304 16777216 67108864", s, " ")
    for (i = 1; i <= n; i++) {
      b = s[i]; if (!(b in mpi) || !(b in nr)) continue
      lab = b >= 1048576 ? (b / 1048576) " MB" : (b / 1024) " KB"
      printf "| %s | %.2f | %.2f | %.2f | %.2f | %.2f, %.2f | %.2f, %.2f | %.2f | %.2f, %.2f, %.2f |\n", lab, b / mpi[b] / 1e9, med(gm, b, nr[b]),
        med(gh, b, nr[b]), med(rh, b, nr[b]), med(gi, b, ni[b]), med(ri, b, ni[b]), med(go, b, no[b]), med(ro, b, no[b]),
        med(rp, b, nr[b]), bm[b], bh[b], bx[b]
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
