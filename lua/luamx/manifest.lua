--- luamx.manifest — the commit record that makes a checkpoint appear whole or not at all.
--
-- A checkpoint is several files in MXNet's names and formats (`prefix-symbol.json`,
-- `prefix-0003.params`, `prefix-0003.states`; a BucketingModule's `prefix-<key>-symbol.json`
-- and `prefix.buckets`) plus `prefix-0003.manifest`, luamx's own. A save (`save`):
--   1. writes every per-epoch part (`.params`, `.states`) to a staging temporary
--      `<part>.tmp.<pid>.<n>` (itself written atomically: fsync'ed) and takes its size
--      and CRC-32; an error here removes the staging files and leaves the epoch as it was;
--   2. writes the manifest (atomically: temporary, fsync, rename, directory fsync) saying
--      `status pending`, listing the new parts (`part <name> <size> <crc32>`), the parts of
--      the complete checkpoint it replaces, if any (`previous ...`), and the shared parts
--      (`shared <name>`: the symbol JSON files and `.buckets`, which every epoch
--      overwrites, as in MXNet; each is written atomically before step 1);
--   3. renames the staged parts over their names;
--   4. rewrites the manifest saying `status complete` with the new parts only (its
--      directory fsync makes the renames durable too).
-- Loading (`status`, `check`) verifies sizes and checksums: a complete manifest's parts
-- must all match; a pending one is the new checkpoint when all its new parts are in
-- place, the previous one when all of those still are (so an interrupted re-save of an
-- epoch does not lose the epoch), and incomplete otherwise (killed between two renames,
-- or before the renames of a first save): an error naming the manifest. The parts are
-- never read before they are verified, and temporaries never are.
-- No manifest at all is a checkpoint written by MXNet (or by luamx before manifests): it
-- loads as MXNet would load it, unchecked. There is no silent fallback to another epoch:
-- `status` says which epochs are complete.
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

local function parse(mpath, text)
  local function bad(n, msg)
    return nil, ('%s: line %d: %s (the manifest is damaged)'):format(mpath, n, msg)
  end
  local m = {parts = {}, previous = {}, shared = {}}
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
      local kind, name, size, crc = line:match('^(%a+) ([^/ ]+) (%d+) (%x%x%x%x%x%x%x%x)$')
      local sname = line:match('^shared ([^/ ]+)$')
      if (kind == 'part' or kind == 'previous') and name then
        local list = kind == 'part' and m.parts or m.previous
        list[#list + 1] = {name = name, size = tonumber(size), crc = tonumber(crc, 16)}
      elseif sname then m.shared[#m.shared + 1] = sname
      else
        return bad(n, ('expected "part <name> <size> <crc32>", "previous <name> <size> <crc32>" or "shared <name>", got %q')
          :format(line:sub(1, 60)))
      end
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
  local dir = dir_of(mpath)
  local function verify(list)
    for _, p in ipairs(list) do
      local crc, size, cerr = crc32(dir .. p.name)
      if not crc then return ('%s lists %s, which cannot be read: %s'):format(mpath, p.name, cerr) end
      if size ~= p.size or crc ~= p.crc then
        return ('%s is not the file %s recorded (size %d, crc32 %08x; found size %d, crc32 %08x): ' ..
          'it was replaced after the checkpoint was saved'):format(dir .. p.name, mpath, p.size, p.crc, size, crc)
      end
    end
    return nil
  end
  for _, sname in ipairs(m.shared) do
    if not read(dir .. sname) then return 'damaged', ('%s lists %s, which does not exist'):format(mpath, dir .. sname) end
  end
  local err = verify(m.parts)
  if m.status == 'complete' then
    if err then return 'damaged', err end
    return 'complete', m
  end
  if not err then return 'complete', m end -- every new part is in place
  if #m.previous > 0 and not verify(m.previous) then -- the replaced checkpoint is intact
    return 'complete', {parts = m.previous, shared = m.shared, status = 'pending'}
  end
  return 'pending', ('%s says the save of this checkpoint did not finish (it was interrupted, ' ..
    'or another process is writing it), and its files are neither all new nor all old'):format(mpath)
end

local counter = 0
pcall(ffi.cdef, 'int getpid(void);')

--- Saves a checkpoint's per-epoch parts and commits them (steps 1 to 4 at the top).
-- @param prefix path prefix
-- @param epoch epoch number
-- @param who function name for messages
-- @param parts list of {path =, write = function(tmp_path)}; a part whose writer
--   writes nothing (a dist kvstore's states on a rank other than 0) is left out
-- @param shared list of shared part paths, already written (only their presence is
--   recorded)
function M.save(prefix, epoch, who, parts, shared)
  local staged, lines = {}, {}
  local function unstage() for _, t in pairs(staged) do os.remove(t) end end
  local ok, err = pcall(function()
    for i, p in ipairs(parts) do
      -- the temporaries killed saves of this part left (the staging file's name is new,
      -- so its own atomic write would not find them)
      capi.check(C.lmx_file_clean_temporaries(p.path, nil), nil, who)
      counter = counter + 1
      local tmp = ('%s.tmp.%d.%d'):format(p.path, ffi.C.getpid(), 1000000000 + counter)
      staged[i] = tmp
      p.write(tmp)
      local crc, size, cerr = crc32(tmp)
      -- a part that cannot be summed (out of memory, a read error) fails the save: leaving
      -- it out would commit a checkpoint without it
      if not crc then raise(('%s: %s'):format(who, cerr)) end
      lines[#lines + 1] = ('part %s %d %08x'):format(base_of(p.path), size, crc)
    end
  end)
  if not ok then unstage() error(err, 0) end
  local mpath = M.path(prefix, epoch)
  local shared_lines = {}
  for _, p in ipairs(shared or {}) do shared_lines[#shared_lines + 1] = 'shared ' .. base_of(p) end
  local pending = {HEADER, 'status pending'}
  for _, l in ipairs(lines) do pending[#pending + 1] = l end
  local st, info = M.status(prefix, epoch)
  if st == 'complete' then
    for _, p in ipairs(info.parts) do pending[#pending + 1] = ('previous %s %d %08x'):format(p.name, p.size, p.crc) end
  end
  for _, l in ipairs(shared_lines) do pending[#pending + 1] = l end
  ok, err = pcall(M.write_atomic, mpath, table.concat(pending, '\n') .. '\n', who)
  if not ok then unstage() error(err, 0) end
  for i, p in ipairs(parts) do
    if staged[i] then
      local rok, rerr = os.rename(staged[i], p.path)
      if not rok then
        unstage()
        raise(('%s: cannot rename %s to %s: %s'):format(who, staged[i], p.path, tostring(rerr)))
      end
      staged[i] = nil
    end
  end
  local complete = {HEADER, 'status complete'}
  for _, l in ipairs(lines) do complete[#complete + 1] = l end
  for _, l in ipairs(shared_lines) do complete[#complete + 1] = l end
  M.write_atomic(mpath, table.concat(complete, '\n') .. '\n', who)
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
    raise(('%s: checkpoint %q epoch %d is %s: %s; load an earlier epoch ' ..
      '(mx.model.checkpoint_status tells which are complete)'):format(who, prefix, epoch,
      st == 'pending' and 'incomplete' or 'damaged', info))
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
