#!/usr/bin/env luajit
--- im2rec.lua — MXNet's tools/im2rec.py flow in Lua: list the images of a folder, then
-- pack them into an indexed RecordIO file (prefix.rec + prefix.idx) that
-- mx.io.ImageRecordIter and MXNet itself read.
--
--   luajit tools/im2rec.lua --list [--recursive] [--exts .jpg,.jpeg,.png] PREFIX ROOT
--       writes PREFIX.lst: "index<TAB>label<TAB>relative/path" per image; with
--       --recursive each subfolder of ROOT is a class (labels 0, 1, ... in name order),
--       as im2rec.py does
--   luajit tools/im2rec.lua [--encoding .jpg|.png] [--quality Q] [--color -1|0|1]
--       [--pass-through] PREFIX ROOT
--       packs the images of PREFIX.lst (paths relative to ROOT). --pass-through stores
--       the file bytes as they are; otherwise each image is decoded and re-encoded
--       (--color 1 BGR, 0 gray, -1 as stored; --quality: JPEG 1..100, PNG 0..9).
--       Header: IRHeader(0, label, index, 0), or a label array when a line has several.
--
-- As a module (the specs use it): require('im2rec').make_list(root, opts) and
-- .pack(prefix, root, opts) with the same options as a table.
local M = {}

local function mx() return require 'luamx' end

--- The image files under root (sorted), with labels: {{index, label, relpath}, ...}.
function M.make_list(root, opts)
  opts = opts or {}
  local ok, lfs = pcall(require, 'lfs')
  if not ok then error('im2rec: listing folders needs LuaFileSystem (apt-get install lua-filesystem)') end
  local exts = {}
  for e in (opts.exts or '.jpg,.jpeg,.png'):gmatch('[^,]+') do exts[e:lower()] = true end
  local function files(dir, rel)
    local out = {}
    for name in lfs.dir(dir) do
      if name ~= '.' and name ~= '..' then
        local attr = lfs.attributes(dir .. '/' .. name)
        local ext = (name:match('%.[^.]+$') or ''):lower()
        if attr and attr.mode == 'file' and exts[ext] then out[#out + 1] = rel .. name end
      end
    end
    table.sort(out)
    return out
  end
  local items = {}
  if opts.recursive then
    local classes = {}
    for name in lfs.dir(root) do
      local attr = lfs.attributes(root .. '/' .. name)
      if name ~= '.' and name ~= '..' and attr and attr.mode == 'directory' then classes[#classes + 1] = name end
    end
    table.sort(classes)
    for label, cls in ipairs(classes) do
      for _, f in ipairs(files(root .. '/' .. cls, cls .. '/')) do items[#items + 1] = {#items, label - 1, f} end
    end
  else
    for _, f in ipairs(files(root, '')) do items[#items + 1] = {#items, 0, f} end
  end
  return items
end

--- Writes a .lst file.
function M.write_list(path, items)
  local f = assert(io.open(path, 'w'))
  for _, it in ipairs(items) do
    local labels = {}
    for i = 2, #it - 1 do labels[#labels + 1] = ('%f'):format(it[i]) end
    f:write(('%d\t%s\t%s\n'):format(it[1], table.concat(labels, '\t'), it[#it]))
  end
  f:close()
end

--- Reads a .lst file: {{index, label1, ..., path}, ...}.
function M.read_list(path)
  local items, n = {}, 0
  for line in assert(io.lines(path)) do
    n = n + 1
    local fields = {}
    for field in line:gmatch('[^\t]+') do fields[#fields + 1] = field end
    if #fields < 3 then error(('im2rec: %s line %d: expected index, labels and a path'):format(path, n)) end
    local item = {tonumber(fields[1])}
    for i = 2, #fields - 1 do item[i] = tonumber(fields[i]) end
    item[#fields] = fields[#fields]
    for i = 1, #fields - 1 do
      if not item[i] then error(('im2rec: %s line %d: field %d is not a number'):format(path, n, i)) end
    end
    items[#items + 1] = item
  end
  return items
end

--- Packs the images of prefix.lst (paths relative to root) into prefix.rec/.idx.
-- opts: pass_through, encoding ('.jpg'), quality (95), color (1)
function M.pack(prefix, root, opts)
  opts = opts or {}
  local rio = mx().recordio
  local items = M.read_list(prefix .. '.lst')
  local w = rio.MXIndexedRecordIO(prefix .. '.idx', prefix .. '.rec', 'w')
  for _, item in ipairs(items) do
    local label = item[2]
    if #item > 3 then
      label = {}
      for i = 2, #item - 1 do label[#label + 1] = item[i] end
    end
    local header = rio.IRHeader(0, label, item[1], 0)
    local f = assert(io.open(root .. '/' .. item[#item], 'rb'))
    local bytes = f:read('*a')
    f:close()
    local s
    if opts.pass_through then
      s = rio.pack(header, bytes)
    else
      local img = rio.imdecode(bytes, opts.color or 1, 'im2rec ' .. item[#item])
      s = rio.pack_img(header, img, opts.quality or 95, opts.encoding or '.jpg')
    end
    w:write_idx(item[1], s)
  end
  w:close()
  return #items
end

local function main(argv)
  local opts, pos = {}, {}
  local i = 1
  while i <= #argv do
    local a = argv[i]
    if a == '--list' then opts.list = true
    elseif a == '--recursive' then opts.recursive = true
    elseif a == '--pass-through' then opts.pass_through = true
    elseif a == '--exts' or a == '--encoding' or a == '--quality' or a == '--color' then
      i = i + 1
      local key = a:sub(3)
      opts[key] = (key == 'quality' or key == 'color') and tonumber(argv[i]) or argv[i]
    elseif a:sub(1, 2) == '--' then
      io.stderr:write('im2rec: unknown option ' .. a .. '\n')
      os.exit(2)
    else pos[#pos + 1] = a end
    i = i + 1
  end
  if #pos ~= 2 then
    io.stderr:write('usage: im2rec.lua [--list [--recursive] [--exts E]] [--pass-through] ' ..
                    '[--encoding .jpg|.png] [--quality Q] [--color C] PREFIX ROOT\n')
    os.exit(2)
  end
  if opts.list then
    local items = M.make_list(pos[2], opts)
    M.write_list(pos[1] .. '.lst', items)
    print(('im2rec: %d images listed in %s.lst'):format(#items, pos[1]))
  else
    print(('im2rec: %d images packed into %s.rec'):format(M.pack(pos[1], pos[2], opts), pos[1]))
  end
end

if arg and arg[0] and arg[0]:match('im2rec%.lua$') then main(arg) end
return M
