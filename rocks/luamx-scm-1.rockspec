-- luarocks --lua-version=5.1 LUA_INCDIR=/usr/include/luajit-2.1 make rocks/luamx-scm-1.rockspec
-- (from the repository root; no network needed). Builds libluamx with CMake and installs
-- it with the Lua module, the shipped data (next to the module, for mx.datasets), the
-- `luamx` command (bin/luamx), and the examples and docs in the rock's own folder
-- (`luarocks doc luamx`, `luarocks show luamx`). Debian's luarocks targets Lua 5.2 by
-- default: pass --lua-version=5.1 so the files land where LuaJIT looks.
-- `luarocks build` of this file needs a source: pack a clone first
-- (`git archive --prefix=luamx/ -o luamx.tar.gz HEAD`) and point source.url at it, or use
-- `luarocks make` inside the clone as above.
rockspec_format = "3.0"
package = "luamx"
version = "scm-1"
source = {
  url = "git+file://.",
  dir = "luamx",
}
description = {
  summary = "A deep-learning runtime with a C engine, scripted from LuaJIT",
  detailed = [[
luamx follows MXNet's symbolic model: NDArrays, symbols, executors, modules,
bucketing and data-parallel training, with a C engine reached through the LuaJIT FFI.
The `luamx` command is an interactive prompt (completion, history, help from the
operator registry). The API reference (LDoc) and the operator reference are built by
`sh docs/build.sh` into docs/html; docs/for-mxnet-users.md maps MXNet's Python API.
]],
  homepage = "https://github.com/luamx/luamx",
  license = "Apache-2.0",
  labels = {"deep-learning", "luajit", "mxnet"},
}
dependencies = {
  "lua >= 5.1",
}
build = {
  type = "cmake",
  variables = {
    CMAKE_BUILD_TYPE = "Release",
    CMAKE_INSTALL_PREFIX = "$(PREFIX)",
    LUAMX_LUADIR = "$(LUADIR)",
    LUAMX_LIBDIR = "$(LIBDIR)",
  },
  install = {
    bin = {luamx = "bin/luamx"},
  },
  copy_directories = {"docs", "examples"},
}
