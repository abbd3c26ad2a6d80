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

--- Where log lines go (stderr); replace it to capture them.
function M.log(msg) io.stderr:write(msg, '\n') end

-- ------------------------------------------------------------------ clock / tty ----
pcall(ffi.cdef, [[
  typedef struct { long tv_sec; long tv_usec; } lmx_cb_timeval;
  int gettimeofday(lmx_cb_timeval *tv, void *tz);
  int isatty(int fd);
]])
local tv = ffi.new('lmx_cb_timeval')
--- Wall-clock seconds with sub-second resolution (replaceable in tests).
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

--- ProgressBar(total, length=80 [, {out=file, tty=bool}]): a batch-end callback drawing
--- '[===---]  42% 21/50 3140 samples/s ETA 0:00:03 accuracy=0.912'.
--- On a terminal the bar is redrawn in place ('\r', then the line, then ESC[K, which
--- clears what a longer earlier frame left) after every batch; the last frame shows the
--- total time instead of the ETA and ends the line. Otherwise a plain line is written
--- each time the percentage passes a multiple of 10 and at the end. Throughput is in
--- samples/s when the batch is known (param.locals.data_batch), else batches/s.
-- @param total number of batches in an epoch
-- @param length width of the bar in characters
-- @param opts `out` (a file, default io.stdout), `tty` (default: stdout is a terminal)
-- @usage mod:fit(it, {num_epoch = 5, batch_end_callback = mx.callback.ProgressBar(47, 40)})
function M.ProgressBar(total, length, opts)
  if type(total) ~= 'number' or total <= 0 then
    raise('mx.callback.ProgressBar: total must be a positive number, got ' .. tostring(total))
  end
  length = length or 80
  opts = opts or {}
  local out = opts.out or io.stdout
  local tty = opts.tty
  if tty == nil then tty = M.stdout_is_terminal() end
  local state = {start = nil, last_decile = -1, samples = 0}
  return function(param)
    local count = param.nbatch
    if count <= 1 or not state.start then state.start, state.last_decile, state.samples = M.clock(), -1, 0 end
    local batch = param.locals and param.locals.data_batch
    local bs
    if batch and batch.data and batch.data[1] then
      local ok, shape = pcall(function() return batch.data[1].shape end)
      if ok and shape then bs = shape[1] - (batch.pad or 0) end
    end
    state.samples = state.samples + (bs or 0)
    local frac = math.min(count / total, 1)
    local filled = math.floor(length * frac + 0.5)
    local percents = math.floor(100 * frac + 1e-9)
    local elapsed = M.clock() - state.start
    local line = ('[%s%s] %3d%% %d/%d'):format(('='):rep(filled), ('-'):rep(length - filled), percents,
      count, total)
    if elapsed > 0 and count > 0 then
      if bs then line = line .. (' %.0f samples/s'):format(state.samples / elapsed)
      else line = line .. (' %.1f batches/s'):format(count / elapsed) end
    end
    local done = count >= total
    if done then line = line .. ' in ' .. hms(elapsed)
    elseif count > 0 then line = line .. ' ETA ' .. hms(elapsed / count * (total - count)) end
    if param.eval_metric then line = line .. ' ' .. table.concat(metric_text(param.eval_metric, '%s=%f'), ' ') end
    if tty then
      out:write('\r', line, '\27[K', done and '\n' or '')
      out:flush()
    else
      local decile = math.floor(percents / 10)
      if decile > state.last_decile or done then
        state.last_decile = decile
        out:write(line, '\n')
      end
    end
  end
end

-- ------------------------------------------------------------------ LogMetrics ----
--- LogMetrics([{every = N}]): records training and validation metrics for plotting.
--- Pass `rec.batch_end_callback` as fit's batch_end_callback (with any others, as a
--- list) and `rec.eval_end_callback` as its eval_end_callback; `fit{plot = path}` does
--- both. Per epoch it keeps the training metrics of the epoch's last batch and the
--- validation metrics; every N batches (when `every` is given) the running training
--- metrics too. `rec:plot(path)` draws them (mx.viz.plot_metrics).
-- @param opts `every`: also record every N batches (default: per epoch only)
-- @return a recorder: `epochs` = {{epoch =, train = {name = v}, validation = {...}}},
--   `batches` = {{x = epoch + fraction, train = {...}}}
-- @usage local rec = mx.callback.LogMetrics{every = 10}
-- mod:fit(train, {num_epoch = 5, eval_data = val,
--   batch_end_callback = rec.batch_end_callback, eval_end_callback = rec.eval_end_callback})
-- rec:plot('curve.png')
function M.LogMetrics(opts)
  opts = opts or {}
  if type(opts) ~= 'table' then raise('mx.callback.LogMetrics: expected a table of options, got ' .. type(opts)) end
  local every = opts.every
  if every ~= nil and (type(every) ~= 'number' or every < 1) then
    raise('mx.callback.LogMetrics: every must be a positive number of batches, got ' .. tostring(every))
  end
  local rec = {epochs = {}, batches = {}, every = every}
  local per_epoch = {} -- epoch -> row
  local last_n = {}
  local function row(epoch)
    local r = per_epoch[epoch]
    if not r then
      r = {epoch = epoch, train = {}, validation = {}}
      per_epoch[epoch] = r
      rec.epochs[#rec.epochs + 1] = r
    end
    return r
  end
  local function values(metric, global)
    local t = {}
    local nv = global and metric.get_global_name_value and metric:get_global_name_value() or metric:get_name_value()
    for _, p in ipairs(nv) do t[p[1]] = p[2] end
    return t
  end
  rec.batch_end_callback = function(param)
    if not param.eval_metric then return end
    local r = row(param.epoch)
    r.train = values(param.eval_metric, true)
    last_n[param.epoch] = param.nbatch + 1
    if every and (param.nbatch + 1) % every == 0 then
      rec.batches[#rec.batches + 1] = {epoch = param.epoch, nbatch = param.nbatch + 1,
        train = values(param.eval_metric, true)}
    end
  end
  rec.eval_end_callback = function(param)
    if param.eval_metric then row(param.epoch).validation = values(param.eval_metric, true) end
  end
  -- batches per epoch, known once an epoch has ended: the x of batch points
  function rec.batches_per_epoch() return last_n[0] or last_n[next(last_n)] end
  rec.plot = function(self, path, popts) return require('luamx.viz').plot_metrics(self, path, popts) end
  return rec
end

-- ------------------------------------------------------------------ checkpoints ----
--- do_checkpoint(prefix, period=1): an epoch-end callback saving every `period` epochs
--- through mx.model.save_checkpoint(prefix, epoch + 1, sym, arg, aux).
function M.do_checkpoint(prefix, period)
  if type(prefix) ~= 'string' then raise('mx.callback.do_checkpoint: prefix must be a string, got ' .. type(prefix)) end
  require('luamx.check').number('mx.callback.do_checkpoint', 'period', period, {optional = true, min = 1})
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

--- Adds mx.callback.
function M.install(mx)
  mx.callback = M
  return M
end

return M
