/* elementwise.cu — unary math, scalar ops, equal-shape binary ops (forward and
 * backward), scaling / copy-add, sum of n arrays and the array layer's scalar op.
 *
 * One kernel template, k_ew<T, F>, walks n elements with a grid-stride loop; F is an
 * op functor computing the output from up to three inputs (x0, x1, x2: each NULL reads
 * as 0, like the CPU's `xp ? xp[i] : 0`) and two scalars, in the compute type (float for
 * float32 / float16, double otherwise, see cu_util.cuh). For float32 with every pointer
 * 16-byte aligned the loop moves four elements per load (lmx_f4) and finishes the tail
 * one by one. The op lists are the CPU's X-macro rows (kernels/cpu/elementwise.c), with
 * the same formulas (MXNet 1.9 mshadow_op.h); the CPU computes float32 exp / tanh with
 * its own polynomial (cpu_math.h) and these use the CUDA library's, so float32 results
 * agree to a few ulp, not bit for bit.
 */
#include "../cpu/cpu_kernels.h"
#include "cu_elementwise.h"
#include "cu_util.cuh"

/* ---- math on float and double (one name, both types) -------------------------------- */
#define M1(name, ff, df)                                                                  \
  __device__ static inline float name(float x) { return ff(x); }                          \
  __device__ static inline double name(double x) { return df(x); }
M1(m_exp, expf, exp)
M1(m_log, logf, log)
M1(m_sqrt, sqrtf, sqrt)
M1(m_fabs, fabsf, fabs)
M1(m_sin, sinf, sin)
M1(m_cos, cosf, cos)
M1(m_tanh, tanhf, tanh)
M1(m_floor, floorf, floor)
M1(m_ceil, ceilf, ceil)
M1(m_round, roundf, round)
M1(m_log1p, log1pf, log1p)
M1(m_expm1, expm1f, expm1)
#undef M1
__device__ static inline float m_pow(float a, float b) { return powf(a, b); }
__device__ static inline double m_pow(double a, double b) { return pow(a, b); }

#define SGN(v) ((v) > 0 ? 1 : (v) < 0 ? -1 : 0)

/* ---- the generic walk ------------------------------------------------------------- */

struct EwArgs {
  int64_t n;
  void *out;
  const void *in[3];
  double s0, s1;
  int acc, vec;
};

template <typename T, typename F>
__global__ void k_ew(EwArgs a) {
  typedef typename lmx_cu_acc<T>::type C;
  T *o = (T *)a.out;
  const T *p0 = (const T *)a.in[0], *p1 = (const T *)a.in[1], *p2 = (const T *)a.in[2];
  C s0 = (C)a.s0, s1 = (C)a.s1;
  int64_t start = 0;
  if (a.vec) { /* float32 only: the launcher sets vec when every pointer is aligned */
    int64_t n4 = a.n / 4;
    LMX_CU_GRID_LOOP(v, n4) {
      lmx_f4 x0 = {{0, 0, 0, 0}}, x1 = x0, x2 = x0, r;
      if (p0) x0 = ((const lmx_f4 *)(const void *)p0)[v];
      if (p1) x1 = ((const lmx_f4 *)(const void *)p1)[v];
      if (p2) x2 = ((const lmx_f4 *)(const void *)p2)[v];
      for (int k = 0; k < 4; k++)
        r.v[k] = (float)F::f((C)x0.v[k], (C)x1.v[k], (C)x2.v[k], s0, s1);
      lmx_f4 *ov = (lmx_f4 *)(void *)o;
      if (a.acc) {
        lmx_f4 old = ov[v];
        for (int k = 0; k < 4; k++) r.v[k] = old.v[k] + r.v[k];
      }
      ov[v] = r;
    }
    start = n4 * 4;
  }
  LMX_CU_GRID_LOOP(j, a.n - start) {
    int64_t i = start + j;
    C x0 = p0 ? lmx_cu_ld(p0, i) : (C)0, x1 = p1 ? lmx_cu_ld(p1, i) : (C)0;
    C x2 = p2 ? lmx_cu_ld(p2, i) : (C)0;
    C r = F::f(x0, x1, x2, s0, s1);
    if (a.acc) r = (C)lmx_cu_ld(o, i) + r;
    lmx_cu_st(o, i, r);
  }
}

template <typename T> struct IsF32 { enum { value = 0 }; };
template <> struct IsF32<float> { enum { value = 1 }; };

template <typename T, typename F>
static int ew_launch(lmx_cu_stream s, int64_t n, void *out, const void *i0, const void *i1,
                     const void *i2, double s0, double s1, int acc) {
  if (n <= 0) return 0;
  EwArgs a = {n, out, {i0, i1, i2}, s0, s1, acc, 0};
  int vec = IsF32<T>::value && lmx_cu_aligned16(out);
  for (int k = 0; k < 3; k++) vec = vec && (!a.in[k] || lmx_cu_aligned16(a.in[k]));
  a.vec = vec;
  LMX_LAUNCH((k_ew<T, F>), lmx_cu_blocks(a.vec ? n / 4 + 1 : n), LMX_CU_THREADS, 0, s, a);
  return lmx_cu_last_error();
}

/* ---- op functors: F::f(x0, x1, x2, s0, s1) ---------------------------------------- */

/* unary forward (x0 = x) and backward (x0 = g, x1 = x, x2 = y) */
#define UNARY_LIST(X)                                                   \
  X(COPY, x, g)                                                         \
  X(EXP, m_exp(x), g * y)                                               \
  X(LOG, m_log(x), g / x)                                               \
  X(SQRT, m_sqrt(x), g / (2 * y))                                       \
  X(RSQRT, 1 / m_sqrt(x), -g / (2 * x * m_sqrt(x)))                     \
  X(SQUARE, x * x, 2 * x * g)                                           \
  X(ABS, m_fabs(x), g * SGN(x))                                         \
  X(SIGN, SGN(x), 0)                                                    \
  X(SIN, m_sin(x), g * m_cos(x))                                        \
  X(COS, m_cos(x), -g * m_sin(x))                                       \
  X(TANH, m_tanh(x), g * (1 - y * y))                                   \
  X(SIGMOID, 1 / (1 + m_exp(-x)), g * y * (1 - y))                      \
  X(RELU, x > 0 ? x : 0, y > 0 ? g : 0)                                 \
  X(NEG, -x, -g)                                                        \
  X(RECIP, 1 / x, -g / (x * x))                                         \
  X(FLOOR, m_floor(x), 0)                                               \
  X(CEIL, m_ceil(x), 0)                                                 \
  X(ROUND, m_round(x), 0)                                               \
  X(SOFTRELU, x > 20 ? x : m_log1p(m_exp(x)), -g * m_expm1(-y))         \
  X(SOFTSIGN, x / (1 + m_fabs(x)), g / ((1 + m_fabs(x)) * (1 + m_fabs(x))))

#define DEF_UN(NAME, FWD, BWD)                                                            \
  struct UnF_##NAME {                                                                     \
    template <typename C>                                                                 \
    __device__ static C f(C x, C, C, C, C) { return (C)(FWD); }                           \
  };                                                                                      \
  struct UnB_##NAME {                                                                     \
    template <typename C>                                                                 \
    __device__ static C f(C g, C x, C y, C, C) { (void)g, (void)x, (void)y; return (C)(BWD); } \
  };
UNARY_LIST(DEF_UN)

/* scalar forward (x0 = x, s0 = s) and backward (x0 = g, x1 = x, x2 = y) */
#define SCALAR_LIST(X)                                                  \
  X(PLUS, x + s, g)                                                     \
  X(MINUS, x - s, g)                                                    \
  X(RMINUS, s - x, -g)                                                  \
  X(MUL, x * s, g * s)                                                  \
  X(DIV, x / s, g / s)                                                  \
  X(RDIV, s / x, -g * s / (x * x))                                      \
  X(POW, m_pow(x, s), g * s * m_pow(x, s - 1))                          \
  X(RPOW, m_pow(s, x), g * y * m_log(s))                                \
  X(MAX, x > s ? x : s, x >= s ? g : 0)                                 \
  X(MIN, x < s ? x : s, x <= s ? g : 0)                                 \
  X(EQ, x == s, 0)                                                      \
  X(NE, x != s, 0)                                                      \
  X(GT, x > s, 0)                                                       \
  X(GE, x >= s, 0)                                                      \
  X(LT, x < s, 0)                                                       \
  X(LE, x <= s, 0)

#define DEF_SC(NAME, FWD, BWD)                                                            \
  struct ScF_##NAME {                                                                     \
    template <typename C>                                                                 \
    __device__ static C f(C x, C, C, C s, C) { return (C)(FWD); }                         \
  };                                                                                      \
  struct ScB_##NAME {                                                                     \
    template <typename C>                                                                 \
    __device__ static C f(C g, C x, C y, C s, C) {                                        \
      (void)g, (void)x, (void)y, (void)s;                                                 \
      return (C)(BWD);                                                                    \
    }                                                                                     \
  };
SCALAR_LIST(DEF_SC)

/* equal-shape binary: forward (x0 = a, x1 = b), d/da and d/db (x0 = g, x1 = a, x2 = b) */
#define BINARY_LIST(X)                                                          \
  X(ADD, a + b, g, g)                                                           \
  X(SUB, a - b, g, -g)                                                          \
  X(MUL, a * b, g * b, g * a)                                                   \
  X(DIV, a / b, g / b, -g * a / (b * b))                                        \
  X(POW, m_pow(a, b), g * b * m_pow(a, b - 1), g * m_pow(a, b) * m_log(a))      \
  X(MAX, a > b ? a : b, a >= b ? g : 0, a < b ? g : 0)                          \
  X(MIN, a < b ? a : b, a <= b ? g : 0, a > b ? g : 0)

#define DEF_BI(NAME, FWD, DA, DB)                                                         \
  struct BiF_##NAME {                                                                     \
    template <typename C>                                                                 \
    __device__ static C f(C a, C b, C, C, C) { return (C)(FWD); }                         \
  };                                                                                      \
  struct BiA_##NAME {                                                                     \
    template <typename C>                                                                 \
    __device__ static C f(C g, C a, C b, C, C) { (void)a, (void)b; return (C)(DA); }      \
  };                                                                                      \
  struct BiB_##NAME {                                                                     \
    template <typename C>                                                                 \
    __device__ static C f(C g, C a, C b, C, C) { (void)a, (void)b; return (C)(DB); }      \
  };                                                                                      \
  /* the array layer's scalar op: a op s, and s op a (reverse) */                         \
  struct BiS_##NAME {                                                                     \
    template <typename C>                                                                 \
    __device__ static C f(C a, C, C, C b, C) { return (C)(FWD); }                         \
  };                                                                                      \
  struct BiR_##NAME {                                                                     \
    template <typename C>                                                                 \
    __device__ static C f(C b, C, C, C a, C) { return (C)(FWD); }                         \
  };
BINARY_LIST(DEF_BI)

struct Axpy { /* alpha * x */
  template <typename C>
  __device__ static C f(C x, C, C, C al, C) { return al * x; }
};
/* x0 + x1 (+ x2), left to right, as the CPU's add_n adds one array at a time */
struct Sum1 {
  template <typename C>
  __device__ static C f(C x0, C, C, C, C) { return x0; }
};
struct Sum2 {
  template <typename C>
  __device__ static C f(C x0, C x1, C, C, C) { return x0 + x1; }
};
struct Sum3 {
  template <typename C>
  __device__ static C f(C x0, C x1, C x2, C, C) { return x0 + x1 + x2; }
};

/* ---- launchers ---------------------------------------------------------------------- */

#define CASE_OP(P, NAME, ...) case LMX_##P##_##NAME: return ew_launch<T, __VA_ARGS__>
#define UN_CASE_F(NAME, F, B) CASE_OP(UN, NAME, UnF_##NAME)(s, n, y, x, 0, 0, 0, 0, acc);
#define UN_CASE_B(NAME, F, B) CASE_OP(UN, NAME, UnB_##NAME)(s, n, gx, g, x, y, 0, 0, acc);
#define SC_CASE_F(NAME, F, B) CASE_OP(SC, NAME, ScF_##NAME)(s, n, y, x, 0, 0, sc, 0, acc);
#define SC_CASE_B(NAME, F, B) CASE_OP(SC, NAME, ScB_##NAME)(s, n, gx, g, x, y, sc, 0, acc);
#define BI_CASE_F(NAME, F, A, B) CASE_OP(BIN, NAME, BiF_##NAME)(s, n, out, a, b, 0, 0, 0, acc);
#define BI_CASE_A(NAME, F, A, B) CASE_OP(BIN, NAME, BiA_##NAME)(s, n, gout, g, a, b, 0, 0, acc);
#define BI_CASE_B(NAME, F, A, B) CASE_OP(BIN, NAME, BiB_##NAME)(s, n, gout, g, a, b, 0, 0, acc);
#define BI_CASE_S(NAME, F, A, B) CASE_OP(BIN, NAME, BiS_##NAME)(st, n, out, a, 0, 0, sc, 0, 0);
#define BI_CASE_R(NAME, F, A, B) CASE_OP(BIN, NAME, BiR_##NAME)(st, n, out, a, 0, 0, sc, 0, 0);

int lmx_cu_unary(lmx_cu_stream s, int op, int dt, int64_t n, void *y, const void *x, int acc) {
  LMX_CU_DISPATCH_FLOAT(dt, return -1, switch (op) { UNARY_LIST(UN_CASE_F) default: return -1; });
  return -1;
}

int lmx_cu_unary_bwd(lmx_cu_stream s, int op, int dt, int64_t n, void *gx, const void *g,
                     const void *x, const void *y, int acc) {
  LMX_CU_DISPATCH_FLOAT(dt, return -1, switch (op) { UNARY_LIST(UN_CASE_B) default: return -1; });
  return -1;
}

int lmx_cu_scalar_op(lmx_cu_stream s, int op, int dt, int64_t n, void *y, const void *x,
                     double sc, int acc) {
  LMX_CU_DISPATCH_FLOAT(dt, return -1, switch (op) { SCALAR_LIST(SC_CASE_F) default: return -1; });
  return -1;
}

int lmx_cu_scalar_bwd(lmx_cu_stream s, int op, int dt, int64_t n, void *gx, const void *g,
                      const void *x, const void *y, double sc, int acc) {
  LMX_CU_DISPATCH_FLOAT(dt, return -1, switch (op) { SCALAR_LIST(SC_CASE_B) default: return -1; });
  return -1;
}

int lmx_cu_ew_binary(lmx_cu_stream s, int op, int dt, int64_t n, void *out, const void *a,
                     const void *b, int acc) {
  LMX_CU_DISPATCH_FLOAT(dt, return -1, switch (op) { BINARY_LIST(BI_CASE_F) default: return -1; });
  return -1;
}

int lmx_cu_ew_binary_bwd(lmx_cu_stream s, int op, int side, int dt, int64_t n, void *gout,
                         const void *g, const void *a, const void *b, int acc) {
  if (side == 0) {
    LMX_CU_DISPATCH_FLOAT(dt, return -1,
                          switch (op) { BINARY_LIST(BI_CASE_A) default: return -1; });
  } else {
    LMX_CU_DISPATCH_FLOAT(dt, return -1,
                          switch (op) { BINARY_LIST(BI_CASE_B) default: return -1; });
  }
  return -1;
}

int lmx_cu_scalar(lmx_cu_stream st, int op, int dt, int64_t n, void *out, const void *a,
                  double sc, int reverse) {
  if (reverse) {
    LMX_CU_DISPATCH_ALL(dt, return -1, switch (op) { BINARY_LIST(BI_CASE_R) default: return -1; });
  } else {
    LMX_CU_DISPATCH_ALL(dt, return -1, switch (op) { BINARY_LIST(BI_CASE_S) default: return -1; });
  }
  return -1;
}

/* plain copy of any dtype by element size (no conversion) */
template <typename U>
__global__ void k_copy(int64_t n, U *o, const U *x) {
  LMX_CU_GRID_LOOP(i, n) o[i] = x[i];
}

template <typename U>
static int copy_as(lmx_cu_stream s, int64_t n, void *out, const void *x) {
  LMX_LAUNCH(k_copy<U>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, n, (U *)out, (const U *)x);
  return lmx_cu_last_error();
}

int lmx_cu_scale(lmx_cu_stream s, int dt, int64_t n, void *out, const void *x, double alpha,
                 int acc) {
  if (dt < 0 || dt > LMX_INT64) return -1; /* no bfloat16 kernels on the GPU */
  if (alpha == 1.0 && !acc) {
    if (out == x || n <= 0) return 0;
    switch (dt) {
      case LMX_UINT8: case LMX_INT8: return copy_as<uint8_t>(s, n, out, x);
      case LMX_FLOAT16: return copy_as<uint16_t>(s, n, out, x);
      case LMX_FLOAT32: case LMX_INT32: return copy_as<uint32_t>(s, n, out, x);
      default: return copy_as<uint64_t>(s, n, out, x);
    }
  }
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        return ew_launch<T, Axpy>(s, n, out, x, 0, 0, alpha, 0, acc));
  return -1;
}

template <typename T>
static int sum_pass(lmx_cu_stream s, int64_t n, void *dst, const void *p0, const void *p1,
                    const void *p2) {
  if (p2) return ew_launch<T, Sum3>(s, n, dst, p0, p1, p2, 0, 0, 0);
  if (p1) return ew_launch<T, Sum2>(s, n, dst, p0, p1, 0, 0, 0, 0);
  return ew_launch<T, Sum1>(s, n, dst, p0, 0, 0, 0, 0, 0);
}

int lmx_cu_sum_n(lmx_cu_stream s, int dt, int64_t n, void *dst, const void *const *srcs,
                 int nsrc, int acc) {
  if (nsrc < 0 || (nsrc > 0 && !srcs)) return -1;
  if (dt != LMX_FLOAT32 && dt != LMX_FLOAT64 && dt != LMX_FLOAT16) return -1;
  if (nsrc == 0) return acc ? 0 : -1; /* dst = an empty sum: the caller fills zeros */
  /* The CPU's order: dst = s0, dst += s1, dst += s2, ... (or dst += s0 first with acc).
   * A pass without acc reads up to three sources, ((s0 + s1) + s2); a later pass (or
   * the first with acc) reads dst itself and up to two more, ((dst + sk) + sk+1). */
  int k = 0, rc = 0;
  while (k < nsrc) {
    int first = k == 0 && !acc;
    const void *p[3] = {0, 0, 0};
    int m = 0;
    if (!first) p[m++] = dst;
    while (m < 3 && k < nsrc) p[m++] = srcs[k++];
    LMX_CU_DISPATCH_FLOAT(dt, return -1, rc = sum_pass<T>(s, n, dst, p[0], p[1], p[2]));
    if (rc) return rc;
  }
  return 0;
}

/* clip's gradient: compared in double, as src/ops/cpu/elemwise.c does */
template <typename T>
__global__ void k_clip_bwd(int64_t n, T *gx, const T *g, const T *x, double lo, double hi,
                           int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  LMX_CU_GRID_LOOP(i, n) {
    double xv = (double)lmx_cu_ld(x, i);
    double v = (xv >= lo && xv <= hi) ? (double)lmx_cu_ld(g, i) : 0.0;
    if (acc) v += (double)lmx_cu_ld(gx, i);
    lmx_cu_st(gx, i, (C)v);
  }
}

int lmx_cu_clip_bwd(lmx_cu_stream s, int dt, int64_t n, void *gx, const void *g, const void *x,
                    double lo, double hi, int acc) {
  if (n <= 0) {
    LMX_CU_DISPATCH_FLOAT(dt, return -1, return 0);
    return -1;
  }
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_clip_bwd<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, n,
                                   (T *)gx, (const T *)g, (const T *)x, lo, hi, acc);
                        return lmx_cu_last_error());
  return -1;
}
