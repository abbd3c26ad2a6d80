/* cuda.c — the GPU device table (built only with CUDA: the real runtime or the
 * simulator's stand-in).
 *
 * Each entry finds the device's state (cuda_state.c: created on first use, made
 * current for the calling thread) and queues its work on the device's one stream:
 * memory comes from the caching allocator, zeroing is cudaMemsetAsync, copies go
 * through cuda_copy.c, and only sync() and copies to host memory wait. count() asks the
 * runtime once; with no driver or no device it is 0, and gpu(n) is a clear
 * LMX_ERR_DEVICE naming the runtime's reason.
 *
 * The array-level primitives (fill, add, sum_n, convert, binary, scalar, gemm) are the
 * CUDA kernels' (kernels/cuda via their glue); entries left NULL are reported by the
 * lmx_device_* wrappers as "not supported on gpu(n) in this build".
 */
#include <cuda_runtime_api.h>
#include <string.h>

#include "../core/status.h"
#include "../luamx.h"
#include "cuda_prims.h"
#include "cuda_state.h"
#include "device.h"

static int cuda_count(void) { return lmx_cuda_count(); }

static int cuda_alloc(int dev_id, size_t bytes, void **out) {
  lmx_cuda_dev *d;
  LMX_TRY(lmx_cuda_dev_get(dev_id, &d));
  return lmx_cache_alloc(d->cache, bytes, out);
}

/* Back to the cache, whatever state the device is in (a broken device keeps its
 * blocks: the context is gone anyway). The stream's order makes reuse safe. */
static void cuda_release(int dev_id, void *p) {
  lmx_cuda_dev *d = lmx_cuda_dev_peek(dev_id);
  if (d && p) lmx_cache_release(d->cache, p);
}

static int cuda_zero(int dev_id, void *p, size_t bytes) {
  lmx_cuda_dev *d;
  LMX_TRY(lmx_cuda_dev_get(dev_id, &d));
  if (bytes == 0) return LMX_OK;
  return lmx_cuda_check(d, cudaMemsetAsync(p, 0, bytes, d->stream), "cudaMemsetAsync");
}

static int cuda_copy(int dev_id, void *dst, const void *src, size_t bytes, int dir) {
  lmx_cuda_dev *d;
  LMX_TRY(lmx_cuda_dev_get(dev_id, &d));
  return lmx_cuda_copy(d, dst, src, bytes, dir);
}

static int cuda_copy_peer(int dst_id, void *dst, int src_id, const void *src, size_t bytes) {
  lmx_cuda_dev *dd, *sd;
  LMX_TRY(lmx_cuda_dev_get(src_id, &sd));
  LMX_TRY(lmx_cuda_dev_get(dst_id, &dd));
  return lmx_cuda_copy_peer(dd, dst, sd, src, bytes);
}

/* A device never used has nothing queued: nothing to wait for, nothing created. */
static int cuda_sync(int dev_id) {
  lmx_cuda_dev *d = lmx_cuda_dev_peek(dev_id);
  if (!d && dev_id >= 0 && dev_id < lmx_cuda_count()) return LMX_OK;
  LMX_TRY(lmx_cuda_dev_get(dev_id, &d));
  return lmx_cuda_sync_dev(d);
}

static lmx_device_state *cuda_state(int dev_id) {
  lmx_cuda_dev *d;
  if (lmx_cuda_dev_get(dev_id, &d) != LMX_OK) {
    lmx_clear_error();
    return NULL;
  }
  return (lmx_device_state *)d;
}

static int cuda_memory(int dev_id, int64_t *fig, int n) {
  int64_t f[LMX_GPUMEM_NUM_FIGURES] = {0};
  lmx_cuda_dev *d = NULL;
  LMX_TRY(lmx_cuda_dev_get(dev_id, &d)); /* the device must exist; creates its state */
  size_t fr = 0, tot = 0;
  LMX_TRY(lmx_cache_mem_info(d->cache, &fr, &tot));
  lmx_cache_stats s;
  lmx_cache_get_stats(d->cache, &s);
  f[LMX_GPUMEM_FREE] = (int64_t)fr;
  f[LMX_GPUMEM_TOTAL] = (int64_t)tot;
  f[LMX_GPUMEM_IN_USE] = s.in_use;
  f[LMX_GPUMEM_CACHED] = s.cached;
  f[LMX_GPUMEM_PEAK] = s.peak;
  f[LMX_GPUMEM_LIVE_BLOCKS] = s.live_blocks;
  f[LMX_GPUMEM_CACHED_BLOCKS] = s.cached_blocks;
  f[LMX_GPUMEM_REQUESTS] = s.requests;
  f[LMX_GPUMEM_CACHE_HITS] = s.cache_hits;
  f[LMX_GPUMEM_RAW_ALLOCS] = s.raw_allocs;
  f[LMX_GPUMEM_RAW_FREES] = s.raw_frees;
  f[LMX_GPUMEM_OOM_RETRIES] = s.oom_retries;
  f[LMX_GPUMEM_OOMS] = s.ooms;
  if (n > LMX_GPUMEM_NUM_FIGURES) n = LMX_GPUMEM_NUM_FIGURES;
  memcpy(fig, f, (size_t)n * sizeof *fig);
  return LMX_OK;
}

static size_t cuda_empty_cache(int dev_id) {
  lmx_cuda_dev *d = lmx_cuda_dev_peek(dev_id);
  return d ? lmx_cache_empty(d->cache) : 0;
}

const lmx_device_ops lmx_cuda_device = {
    .name = "gpu",
    .count = cuda_count,
    .alloc = cuda_alloc,
    .release = cuda_release,
    .zero = cuda_zero,
    .copy = cuda_copy,
    .sync = cuda_sync,
    .state = cuda_state,
    .stream = lmx_cuda_stream,
    .memory = cuda_memory,
    .empty_cache = cuda_empty_cache,
    .copy_peer = cuda_copy_peer,
    .note_op = lmx_cuda_note_op,
#ifndef LMX_CUDA_RUNTIME_ONLY /* tests/fake_cuda builds the runtime without kernels */
    /* array primitives on the device's kernels: src/device/cuda_prims.c, cuda_gemm.c */
    .fill = lmx_cuda_prim_fill, .add = lmx_cuda_prim_add, .sum_n = lmx_cuda_prim_sum_n,
    .convert = lmx_cuda_prim_convert, .binary = lmx_cuda_prim_binary,
    .scalar = lmx_cuda_prim_scalar, .random = lmx_cuda_prim_random,
    .gemm = lmx_cuda_prim_gemm,
#endif
};
