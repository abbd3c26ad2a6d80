--- luamx.cpu_choice — picks the BLAS kernels from the CPU's features, before libluamx
--- (and with it OpenBLAS) is loaded.
--
-- OpenBLAS reads OPENBLAS_CORETYPE once, in its constructor, which runs when libluamx
-- pulls it in; when the variable is unset it picks kernels from its own table of CPU
-- models, and a model it does not know gets its SSE3 kernels. So luamx.capi calls
-- `prepare` first: it loads libluamx_cpu.so (the feature detection and the choice of
-- src/core/cpu_isa.c alone, no dependencies), decides, and sets the variable for the
-- time of the load; `finish` restores the environment as it was and checks with
-- OpenBLAS's own report that it took the core type.
--
-- The decision (`decide`) is a pure function of the two variables and the detected
-- choice:
--   OPENBLAS_CORETYPE set (not empty)  the user's choice: never overridden
--   LUAMX_BLAS_CORETYPE=off            OpenBLAS picks on its own
--   LUAMX_BLAS_CORETYPE=<name>         that core type (e.g. Prescott: the baseline)
--   unset, empty or auto               lmx_blas_coretype_for(detected features)
local ffi = require 'ffi'

local M = {}

pcall(ffi.cdef, [[
int lmx_cpuc_setenv_(const char *name, const char *value, int overwrite) __asm__("setenv");
int lmx_cpuc_unsetenv_(const char *name) __asm__("unsetenv");
int lmx_cpuc_features_(uint64_t *features) __asm__("lmx_cpu_features");
const char *lmx_cpuc_coretype_for_(uint64_t features) __asm__("lmx_blas_coretype_for");
]])

--- The decision, a pure function. env: the values of OPENBLAS_CORETYPE and
--- LUAMX_BLAS_CORETYPE (nil when unset); detected: the core type chosen from the CPU's
--- features (nil: none fits better than OpenBLAS's own pick); problem: why there was no
--- detection, if there was none. Returns {source =, coretype =, set =, why =}: `set` is
--- the value to put in OPENBLAS_CORETYPE for the load (nil: leave it alone), source one
--- of 'user', 'LUAMX_BLAS_CORETYPE', 'off', 'detected', 'default'.
function M.decide(env, detected, problem)
  local user = env.OPENBLAS_CORETYPE
  if user and user ~= '' then
    return {source = 'user', coretype = user,
            why = 'OPENBLAS_CORETYPE=' .. user .. ' is set: the user\'s choice, never overridden'}
  end
  local own = env.LUAMX_BLAS_CORETYPE
  if own and own ~= '' and own:lower() ~= 'auto' then
    if own:lower() == 'off' then
      return {source = 'off', why = 'LUAMX_BLAS_CORETYPE=off: OpenBLAS picks its kernels itself'}
    end
    return {source = 'LUAMX_BLAS_CORETYPE', coretype = own, set = own,
            why = 'LUAMX_BLAS_CORETYPE=' .. own}
  end
  if detected then
    return {source = 'detected', coretype = detected, set = detected,
            why = 'chosen from the CPU\'s features (OPENBLAS_CORETYPE unset)'}
  end
  if problem then
    return {source = 'default', why = 'no feature detection (' .. problem .. '): OpenBLAS picks'}
  end
  return {source = 'default',
          why = 'no core type fits these features better than OpenBLAS\'s own pick'}
end

local function dirname(p) return p and p:match('^(.*)[/\\][^/\\]*$') end

--- Loads libluamx_cpu from dir (the folder libluamx is loaded from) or the system path.
--- Returns the library or nil and a message.
function M.detector(dir)
  local tried = {}
  if dir then
    local p = dir .. '/libluamx_cpu.so'
    local ok, lib = pcall(ffi.load, p)
    if ok then return lib end
    tried[#tried + 1] = p
  end
  local ok, lib = pcall(ffi.load, 'luamx_cpu')
  if ok then return lib end
  tried[#tried + 1] = 'luamx_cpu'
  return nil, 'libluamx_cpu not found: tried ' .. table.concat(tried, ', ')
end

local function openblas_mapped()
  local f = io.open('/proc/self/maps', 'r')
  if not f then return false end
  local text = f:read('*a')
  f:close()
  return text:find('libopenblas', 1, true) ~= nil
end

--- Decides and sets OPENBLAS_CORETYPE for the load of the library at lib_path.
--- Returns the state that `finish` takes (also the record mx.runtime.features reports).
function M.prepare(lib_path)
  local st = {env = {OPENBLAS_CORETYPE = os.getenv('OPENBLAS_CORETYPE'),
                     LUAMX_BLAS_CORETYPE = os.getenv('LUAMX_BLAS_CORETYPE')}}
  local lib, problem = M.detector(dirname(lib_path))
  local detected
  if lib then
    local bits = ffi.new('uint64_t[1]')
    lib.lmx_cpuc_features_(bits)
    st.features = bits[0]
    local c = lib.lmx_cpuc_coretype_for_(bits[0])
    detected = c ~= nil and ffi.string(c) or nil
    st.detected = detected
  end
  st.decision = M.decide(st.env, detected, problem)
  st.preloaded = openblas_mapped()
  if st.decision.set then
    ffi.C.lmx_cpuc_setenv_('OPENBLAS_CORETYPE', st.decision.set, 1)
    st.was_set = true
  end
  return st
end

--- After the load: restores OPENBLAS_CORETYPE as it was (children start from the user's
--- environment) and records whether OpenBLAS runs the core type asked for. corename:
--- OpenBLAS's openblas_get_corename() (nil when unknown).
function M.finish(st, corename)
  if st.was_set then
    local old = st.env.OPENBLAS_CORETYPE
    if old then ffi.C.lmx_cpuc_setenv_('OPENBLAS_CORETYPE', old, 1)
    else ffi.C.lmx_cpuc_unsetenv_('OPENBLAS_CORETYPE') end
    st.was_set = nil
  end
  st.corename = corename
  local want = st.decision.coretype
  if want and corename then
    st.applied = corename:lower() == want:lower()
    if not st.applied then
      st.note = st.preloaded and
        'OpenBLAS was loaded before luamx, so OPENBLAS_CORETYPE could not change its kernels' or
        ('OpenBLAS runs ' .. corename .. ', not ' .. want ..
         ' (a name it does not know, or a build without DYNAMIC_ARCH)')
    end
  end
  return st
end

return M
