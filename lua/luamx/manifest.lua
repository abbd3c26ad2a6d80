--- luamx.manifest — the commit record that makes a checkpoint appear whole or not at all.
--
-- A checkpoint is several files in MXNet's names and formats (`prefix-symbol.json`,
-- `prefix-0003.params`, `prefix-0003.states`; a BucketingModule's `prefix-<key>-symbol.json`
-- and `prefix.buckets`) plus `prefix-0003.manifest`, luamx's own. A save (`save`):
--   1. writes every per-epoch part (`.params`, `.states`) to a staging temporary
--      `<part>.tmp.<pid>.<n>` (itself written atomically: fsync'ed) and takes its size
--      and CRC-32; an error here removes the staging files and leaves the epoch as it was;
--   2. when it replaces a complete checkpoint of the same epoch, hard-links (copies, where
--      links fail) each of that checkpoint's parts to a backup `<part>.tmp.<pid>.<n>`, then
--      writes the manifest (atomically: temporary, fsync, rename, directory fsync) saying
--      `status pending`, listing the new parts (`part <name> <size> <crc32>`), the parts of
--      the complete checkpoint it replaces, if any, with their backups
--      (`previous <name> <size> <crc32> <backup>`), and the shared parts
--      (`shared <name>`: the symbol JSON files and `.buckets`, which every epoch
--      overwrites, as in MXNet; each is written atomically before step 1);
--   3. renames the staged parts over their names;
--   4. rewrites the manifest saying `status complete` with the new parts only (its
--      directory fsync makes the renames durable too), and removes the backups.
-- A backup has a temporary's name, so a killed save's backups are removed as its
-- temporaries are (by the next save of that part, or of the next epoch once this one's
-- manifest says complete; never while their process lives); the save of that part first
-- restores the previous parts from the backups (renames) when a pending
-- manifest needs them, so they are never cleaned while they are the only copy.
-- Loading (`status`, `check`) verifies sizes and checksums: a complete manifest's parts
-- must all match; a pending one is the new checkpoint when all its new parts are in
-- place, the previous one when each of its parts is whole under its name or in its
-- backup (a load then reads the backup: so an epoch that was complete is never lost
-- by an interrupted re-save, whatever the step it was killed at), and incomplete
-- otherwise (killed between two renames, or before the renames of a first save): an
-- error naming the manifest. The parts are never read before they are verified, and a
-- temporary is read only as the backup a manifest lists and verifies. A load reads
-- verified snapshots (`check`), so a save of the same epoch running in another process
-- cannot change its files between the check and the read; `status` repeats a verdict
-- other than 'complete' when the manifest changed while it was checked.
-- No manifest at all is a checkpoint written by MXNet (or by luamx before manifests): it
-- loads as MXNet would load it, unchecked. There is no silent fallback to another epoch:
-- `status` says which epochs are complete.
--
-- The manifest is untrusted input: a malformed line is an error naming the manifest and
-- the line; part names must be plain file names (no '/'), so it can name nothing outside
-- the checkpoint's directory; a previous part must be a file of the manifest's own epoch
-- (`<prefix>-0003.<ext>`) and its backup a temporary of it (`<name>.tmp.<pid>.<n>`).
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
  local stem = base_of(mpath):gsub('manifest$', '')
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
      local kind, name, size, crc, rest = line:match('^(%a+) ([^/ ]+) (%d+) (%x%x%x%x%x%x%x%x)(.*)$')
      local backup = rest and rest:match('^ ([^/ ]+)$')
      local sname = line:match('^shared ([^/ ]+)$')
      if kind == 'previous' and name and (rest == '' or backup) then
        if name:sub(1, #stem) ~= stem or name:find('.', #stem + 1, true) then
          return bad(n, ('previous part %q is not a file of this checkpoint (expected %s<ext>)'):format(name:sub(1, 60), stem))
        end
        if backup and not (backup:sub(1, #name + 5) == name .. '.tmp.' and backup:sub(#name + 6):match('^%d+%.%d+$')) then
          return bad(n, ('the backup of %s must be named %s.tmp.<pid>.<n>, got %q'):format(name, name, backup:sub(1, 60)))
        end
        m.previous[#m.previous + 1] = {name = name, size = tonumber(size), crc = tonumber(crc, 16), backup = backup}
      elseif kind == 'part' and name and rest == '' then
        m.parts[#m.parts + 1] = {name = name, size = tonumber(size), crc = tonumber(crc, 16)}
      elseif sname then m.shared[#m.shared + 1] = sname
      else
        return bad(n, ('expected "part <name> <size> <crc32>", "previous <name> <size> <crc32> [<backup>]" or ' ..
          '"shared <name>", got %q'):format(line:sub(1, 60)))
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

local status_once -- one reading of the manifest and the files (below)

--- The state of a checkpoint: 'complete' (manifest verified), 'pending' (a save was
-- interrupted or is running), 'damaged' (a manifest that does not parse, or a part that
-- differs from what it lists), 'unmanaged' (files but no manifest: MXNet's own, or an
-- older luamx's), or 'missing' (no `.params` and no manifest).
-- @param prefix path prefix
-- @param epoch epoch number
-- @return state, and a message saying why for 'pending' and 'damaged', and for
--   'complete' the manifest as {parts = {{name=, size=, crc=}}, shared = {names},
--   files = {[name] = the file name to read it from (itself, or its verified backup)}}
-- @usage local st, why = mx.model.checkpoint_status('mlp', 3)
function M.status(prefix, epoch)
  -- a save running in another process changes the files between the manifest's read and
  -- their checks: a result that is not 'complete' counts only if the manifest did not
  -- change meanwhile
  local st, info, text
  for _ = 1, M._check_tries do
    st, info, text = status_once(prefix, epoch)
    if st == 'complete' or st == 'unmanaged' or read(M.path(prefix, epoch)) == text then break end
    if M._on_retry then M._on_retry(('%s changed while it was checked'):format(M.path(prefix, epoch))) end
  end
  return st, info
end

status_once = function(prefix, epoch)
  local mpath = M.path(prefix, epoch)
  local text = read(mpath)
  if not text then
    if read(('%s-%04d.params'):format(prefix, epoch)) then return 'unmanaged' end
    return 'missing', ('%s-%04d.params does not exist'):format(prefix, epoch)
  end
  local m, err = parse(mpath, text)
  if not m then return 'damaged', err, text end
  local dir = dir_of(mpath)
  -- nil and {[name] = file} when every part of list is whole (under its name or, with
  -- backups, in its backup), else a message
  local function verify(list, backups)
    local files = {}
    for _, p in ipairs(list) do
      local crc, size, cerr = crc32(dir .. p.name)
      files[p.name] = p.name
      if backups and p.backup and (crc ~= p.crc or size ~= p.size) then
        local bcrc, bsize = crc32(dir .. p.backup)
        if bcrc == p.crc and bsize == p.size then crc, size, files[p.name] = bcrc, bsize, p.backup end
      end
      if not crc then return ('%s lists %s, which cannot be read: %s'):format(mpath, p.name, cerr) end
      if size ~= p.size or crc ~= p.crc then
        return ('%s is not the file %s recorded (size %d, crc32 %08x; found size %d, crc32 %08x): ' ..
          'it was replaced after the checkpoint was saved'):format(dir .. p.name, mpath, p.size, p.crc, size, crc)
      end
    end
    return nil, files
  end
  for _, sname in ipairs(m.shared) do
    if not read(dir .. sname) then return 'damaged', ('%s lists %s, which does not exist'):format(mpath, dir .. sname), text end
  end
  local err, files = verify(m.parts)
  m.files = files
  if m.status == 'complete' then
    if err then return 'damaged', err, text end
    return 'complete', m, text
  end
  if not err then return 'complete', m, text end -- every new part is in place
  if #m.previous > 0 then
    local perr, pfiles = verify(m.previous, true)
    if not perr then -- the replaced checkpoint is whole (in place or in its backups)
      return 'complete', {parts = m.previous, shared = m.shared, status = 'pending', files = pfiles}, text
    end
  end
  return 'pending', ('%s says the save of this checkpoint did not finish (it was interrupted, ' ..
    'or another process is writing it), and its files are neither all new nor all old'):format(mpath), text
end

local counter = 0
pcall(ffi.cdef, 'int getpid(void);')
pcall(ffi.cdef, 'int link(const char *oldpath, const char *newpath);')
pcall(ffi.cdef, 'char *strerror(int errnum);')

local function temp_name(path)
  counter = counter + 1
  return ('%s.tmp.%d.%d'):format(path, ffi.C.getpid(), 1000000000 + counter)
end

-- Hard-links path to backup (copies it, atomically, where the link fails: a file system
-- without hard links); errors start with who.
local function backup_of(path, backup, who)
  if M._link(path, backup) == 0 then return end
  local lerr = ffi.string(ffi.C.strerror(ffi.errno()))
  local f = io.open(path, 'rb')
  if not f then raise(('%s: cannot back up %s (link: %s; it cannot be opened)'):format(who, path, lerr)) end
  local data = f:read('*a')
  f:close()
  if not data then raise(('%s: cannot back up %s (link: %s; it cannot be read)'):format(who, path, lerr)) end
  M.write_atomic(backup, data, who)
end

-- Testing hooks: M._after_rename(i) runs after the i-th rename of a save (i = 0: before
-- the first), so that a spec can raise there to stand for a kill; M._link is link(2).
M._after_rename = nil
M._link = function(path, backup) return ffi.C.link(path, backup) end

--- Saves a checkpoint's per-epoch parts and commits them (steps 1 to 4 at the top).
-- @param prefix path prefix
-- @param epoch epoch number
-- @param who function name for messages
-- @param parts list of {path =, write = function(tmp_path)}; a part whose writer
--   writes nothing (a dist kvstore's states on a rank other than 0) is left out
-- @param shared list of shared part paths, already written (only their presence is
--   recorded)
function M.save(prefix, epoch, who, parts, shared)
  local staged, lines, backups = {}, {}, {}
  local function unstage() for _, t in pairs(staged) do os.remove(t) end end
  local mpath = M.path(prefix, epoch)
  local dir = dir_of(mpath)
  -- the checkpoint this save replaces; an interrupted re-save may have left some of its
  -- parts only in their backups: put them back first (the cleaning of temporaries below
  -- would remove them, and a kill from here on finds them under their names)
  local st, info = M.status(prefix, epoch)
  if st == 'complete' then
    for _, p in ipairs(info.parts) do
      local file = info.files[p.name]
      if file ~= p.name then
        local rok, rerr = os.rename(dir .. file, dir .. p.name)
        if not rok then raise(('%s: cannot restore %s from %s: %s'):format(who, dir .. p.name, dir .. file, tostring(rerr))) end
      elseif p.backup then
        os.remove(dir .. p.backup) -- not needed: the part is whole under its name
      end
    end
    -- an interrupted re-save whose new set is whole: the old set's backups are not needed
    for _, p in ipairs(info.previous or {}) do
      if p.backup then os.remove(dir .. p.backup) end
    end
  end
  -- the dead temporaries of the epoch before (its re-save killed after its manifest was
  -- rewritten complete leaves backups that no resume would clean, since a resume saves
  -- the next epochs), where its manifest says complete: then no part is read from a backup
  -- (only a pending manifest lists backups), and nothing needs checksumming here
  if epoch > 0 then
    local ppath = M.path(prefix, epoch - 1)
    local ptext = read(ppath)
    local pm = ptext and parse(ppath, ptext)
    if pm and pm.status == 'complete' then
      capi.check(C.lmx_file_clean_temporaries(ppath, nil), nil, who)
      for _, p in ipairs(pm.parts) do capi.check(C.lmx_file_clean_temporaries(dir .. p.name, nil), nil, who) end
    end
  end
  local ok, err = pcall(function()
    for i, p in ipairs(parts) do
      -- the temporaries killed saves of this part left (the staging file's name is new,
      -- so its own atomic write would not find them)
      capi.check(C.lmx_file_clean_temporaries(p.path, nil), nil, who)
      local tmp = temp_name(p.path)
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
  local shared_lines = {}
  for _, p in ipairs(shared or {}) do shared_lines[#shared_lines + 1] = 'shared ' .. base_of(p) end
  local pending = {HEADER, 'status pending'}
  for _, l in ipairs(lines) do pending[#pending + 1] = l end
  local function unbackup() for _, b in ipairs(backups) do os.remove(b) end end
  if st == 'complete' then
    ok, err = pcall(function()
      for _, p in ipairs(info.parts) do
        local b = temp_name(dir .. p.name)
        backup_of(dir .. p.name, b, who)
        backups[#backups + 1] = b
        pending[#pending + 1] = ('previous %s %d %08x %s'):format(p.name, p.size, p.crc, base_of(b))
      end
    end)
    if not ok then unstage() unbackup() error(err, 0) end
  end
  for _, l in ipairs(shared_lines) do pending[#pending + 1] = l end
  ok, err = pcall(M.write_atomic, mpath, table.concat(pending, '\n') .. '\n', who)
  if not ok then unstage() unbackup() error(err, 0) end
  if M._after_rename then M._after_rename(0) end
  for i, p in ipairs(parts) do
    if staged[i] then
      local rok, rerr = os.rename(staged[i], p.path)
      if not rok then
        unstage()
        raise(('%s: cannot rename %s to %s: %s'):format(who, staged[i], p.path, tostring(rerr)))
      end
      staged[i] = nil
      if M._after_rename then M._after_rename(i) end
    end
  end
  local complete = {HEADER, 'status complete'}
  for _, l in ipairs(lines) do complete[#complete + 1] = l end
  for _, l in ipairs(shared_lines) do complete[#complete + 1] = l end
  M.write_atomic(mpath, table.concat(complete, '\n') .. '\n', who)
  unbackup()
end

-- A snapshot of the verified file `from` at `snap` (see check): a hard link, else a copy;
-- `from` itself where neither can be made but it can be read (a directory the process
-- cannot write, where no save can run either); nil and why where `from` is gone.
local function snapshot(from, snap, who)
  if M._link(from, snap) == 0 then return snap end
  local f = io.open(from, 'rb')
  if not f then return nil, from .. ' disappeared after it was checked' end
  local data = f:read('*a')
  f:close()
  if not data then return nil, from .. ' cannot be read after it was checked' end
  if pcall(M.write_atomic, snap, data, who) then return snap end
  return from
end

--- Checks a checkpoint before loading it; raises an error starting with `who` unless it
-- is complete or unmanaged. `need` lists per-epoch part paths the caller will read (a
-- complete manifest must list them: a checkpoint saved without optimizer states has no
-- `.states` part, whatever file of that name lies there).
-- A verified checkpoint's needed parts are read from snapshots: each is hard-linked
-- (copied, where links fail) to a temporary `<part>.tmp.<pid>.<n>` that is checked against
-- the manifest's size and CRC-32 again, so a save of the same epoch running in another
-- process (which renames new parts over the names and removes backups) cannot change or
-- remove a file between the check and the read; when it did before the snapshot, the
-- check starts over (a few times, then an error saying the epoch keeps changing).
-- @return true for a verified checkpoint, false for an unmanaged one; a function
--   mapping a part's path to the path to read it from (its snapshot; the path itself for
--   an unmanaged checkpoint); and a function that removes the snapshot of one part path
--   (or of all, given nil)
function M.check(prefix, epoch, who, need)
  local function same(p) return p end
  local last
  for _ = 1, M._check_tries do
    local st, info = M.status(prefix, epoch)
    if st == 'unmanaged' then
      for _, p in ipairs(need or {}) do
        if not read(p) then raise(('%s: %s does not exist (was the checkpoint saved without it?)'):format(who, p)) end
      end
      return false, same, function() end
    end
    if st == 'missing' then raise(('%s: checkpoint %q epoch %d: %s'):format(who, prefix, epoch, info)) end
    if st ~= 'complete' then
      raise(('%s: checkpoint %q epoch %d is %s: %s; load an earlier epoch ' ..
        '(mx.model.checkpoint_status tells which are complete)'):format(who, prefix, epoch,
        st == 'pending' and 'incomplete' or 'damaged', info))
    end
    local listed = {}
    for _, p in ipairs(info.parts) do listed[p.name] = p end
    for _, p in ipairs(need or {}) do
      if not listed[base_of(p)] then
        raise(('%s: checkpoint %q epoch %d has no %s (%s does not list it: it was saved without it)')
          :format(who, prefix, epoch, base_of(p), M.path(prefix, epoch)))
      end
    end
    local snaps, err = {}, nil
    local function release(p)
      for k, snap in pairs(snaps) do
        if p == nil or k == base_of(p) then os.remove(snap) snaps[k] = nil end
      end
    end
    for _, p in ipairs(need or {}) do
      local part = listed[base_of(p)]
      local from = dir_of(p) .. ((info.files or {})[part.name] or part.name)
      local use, serr = snapshot(from, temp_name(p), who)
      if use and use ~= from then snaps[part.name] = use end
      if use then
        local crc, size = crc32(use)
        if crc ~= part.crc or size ~= part.size then serr = from .. ' was replaced while it was checked' end
      end
      if serr then err = serr break end
    end
    if not err then
      return true, function(p) return snaps[base_of(p)] or p end, release
    end
    release()
    last = err
    if M._on_retry then M._on_retry(last) end
  end
  raise(('%s: checkpoint %q epoch %d kept changing while it was read (another process is ' ..
    'saving it?): %s'):format(who, prefix, epoch, tostring(last)))
end
-- Testing hooks: the number of times check starts over, and a function called with the
-- reason each time it does.
M._check_tries = 5
M._on_retry = nil

return M
