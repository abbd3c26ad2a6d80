/* nn.cu — CUDA kernels of softmax / log_softmax (with temperature and per-row lengths),
 * the SoftmaxOutput and regression-output gradients, MakeLoss's gradient, the LeakyReLU
 * family (leaky, elu, selu, gelu, prelu, rrelu with stored slopes) — cu_nn.h, the
 * formulas of kernels/cpu/nn.c.
 *
 * Softmax over the last axis (inner == 1) runs one block per row: each thread walks the
 * row with stride blockDim.x, the block combines the maxima and then the sums with warp
 * shuffles and a shared array (lmx_cu_block_reduce of cu_util.cuh: a fixed tree, so the
 * result does not depend on timing), and the threads write their elements. Other axes
 * (inner > 1) run one thread per (outer, inner) column, three passes along the axis, so
 * neighbouring threads read neighbouring addresses. Rows with lengths (use_length) and
 * the count of valid labels use the same two patterns. PReLU's gamma gradient is one
 * block per gamma element. float16 loads widen to float; float32 and float16 compute in
 * float, float64 in double.
 */
#include "cuda_common.cuh"
#include "cu_nn.h"
#include "cu_util.cuh"
#include "../cpu/cpu_kernels.h"

#define M1(name, ff, df)                                                                  \
  __device__ static inline float name(float x) { return ff(x); }                          \
  __device__ static inline double name(double x) { return df(x); }
M1(m_exp, expf, exp)
M1(m_log, logf, log)
M1(m_expm1, expm1f, expm1)
M1(m_erf, erff, erf)
#undef M1

struct RMax {
  template <typename C> __device__ static C identity() { return (C)-INFINITY; }
  template <typename C> __device__ static C merge(C a, C b) { return b > a ? b : a; }
};
struct RSum {
  template <typename C> __device__ static C identity() { return (C)0; }
  template <typename C> __device__ static C merge(C a, C b) { return a + b; }
};

/* threads of a row block: a multiple of 32 covering short rows, at most 256 */
static unsigned row_threads(int64_t len) {
  const int64_t most = LMX_CU_THREADS;
  int64_t t = (len + 31) / 32 * 32;
  return (unsigned)(t < 32 ? 32 : t > most ? most : t);
}
static unsigned row_blocks(int64_t rows) {
  const int64_t most = LMX_CU_MAX_BLOCKS;
  return (unsigned)(rows < 1 ? 1 : rows > most ? most : rows);
}

/* ---- softmax / log_softmax ---------------------------------------------------------- */

template <typename T>
__global__ void k_softmax_rows(int64_t outer, int64_t len, T *y, const T *x, double temp,
                               int logm, int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  __shared__ C sh[32];
  C it = (C)(1.0 / temp);
  for (int64_t r = blockIdx.x; r < outer; r += gridDim.x) {
    const T *xr = x + r * len;
    T *yr = y + r * len;
    C mx = RMax::identity<C>();
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      C v = (C)lmx_cu_ld(xr, j);
      mx = v > mx ? v : mx;
    }
    mx = lmx_cu_block_reduce<C, RMax>(mx, sh);
    __syncthreads(); /* sh is reused by the sum */
    C sum = 0;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
      sum += m_exp(((C)lmx_cu_ld(xr, j) - mx) * it);
    sum = lmx_cu_block_reduce<C, RSum>(sum, sh);
    __syncthreads(); /* and by the next row */
    C ls = logm ? m_log(sum) : (C)0;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      C z = ((C)lmx_cu_ld(xr, j) - mx) * it;
      C v = logm ? z - ls : m_exp(z) / sum;
      if (acc) v += (C)lmx_cu_ld(yr, j);
      lmx_cu_st(yr, j, v);
    }
  }
}

template <typename T>
__global__ void k_softmax_cols(int64_t outer, int64_t len, int64_t inner, T *y, const T *x,
                               double temp, int logm, int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  C it = (C)(1.0 / temp);
  LMX_CU_GRID_LOOP(r, outer * inner) {
    int64_t base = (r / inner) * len * inner + r % inner;
    C mx = RMax::identity<C>(), sum = 0;
    for (int64_t j = 0; j < len; j++) {
      C v = (C)lmx_cu_ld(x, base + j * inner);
      mx = v > mx ? v : mx;
    }
    for (int64_t j = 0; j < len; j++) sum += m_exp(((C)lmx_cu_ld(x, base + j * inner) - mx) * it);
    C ls = logm ? m_log(sum) : (C)0;
    for (int64_t j = 0; j < len; j++) {
      int64_t q = base + j * inner;
      C z = ((C)lmx_cu_ld(x, q) - mx) * it;
      C v = logm ? z - ls : m_exp(z) / sum;
      if (acc) v += (C)lmx_cu_ld(y, q);
      lmx_cu_st(y, q, v);
    }
  }
}

int lmx_cu_softmax(lmx_cu_stream s, int dt, int64_t outer, int64_t len, int64_t inner, void *y,
                   const void *x, double temperature, int logm, int acc) {
  if (outer * len * inner == 0) return dt <= LMX_FLOAT16 ? 0 : -1;
  if (inner == 1) {
    LMX_CU_DISPATCH_FLOAT(dt, return -1,
                          LMX_LAUNCH(k_softmax_rows<T>, row_blocks(outer), row_threads(len), 0,
                                     s, outer, len, (T *)y, (const T *)x, temperature, logm,
                                     acc));
  } else {
    LMX_CU_DISPATCH_FLOAT(dt, return -1,
                          LMX_LAUNCH(k_softmax_cols<T>, lmx_cu_blocks(outer * inner),
                                     LMX_CU_THREADS, 0, s, outer, len, inner, (T *)y,
                                     (const T *)x, temperature, logm, acc));
  }
  return lmx_cu_last_error();
}

/* gx = (g - Σ g·y) y (softmax) or g - exp(y) Σ g (log_softmax), times 1/temperature */
template <typename T>
__global__ void k_softmax_bwd_rows(int64_t outer, int64_t len, T *gx, const T *g, const T *y,
                                   double temp, int logm, int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  __shared__ C sh[32];
  C it = (C)(1.0 / temp);
  for (int64_t r = blockIdx.x; r < outer; r += gridDim.x) {
    const T *gr = g + r * len, *yr = y + r * len;
    T *xr = gx + r * len;
    C sum = 0;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
      sum += logm ? (C)lmx_cu_ld(gr, j) : (C)lmx_cu_ld(gr, j) * (C)lmx_cu_ld(yr, j);
    sum = lmx_cu_block_reduce<C, RSum>(sum, sh);
    __syncthreads();
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      C gv = (C)lmx_cu_ld(gr, j), yv = (C)lmx_cu_ld(yr, j);
      C v = (logm ? gv - m_exp(yv) * sum : (gv - sum) * yv) * it;
      if (acc) v += (C)lmx_cu_ld(xr, j);
      lmx_cu_st(xr, j, v);
    }
  }
}

template <typename T>
__global__ void k_softmax_bwd_cols(int64_t outer, int64_t len, int64_t inner, T *gx, const T *g,
                                   const T *y, double temp, int logm, int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  C it = (C)(1.0 / temp);
  LMX_CU_GRID_LOOP(r, outer * inner) {
    int64_t base = (r / inner) * len * inner + r % inner;
    C sum = 0;
    for (int64_t j = 0; j < len; j++) {
      int64_t q = base + j * inner;
      sum += logm ? (C)lmx_cu_ld(g, q) : (C)lmx_cu_ld(g, q) * (C)lmx_cu_ld(y, q);
    }
    for (int64_t j = 0; j < len; j++) {
      int64_t q = base + j * inner;
      C gv = (C)lmx_cu_ld(g, q), yv = (C)lmx_cu_ld(y, q);
      C v = (logm ? gv - m_exp(yv) * sum : (gv - sum) * yv) * it;
      if (acc) v += (C)lmx_cu_ld(gx, q);
      lmx_cu_st(gx, q, v);
    }
  }
}

int lmx_cu_softmax_bwd(lmx_cu_stream s, int dt, int64_t outer, int64_t len, int64_t inner,
                       void *gx, const void *g, const void *y, double temperature, int logm,
                       int acc) {
  if (outer * len * inner == 0) return dt <= LMX_FLOAT16 ? 0 : -1;
  if (inner == 1) {
    LMX_CU_DISPATCH_FLOAT(dt, return -1,
                          LMX_LAUNCH(k_softmax_bwd_rows<T>, row_blocks(outer), row_threads(len),
                                     0, s, outer, len, (T *)gx, (const T *)g, (const T *)y,
                                     temperature, logm, acc));
  } else {
    LMX_CU_DISPATCH_FLOAT(dt, return -1,
                          LMX_LAUNCH(k_softmax_bwd_cols<T>, lmx_cu_blocks(outer * inner),
                                     LMX_CU_THREADS, 0, s, outer, len, inner, (T *)gx,
                                     (const T *)g, (const T *)y, temperature, logm, acc));
  }
  return lmx_cu_last_error();
}

/* ---- softmax with a length per row ----------------------------------------------------- */

__device__ static inline int64_t row_len(const void *lens, int l64, int64_t r) {
  return l64 ? ((const int64_t *)lens)[r] : (int64_t)((const int32_t *)lens)[r];
}

template <typename T>
__global__ void k_softmax_len(int64_t outer, int64_t len, int64_t inner, T *y, const T *x,
                              const void *lens, int l64, double temp, int logm, int acc,
                              lmx_cu_raise bad) {
  typedef typename lmx_cu_acc<T>::type C;
  C it = (C)(1.0 / temp);
  LMX_CU_GRID_LOOP(r, outer * inner) {
    int64_t base = (r / inner) * len * inner + r % inner, m = row_len(lens, l64, r);
    if (m < 0 || m > len) lmx_cu_raise_set(bad, r, m);
    m = m < 0 ? 0 : m > len ? len : m;
    C mx = m > 0 ? (C)lmx_cu_ld(x, base) : (C)0, sum = 0;
    for (int64_t j = 1; j < m; j++) {
      C v = (C)lmx_cu_ld(x, base + j * inner);
      mx = v > mx ? v : mx;
    }
    for (int64_t j = 0; j < m; j++) sum += m_exp(((C)lmx_cu_ld(x, base + j * inner) - mx) * it);
    C ls = m > 0 ? m_log(sum) : (C)0;
    for (int64_t j = 0; j < len; j++) {
      int64_t q = base + j * inner;
      C z = ((C)lmx_cu_ld(x, q) - mx) * it;
      C v = j >= m ? (C)0 : logm ? z - ls : m_exp(z) / sum;
      if (acc) v += (C)lmx_cu_ld(y, q);
      lmx_cu_st(y, q, v);
    }
  }
}

template <typename T>
__global__ void k_softmax_len_bwd(int64_t outer, int64_t len, int64_t inner, T *gx, const T *g,
                                  const T *y, const void *lens, int l64, double temp, int logm,
                                  int acc, lmx_cu_raise bad) {
  typedef typename lmx_cu_acc<T>::type C;
  C it = (C)(1.0 / temp);
  LMX_CU_GRID_LOOP(r, outer * inner) {
    int64_t base = (r / inner) * len * inner + r % inner, m = row_len(lens, l64, r);
    if (m < 0 || m > len) lmx_cu_raise_set(bad, r, m);
    m = m < 0 ? 0 : m > len ? len : m;
    C sum = 0;
    for (int64_t j = 0; j < m; j++) {
      int64_t q = base + j * inner;
      sum += logm ? (C)lmx_cu_ld(g, q) : (C)lmx_cu_ld(g, q) * (C)lmx_cu_ld(y, q);
    }
    for (int64_t j = 0; j < len; j++) {
      int64_t q = base + j * inner;
      C gv = (C)lmx_cu_ld(g, q), yv = (C)lmx_cu_ld(y, q);
      C v = j >= m ? (C)0 : (logm ? gv - m_exp(yv) * sum : (gv - sum) * yv) * it;
      if (acc) v += (C)lmx_cu_ld(gx, q);
      lmx_cu_st(gx, q, v);
    }
  }
}

int lmx_cu_softmax_len(lmx_cu_stream s, int dt, int64_t outer, int64_t len, int64_t inner,
                       void *y, const void *x, const void *lens, int l64, double temperature,
                       int logm, int acc, lmx_cu_raise bad) {
  if (outer * len * inner == 0) return dt <= LMX_FLOAT16 ? 0 : -1;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_softmax_len<T>, lmx_cu_blocks(outer * inner),
                                   LMX_CU_THREADS, 0, s, outer, len, inner, (T *)y,
                                   (const T *)x, lens, l64, temperature, logm, acc, bad));
  return lmx_cu_last_error();
}

int lmx_cu_softmax_len_bwd(lmx_cu_stream s, int dt, int64_t outer, int64_t len, int64_t inner,
                           void *gx, const void *g, const void *y, const void *lens, int l64,
                           double temperature, int logm, int acc, lmx_cu_raise bad) {
  if (outer * len * inner == 0) return dt <= LMX_FLOAT16 ? 0 : -1;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_softmax_len_bwd<T>, lmx_cu_blocks(outer * inner),
                                   LMX_CU_THREADS, 0, s, outer, len, inner, (T *)gx,
                                   (const T *)g, (const T *)y, lens, l64, temperature, logm,
                                   acc, bad));
  return lmx_cu_last_error();
}

/* ---- valid counts, SoftmaxOutput, regression outputs, MakeLoss ----------------------- */

template <typename T>
__global__ void k_count(int64_t n, const T *x, int mode, double thr, float *count) {
  __shared__ double sh[32];
  double c = 0;
  int ithr = (int)thr;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    double v = (double)lmx_cu_ld(x, i);
    c += mode ? (v > thr) : ((int)v != ithr);
  }
  c = lmx_cu_block_reduce<double, RSum>(c, sh);
  if (threadIdx.x == 0) *count = (float)(c > 1 ? c : 1);
}

int lmx_cu_count(lmx_cu_stream s, int dt, int64_t n, const void *x, int mode, double thr,
                 float *count) {
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_count<T>, 1, LMX_CU_THREADS, 0, s, n, (const T *)x, mode,
                                   thr, count));
  return lmx_cu_last_error();
}

template <typename T>
__global__ void k_smo_grad(int64_t outer, int64_t k, int64_t inner, T *gx, const T *y,
                           const T *label, const T *g, double alpha, int use_ignore,
                           double ignore, double scale, const float *count, int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  C on = (C)(1.0 - alpha), off = (C)(k > 1 ? alpha / (double)(k - 1) : 0.0);
  C sc = (C)(count ? scale / (double)*count : scale);
  LMX_CU_GRID_LOOP(q, outer * k * inner) {
    int64_t i = q % inner, j = (q / inner) % k, o = q / (inner * k);
    C lv = (C)lmx_cu_ld(label, o * inner + i);
    int64_t lab = (int64_t)lv;
    int skip = use_ignore && lab == (int64_t)ignore;
    C v = skip ? (C)0 : ((C)lmx_cu_ld(y, q) - (j == lab ? on : off)) * sc;
    if (g) v *= (C)lmx_cu_ld(g, q);
    if (acc) v += (C)lmx_cu_ld(gx, q);
    lmx_cu_st(gx, q, v);
  }
}

int lmx_cu_softmax_output_grad(lmx_cu_stream s, int dt, int64_t outer, int64_t k,
                               int64_t inner, void *gx, const void *y, const void *label,
                               const void *g, double alpha, int use_ignore, double ignore,
                               double scale, const float *count, int acc) {
  int64_t n = outer * k * inner;
  if (n == 0) return dt <= LMX_FLOAT16 ? 0 : -1;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_smo_grad<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, outer,
                                   k, inner, (T *)gx, (const T *)y, (const T *)label,
                                   (const T *)g, alpha, use_ignore, ignore, scale, count, acc));
  return lmx_cu_last_error();
}

template <typename T>
__global__ void k_reg_grad(int64_t n, T *gx, const T *y, const T *label, int mae, double scale,
                           int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  C sc = (C)scale;
  LMX_CU_GRID_LOOP(i, n) {
    C d = (C)lmx_cu_ld(y, i) - (C)lmx_cu_ld(label, i);
    if (mae) d = (C)(d > 0 ? 1 : d < 0 ? -1 : 0);
    C v = d * sc;
    if (acc) v += (C)lmx_cu_ld(gx, i);
    lmx_cu_st(gx, i, v);
  }
}

int lmx_cu_regression_grad(lmx_cu_stream s, int dt, int64_t n, void *gx, const void *y,
                           const void *label, int mae, double scale, int acc) {
  if (n == 0) return dt <= LMX_FLOAT16 ? 0 : -1;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_reg_grad<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, n,
                                   (T *)gx, (const T *)y, (const T *)label, mae, scale, acc));
  return lmx_cu_last_error();
}

template <typename T>
__global__ void k_fill_div(int64_t n, T *y, double v, const float *count, int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  double w = count ? v / (double)*count : v;
  LMX_CU_GRID_LOOP(i, n) {
    C a = acc ? (C)lmx_cu_ld(y, i) + (C)w : (C)w;
    lmx_cu_st(y, i, a);
  }
}

int lmx_cu_fill_div(lmx_cu_stream s, int dt, int64_t n, void *y, double v, const float *count,
                    int acc) {
  if (n == 0) return dt <= LMX_FLOAT16 ? 0 : -1;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_fill_div<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, n,
                                   (T *)y, v, count, acc));
  return lmx_cu_last_error();
}

/* ---- LeakyReLU family ------------------------------------------------------------------- */

#define SELU_L 1.0507009873554804934193349852946
#define SELU_A 1.6732632423543772848170429916717
#define SQRT1_2 0.70710678118654752440
#define INV_SQRT_2PI 0.39894228040143267794

template <typename C> __device__ static inline C leaky_f(int kind, C x, C a) {
  switch (kind) {
    case LMX_LEAKY_ELU: return x > 0 ? x : a * m_expm1(x);
    case LMX_LEAKY_SELU: return (C)SELU_L * (x > 0 ? x : (C)SELU_A * m_expm1(x));
    case LMX_LEAKY_GELU: return (C)0.5 * x * (1 + m_erf(x * (C)SQRT1_2));
    default: return x > 0 ? x : a * x;
  }
}
template <typename C> __device__ static inline C leaky_b(int kind, C x, C y, C a) {
  switch (kind) {
    case LMX_LEAKY_ELU: return x > 0 ? (C)1 : y + a;
    case LMX_LEAKY_SELU: return x > 0 ? (C)SELU_L : y + (C)(SELU_L * SELU_A);
    case LMX_LEAKY_GELU:
      return (C)0.5 * (1 + m_erf(x * (C)SQRT1_2)) + x * (C)INV_SQRT_2PI * m_exp(-x * x / 2);
    default: return x > 0 ? (C)1 : a;
  }
}

template <typename T>
__global__ void k_leaky(int kind, int64_t n, T *y, const T *x, double slope, int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  C a = (C)slope;
  LMX_CU_GRID_LOOP(i, n) {
    C v = leaky_f<C>(kind, (C)lmx_cu_ld(x, i), a);
    if (acc) v += (C)lmx_cu_ld(y, i);
    lmx_cu_st(y, i, v);
  }
}

template <typename T>
__global__ void k_leaky_bwd(int kind, int64_t n, T *gx, const T *g, const T *x, const T *y,
                            double slope, int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  C a = (C)slope;
  LMX_CU_GRID_LOOP(i, n) {
    C yv = y ? (C)lmx_cu_ld(y, i) : (C)0;
    C v = (C)lmx_cu_ld(g, i) * leaky_b<C>(kind, (C)lmx_cu_ld(x, i), yv, a);
    if (acc) v += (C)lmx_cu_ld(gx, i);
    lmx_cu_st(gx, i, v);
  }
}

static int kind_ok(int kind) { return kind >= LMX_LEAKY_LEAKY && kind <= LMX_LEAKY_GELU; }

int lmx_cu_leaky(lmx_cu_stream s, int kind, int dt, int64_t n, void *y, const void *x,
                 double slope, int acc) {
  if (!kind_ok(kind)) return -1;
  if (n == 0) return dt <= LMX_FLOAT16 ? 0 : -1;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_leaky<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, kind, n,
                                   (T *)y, (const T *)x, slope, acc));
  return lmx_cu_last_error();
}

int lmx_cu_leaky_bwd(lmx_cu_stream s, int kind, int dt, int64_t n, void *gx, const void *g,
                     const void *x, const void *y, double slope, int acc) {
  if (!kind_ok(kind) || ((kind == LMX_LEAKY_ELU || kind == LMX_LEAKY_SELU) && !y)) return -1;
  if (n == 0) return dt <= LMX_FLOAT16 ? 0 : -1;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_leaky_bwd<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, kind,
                                   n, (T *)gx, (const T *)g, (const T *)x, (const T *)y, slope,
                                   acc));
  return lmx_cu_last_error();
}

/* ---- PReLU ----------------------------------------------------------------------------- */

template <typename T>
__global__ void k_prelu(int64_t outer, int64_t C_, int64_t inner, T *y, const T *x,
                        const T *gam, int64_t ng, int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  LMX_CU_GRID_LOOP(q, outer * C_ * inner) {
    C a = (C)lmx_cu_ld(gam, ng == 1 ? 0 : (q / inner) % C_), v = (C)lmx_cu_ld(x, q);
    C r = v > 0 ? v : a * v;
    if (acc) r += (C)lmx_cu_ld(y, q);
    lmx_cu_st(y, q, r);
  }
}

template <typename T>
__global__ void k_prelu_bwd_x(int64_t outer, int64_t C_, int64_t inner, T *gx, const T *g,
                              const T *x, const T *gam, int64_t ng, int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  LMX_CU_GRID_LOOP(q, outer * C_ * inner) {
    C a = (C)lmx_cu_ld(gam, ng == 1 ? 0 : (q / inner) % C_), gv = (C)lmx_cu_ld(g, q);
    C r = (C)lmx_cu_ld(x, q) > 0 ? gv : a * gv;
    if (acc) r += (C)lmx_cu_ld(gx, q);
    lmx_cu_st(gx, q, r);
  }
}

/* block c sums g*x over x <= 0 of channel c (every element when ng == 1) */
template <typename T>
__global__ void k_prelu_bwd_gamma(int64_t outer, int64_t C_, int64_t inner, T *ggam, const T *g,
                                  const T *x, int64_t ng, int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  __shared__ C sh[32];
  for (int64_t c = blockIdx.x; c < ng; c += gridDim.x) {
    int64_t per = ng == 1 ? outer * C_ * inner : outer * inner;
    C sum = 0;
    for (int64_t e = threadIdx.x; e < per; e += blockDim.x) {
      int64_t q = ng == 1 ? e : ((e / inner) * C_ + c) * inner + e % inner;
      C v = (C)lmx_cu_ld(x, q);
      if (v <= 0) sum += (C)lmx_cu_ld(g, q) * v;
    }
    sum = lmx_cu_block_reduce<C, RSum>(sum, sh);
    if (threadIdx.x == 0) {
      if (acc) sum += (C)lmx_cu_ld(ggam, c);
      lmx_cu_st(ggam, c, sum);
    }
    __syncthreads();
  }
}

int lmx_cu_prelu(lmx_cu_stream s, int dt, int64_t outer, int64_t C, int64_t inner, void *y,
                 const void *x, const void *gamma, int64_t ngamma, int acc) {
  int64_t n = outer * C * inner;
  if (ngamma != 1 && ngamma != C) return -1;
  if (n == 0) return dt <= LMX_FLOAT16 ? 0 : -1;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_prelu<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, outer, C,
                                   inner, (T *)y, (const T *)x, (const T *)gamma, ngamma, acc));
  return lmx_cu_last_error();
}

int lmx_cu_prelu_bwd(lmx_cu_stream s, int dt, int64_t outer, int64_t C, int64_t inner,
                     void *gx, void *ggamma, const void *g, const void *x, const void *gamma,
                     int64_t ngamma, int acc_x, int acc_g) {
  int64_t n = outer * C * inner;
  if ((ngamma != 1 && ngamma != C) || dt > LMX_FLOAT16) return -1;
  /* the gamma sums first: they read g, which gx may overwrite (in place) */
  if (ggamma && ngamma > 0) {
    LMX_CU_DISPATCH_FLOAT(dt, return -1,
                          LMX_LAUNCH(k_prelu_bwd_gamma<T>, row_blocks(ngamma), LMX_CU_THREADS,
                                     0, s, outer, C, inner, (T *)ggamma, (const T *)g,
                                     (const T *)x, ngamma, acc_g));
    int rc = lmx_cu_last_error();
    if (rc) return rc;
  }
  if (gx && n > 0) {
    LMX_CU_DISPATCH_FLOAT(dt, return -1,
                          LMX_LAUNCH(k_prelu_bwd_x<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s,
                                     outer, C, inner, (T *)gx, (const T *)g, (const T *)x,
                                     (const T *)gamma, ngamma, acc_x));
    return lmx_cu_last_error();
  }
  return 0;
}

/* ---- RReLU with stored slopes ---------------------------------------------------------- */

template <typename T>
__global__ void k_rrelu(int64_t n, T *y, const T *x, const T *a, int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  LMX_CU_GRID_LOOP(i, n) {
    C v = (C)lmx_cu_ld(x, i);
    C r = v > 0 ? v : (C)lmx_cu_ld(a, i) * v;
    if (acc) r += (C)lmx_cu_ld(y, i);
    lmx_cu_st(y, i, r);
  }
}

template <typename T>
__global__ void k_rrelu_bwd(int64_t n, T *gx, const T *g, const T *y, const T *a, int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  LMX_CU_GRID_LOOP(i, n) {
    C gv = (C)lmx_cu_ld(g, i);
    C r = (C)lmx_cu_ld(y, i) > 0 ? gv : (C)lmx_cu_ld(a, i) * gv;
    if (acc) r += (C)lmx_cu_ld(gx, i);
    lmx_cu_st(gx, i, r);
  }
}

int lmx_cu_rrelu(lmx_cu_stream s, int dt, int64_t n, void *y, const void *x, const void *slope,
                 int acc) {
  if (n == 0) return dt <= LMX_FLOAT16 ? 0 : -1;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_rrelu<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, n,
                                   (T *)y, (const T *)x, (const T *)slope, acc));
  return lmx_cu_last_error();
}

int lmx_cu_rrelu_bwd(lmx_cu_stream s, int dt, int64_t n, void *gx, const void *g, const void *y,
                     const void *slope, int acc) {
  if (n == 0) return dt <= LMX_FLOAT16 ? 0 : -1;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_rrelu_bwd<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, n,
                                   (T *)gx, (const T *)g, (const T *)y, (const T *)slope, acc));
  return lmx_cu_last_error();
}
