-- mx.runtime and luamx.cpu_choice: the choice of BLAS kernels from the CPU's features as
-- plain functions (feature sets in, core type out; environment in, decision out), the
-- detection against the kernel's own view (/proc/cpuinfo), and in child processes that
-- the choice is in effect when OPENBLAS_CORETYPE is unset and that a user's setting is
-- never overridden.
local mx = require 'luamx'
local cpu_choice = require 'luamx.cpu_choice'

local choose = mx.runtime.blas_coretype_for

-- Synthetic feature sets (what cpuid and XCR0 give on such machines).
local SSE = {'sse3', 'ssse3', 'sse4_1', 'sse4_2'}
local function with(base, more)
  local t = {}
  for _, n in ipairs(base) do t[#t + 1] = n end
  for _, n in ipairs(more) do t[#t + 1] = n end
  return t
end
local AVX = with(SSE, {'avx', 'os_ymm'})
local AVX2 = with(AVX, {'f16c', 'fma', 'avx2'})
local AVX512 = with(AVX2, {'os_zmm', 'avx512f', 'avx512cd', 'avx512bw', 'avx512dq', 'avx512vl'})
local ZEN5 = with(AVX512, {'avx512_vnni', 'avx512_bf16', 'avx_vnni'})
-- Intel Xeon family 6 model 207, which Debian 12's OpenBLAS 0.3.21 does not know
local XEON_207 = with(AVX512, {'avx512_vnni', 'avx512_bf16', 'avx512_fp16', 'avx_vnni',
                               'amx_tile', 'amx_bf16', 'amx_int8', 'os_amx'})
local SKYLAKE_SP = with(AVX512, {})
local KNL = with(AVX2, {'os_zmm', 'avx512f', 'avx512cd'}) -- no BW/DQ/VL (Xeon Phi)

describe('mx.runtime.blas_coretype_for (the choice, a pure function)', function()
  it('picks the AVX-512 kernels with bfloat16 for Zen 5-like and Xeon model 207-like CPUs', function()
    assert.are.equal('Cooperlake', choose(ZEN5))
    assert.are.equal('Cooperlake', choose(XEON_207))
  end)

  it('picks SkylakeX for AVX-512 F/CD/BW/DQ/VL without bfloat16', function()
    assert.are.equal('SkylakeX', choose(SKYLAKE_SP))
  end)

  it('needs all of AVX-512 F/CD/BW/DQ/VL for the AVX-512 kernels', function()
    assert.are.equal('Haswell', choose(KNL))
    assert.are.equal('Haswell', choose(with(AVX2, {'avx512f', 'avx512bw', 'avx512dq', 'avx512vl'})))
  end)

  it('picks Haswell for AVX2 + FMA, Sandybridge for AVX, nothing for SSE only', function()
    assert.are.equal('Haswell', choose(AVX2))
    assert.are.equal('Sandybridge', choose(with(AVX, {'fma'})))   -- FMA without AVX2
    assert.are.equal('Sandybridge', choose(AVX))
    assert.is_nil(choose(SSE))
    assert.is_nil(choose({}))
  end)

  it('takes a set as well as a list, and depends on nothing but its argument', function()
    local set = {}
    for _, n in ipairs(ZEN5) do set[n] = true end
    set.avx512_bf16 = false
    assert.are.equal('SkylakeX', choose(set))
    local before = os.getenv('OPENBLAS_CORETYPE')
    for _ = 1, 3 do assert.are.equal('Haswell', choose(AVX2)) end
    assert.are.equal(before, os.getenv('OPENBLAS_CORETYPE'))
  end)

  it('rejects unknown feature names', function()
    local ok, err = pcall(choose, {'avx9000'})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("unknown CPU feature 'avx9000'", 1, true), err)
    assert.has_error(function() choose('avx2') end)
  end)
end)

describe('luamx.cpu_choice.decide (environment in, decision out)', function()
  local decide = cpu_choice.decide

  it('never overrides OPENBLAS_CORETYPE set by the user', function()
    for _, own in ipairs({false, 'auto', 'off', 'SkylakeX'}) do
      local d = decide({OPENBLAS_CORETYPE = 'Prescott', LUAMX_BLAS_CORETYPE = own or nil}, 'Cooperlake')
      assert.are.equal('user', d.source)
      assert.are.equal('Prescott', d.coretype)
      assert.is_nil(d.set)
    end
  end)

  it('sets the detected core type when nothing is set (an empty value counts as unset)', function()
    for _, env in ipairs({{}, {OPENBLAS_CORETYPE = ''}, {LUAMX_BLAS_CORETYPE = 'auto'},
                          {LUAMX_BLAS_CORETYPE = ''}}) do
      local d = decide(env, 'Cooperlake')
      assert.are.equal('detected', d.source)
      assert.are.equal('Cooperlake', d.set)
    end
  end)

  it('follows LUAMX_BLAS_CORETYPE when OPENBLAS_CORETYPE is unset', function()
    local d = decide({LUAMX_BLAS_CORETYPE = 'Prescott'}, 'Cooperlake')
    assert.are.same({'LUAMX_BLAS_CORETYPE', 'Prescott', 'Prescott'}, {d.source, d.coretype, d.set})
    d = decide({LUAMX_BLAS_CORETYPE = 'OFF'}, 'Cooperlake')
    assert.are.same({'off'}, {d.source, d.set})
  end)

  it('leaves OpenBLAS its own pick when no core type fits or nothing was detected', function()
    local d = decide({}, nil)
    assert.are.equal('default', d.source)
    assert.is_nil(d.set)
    d = decide({}, nil, 'libluamx_cpu not found')
    assert.are.equal('default', d.source)
    assert.truthy(d.why:find('libluamx_cpu not found', 1, true))
  end)
end)

describe('mx.runtime.features', function()
  local f = mx.runtime.features()

  it('reports the ISA as the kernel sees it (/proc/cpuinfo flags)', function()
    local file = io.open('/proc/cpuinfo')
    if not file then return pending('no /proc/cpuinfo') end
    local flags = file:read('*a'):match('\nflags%s*:%s*([^\n]*)')
    file:close()
    if not flags then return pending('no x86 flags line in /proc/cpuinfo') end
    local linux = {}
    for w in flags:gmatch('%S+') do linux[w] = true end
    local linux_name = {sse3 = 'pni'}
    for _, n in ipairs(mx.runtime.feature_names()) do
      if not n:match('^os_') then
        assert.are.equal(linux[linux_name[n] or n] or false, f.isa[n], n)
      end
    end
  end)

  it('reports the BLAS, the choice and why, and luamx\'s own kernels', function()
    assert.is_string(f.blas.corename)
    assert.truthy(f.blas.config:find('OpenBLAS', 1, true), f.blas.config)
    assert.is_true(f.blas.threads >= 1)
    assert.is_string(f.blas.source)
    assert.is_string(f.blas.why)
    assert.are.equal(choose(f.isa), f.blas.recommended)
    local expect = f.isa.avx512f and 'avx512f' or f.isa.avx2 and 'avx2' or 'default'
    if jit.arch == 'x64' then assert.are.equal(expect, f.kernels.clone) end
    assert.is_true(f.threads >= 1)
    local text = tostring(f)
    assert.truthy(text:find('BLAS', 1, true), text)
    assert.truthy(text:find(f.blas.corename, 1, true), text)
    assert.truthy(text:find(f.kernels.clone .. ' loop clones', 1, true), text)
  end)

  it('leaves the environment as the user had it', function()
    assert.are.equal(mx.capi.cpu_state.env.OPENBLAS_CORETYPE, os.getenv('OPENBLAS_CORETYPE'))
    -- a value the user set is reported as theirs (f.blas is read from the decision itself,
    -- so compare with the environment, not with cpu_state.decision)
    local user = os.getenv('OPENBLAS_CORETYPE')
    if user and user ~= '' then
      assert.are.same({'user', user}, {f.blas.source, f.blas.coretype})
    end
  end)
end)

-- Child processes: OpenBLAS reads OPENBLAS_CORETYPE once, when libluamx loads it.
local preloaded = (os.getenv('LD_PRELOAD') or ''):find('libluamx', 1, true) or
                  (os.getenv('LD_PRELOAD') or ''):find('openblas', 1, true)
local function child(env)
  local script = [[
    local mx = require 'luamx'
    local f = mx.runtime.features()
    io.write(f.blas.corename, ' ', f.blas.source, ' ', tostring(f.blas.recommended), ' ',
             tostring(f.blas.applied), ' ', os.getenv('OPENBLAS_CORETYPE') or '(unset)')
  ]]
  local p = io.popen(('env %s luajit -e %q 2>&1'):format(env, script))
  local out = p:read('*a')
  p:close()
  local corename, source, recommended, applied, after = out:match('^(%S+) (%S+) (%S+) (%S+) (%S+)$')
  assert.truthy(corename, out)
  return {corename = corename, source = source, recommended = recommended, applied = applied,
          after = after}
end

describe('in a fresh process', function()
  it('respects OPENBLAS_CORETYPE=Prescott (the baseline kernels), with or without LUAMX_BLAS_CORETYPE', function()
    local r = child('OPENBLAS_CORETYPE=Prescott')
    assert.are.same({'Prescott', 'user', 'Prescott'}, {r.corename, r.source, r.after})
    r = child('OPENBLAS_CORETYPE=Prescott LUAMX_BLAS_CORETYPE=SkylakeX')
    assert.are.same({'Prescott', 'user', 'Prescott'}, {r.corename, r.source, r.after})
  end)

  local it_fresh = preloaded and pending or it
  it_fresh('runs the chosen core type when OPENBLAS_CORETYPE is unset, and unsets it again', function()
    local r = child('-u OPENBLAS_CORETYPE -u LUAMX_BLAS_CORETYPE')
    assert.are.equal('(unset)', r.after)
    if r.recommended == 'nil' then
      assert.are.equal('default', r.source)
    else
      assert.are.same({'detected', r.recommended, 'true'}, {r.source, r.corename, r.applied})
    end
  end)

  it_fresh('forces the baseline with LUAMX_BLAS_CORETYPE=Prescott, and lets OpenBLAS pick with off', function()
    local r = child('-u OPENBLAS_CORETYPE LUAMX_BLAS_CORETYPE=Prescott')
    assert.are.same({'Prescott', 'LUAMX_BLAS_CORETYPE', 'true', '(unset)'},
                    {r.corename, r.source, r.applied, r.after})
    r = child('-u OPENBLAS_CORETYPE LUAMX_BLAS_CORETYPE=off')
    assert.are.same({'off', '(unset)'}, {r.source, r.after})
  end)

  it_fresh('records when OpenBLAS did not take the core type (an unknown name, or loaded before luamx)', function()
    local r = child('-u OPENBLAS_CORETYPE LUAMX_BLAS_CORETYPE=NoSuchCore')
    assert.are.same({'LUAMX_BLAS_CORETYPE', 'false'}, {r.source, r.applied})
    local blas = mx.runtime.features().blas.path
    if not blas or blas == '' then return end
    r = child('-u OPENBLAS_CORETYPE LUAMX_BLAS_CORETYPE=Prescott LD_PRELOAD=' .. blas)
    if r.corename ~= 'Prescott' then   -- OpenBLAS read the variable before luamx set it
      assert.are.same({'LUAMX_BLAS_CORETYPE', 'false'}, {r.source, r.applied})
    end
  end)
end)
