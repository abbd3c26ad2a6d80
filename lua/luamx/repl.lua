--- luamx.repl — the `luamx` command: an interactive LuaJIT prompt with luamx loaded as `mx`.
--
--   luamx                     interactive (line editing, history, completion, help)
--   luamx script.lua args...  runs a script (arg[0] = script, arg[1..] = args)
--   luamx -e 'code'           runs code; -i then enters the prompt; -v prints the version
--
-- At the prompt a line is first compiled as an expression list: `return pack(<line>)`,
-- so every value it returns is printed (and `_` holds the first) and the user's line
-- stays on the stack when an error is raised (a plain `return f()` would be a tail
-- call, and errors would point inside luamx). Otherwise it is compiled as a statement;
-- a chunk that fails only at '<eof>' (an open function, table or string) continues on
-- the next line with the '>> ' prompt. `?x` and `help(x)` print luamx.repl.help's text.
--
-- Ctrl-C: SIGINT is blocked before luamx loads (luamx.repl.interrupt explains why) and
-- polled by a count hook while a chunk runs; chunks typed here are compiled with
-- jit.off(chunk, true) so the hook sees their loops. Ctrl-C at the prompt clears the
-- line. Ctrl-D (end of input) leaves. Without a terminal on stdin, lines are read from
-- the pipe with no prompt, results are printed without colour, and an error makes the
-- exit status 1.
local M = {}

local USAGE = [==[
usage: luamx [options] [script [args...]]
  -e code   run code (a chunk of Lua; `mx` is luamx)
  -i        enter the interactive prompt after running the script or -e code
  -v        print the luamx and LuaJIT versions and exit
  -h        this help
With no script and no -e, luamx starts the prompt (reading lines from stdin when it is
not a terminal). History is kept in ~/.luamx_history (LUAMX_HISTORY overrides it).]==]

local function isatty(fd)
  local ok, ffi = pcall(require, 'ffi')
  if not ok then return false end
  pcall(ffi.cdef, 'int isatty(int fd);')
  local ok2, r = pcall(function() return ffi.C.isatty(fd) end)
  return ok2 and r == 1
end

local function use_color()
  local term = os.getenv('TERM')
  return isatty(1) and term and term ~= '' and term ~= 'dumb' and not os.getenv('NO_COLOR')
end

local function history_path()
  local p = os.getenv('LUAMX_HISTORY')
  if p then return p ~= '' and p or nil end
  local home = os.getenv('HOME')
  return home and home ~= '' and (home .. '/.luamx_history') or nil
end

-- Error text without the REPL's own frames: the message, then the traceback lines
-- that belong to the user's code and to luamx, up to the chunk itself.
local function error_handler(err)
  local msg = tostring(err)
  local tb = debug.traceback('', 2)
  local keep = {}
  for line in tb:gmatch('[^\n]+') do
    if line:find('luamx/repl', 1, true) or line:find("in function 'xpcall'", 1, true) then break end
    -- luamx's own frames (capi's raise/check, the module internals) are left out
    if not line:match('^stack traceback:') and not line:find('[C]: in function \'error\'', 1, true)
        and not line:find('/luamx/[%w_/]+%.lua:') and not line:find('/luamx%.lua:') then
      keep[#keep + 1] = line
    end
  end
  return {msg = msg, tb = keep}
end

local function pack(...) return {n = select('#', ...), ...} end

local Session = {}
Session.__index = Session

--- Prints an error (message, then the user's frames) to stderr.
function Session:print_error(e)
  local msg = type(e) == 'table' and e.msg or tostring(e)
  local interrupted = require('luamx.repl.interrupt').INTERRUPTED
  if msg:find(interrupted, 1, true) then
    io.stderr:write('interrupted\n')
    return
  end
  local pretty = require 'luamx.repl.pretty'
  io.stderr:write(pretty.paint(msg, 'err', self.color), '\n')
  if type(e) == 'table' and #e.tb > 1 and self.traceback then
    io.stderr:write('stack traceback:\n', table.concat(e.tb, '\n'), '\n')
  end
end

-- Compiles a chunk: returns fn, 'expr'|'stmt' | nil, 'incomplete' | nil, err.
--- Compiles a chunk as an expression list, else as statements.
function Session:compile(chunk)
  -- a newline before ')' only when a comment could swallow it (it moves the call's line)
  local close = chunk:find('--', 1, true) and '\n)' or ')'
  local f = loadstring('local __luamx_pack = ...; return __luamx_pack(' .. chunk .. close, '=stdin')
  if f then return f, 'expr' end
  local g, err = loadstring(chunk, '=stdin')
  if g then return g, 'stmt' end
  if err:match("'<eof>'$") or err:match('<eof>$') then return nil, 'incomplete' end
  return nil, 'error', err
end

-- Runs one complete chunk; prints its results. Returns true on success.
--- Runs one chunk and prints its values; 'incomplete' when it needs more lines.
function Session:run_chunk(chunk)
  local intr = require 'luamx.repl.interrupt'
  local f, kind, err = self:compile(chunk)
  if not f then
    if kind == 'incomplete' then return 'incomplete' end
    self:print_error(err)
    return false
  end
  jit.off(f, true)
  local res = pack(intr.run(error_handler, f, pack))
  if not res[1] then
    self:print_error(res[2])
    return false
  end
  if kind == 'expr' then
    local out = res[2]
    if out.n > 0 then
      _G._ = out[1]
      local pretty = require 'luamx.repl.pretty'
      for i = 1, out.n do
        local ok, text = pcall(pretty.format, out[i], {color = self.color})
        io.stdout:write(ok and text or ('<' .. tostring(text) .. '>'), '\n')
      end
    end
  end
  io.stdout:flush()
  return true
end

-- `?x` -> help(x)
local function rewrite(line)
  local what = line:match('^%s*%?%s*(.-)%s*$')
  if what then
    if what == '' then return 'help()' end
    if what:match('^[%a_][%w_]*$') and _G[what] == nil then return ('help(%q)'):format(what) end
    return 'help(' .. what .. ')'
  end
  return line
end

--- Runs the interactive loop until end of input. Returns the exit status.
function M.interactive(mx)
  local readline = require 'luamx.repl.readline'
  local complete = require 'luamx.repl.complete'
  local intr = require 'luamx.repl.interrupt'
  local s = setmetatable({color = use_color(), traceback = true, ok = true}, Session)
  local reader = readline.open {
    history = history_path(),
    complete = function(word) return complete.candidates(word, _G) end,
    interrupt_pending = intr.take,
  }
  local tty = reader.tty_in
  if tty then
    io.stdout:write(('luamx %s on %s — help() for help, Ctrl-D to leave\n'):format(
      mx.__version__, jit and jit.version or _VERSION))
  end
  local buffer
  while true do
    local line = reader:read(buffer and '>> ' or '> ')
    if line == nil then
      if tty then io.stdout:write('\n') end
      break
    end
    if reader.interrupted or (tty and intr.take()) then
      buffer = nil -- Ctrl-C at the prompt drops the line and any unfinished chunk
    else
      reader:add_history(line)
      local chunk = buffer and (buffer .. '\n' .. line) or rewrite(line)
      if chunk:match('^%s*$') then
        buffer = nil
      else
        local r = s:run_chunk(chunk)
        if r == 'incomplete' then buffer = chunk else
          buffer = nil
          if r == false then s.ok = false end
        end
      end
    end
  end
  if buffer then
    s:print_error('stdin: unfinished chunk at end of input')
    s.ok = false
  end
  reader:close()
  if tty then return 0 end
  return s.ok and 0 or 1
end

local function install_globals(mx)
  _G.mx = mx
  _G.help = function(x) print(require('luamx.repl.help').text(mx, x)) end
end

-- Runs a script or code with a plain traceback on error; returns the exit status.
local function run_main(f, args)
  local ok, err = xpcall(function() return f(unpack(args)) end, debug.traceback)
  if not ok then
    io.stderr:write('luamx: ', tostring(err), '\n')
    return 1
  end
  return 0
end

--- Entry point of bin/luamx: argv without the program name. Returns the exit status.
function M.main(argv)
  local code, interactive, script, sargs = {}, false, nil, {}
  local i = 1
  while i <= #argv do
    local a = argv[i]
    if script then sargs[#sargs + 1] = a
    elseif a == '-e' then
      if not argv[i + 1] then io.stderr:write('luamx: -e needs an argument\n', USAGE, '\n') return 2 end
      code[#code + 1] = argv[i + 1]; i = i + 1
    elseif a == '-i' then interactive = true
    elseif a == '-h' or a == '--help' then io.stdout:write(USAGE, '\n') return 0
    elseif a == '-v' or a == '--version' then
      local mx = require 'luamx'
      io.stdout:write(('luamx %s (%s)\n'):format(mx.__version__, jit and jit.version or _VERSION))
      return 0
    elseif a == '--' then script = argv[i + 1]; i = i + 1
    elseif a == '-' then script = '-'
    elseif a:sub(1, 1) == '-' then
      io.stderr:write(('luamx: unknown option %s\n'):format(a), USAGE, '\n')
      return 2
    else script = a end
    i = i + 1
  end
  local repl_mode = interactive or (#code == 0 and not script)
  if repl_mode then require('luamx.repl.interrupt').block() end
  local okm, mx = pcall(require, 'luamx')
  if not okm then io.stderr:write(tostring(mx):gsub('\nstack traceback:.*', ''), '\n') return 1 end
  install_globals(mx)
  for _, c in ipairs(code) do
    local f, err = loadstring(c, '=(command line)')
    if not f then io.stderr:write('luamx: ', err, '\n') return 1 end
    local rc = run_main(f, {})
    if rc ~= 0 then return rc end
  end
  if script and script ~= '-' then
    _G.arg = {[0] = script}
    for k, v in ipairs(sargs) do _G.arg[k] = v end
    local f, err = loadfile(script)
    if not f then io.stderr:write('luamx: ', err, '\n') return 1 end
    local rc = run_main(f, sargs)
    if rc ~= 0 and not interactive then return rc end
  end
  if repl_mode then return M.interactive(mx) end
  return 0
end

return M
