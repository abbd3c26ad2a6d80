/* la_tri.cu — CUDA kernels of the diagonal / triangle copies and sumlogdiag
 * (cu_la_tri.h), the formulas of kernels/cpu/la_tri.c: one thread per element of the
 * full matrices looks up its packed index (la_tri.h) and copies one way or the other;
 * sumlogdiag sums each matrix's diagonal logs in one thread, in order.
 */
#include "cuda_common.cuh"
#include "cu_la_tri.h"
#include "cu_util.cuh"
#include "../cpu/cpu_kernels.h"

template <typename T>
__global__ void k_la_tri(int64_t total, lmx_la_tri t, int64_t len, T *P, T *F, int make,
                         int acc) {
  LMX_CU_GRID_LOOP(q, total) {
    int64_t n = t.n, b = q / (n * n), r = (q / n) % n, col = q % n;
    int64_t i = lmx_la_tri_index(&t, r, col);
    if (!make) {
      if (i >= 0) P[b * len + i] = acc ? P[b * len + i] + F[q] : F[q];
    } else if (i >= 0) {
      F[q] = acc ? F[q] + P[b * len + i] : P[b * len + i];
    } else if (!acc) {
      F[q] = (T)0;
    }
  }
}

template <typename T>
__global__ void k_sumlogdiag(int64_t batch, int64_t n, const T *A, T *out, int acc) {
  LMX_CU_GRID_LOOP(b, batch) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += log((double)A[(b * n + i) * n + i]);
    out[b] = (T)(acc ? (double)out[b] + s : s);
  }
}

template <typename T>
__global__ void k_sumlogdiag_bwd(int64_t total, int64_t n, const T *A, const T *g, T *gA,
                                 int acc) {
  LMX_CU_GRID_LOOP(q, total) {
    int64_t b = q / (n * n), i = (q / n) % n, j = q % n;
    T v = i == j ? g[b] / A[q] : (T)0;
    gA[q] = acc ? gA[q] + v : v;
  }
}

#define LA_DISPATCH(dt, ...)                                                              \
  switch (dt) {                                                                           \
    case LMX_FLOAT32: { typedef float T; __VA_ARGS__; } break;                            \
    case LMX_FLOAT64: { typedef double T; __VA_ARGS__; } break;                           \
    default: return -1;                                                                   \
  }

int lmx_cu_la_tri(lmx_cu_stream s, int dt, int64_t batch, const lmx_la_tri *t, void *P,
                  void *F, int make, int acc) {
  int64_t total = batch * t->n * t->n;
  if (dt != LMX_FLOAT32 && dt != LMX_FLOAT64) return -1;
  if (total == 0) return 0;
  LA_DISPATCH(dt, LMX_LAUNCH(k_la_tri<T>, lmx_cu_blocks(total), LMX_CU_THREADS, 0, s, total,
                             *t, lmx_la_tri_len(t), (T *)P, (T *)F, make, acc));
  return lmx_cu_last_error();
}

int lmx_cu_sumlogdiag(lmx_cu_stream s, int dt, int64_t batch, int64_t n, const void *A,
                      void *out, int acc) {
  if (dt != LMX_FLOAT32 && dt != LMX_FLOAT64) return -1;
  if (batch == 0) return 0;
  LA_DISPATCH(dt, LMX_LAUNCH(k_sumlogdiag<T>, lmx_cu_blocks(batch), LMX_CU_THREADS, 0, s,
                             batch, n, (const T *)A, (T *)out, acc));
  return lmx_cu_last_error();
}

int lmx_cu_sumlogdiag_bwd(lmx_cu_stream s, int dt, int64_t batch, int64_t n, const void *A,
                          const void *g, void *gA, int acc) {
  int64_t total = batch * n * n;
  if (dt != LMX_FLOAT32 && dt != LMX_FLOAT64) return -1;
  if (total == 0) return 0;
  LA_DISPATCH(dt, LMX_LAUNCH(k_sumlogdiag_bwd<T>, lmx_cu_blocks(total), LMX_CU_THREADS, 0, s,
                             total, n, (const T *)A, (const T *)g, (T *)gA, acc));
  return lmx_cu_last_error();
}
