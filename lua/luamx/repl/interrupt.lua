--- luamx.repl.interrupt — Ctrl-C for the REPL without an asynchronous signal handler.
--
--   local intr = require 'luamx.repl.interrupt'
--   intr.block()                       -- once, before the engine starts threads
--   local ok, err = intr.run(fn, ...)  -- err == intr.INTERRUPTED after Ctrl-C
--
-- Why this design: a Lua function cannot be a signal handler (the signal may arrive
-- while the VM is in any state), and the engine's C API has no interrupt entry. So
-- SIGINT is blocked in every thread (block() runs before libluamx and OpenMP create
-- theirs, and threads inherit the mask); a Ctrl-C then stays pending on the process.
-- While user code runs, a count hook (every HOOK_COUNT VM instructions) asks the
-- kernel whether SIGINT is pending (sigpending), consumes it (sigtimedwait with a zero
-- timeout) and raises INTERRUPTED at an instruction boundary. An engine call in
-- progress (a forward, a GEMM) finishes first, so arrays and executors stay consistent.
-- LuaJIT does not run hooks inside compiled traces, so run() is given chunks that the
-- caller compiled with jit.off(chunk, true): code typed at the prompt is interpreted;
-- library code (luamx's own loops, fit) stays compiled and returns to the interpreter
-- often enough to be stopped between batches.
local ffi = require 'ffi'

local M = {}
M.INTERRUPTED = 'interrupted (Ctrl-C)'
M.HOOK_COUNT = 10000
local SIGINT = 2

pcall(ffi.cdef, [[
  typedef struct { unsigned long val[16]; } lmx_repl_sigset;
  typedef struct { long tv_sec; long tv_nsec; } lmx_repl_timespec;
  int sigemptyset(lmx_repl_sigset *set);
  int sigaddset(lmx_repl_sigset *set, int sig);
  int sigismember(const lmx_repl_sigset *set, int sig);
  int sigprocmask(int how, const lmx_repl_sigset *set, lmx_repl_sigset *old);
  int sigpending(lmx_repl_sigset *set);
  int sigtimedwait(const lmx_repl_sigset *set, void *info, const lmx_repl_timespec *t);
]])

local C = ffi.C
local set, pend = ffi.new('lmx_repl_sigset'), ffi.new('lmx_repl_sigset')
local zero = ffi.new('lmx_repl_timespec')
local blocked = false
C.sigemptyset(set)
C.sigaddset(set, SIGINT)

--- Blocks SIGINT in the calling thread (and the threads it creates later). Returns
-- true when it is blocked.
function M.block()
  if not blocked then blocked = C.sigprocmask(0 --[[SIG_BLOCK]], set, nil) == 0 end
  return blocked
end

--- Unblocks SIGINT (a pending one is then delivered with its default action).
function M.unblock()
  if blocked then C.sigprocmask(1 --[[SIG_UNBLOCK]], set, nil); blocked = false end
end

--- True when a Ctrl-C is pending; consumes it.
function M.take()
  if not blocked then return false end
  if C.sigpending(pend) == 0 and C.sigismember(pend, SIGINT) == 1 then
    C.sigtimedwait(set, nil, zero)
    return true
  end
  return false
end

local function pack(...) return {n = select('#', ...), ...} end

-- Sticky: once a Ctrl-C has been taken, every later tick raises again until run()
-- returns, so a pcall in library code that catches the first error cannot swallow it.
local fired = false
local function hook()
  if fired or M.take() then
    fired = true
    error(M.INTERRUPTED, 2)
  end
end
jit.off(hook)

--- Calls fn(...) under the interrupt hook through xpcall with `handler`. Returns
-- xpcall's results. A Ctrl-C pending from before the call is discarded.
function M.run(handler, fn, ...)
  M.take()
  local args, n = {...}, select('#', ...)
  fired = false
  if blocked then debug.sethook(hook, '', M.HOOK_COUNT) end
  local res = pack(xpcall(function() return fn(unpack(args, 1, n)) end,
    function(e) debug.sethook(); return handler(e) end))
  debug.sethook()
  fired = false
  return unpack(res, 1, res.n)
end

return M
