--- luamx.kwargs — MXNet's two calling forms for public constructors: positional, in the
-- order of MXNet's Python signature, or one keyword table.
--
--   local o = kwargs.parse('mx.lr_scheduler.FactorScheduler', {'step', 'factor'}, ...)
--   FactorScheduler(100, 0.5)  and  FactorScheduler{step = 100, factor = 0.5}  give the
--   same `o = {step = 100, factor = 0.5}`.
--
-- Invariant: a call is the keyword form exactly when it has one argument and that
-- argument is a plain table (no metatable) with no array part; anything else is
-- positional, and a plain keyword table may follow the positional arguments
-- (`FactorScheduler(100, {factor = 0.5})`, as Python's `FactorScheduler(100, factor=0.5)`).
-- A name given both ways, or more positional arguments than the signature has, is an error.
local capi = require 'luamx.capi'

local M = {}

local function is_kw(t)
  return type(t) == 'table' and getmetatable(t) == nil and #t == 0
end
M.is_kw = is_kw

--- The options of a constructor call, as one table.
-- @param who the constructor's name, for errors
-- @param names the positional parameter names, in MXNet's order
-- @param ... the call's arguments
-- @return a new table name -> value (the keyword table is copied)
function M.parse(who, names, ...)
  local n = select('#', ...)
  while n > 0 and select(n, ...) == nil do n = n - 1 end
  local o = {}
  local first = ...
  if n == 1 and is_kw(first) then
    for k, v in pairs(first) do o[k] = v end
    return o
  end
  local npos = n
  local last = n > 1 and select(n, ...) or nil
  -- a trailing keyword table, unless that position takes a table itself (positional tables
  -- such as MultiFactorScheduler's step list have an array part, so they are not keyword)
  if n > 1 and is_kw(last) then npos = n - 1 end
  if npos > #names then
    capi.raise(('%s: takes at most %d positional arguments (%s), got %d'):format(who, #names,
      table.concat(names, ', '), npos))
  end
  for i = 1, npos do o[names[i]] = (select(i, ...)) end
  if npos < n then
    for k, v in pairs(last) do
      if o[k] ~= nil then capi.raise(('%s: got multiple values for argument \'%s\''):format(who, tostring(k))) end
      o[k] = v
    end
  end
  return o
end

return M
