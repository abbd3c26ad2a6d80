--- spec/repl_spec.lua — the `luamx` command (bin/luamx, lua/luamx/repl*.lua), driven
--- through a pseudo-terminal with tmux (each test waits for the text it expects, with a
--- timeout, rather than sleeping a fixed time), and through a pipe.
local mx = require 'luamx'
local help = require 'luamx.repl.help'
local complete = require 'luamx.repl.complete'
local pretty = require 'luamx.repl.pretty'

local SRC = os.getenv('LUAMX_SOURCE_DIR') or '.'
local BIN = SRC .. '/bin/luamx'
local LIB = os.getenv('LUAMX_LIB') or ''

local function sh(cmd)
  local p = io.popen(cmd .. ' 2>&1')
  local out = p:read('*a')
  p:close()
  return out
end
local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
local function have(cmd) return sh('command -v ' .. cmd .. ' || true'):match('%S') ~= nil end

local TMP = os.tmpname()
os.remove(TMP)
os.execute('mkdir -p ' .. q(TMP))

-- ------------------------------------------------------------------ pipe mode ----
describe('luamx without a terminal', function()
  it('reads lines from a pipe, prints every result, continues open chunks', function()
    local input = table.concat({'a = mx.nd.ones {2, 2}', '(a * 3):sum():asscalar(), "x"',
      'function f(x)', '  return x + 1', 'end', 'f(41)', 'mx.nd.dot(a, mx.nd.ones {3, 1})', 'x = = 1'}, '\n')
    local out = sh(('{ printf %%s %s | env LUAMX_LIB=%s HOME=%s %s; echo "rc=$?"; }'):format(q(input), q(LIB), q(TMP), q(BIN)))
    assert.is_truthy(out:find('12\n"x"\n42\n', 1, true), out)
    -- errors point at the user's line, not into luamx's files
    assert.is_truthy(out:find('stdin:1: dot: shapes (2,2) and (3,1)', 1, true), out)
    assert.is_falsy(out:find('capi.lua', 1, true), out)
    assert.is_truthy(out:find("stdin:1: unexpected symbol near '='", 1, true), out)
    assert.is_truthy(out:find('rc=1', 1, true), out) -- an error makes the exit status 1
    assert.is_falsy(out:find('> ', 1, true), out)    -- no prompts into a pipe
    assert.is_falsy(out:find('\27[', 1, true), out)  -- no colours either
  end)

  it('runs scripts with arguments, -e code, and answers -h', function()
    local script = TMP .. '/s.lua'
    local f = io.open(script, 'w')
    f:write('print(arg[0]:match("s.lua"), table.concat({...}, ","), arg[2], mx.nd.zeros{3}.size)\n')
    f:close()
    local env = ('env LUAMX_LIB=%s HOME=%s '):format(q(LIB), q(TMP))
    assert.are.equal('s.lua\tx,y\ty\t3\n', sh(env .. q(BIN) .. ' ' .. q(script) .. ' x y'))
    assert.are.equal('6\n', sh(env .. q(BIN) .. [[ -e 'print(mx.nd.ones{6}:sum():asscalar())']]))
    assert.is_truthy(sh(env .. q(BIN) .. ' -h'):find('usage: luamx', 1, true))
    -- through a symbolic link (as in a PATH folder) the checkout is still found
    os.execute('ln -sf ' .. q(BIN) .. ' ' .. q(TMP .. '/luamx-link'))
    assert.are.equal('6\n', sh('cd / && ' .. env .. q(TMP .. '/luamx-link') .. [[ -e 'print(mx.nd.ones{6}:sum():asscalar())']]))
    -- -i: the script's globals are there at the prompt (fed from a pipe here)
    local piped = sh('echo "v * 2" | ' .. env .. q(BIN) .. [[ -e 'v = 21' -i]])
    assert.are.equal('42\n', piped)
    local bad = sh('{ ' .. env .. q(BIN) .. ' --frobnicate; echo "rc=$?"; }')
    assert.is_truthy(bad:find('unknown option --frobnicate', 1, true), bad)
    assert.is_truthy(bad:find('rc=2', 1, true), bad)
  end)
end)

-- ------------------------------------------------------------------ pieces -------
describe('REPL pieces', function()
  it('completes operators from the registry and methods through metatables', function()
    _G.mx = mx
    _G.arr = mx.nd.ones {2}
    local c = complete.candidates('mx.nd.ze', _G)
    assert.is_truthy(#c >= 1 and c[1]:match('^mx%.nd%.zeros'), table.concat(c, ' '))
    c = complete.candidates('mx.sym.FullyConn', _G)
    assert.are.same({'mx.sym.FullyConnected'}, c)
    c = complete.candidates('arr:transp', _G) -- ('resh' is reshape and reshape_like)
    assert.are.same({'arr:transpose('}, c)
    c = complete.candidates('arr.ndi', _G) -- ('sh' is shape and shape_array)
    assert.are.same({'arr.ndim'}, c)
    assert.are.same({}, complete.candidates('nosuch.x', _G))
    _G.sy = mx.sym.Variable('x') * 2
    _G.ex = _G.sy:simple_bind {x = {2}}
    _G.md = mx.mod.Module {symbol = mx.sym.SoftmaxOutput {data = mx.sym.Variable('data'), name = 'softmax'}}
    assert.are.same({'sy:simple_bind('}, complete.candidates('sy:simple_b', _G))
    assert.are.same({'sy.name'}, complete.candidates('sy.na', _G))
    assert.are.same({'ex.arg_arrays', 'ex.arg_dict'}, complete.candidates('ex.arg_', _G))
    assert.are.same({'ex:forward('}, complete.candidates('ex:forw', _G))
    assert.are.same({'md:fit('}, complete.candidates('md:fi', _G))
    _G.arr, _G.sy, _G.ex, _G.md = nil, nil, nil, nil
  end)

  it('help lists an operator\'s parameters from the registry and a function\'s doc comment', function()
    local t = help.text(mx, mx.sym.FullyConnected)
    assert.is_truthy(t:find('num_hidden%s+int, required'), t)
    assert.is_truthy(t:find('no_bias%s+bool, default False'), t)
    assert.is_truthy(t:find('Inputs:%s+data, weight, bias'), t)
    t = help.text(mx, mx.nd.Activation)
    assert.is_truthy(t:find("act_type%s+enum {[^}]*relu"), t)
    t = help.text(mx, mx.nd.NDArray.slice)
    assert.is_truthy(t:find('Rows first..last', 1, true), t)
    t = help.text(mx, mx.nd.zeros {2, 3})
    assert.is_truthy(t:find('NDArray of shape {2, 3}, float32', 1, true), t)
  end)

  it('Ctrl-C is not swallowed by a pcall in library code', function()
    -- a child process: SIGINT is blocked there, raised while a pcall runs, then the
    -- code after the pcall must be stopped too (the interrupt stays raised until run ends)
    local script = table.concat({
      "package.path = " .. ("%q"):format(SRC .. '/lua/?.lua;' .. SRC .. '/lua/?/init.lua;') .. " .. package.path",
      "local ffi = require 'ffi'; ffi.cdef 'int raise(int sig);'",
      "local intr = require 'luamx.repl.interrupt'; assert(intr.block())",
      "local function f()",
      "  local ok = pcall(function() ffi.C.raise(2); local x = 0; for i = 1, 1e7 do x = x + i end end)",
      "  local y = 0; for i = 1, 3e8 do y = y + i end",
      "  return 'ran on after the pcall', ok",
      "end",
      "jit.off(f, true)",
      "print(intr.run(function(e) return e end, f))",
      "print(intr.run(function(e) return e end, function() return 'next run unaffected' end))"}, '\n')
    local out = sh('luajit -e ' .. q(script))
    assert.is_truthy(out:find('false\t[^\n]*interrupted %(Ctrl%-C%)'), out)
    assert.is_falsy(out:find('ran on after the pcall', 1, true), out)
    assert.is_truthy(out:find('true\tnext run unaffected', 1, true), out)
  end)

  it('pretty-prints nested tables with limits and colours only when asked', function()
    local big = {}
    for i = 1, 50 do big[i] = i end
    local s = pretty.format(big, {items = 5})
    assert.is_truthy(s:find('... (50 entries)', 1, true), s)
    assert.are.equal('{1, {2, {...}}}', pretty.format({1, {2, {3}}}, {depth = 2}))
    local cyc = {}
    cyc.self = cyc
    assert.are.equal('{self = <cycle>}', pretty.format(cyc))
    assert.is_falsy(pretty.format({1, 'a'}):find('\27', 1, true))
    assert.is_truthy(pretty.format(1, {color = true}):find('\27[36m', 1, true))
    local s2 = pretty.format(mx.sym.FullyConnected {data = mx.sym.Variable('data'), num_hidden = 3, name = 'fc'})
    assert.is_truthy(s2:find('<Symbol fc = FullyConnected>', 1, true), s2)
    assert.is_truthy(s2:find('arguments: data, fc_weight, fc_bias', 1, true), s2)
  end)
end)

-- ------------------------------------------------------------------ terminal -----
local has_tmux = have('tmux')
local describe_tty = has_tmux and describe or pending

describe_tty('luamx on a terminal (tmux)', function()
  local base = 'luamx-spec-' .. tostring(os.time()) .. '-' .. tostring(math.random(1e6))
  local nstart = 0
  local T

  -- each session gets its own server socket, so a server still exiting is never reused
  local function start(cmd)
    if T then sh(T .. 'kill-server') end
    nstart = nstart + 1
    T = 'tmux -L ' .. base .. '-' .. nstart .. ' -f /dev/null '
    local full = ('env LUAMX_LIB=%s HOME=%s TERM=xterm %s'):format(q(LIB), q(TMP), cmd)
    sh(T .. 'new-session -d -x 160 -y 50 ' .. q(full))
  end
  local function screen() return sh(T .. 'capture-pane -p -J -S -2000') end
  local function keys(...)
    local args = {}
    for i, k in ipairs {...} do args[i] = q(k) end
    sh(T .. 'send-keys ' .. table.concat(args, ' '))
  end
  local function literal(text) sh(T .. 'send-keys -l ' .. q(text)) end
  -- waits until the screen contains `text` (plain) `count` times; returns the screen
  local function wait_for(text, timeout, count)
    count = count or 1
    local deadline = os.time() + (timeout or 60)
    local s
    repeat
      s = screen()
      local n, i = 0, 1
      while true do
        local j = s:find(text, i, true)
        if not j then break end
        n, i = n + 1, j + 1
      end
      if n >= count then return s end
      os.execute('sleep 0.1')
    until os.time() > deadline
    error(('timed out waiting for %q; the screen shows:\n%s'):format(text, s), 2)
  end

  -- types a line and waits for the next '> ' prompt, so keys are never typed ahead of it
  local function line(text)
    local before = select(2, screen():gsub('\n> ', ''))
    literal(text); keys('Enter')
    return wait_for('\n> ', 60, before + 1)
  end

  after_each(function() if T then sh(T .. 'kill-server') end end)

  it('completes, recalls history, prints expressions, continues chunks, shows help', function()
    start(q(BIN))
    wait_for('Ctrl-D to leave\n> ')
    line('a = mx.nd.ones {2, 3}')
    line('6*7+1000')
    wait_for('\n1042')
    -- completion of a registry operator
    literal('x = mx.nd.ze'); keys('Tab')
    wait_for('> x = mx.nd.zeros')
    keys('C-u')
    -- an NDArray method after a:
    literal('a:transp'); keys('Tab')
    wait_for('> a:transpose(')
    literal(').shape'); keys('Enter')
    wait_for('{3, 2}\n> ')
    -- history with the up arrow: the 1042 line again
    keys('Up', 'Up', 'Enter')
    wait_for('\n1042\n> ', 30, 2)
    -- a multi-line function
    literal('function f(x)'); keys('Enter')
    wait_for('>> ')
    local conts = select(2, screen():gsub('\n>> ', ''))
    literal('return x * 1000 + 7'); keys('Enter')
    wait_for('\n>> ', 60, conts + 1)
    line('end')
    line('f(3)')
    wait_for('\n3007')
    -- help, and ?x
    line('help(mx.sym.FullyConnected)')
    local s = wait_for('num_hidden')
    assert.is_truthy(s:find('Number of hidden nodes', 1, true), s)
    line('?Pooling')
    wait_for('pool_type')
    keys('C-d')
    -- history survives the session
    local f = io.open(TMP .. '/.luamx_history')
    assert.is_truthy(f, 'no history file')
    local hist = f:read('*a')
    f:close()
    assert.is_truthy(hist:find('6*7+1000', 1, true), hist)
    start(q(BIN))
    wait_for('Ctrl-D to leave\n> ')
    keys('Up')
    wait_for('> ?Pooling')
  end)

  it('Ctrl-C stops a running loop and keeps the objects', function()
    start(q(BIN))
    wait_for('Ctrl-D to leave\n> ')
    line('a = mx.nd.arange(0, 4)')
    literal('n = 0; while true do n = n + 1 end'); keys('Enter')
    os.execute('sleep 0.5')
    keys('C-c')
    wait_for('interrupted\n> ')
    literal('n > 0, a:sum():asscalar() + 500'); keys('Enter')
    wait_for('true\n506')
    -- a fit between batches: the module stays usable
    literal("it = mx.io.NDArrayIter{data = mx.nd.ones{200, 20}, label = mx.nd.zeros{200}, batch_size = 10}; "
      .. "mod = mx.mod.Module{logger = false, symbol = mx.sym.SoftmaxOutput{name = 'softmax', "
      .. "data = mx.sym.FullyConnected{data = mx.sym.Variable('data'), num_hidden = 300}}}")
    local before = select(2, screen():gsub('\n> ', ''))
    keys('Enter')
    wait_for('\n> ', 60, before + 1)
    literal('mod:fit(it, {num_epoch = 1000000})'); keys('Enter')
    os.execute('sleep 1')
    keys('C-c')
    wait_for('interrupted\n> ', 60, 2)
    literal("mod:score(it, 'acc')[1][1] .. '-after-fit'"); keys('Enter')
    wait_for('"accuracy-after-fit"')
    -- Ctrl-C at the prompt clears the line
    literal('this is not lua')
    local before = select(2, wait_for('this is not lua'):gsub('\n> ', ''))
    keys('C-c')
    wait_for('\n> ', 30, before + 1) -- a fresh prompt
    literal('2 + 700'); keys('Enter')
    local s = wait_for('\n702')
    assert.is_falsy(s:find('this is not lua2', 1, true))
  end)

  it('works with libedit and with plain line input too', function()
    start('env LUAMX_READLINE=libedit.so.2 ' .. q(BIN))
    wait_for('Ctrl-D to leave\n> ')
    line('a = mx.nd.ones {2}')
    literal('a:transp'); keys('Tab')
    wait_for('> a:transpose(')
    keys('C-u')
    literal('8000 + 8'); keys('Enter')
    wait_for('\n8008')
    start('env LUAMX_NO_READLINE=1 ' .. q(BIN))
    wait_for('Ctrl-D to leave\n> ')
    literal('while true do end'); keys('Enter')
    os.execute('sleep 0.5')
    keys('C-c')
    wait_for('interrupted\n> ')
    literal('9000 + 9'); keys('Enter')
    wait_for('\n9009')
  end)

  it('draws the progress bar in place during fit', function()
    local script = TMP .. '/fit.lua'
    local f = io.open(script, 'w')
    f:write([[
      local mx = require 'luamx'
      mx.random.seed(1)
      local it = mx.io.NDArrayIter{data = mx.nd.random.uniform(0, 1, {60, 4}), label = mx.nd.zeros{60}, batch_size = 20}
      local net = mx.sym.SoftmaxOutput{data = mx.sym.FullyConnected{data = mx.sym.Variable('data'), num_hidden = 2}, name = 'softmax'}
      mx.mod.Module{symbol = net}:fit(it, {num_epoch = 2})
      print('FIT-DONE')
      io.read()
    ]])
    f:close()
    start(q(BIN) .. ' ' .. q(script) .. ' 2>/dev/null')
    local s = wait_for('FIT-DONE')
    local n = 0
    for line in s:gmatch('[^\n]+') do
      if line:find('100% 3/3', 1, true) then
        n = n + 1
        assert.is_truthy(line:match('^%[=+%] 100%% 3/3 %d+ samples/s in 0:00:0%d accuracy=[%d.]+%s*$'), line)
      end
    end
    assert.are.equal(2, n, s)
  end)
end)
