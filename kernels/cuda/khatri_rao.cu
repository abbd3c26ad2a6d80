/* khatri_rao.cu — CUDA kernels of khatri_rao (cu_khatri_rao.h), the formulas of
 * kernels/cpu/khatri_rao.c: one thread per element of the product (the product of the
 * factors' entries), and for a factor's gradient one thread per element of that factor,
 * summing g times the other factors over the rows that share its index in a fixed
 * order (no atomics, deterministic).
 */
#include "cuda_common.cuh"
#include "cu_khatri_rao.h"
#include "cu_util.cuh"
#include "../cpu/cpu_kernels.h"

template <typename T>
__device__ static inline double kr_at(const lmx_kr_args &a, int i, int64_t row, int64_t k) {
  return (double)lmx_cu_ld((const T *)a.A[i], row * a.N + k);
}

template <typename T>
__global__ void k_khatri_rao(lmx_kr_args a, int64_t R, T *out, int acc) {
  LMX_CU_GRID_LOOP(q, R * a.N) {
    int64_t r = q / a.N, k = q % a.N, rest = r;
    double v = 1.0;
    for (int i = a.n - 1; i >= 0; i--) {
      v *= kr_at<T>(a, i, rest % a.M[i], k);
      rest /= a.M[i];
    }
    if (acc) v += (double)lmx_cu_ld(out, q);
    lmx_cu_st(out, q, v);
  }
}

template <typename T>
__global__ void k_khatri_rao_bwd(lmx_kr_args a, int which, int64_t others, int64_t inner,
                                 const T *g, T *ga, int acc) {
  int64_t Mi = a.M[which];
  LMX_CU_GRID_LOOP(q, Mi * a.N) {
    int64_t ri = q / a.N, k = q % a.N;
    double s = 0.0;
    for (int64_t t = 0; t < others; t++) {
      int64_t lo = t % inner, hi = t / inner;
      int64_t r = (hi * Mi + ri) * inner + lo, rest = r;
      double v = (double)lmx_cu_ld(g, r * a.N + k);
      for (int i = a.n - 1; i >= 0; i--) {
        if (i != which) v *= kr_at<T>(a, i, rest % a.M[i], k);
        rest /= a.M[i];
      }
      s += v;
    }
    if (acc) s += (double)lmx_cu_ld(ga, q);
    lmx_cu_st(ga, q, s);
  }
}

int lmx_cu_khatri_rao(lmx_cu_stream s, int dt, const lmx_kr_args *a, void *out, int acc) {
  int64_t R = 1;
  for (int i = 0; i < a->n; i++) R *= a->M[i];
  if (R * a->N == 0) return dt <= LMX_FLOAT16 ? 0 : -1;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_khatri_rao<T>, lmx_cu_blocks(R * a->N), LMX_CU_THREADS, 0,
                                   s, *a, R, (T *)out, acc));
  return lmx_cu_last_error();
}

int lmx_cu_khatri_rao_bwd(lmx_cu_stream s, int dt, const lmx_kr_args *a, int which,
                          const void *g, void *ga, int acc) {
  int64_t others = 1, inner = 1;
  for (int i = 0; i < a->n; i++)
    if (i != which) others *= a->M[i];
  for (int i = which + 1; i < a->n; i++) inner *= a->M[i];
  int64_t n = a->M[which] * a->N;
  if (n == 0) return dt <= LMX_FLOAT16 ? 0 : -1;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_khatri_rao_bwd<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s,
                                   *a, which, others, inner, (const T *)g, (T *)ga, acc));
  return lmx_cu_last_error();
}
