--- luamx.repl.readline — line input for the REPL: GNU readline or libedit over the FFI,
-- plain io.read otherwise.
--
--   local rl = require('luamx.repl.readline').open{history = path, complete = fn}
--   local line = rl:read('> ')   -- nil at end of input; rl.interrupted after Ctrl-C
--   rl:add_history(line); rl:close()
--
-- Invariants:
-- * The library is loaded at run time (ffi.load of libreadline.so.8, libreadline.so,
--   libedit.so.2, in that order; LUAMX_READLINE names another) and is optional: when
--   none loads, or stdin is not a terminal, or LUAMX_NO_READLINE is set, `read` is
--   io.read with the prompt written to stdout when stdin is a terminal (nothing is
--   echoed into a pipe's output).
-- * Completion goes through readline's rl_attempted_completion_function, a Lua
--   callback. LuaJIT forbids a callback to run inside an FFI call made from a JIT
--   trace, so the function that calls readline() is excluded from compilation
--   (jit.off) and the callbacks are created once and kept alive for the process.
-- * Ctrl-C at the prompt: the REPL keeps SIGINT blocked (luamx.repl.interrupt); an
--   rl_event_hook, run by readline about every 0.1 s while it waits for a key, sees the
--   pending signal, consumes it, empties the line and pushes a newline (rl_stuff_char),
--   so readline returns at once; `read` then returns '' with self.interrupted = true. With libedit (no event hook) Ctrl-C at the prompt waits
--   until the next line is entered.
local ffi = require 'ffi'

local M = {}

pcall(ffi.cdef, [[
  int isatty(int fd);
  void free(void *p);
  void *malloc(size_t n);
  char *strdup(const char *s);
]])

local RL_CDEF = [[
  typedef char *lmx_rl_compentry_t(const char *, int);
  typedef char **lmx_rl_completion_t(const char *, int, int);
  typedef int lmx_rl_hook_t(void);
  char *readline(const char *prompt);
  void add_history(const char *line);
  int read_history(const char *path);
  int write_history(const char *path);
  int history_truncate_file(const char *path, int lines);
  void rl_replace_line(const char *text, int clear_undo);
  int rl_stuff_char(int c);
  int rl_crlf(void);
  char **rl_completion_matches(const char *text, lmx_rl_compentry_t *gen);
  extern lmx_rl_completion_t *rl_attempted_completion_function;
  extern lmx_rl_hook_t *rl_event_hook;
  extern const char *rl_readline_name;
  extern const char *rl_basic_word_break_characters;
  extern const char *rl_completer_word_break_characters;
  extern char *rl_line_buffer;
  extern int rl_point;
  extern int rl_done;
  extern int rl_catch_signals;
  extern int rl_attempted_completion_over;
  extern int rl_completion_append_character;
]]

local function isatty(fd)
  local ok, r = pcall(function() return ffi.C.isatty(fd) end)
  return ok and r == 1
end
M.isatty = isatty

-- Loads the first line-editing library that has readline(); returns lib, name or nil.
local function load_lib()
  if os.getenv('LUAMX_NO_READLINE') then return nil end
  local ok = pcall(ffi.cdef, RL_CDEF)
  if not ok then return nil end
  local names = {'libreadline.so.8', 'libreadline.so', 'libedit.so.2', 'libedit.so'}
  local forced = os.getenv('LUAMX_READLINE') -- a library name or path to use instead
  if forced and forced ~= '' then names = {forced} end
  for _, name in ipairs(names) do
    local okl, lib = pcall(ffi.load, name)
    if okl and pcall(function() return lib.readline end) then return lib, name end
  end
  return nil
end

local Reader = {}
Reader.__index = Reader

-- Word breaks: '.' and ':' are not breaks, so completion sees `mx.nd.ze` and `a:re`.
local BREAKS = ' \t\n"\'`><=;+-*/%^~#{}()[],'

local function set(lib, field, value)
  pcall(function() lib[field] = value end)
end

--- Opens line input. opts: history (file path or nil), complete (function(word, line)
-- returning a list of candidate words), history_size (lines kept, default 1000).
-- Returns a reader with :read(prompt), :add_history(line), :close(); reader.kind is
-- 'readline', 'libedit' or 'plain'.
function M.open(opts)
  opts = opts or {}
  local self = setmetatable({history = opts.history, history_size = opts.history_size or 1000,
    interrupted = false, kind = 'plain'}, Reader)
  self.tty_in = isatty(0)
  if not self.tty_in then return self end
  local lib, name = load_lib()
  if not lib then return self end
  self.lib, self.kind = lib, name:match('edit') and 'libedit' or 'readline'
  self._keep = {}
  local keep = self._keep
  keep.name = ffi.new('char[?]', 6, 'luamx')
  keep.breaks = ffi.new('char[?]', #BREAKS + 1, BREAKS)
  set(lib, 'rl_readline_name', keep.name)
  set(lib, 'rl_basic_word_break_characters', keep.breaks)
  set(lib, 'rl_completer_word_break_characters', keep.breaks)
  set(lib, 'rl_catch_signals', 0)
  if opts.complete then
    local matches = {}
    -- Generator: state 0 starts a new list; returns malloc'ed strings, NULL at the end.
    keep.gen = ffi.cast('lmx_rl_compentry_t *', function(text, state)
      if state == 0 then
        local word = ffi.string(text)
        local line = ''
        pcall(function() line = ffi.string(lib.rl_line_buffer, lib.rl_point) end)
        local ok, list = pcall(opts.complete, word, line)
        matches = ok and list or {}
        matches.i = 0
      end
      matches.i = matches.i + 1
      local m = matches[matches.i]
      if not m then return nil end
      return ffi.C.strdup(m)
    end)
    keep.attempt = ffi.cast('lmx_rl_completion_t *', function(text)
      set(lib, 'rl_attempted_completion_over', 1) -- no file-name completion fallback
      set(lib, 'rl_completion_append_character', 0)
      return lib.rl_completion_matches(text, keep.gen)
    end)
    set(lib, 'rl_attempted_completion_function', keep.attempt)
  end
  if opts.interrupt_pending then
    keep.event = ffi.cast('lmx_rl_hook_t *', function()
      if opts.interrupt_pending() then
        -- clear the line and accept it: readline returns at once, and keys typed
        -- after the Ctrl-C go to the next prompt
        self.interrupted = true
        pcall(lib.rl_replace_line, '', 0)
        pcall(lib.rl_stuff_char, 10)
      end
      return 0
    end)
    set(lib, 'rl_event_hook', keep.event)
  end
  if self.history then pcall(lib.read_history, self.history) end
  return self
end

--- Reads one line (without its newline); nil at end of input (Ctrl-D).
function Reader:read(prompt)
  self.interrupted = false
  if not self.lib then
    if self.tty_in then io.stdout:write(prompt); io.stdout:flush() end
    return io.read('*l')
  end
  local p = self.lib.readline(prompt)
  if p == nil then return nil end
  local s = ffi.string(p)
  ffi.C.free(p)
  if self.interrupted then return '' end
  return s
end
jit.off(Reader.read)

--- Adds a line to the in-memory history (and to the file at close).
function Reader:add_history(line)
  if self.lib and line:match('%S') and line ~= self.last then
    self.lib.add_history(line)
    self.last = line
    self.dirty = true
    self:close() -- written at once, so a killed session keeps its lines
  end
end

--- Writes the history file (keeping the last history_size lines).
function Reader:close()
  if self.lib and self.history and self.dirty then
    pcall(self.lib.write_history, self.history)
    pcall(self.lib.history_truncate_file, self.history, self.history_size)
    self.dirty = false
  end
end

return M
