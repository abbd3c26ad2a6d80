/* cpu.c — the CPU device table. Memory comes from the engine allocator (counted,
 * fault-injectable, 64-byte aligned); copies are memcpy; sync is a no-op because CPU
 * work is done when the call returns, so the CPU has no stream and no per-device state.
 * The array-level primitives (device.h) run kernels/cpu on the calling thread. Several
 * CPU ids (cpu(0), cpu(1), ...) share the host memory; they differ in which thread runs
 * their work (executor groups). */
#include <string.h>

#include "../../kernels/cpu/cpu_kernels.h"
#include "../core/alloc.h"
#include "../core/status.h"
#include "../luamx.h"
#include "../tensor/dtype.h"
#include "device.h"

static int cpu_count(void) { return LMX_MAX_CPU_ID + 1; }

static int cpu_alloc(int dev_id, size_t bytes, void **out) {
  (void)dev_id;
  void *p = lmx_alloc(bytes ? bytes : 1);
  if (!p) return lmx_fail_nomem("array storage on cpu", bytes);
  *out = p;
  return LMX_OK;
}

static void cpu_release(int dev_id, void *p) {
  (void)dev_id;
  lmx_free(p);
}

static int cpu_zero(int dev_id, void *p, size_t bytes) {
  (void)dev_id;
  memset(p, 0, bytes);
  return LMX_OK;
}

static int cpu_copy(int dev_id, void *dst, const void *src, size_t bytes, int dir) {
  (void)dev_id;
  (void)dir;
  if (dst != src) memmove(dst, src, bytes);
  return LMX_OK;
}

static int cpu_sync(int dev_id) {
  (void)dev_id;
  return LMX_OK;
}

/* ---- primitives ------------------------------------------------------------------------ */

static int bad_dtype(int dev_id, const char *what, int dt) {
  return lmx_fail(LMX_ERR_DTYPE, "cpu(%d): %s: dtype %s is not supported", dev_id, what,
                  lmx_dtype_str(dt));
}

static int cpu_fill(int dev_id, void *p, int dt, int64_t n, double v) {
  if (!lmx_dtype_valid(dt)) return bad_dtype(dev_id, "fill", dt);
  lmx_cpu_fill(p, dt, n, v);
  return LMX_OK;
}

static int cpu_add(int dev_id, int dt, int64_t n, void *y, const void *x) {
  if (!lmx_dtype_valid(dt)) return bad_dtype(dev_id, "add", dt);
  if (lmx_cpu_scale(dt, n, y, x, 1.0, 1) == 0) return LMX_OK; /* float types */
  lmx_cpu_binary(LMX_BIN_ADD, dt, 1, &n, y, &n, y, &n, x);  /* other dtypes, via doubles */
  return LMX_OK;
}

static int cpu_sum_n(int dev_id, int dt, int64_t n, void *y, const void *const *xs, int nx,
                     int acc) {
  if (!lmx_dtype_valid(dt)) return bad_dtype(dev_id, "sum_n", dt);
  if (nx < 1)
    return lmx_fail(LMX_ERR_ARG, "cpu(%d): sum_n: expected at least 1 array, got %d", dev_id,
                    nx);
  int i = 0;
  if (!acc) { /* y = xs[0] first (a no-op when y is xs[0]) */
    lmx_cpu_scale(dt, n, y, xs[0], 1.0, 0);
    i = 1;
  }
  for (; i < nx; i++) LMX_TRY(cpu_add(dev_id, dt, n, y, xs[i]));
  return LMX_OK;
}

static int cpu_convert(int dev_id, void *dst, int dt, const void *src, int st, int64_t n) {
  if (!lmx_dtype_valid(dt)) return bad_dtype(dev_id, "convert", dt);
  if (!lmx_dtype_valid(st)) return bad_dtype(dev_id, "convert", st);
  lmx_cpu_convert(dst, dt, src, st, n);
  return LMX_OK;
}

static int cpu_binary(int dev_id, int op, int dt, int ndim, const int64_t *oshape, void *out,
                      const int64_t *ashape, const void *a, const int64_t *bshape,
                      const void *b) {
  if (!lmx_dtype_valid(dt)) return bad_dtype(dev_id, "binary", dt);
  lmx_cpu_binary(op, dt, ndim, oshape, out, ashape, a, bshape, b);
  return LMX_OK;
}

static int cpu_scalar(int dev_id, int op, int dt, int64_t n, void *out, const void *a, double s,
                      int reverse) {
  if (!lmx_dtype_valid(dt)) return bad_dtype(dev_id, "scalar", dt);
  lmx_cpu_scalar(op, dt, n, out, a, s, reverse);
  return LMX_OK;
}

static int cpu_gemm(int dev_id, int dt, int ta, int tb, int64_t m, int64_t n, int64_t k,
                    double alpha, const void *A, const void *B, double beta, void *C) {
  if (dt != LMX_FLOAT32 && dt != LMX_FLOAT64) return bad_dtype(dev_id, "gemm", dt);
  lmx_cpu_gemm(dt, ta, tb, m, n, k, alpha, A, B, beta, C);
  return LMX_OK;
}

const lmx_device_ops lmx_cpu_device = {
    .name = "cpu",
    .count = cpu_count,
    .alloc = cpu_alloc,
    .release = cpu_release,
    .zero = cpu_zero,
    .copy = cpu_copy,
    .sync = cpu_sync,
    .state = NULL,  /* no per-device state */
    .stream = NULL, /* work is done when a call returns */
    .fill = cpu_fill,
    .add = cpu_add,
    .sum_n = cpu_sum_n,
    .convert = cpu_convert,
    .binary = cpu_binary,
    .scalar = cpu_scalar,
    .gemm = cpu_gemm,
};
