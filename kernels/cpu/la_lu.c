/* la_lu.c — inverse and determinants through LAPACK's LU (la_lu.h): ?getrf on a copy of
 * each matrix, the determinant from U's diagonal and the row interchanges, ?getri for
 * the inverse. OpenBLAS ships LAPACK but not LAPACKE: the prototypes are declared here
 * (with the hidden length of no character argument: these take none). */
#include <math.h>
#include <string.h>

#include <cblas.h>

#include "../../src/luamx.h"
#include "la_lu.h"

void sgetrf_(const blasint *m, const blasint *n, float *a, const blasint *lda, blasint *ipiv,
             blasint *info);
void dgetrf_(const blasint *m, const blasint *n, double *a, const blasint *lda,
             blasint *ipiv, blasint *info);
void sgetri_(const blasint *n, float *a, const blasint *lda, const blasint *ipiv, float *work,
             const blasint *lwork, blasint *info);
void dgetri_(const blasint *n, double *a, const blasint *lda, const blasint *ipiv,
             double *work, const blasint *lwork, blasint *info);

/* per matrix: the LU copy (n·n) and getri's work (n), in doubles; the pivots (n blasints,
 * at most n doubles) */
int64_t lmx_cpu_la_lu_ws(int64_t batch, int64_t n) {
  (void)batch;
  return n * n + 2 * n + 1;
}

static void st(void *p, int dt, int64_t i, double v) {
  if (!p) return;
  if (dt == LMX_FLOAT32) ((float *)p)[i] = (float)v;
  else ((double *)p)[i] = v;
}

int lmx_cpu_la_lu(int dt, int64_t batch, int64_t n, const void *A, void *inv, void *det,
                  void *sign, void *logabs, double *ws, int strict, int64_t *bad) {
  if (dt != LMX_FLOAT32 && dt != LMX_FLOAT64) return -1;
  size_t es = dt == LMX_FLOAT32 ? sizeof(float) : sizeof(double);
  blasint nn = (blasint)n, lda = (blasint)(n > 0 ? n : 1), info = 0, lwork = (blasint)lda;
  blasint *ipiv = (blasint *)(ws + n * n + n + 1);
  for (int64_t b = 0; b < batch; b++) {
    char *lu = (char *)ws; /* n·n elements of dt */
    memcpy(lu, (const char *)A + (size_t)(b * n * n) * es, (size_t)(n * n) * es);
    info = 0;
    if (n > 0) {
      if (dt == LMX_FLOAT32) sgetrf_(&nn, &nn, (float *)lu, &lda, ipiv, &info);
      else dgetrf_(&nn, &nn, (double *)lu, &lda, ipiv, &info);
    }
    double sg = 1, la = 0;
    if (info > 0) {
      sg = 0, la = -INFINITY;
    } else {
      for (int64_t i = 0; i < n; i++) {
        double d = dt == LMX_FLOAT32 ? ((float *)lu)[i * n + i] : ((double *)lu)[i * n + i];
        if (ipiv[i] != i + 1) sg = -sg;
        if (d < 0) sg = -sg;
        la += log(fabs(d));
      }
    }
    st(sign, dt, b, sg);
    st(logabs, dt, b, la);
    st(det, dt, b, sg * exp(la));
    if (!inv) continue;
    if (info > 0 && strict) {
      *bad = b;
      return 1;
    }
    if (info > 0) {
      memset((char *)inv + (size_t)(b * n * n) * es, 0, (size_t)(n * n) * es);
      continue;
    }
    if (n > 0) {
      double *work = ws + n * n;
      if (dt == LMX_FLOAT32) sgetri_(&nn, (float *)lu, &lda, ipiv, (float *)work, &lwork, &info);
      else dgetri_(&nn, (double *)lu, &lda, ipiv, work, &lwork, &info);
    }
    memcpy((char *)inv + (size_t)(b * n * n) * es, lu, (size_t)(n * n) * es);
  }
  return 0;
}

static double ld(const void *p, int dt, int64_t i) {
  return dt == LMX_FLOAT32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

int lmx_cpu_la_scale_t(int dt, int64_t batch, int64_t n, const void *g, const void *f,
                       const void *keep, const void *inv, void *dA, int acc) {
  if (dt != LMX_FLOAT32 && dt != LMX_FLOAT64) return -1;
  for (int64_t b = 0; b < batch; b++) {
    int live = ld(keep, dt, b) != 0;
    double s = live ? ld(g, dt, b) * (f ? ld(f, dt, b) : 1.0) : 0.0;
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++) {
        int64_t q = (b * n + i) * n + j;
        double v = live ? s * ld(inv, dt, (b * n + j) * n + i) : 0.0;
        st(dA, dt, q, acc ? ld(dA, dt, q) + v : v);
      }
  }
  return 0;
}
