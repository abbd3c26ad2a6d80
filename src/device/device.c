/* device.c — device lookup, the public context queries, and the primitive wrappers that
 * turn a missing table entry into a message naming the device (see device.h). */
#include "device.h"

#include "../core/status.h"
#include "../luamx.h"

int lmx_device_lookup(int dev_type, int dev_id, const lmx_device_ops **out) {
  const lmx_device_ops *ops = NULL;
  if (dev_type == LMX_CPU) ops = &lmx_cpu_device;
#ifdef LUAMX_WITH_CUDA
  if (dev_type == LMX_GPU) ops = &lmx_cuda_device;
#endif
  if (!ops && dev_type == LMX_GPU)
    return lmx_fail(LMX_ERR_DEVICE,
                    "context gpu(%d): this build of luamx has no CUDA support (0 GPUs)", dev_id);
  if (!ops)
    return lmx_fail(LMX_ERR_DEVICE, "unknown device type %d (expected 1 = cpu or 2 = gpu)",
                    dev_type);
  int n = ops->count();
  if (dev_id < 0 || dev_id >= n) {
    if (dev_type == LMX_GPU)
      return lmx_fail(LMX_ERR_DEVICE, "context gpu(%d) requested but %d GPU%s present", dev_id,
                      n, n == 1 ? " is" : "s are");
    return lmx_fail(LMX_ERR_DEVICE, "context cpu(%d): device id must be in 0..%d", dev_id, n - 1);
  }
  *out = ops;
  return LMX_OK;
}

const char *lmx_device_type_name(int dev_type) {
  return dev_type == LMX_CPU ? "cpu" : dev_type == LMX_GPU ? "gpu" : "device";
}

void *lmx_device_stream(const lmx_device_ops *d, int dev_id) {
  return d && d->stream ? d->stream(dev_id) : NULL;
}

int lmx_device_unsupported(const lmx_device_ops *d, int dev_id, const char *what) {
  return lmx_fail(LMX_ERR_UNSUPPORTED, "%s: not supported on %s(%d) in this build", what,
                  d ? d->name : "device", dev_id);
}

int lmx_num_gpus(void) {
#ifdef LUAMX_WITH_CUDA
  return lmx_cuda_device.count();
#else
  return 0;
#endif
}

int lmx_context_check(int dev_type, int dev_id) {
  lmx_clear_error();
  const lmx_device_ops *ops;
  return lmx_device_lookup(dev_type, dev_id, &ops);
}

/* ---- primitives through the table ----------------------------------------------------- */

int lmx_device_fill(const lmx_device_ops *d, int dev_id, void *p, int dt, int64_t n, double v) {
  if (n == 0) return LMX_OK;
  if (!d->fill) return lmx_device_unsupported(d, dev_id, "fill");
  return d->fill(dev_id, p, dt, n, v);
}

int lmx_device_add(const lmx_device_ops *d, int dev_id, int dt, int64_t n, void *y,
                   const void *x) {
  if (n == 0) return LMX_OK;
  if (!d->add) return lmx_device_unsupported(d, dev_id, "add");
  return d->add(dev_id, dt, n, y, x);
}

int lmx_device_sum_n(const lmx_device_ops *d, int dev_id, int dt, int64_t n, void *y,
                     const void *const *xs, int nx, int acc) {
  if (n == 0) return LMX_OK;
  if (!d->sum_n) return lmx_device_unsupported(d, dev_id, "sum_n");
  return d->sum_n(dev_id, dt, n, y, xs, nx, acc);
}

int lmx_device_convert(const lmx_device_ops *d, int dev_id, void *dst, int dt, const void *src,
                       int st, int64_t n) {
  if (n == 0) return LMX_OK;
  if (!d->convert) return lmx_device_unsupported(d, dev_id, "convert");
  return d->convert(dev_id, dst, dt, src, st, n);
}

int lmx_device_binary(const lmx_device_ops *d, int dev_id, int op, int dt, int ndim,
                      const int64_t *oshape, void *out, const int64_t *ashape, const void *a,
                      const int64_t *bshape, const void *b) {
  if (!d->binary) return lmx_device_unsupported(d, dev_id, "binary");
  return d->binary(dev_id, op, dt, ndim, oshape, out, ashape, a, bshape, b);
}

int lmx_device_scalar(const lmx_device_ops *d, int dev_id, int op, int dt, int64_t n, void *out,
                      const void *a, double s, int reverse) {
  if (n == 0) return LMX_OK;
  if (!d->scalar) return lmx_device_unsupported(d, dev_id, "scalar");
  return d->scalar(dev_id, op, dt, n, out, a, s, reverse);
}

int lmx_device_gemm(const lmx_device_ops *d, int dev_id, int dt, int ta, int tb, int64_t m,
                    int64_t n, int64_t k, double alpha, const void *A, const void *B, double beta,
                    void *C) {
  if (!d->gemm) return lmx_device_unsupported(d, dev_id, "gemm");
  return d->gemm(dev_id, dt, ta, tb, m, n, k, alpha, A, B, beta, C);
}
