-- The header is the contract: every function it declares resolves in the library, the
-- embedded cdef is the header's, and versions match.
local mx = require 'luamx'
local ffi = require 'ffi'
local C = mx.capi.C

local src = assert(os.getenv('LUAMX_SOURCE_DIR'), 'LUAMX_SOURCE_DIR must be set (ctest sets it)')

local function read(path)
  local f = assert(io.open(path, 'rb'))
  local s = f:read('*a')
  f:close()
  return s
end

local header = read(src .. '/src/luamx.h')

describe('the C API', function()
  it('resolves every function the header declares', function()
    local names = {}
    for name in header:gmatch('\nLMX_API[^;(]-([%w_]+)%s*%(') do names[#names + 1] = name end
    assert.is_true(#names > 30, 'found only ' .. #names .. ' declarations')
    local missing = {}
    for _, name in ipairs(names) do
      local ok = pcall(function() return C[name] end)
      if not ok then missing[#missing + 1] = name end
    end
    assert.are.same({}, missing)
  end)

  it('exports nothing but the declared API', function()
    local lib = mx.capi.path
    local p = io.popen('nm -D --defined-only "' .. lib .. '" 2>/dev/null')
    local out = p:read('*a')
    p:close()
    if out == '' then return pending('nm is not available') end
    local declared = {}
    for name in header:gmatch('\nLMX_API[^;(]-([%w_]+)%s*%(') do declared[name] = true end
    local extra = {}
    for kind, name in out:gmatch('%x+ (%a) ([%w_]+)') do
      if kind == 'T' and not declared[name] and not name:match('^_') then extra[#extra + 1] = name end
    end
    assert.are.same({}, extra)
  end)

  it('reports the header version', function()
    local v = tonumber(header:match('LMX_VERSION%s*=%s*(%d+)'))
    assert.are.equal(v, C.lmx_version())
    assert.are.equal(v, tonumber(C.LMX_VERSION))
    assert.are.equal(('%d.%d.%d'):format(math.floor(v / 10000), math.floor(v / 100) % 100, v % 100), mx.__version__)
  end)

  it('embeds the cdef text of this very header', function()
    local cc = os.getenv('CC') or 'cc'
    local p = io.popen(cc .. ' -E -P -DLMX_CDEF -x c "' .. src .. '/src/luamx.h" 2>/dev/null')
    local fresh = p:read('*a')
    p:close()
    if fresh == '' then return pending('no C compiler to preprocess the header') end
    assert.are.equal(fresh, ffi.string(C.lmx_cdef()))
  end)

  it('names status codes', function()
    assert.are.equal('LMX_ERR_SHAPE', ffi.string(C.lmx_status_string(C.LMX_ERR_SHAPE)))
    assert.are.equal('unknown status', ffi.string(C.lmx_status_string(999)))
  end)

  it('rejects NULL arguments with a message naming the function and argument', function()
    assert.are.equal(C.LMX_ERR_ARG, C.lmx_ndarray_new(nil, 0, 0, 1, 0, nil))
    assert.are.equal("lmx_ndarray_new: argument 'out' must not be NULL", ffi.string(C.lmx_last_error()))
    assert.are.equal(0, C.lmx_ndarray_free(nil))
  end)
end)
