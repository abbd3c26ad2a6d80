#!/bin/sh
# bench/gpu/pack.sh — run HERE (the development machine): builds libluamx with the real
# CUDA backend (Release, sm_80 + sm_90 + PTX) and stages into .gpu-carry/ everything the
# GPU machine lacks (it starts bare: no LuaJIT, OpenBLAS, jansson or busted): libluamx and
# its plugins, luajit and the shared libraries they need, busted's Lua modules, the GPU
# builds of the C kernel and runtime tests and of the gradient checker, and the two GEMM
# bound programs (built here with the same nvcc, so the GPU machine compiles nothing).
# The Lua module, bench/ and this script travel with the working tree. Then, on a lent GPU
# (the `device` tool: carry .gpu-carry):
#
#   sh bench/gpu/specs.sh          # the GPU specs and kernel tests on the real device
#   sh bench/gpu/run.sh            # all workloads, one table
#
# .gpu-carry/ is ignored by git (.gitignore): one archive of about 25 MB (170 MB unpacked).
set -eu
cd "$(dirname "$0")/../.."
cmake -S . -B build-gpu-bench -DCMAKE_BUILD_TYPE=Release -DLUAMX_CUDA=ON >/dev/null
# the C tests that run on a real GPU (test_cu_*.c drive the simulator's thread orders only)
TESTS="test_gradcheck test_cuda_runtime"
# shellcheck disable=SC2086
cmake --build build-gpu-bench -j2 --target luamx luamx_cpu luamx_image $TESTS >/dev/null
S=build-gpu-bench/stage
rm -rf .gpu-carry "$S" && mkdir -p .gpu-carry "$S/lib/lua/5.1" "$S/share/lua" "$S/tests" "$S/bin"
cp build-gpu-bench/libluamx.so build-gpu-bench/libluamx_cpu.so build-gpu-bench/libluamx_image.so \
  "$S/lib/"
for t in $TESTS; do strip -o "$S/tests/$t" "build-gpu-bench/$t"; done
cp "$(command -v luajit)" "$S/luajit"
# busted and the Lua modules it needs (Debian's lua-busted and its dependencies)
cp /usr/bin/busted "$S/busted"
cp -rL /usr/share/lua/5.1 "$S/share/lua/"
for m in lfs.so term system; do cp -rL "/usr/lib/x86_64-linux-gnu/lua/5.1/$m" "$S/lib/lua/5.1/"; done
# the GEMM bounds of run.sh, with the CUDA libraries the GPU machine has
nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
"$nvcc" -O2 -arch=sm_90 -o "$S/bin/gemm_bound" bench/gpu/gemm_bound.cu -lcublas
"$nvcc" -O2 -arch=sm_90 -Isrc -o "$S/bin/lt_bound" bench/gpu/lt_bound.cu \
  kernels/cuda/blaslt_args.c -lcublas -lcublasLt
# every shared library libluamx, its plugins and luajit load that is not part of the C library
for lib in $( (for f in "$S"/lib/*.so; do ldd "$f"; done; ldd "$(command -v luajit)") |
              awk '$3 ~ /^\// { print $3 }' | sort -u); do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*) ;;
    libstdc++.so*|libgcc_s.so*) ;;  # the GPU machine's own are newer (cuDNN and cuBLAS need them)
    *) cp -L "$lib" "$S/lib/" ;;
  esac
done
# one compressed archive (the carried tree is limited to 64 MiB); env.sh unpacks it there
tar cf - -C "$S" . | xz -6 -T2 >.gpu-carry/stage.tar.xz
du -sh "$S" .gpu-carry
