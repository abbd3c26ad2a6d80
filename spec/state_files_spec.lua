-- spec/state_files_spec.lua — the optimizer .states file and the BucketingModule .buckets
-- file are untrusted input. Their bytes are read by the NDArray-list reader (fuzzed by
-- tests/fuzz/fuzz_params.c with seeds written by these writers); what the arrays mean
-- (state entry names, the key array) is checked in Lua, here: well-formed lists with
-- hostile contents, and byte mutations of real files, must load or raise an error that
-- names the function and the entry, never a Lua internal error.
local mx = require 'luamx'
local H = require 'helpers'
local nd = mx.nd

mx.logging.set_level('error')

local function tmp()
  local p = os.tmpname()
  return p
end

local function read(path)
  local f = assert(io.open(path, 'rb'))
  local s = f:read('*a')
  f:close()
  return s
end

local function write(path, s)
  local f = assert(io.open(path, 'wb'))
  f:write(s)
  f:close()
end

local function updater()
  return mx.optimizer.get_updater(mx.optimizer.create('sgd', {learning_rate = 0.1, momentum = 0.9}))
end

--- One update through a fresh updater restored from `path`.
local function restore_and_step(path)
  local u = updater()
  u:set_states(path)
  local w = nd.ones {2, 3}
  u(0, nd.ones {2, 3}, w)
  return w
end

local function internal(msg)
  return msg:find('attempt to', 1, true) or msg:find('%.lua:%d+:') and not msg:find('_spec%.lua:%d+:')
end

describe('optimizer .states files', function()
  it('restore what save_states wrote', function()
    local u, w = updater(), nd.ones {2, 3}
    u(0, nd.ones {2, 3}, w)
    local path = tmp()
    u:save_states(path)
    local w2 = w:copy()
    u(0, nd.ones {2, 3}, w)
    local v = updater()
    v:set_states(path)
    v(0, nd.ones {2, 3}, w2)
    H.near(w2:toflat(), w:toflat(), 1e-6)
    os.remove(path)
  end)

  it('refuse entries with hostile names, parts and sizes, naming the entry', function()
    local path = tmp()
    local cases = {
      {{nd.ones {2, 3}}, 'set_states: entry 1: expected a name'},
      {{['i0/abc'] = nd.ones {2, 3}}, 'set_states: entry "i0/abc": the part must be count, none, an integer or <integer>none, got "abc"'},
      {{['i0/1nonex'] = nd.zeros {1}}, 'set_states: entry "i0/1nonex": the part must be count, none, an integer or <integer>none'},
      {{['i0/2none'] = nd.zeros {1}}, 'set_states: the states of i0 have part 2 but not part 1'},
      {{['i0/1none'] = nd.zeros {1}, ['i0/2'] = nd.ones {2, 3}},
       'the loaded optimizer state of i0 is {None, (2, 3) float32}, but the optimizer needs (2, 3) float32'},
      {{['x0/0'] = nd.ones {2, 3}}, 'set_states: entry "x0/0": the key must be i<integer> or s<name>, got "x0"'},
      {{['iabc/0'] = nd.ones {2, 3}}, 'the key must be i<integer> or s<name>, got "iabc"'},
      {{['noslash'] = nd.ones {1}}, 'set_states: entry "noslash": expected "num_update", "random_state" or "<key>/<part>"'},
      {{num_update = nd.ones {3}}, 'set_states: entry "num_update": expected one number, got an array of shape (3)'},
      {{['i0/count'] = nd.zeros {2, 2}}, 'entry "i0/count": expected one number, got an array of shape (2, 2)'},
      {{['i0/1'] = nd.ones {2, 3}, ['i0/3'] = nd.ones {2, 3}}, 'set_states: the states of i0 have part 3 but not part 2'},
      {{['i0/0'] = nd.ones({2, 3}, {dtype = 'int32'})},
       'Updater: the loaded optimizer state of i0 is (2, 3) int32, but the optimizer needs (2, 3) float32 for this weight'},
      {{['i0/0'] = nd.ones {3, 2}}, 'the loaded optimizer state of i0 is (3, 2) float32, but the optimizer needs (2, 3) float32'},
      {{['i0/none'] = nd.zeros {1}}, 'the loaded optimizer state of i0 is no state, but the optimizer needs (2, 3) float32'},
      {{['i0/1'] = nd.ones {2, 3}}, 'the loaded optimizer state of i0 is {(2, 3) float32}, but the optimizer needs (2, 3) float32'},
    }
    for _, c in ipairs(cases) do
      nd.save(path, c[1])
      local err = H.raises(function() restore_and_step(path) end, c[2])
      assert.is_falsy(internal(err), err)
    end
    os.remove(path)
  end)

  it('survive byte mutations of a real file: load or a clean error', function()
    local u, w = updater(), nd.ones {2, 3}
    u(0, nd.ones {2, 3}, w)
    u(5, nd.ones {4}, nd.ones {4})
    local path = tmp()
    u:save_states(path)
    local good = read(path)
    math.randomseed(16)
    local loaded, refused = 0, 0
    for _ = 1, 400 do
      local b = {good:byte(1, -1)}
      for _ = 1, math.random(1, 4) do
        local i = math.random(1, #b)
        b[i] = math.random(0, 255)
      end
      write(path, string.char(unpack(b)))
      local ok, err = pcall(restore_and_step, path)
      if ok then
        loaded = loaded + 1
      else
        refused = refused + 1
        err = tostring(err)
        assert.is_falsy(internal(err), err)
        assert.truthy(err:find(path, 1, true) or err:find('set_states: ', 1, true)
                      or err:find('Updater: the loaded optimizer state', 1, true), err)
      end
    end
    assert.is_true(loaded > 0 and refused > 0, ('loaded %d, refused %d'):format(loaded, refused))
    os.remove(path)
  end)
end)

describe('BucketingModule .buckets files', function()
  local keys = mx.mod.BucketingModule.load_bucket_keys

  it('refuse anything but one unnamed 1-D array of integers', function()
    local prefix = tmp()
    local path = prefix .. '.buckets'
    local cases = {
      {{}, 'must hold one unnamed array of bucket keys, got no arrays'},
      {{k = nd.array({1, 2}, {dtype = 'int32'})}, 'got 1 named array(s)'},
      {{nd.array({1}, {dtype = 'int32'}), nd.array({2}, {dtype = 'int32'})}, 'got 2 arrays'},
      {{nd.array({{1, 2}}, {dtype = 'int32'})}, 'expected a 1-D array of integer keys, got shape (1, 2) int32'},
      {{nd.array {1.5, 2}}, 'key 1 is 1.5, not an integer'},
    }
    for _, c in ipairs(cases) do
      nd.save(path, c[1])
      local err = H.raises(function() keys(prefix) end, 'BucketingModule.load_bucket_keys: ' .. path, c[2])
      assert.is_falsy(internal(err), err)
    end
    nd.save(path, {nd.array({10, 20}, {dtype = 'int32'})})
    assert.same({10, 20}, keys(prefix))
    os.remove(path)
    os.remove(prefix)
  end)
end)
