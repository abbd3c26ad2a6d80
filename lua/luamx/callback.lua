--- luamx.callback — mx.callback: batch-end and epoch-end callbacks (MXNet 1.9
--- python/mxnet/callback.py).
--
--   mod:fit(it, {batch_end_callback = mx.callback.Speedometer(32, 50),
--                epoch_end_callback = mx.callback.do_checkpoint('model')})
--
-- Batch-end callbacks receive MXNet's BatchEndParam as a table
-- {epoch=, nbatch=, eval_metric=, locals=}; epoch-end callbacks receive
-- (epoch, symbol, arg_params, aux_params) with epoch counting from 0.
-- Log lines go through M.log (stderr by default; replace it to capture them) and keep
-- MXNet's exact formats. M.clock() (seconds, wall clock, sub-second) is replaceable too,
-- so timing-dependent output can be tested.
local ffi = require 'ffi'
local capi = require 'luamx.capi'
local raise = capi.raise

local M = {}

function M.log(msg) io.stderr:write(msg, '\n') end

-- ------------------------------------------------------------------ clock / tty ----
pcall(ffi.cdef, [[
  typedef struct { long tv_sec; long tv_usec; } lmx_cb_timeval;
  int gettimeofday(lmx_cb_timeval *tv, void *tz);
  int isatty(int fd);
]])
local tv = ffi.new('lmx_cb_timeval')
function M.clock()
  if ffi.C.gettimeofday(tv, nil) == 0 then return tonumber(tv.tv_sec) + tonumber(tv.tv_usec) * 1e-6 end
  return os.clock()
end

--- True when stdout is a terminal (TERM set, not 'dumb', and isatty(1)).
function M.stdout_is_terminal()
  local term = os.getenv('TERM')
  if not term or term == '' or term == 'dumb' then return false end
  local ok, r = pcall(function() return ffi.C.isatty(1) end)
  return ok and r == 1
end

local function metric_text(metric, fmt)
  local parts = {}
  for _, nv in ipairs(metric:get_name_value()) do parts[#parts + 1] = fmt:format(nv[1], nv[2]) end
  return parts
end

-- ------------------------------------------------------------------ Speedometer ----
--- Speedometer(batch_size, frequent=50, auto_reset=true): every `frequent` batches logs
--- 'Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec\t<name>=%f...' (auto_reset, and the
--- local metric is reset) or 'Epoch[%d] Batch [0-%d]\t...' (no auto_reset), or
--- 'Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec' without a metric. Under a dist kvstore
--- (fit passes rank and num_workers) batch_size is per worker, the speed is the global one
--- (times num_workers, all workers step together) and only rank 0 logs (unless all_ranks).
function M.Speedometer(batch_size, frequent, auto_reset)
  if type(batch_size) ~= 'number' or batch_size <= 0 then
    raise('mx.callback.Speedometer: batch_size must be a positive number, got ' .. tostring(batch_size))
  end
  frequent = frequent or 50
  if auto_reset == nil then auto_reset = true end
  local state = {init = false, tic = 0, last_count = 0}
  return function(param)
    local count = param.nbatch
    if state.last_count > count then state.init = false end
    state.last_count = count
    if not state.init then
      state.init, state.tic = true, M.clock()
      return
    end
    if count % frequent ~= 0 then return end
    local dt = M.clock() - state.tic
    local speed = dt > 0 and frequent * batch_size * (param.num_workers or 1) / dt or math.huge
    if (param.rank or 0) ~= 0 and not param.all_ranks then
      state.tic = M.clock()
      return
    end
    local m = param.eval_metric
    if m then
      local parts = metric_text(m, '\t%s=%f')
      if auto_reset then
        m:reset_local()
        M.log(('Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec'):format(param.epoch, count - frequent, count, speed)
          .. table.concat(parts))
      else
        M.log(('Epoch[%d] Batch [0-%d]\tSpeed: %.2f samples/sec'):format(param.epoch, count, speed) .. table.concat(parts))
      end
    else
      M.log(('Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec'):format(param.epoch, count, speed))
    end
    state.tic = M.clock()
  end
end

-- ------------------------------------------------------------------ ProgressBar ----
local function hms(s)
  s = math.max(0, math.floor(s + 0.5))
  return ('%d:%02d:%02d'):format(math.floor(s / 3600), math.floor(s / 60) % 60, s % 60)
end

--- ProgressBar(total, length=80 [, {out=file, tty=bool}]): '[===---] 42% <metric> ETA h:mm:ss'.
--- On a terminal the bar is redrawn in place with '\r' after every batch (a newline at
--- the end); otherwise a plain line is written each time the percentage passes a
--- multiple of 10 and at the end.
function M.ProgressBar(total, length, opts)
  if type(total) ~= 'number' or total <= 0 then
    raise('mx.callback.ProgressBar: total must be a positive number, got ' .. tostring(total))
  end
  length = length or 80
  opts = opts or {}
  local out = opts.out or io.stdout
  local tty = opts.tty
  if tty == nil then tty = M.stdout_is_terminal() end
  local state = {start = nil, last_decile = -1}
  return function(param)
    local count = param.nbatch
    if count <= 1 or not state.start then state.start, state.last_decile = M.clock(), -1 end
    local frac = math.min(count / total, 1)
    local filled = math.floor(length * frac + 0.5)
    local percents = math.ceil(100 * frac)
    local line = ('[%s%s] %d%%'):format(('='):rep(filled), ('-'):rep(length - filled), percents)
    if param.eval_metric then line = line .. ' ' .. table.concat(metric_text(param.eval_metric, '%s=%f'), ' ') end
    local elapsed = M.clock() - state.start
    if count > 0 and count < total then line = line .. ' ETA ' .. hms(elapsed / count * (total - count)) end
    if tty then
      out:write('\r', line, count >= total and '\n' or '')
      out:flush()
    else
      local decile = math.floor(percents / 10)
      if decile > state.last_decile or count >= total then
        state.last_decile = decile
        out:write(line, '\n')
      end
    end
  end
end

-- ------------------------------------------------------------------ checkpoints ----
--- do_checkpoint(prefix, period=1): an epoch-end callback saving every `period` epochs
--- through mx.model.save_checkpoint(prefix, epoch + 1, sym, arg, aux).
function M.do_checkpoint(prefix, period)
  if type(prefix) ~= 'string' then raise('mx.callback.do_checkpoint: prefix must be a string, got ' .. type(prefix)) end
  period = math.max(1, math.floor(period or 1))
  return function(iter_no, sym, arg, aux)
    if (iter_no + 1) % period == 0 then
      require('luamx.model').save_checkpoint(prefix, iter_no + 1, sym, arg, aux)
    end
  end
end

--- log_train_metric(period, auto_reset=false): logs 'Iter[%d] Batch[%d] Train-%s=%f'
--- for each metric value every `period` batches.
function M.log_train_metric(period, auto_reset)
  return function(param)
    if param.nbatch % period == 0 and param.eval_metric then
      for _, nv in ipairs(param.eval_metric:get_name_value()) do
        M.log(('Iter[%d] Batch[%d] Train-%s=%f'):format(param.epoch, param.nbatch, nv[1], nv[2]))
      end
      if auto_reset then param.eval_metric:reset_local() end
    end
  end
end

function M.install(mx)
  mx.callback = M
  return M
end

return M
