/* cuda.c — the GPU device table over the CUDA runtime (built only with CUDA).
 *
 * Device memory comes from cudaMalloc; copies are synchronous cudaMemcpy for now (the
 * executor issue moves them onto per-device streams). count() asks the runtime once;
 * with no driver or no device it is 0, so gpu(0) gives a clear LMX_ERR_DEVICE.
 */
#include <cuda_runtime_api.h>

#include "../core/status.h"
#include "../luamx.h"
#include "cuda_prims.h"
#include "device.h"

static int cuda_count(void) {
  static int n = -1;
  if (n < 0) {
    int c = 0;
    if (cudaGetDeviceCount(&c) != cudaSuccess) c = 0;
    n = c;
  }
  return n;
}

static int check(cudaError_t e, const char *what, int dev_id) {
  if (e == cudaSuccess) return LMX_OK;
  return lmx_fail(e == cudaErrorMemoryAllocation ? LMX_ERR_NOMEM : LMX_ERR_DEVICE,
                  "gpu(%d): %s failed: %s", dev_id, what, cudaGetErrorString(e));
}

static int cuda_alloc(int dev_id, size_t bytes, void **out) {
  LMX_TRY(check(cudaSetDevice(dev_id), "cudaSetDevice", dev_id));
  return check(cudaMalloc(out, bytes ? bytes : 1), "cudaMalloc", dev_id);
}

static void cuda_release(int dev_id, void *p) {
  if (cudaSetDevice(dev_id) == cudaSuccess) cudaFree(p);
}

static int cuda_zero(int dev_id, void *p, size_t bytes) {
  LMX_TRY(check(cudaSetDevice(dev_id), "cudaSetDevice", dev_id));
  return check(cudaMemset(p, 0, bytes), "cudaMemset", dev_id);
}

static int cuda_copy(int dev_id, void *dst, const void *src, size_t bytes, int dir) {
  enum cudaMemcpyKind kind = dir == LMX_COPY_H2D   ? cudaMemcpyHostToDevice
                             : dir == LMX_COPY_D2H ? cudaMemcpyDeviceToHost
                                                   : cudaMemcpyDeviceToDevice;
  LMX_TRY(check(cudaSetDevice(dev_id), "cudaSetDevice", dev_id));
  return check(cudaMemcpy(dst, src, bytes, kind), "cudaMemcpy", dev_id);
}

static int cuda_sync(int dev_id) {
  LMX_TRY(check(cudaSetDevice(dev_id), "cudaSetDevice", dev_id));
  return check(cudaDeviceSynchronize(), "cudaDeviceSynchronize", dev_id);
}

const lmx_device_ops lmx_cuda_device = {
    .name = "gpu",
    .count = cuda_count,
    .alloc = cuda_alloc,
    .release = cuda_release,
    .zero = cuda_zero,
    .copy = cuda_copy,
    .sync = cuda_sync,
    /* array primitives: src/device/cuda_prims.c (K1) */
    .fill = lmx_cuda_prim_fill, .add = lmx_cuda_prim_add, .sum_n = lmx_cuda_prim_sum_n,
    .convert = lmx_cuda_prim_convert, .binary = lmx_cuda_prim_binary,
    .scalar = lmx_cuda_prim_scalar, .random = lmx_cuda_prim_random,
};
