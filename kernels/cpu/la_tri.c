/* la_tri.c — diagonals and triangles of batches of square matrices (cpu_kernels.h,
 * la_tri.h): one pass over the full matrices in order, each element looking up its
 * packed index, so extraction and creation are the same loop in two directions; and
 * sumlogdiag with its gradient. float32 and float64 through one loop per dtype.
 */
#include <math.h>

#include "../../src/tensor/dtype.h"
#include "cpu_kernels.h"
#include "cpu_par.h"

#define LA_TRI_LOOP(T)                                                                    \
  static void tri_##T(int64_t batch, const lmx_la_tri *t, T *P, T *F, int make, int acc) { \
    int64_t n = t->n, len = lmx_la_tri_len(t);                                            \
    LMX_PAR_FOR_W(batch, n *n, b, {                                                       \
      T *f = F + b * n * n, *p = P + b * len;                                             \
      for (int64_t r = 0; r < n; r++)                                                     \
        for (int64_t c = 0; c < n; c++) {                                                 \
          int64_t i = lmx_la_tri_index(t, r, c);                                          \
          T *e = f + r * n + c;                                                           \
          if (!make) {                                                                    \
            if (i >= 0) p[i] = acc ? p[i] + *e : *e;                                      \
          } else if (i >= 0) {                                                            \
            *e = acc ? *e + p[i] : p[i];                                                  \
          } else if (!acc) {                                                              \
            *e = 0;                                                                       \
          }                                                                               \
        }                                                                                 \
    });                                                                                   \
  }
LA_TRI_LOOP(float)
LA_TRI_LOOP(double)

int lmx_cpu_la_tri(int dt, int64_t batch, const lmx_la_tri *t, void *P, void *F, int make,
                   int acc) {
  if (dt == LMX_FLOAT32) tri_float(batch, t, P, F, make, acc);
  else if (dt == LMX_FLOAT64) tri_double(batch, t, P, F, make, acc);
  else return -1;
  return 0;
}

#define SLD_LOOPS(T)                                                                      \
  static void sld_##T(int64_t batch, int64_t n, const T *A, T *out, int acc) {            \
    for (int64_t b = 0; b < batch; b++) {                                                 \
      double s = 0;                                                                       \
      for (int64_t i = 0; i < n; i++) s += log((double)A[(b * n + i) * n + i]);           \
      out[b] = (T)(acc ? out[b] + s : s);                                                 \
    }                                                                                     \
  }                                                                                       \
  static void sld_bwd_##T(int64_t batch, int64_t n, const T *A, const T *g, T *gA, int acc) { \
    LMX_PAR_FOR_W(batch, n *n, b, {                                                       \
      for (int64_t i = 0; i < n; i++)                                                     \
        for (int64_t j = 0; j < n; j++) {                                                 \
          int64_t q = (b * n + i) * n + j;                                                \
          T v = i == j ? g[b] / A[q] : (T)0;                                              \
          gA[q] = acc ? gA[q] + v : v;                                                    \
        }                                                                                 \
    });                                                                                   \
  }
SLD_LOOPS(float)
SLD_LOOPS(double)

int lmx_cpu_sumlogdiag(int dt, int64_t batch, int64_t n, const void *A, void *out, int acc) {
  if (dt == LMX_FLOAT32) sld_float(batch, n, A, out, acc);
  else if (dt == LMX_FLOAT64) sld_double(batch, n, A, out, acc);
  else return -1;
  return 0;
}

int lmx_cpu_sumlogdiag_bwd(int dt, int64_t batch, int64_t n, const void *A, const void *g,
                           void *gA, int acc) {
  if (dt == LMX_FLOAT32) sld_bwd_float(batch, n, A, g, gA, acc);
  else if (dt == LMX_FLOAT64) sld_bwd_double(batch, n, A, g, gA, acc);
  else return -1;
  return 0;
}
