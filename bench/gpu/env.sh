# bench/gpu/env.sh — sourced by run.sh and specs.sh ON THE GPU MACHINE: unpacks the
# archive pack.sh left in .gpu-carry/ (once, into $LUAMX_GPU_STAGE), then sets the library
# paths and LuaJIT of that tree, cuBLAS / cuDNN / NCCL from the CUDA install or from
# Python's nvidia-* wheels, and busted's Lua modules for the specs.
C=${LUAMX_GPU_STAGE:-/tmp/luamx-gpu}
if [ ! -x "$C/luajit" ]; then
  [ -f .gpu-carry/stage.tar.xz ] ||
    { echo "bench/gpu: .gpu-carry/stage.tar.xz missing: run bench/gpu/pack.sh on the build machine" >&2; exit 1; }
  mkdir -p "$C"
  if command -v xz >/dev/null; then xz -dc .gpu-carry/stage.tar.xz | tar xf - -C "$C"
  else python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
         .gpu-carry/stage.tar.xz "$C"; fi || exit 1
fi
CUDA=${CUDA_HOME:-/usr/local/cuda}
EXTRA=$(python3 - <<'PY' 2>/dev/null || true
import glob, os, site
dirs = set()
for sp in site.getsitepackages():
    for lib in ("cublas", "cudnn", "nccl"):
        dirs.update(os.path.dirname(p) for p in glob.glob(f"{sp}/nvidia/{lib}*/lib/lib*.so*"))
print(":".join(sorted(dirs)))
PY
)
export LD_LIBRARY_PATH="$C/lib:$CUDA/lib64:${EXTRA}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LUAMX_LIB="$C/lib/libluamx.so" OPENBLAS_NUM_THREADS=1
export LUA_PATH="$PWD/lua/?.lua;$PWD/lua/?/init.lua;$PWD/spec/?.lua;$C/share/lua/5.1/?.lua;$C/share/lua/5.1/?/init.lua"
export LUA_CPATH="$C/lib/lua/5.1/?.so"
export LUAMX_SOURCE_DIR="$PWD" LUAMX_FIXTURES="$PWD/spec/fixtures"
# shellcheck disable=SC2034  # used by the scripts that source this file
LUAJIT="$C/luajit"
export PATH="$C:$PATH"  # busted re-runs itself under the `lua` of .busted (luajit)
