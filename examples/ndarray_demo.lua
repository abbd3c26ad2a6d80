-- examples/ndarray_demo.lua — a first look at luamx's NDArrays.
--   luajit examples/ndarray_demo.lua
-- Works from a source checkout (after `cmake -S . -B build && cmake --build build`) and
-- from a luarocks install.
local here = (arg and arg[0] or ''):match('^(.*)[/\\]examples[/\\][^/\\]*$')
if here then package.path = here .. '/lua/?.lua;' .. package.path end
local mx = require 'luamx'

print(('luamx %s'):format(mx.__version__))

local a = mx.nd.array {{1, 2, 3}, {4, 5, 6}}
print('a =') print(a)
print('a * 2 + 1 =') print(a * 2 + 1)
print('broadcast a + {10, 20, 30} =') print(a + mx.nd.array {10, 20, 30})

local w = mx.nd.array {{1, 0}, {0, 1}, {1, 1}}
print('dot(a, w) =') print(mx.nd.dot(a, w))

mx.random.seed(7)
local x = mx.nd.random.normal(0, 1, {1000, 8})
local mean = mx.nd.dot(mx.nd.ones {1, 1000}, x) / 1000
print('column means of 1000 normal draws (close to 0):') print(mean)

-- A tiny least-squares fit y = 3x - 1 by gradient descent on NDArrays.
local xs = mx.nd.random.uniform(-1, 1, {256, 1})
local ys = xs * 3 - 1
local k, b = 0, 0
for step = 1, 200 do
  local err = xs * k + b - ys
  local gk = mx.nd.dot(err:reshape {1, 256}, xs):tonumber() / 256
  local gb = mx.nd.dot(mx.nd.ones {1, 256}, err):tonumber() / 256
  k, b = k - 0.5 * gk, b - 0.5 * gb
  if step % 50 == 0 then print(('step %3d  k = %.4f  b = %.4f'):format(step, k, b)) end
end

local path = os.tmpname()
mx.nd.save(path, {weight = mx.nd.array {k}, bias = mx.nd.array {b}})
local loaded = mx.nd.load(path)
os.remove(path)
print(('saved and reloaded: weight %.4f, bias %.4f'):format(loaded.weight:tonumber(), loaded.bias:tonumber()))
