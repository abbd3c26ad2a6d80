/* manip.cu — CUDA kernels of pick and cumsum (cu_manip.h), the twins of kernels/cpu/manip.c:
 * one thread per element (grid-stride loop, cu_util.cuh's geometry) for pick and its
 * gradient, one per (outer, inner) column for the scans; values and sums in double. */
#include "cu_manip.h"
#include "cu_util.cuh"
#include "cuda_common.cuh"

__device__ static inline double ld_dt(const void *p, int dt, int64_t i) {
  switch (dt) {
    case LMX_FLOAT32: return ((const float *)p)[i];
    case LMX_FLOAT64: return ((const double *)p)[i];
    case LMX_FLOAT16: return lmx_cu_f16_to_f32(((const uint16_t *)p)[i]);
    case LMX_UINT8: return ((const uint8_t *)p)[i];
    case LMX_INT32: return ((const int32_t *)p)[i];
    case LMX_INT8: return ((const int8_t *)p)[i];
    case LMX_INT64: return (double)((const int64_t *)p)[i];
    default: return 0;
  }
}

static inline int dt_ok(int dt) { return dt >= LMX_FLOAT32 && dt <= LMX_INT64; }

/* index k resolved into [0, A) as the CPU's pick_at */
__device__ static inline int64_t pick_at(const void *idx, int idt, int64_t k, int64_t A,
                                         int wrap) {
  double v = ld_dt(idx, idt, k);
  int64_t i = isfinite(v) && fabs(v) < 9.2e18 ? (int64_t)v : 0;
  if (i >= 0 && i < A) return i;
  if (wrap) return ((i % A) + A) % A;
  return i < 0 ? 0 : A - 1;
}

template <typename T>
__global__ void k_pick(int64_t outer, int64_t A, int64_t inner, T *y, const T *x,
                       const void *idx, int idt, int wrap, int acc) {
  LMX_CU_GRID_LOOP(e, outer * inner) {
    int64_t o = e / inner, j = e % inner, i = pick_at(idx, idt, e, A, wrap);
    double v = (double)lmx_cu_ld(x, (o * A + i) * inner + j);
    if (acc) v += (double)lmx_cu_ld(y, e);
    lmx_cu_st(y, e, v);
  }
}

template <typename T>
__global__ void k_pick_bwd(int64_t outer, int64_t A, int64_t inner, T *gx, const T *g,
                           const void *idx, int idt, int wrap, int acc) {
  LMX_CU_GRID_LOOP(e, outer * A * inner) {
    int64_t j = e % inner, a = (e / inner) % A, o = e / (A * inner), r = o * inner + j;
    double v = pick_at(idx, idt, r, A, wrap) == a ? (double)lmx_cu_ld(g, r) : 0.0;
    if (acc) v += (double)lmx_cu_ld(gx, e);
    lmx_cu_st(gx, e, v);
  }
}

template <typename T>
__global__ void k_cumsum(int64_t outer, int64_t len, int64_t inner, T *y, const void *x,
                         int xdt, int reverse, int acc) {
  LMX_CU_GRID_LOOP(c, outer * inner) {
    int64_t o = c / inner, j = c % inner;
    double s = 0;
    for (int64_t t = 0; t < len; t++) {
      int64_t e = (o * len + (reverse ? len - 1 - t : t)) * inner + j;
      s += ld_dt(x, xdt, e);
      lmx_cu_st(y, e, acc ? (double)lmx_cu_ld(y, e) + s : s);
    }
  }
}

int lmx_cu_pick(lmx_cu_stream s, int dt, int idt, int64_t outer, int64_t A, int64_t inner,
                void *y, const void *x, const void *idx, int wrap, int acc) {
  if (!dt_ok(idt) || A <= 0) return -1;
  int64_t n = outer * inner;
  if (n == 0) return 0;
  LMX_CU_DISPATCH_ALL(dt, return -1,
                      LMX_LAUNCH(k_pick<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, outer, A,
                                 inner, (T *)y, (const T *)x, idx, idt, wrap, acc));
  return lmx_cu_last_error();
}

int lmx_cu_pick_bwd(lmx_cu_stream s, int dt, int idt, int64_t outer, int64_t A, int64_t inner,
                    void *gx, const void *g, const void *idx, int wrap, int acc) {
  if (!dt_ok(idt) || A <= 0) return -1;
  int64_t n = outer * A * inner;
  if (n == 0) return 0;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_pick_bwd<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s,
                                   outer, A, inner, (T *)gx, (const T *)g, idx, idt, wrap,
                                   acc));
  return lmx_cu_last_error();
}

int lmx_cu_cumsum(lmx_cu_stream s, int xdt, int ydt, int64_t outer, int64_t len, int64_t inner,
                  void *y, const void *x, int reverse, int acc) {
  if (!dt_ok(xdt)) return -1;
  int64_t n = outer * inner;
  if (n == 0 || len == 0) return dt_ok(ydt) ? 0 : -1;
  LMX_CU_DISPATCH_ALL(ydt, return -1,
                      LMX_LAUNCH(k_cumsum<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, outer,
                                 len, inner, (T *)y, x, xdt, reverse, acc));
  return lmx_cu_last_error();
}

/* ---- gather_nd / scatter_nd: the indexed dims travel by value (M <= LMX_MAX_NDIM) ------- */

typedef struct {
  int M;
  int64_t dims[LMX_MAX_NDIM];
} nd_dims;

__device__ static inline int64_t nd_row(const void *idx, int idt, const nd_dims &d, int64_t nY,
                                        int64_t y) {
  int64_t r = 0;
  for (int k = 0; k < d.M; k++) {
    double v = ld_dt(idx, idt, k * nY + y);
    int64_t i = isfinite(v) && fabs(v) < 9.2e18 ? (int64_t)v : 0;
    if (i < 0) i += d.dims[k];
    i = i < 0 ? 0 : i >= d.dims[k] ? d.dims[k] - 1 : i;
    r = r * d.dims[k] + i;
  }
  return r;
}

template <typename T>
__global__ void k_gather_nd(nd_dims d, int64_t nY, int64_t inner, T *y, const T *data,
                            const void *idx, int idt, int acc) {
  LMX_CU_GRID_LOOP(e, nY * inner) {
    int64_t c = e / inner, j = e % inner, r = nd_row(idx, idt, d, nY, c);
    double v = (double)lmx_cu_ld(data, r * inner + j);
    if (acc) v += (double)lmx_cu_ld(y, e);
    lmx_cu_st(y, e, v);
  }
}

template <typename T>
__global__ void k_scatter_nd(nd_dims d, int64_t rows, int64_t nY, int64_t inner, T *out,
                             const T *src, const void *idx, int idt, int add, int acc) {
  LMX_CU_GRID_LOOP(e, rows * inner) {
    int64_t r = e / inner, j = e % inner;
    double v = 0;
    for (int64_t c = 0; c < nY; c++)
      if (nd_row(idx, idt, d, nY, c) == r) {
        double s = (double)lmx_cu_ld(src, c * inner + j);
        v = add ? v + s : s;
      }
    if (acc) v += (double)lmx_cu_ld(out, e);
    lmx_cu_st(out, e, v);
  }
}

static int nd_dims_of(int M, const int64_t *dims, nd_dims *d, int64_t *rows) {
  if (M < 1 || M > LMX_MAX_NDIM) return -1;
  d->M = M, *rows = 1;
  for (int k = 0; k < M; k++) {
    if (dims[k] <= 0) return -1;
    d->dims[k] = dims[k], *rows *= dims[k];
  }
  return 0;
}

int lmx_cu_gather_nd(lmx_cu_stream s, int dt, int idt, int M, const int64_t *dims, int64_t nY,
                     int64_t inner, void *y, const void *data, const void *idx, int acc) {
  nd_dims d;
  int64_t rows, n = nY * inner;
  if (!dt_ok(idt) || nd_dims_of(M, dims, &d, &rows)) return -1;
  if (n == 0) return 0;
  LMX_CU_DISPATCH_ALL(dt, return -1,
                      LMX_LAUNCH(k_gather_nd<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, d, nY,
                                 inner, (T *)y, (const T *)data, idx, idt, acc));
  return lmx_cu_last_error();
}

int lmx_cu_scatter_nd(lmx_cu_stream s, int dt, int idt, int M, const int64_t *dims, int64_t nY,
                      int64_t inner, void *out, const void *src, const void *idx, int add,
                      int acc) {
  nd_dims d;
  int64_t rows;
  if (!dt_ok(idt) || nd_dims_of(M, dims, &d, &rows)) return -1;
  int64_t n = rows * inner;
  if (n == 0) return 0;
  LMX_CU_DISPATCH_ALL(dt, return -1,
                      LMX_LAUNCH(k_scatter_nd<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, d,
                                 rows, nY, inner, (T *)out, (const T *)src, idx, idt, add, acc));
  return lmx_cu_last_error();
}
