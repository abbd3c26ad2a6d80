#!/bin/sh
# bench/gpu/pack.sh — run HERE (the development machine): builds libluamx with the real
# CUDA backend (Release, sm_80 + sm_90 + PTX) and stages into .gpu-carry/ everything the
# GPU machine lacks (it starts bare: no LuaJIT, OpenBLAS or jansson): libluamx, luajit and
# the shared libraries they need. The Lua module, bench/ and this script travel with the
# working tree. Then, on a lent GPU (the `device` tool: carry .gpu-carry):
#
#   sh bench/gpu/run.sh            # all workloads, one table
#
# .gpu-carry/ is ignored by git (.gitignore). About 45 MB.
set -eu
cd "$(dirname "$0")/../.."
cmake -S . -B build-gpu-bench -DCMAKE_BUILD_TYPE=Release -DLUAMX_CUDA=ON >/dev/null
cmake --build build-gpu-bench -j2 --target luamx >/dev/null
rm -rf .gpu-carry && mkdir -p .gpu-carry/lib
cp build-gpu-bench/libluamx.so .gpu-carry/lib/
cp "$(command -v luajit)" .gpu-carry/luajit
# every shared library libluamx and luajit load that is not part of the C library
for lib in $( (ldd build-gpu-bench/libluamx.so; ldd "$(command -v luajit)") |
              awk '$3 ~ /^\// { print $3 }' | sort -u); do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*) ;;
    *) cp -L "$lib" .gpu-carry/lib/ ;;
  esac
done
du -sh .gpu-carry
