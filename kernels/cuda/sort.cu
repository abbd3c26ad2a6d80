/* sort.cu — CUDA kernels of topk / sort / argsort and the values' gradient (cu_sort.h):
 * one thread per element (grid-stride loop) finds its rank in its row by counting. */
#include "cu_sort.h"
#include "cu_util.cuh"
#include "cuda_common.cuh"

__device__ static inline void st_dt(void *p, int dt, int64_t i, double v) {
  switch (dt) {
    case LMX_FLOAT32: lmx_cu_st((float *)p, i, v); break;
    case LMX_FLOAT64: lmx_cu_st((double *)p, i, v); break;
    case LMX_FLOAT16: lmx_cu_st((lmx_h16 *)p, i, v); break;
    case LMX_UINT8: lmx_cu_st((uint8_t *)p, i, v); break;
    case LMX_INT32: lmx_cu_st((int32_t *)p, i, v); break;
    case LMX_INT8: lmx_cu_st((int8_t *)p, i, v); break;
    case LMX_INT64: lmx_cu_st((int64_t *)p, i, v); break;
    default: break;
  }
}

static inline int dt_ok(int dt) { return dt >= LMX_FLOAT32 && dt <= LMX_INT64; }

/* the sort key: negated for descending, NaN kept (it sorts last either way) */
__device__ static inline double key_of(double v, int asc) { return asc || v != v ? v : -v; }

/* whether (a, ia) comes before (b, ib): by key, NaN last, then by index */
__device__ static inline bool before(double a, int64_t ia, double b, int64_t ib) {
  bool na = a != a, nb = b != b;
  if (na != nb) return nb;
  if (!na && a != b) return a < b;
  return ia < ib;
}

/* rank of element t of the row at (o, j) */
template <typename T>
__device__ static inline int64_t rank_of(const T *x, int64_t o, int64_t t, int64_t j,
                                         int64_t n, int64_t inner, int asc) {
  double me = key_of((double)lmx_cu_ld(x, (o * n + t) * inner + j), asc);
  int64_t r = 0;
  for (int64_t u = 0; u < n; u++)
    if (u != t && before(key_of((double)lmx_cu_ld(x, (o * n + u) * inner + j), asc), u, me, t))
      r++;
  return r;
}

template <typename T>
__global__ void k_topk(int64_t outer, int64_t n, int64_t inner, int64_t k, int asc,
                       const T *x, T *val, void *idx, int idt, T *mask, int acc) {
  LMX_CU_GRID_LOOP(e, outer * n * inner) {
    int64_t j = e % inner, t = (e / inner) % n, o = e / (n * inner);
    int64_t r = rank_of(x, o, t, j, n, inner, asc);
    if (mask) lmx_cu_st(mask, e, r < k ? 1.0 : 0.0);
    if (r >= k) continue;
    int64_t d = (o * k + r) * inner + j;
    if (val) {
      double v = (double)lmx_cu_ld(x, e);
      lmx_cu_st(val, d, acc ? (double)lmx_cu_ld(val, d) + v : v);
    }
    if (idx) st_dt(idx, idt, d, (double)t);
  }
}

template <typename T>
__global__ void k_topk_bwd(int64_t outer, int64_t n, int64_t inner, int64_t k, int asc,
                           const T *x, T *gx, const T *g, int acc) {
  LMX_CU_GRID_LOOP(e, outer * n * inner) {
    int64_t j = e % inner, t = (e / inner) % n, o = e / (n * inner);
    int64_t r = rank_of(x, o, t, j, n, inner, asc);
    double v = r < k ? (double)lmx_cu_ld(g, (o * k + r) * inner + j) : 0.0;
    lmx_cu_st(gx, e, acc ? (double)lmx_cu_ld(gx, e) + v : v);
  }
}

int lmx_cu_topk(lmx_cu_stream s, int dt, int idt, int64_t outer, int64_t n, int64_t inner,
                int64_t k, int asc, const void *x, void *val, void *idx, void *mask, int acc) {
  if (idx && !dt_ok(idt)) return -1;
  int64_t m = outer * n * inner;
  if (m == 0) return dt_ok(dt) ? 0 : -1;
  LMX_CU_DISPATCH_ALL(dt, return -1,
                      LMX_LAUNCH(k_topk<T>, lmx_cu_blocks(m), LMX_CU_THREADS, 0, s, outer, n,
                                 inner, k, asc, (const T *)x, (T *)val, idx, idt, (T *)mask,
                                 acc));
  return lmx_cu_last_error();
}

int lmx_cu_topk_bwd(lmx_cu_stream s, int dt, int64_t outer, int64_t n, int64_t inner,
                    int64_t k, int asc, const void *x, void *gx, const void *g, int acc) {
  int64_t m = outer * n * inner;
  if (m == 0) return 0;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_topk_bwd<T>, lmx_cu_blocks(m), LMX_CU_THREADS, 0, s,
                                   outer, n, inner, k, asc, (const T *)x, (T *)gx,
                                   (const T *)g, acc));
  return lmx_cu_last_error();
}
