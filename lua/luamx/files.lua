--- luamx.files — mx.nd.save / mx.nd.load in MXNet's NDArray-list format.
local ffi = require 'ffi'
local capi = require 'luamx.capi'
local nd = require 'luamx.ndarray'
local C, check = capi.C, capi.check

local M = {}

function M.install(mx)
  mx.nd.save = M.save
  mx.nd.load = M.load
end

return M
