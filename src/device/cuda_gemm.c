/* cuda_gemm.c — the CUDA device table's `gemm` primitive (device.h): row-major
 * C = alpha op(A) op(B) + beta C on the device's stream through kernels/cuda's GEMM
 * (cuBLAS opened at run time; OpenBLAS in the simulator build). The device table
 * (cuda.c) lists it as `.gemm = lmx_cuda_prim_gemm`. Statuses as device.h asks:
 * LMX_ERR_DTYPE for a dtype other than float32 / float64 / float16, LMX_ERR_DEVICE
 * naming gpu(<id>) and the cause otherwise.
 */
#ifdef LUAMX_WITH_CUDA
#include "../../kernels/cuda/cu_gemm.h"
#include "../core/status.h"
#include "../luamx.h"
#include "../tensor/dtype.h"
#include "cuda_prims.h"
#include "device.h"

int lmx_cuda_prim_gemm(int dev_id, int dt, int ta, int tb, int64_t m, int64_t n, int64_t k,
                       double alpha, const void *A, const void *B, double beta, void *C) {
  void *s = lmx_cuda_device.stream ? lmx_cuda_device.stream(dev_id) : NULL;
  int rc = lmx_cu_gemm((lmx_cu_stream)s, dt, ta, tb, m, n, k, alpha, A, B, beta, C);
  switch (rc) {
    case 0: return LMX_OK;
    case -1:
      return lmx_fail(LMX_ERR_DTYPE, "gpu(%d): gemm: dtype %s is not float32, float64 or "
                      "float16", dev_id, lmx_dtype_str(dt));
    case LMX_CU_GEMM_EARG:
      return lmx_fail(LMX_ERR_ARG, "gpu(%d): gemm: dims m=%lld n=%lld k=%lld out of cuBLAS's "
                      "range", dev_id, (long long)m, (long long)n, (long long)k);
    case LMX_CU_GEMM_ELIB:
      return lmx_fail(LMX_ERR_DEVICE, "gpu(%d): gemm: %s", dev_id, lmx_cu_blas_error());
    default:
      if (rc >= LMX_CU_GEMM_EBLAS)
        return lmx_fail(LMX_ERR_DEVICE, "gpu(%d): gemm: cuBLAS status %d", dev_id,
                        rc - LMX_CU_GEMM_EBLAS);
      return lmx_fail(LMX_ERR_DEVICE, "gpu(%d): gemm: CUDA error %d", dev_id, rc);
  }
}
#else
typedef int lmx_cuda_gemm_unused; /* CPU-only builds: nothing here */
#endif
