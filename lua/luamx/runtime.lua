--- luamx.runtime — mx.runtime: which CPU kernels run, and why.
--
--   print(mx.runtime.features())   -- ISA, BLAS core type and why, luamx's own kernels
--   local f = mx.runtime.features()
--   f.isa.avx512f, f.blas.corename, f.blas.source, f.kernels.clone
--   mx.runtime.blas_coretype_for{'avx2', 'fma'}   --> 'Haswell' (the choice, a pure function)
--
-- The GEMMs run on OpenBLAS, whose kernels are chosen when it is loaded (with libluamx):
-- luamx.cpu_choice decides OPENBLAS_CORETYPE from the CPU's features unless the user set
-- it. luamx's own vectorised loops (kernels/cpu) come in avx512f / avx2 / baseline clones
-- that the dynamic loader picks by CPU (ifunc). Everything here is read from the engine
-- (src/core/cpu_isa.c, lmx_blas_info) and from the record luamx.capi kept at load time.
local ffi = require 'ffi'
local bit = require 'bit'
local capi = require 'luamx.capi'
local C = capi.C

local M = {}
local ONE, ZERO = ffi.new('uint64_t', 1), ffi.new('uint64_t', 0)

local names
local function feature_names()
  if not names then
    names = {}
    local i = 0
    while true do
      local s = C.lmx_cpu_feature_name(i)
      if s == nil then break end
      names[#names + 1] = ffi.string(s)
      i = i + 1
    end
  end
  return names
end

--- The names of the CPU features luamx knows, in bit order ('sse3', ..., 'avx512f', ...,
--- 'os_zmm', ...).
function M.feature_names()
  local t = {}
  for i, n in ipairs(feature_names()) do t[i] = n end
  return t
end

local function bits_of(set)
  local index = {}
  for i, n in ipairs(feature_names()) do index[n] = i - 1 end
  local bits = ffi.new('uint64_t', 0)
  local function add(n)
    local b = index[n]
    if b == nil then capi.raise('mx.runtime: unknown CPU feature \'' .. tostring(n) .. '\'') end
    bits = bit.bor(bits, bit.lshift(ONE, b))
  end
  for k, v in pairs(set) do
    if type(k) == 'number' then add(v) elseif v then add(k) end
  end
  return bits
end

local function has(bits, b) return bit.band(bits, bit.lshift(ONE, b)) ~= ZERO end

--- The kernel choice as a plain function: the OpenBLAS core type for a CPU with these
--- features, or nil when none fits better than OpenBLAS's own pick (the engine's
--- lmx_blas_coretype_for, the same function that decides at load time).
-- @param set a list of feature names ({'avx2', 'fma'}) or a set ({avx2 = true, ...})
-- @return a core type name ('Cooperlake', 'SkylakeX', 'Haswell', 'Sandybridge') or nil
-- @usage mx.runtime.blas_coretype_for{'avx512f', 'avx512cd', 'avx512bw', 'avx512dq', 'avx512vl'} --> 'SkylakeX'
function M.blas_coretype_for(set)
  if type(set) ~= 'table' then
    capi.raise('mx.runtime.blas_coretype_for: expected a table of feature names, got ' .. type(set))
  end
  local s = C.lmx_blas_coretype_for(bits_of(set))
  return s ~= nil and ffi.string(s) or nil
end

local function cpu_model()
  local f = io.open('/proc/cpuinfo', 'r')
  if not f then return nil end
  for line in f:lines() do
    local m = line:match('^model name%s*:%s*(.-)%s*$')
    if m then f:close() return m end
  end
  f:close()
  return nil
end

local function level(isa)
  if isa.avx512f then return 'avx512' end
  if isa.avx2 and isa.fma then return 'avx2' end
  if isa.avx then return 'avx' end
  if isa.sse3 then return 'sse3' end
  return 'baseline'
end

local function text(f)
  local on = {}
  for _, n in ipairs(feature_names()) do
    if f.isa[n] and not n:match('^os_') then on[#on + 1] = n end
  end
  local b, lines = f.blas, {}
  local function add(fmt, ...) lines[#lines + 1] = fmt:format(...) end
  add('CPU      %s', f.cpu or '?')
  add('ISA      %s (best: %s)', #on > 0 and table.concat(on, ' ') or 'none detected', f.isa_level)
  add('BLAS     %s kernels, %d threads: %s', b.corename or '?', b.threads or 0, b.config or '?')
  if b.path and b.path ~= '' then add('         from %s', b.path) end
  add('         core type %s: %s', b.coretype or '(OpenBLAS\'s own pick)', b.why)
  if b.recommended and b.recommended ~= b.coretype then
    add('         this CPU\'s best per luamx: %s', b.recommended)
  end
  if b.note then add('         note: %s', b.note) end
  add('luamx    %s loop clones, sigmoid/tanh %s, %d OpenMP threads', f.kernels.clone,
      f.kernels.vmath, f.threads)
  add('         bfloat16 FullyConnected: %s', f.kernels.bf16_fc)
  add('         float32 FullyConnected at batch 1: %s', f.kernels.fc_small)
  local g = f.kernels.gemm
  add('GEMM     float32 on %s (mode %s: %s); float64 on OpenBLAS', g.float32, g.mode, g.source)
  add('         oneDNN: %s', g.dnnl_status)
  local cv = f.kernels.conv
  add('CONV     float32 3x3 stride 1: %s (mode %s: %s)', cv.winograd, cv.algo, cv.source)
  return table.concat(lines, '\n')
end

local Features = {__tostring = text}

--- What the CPU can run and which kernels run on it. Fields:
-- `cpu` (model name, from /proc/cpuinfo), `isa` (every feature name → boolean: usable by
-- the CPU and saved by the OS), `isa_level` ('avx512', 'avx2', 'avx', 'sse3', 'baseline'),
-- `blas` = {`corename` (OpenBLAS's kernels in use), `config`, `path`, `threads`,
-- `coretype` (the core type asked for, nil when OpenBLAS picked), `source` ('detected',
-- 'user' for an OPENBLAS_CORETYPE set by the user, 'LUAMX_BLAS_CORETYPE', 'off',
-- 'default'), `why`, `applied` (OpenBLAS runs the core type asked for), `recommended`
-- (what luamx would choose from the features), `note`}, `kernels` = {`clone` (luamx's own
-- loops: 'avx512f', 'avx2', 'default' or 'none'), `vmath` (sigmoid/tanh: 'avx512f' or
-- 'portable'), `bf16_fc` (what bfloat16 FullyConnected runs on: 'avx512_bf16' for
-- vdpbf16ps dot products, or 'float32' for the float32 GEMMs on widened copies; see
-- `bf16_force_fallback`), `gemm` = {`mode` ('auto', 'openblas' or 'dnnl', see
-- `gemm_mode`), `source` (where the mode came from: LUAMX_GEMM, the default, or
-- `gemm_mode`), `dnnl` (true when oneDNN's libdnnl.so.2 was loaded and runs),
-- `dnnl_status` (its version, or why it does not run), `float32` ('openblas',
-- 'openblas + dnnl' for the automatic split by shape, see `gemm_choice`, or 'dnnl')},
-- `fc_small` (what a float32 FullyConnected forward with one row of data runs on:
-- 'avx512f' or 'avx2' for luamx's streaming dot products, 'blas' for the GEMM; see
-- `fc_force_blas`), `conv` = {`algo` ('auto', 'gemm', 'winograd', 'winograd2' or
-- 'winograd4', see `conv_algo`), `source` (LUAMX_CONV, the default or `conv_algo`),
-- `min_tiles` (auto's threshold on this CPU, see `conv_min_tiles`), `winograd` (what a
-- float32 3x3 stride-1 convolution runs on, in words)}}, `threads`
-- (OpenMP threads of luamx's kernels). Prints as a short report.
-- @return a table (a fresh one each call)
-- @usage print(mx.runtime.features())
function M.features()
  local bits = ffi.new('uint64_t[1]')
  capi.check(C.lmx_cpu_features(bits))
  local isa = {}
  for i, n in ipairs(feature_names()) do isa[n] = has(bits[0], i - 1) end
  local corename, config, path = ffi.new('const char *[1]'), ffi.new('const char *[1]'),
    ffi.new('const char *[1]')
  local threads = ffi.new('int[1]')
  capi.check(C.lmx_blas_info(corename, config, path, threads))
  local st = capi.cpu_state
  local rec = C.lmx_blas_coretype_for(bits[0])
  local clone = ffi.string(C.lmx_cpu_kernel_clone())
  local f = {
    cpu = cpu_model(),
    isa = isa,
    isa_level = level(isa),
    blas = {
      corename = corename[0] ~= nil and ffi.string(corename[0]) or nil,
      config = config[0] ~= nil and ffi.string(config[0]) or nil,
      path = path[0] ~= nil and ffi.string(path[0]) or nil,
      threads = threads[0],
      coretype = st.decision.coretype,
      source = st.decision.source,
      why = st.decision.why or '?',
      applied = st.applied,
      recommended = rec ~= nil and ffi.string(rec) or nil,
      note = st.note,
    },
    kernels = {clone = clone, vmath = clone == 'avx512f' and 'avx512f' or 'portable',
               bf16_fc = ffi.string(C.lmx_cpu_bf16_fc_path()),
               fc_small = ffi.string(C.lmx_cpu_fc_small_path())},
    threads = C.lmx_cpu_num_threads(),
  }
  local mode, source, dnnl, status = ffi.new('const char *[1]'), ffi.new('const char *[1]'),
    ffi.new('int[1]'), ffi.new('const char *[1]')
  capi.check(C.lmx_cpu_gemm_info(mode, source, dnnl, status))
  local g = {mode = ffi.string(mode[0]), source = ffi.string(source[0]), dnnl = dnnl[0] ~= 0,
             dnnl_status = ffi.string(status[0])}
  g.float32 = not g.dnnl and 'openblas' or g.mode == 'auto' and 'openblas + dnnl' or
    g.mode == 'dnnl' and 'dnnl' or 'openblas'
  f.kernels.gemm = g
  local algo, asrc = ffi.new('const char *[1]'), ffi.new('const char *[1]')
  capi.check(C.lmx_cpu_conv_info(algo, asrc))
  local cv = {algo = ffi.string(algo[0]), source = ffi.string(asrc[0]),
              min_tiles = M.conv_min_tiles()}
  local tiles = 'F(4x4,3x3) at 32+ 4x4 tiles a chunk, else F(2x2,3x3)'
  cv.winograd = cv.algo == 'gemm' and 'im2col + GEMM' or
    cv.algo == 'winograd' and 'Winograd wherever it can run: ' .. tiles or
    cv.algo == 'winograd2' and 'Winograd F(2x2,3x3) wherever it can run' or
    cv.algo == 'winograd4' and 'Winograd F(4x4,3x3) wherever it can run' or
    ('Winograd at 16+ channels and %d+ 2x2 tiles a chunk (%s), else im2col + GEMM'):format(
      cv.min_tiles, tiles)
  f.kernels.conv = cv
  return setmetatable(f, Features)
end

--- The GEMM library choice as a plain function: the library a float32 product
--- C(m x n) = op(A) op(B) runs on (row-major; the same rule every product follows).
-- @param t a table: `m`, `n`, `k` (sizes, >= 0), `ta`, `tb` (booleans: transposed A / B,
-- default false), `threads` (OpenMP threads, default luamx's), `mode` ('auto',
-- 'openblas' or 'dnnl'; default the mode in force), `dnnl` (boolean: whether oneDNN can
-- run; default whether it runs here), `avx512` (boolean: whether the CPU has AVX-512;
-- default this CPU's: without it, oneDNN's AVX2 products with untransposed B rows of a
-- multiple of 256 floats go to OpenBLAS when they run on one thread), `dtype` ('float32'
-- default, or 'float64')
-- @return 'openblas' or 'dnnl'
-- @usage mx.runtime.gemm_choice{m = 128, n = 512, k = 784, tb = true, dnnl = true} --> 'dnnl'
function M.gemm_choice(t)
  local where = 'mx.runtime.gemm_choice'
  if type(t) ~= 'table' then capi.raise(where .. ': expected a table {m=, n=, k=, ...}, got ' .. type(t)) end
  for _, key in ipairs{'m', 'n', 'k'} do
    if type(t[key]) ~= 'number' or t[key] < 0 or t[key] % 1 ~= 0 then
      capi.raise(('%s: field \'%s\': expected an integer >= 0, got %s'):format(where, key, tostring(t[key])))
    end
  end
  local dt = t.dtype or 'float32'
  if dt ~= 'float32' and dt ~= 'float64' then
    capi.raise(where .. ": field 'dtype': expected 'float32' or 'float64', got " .. tostring(dt))
  end
  local mode, dnnl = ffi.new('const char *[1]'), ffi.new('int[1]')
  capi.check(C.lmx_cpu_gemm_info(mode, nil, dnnl, nil))
  local have = t.dnnl
  if have == nil then have = dnnl[0] ~= 0 end
  local lib = ffi.new('const char *[1]')
  capi.check(C.lmx_cpu_gemm_choice(dt == 'float32' and C.LMX_FLOAT32 or C.LMX_FLOAT64,
    t.ta and 1 or 0, t.tb and 1 or 0, t.m, t.n, t.k, t.threads or C.lmx_cpu_num_threads(),
    t.mode or ffi.string(mode[0]), have and 1 or 0,
    t.avx512 == nil and -1 or t.avx512 and 1 or 0, lib))
  return ffi.string(lib[0])
end

--- Sets which library runs the float32 GEMMs, process-wide, for products that start
--- afterwards: 'auto' (by shape, see `gemm_choice`), 'openblas' or 'dnnl' (oneDNN where it
--- can be loaded, else OpenBLAS). The initial mode comes from the environment variable
--- LUAMX_GEMM (auto when unset). `features().kernels.gemm` reports the mode in force.
-- @param mode 'auto', 'openblas' or 'dnnl'
-- @return the mode now in force
-- @usage mx.runtime.gemm_mode('openblas')   -- compare against OpenBLAS alone
function M.gemm_mode(mode)
  if type(mode) ~= 'string' then
    capi.raise('mx.runtime.gemm_mode: argument 1: expected \'auto\', \'openblas\' or \'dnnl\', got ' .. type(mode))
  end
  capi.check(C.lmx_cpu_gemm_set_mode(mode))
  local m = ffi.new('const char *[1]')
  capi.check(C.lmx_cpu_gemm_info(m, nil, nil, nil))
  return ffi.string(m[0])
end

--- The automatic convolution choice's threshold as a plain function: the fewest tiles of
--- 2x2 outputs a chunk of images (the batch split over the threads) must hold for 'auto'
--- to take Winograd: 64 on a CPU with AVX-512, 128 without (bench/conv_algo.lua measured
--- 16x16 planes at batch 1 ahead of im2col + GEMM on an AVX-512 Xeon, behind on AVX2 Zen 3).
-- @param avx512 true / false for a CPU with / without AVX-512; nil for this CPU
-- @return the number of tiles
-- @usage mx.runtime.conv_min_tiles(false) --> 128
function M.conv_min_tiles(avx512)
  if avx512 ~= nil and type(avx512) ~= 'boolean' then
    capi.raise('mx.runtime.conv_min_tiles: argument 1: expected a boolean or nil, got ' .. type(avx512))
  end
  local n = ffi.new('int64_t[1]')
  capi.check(C.lmx_cpu_conv_min_tiles(avx512 == nil and -1 or avx512 and 1 or 0, n))
  return tonumber(n[0])
end

--- Sets which algorithm runs float32 CPU convolutions, process-wide, for those that start
--- afterwards. Winograd's minimal filtering runs 3x3 stride-1 undilated ungrouped 2-D
--- convolutions with tiles of 4x4 outputs (F(4x4,3x3), 4x fewer multiply-adds than
--- im2col + GEMM) when a chunk of images (the batch split over the threads) has 32 such
--- tiles or more, else with tiles of 2x2 outputs (F(2x2,3x3), 2.25x).
---
--- * 'auto': Winograd where there are 16+ channels on both sides and 64+ (AVX-512 CPUs) or
---   128+ tiles of 2x2 outputs per chunk of images (`conv_min_tiles`); im2col + GEMM for
---   the rest.
--- * 'gemm': im2col + GEMM always.
--- * 'winograd': Winograd wherever it can run, the tile as above.
--- * 'winograd2', 'winograd4': Winograd wherever it can run, with that tile.
---
--- The initial mode comes from the environment variable LUAMX_CONV (auto when unset);
--- `features().kernels.conv` reports it. Winograd's results differ from the GEMM path's by
--- rounding (about 1e-6 relative in float32 with 2x2 tiles, 1e-5 with 4x4); float64
--- always runs the GEMM path.
-- @param algo 'auto', 'gemm', 'winograd', 'winograd2' or 'winograd4'
-- @return the algorithm now in force
-- @usage mx.runtime.conv_algo('gemm')   -- compare against im2col + GEMM
function M.conv_algo(algo)
  if type(algo) ~= 'string' then
    capi.raise('mx.runtime.conv_algo: argument 1: expected \'auto\', \'gemm\', \'winograd\', ' ..
      '\'winograd2\' or \'winograd4\', got ' .. type(algo))
  end
  capi.check(C.lmx_cpu_conv_set_algo(algo))
  local a = ffi.new('const char *[1]')
  capi.check(C.lmx_cpu_conv_info(a, nil))
  return ffi.string(a[0])
end

--- Forces bfloat16 FullyConnected onto the float32 fallback (widened copies, the float32
--- GEMM, one rounding) even on CPUs with AVX512_BF16, or back to the automatic choice.
-- Process-wide; `features().kernels.bf16_fc` reports the path in force.
-- @param on true to force the fallback, false for the automatic choice
-- @return the path now in force ('avx512_bf16' or 'float32')
-- @usage mx.runtime.bf16_force_fallback(true)   -- compare against the fallback
function M.bf16_force_fallback(on)
  if type(on) ~= 'boolean' then
    capi.raise('mx.runtime.bf16_force_fallback: argument 1: expected a boolean, got ' .. type(on))
  end
  capi.check(C.lmx_cpu_bf16_force_fallback(on and 1 or 0))
  return ffi.string(C.lmx_cpu_bf16_fc_path())
end

--- Makes every float32 FullyConnected forward run the BLAS sgemm, as before the
--- small-batch kernels (batch 1 otherwise runs luamx's streaming dot products), or goes
--- back to the automatic choice. Process-wide; `features().kernels.fc_small` reports the
--- path in force. For comparisons, and as an escape hatch.
-- @param on true to force the sgemm, false for the automatic choice
-- @return the path now in force ('avx512f', 'avx2' or 'blas')
-- @usage mx.runtime.fc_force_blas(true)   -- time or check against the sgemm path
function M.fc_force_blas(on)
  if type(on) ~= 'boolean' then
    capi.raise('mx.runtime.fc_force_blas: argument 1: expected a boolean, got ' .. type(on))
  end
  capi.check(C.lmx_cpu_fc_force_blas(on and 1 or 0))
  return ffi.string(C.lmx_cpu_fc_small_path())
end

--- Installs the module as `mx.runtime`.
-- @param mx the luamx module table
function M.install(mx)
  mx.runtime = M
end

return M
