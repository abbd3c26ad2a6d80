/* khatri_rao.c — CPU kernels of khatri_rao (issue 14's small linear algebra): the
 * column-wise Khatri-Rao product of n matrices (khatri_rao.h) and the gradient of one
 * factor, Σ over the rows sharing its index of g · Π of the other factors (no division,
 * so zeros are exact). float32 and float64, products and sums in double; each output
 * element is written by one iteration (parallel past cpu_par.h's threshold).
 */
#include "cpu_kernels.h"
#include "cpu_par.h"

/* element (row, k) of matrix i as double */
static inline double kr_at(int dt, const lmx_kr_args *a, int i, int64_t row, int64_t k) {
  int64_t e = row * a->N + k;
  return dt == LMX_FLOAT32 ? (double)((const float *)a->A[i])[e] : ((const double *)a->A[i])[e];
}

static inline void kr_store(int dt, void *p, int64_t e, double v, int acc) {
  if (dt == LMX_FLOAT32) {
    float *q = (float *)p + e;
    *q = (float)(acc ? (double)*q + v : v);
  } else {
    double *q = (double *)p + e;
    *q = acc ? *q + v : v;
  }
}

int lmx_cpu_khatri_rao(int dt, const lmx_kr_args *a, void *out, int acc) {
  if (dt != LMX_FLOAT32 && dt != LMX_FLOAT64) return -1;
  int64_t R = 1;
  for (int i = 0; i < a->n; i++) R *= a->M[i];
  int64_t N = a->N;
  LMX_PAR_FOR_W(R, N * a->n, r, {
    for (int64_t k = 0; k < N; k++) {
      double v = 1.0;
      int64_t rest = r;
      for (int i = a->n - 1; i >= 0; i--) {
        v *= kr_at(dt, a, i, rest % a->M[i], k);
        rest /= a->M[i];
      }
      kr_store(dt, out, r * N + k, v, acc);
    }
  });
  return 0;
}

int lmx_cpu_khatri_rao_bwd(int dt, const lmx_kr_args *a, int which, const void *g, void *ga,
                           int acc) {
  if (dt != LMX_FLOAT32 && dt != LMX_FLOAT64) return -1;
  int64_t N = a->N, Mi = a->M[which], others = 1, inner = 1;
  for (int i = 0; i < a->n; i++)
    if (i != which) others *= a->M[i];
  for (int i = which + 1; i < a->n; i++) inner *= a->M[i];
  LMX_PAR_FOR_W(Mi, N * others * a->n, ri, {
    for (int64_t k = 0; k < N; k++) {
      double s = 0.0;
      for (int64_t t = 0; t < others; t++) {
        /* t enumerates the other indices: (outer part, inner part) around `which` */
        int64_t lo = t % inner, hi = t / inner;
        int64_t r = (hi * Mi + ri) * inner + lo, rest = r;
        double v = dt == LMX_FLOAT32 ? (double)((const float *)g)[r * N + k]
                                     : ((const double *)g)[r * N + k];
        for (int i = a->n - 1; i >= 0; i--) {
          if (i != which) v *= kr_at(dt, a, i, rest % a->M[i], k);
          rest /= a->M[i];
        }
        s += v;
      }
      kr_store(dt, ga, ri * N + k, s, acc);
    }
  });
  return 0;
}
