/* gemm.c — matrix products on OpenBLAS (cblas, row-major), float32 ones also on oneDNN.
 *
 * Small products run on one thread: OpenBLAS's OpenMP build takes its thread count from
 * omp_get_max_threads() at each call and splits anything above m·n·k = 256k over every
 * thread, so a 128x10x512 product (W1's last layer) paid a fork/join and the packing of
 * both halves for ~1 MFLOP of work (perf: a third of its time in libgomp and
 * sched_yield, and up to a scheduler slice when the other core is busy). Below
 * LMX_GEMM_SERIAL (m·n·k) the calling thread's OpenMP thread count is set to 1 for the
 * call and restored after, which OpenBLAS follows; measured with bench/ops.lua (FC
 * 512->10). Inside any OpenMP region, active or not (omp_get_level() > 0), the count
 * is set to 1 too: OpenBLAS 0.3.21 and oneDNN test omp_in_parallel(), which is false in
 * a region whose if-clause made it a team of one, and would then open a nested team
 * for which libgomp creates and ends fresh threads at every call (MobileNet v2 at batch
 * 1 with 2 threads: ~37 thread creations per forward, 10x the one-thread time).
 *
 * float32 products whose shape oneDNN runs faster go to oneDNN's matmul primitive
 * (gemm_route.c decides, gemm_dnnl.c runs it; OpenBLAS when oneDNN is absent or fails).
 * oneDNN follows the same OpenMP thread count. Products routed to oneDNN can also take an
 * epilogue (lmx_cpu_gemm_ep: a bias row and an activation applied while each output is in
 * registers), which FullyConnected followed by Activation uses (linalg.c).
 */
#include <cblas.h>
#include <omp.h>

#include "cpu_kernels.h"
#include "gemm_route.h"

/* One product on the library the route picks for `threads` threads. With an epilogue
 * (bias or act) only oneDNN can run it: -1 then, nothing written, when it does not. */
static int gemm_call(int dt, enum CBLAS_TRANSPOSE TA, enum CBLAS_TRANSPOSE TB, int64_t m,
                     int64_t n, int64_t k, double alpha, const void *A, int64_t lda,
                     const void *B, int64_t ldb, double beta, void *C, int64_t ldc,
                     int threads, const float *bias, int act) {
  if (dt == LMX_FLOAT32 &&
      lmx_gemm_route(dt, TA == CblasTrans, TB == CblasTrans, m, n, k, threads) ==
          LMX_GEMM_LIB_DNNL &&
      lmx_gemm_dnnl_ep(TA == CblasTrans, TB == CblasTrans, m, n, k, (float)alpha, A, lda, B,
                       ldb, (float)beta, C, ldc, threads, bias, act) == 0)
    return 0;
  if (bias || act) return -1;
  if (dt == LMX_FLOAT32)
    cblas_sgemm(CblasRowMajor, TA, TB, (blasint)m, (blasint)n, (blasint)k, (float)alpha, A,
                (blasint)lda, B, (blasint)ldb, (float)beta, C, (blasint)ldc);
  else
    cblas_dgemm(CblasRowMajor, TA, TB, (blasint)m, (blasint)n, (blasint)k, alpha, A,
                (blasint)lda, B, (blasint)ldb, beta, C, (blasint)ldc);
  return 0;
}

/* gemm_call on the calling thread alone for small products and inside a region (see the
 * top), on every thread otherwise. */
static int gemm_threaded(int dt, int ta, int tb, int64_t m, int64_t n, int64_t k,
                         double alpha, const void *A, int64_t lda, const void *B, int64_t ldb,
                         double beta, void *C, int64_t ldc, const float *bias, int act) {
  enum CBLAS_TRANSPOSE TA = ta ? CblasTrans : CblasNoTrans, TB = tb ? CblasTrans : CblasNoTrans;
  int threads = omp_get_max_threads();
  if (threads > 1 && (m * n * k < LMX_GEMM_SERIAL || omp_get_level() > 0)) {
    omp_set_num_threads(1);
    int rc = gemm_call(dt, TA, TB, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, 1, bias, act);
    omp_set_num_threads(threads);
    return rc;
  }
  return gemm_call(dt, TA, TB, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, threads, bias,
                   act);
}

void lmx_cpu_gemm_ld(int dt, int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                     const void *A, int64_t lda, const void *B, int64_t ldb, double beta,
                     void *C, int64_t ldc) {
  if (m == 0 || n == 0) return;
  gemm_threaded(dt, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, NULL,
                LMX_GEMM_ACT_NONE);
}

int lmx_cpu_gemm_ep(int ta, int tb, int64_t m, int64_t n, int64_t k, const float *A,
                    int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc,
                    const float *bias, int act) {
  if (m == 0 || n == 0 || k == 0) return -1;
  return gemm_threaded(LMX_FLOAT32, ta, tb, m, n, k, 1.0, A, lda, B, ldb, 0.0, C, ldc, bias,
                       act);
}

void lmx_cpu_gemm(int dt, int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                  const void *A, const void *B, double beta, void *C) {
  int64_t lda = ta ? m : k, ldb = tb ? k : n;
  lmx_cpu_gemm_ld(dt, ta, tb, m, n, k, alpha, A, lda < 1 ? 1 : lda, B, ldb < 1 ? 1 : ldb, beta,
                  C, n);
}
