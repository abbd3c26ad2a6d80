/* gemm_batch.c — strided batched products (the CPU twin of a strided-batched cuBLAS
 * call): one routed lmx_cpu_gemm_ld per batch, operands addressed in place, so
 * interleaved layouts (the fused attention matmuls) need no copies. Large products run in
 * order, each threaded by its library. Small ones (below LMX_GEMM_SERIAL, which gemm.c
 * runs on the calling thread alone) go over the threads, one product per thread at a time,
 * when no OpenMP region is open: Winograd's 16 or 36 products at batch 1 (128x64x128 for
 * a 16x16 ResNet plane) had run one after another on one core while the other waited.
 * Each product is computed whole by one thread, so the results do not depend on the
 * split; inside the region gemm.c runs every call single-threaded. */
#include <omp.h>

#include "../../src/tensor/dtype.h"
#include "cpu_kernels.h"
#include "cpu_par.h"

static int64_t max1(int64_t v) { return v > 0 ? v : 1; }

typedef struct {
  int dt, ta, tb;
  int64_t m, n, k, lda, ldb, ldc, sa, sb, sc;
  double alpha, beta;
  const char *A, *B;
  char *C;
  size_t es;
} sbatch;

static void product(const sbatch *b, int64_t i) {
  lmx_cpu_gemm_ld(b->dt, b->ta, b->tb, b->m, b->n, b->k, b->alpha,
                  b->A + (size_t)(i * b->sa) * b->es, b->lda,
                  b->B + (size_t)(i * b->sb) * b->es, b->ldb, b->beta,
                  b->C + (size_t)(i * b->sc) * b->es, b->ldc);
}

void lmx_cpu_gemm_sbatch(int dt, int64_t batch, int ta, int tb, int64_t m, int64_t n,
                         int64_t k, double alpha, const void *A, int64_t lda, int64_t sa,
                         const void *B, int64_t ldb, int64_t sb, double beta, void *C,
                         int64_t ldc, int64_t sc) {
  if (batch <= 0 || m == 0 || n == 0) return;
  sbatch b = {dt, ta, tb, m, n, k, max1(lda), max1(ldb), max1(ldc), sa, sb, sc, alpha, beta,
              A, B, C, (size_t)lmx_dtype_size(dt)};
  int t = omp_get_level() > 0 ? 1 : omp_get_max_threads();
  int64_t mnk = m * n * k;
  if (t > 1 && batch > 1 && mnk < LMX_GEMM_SERIAL && batch * mnk >= LMX_OMP_MIN) {
    if (t > batch) t = (int)batch;
#pragma omp parallel for num_threads(t) schedule(static)
    for (int64_t i = 0; i < batch; i++) product(&b, i);
    return;
  }
  for (int64_t i = 0; i < batch; i++) product(&b, i);
}
