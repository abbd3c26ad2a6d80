--- luamx.namespaces — MXNet's operator namespaces: mx.nd.linalg, mx.nd.contrib,
-- mx.sym.linalg and mx.sym.contrib.
--
--   mx.nd.linalg.potrf(A)            -- the operator _linalg_potrf
--   mx.sym.contrib.interleaved_matmul_selfatt_qk{queries_keys_values = x, heads = 8}
--
-- MXNet's Python front end files an operator named _linalg_<x> under linalg.<x> and one
-- named _contrib_<x> under contrib.<x>; the same functions are here, so code ported from
-- Python reads the same. Built from the registry's names when luamx loads, after mx.nd
-- and mx.sym; a name already present in a namespace table is kept.
local M = {}

-- prefix of the registry's names -> namespace
M.PREFIXES = { _linalg_ = 'linalg', _contrib_ = 'contrib' }

--- The namespace and short name of an operator name ('_linalg_potrf' -> 'linalg',
-- 'potrf'), or nil when it is in none.
-- @usage local ns, short = require('luamx.namespaces').split('_contrib_ROIAlign')
function M.split(name)
  for prefix, ns in pairs(M.PREFIXES) do
    if name:sub(1, #prefix) == prefix and #name > #prefix then return ns, name:sub(#prefix + 1) end
  end
  return nil
end

-- fills target.<ns>.<short> from every function target.<name> with a namespaced name,
-- each passed through wrap(f, short) when wrap is given
local function fill(target, names, wrap)
  for _, ns in pairs(M.PREFIXES) do
    if rawget(target, ns) == nil then rawset(target, ns, {}) end
  end
  for _, name in ipairs(names) do
    local ns, short = M.split(name)
    local f = rawget(target, name)
    local tbl = ns and rawget(target, ns)
    if tbl and f ~= nil and tbl[short] == nil then tbl[short] = wrap and wrap(f, short) or f end
  end
end

--- A symbol constructor called through a namespace names an unnamed node after the
-- function it was called by, as MXNet's front end does: `mx.sym.contrib.MultiBoxPrior`
-- gives `multiboxprior0` where `mx.sym._contrib_MultiBoxPrior` gives
-- `_contrib_multiboxprior0`; the automatic name comes from the current name manager
-- (its prefix is applied once, by the engine).
-- @param mx the luamx module table
-- @param f the operator's constructor
-- @param short the name it is filed under (its automatic-name hint, lower-cased)
-- @return the constructor
function M.named(mx, f, short)
  local hint = short:lower()
  return function(...)
    local args, n = {...}, select('#', ...)
    local kw = n > 0 and type(args[n]) == 'table' and not mx.sym.is_symbol(args[n]) and args[n] or nil
    if kw and kw.name ~= nil then return f(...) end
    local cur = mx.name.current()
    local full = cur:get(nil, hint)
    local copy = {}
    for k, v in pairs(kw or {}) do copy[k] = v end
    copy.name = full:sub(#cur._prefix + 1)
    if kw then args[n] = copy else n = n + 1 args[n] = copy end
    return f(unpack(args, 1, n))
  end
end

--- Adds the namespace tables to mx.nd and mx.sym (after luamx.ndarray_ops and
-- luamx.symbol have installed the operators).
-- @param mx the luamx module table
function M.install(mx)
  local names = {}
  for name in pairs(mx.nd.op or {}) do names[#names + 1] = name end
  table.sort(names)
  fill(mx.nd, names)
  fill(mx.sym, names, function(f, short) return M.named(mx, f, short) end)
end

return M
