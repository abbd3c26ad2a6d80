-- spec/checkpoint_resume_spec.lua — resuming from a checkpoint is bit-exact.
--
-- For SGD with momentum (and weight decay), Adam, and a BucketingModule, all with
-- Dropout: one process trains 3 epochs straight; another trains 2 and saves with the
-- optimizer states; a third, fresh process loads that checkpoint and trains the third
-- epoch (spec/ckpt/train.lua). The straight and the resumed runs' parameters and
-- optimizer states (update counts and random state included) must be identical bit for
-- bit. Dropout draws a new mask at every step, so this holds only if the random state
-- travels with the optimizer states.
local ffi = require 'ffi'
local mx = require 'luamx'
mx.logging.set_level('error')

local SRC = os.getenv('LUAMX_SOURCE_DIR') or '.'

local function run(model, phase, dir)
  local cmd = ('luajit "%s/spec/ckpt/train.lua" %s %s "%s" 2>&1'):format(SRC, model, phase, dir)
  local p = io.popen(cmd)
  local out = p:read('*a')
  local ok, _, code = p:close()
  assert(ok and (code == nil or code == 0), ('%s %s failed:\n%s'):format(model, phase, out))
end

-- The raw bytes of every array of an NDArray-list file, by name.
local function bytes_of(path)
  local out = {}
  for name, a in pairs(mx.nd.load(path)) do
    out[name] = ffi.string(a:data(), a.size * ({float32 = 4, float64 = 8, int64 = 8})[a.dtype])
  end
  return out
end

local function same_file(a, b, what)
  local x, y = bytes_of(a), bytes_of(b)
  local n = 0
  for name, v in pairs(x) do
    assert(y[name] ~= nil, ('%s: %s has %s, %s does not'):format(what, a, name, b))
    assert(v == y[name], ('%s: %s differs between the straight and the resumed run'):format(what, name))
    n = n + 1
  end
  for name in pairs(y) do assert(x[name] ~= nil, ('%s: %s has %s, %s does not'):format(what, b, name, a)) end
  return n
end

describe('resuming from a checkpoint in a fresh process', function()
  local dir
  setup(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute('mkdir -p "' .. dir .. '"'))
  end)
  teardown(function() os.execute('rm -rf "' .. dir .. '"') end)

  for _, model in ipairs {'sgd', 'adam', 'bkt'} do
    it(('reproduces 3 straight epochs bit for bit: %s with Dropout'):format(model), function()
      run(model, 'straight', dir)
      run(model, 'first', dir)
      run(model, 'resume', dir)
      local s, r = dir .. '/' .. model .. '-straight', dir .. '/' .. model .. '-resumed'
      assert.is_true(same_file(s .. '-0003.params', r .. '-0003.params', 'parameters') >= 3)
      local n = same_file(s .. '-0003.states', r .. '-0003.states', 'optimizer states')
      assert.is_true(n >= 4)
      assert.is_truthy(bytes_of(r .. '-0003.states').random_state, 'the states carry no random_state')
      -- not vacuous: the checkpoint of epoch 2 differs from the final parameters
      local part = bytes_of(dir .. '/' .. model .. '-part-0002.params')
      local final = bytes_of(s .. '-0003.params')
      local differs = false
      for name, v in pairs(final) do differs = differs or part[name] ~= v end
      assert.is_true(differs, 'the third epoch changed nothing')
    end)
  end
end)
