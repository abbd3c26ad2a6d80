/* gemm_batch.c — strided batched products on OpenBLAS (the CPU twin of a strided-batched
 * cuBLAS call): one lmx_cpu_gemm_ld per batch, operands addressed in place, so
 * interleaved layouts (the fused attention matmuls) need no copies. The loop is serial:
 * OpenBLAS threads each large product itself, and nothing here opens a parallel region
 * around BLAS (gemm.c, cpu_par.h). */
#include "../../src/tensor/dtype.h"
#include "cpu_kernels.h"

static int64_t max1(int64_t v) { return v > 0 ? v : 1; }

void lmx_cpu_gemm_sbatch(int dt, int64_t batch, int ta, int tb, int64_t m, int64_t n,
                         int64_t k, double alpha, const void *A, int64_t lda, int64_t sa,
                         const void *B, int64_t ldb, int64_t sb, double beta, void *C,
                         int64_t ldc, int64_t sc) {
  if (batch <= 0 || m == 0 || n == 0) return;
  size_t es = (size_t)lmx_dtype_size(dt);
  for (int64_t i = 0; i < batch; i++)
    lmx_cpu_gemm_ld(dt, ta, tb, m, n, k, alpha, (const char *)A + (size_t)(i * sa) * es,
                    max1(lda), (const char *)B + (size_t)(i * sb) * es, max1(ldb), beta,
                    (char *)C + (size_t)(i * sc) * es, max1(ldc));
}
