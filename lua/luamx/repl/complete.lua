--- luamx.repl.complete — tab completion candidates for the REPL.
--
--   complete.candidates('mx.nd.ze', env)  -> {'mx.nd.zeros', 'mx.nd.zeros_like', ...}
--   complete.candidates('a:re', env)      -> {'a:reshape(', ...}   (a an NDArray)
--
-- The word is split at its last '.' or ':' into a prefix expression (a dotted path of
-- names, evaluated by plain table lookups in `env`, never by running code) and the
-- part being typed. Candidates come from the value's own fields (pairs, so mx.nd and
-- mx.sym list every registered operator, installed from the registry), then its
-- metatable's __index chain: a table __index is walked, and for a function __index
-- (NDArray, Executor) the metatable's own fields are listed. After ':' only
-- functions are offered and an opening parenthesis is appended. Keywords and globals
-- complete a bare word. Nothing here can raise: lookups are rawget plus guarded
-- indexing, and the whole call is protected by the reader.
local M = {}

local KEYWORDS = {'and', 'break', 'do', 'else', 'elseif', 'end', 'false', 'for', 'function',
  'goto', 'if', 'in', 'local', 'nil', 'not', 'or', 'repeat', 'return', 'then', 'true',
  'until', 'while'}

local function safe_index(t, k)
  local ok, v = pcall(function() return t[k] end)
  if ok then return v end
  return nil
end

-- Every key reachable from x: own fields, then the metatable's __index chain.
local function keys_of(x, out, seen)
  seen = seen or {}
  if x == nil or seen[x] then return out end
  seen[x] = true
  if type(x) == 'table' then
    for k in pairs(x) do
      if type(k) == 'string' then out[k] = out[k] or (function()
        local v = rawget(x, k)
        return type(v)
      end)() end
    end
  end
  local mt = getmetatable(x)
  if type(mt) == 'table' then
    local fields = rawget(mt, '__fields') -- computed properties (a.shape, a.dtype, ...)
    if type(fields) == 'table' then
      for k in pairs(fields) do if type(k) == 'string' then out[k] = out[k] or 'field' end end
      local fmt = getmetatable(fields) -- fields may inherit a methods table
      if type(fmt) == 'table' and type(rawget(fmt, '__index')) == 'table' then
        for k in pairs(fmt.__index) do if type(k) == 'string' then out[k] = out[k] or 'field' end end
      end
    end
    local idx = rawget(mt, '__index')
    if type(idx) == 'table' then
      keys_of(idx, out, seen)
    elseif type(idx) == 'function' then
      -- class tables whose __index is a function keep their methods on the metatable
      for k, v in pairs(mt) do
        if type(k) == 'string' and not k:match('^__') then out[k] = out[k] or type(v) end
      end
      local parent = getmetatable(mt)
      if type(parent) == 'table' and type(rawget(parent, '__index')) == 'table' then
        keys_of(rawget(parent, '__index'), out, seen)
      end
    end
  end
  return out
end
M.keys_of = keys_of

-- Resolves a dotted path ('mx.nd') in env without calling anything but __index.
local function resolve(path, env)
  local v = env
  for part in path:gmatch('[^%.:]+') do
    if type(v) ~= 'table' and type(v) ~= 'userdata' then return nil end
    v = safe_index(v, part)
    if v == nil then return nil end
  end
  return v
end

--- Candidates (full words) completing `word`; env is the table of globals.
function M.candidates(word, env)
  env = env or _G
  local out = {}
  local prefix, sep, part = word:match('^(.-)([%.:])([%w_]*)$')
  if prefix and prefix ~= '' and prefix:match('^[%a_][%w_%.]*$') then
    local v = resolve(prefix, env)
    if v == nil then return out end
    local keys = keys_of(v, {})
    for k, kind in pairs(keys) do
      if k:sub(1, #part) == part and k:match('^[%a_][%w_]*$') and not k:match('^_') or
          (k:sub(1, #part) == part and part:sub(1, 1) == '_' and k:match('^[%a_][%w_]*$')) then
        if sep == ':' then
          local val = safe_index(v, k)
          if type(val) == 'function' or (type(val) == 'table' and getmetatable(val)
              and getmetatable(val).__call) then
            out[#out + 1] = prefix .. ':' .. k .. '('
          end
        else
          local _ = kind
          out[#out + 1] = prefix .. '.' .. k
        end
      end
    end
  elseif word:match('^[%a_][%w_]*$') or word == '' then
    for _, k in ipairs(KEYWORDS) do
      if k:sub(1, #word) == word then out[#out + 1] = k end
    end
    for k in pairs(keys_of(env, {})) do
      if k:sub(1, #word) == word and k:match('^[%a_][%w_]*$') then out[#out + 1] = k end
    end
  end
  table.sort(out)
  local uniq = {}
  for _, s in ipairs(out) do if uniq[#uniq] ~= s then uniq[#uniq + 1] = s end end
  return uniq
end

return M
