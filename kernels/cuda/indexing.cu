/* indexing.cu — CUDA kernels of take / Embedding, one_hot, where and the Sequence* ops
 * (cu_indexing.h). They mirror the loops of the CPU glue (src/ops/cpu/indexing.c,
 * sequence.c) element by element, one thread per output element (grid-stride loop, the
 * fixed geometry of cu_util.cuh):
 *  - indices, lengths and conditions of any dtype are read through double and truncated
 *    like the CPU's (int64_t) cast (non-finite -> 0; beyond the int64 range -> INT64_MIN,
 *    what x86 gives), then resolved by mode; "raise" clamps like "clip" so a kernel never
 *    reads out of bounds, and reports the first bad index to the device's raise word
 *    (cu_base.h), which the runtime reads at the next synchronisation;
 *  - take's backward (Embedding's weight gradient) is deterministic without atomics:
 *    one thread per (outer, inner) column walks the K indices in order, so repeated
 *    indices add in the CPU's order and the result is bit-identical; its parallelism is
 *    outer * inner (the embedding width), each thread doing K adds;
 *  - float16 loads widen to float and stores round with the CPU's own routine.
 */
#include "cuda_common.cuh"
#include "cu_indexing.h"
#include "cu_util.cuh"

/* ---- reading indices of any dtype ------------------------------------------------------- */

__device__ static inline double ld_any(const void *p, int dt, int64_t i) {
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

static inline int dtype_ok(int dt) { return dt >= LMX_FLOAT32 && dt <= LMX_INT64; }

/* (int64_t)v as the CPU computes it on x86, without the undefined behaviour */
__device__ static inline int64_t trunc_i64(double v) {
  if (v != v) return 0;
  if (v >= 9.2e18 || v <= -9.2e18) return INT64_MIN;
  return (int64_t)v;
}

/* index k resolved against a dim of size A > 0; raise mode reports a bad one to r */
__device__ static inline int64_t pick(const void *idx, int idt, int64_t k, int64_t A, int mode,
                                      lmx_cu_raise r) {
  double v = ld_any(idx, idt, k);
  int64_t i = isfinite(v) ? trunc_i64(v) : 0;
  if (i >= 0 && i < A) return i;
  if (mode == LMX_CU_TAKE_WRAP) return ((i % A) + A) % A;
  if (mode == LMX_CU_TAKE_RAISE) lmx_cu_raise_set(r, k, i);
  return i < 0 ? 0 : A - 1;
}

/* ---- take ------------------------------------------------------------------------------ */

template <typename T>
__global__ void k_take(int64_t outer, int64_t A, int64_t inner, int64_t K, T *out, const T *a,
                       const void *idx, int idt, int mode, lmx_cu_raise bad) {
  int64_t n = outer * K * inner;
  LMX_CU_GRID_LOOP(e, n) {
    int64_t j = e % inner, r = e / inner, k = r % K, o = r / K;
    /* one thread per index checks it, so a bad index is reported once */
    lmx_cu_raise rb = {j == 0 && o == 0 ? bad.word : NULL, bad.tag};
    int64_t i = pick(idx, idt, k, A, mode, rb);
    out[e] = a[(o * A + i) * inner + j];
  }
}

int lmx_cu_take(lmx_cu_stream s, int dt, int idt, int64_t outer, int64_t A, int64_t inner,
                int64_t K, void *out, const void *a, const void *idx, int mode, lmx_cu_raise bad) {
  if (!dtype_ok(idt) || mode < LMX_CU_TAKE_CLIP || mode > LMX_CU_TAKE_RAISE) return -1;
  int64_t n = outer * K * inner;
  if (n == 0) return 0;
  if (A <= 0) return -1;
  LMX_CU_DISPATCH_ALL(dt, return -1,
                      LMX_LAUNCH(k_take<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, outer, A,
                                 inner, K, (T *)out, (const T *)a, idx, idt, mode, bad));
  return lmx_cu_last_error();
}

template <typename T>
__global__ void k_take_bwd(int64_t outer, int64_t A, int64_t inner, int64_t K, T *ga,
                           const T *g, const void *idx, int idt, int mode, int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  const lmx_cu_raise no_raise = {NULL, 0}; /* the forward reported bad indices */
  LMX_CU_GRID_LOOP(e, outer * inner) {
    int64_t j = e % inner, o = e / inner;
    T *col = ga + o * A * inner + j;
    if (!acc)
      for (int64_t r = 0; r < A; r++) lmx_cu_st(col, r * inner, (C)0);
    for (int64_t k = 0; k < K; k++) {
      int64_t i = pick(idx, idt, k, A, mode, no_raise);
      C v = (C)lmx_cu_ld(col, i * inner) + (C)lmx_cu_ld(g, (o * K + k) * inner + j);
      lmx_cu_st(col, i * inner, v);
    }
  }
}

int lmx_cu_take_bwd(lmx_cu_stream s, int dt, int idt, int64_t outer, int64_t A, int64_t inner,
                    int64_t K, void *ga, const void *g, const void *idx, int mode, int acc) {
  if (!dtype_ok(idt) || mode < LMX_CU_TAKE_CLIP || mode > LMX_CU_TAKE_RAISE) return -1;
  int64_t n = outer * inner;
  if (n == 0 || (A == 0 && K == 0)) return 0;
  if (A <= 0) return -1;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_take_bwd<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s,
                                   outer, A, inner, K, (T *)ga, (const T *)g, idx, idt, mode,
                                   acc));
  return lmx_cu_last_error();
}

/* ---- one_hot ------------------------------------------------------------------------------ */

template <typename T>
__global__ void k_one_hot(int64_t K, int64_t depth, T *out, const void *idx, int idt, double on,
                          double off) {
  LMX_CU_GRID_LOOP(e, K * depth) {
    int64_t j = e % depth, k = e / depth;
    double v = ld_any(idx, idt, k);
    int hit = v >= 0 && v < (double)depth && (int64_t)v == j;
    lmx_cu_st(out, e, hit ? on : off);
  }
}

int lmx_cu_one_hot(lmx_cu_stream s, int odt, int idt, int64_t K, int64_t depth, void *out,
                   const void *idx, double on, double off) {
  if (!dtype_ok(idt)) return -1;
  int64_t n = K * depth;
  if (n == 0) return dtype_ok(odt) ? 0 : -1;
  LMX_CU_DISPATCH_ALL(odt, return -1,
                      LMX_LAUNCH(k_one_hot<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, K,
                                 depth, (T *)out, idx, idt, on, off));
  return lmx_cu_last_error();
}

/* ---- where -------------------------------------------------------------------------------- */

template <typename T>
__global__ void k_where(int64_t n, int64_t row, T *out, const void *cond, int cdt, const T *x,
                        const T *y, int acc) {
  LMX_CU_GRID_LOOP(i, n) {
    int c = ld_any(cond, cdt, i / row) != 0;
    double v = (double)lmx_cu_ld(c ? x : y, i);
    if (acc) v += (double)lmx_cu_ld(out, i);
    lmx_cu_st(out, i, v);
  }
}

template <typename T>
__global__ void k_where_bwd(int64_t n, int64_t row, int side, T *gout, const T *g,
                            const void *cond, int cdt, int acc) {
  LMX_CU_GRID_LOOP(i, n) {
    int c = ld_any(cond, cdt, i / row) != 0;
    double v = c == (side == 1) ? (double)lmx_cu_ld(g, i) : 0.0;
    if (acc) v += (double)lmx_cu_ld(gout, i);
    lmx_cu_st(gout, i, v);
  }
}

int lmx_cu_where(lmx_cu_stream s, int dt, int cdt, int64_t n, int64_t row, void *out,
                 const void *cond, const void *x, const void *y, int acc) {
  if (!dtype_ok(cdt) || row < 1) return -1;
  if (n == 0) return 0;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_where<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, n, row,
                                   (T *)out, cond, cdt, (const T *)x, (const T *)y, acc));
  return lmx_cu_last_error();
}

int lmx_cu_where_bwd(lmx_cu_stream s, int dt, int cdt, int64_t n, int64_t row, int side,
                     void *gout, const void *g, const void *cond, int acc) {
  if (!dtype_ok(cdt) || row < 1 || (side != 1 && side != 2)) return -1;
  if (n == 0) return 0;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_where_bwd<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, n,
                                   row, side, (T *)gout, (const T *)g, cond, cdt, acc));
  return lmx_cu_last_error();
}

/* ---- Sequence* ---------------------------------------------------------------------------- */

struct seq_geo {
  int64_t T, N, R;
  int axis;
};

/* sequence b's length, as the CPU glue's seq_len: NaN -> 0, above T -> T, below lo -> lo */
__device__ static inline int64_t seq_len(const void *len, int ldt, const seq_geo &g, int64_t b,
                                         int64_t lo) {
  int64_t L = g.T;
  if (len) {
    double v = ld_any(len, ldt, b);
    L = v != v ? 0 : v > (double)g.T ? g.T : trunc_i64(v);
  }
  return L < lo ? (lo <= g.T ? lo : g.T) : L;
}

/* the offset of element (t, b, r) */
__device__ static inline int64_t seq_at(const seq_geo &g, int64_t t, int64_t b, int64_t r) {
  return ((g.axis == 0 ? t * g.N + b : b * g.T + t) * g.R) + r;
}

/* splits a flat element index of the [T,N,R] / [N,T,R] data into (t, b, r) */
__device__ static inline void seq_split(const seq_geo &g, int64_t e, int64_t *t, int64_t *b,
                                        int64_t *r) {
  *r = e % g.R;
  int64_t q = e / g.R;
  if (g.axis == 0) *b = q % g.N, *t = q / g.N;
  else *t = q % g.T, *b = q / g.T;
}

template <typename T>
__global__ void k_seq_mask(seq_geo g, T *dst, const T *src, const void *len, int ldt,
                           double value, int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  LMX_CU_GRID_LOOP(e, g.T * g.N * g.R) {
    int64_t t, b, r;
    seq_split(g, e, &t, &b, &r);
    C v = t < seq_len(len, ldt, g, b, 0) ? (C)lmx_cu_ld(src, e) : (C)value;
    if (acc) v = (C)lmx_cu_ld(dst, e) + v;
    lmx_cu_st(dst, e, v);
  }
}

template <typename T>
__global__ void k_seq_last(seq_geo g, T *out, const T *x, const void *len, int ldt, int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  LMX_CU_GRID_LOOP(e, g.N * g.R) {
    int64_t r = e % g.R, b = e / g.R;
    C v = (C)lmx_cu_ld(x, seq_at(g, seq_len(len, ldt, g, b, 1) - 1, b, r));
    if (acc) v = (C)lmx_cu_ld(out, e) + v;
    lmx_cu_st(out, e, v);
  }
}

template <typename T>
__global__ void k_seq_last_bwd(seq_geo g, T *gx, const T *gy, const void *len, int ldt,
                               int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  LMX_CU_GRID_LOOP(e, g.T * g.N * g.R) {
    int64_t t, b, r;
    seq_split(g, e, &t, &b, &r);
    C v = acc ? (C)lmx_cu_ld(gx, e) : (C)0;
    if (t == seq_len(len, ldt, g, b, 1) - 1) v = v + (C)lmx_cu_ld(gy, b * g.R + r);
    lmx_cu_st(gx, e, v);
  }
}

template <typename T>
__global__ void k_seq_reverse(seq_geo g, T *dst, const T *src, const void *len, int ldt,
                              int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  LMX_CU_GRID_LOOP(e, g.T * g.N * g.R) {
    int64_t t, b, r;
    seq_split(g, e, &t, &b, &r);
    int64_t L = seq_len(len, ldt, g, b, 0);
    C v = (C)lmx_cu_ld(src, seq_at(g, t < L ? L - 1 - t : t, b, r));
    if (acc) v = (C)lmx_cu_ld(dst, e) + v;
    lmx_cu_st(dst, e, v);
  }
}

static int seq_args_ok(int ldt, const void *len, int axis, int64_t Tn, int64_t N, int64_t R) {
  return (!len || dtype_ok(ldt)) && (axis == 0 || axis == 1) && Tn >= 0 && N >= 0 && R >= 0;
}

int lmx_cu_seq_mask(lmx_cu_stream s, int dt, int ldt, int axis, int64_t Tn, int64_t N,
                    int64_t R, void *dst, const void *src, const void *len, double value,
                    int acc) {
  if (!seq_args_ok(ldt, len, axis, Tn, N, R)) return -1;
  seq_geo g = {Tn, N, R, axis};
  int64_t n = Tn * N * R;
  if (n == 0) return 0;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_seq_mask<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, g,
                                   (T *)dst, (const T *)src, len, ldt, value, acc));
  return lmx_cu_last_error();
}

int lmx_cu_seq_last(lmx_cu_stream s, int dt, int ldt, int axis, int64_t Tn, int64_t N,
                    int64_t R, void *out, const void *x, const void *len, int acc) {
  if (!seq_args_ok(ldt, len, axis, Tn, N, R)) return -1;
  seq_geo g = {Tn, N, R, axis};
  int64_t n = N * R;
  if (n == 0) return 0;
  if (Tn == 0) return -1;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_seq_last<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, g,
                                   (T *)out, (const T *)x, len, ldt, acc));
  return lmx_cu_last_error();
}

int lmx_cu_seq_last_bwd(lmx_cu_stream s, int dt, int ldt, int axis, int64_t Tn, int64_t N,
                        int64_t R, void *gx, const void *g, const void *len, int acc) {
  if (!seq_args_ok(ldt, len, axis, Tn, N, R)) return -1;
  seq_geo geo = {Tn, N, R, axis};
  int64_t n = Tn * N * R;
  if (n == 0) return 0;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_seq_last_bwd<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s,
                                   geo, (T *)gx, (const T *)g, len, ldt, acc));
  return lmx_cu_last_error();
}

int lmx_cu_seq_reverse(lmx_cu_stream s, int dt, int ldt, int axis, int64_t Tn, int64_t N,
                       int64_t R, void *dst, const void *src, const void *len, int acc) {
  if (!seq_args_ok(ldt, len, axis, Tn, N, R) || dst == src) return -1;
  seq_geo g = {Tn, N, R, axis};
  int64_t n = Tn * N * R;
  if (n == 0) return 0;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_seq_reverse<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s,
                                   g, (T *)dst, (const T *)src, len, ldt, acc));
  return lmx_cu_last_error();
}
