-- luamx.lua (repository root) — lets `luajit -e "require 'luamx'"` and `luajit -i` work
-- from a source checkout without setting LUA_PATH: it puts this checkout's lua/ folder
-- first on package.path and loads the real module from there. An installed luamx
-- (luarocks) does not use this file.
local dir = (debug.getinfo(1, 'S').source:match('^@(.*)[/\\]luamx%.lua$')) or '.'
package.path = dir .. '/lua/?.lua;' .. dir .. '/lua/?/init.lua;' .. package.path
return dofile(dir .. '/lua/luamx.lua')
