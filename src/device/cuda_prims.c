/* cuda_prims.c — the CUDA device table's array primitives (see cuda_prims.h) on the
 * device's stream: fill (every dtype), add and sum_n (float32 / float64 / float16 through
 * the elementwise kernels, other dtypes through the array binary op, as the CPU table
 * does), convert (every pair of dtypes, float16 bit-exact with the CPU), the broadcast
 * binary op and the scalar op (every dtype), and the counter-based random draws
 * (Philox4x32-10, kernels/cuda/lmx_philox.h: element i reads counter block offset + i / 4,
 * or offset + i / 2 in float64, so n draws use at most n counters from offset, within
 * what lmx_rng_device_key reserves). A launcher's -1 (a dtype it does not take)
 * becomes LMX_ERR_DTYPE and any CUDA error LMX_ERR_DEVICE, both naming gpu(<id>) and the
 * primitive. Compiled to nothing without LUAMX_WITH_CUDA. */
#ifdef LUAMX_WITH_CUDA
#include "cuda_prims.h"

#include "../../kernels/cuda/cuda_kernels.h"
#include "../core/status.h"
#include "../tensor/dtype.h"
#include "device.h"

static lmx_cu_stream stream_of(int dev_id) {
  return (lmx_cu_stream)lmx_device_stream(&lmx_cuda_device, dev_id);
}

static int result(int dev_id, const char *what, int dt, int rc) {
  if (rc == 0) return LMX_OK;
  if (rc == -1)
    return lmx_fail(LMX_ERR_DTYPE, "gpu(%d): %s: dtype %s is not supported", dev_id, what,
                    lmx_dtype_str(dt));
  return lmx_fail(LMX_ERR_DEVICE, "gpu(%d): %s: CUDA error %d", dev_id, what, rc);
}

static int is_float(int dt) {
  return dt == LMX_FLOAT32 || dt == LMX_FLOAT64 || dt == LMX_FLOAT16;
}

int lmx_cuda_prim_fill(int dev_id, void *p, int dt, int64_t n, double v) {
  return result(dev_id, "fill", dt, lmx_cu_fill(stream_of(dev_id), p, dt, n, v));
}

int lmx_cuda_prim_add(int dev_id, int dt, int64_t n, void *y, const void *x) {
  lmx_cu_stream s = stream_of(dev_id);
  if (is_float(dt)) return result(dev_id, "add", dt, lmx_cu_scale(s, dt, n, y, x, 1.0, 1));
  return result(dev_id, "add", dt, lmx_cu_binary(s, LMX_BIN_ADD, dt, 1, &n, y, &n, y, &n, x));
}

int lmx_cuda_prim_sum_n(int dev_id, int dt, int64_t n, void *y, const void *const *xs, int nx,
                        int acc) {
  if (nx < 1)
    return lmx_fail(LMX_ERR_ARG, "gpu(%d): sum_n: expected at least 1 array, got %d", dev_id, nx);
  lmx_cu_stream s = stream_of(dev_id);
  if (is_float(dt)) return result(dev_id, "sum_n", dt, lmx_cu_sum_n(s, dt, n, y, xs, nx, acc));
  int i = 0;
  if (!acc) { /* y = xs[0] first (a no-op when y is xs[0]) */
    LMX_TRY(result(dev_id, "sum_n", dt, lmx_cu_scale(s, dt, n, y, xs[0], 1.0, 0)));
    i = 1;
  }
  for (; i < nx; i++) LMX_TRY(lmx_cuda_prim_add(dev_id, dt, n, y, xs[i]));
  return LMX_OK;
}

int lmx_cuda_prim_convert(int dev_id, void *dst, int dt, const void *src, int st, int64_t n) {
  if (!lmx_dtype_valid(st)) return result(dev_id, "convert", st, -1);
  return result(dev_id, "convert", dt, lmx_cu_convert(stream_of(dev_id), dst, dt, src, st, n));
}

int lmx_cuda_prim_binary(int dev_id, int op, int dt, int ndim, const int64_t *oshape, void *out,
                         const int64_t *ashape, const void *a, const int64_t *bshape,
                         const void *b) {
  return result(dev_id, "binary", dt,
                lmx_cu_binary(stream_of(dev_id), op, dt, ndim, oshape, out, ashape, a, bshape, b));
}

int lmx_cuda_prim_scalar(int dev_id, int op, int dt, int64_t n, void *out, const void *a,
                         double s, int reverse) {
  return result(dev_id, "scalar", dt,
                lmx_cu_scalar(stream_of(dev_id), op, dt, n, out, a, s, reverse));
}
int lmx_cuda_prim_random(int dev_id, int dist, int dt, int64_t n, void *p, double a, double b,
                         uint64_t seed, uint64_t offset) {
  lmx_cu_stream s = stream_of(dev_id);
  if (dist == LMX_RAND_UNIFORM)
    return result(dev_id, "random", dt, lmx_cu_random_uniform(s, dt, n, p, a, b, seed, offset));
  if (dist == LMX_RAND_NORMAL)
    return result(dev_id, "random", dt, lmx_cu_random_normal(s, dt, n, p, a, b, seed, offset));
  return lmx_fail(LMX_ERR_ARG, "gpu(%d): random: unknown distribution %d", dev_id, dist);
}
#else
typedef int lmx_cuda_prims_unused; /* keeps the translation unit non-empty */
#endif
