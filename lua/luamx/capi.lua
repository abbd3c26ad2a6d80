--- luamx.capi — loads libluamx, declares its C API, and turns statuses into errors.
--
-- The ffi.cdef text is not written here: the library carries the preprocessed text of
-- the src/luamx.h it was built from (lmx_cdef), so the binding can never drift from
-- the header. Every C call that returns a status goes through `check`, the one place
-- that reads return codes; it raises a Lua error with the engine's message at the
-- caller's level.
--
-- Where the library is found: $LUAMX_LIB if set; next to this file's tree (a source
-- checkout: build/libluamx.so); on package.cpath (a luarocks install); the system
-- loader path.
local ffi = require 'ffi'

local M = {}

local function file_exists(p)
  local f = p and io.open(p, 'rb')
  if f then f:close() return true end
  return false
end

local function candidates()
  local list = {}
  local env = os.getenv('LUAMX_LIB')
  if env and env ~= '' then list[#list + 1] = env end
  local here = debug.getinfo(1, 'S').source:match('^@(.*)[/\\]luamx[/\\]capi%.lua$')
  if here then
    list[#list + 1] = here .. '/../build/libluamx.so'
    list[#list + 1] = here .. '/libluamx.so'
  end
  local found = package.searchpath and package.searchpath('libluamx', package.cpath)
  if found then list[#list + 1] = found end
  return list
end

-- Where the library is: a path, or the bare name for the system loader path.
local function find_library()
  local tried = {}
  for _, path in ipairs(candidates()) do
    if file_exists(path) then return path end
    tried[#tried + 1] = path
  end
  return 'luamx', tried
end

-- OPENBLAS_CORETYPE is decided (luamx.cpu_choice) before OpenBLAS is loaded with libluamx.
local cpu_choice = require 'luamx.cpu_choice'
local function load_library()
  local path, tried = find_library()
  local st = cpu_choice.prepare(path ~= 'luamx' and path or nil)
  local ok, lib = pcall(ffi.load, path)
  if not ok then
    cpu_choice.finish(st, nil)
    if tried then
      error('luamx: cannot find libluamx (tried ' .. table.concat(tried, ', ') ..
            ' and the system library path); build it with cmake or set LUAMX_LIB', 3)
    end
    error(lib, 3)
  end
  return lib, path, st
end

local lib, path, cpu_state = load_library()
M.lib, M.path = lib, path

-- The library is linked with -z nodelete (CMakeLists.txt): LuaJIT dlcloses ffi.load'ed
-- libraries when the state closes, while OpenMP pool threads may still be running.

-- Bootstrap: read the cdef text through a redirected name, then declare everything.
ffi.cdef [[ const char *lmx_cdef_bootstrap_(void) __asm__("lmx_cdef"); ]]
ffi.cdef(ffi.string(lib.lmx_cdef_bootstrap_()))
M.C = lib

-- OpenBLAS is loaded now: restore the environment, check it took the core type.
do
  local name = ffi.new('const char *[1]')
  local ok = pcall(function() lib.lmx_blas_info(name, nil, nil, nil) end)
  M.cpu_state = cpu_choice.finish(cpu_state, ok and name[0] ~= nil and ffi.string(name[0]) or nil)
end

-- Errors are reported at the first stack frame outside this module's own files, so the
-- position is the user's line however deep (or tail-called) the module's own calls are.
local here = debug.getinfo(1, 'S').source
local module_dir = here:match('^(@.*[/\\])luamx[/\\]capi%.lua$')
local function is_ours(src)
  return module_dir ~= nil and src:sub(1, #module_dir) == module_dir and
    (src:sub(#module_dir + 1, #module_dir + 6) == 'luamx/' or src:sub(#module_dir + 1) == 'luamx.lua')
end

--- Raises msg as a Lua error positioned at the caller's line (the first frame that is
-- not part of luamx). When there is none (the user's chunk tail-called luamx, as
-- `luajit -i`'s `= expr` does, and its frame is gone), the message carries no position
-- rather than one inside luamx.
function M.raise(msg)
  local level = 2
  while true do
    local info = debug.getinfo(level, 'S')
    if not info then level = 0 break end
    if info.what ~= 'C' and not is_ours(info.source) then break end
    level = level + 1
  end
  error(msg, level)
end

--- Raises the engine's last error (with `what` before it, if given) when rc ~= 0.
function M.check(rc, _, what)
  if rc ~= 0 then
    local msg = ffi.string(lib.lmx_last_error())
    if msg == '' then msg = ffi.string(lib.lmx_status_string(rc)) end
    if what then msg = what .. ': ' .. msg end
    M.raise(msg)
  end
end

--- Library version (LMX_VERSION of the build) and the header's.
function M.version()
  return tonumber(lib.lmx_version()), tonumber(lib.LMX_VERSION)
end

return M
