--- luamx.manifest — the commit record that makes a checkpoint appear whole or not at all.
--
-- A checkpoint is several files in MXNet's names and formats (`prefix-symbol.json`,
-- `prefix-0003.params`, `prefix-0003.states`; a BucketingModule's `prefix-<key>-symbol.json`
-- and `prefix.buckets`). Each file is written atomically (temporary, fsync, rename,
-- directory fsync: src/core/atomic_file.c), but a kill between two of them would leave a
-- mixed set. So a save runs in three steps:
--   1. `prefix-0003.manifest` is written (atomically) saying `status pending`;
--   2. every part is written;
--   3. the manifest is rewritten saying `status complete`, listing each per-epoch part
--      with its size and CRC-32 and each shared part (the symbol JSON files and
--      `.buckets`, which every epoch overwrites, as in MXNet) by name.
-- After a kill at any instant the manifest says pending (the epoch's files may be old,
-- new or mixed: loading it fails, naming the manifest), or complete (every listed part
-- is the one the save wrote: loading verifies sizes and checksums), or there is none and
-- no part of the epoch was written yet by this save.
--
-- Loading (`check`): a complete manifest is verified; a pending or damaged one, or a part
-- that differs from what it lists, raises an error naming the file and what is wrong; no
-- manifest at all is a checkpoint written by MXNet (or by luamx before manifests) and
-- loads as MXNet would load it, unchecked. There is no silent fallback to another epoch:
-- `status` tells a caller which epochs are complete.
--
-- The manifest is untrusted input: a malformed line is an error naming the manifest and
-- the line; part names must be plain file names (no '/'), so it can name nothing outside
-- the checkpoint's directory.
local ffi = require 'ffi'
local capi = require 'luamx.capi'
local C, raise = capi.C, capi.raise

local M = {}
local HEADER = 'luamx checkpoint 1'

local function dir_of(path)
  local d = path:match('^(.*)/[^/]*$')
  if d == nil then return '' end
  return d .. '/'
end
local function base_of(path) return path:match('([^/]*)$') end

--- The manifest's file name for a checkpoint.
-- @param prefix path prefix
-- @param epoch epoch number
-- @return path
function M.path(prefix, epoch) return ('%s-%04d.manifest'):format(prefix, epoch) end

--- Writes `text` to `path` atomically (see lmx_file_write_atomic); errors start with who.
function M.write_atomic(path, text, who)
  capi.check(C.lmx_file_write_atomic(path, text, #text), nil, who)
end

local function crc32(path)
  local crc, size = ffi.new('uint32_t[1]'), ffi.new('int64_t[1]')
  local rc = C.lmx_file_crc32(path, crc, size)
  if rc ~= 0 then return nil, nil, ffi.string(C.lmx_last_error()) end
  return tonumber(crc[0]), tonumber(size[0])
end

--- Step 1 of a save: marks the epoch's checkpoint as being written.
-- @param prefix path prefix
-- @param epoch epoch number
-- @param who function name for messages
function M.begin(prefix, epoch, who)
  M.write_atomic(M.path(prefix, epoch), HEADER .. '\nstatus pending\n', who)
end

--- Step 3 of a save: records the parts (full paths in the prefix's directory).
-- @param prefix path prefix
-- @param epoch epoch number
-- @param parts list of per-epoch part paths (size and CRC-32 recorded)
-- @param shared list of shared part paths (only their presence is checked)
-- @param who function name for messages
function M.commit(prefix, epoch, parts, shared, who)
  local lines = {HEADER, 'status complete'}
  for _, p in ipairs(parts) do
    local crc, size, err = crc32(p)
    if not crc then raise(('%s: cannot checksum %s: %s'):format(who, p, err)) end
    lines[#lines + 1] = ('part %s %d %08x'):format(base_of(p), size, crc)
  end
  for _, p in ipairs(shared or {}) do lines[#lines + 1] = 'shared ' .. base_of(p) end
  M.write_atomic(M.path(prefix, epoch), table.concat(lines, '\n') .. '\n', who)
end

local function parse(mpath, text)
  local function bad(n, msg)
    return nil, ('%s: line %d: %s (the manifest is damaged)'):format(mpath, n, msg)
  end
  local m = {parts = {}, shared = {}}
  local n = 0
  for line in (text .. (text:sub(-1) == '\n' and '' or '\n')):gmatch('([^\n]*)\n') do
    n = n + 1
    if n == 1 then
      if line ~= HEADER then return bad(1, ('expected %q, got %q'):format(HEADER, line:sub(1, 60))) end
    elseif n == 2 then
      m.status = line:match('^status (%a+)$')
      if m.status ~= 'pending' and m.status ~= 'complete' then
        return bad(2, ('expected "status pending" or "status complete", got %q'):format(line:sub(1, 60)))
      end
    elseif line ~= '' then
      local name, size, crc = line:match('^part ([^/ ]+) (%d+) (%x%x%x%x%x%x%x%x)$')
      local sname = line:match('^shared ([^/ ]+)$')
      if name then m.parts[#m.parts + 1] = {name = name, size = tonumber(size), crc = tonumber(crc, 16)}
      elseif sname then m.shared[#m.shared + 1] = sname
      else return bad(n, ('expected "part <name> <size> <crc32>" or "shared <name>", got %q'):format(line:sub(1, 60))) end
    end
  end
  if n < 2 then return bad(n + 1, 'the file ends early') end
  return m
end

local function read(path)
  local f = io.open(path, 'rb')
  if not f then return nil end
  local s = f:read(65536)
  f:close()
  return s or ''
end

--- The state of a checkpoint: 'complete' (manifest verified), 'pending' (a save was
-- interrupted or is running), 'damaged' (a manifest that does not parse, or a part that
-- differs from what it lists), 'unmanaged' (files but no manifest: MXNet's own, or an
-- older luamx's), or 'missing' (no `.params` and no manifest).
-- @param prefix path prefix
-- @param epoch epoch number
-- @return state, and a message saying why for 'pending' and 'damaged', and for
--   'complete' the manifest as {parts = {{name=, size=, crc=}}, shared = {names}}
-- @usage local st, why = mx.model.checkpoint_status('mlp', 3)
function M.status(prefix, epoch)
  local mpath = M.path(prefix, epoch)
  local text = read(mpath)
  if not text then
    if read(('%s-%04d.params'):format(prefix, epoch)) then return 'unmanaged' end
    return 'missing', ('%s-%04d.params does not exist'):format(prefix, epoch)
  end
  local m, err = parse(mpath, text)
  if not m then return 'damaged', err end
  if m.status == 'pending' then
    return 'pending', ('%s says the save of this checkpoint did not finish (it was interrupted, ' ..
      'or another process is writing it)'):format(mpath)
  end
  local dir = dir_of(mpath)
  for _, p in ipairs(m.parts) do
    local crc, size, cerr = crc32(dir .. p.name)
    if not crc then return 'damaged', ('%s lists %s, which cannot be read: %s'):format(mpath, p.name, cerr) end
    if size ~= p.size or crc ~= p.crc then
      return 'damaged', ('%s is not the file %s recorded (size %d, crc32 %08x; found size %d, crc32 %08x): ' ..
        'it was replaced after the checkpoint was saved'):format(dir .. p.name, mpath, p.size, p.crc, size, crc)
    end
  end
  for _, s in ipairs(m.shared) do
    if not read(dir .. s) then return 'damaged', ('%s lists %s, which does not exist'):format(mpath, dir .. s) end
  end
  return 'complete', m
end

--- Checks a checkpoint before loading it; raises an error starting with `who` unless it
-- is complete or unmanaged. `need` lists per-epoch part paths the caller will read (a
-- complete manifest must list them: a checkpoint saved without optimizer states has no
-- `.states` part, whatever file of that name lies there).
-- @return true for a verified checkpoint, false for an unmanaged one
function M.check(prefix, epoch, who, need)
  local st, info = M.status(prefix, epoch)
  if st == 'unmanaged' then
    for _, p in ipairs(need or {}) do
      if not read(p) then raise(('%s: %s does not exist (was the checkpoint saved without it?)'):format(who, p)) end
    end
    return false
  end
  if st == 'missing' then raise(('%s: checkpoint %q epoch %d: %s'):format(who, prefix, epoch, info)) end
  if st ~= 'complete' then
    raise(('%s: checkpoint %q epoch %d is incomplete: %s; load an earlier epoch ' ..
      '(mx.model.checkpoint_status tells which are complete)'):format(who, prefix, epoch, info))
  end
  local listed = {}
  for _, p in ipairs(info.parts) do listed[p.name] = true end
  for _, p in ipairs(need or {}) do
    if not listed[base_of(p)] then
      raise(('%s: checkpoint %q epoch %d has no %s (%s does not list it: it was saved without it)')
        :format(who, prefix, epoch, base_of(p), M.path(prefix, epoch)))
    end
  end
  return true
end

return M
