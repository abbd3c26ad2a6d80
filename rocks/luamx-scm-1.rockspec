-- luarocks make rocks/luamx-scm-1.rockspec  (from the repository root; no network needed)
-- Builds libluamx with CMake and installs it with the Lua module, so that
-- `luajit -e "require 'luamx'"` works from any directory. Debian's luarocks targets
-- Lua 5.2 by default: pass --lua-version=5.1 so the files land where LuaJIT looks.
rockspec_format = "3.0"
package = "luamx"
version = "scm-1"
source = {
  url = "git+file://.",
}
description = {
  summary = "A deep-learning runtime with a C engine, scripted from LuaJIT",
  detailed = [[
luamx follows MXNet's symbolic model: NDArrays, symbols, executors, modules,
bucketing and data-parallel training, with a C engine reached through the LuaJIT FFI.
]],
  license = "Apache-2.0",
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
}
