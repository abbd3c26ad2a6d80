#!/bin/sh
# docs/build.sh — builds the API reference into docs/html: LDoc over lua/luamx (doc
# comments), then the operator reference from the registry (docs/gen_operators.lua).
# Fails on any LDoc warning. Needs lua-ldoc and the built library ($LUAMX_LIB or build/).
set -eu
cd "$(dirname "$0")"
out=$(ldoc -c config.ld . 2>&1)
echo "$out"
warnings=$(echo "$out" | grep -v -e '^reading configuration' -e '^changing to directory' -e '^output written to' || true)
if [ -n "$warnings" ]; then
  echo "docs/build.sh: LDoc reported warnings" >&2
  exit 1
fi
luajit gen_operators.lua html/operators.html
