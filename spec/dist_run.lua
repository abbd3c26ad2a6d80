-- spec/dist_run.lua — starting real MPI jobs from the dist specs (not a spec itself).
-- D.skip_reason() says why dist specs cannot run here (nil when they can); D.run(np,
-- script, args, env) runs `mpirun -np np luajit spec/dist/<script> args...` on loopback
-- with the flags containers running as root need, and returns the exit status, the
-- combined output and the wall time in seconds. D.max_diff(fa, fb) compares two saved
-- parameter files; D.tmpdir() makes a scratch directory; D.describe(name, fn) is a
-- describe block that is pending where dist specs cannot run and otherwise calls fn(dir).
local D = {}

local function sh(cmd)
  local p = io.popen(cmd)
  local out = p:read('*a')
  p:close()
  return out
end

function D.plugin_path()
  local lib = os.getenv('LUAMX_LIB') or ''
  return (lib:gsub('[^/]*$', '')) .. 'libluamx_mpi.so'
end

function D.skip_reason()
  if sh('command -v mpirun 2>/dev/null') == '' then
    return 'mpirun not found (apt-get install openmpi-bin libopenmpi-dev)'
  end
  local f = io.open(D.plugin_path(), 'rb')
  if not f then return 'libluamx_mpi.so was not built (CMake did not find MPI: apt-get install libopenmpi-dev)' end
  f:close()
  return nil
end

-- Sanitizer build: the workers run under ASan (memory errors fail the job) but without
-- the leak check, because OpenMPI keeps allocations until exit (in its dlopen'ed
-- components too, so no suppression can name them).
D.asan = (os.getenv('LD_PRELOAD') or ''):find('asan', 1, true) ~= nil
D.ASAN_ENV = D.asan and 'ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1:halt_on_error=1:exitcode=23' or ''


D.MPIRUN = 'mpirun --allow-run-as-root --oversubscribe --mca btl self,vader,tcp ' ..
  '--mca btl_vader_single_copy_mechanism none'

-- env: a string of NAME=value words put in front of mpirun (and passed on with -x).
function D.run(np, script, args, env, limit)
  env = (env or '') .. ' ' .. D.ASAN_ENV
  local xs = {}
  for word in env:gmatch('%S+') do xs[#xs + 1] = '-x ' .. word:match('^([%w_]+)=') end
  if D.asan then xs[#xs + 1] = '-x LD_PRELOAD' end
  local src = os.getenv('LUAMX_SOURCE_DIR') or '.'
  local cmd = ('s=$(date +%%s.%%N); env %s timeout %d %s %s -np %d luajit %s/spec/dist/%s %s 2>&1; ' ..
    'rc=$?; e=$(date +%%s.%%N); echo "EXIT=$rc TIME=$(awk "BEGIN{print $e - $s}")"')
    :format(env, limit or 120, D.MPIRUN, table.concat(xs, ' '), np, src, script, args or '')
  local out = sh(cmd)
  local rc, t = out:match('EXIT=(%d+) TIME=([%d.]+)%s*$')
  return tonumber(rc), out, tonumber(t)
end

-- Runs `mpirun -np np luajit examples/<name>.lua flags` from the source root.
function D.example(np, name, flags)
  local src = os.getenv('LUAMX_SOURCE_DIR') or '.'
  local p = io.popen(('cd %s && env %s timeout 120 %s %s -np %d luajit examples/%s.lua %s 2>&1; echo "EXIT=$?"')
    :format(src, D.ASAN_ENV, D.MPIRUN, D.asan and '-x LD_PRELOAD -x ASAN_OPTIONS' or '', np, name, flags or ''))
  local out = p:read('*a')
  p:close()
  return tonumber(out:match('EXIT=(%d+)%s*$')), out
end

-- Runs the script in a plain luajit (no mpirun): one worker.
function D.run1(script, args, env)
  local src = os.getenv('LUAMX_SOURCE_DIR') or '.'
  local out = sh(('env %s luajit %s/spec/dist/%s %s 2>&1; echo "EXIT=$?"'):format(env or '', src, script, args or ''))
  return tonumber(out:match('EXIT=(%d+)%s*$')), out
end

-- Largest difference between two saved parameter sets (0 means equal bit for bit; any
-- difference counts at least 1e-30; the files may list the names in another order).
function D.max_diff(fa, fb)
  local mx, assert = require 'luamx', require 'luassert'
  local a, b = mx.nd.load(fa), mx.nd.load(fb)
  local d, n = 0, 0
  for k, v in pairs(a) do
    assert.truthy(b[k], 'missing parameter ' .. k)
    local x, y = v:toflat(), b[k]:toflat()
    assert.are.equal(#x, #y)
    for i = 1, #x do
      if x[i] ~= y[i] then d = math.max(d, math.abs(x[i] - y[i]), 1e-30) end
    end
    n = n + 1
  end
  assert.is_true(n > 0)
  return d
end

-- A new empty scratch directory (the caller removes it: os.execute('rm -rf ' .. dir)).
function D.tmpdir()
  local dir = os.tmpname()
  os.remove(dir)
  os.execute('mkdir -p ' .. dir)
  return dir
end

-- A busted describe block for a dist spec: pending with the reason where D.skip_reason()
-- gives one, otherwise fn(dir) with a scratch directory removed after the block.
function D.describe(name, fn)
  local busted = require 'busted'
  busted.describe(name, function()
    local skip = D.skip_reason()
    if skip then
      busted.pending('skipped: ' .. skip)
      return
    end
    local dir = D.tmpdir()
    busted.teardown(function() os.execute('rm -rf ' .. dir) end)
    fn(dir)
  end)
end

return D
