/* gemm.c — matrix products on OpenBLAS (cblas, row-major). */
#include <cblas.h>

#include "cpu_kernels.h"

void lmx_cpu_gemm(int dt, int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                  const void *A, const void *B, double beta, void *C) {
  if (m == 0 || n == 0) return;
  enum CBLAS_TRANSPOSE TA = ta ? CblasTrans : CblasNoTrans, TB = tb ? CblasTrans : CblasNoTrans;
  blasint lda = (blasint)(ta ? m : k), ldb = (blasint)(tb ? k : n), ldc = (blasint)n;
  if (lda < 1) lda = 1;
  if (ldb < 1) ldb = 1;
  if (dt == LMX_FLOAT32)
    cblas_sgemm(CblasRowMajor, TA, TB, (blasint)m, (blasint)n, (blasint)k, (float)alpha, A, lda,
                B, ldb, (float)beta, C, ldc);
  else
    cblas_dgemm(CblasRowMajor, TA, TB, (blasint)m, (blasint)n, (blasint)k, alpha, A, lda, B, ldb,
                beta, C, ldc);
}

void lmx_cpu_gemm_ld(int dt, int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                     const void *A, int64_t lda, const void *B, int64_t ldb, double beta,
                     void *C, int64_t ldc) {
  if (m == 0 || n == 0) return;
  enum CBLAS_TRANSPOSE TA = ta ? CblasTrans : CblasNoTrans, TB = tb ? CblasTrans : CblasNoTrans;
  if (dt == LMX_FLOAT32)
    cblas_sgemm(CblasRowMajor, TA, TB, (blasint)m, (blasint)n, (blasint)k, (float)alpha, A,
                (blasint)lda, B, (blasint)ldb, (float)beta, C, (blasint)ldc);
  else
    cblas_dgemm(CblasRowMajor, TA, TB, (blasint)m, (blasint)n, (blasint)k, alpha, A,
                (blasint)lda, B, (blasint)ldb, beta, C, (blasint)ldc);
}
