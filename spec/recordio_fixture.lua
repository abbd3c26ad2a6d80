--- spec/recordio_fixture.lua — the images behind spec/fixtures/recordio/tiny.{lst,rec,idx}
-- and the packer run that made them (tools/im2rec.lua), shared by the ImageRecordIter
-- spec. Image i (0-based, i < N) is IH x IW BGR with pixel (y, x, k) = px(i, y, x, k)
-- and label i; PNG keeps the pixels exactly, so expected batches are computed from px
-- without any decoder.
--
-- Regenerate the committed fixture (only if the layout below changes):
--   luajit spec/recordio_fixture.lua spec/fixtures/recordio
local mx = require 'luamx'

local F = {N = 10, IH = 6, IW = 8}

function F.px(i, y, x, k) return (i * 50 + y * 37 + x * 11 + k * 80) % 256 end

--- Image i as a uint8 NDArray (IH, IW, 3), BGR.
function F.image(i)
  local a = mx.nd.empty({F.IH, F.IW, 3}, {dtype = 'uint8'})
  local p = a:data()
  for y = 0, F.IH - 1 do
    for x = 0, F.IW - 1 do
      for k = 0, 2 do p[(y * F.IW + x) * 3 + k] = F.px(i, y, x, k) end
    end
  end
  return a
end

local function im2rec()
  local src = os.getenv('LUAMX_SOURCE_DIR') or '.'
  package.path = src .. '/tools/?.lua;' .. package.path
  return require 'im2rec'
end

--- Writes the N images as PNG files under dir/img, lists and packs them into
-- dir/<name>.{lst,rec,idx} with tools/im2rec.lua; returns the prefix.
function F.build(dir, name, opts)
  opts = opts or {}
  local tool = im2rec()
  os.execute(('mkdir -p %q'):format(dir .. '/img'))
  local rio = mx.recordio
  for i = 0, F.N - 1 do
    local _, png = rio.unpack(rio.pack_img(rio.IRHeader(0, 0, 0, 0), F.image(i), 9, '.png'))
    local f = assert(io.open(('%s/img/%02d.png'):format(dir, i), 'wb'))
    f:write(png)
    f:close()
  end
  local items = tool.make_list(dir .. '/img')
  for k, it in ipairs(items) do -- {index, label(s)..., path}; label: the image number
    local label, path = opts.label and opts.label(it[1]) or it[1], it[3]
    local row = {it[1]}
    for _, v in ipairs(type(label) == 'table' and label or {label}) do row[#row + 1] = v end
    row[#row + 1] = path
    items[k] = row
  end
  local prefix = dir .. '/' .. name
  tool.write_list(prefix .. '.lst', items)
  tool.pack(prefix, dir .. '/img', {pass_through = opts.pass_through ~= false})
  return prefix
end

if arg and arg[0] and arg[0]:match('recordio_fixture%.lua$') then
  local out = assert(arg[1], 'usage: luajit spec/recordio_fixture.lua OUTDIR')
  local tmp = os.tmpname()
  os.remove(tmp)
  local prefix = F.build(tmp, 'tiny')
  for _, ext in ipairs({'.lst', '.rec', '.idx'}) do
    os.execute(('cp %q %q'):format(prefix .. ext, out .. '/tiny' .. ext))
  end
  os.execute(('rm -r %q'):format(tmp))
end

return F
