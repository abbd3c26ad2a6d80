#!/bin/sh
# tests/blas_auto.sh LUAJIT PROGRAM ARGS... — runs a C test the way the Lua module runs
# OpenBLAS when the user has set nothing: OPENBLAS_CORETYPE unset, then set to the core type
# luamx.cpu_choice decides from the CPU's features (the same decision luamx.capi makes
# before loading libluamx; C programs that link libluamx directly load OpenBLAS before any
# of that can run). Needs LUA_PATH (lua/) and LUAMX_LIB (to find libluamx_cpu.so).
luajit=$1
shift
unset OPENBLAS_CORETYPE
# (under the sanitizers the probe's exit-time leak report would be LuaJIT's, not ours)
core=$(ASAN_OPTIONS=detect_leaks=0 "$luajit" -e "io.write(require('luamx.cpu_choice').prepare(os.getenv('LUAMX_LIB')).decision.set or '')") || exit 1
if [ -n "$core" ]; then
  OPENBLAS_CORETYPE=$core
  export OPENBLAS_CORETYPE
fi
echo "blas_auto.sh: OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(unset)}"
exec "$@"
