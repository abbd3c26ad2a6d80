--- luamx.datasets — mx.datasets: the small data sets shipped in examples/data.
--
--   local x, y = mx.datasets.digits()          -- (1797, 64) in [0, 1], labels (1797,)
--   local lines = mx.datasets.ptb_lines()      -- The Devil's Dictionary, PTB-style
--
-- Paths default to $LUAMX_DATA_DIR, else examples/data of the source tree (found from
-- this file's own location, so nothing depends on the working directory; an installed
-- copy of the module needs LUAMX_DATA_DIR or explicit paths). The files and their
-- licences are described in examples/data/README.md.
-- digits: each CSV line is 64 pixel counts (0..16) then the class (0..9); pixels are
-- divided by 16.
-- ptb_lines: paragraphs (blank-line separated) are split into sentences at . ! ? ; :
-- followed by a space (a paragraph's end closes a sentence too); text is lower-cased,
-- digit runs become 'N', every character other than a-z and the apostrophe or hyphen
-- inside a word separates words; one sentence of space-separated words per line (PTB's
-- form); with vocab_size, words outside the vocab_size - 1 most frequent become '<unk>'.
local capi = require 'luamx.capi'
local nd = require 'luamx.ndarray'
local raise = capi.raise

local M = {}

local here = debug.getinfo(1, 'S').source:match('^@(.*)[/\\]luamx[/\\]datasets%.lua$')

--- The directory holding the shipped data: $LUAMX_DATA_DIR when set, else examples/data
--- of the source tree this module was loaded from.
--- When neither exists (a copy of the module alone), set LUAMX_DATA_DIR.
--- Installed (luarocks make), the data sits next to the module: <luadir>/luamx/data.
function M.data_dir()
  local env = os.getenv('LUAMX_DATA_DIR')
  if env and env ~= '' then return env end
  if not here then return nil end
  for _, dir in ipairs {here .. '/../examples/data', here .. '/luamx/data'} do
    local f = io.open(dir .. '/README.md', 'rb')
    if f then f:close() return dir end
  end
  return nil
end

local function default_path(name, who)
  local dir = M.data_dir()
  if not dir then
    raise(('%s: the shipped data folder is not next to this copy of luamx; set LUAMX_DATA_DIR to '
      .. 'the folder holding %s (examples/data of a luamx checkout) or pass the file\'s path'):format(who, name))
  end
  return dir .. '/' .. name
end

local function read_all(path, who)
  local f, err = io.open(path, 'rb')
  if not f then
    if not os.getenv('LUAMX_DATA_DIR') then
      raise(('%s: cannot open %s (%s); set LUAMX_DATA_DIR to the folder holding the shipped '
        .. 'data (examples/data of a luamx checkout) or pass the file\'s path'):format(who, path, err))
    end
    raise(('%s: cannot open %s (%s; LUAMX_DATA_DIR is %s)'):format(who, path, err, os.getenv('LUAMX_DATA_DIR')))
  end
  local s = f:read('*a')
  f:close()
  return s
end

--- digits([path]) -> data (N, 64) float32 in [0, 1], labels (N,) float32.
function M.digits(path)
  path = path or default_path('digits.csv', 'mx.datasets.digits')
  local text = read_all(path, 'mx.datasets.digits')
  local rows = {}
  local lineno = 0
  for line in text:gmatch('[^\n]+') do
    lineno = lineno + 1
    line = line:gsub('\r$', '')
    local vals = {}
    for field in (line .. ','):gmatch('([^,]*),') do
      local v = tonumber(field)
      if not v then raise(('mx.datasets.digits: %s line %d: %q is not a number'):format(path, lineno, field)) end
      vals[#vals + 1] = v
    end
    if #vals ~= 65 then
      raise(('mx.datasets.digits: %s line %d: expected 65 values (64 pixels and a label), got %d'):format(path, lineno, #vals))
    end
    rows[#rows + 1] = vals
  end
  local n = #rows
  if n == 0 then raise(('mx.datasets.digits: %s has no rows'):format(path)) end
  local data, label = nd.empty({n, 64}), nd.empty({n})
  local dp, lp = data:data(), label:data()
  for i, r in ipairs(rows) do
    for j = 1, 64 do dp[(i - 1) * 64 + j - 1] = r[j] / 16 end
    lp[i - 1] = r[65]
  end
  return data, label
end

--- Sentences of a plain text as PTB-style lines (see the top of this file).
function M.ptb_from_text(text, opts)
  opts = opts or {}
  local lines = {}
  text = text:gsub('\r', '')
  for para in (text .. '\n\n'):gmatch('(.-)\n%s*\n') do
    para = para:gsub('\n', ' ')
    for sent in (para .. '. '):gmatch('(.-[%.!%?;:]+)%s') do
      local s = sent:lower():gsub('%d+', ' N '):gsub("[^a-z'%-N]", ' ')
      local words = {}
      for w in s:gmatch('%S+') do
        w = w:gsub("^['%-]+", ''):gsub("['%-]+$", '')
        if w ~= '' then words[#words + 1] = w end
      end
      if #words > 0 then lines[#lines + 1] = words end
    end
  end
  if opts.vocab_size then
    local freq = {}
    for _, ws in ipairs(lines) do for _, w in ipairs(ws) do freq[w] = (freq[w] or 0) + 1 end end
    local list = {}
    for w, c in pairs(freq) do list[#list + 1] = {w, c} end
    table.sort(list, function(a, b) if a[2] ~= b[2] then return a[2] > b[2] end return a[1] < b[1] end)
    local keep = {}
    for i = 1, math.min(#list, opts.vocab_size - 1) do keep[list[i][1]] = true end
    for _, ws in ipairs(lines) do
      for i, w in ipairs(ws) do if not keep[w] then ws[i] = '<unk>' end end
    end
  end
  for i, ws in ipairs(lines) do lines[i] = table.concat(ws, ' ') end
  return lines
end

--- ptb_lines([path [, opts]]): the shipped text (or the file at path) as PTB-style lines.
function M.ptb_lines(path, opts)
  path = path or default_path('devils_dictionary.txt', 'mx.datasets.ptb_lines')
  return M.ptb_from_text(read_all(path, 'mx.datasets.ptb_lines'), opts)
end

--- Lines of space-separated words -> arrays of words (for mx.rnn.encode_sentences).
function M.split_words(lines)
  local out = {}
  for i, l in ipairs(lines) do
    local ws = {}
    for w in l:gmatch('%S+') do ws[#ws + 1] = w end
    out[i] = ws
  end
  return out
end

--- Adds mx.datasets.
function M.install(mx)
  mx.datasets = M
  return M
end

return M
