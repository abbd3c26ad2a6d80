/* la_blas.c — Cholesky and triangular kernels on OpenBLAS (la_blas.h): LAPACK's
 * ?potrf / ?potri (Fortran symbols; OpenBLAS ships LAPACK but not LAPACKE, so the four
 * prototypes are declared here with the hidden length of the character argument) and
 * cblas ?trmm / ?trsm / ?syrk, one call per matrix of the batch.
 *
 * Row-major data is LAPACK's column-major transpose: the row-major lower triangle is
 * LAPACK's upper one, and a symmetric matrix reads the same both ways, so potrf / potri
 * take uplo 'U' for lower and 'L' for upper and give back row-major results directly.
 */
#include <cblas.h>
#include <stddef.h>
#include <string.h>

#include "../../src/tensor/dtype.h"
#include "cpu_kernels.h"

void spotrf_(const char *uplo, const blasint *n, float *a, const blasint *lda, blasint *info,
             size_t uplo_len);
void dpotrf_(const char *uplo, const blasint *n, double *a, const blasint *lda, blasint *info,
             size_t uplo_len);
void spotri_(const char *uplo, const blasint *n, float *a, const blasint *lda, blasint *info,
             size_t uplo_len);
void dpotri_(const char *uplo, const blasint *n, double *a, const blasint *lda, blasint *info,
             size_t uplo_len);

static int is_float(int dt) { return dt == LMX_FLOAT32 || dt == LMX_FLOAT64; }

static char *mat(void *A, int dt, int64_t i, int64_t size) {
  return (char *)A + (size_t)(i * size) * (size_t)lmx_dtype_size(dt);
}

static const char *cmat(const void *A, int dt, int64_t i, int64_t size) {
  return (const char *)A + (size_t)(i * size) * (size_t)lmx_dtype_size(dt);
}

int lmx_cpu_tri_fix(int dt, int64_t batch, int64_t n, void *A, int lower, int copy) {
  if (!is_float(dt)) return -1;
  for (int64_t b = 0; b < batch; b++)
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = i + 1; j < n; j++) { /* (i, j) upper, (j, i) lower */
        int64_t up = (b * n + i) * n + j, lo = (b * n + j) * n + i;
        int64_t keep = lower ? lo : up, other = lower ? up : lo;
        if (dt == LMX_FLOAT32) {
          float *p = A;
          p[other] = copy ? p[keep] : 0.0f;
        } else {
          double *p = A;
          p[other] = copy ? p[keep] : 0.0;
        }
      }
  return 0;
}

/* one LAPACK call per matrix: potrf (inv = 0) or potri (inv = 1) */
static int lapack_batch(int dt, int64_t batch, int64_t n, void *A, int lower, int inv,
                        int64_t *bad) {
  if (!is_float(dt)) return -1;
  const char uplo = lower ? 'U' : 'L';
  blasint nn = (blasint)n, lda = (blasint)(n > 0 ? n : 1), info = 0;
  for (int64_t b = 0; b < batch && n > 0; b++) {
    char *a = mat(A, dt, b, n * n);
    if (dt == LMX_FLOAT32) {
      if (inv) spotri_(&uplo, &nn, (float *)a, &lda, &info, 1);
      else spotrf_(&uplo, &nn, (float *)a, &lda, &info, 1);
    } else {
      if (inv) dpotri_(&uplo, &nn, (double *)a, &lda, &info, 1);
      else dpotrf_(&uplo, &nn, (double *)a, &lda, &info, 1);
    }
    if (info != 0) {
      *bad = b;
      return 1;
    }
  }
  return 0;
}

int lmx_cpu_potrf(int dt, int64_t batch, int64_t n, void *A, int lower, int64_t *bad) {
  int rc = lapack_batch(dt, batch, n, A, lower, 0, bad);
  if (rc == 0) lmx_cpu_tri_fix(dt, batch, n, A, lower, 0);
  return rc;
}

int lmx_cpu_potri(int dt, int64_t batch, int64_t n, void *A, int lower, int64_t *bad) {
  int rc = lapack_batch(dt, batch, n, A, lower, 1, bad);
  if (rc == 0) lmx_cpu_tri_fix(dt, batch, n, A, lower, 1);
  return rc;
}

/* trmm (solve = 0) or trsm (solve = 1) on every matrix */
static int tri_batch(int dt, int64_t batch, int64_t m, int64_t k, const void *A, void *B,
                     int lower, int trans, int right, double alpha, int solve) {
  if (!is_float(dt)) return -1;
  int64_t s = right ? k : m;
  if (m == 0 || k == 0) return 0;
  enum CBLAS_SIDE side = right ? CblasRight : CblasLeft;
  enum CBLAS_UPLO uplo = lower ? CblasLower : CblasUpper;
  enum CBLAS_TRANSPOSE tr = trans ? CblasTrans : CblasNoTrans;
  for (int64_t b = 0; b < batch; b++) {
    const char *a = cmat(A, dt, b, s * s);
    char *x = mat(B, dt, b, m * k);
    if (dt == LMX_FLOAT32) {
      if (solve)
        cblas_strsm(CblasRowMajor, side, uplo, tr, CblasNonUnit, (blasint)m, (blasint)k,
                    (float)alpha, (const float *)a, (blasint)s, (float *)x, (blasint)k);
      else
        cblas_strmm(CblasRowMajor, side, uplo, tr, CblasNonUnit, (blasint)m, (blasint)k,
                    (float)alpha, (const float *)a, (blasint)s, (float *)x, (blasint)k);
    } else {
      if (solve)
        cblas_dtrsm(CblasRowMajor, side, uplo, tr, CblasNonUnit, (blasint)m, (blasint)k, alpha,
                    (const double *)a, (blasint)s, (double *)x, (blasint)k);
      else
        cblas_dtrmm(CblasRowMajor, side, uplo, tr, CblasNonUnit, (blasint)m, (blasint)k, alpha,
                    (const double *)a, (blasint)s, (double *)x, (blasint)k);
    }
  }
  return 0;
}

int lmx_cpu_trmm(int dt, int64_t batch, int64_t m, int64_t k, const void *A, void *B, int lower,
                 int trans, int right, double alpha) {
  return tri_batch(dt, batch, m, k, A, B, lower, trans, right, alpha, 0);
}

int lmx_cpu_trsm(int dt, int64_t batch, int64_t m, int64_t k, const void *A, void *B, int lower,
                 int trans, int right, double alpha) {
  return tri_batch(dt, batch, m, k, A, B, lower, trans, right, alpha, 1);
}

int lmx_cpu_syrk(int dt, int64_t batch, int64_t m, int64_t k, const void *A, void *C, int trans,
                 double alpha) {
  if (!is_float(dt)) return -1;
  int64_t s = trans ? k : m, inner = trans ? m : k;
  if (s == 0) return 0;
  if (inner == 0) { /* an empty product: zeros */
    lmx_cpu_fill(C, dt, batch * s * s, 0.0);
    return 0;
  }
  enum CBLAS_TRANSPOSE tr = trans ? CblasTrans : CblasNoTrans;
  for (int64_t b = 0; b < batch; b++) {
    const char *a = cmat(A, dt, b, m * k);
    char *c = mat(C, dt, b, s * s);
    if (dt == LMX_FLOAT32)
      cblas_ssyrk(CblasRowMajor, CblasLower, tr, (blasint)s, (blasint)inner, (float)alpha,
                  (const float *)a, (blasint)k, 0.0f, (float *)c, (blasint)s);
    else
      cblas_dsyrk(CblasRowMajor, CblasLower, tr, (blasint)s, (blasint)inner, alpha,
                  (const double *)a, (blasint)k, 0.0, (double *)c, (blasint)s);
  }
  return lmx_cpu_tri_fix(dt, batch, s, C, 1, 1);
}
