/* linalg.c — GEMM-based kernels: FullyConnected forward/backward, batched products,
 * and the row/column sums their bias gradients need.
 *
 * A float32 FullyConnected forward with one row of x (batch-1 inference) runs as
 * streaming dot products in gemv.c instead; every other product is one gemm.c call on
 * contiguous row-major buffers (OpenBLAS or oneDNN, each on the OpenMP pool; nothing here
 * opens a parallel region around a product, so teams never nest). `acc` = 1 accumulates
 * into the destination (beta = 1).
 */
#include <string.h>

#include "../../src/tensor/dtype.h"
#include "cpu_kernels.h"
#include "cpu_par.h"
#include "gemm_route.h"

/* out[m,n] (+)= rows of b[n] */
static void add_bias(int dt, int64_t m, int64_t n, void *out, const void *b) {
  if (dt == LMX_FLOAT32) {
    float *o = out;
    const float *bb = b;
    LMX_PAR_FOR_W(m, n, r, for (int64_t j = 0; j < n; j++) o[r * n + j] += bb[j];);
  } else {
    double *o = out;
    const double *bb = b;
    LMX_PAR_FOR_W(m, n, r, for (int64_t j = 0; j < n; j++) o[r * n + j] += bb[j];);
  }
}

/* out[m,n] (+)= x[m,k] · w[n,k]ᵀ + b[n] (b may be NULL). float32/float64. float32 with
 * m = 1 (or a few rows and large w) takes gemv.c's kernels where the CPU has them.
 * Without accumulation the bias rows are copied into out first and the GEMM adds onto
 * them (beta = 1): no second pass and no extra parallel region. */
void lmx_cpu_fc_fwd(int dt, int64_t m, int64_t k, int64_t n, void *out, const void *x,
                    const void *w, const void *b, int acc) {
  if (m == 0 || n == 0) return;
  if (dt == LMX_FLOAT32 && lmx_cpu_fc_small_f32(m, k, n, out, x, w, b, acc) == 0) return;
  size_t row = (size_t)n * (size_t)lmx_dtype_size(dt);
  int pre = b && !acc;
  if (pre)
    LMX_PAR_FOR_W(m, n, r, memcpy((char *)out + (size_t)r * row, b, row););
  if (k == 0) {
    if (!acc && !pre) lmx_cpu_fill(out, dt, m * n, 0.0);
  } else {
    lmx_cpu_gemm(dt, 0, 1, m, n, k, 1.0, x, w, acc || pre ? 1.0 : 0.0, out);
  }
  if (b && acc) add_bias(dt, m, n, out, b);
}

static int gemm_act(int un) {
  switch (un) {
    case LMX_UN_RELU: return LMX_GEMM_ACT_RELU;
    case LMX_UN_TANH: return LMX_GEMM_ACT_TANH;
    case LMX_UN_SIGMOID: return LMX_GEMM_ACT_SIGMOID;
    case LMX_UN_SOFTRELU: return LMX_GEMM_ACT_SOFTRELU;
    default: return LMX_GEMM_ACT_NONE;
  }
}

/* Batch 1 keeps gemv.c's dot products (the f pass over one row costs nothing). */
int lmx_cpu_fc_act_fwd(int dt, int64_t m, int64_t k, int64_t n, void *out, const void *x,
                       const void *w, const void *b, int act) {
  if (m == 0 || n == 0) return 0;
  int ga = gemm_act(act);
  if (dt == LMX_FLOAT32 && ga != LMX_GEMM_ACT_NONE && m > LMX_FC_SMALL_M &&
      lmx_cpu_gemm_ep(0, 1, m, n, k, x, k, w, k, out, n, b, ga) == 0)
    return 1;
  lmx_cpu_fc_fwd(dt, m, k, n, out, x, w, b, 0);
  lmx_cpu_unary(act, dt, m * n, out, out, 0);
  return 0;
}

/* gx[m,k] (+)= g[m,n] · w[n,k] */
void lmx_cpu_fc_bwd_data(int dt, int64_t m, int64_t k, int64_t n, void *gx, const void *g,
                         const void *w, int acc) {
  if (m == 0 || k == 0) return;
  if (n == 0) {
    if (!acc) lmx_cpu_fill(gx, dt, m * k, 0.0);
    return;
  }
  lmx_cpu_gemm(dt, 0, 0, m, k, n, 1.0, g, w, acc ? 1.0 : 0.0, gx);
}

/* gw[n,k] (+)= g[m,n]ᵀ · x[m,k] */
void lmx_cpu_fc_bwd_weight(int dt, int64_t m, int64_t k, int64_t n, void *gw, const void *g,
                           const void *x, int acc) {
  if (n == 0 || k == 0) return;
  if (m == 0) {
    if (!acc) lmx_cpu_fill(gw, dt, n * k, 0.0);
    return;
  }
  lmx_cpu_gemm(dt, 1, 0, n, k, m, 1.0, g, x, acc ? 1.0 : 0.0, gw);
}

/* Columns [j0, j1) of out (+)= the sum over rows of x[m,n]: rows outer, so memory is
 * read in order and each column is summed in row order (the result does not depend on
 * the vector width or on how columns are split over threads). */
static LMX_SIMD_CLONES void sum_rows_f32(int64_t m, int64_t n, int64_t j0, int64_t j1,
                                         float *o, const float *x) {
  for (int64_t r = 0; r < m; r++) {
    const float *xr = x + r * n;
    for (int64_t j = j0; j < j1; j++) o[j] += xr[j];
  }
}

static LMX_SIMD_CLONES void sum_rows_f64(int64_t m, int64_t n, int64_t j0, int64_t j1,
                                         double *o, const double *x) {
  for (int64_t r = 0; r < m; r++) {
    const double *xr = x + r * n;
    for (int64_t j = j0; j < j1; j++) o[j] += xr[j];
  }
}

/* out[n] (+)= sum over rows of x[m,n] (bias gradients). Large ones are split by column
 * blocks of 64 over the OpenMP threads (W3's 10000-class bias gradient: 1120 x 10000). */
void lmx_cpu_sum_rows(int dt, int64_t m, int64_t n, void *out, const void *x, int acc) {
  if (n <= 0) return;
  size_t es = dt == LMX_FLOAT32 ? sizeof(float) : sizeof(double);
  if (!acc) memset(out, 0, (size_t)n * es);
  if (m * n < LMX_OMP_MIN) { /* one pass over whole rows */
    if (dt == LMX_FLOAT32)
      sum_rows_f32(m, n, 0, n, out, x);
    else
      sum_rows_f64(m, n, 0, n, out, x);
    return;
  }
  int64_t blocks = (n + 63) / 64;
  LMX_PAR_FOR_W(blocks, m * 64, b, {
    int64_t j0 = b * 64, j1 = j0 + 64 < n ? j0 + 64 : n;
    if (dt == LMX_FLOAT32)
      sum_rows_f32(m, n, j0, j1, out, x);
    else
      sum_rows_f64(m, n, j0, j1, out, x);
  });
}

/* For each batch i: C[i][m,n] = op(A[i]) op(B[i]) (+ C[i] when acc). A[i] is [m,k]
 * ([k,m] when ta), B[i] is [k,n] ([n,k] when tb). */
void lmx_cpu_batch_gemm(int dt, int64_t batch, int ta, int tb, int64_t m, int64_t n, int64_t k,
                        const void *A, const void *B, void *C, int acc) {
  size_t es = (size_t)lmx_dtype_size(dt);
  for (int64_t i = 0; i < batch; i++) {
    const char *a = (const char *)A + (size_t)(i * m * k) * es;
    const char *b = (const char *)B + (size_t)(i * k * n) * es;
    char *c = (char *)C + (size_t)(i * m * n) * es;
    if (k == 0) {
      if (!acc) lmx_cpu_fill(c, dt, m * n, 0.0);
      continue;
    }
    lmx_cpu_gemm(dt, ta, tb, m, n, k, 1.0, a, b, acc ? 1.0 : 0.0, c);
  }
}

/* Σ x[n] in double (float32/float64; 0 for other dtypes). */
double lmx_cpu_sum(int dt, int64_t n, const void *x) {
  double s = 0;
  if (dt == LMX_FLOAT32) {
    const float *p = x;
    float part[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      for (int j = 0; j < 8; j++) part[j] += p[i + j];
    for (int j = 0; j < 8; j++) s += part[j];
    for (; i < n; i++) s += p[i];
  } else if (dt == LMX_FLOAT64) {
    const double *p = x;
    for (int64_t i = 0; i < n; i++) s += p[i];
  }
  return s;
}
