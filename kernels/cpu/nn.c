/* nn.c — activation-style kernels: softmax / log_softmax along an axis, the
 * SoftmaxOutput gradient, regression-output gradients, LeakyReLU variants, the
 * Dropout mask, softmax with a length per row (use_length) and rrelu with stored slopes.
 *
 * Axis ops view the array as [outer, len, inner] (the reduced axis in the middle); the
 * inner == 1 case runs on contiguous rows. Softmax subtracts the row maximum first
 * (numerically stable). Every function has a float32 and a float64 sibling made by one
 * macro and picked by dtype; other dtypes return -1. Parallel over rows above
 * LMX_OMP_MIN elements. MXNet 1.9 formulas: src/operator/nn/softmax-inl.h,
 * softmax_output-inl.h, regression_output-inl.h, leaky_relu-inl.h, mshadow_op.h.
 */
#include <tgmath.h>

#include "../../src/tensor/dtype.h"
#include "cpu_kernels.h"
#include "cpu_math.h"
#include "cpu_par.h"
#include "cpu_rowred.h"

#define SLOT(dt) ((dt) == LMX_FLOAT32 ? 0 : (dt) == LMX_FLOAT64 ? 1 : -1)
#define PUT(acc, dst, v) ((acc) ? ((dst) += (v)) : ((dst) = (v)))

/* ---- softmax along an axis ------------------------------------------------------- */

LMX_ROW_FNS(float, f32)
LMX_ROW_FNS(double, f64)

/* Softmax over a non-last axis (inner > 1) takes SM_COLS neighbouring softmaxes at a
 * time: each pass walks rows of contiguous columns, so the loops are unit-stride and
 * vectorise across the softmaxes (the per-element walk with stride `inner` ran at
 * 5-10 ns per element). */
enum { SM_COLS = 256 };

#define DEF_SOFTMAX(T, S)                                                                  \
  LMX_SIMD_CLONES                                                                           \
  static void softmax_##S(int64_t outer, int64_t len, int64_t inner, T *y, const T *x,      \
                          double temp, int logm, int acc) {                                \
    T it = (T)(1.0 / temp);                                                                \
    if (inner == 1) { /* rows: lane reductions (cpu_rowred.h), unit-stride loops */       \
      LMX_PAR_FOR_W(outer, len, o, {                                                       \
        const T *xr = x + o * len;                                                         \
        T *yr = y + o * len;                                                               \
        T mx = lmx_row_max_##S(xr, len);                                                   \
        if (!logm && !acc) {                                                               \
          T inv = 1 / lmx_row_expsum_##S(xr, yr, len, mx, it);                             \
          for (int64_t j = 0; j < len; j++) yr[j] *= inv;                                  \
        } else {                                                                           \
          T sum = lmx_row_sumexp_##S(xr, len, mx, it), ls = log(sum);                      \
          for (int64_t j = 0; j < len; j++) {                                              \
            T z = (xr[j] - mx) * it;                                                       \
            T v = logm ? z - ls : XEXP(z) / sum;                                           \
            PUT(acc, yr[j], v);                                                            \
          }                                                                                \
        }                                                                                  \
      });                                                                                  \
      return;                                                                              \
    }                                                                                      \
    if (!acc) { /* columns: blocks of up to SM_COLS softmaxes, vectorised across them */ \
      int64_t nb = (inner + SM_COLS - 1) / SM_COLS;                                        \
      LMX_PAR_FOR_W(outer * nb, len * (inner < SM_COLS ? inner : SM_COLS), t, {            \
        int64_t o = t / nb, c0 = (t % nb) * SM_COLS;                                       \
        int64_t nc = inner - c0 < SM_COLS ? inner - c0 : SM_COLS;                          \
        const T *xb = x + o * len * inner + c0;                                            \
        T *yb = y + o * len * inner + c0;                                                  \
        T m[SM_COLS], s[SM_COLS];                                                          \
        for (int64_t i = 0; i < nc; i++) m[i] = xb[i], s[i] = 0;                           \
        for (int64_t j = 1; j < len; j++)                                                  \
          for (int64_t i = 0; i < nc; i++) {                                               \
            T v = xb[j * inner + i];                                                       \
            m[i] = v > m[i] ? v : m[i];                                                    \
          }                                                                                \
        for (int64_t j = 0; j < len; j++)                                                  \
          for (int64_t i = 0; i < nc; i++) {                                               \
            T e = XEXP((T)((xb[j * inner + i] - m[i]) * it));                              \
            s[i] += e;                                                                     \
            if (!logm) yb[j * inner + i] = e;                                              \
          }                                                                                \
        if (logm) {                                                                        \
          for (int64_t i = 0; i < nc; i++) s[i] = log(s[i]);                               \
          for (int64_t j = 0; j < len; j++)                                                \
            for (int64_t i = 0; i < nc; i++)                                               \
              yb[j * inner + i] = (xb[j * inner + i] - m[i]) * it - s[i];                  \
        } else {                                                                           \
          for (int64_t i = 0; i < nc; i++) s[i] = 1 / s[i];                                \
          for (int64_t j = 0; j < len; j++)                                                \
            for (int64_t i = 0; i < nc; i++) yb[j * inner + i] *= s[i];                    \
        }                                                                                  \
      });                                                                                  \
      return;                                                                              \
    }                                                                                      \
    LMX_PAR_FOR_W(outer * inner, len, r, {                                                 \
      int64_t o = r / inner, in = r % inner, base = o * len * inner + in;                  \
      T mx = x[base];                                                                      \
      for (int64_t j = 1; j < len; j++) {                                                  \
        T v = x[base + j * inner];                                                         \
        mx = v > mx ? v : mx; /* not fmax: a libm call per element */                     \
      }                                                                                    \
      T sum = 0;                                                                           \
      if (!logm && !acc) { /* exps stored first: that loop vectorises, the sum is cheap */ \
        for (int64_t j = 0; j < len; j++)                                                  \
          y[base + j * inner] = XEXP((T)((x[base + j * inner] - mx) * it));                \
        for (int64_t j = 0; j < len; j++) sum += y[base + j * inner];                      \
        T inv = 1 / sum;                                                                   \
        for (int64_t j = 0; j < len; j++) y[base + j * inner] *= inv;                      \
      } else {                                                                             \
        for (int64_t j = 0; j < len; j++) sum += XEXP((T)((x[base + j * inner] - mx) * it)); \
        T ls = log(sum);                                                                   \
        for (int64_t j = 0; j < len; j++) {                                                \
          T z = (x[base + j * inner] - mx) * it;                                           \
          T v = logm ? z - ls : XEXP(z) / sum;                                             \
          PUT(acc, y[base + j * inner], v);                                                \
        }                                                                                  \
      }                                                                                    \
    });                                                                                    \
  }                                                                                        \
  LMX_SIMD_CLONES                                                                           \
  static void softmax_bwd_##S(int64_t outer, int64_t len, int64_t inner, T *gx, const T *g, \
                              const T *y, double temp, int logm, int acc) {                \
    T it = (T)(1.0 / temp);                                                                \
    if (inner == 1) {                                                                      \
      LMX_PAR_FOR_W(outer, len, o, {                                                       \
        const T *gr = g + o * len, *yr = y + o * len;                                      \
        T *xr = gx + o * len;                                                              \
        T s = logm ? lmx_row_sum_##S(gr, len) : lmx_row_dot_##S(gr, yr, len);              \
        for (int64_t j = 0; j < len; j++) {                                                \
          T v = logm ? gr[j] - XEXP(yr[j]) * s : (gr[j] - s) * yr[j];                      \
          PUT(acc, xr[j], v * it);                                                         \
        }                                                                                  \
      });                                                                                  \
      return;                                                                              \
    }                                                                                      \
    if (!acc) {                                                                            \
      int64_t nb = (inner + SM_COLS - 1) / SM_COLS;                                        \
      LMX_PAR_FOR_W(outer * nb, len * (inner < SM_COLS ? inner : SM_COLS), t, {            \
        int64_t o = t / nb, c0 = (t % nb) * SM_COLS, off = o * len * inner + c0;           \
        int64_t nc = inner - c0 < SM_COLS ? inner - c0 : SM_COLS;                          \
        const T *gb = g + off, *yb = y + off;                                              \
        T *xb = gx + off;                                                                  \
        T s[SM_COLS];                                                                      \
        for (int64_t i = 0; i < nc; i++) s[i] = 0;                                         \
        for (int64_t j = 0; j < len; j++)                                                  \
          for (int64_t i = 0; i < nc; i++)                                                 \
            s[i] += logm ? gb[j * inner + i] : gb[j * inner + i] * yb[j * inner + i];      \
        for (int64_t j = 0; j < len; j++)                                                  \
          for (int64_t i = 0; i < nc; i++) {                                               \
            int64_t q = j * inner + i;                                                     \
            xb[q] = (logm ? gb[q] - XEXP(yb[q]) * s[i] : (gb[q] - s[i]) * yb[q]) * it;     \
          }                                                                                \
      });                                                                                  \
      return;                                                                              \
    }                                                                                      \
    LMX_PAR_FOR_W(outer * inner, len, r, {                                                 \
      int64_t o = r / inner, in = r % inner, base = o * len * inner + in;                  \
      T s = 0;                                                                             \
      for (int64_t j = 0; j < len; j++)                                                    \
        s += logm ? g[base + j * inner] : g[base + j * inner] * y[base + j * inner];       \
      for (int64_t j = 0; j < len; j++) {                                                  \
        int64_t q = base + j * inner;                                                      \
        T v = logm ? g[q] - XEXP(y[q]) * s : (g[q] - s) * y[q];                             \
        PUT(acc, gx[q], v * it);                                                           \
      }                                                                                    \
    });                                                                                    \
  }
DEF_SOFTMAX(float, f32)
DEF_SOFTMAX(double, f64)

int lmx_cpu_softmax(int dt, int64_t outer, int64_t len, int64_t inner, void *y, const void *x,
                    double temperature, int logm, int acc) {
  int s = SLOT(dt);
  if (s < 0) return -1;
  if (s == 0) softmax_f32(outer, len, inner, y, x, temperature, logm, acc);
  else softmax_f64(outer, len, inner, y, x, temperature, logm, acc);
  return 0;
}

int lmx_cpu_softmax_bwd(int dt, int64_t outer, int64_t len, int64_t inner, void *gx,
                        const void *g, const void *y, double temperature, int logm, int acc) {
  int s = SLOT(dt);
  if (s < 0) return -1;
  if (s == 0) softmax_bwd_f32(outer, len, inner, gx, g, y, temperature, logm, acc);
  else softmax_bwd_f64(outer, len, inner, gx, g, y, temperature, logm, acc);
  return 0;
}

/* ---- SoftmaxOutput gradient -------------------------------------------------------- */

/* gx[outer,k,inner] (+)= (y - target) * scale (* g when g != NULL), where target is the
 * one-hot of label[outer,inner] (smoothed: 1 - alpha at the label, alpha/(k-1)
 * elsewhere); rows whose label equals `ignore` get 0 when use_ignore. Labels outside
 * [0, k) give no -1 anywhere (MXNet's comparison loop), never an out-of-bounds write. */
#define DEF_SMO(T, S)                                                                      \
  LMX_SIMD_CLONES                                                                           \
  static void smo_grad_##S(int64_t outer, int64_t k, int64_t inner, T *gx, const T *y,      \
                           const T *label, const T *g, double alpha, int use_ignore,       \
                           double ignore, double scale, int acc) {                         \
    T on = (T)(1.0 - alpha), off = (T)(k > 1 ? alpha / (double)(k - 1) : 0.0);             \
    LMX_PAR_FOR_W(outer * inner, k, r, {                                                   \
      int64_t o = r / inner, in = r % inner, base = o * k * inner + in;                    \
      int64_t lab = (int64_t)label[r];                                                     \
      int skip = use_ignore && (int64_t)label[r] == (int64_t)ignore;                       \
      for (int64_t j = 0; j < k; j++) {                                                    \
        int64_t q = base + j * inner;                                                      \
        T v = skip ? 0 : (y[q] - (j == lab ? on : off)) * (T)scale;                        \
        if (g) v *= g[q];                                                                  \
        PUT(acc, gx[q], v);                                                                \
      }                                                                                    \
    });                                                                                    \
  }
DEF_SMO(float, f32)
DEF_SMO(double, f64)

int lmx_cpu_softmax_output_grad(int dt, int64_t outer, int64_t k, int64_t inner, void *gx,
                                const void *y, const void *label, const void *g, double alpha,
                                int use_ignore, double ignore, double scale, int acc) {
  int s = SLOT(dt);
  if (s < 0) return -1;
  if (s == 0) smo_grad_f32(outer, k, inner, gx, y, label, g, alpha, use_ignore, ignore, scale, acc);
  else smo_grad_f64(outer, k, inner, gx, y, label, g, alpha, use_ignore, ignore, scale, acc);
  return 0;
}

/* ---- regression outputs ------------------------------------------------------------ */

/* gx[n] (+)= (y - label) * scale, or sign(y - label) * scale when mae. label[n]. */
#define DEF_REG(T, S)                                                                      \
  static void reg_grad_##S(int64_t n, T *gx, const T *y, const T *label, int mae,          \
                           double scale, int acc) {                                        \
    T sc = (T)scale;                                                                       \
    LMX_PAR_FOR(n, i, {                                                                    \
      T d = y[i] - label[i];                                                               \
      if (mae) d = (T)(d > 0 ? 1 : d < 0 ? -1 : 0);                                        \
      PUT(acc, gx[i], d * sc);                                                             \
    });                                                                                    \
  }
DEF_REG(float, f32)
DEF_REG(double, f64)

int lmx_cpu_regression_grad(int dt, int64_t n, void *gx, const void *y, const void *label,
                            int mae, double scale, int acc) {
  int s = SLOT(dt);
  if (s < 0) return -1;
  if (s == 0) reg_grad_f32(n, gx, y, label, mae, scale, acc);
  else reg_grad_f64(n, gx, y, label, mae, scale, acc);
  return 0;
}

/* ---- LeakyReLU family (elementwise kinds) ------------------------------------------ */

#define SELU_L 1.0507009873554804934193349852946
#define SELU_A 1.6732632423543772848170429916717
#define SQRT1_2 0.70710678118654752440
#define INV_SQRT_2PI 0.39894228040143267794

#define DEF_LEAKY(T, S)                                                                    \
  static T leaky_f_##S(int kind, T x, T a) {                                               \
    switch (kind) {                                                                        \
      case LMX_LEAKY_ELU: return x > 0 ? x : a * expm1(x);                                 \
      case LMX_LEAKY_SELU: return (T)SELU_L * (x > 0 ? x : (T)SELU_A * expm1(x));          \
      case LMX_LEAKY_GELU: return (T)0.5 * x * (1 + erf(x * (T)SQRT1_2));                  \
      default: return x > 0 ? x : a * x;                                                   \
    }                                                                                      \
  }                                                                                        \
  static T leaky_b_##S(int kind, T x, T y, T a) {                                          \
    switch (kind) {                                                                        \
      case LMX_LEAKY_ELU: return x > 0 ? 1 : y + a;                                        \
      case LMX_LEAKY_SELU: return x > 0 ? (T)SELU_L : y + (T)(SELU_L * SELU_A);            \
      case LMX_LEAKY_GELU:                                                                 \
        return (T)0.5 * (1 + erf(x * (T)SQRT1_2)) + x * (T)INV_SQRT_2PI * exp(-x * x / 2); \
      default: return x > 0 ? 1 : a;                                                       \
    }                                                                                      \
  }                                                                                        \
  LMX_SIMD_CLONES                                                                          \
  static void leaky_##S(int kind, int64_t n, T *y, const T *x, double slope, int acc) {    \
    T a = (T)slope;                                                                        \
    LMX_PAR_FOR(n, i, PUT(acc, y[i], leaky_f_##S(kind, x[i], a)););                        \
  }                                                                                        \
  LMX_SIMD_CLONES                                                                           \
  static void leaky_bwd_##S(int kind, int64_t n, T *gx, const T *g, const T *x, const T *y, \
                            double slope, int acc) {                                       \
    T a = (T)slope;                                                                        \
    LMX_PAR_FOR(n, i, PUT(acc, gx[i], g[i] * leaky_b_##S(kind, x[i], y[i], a)););          \
  }
DEF_LEAKY(float, f32)
DEF_LEAKY(double, f64)

int lmx_cpu_leaky(int kind, int dt, int64_t n, void *y, const void *x, double slope, int acc) {
  int s = SLOT(dt);
  if (s < 0) return -1;
  if (s == 0) leaky_f32(kind, n, y, x, slope, acc);
  else leaky_f64(kind, n, y, x, slope, acc);
  return 0;
}

int lmx_cpu_leaky_bwd(int kind, int dt, int64_t n, void *gx, const void *g, const void *x,
                      const void *y, double slope, int acc) {
  int s = SLOT(dt);
  if (s < 0) return -1;
  if (s == 0) leaky_bwd_f32(kind, n, gx, g, x, y, slope, acc);
  else leaky_bwd_f64(kind, n, gx, g, x, y, slope, acc);
  return 0;
}

/* ---- PReLU: x[outer, C, inner], gamma[C] (or [1]) ------------------------------------ */

#define DEF_PRELU(T, S)                                                                    \
  static void prelu_##S(int64_t outer, int64_t C, int64_t inner, T *y, const T *x,          \
                        const T *gam, int64_t ng, int acc) {                               \
    LMX_PAR_FOR_W(outer * C, inner, r, {                                                   \
      T a = gam[ng == 1 ? 0 : r % C];                                                      \
      for (int64_t j = 0; j < inner; j++) {                                                \
        T v = x[r * inner + j];                                                            \
        PUT(acc, y[r * inner + j], v > 0 ? v : a * v);                                     \
      }                                                                                    \
    });                                                                                    \
  }                                                                                        \
  static void prelu_bwd_##S(int64_t outer, int64_t C, int64_t inner, T *gx, T *ggam,        \
                            const T *g, const T *x, const T *gam, int64_t ng, int acc_x,   \
                            int acc_g) {                                                   \
    if (ggam && !acc_g)                                                                    \
      for (int64_t c = 0; c < ng; c++) ggam[c] = 0;                                        \
    for (int64_t r = 0; r < outer * C; r++) {                                              \
      int64_t c = ng == 1 ? 0 : r % C;                                                     \
      T a = gam[c], sg = 0;                                                                \
      for (int64_t j = 0; j < inner; j++) {                                                \
        int64_t q = r * inner + j;                                                         \
        T v = x[q];                                                                        \
        if (gx) PUT(acc_x, gx[q], v > 0 ? g[q] : a * g[q]);                                \
        if (v <= 0) sg += g[q] * v;                                                        \
      }                                                                                    \
      if (ggam) ggam[c] += sg;                                                             \
    }                                                                                      \
  }
DEF_PRELU(float, f32)
DEF_PRELU(double, f64)

int lmx_cpu_prelu(int dt, int64_t outer, int64_t C, int64_t inner, void *y, const void *x,
                  const void *gamma, int64_t ngamma, int acc) {
  int s = SLOT(dt);
  if (s < 0) return -1;
  if (s == 0) prelu_f32(outer, C, inner, y, x, gamma, ngamma, acc);
  else prelu_f64(outer, C, inner, y, x, gamma, ngamma, acc);
  return 0;
}

int lmx_cpu_prelu_bwd(int dt, int64_t outer, int64_t C, int64_t inner, void *gx, void *ggamma,
                      const void *g, const void *x, const void *gamma, int64_t ngamma,
                      int acc_x, int acc_g) {
  int s = SLOT(dt);
  if (s < 0) return -1;
  if (s == 0) prelu_bwd_f32(outer, C, inner, gx, ggamma, g, x, gamma, ngamma, acc_x, acc_g);
  else prelu_bwd_f64(outer, C, inner, gx, ggamma, g, x, gamma, ngamma, acc_x, acc_g);
  return 0;
}

/* ---- Dropout mask ------------------------------------------------------------------ */

/* mask[n] holds uniform draws in [0, 1); turned in place into 0 (draw < p) or 1/(1-p). */
int lmx_cpu_dropout_mask(int dt, int64_t n, void *mask, double p) {
  int s = SLOT(dt);
  if (s < 0) return -1;
  double keep = p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
  if (s == 0) {
    float *m = mask, kf = (float)keep, pf = (float)p;
    LMX_PAR_FOR(n, i, m[i] = m[i] < pf ? 0.0f : kf;);
  } else {
    double *m = mask;
    LMX_PAR_FOR(n, i, m[i] = m[i] < p ? 0.0 : keep;);
  }
  return 0;
}

/* ---- softmax with a length per row (use_length) ------------------------------------- */

/* Row r = o * inner + i of x[outer, len, inner] uses its first lens[r] positions (lens is
 * int32, or int64 when l64); the others get 0. MXNet's SoftmaxWithLength: the max and the
 * sum run over j < lens[r] only, and a row of length 0 is all zeros. Callers check every
 * length against [0, len] first (lmx_cpu_lengths_check). */
static inline int64_t row_len(const void *lens, int l64, int64_t r) {
  return l64 ? ((const int64_t *)lens)[r] : (int64_t)((const int32_t *)lens)[r];
}

int64_t lmx_cpu_lengths_check(const void *lens, int l64, int64_t n, int64_t len) {
  for (int64_t r = 0; r < n; r++) {
    int64_t v = row_len(lens, l64, r);
    if (v < 0 || v > len) return r;
  }
  return -1;
}

#define DEF_SOFTMAX_LEN(T, S)                                                              \
  static void softmax_len_##S(int64_t outer, int64_t len, int64_t inner, T *y, const T *x,  \
                              const void *lens, int l64, double temp, int logm, int acc) { \
    T it = (T)(1.0 / temp);                                                                \
    LMX_PAR_FOR_W(outer * inner, len, r, {                                                 \
      int64_t o = r / inner, in = r % inner, base = o * len * inner + in;                  \
      int64_t m = row_len(lens, l64, r);                                                   \
      T mx = m > 0 ? x[base] : 0, sum = 0;                                                 \
      for (int64_t j = 1; j < m; j++) {                                                    \
        T v = x[base + j * inner];                                                         \
        mx = v > mx ? v : mx;                                                              \
      }                                                                                    \
      for (int64_t j = 0; j < m; j++) sum += XEXP((T)((x[base + j * inner] - mx) * it));   \
      T ls = m > 0 ? log(sum) : 0;                                                         \
      for (int64_t j = 0; j < len; j++) {                                                  \
        T z = (x[base + j * inner] - mx) * it;                                             \
        T v = j >= m ? 0 : logm ? z - ls : XEXP(z) / sum;                                  \
        PUT(acc, y[base + j * inner], v);                                                  \
      }                                                                                    \
    });                                                                                    \
  }                                                                                        \
  static void softmax_len_bwd_##S(int64_t outer, int64_t len, int64_t inner, T *gx,         \
                                  const T *g, const T *y, const void *lens, int l64,       \
                                  double temp, int logm, int acc) {                        \
    T it = (T)(1.0 / temp);                                                                \
    LMX_PAR_FOR_W(outer * inner, len, r, {                                                 \
      int64_t o = r / inner, in = r % inner, base = o * len * inner + in;                  \
      int64_t m = row_len(lens, l64, r);                                                   \
      T s = 0;                                                                             \
      for (int64_t j = 0; j < m; j++)                                                      \
        s += logm ? g[base + j * inner] : g[base + j * inner] * y[base + j * inner];       \
      for (int64_t j = 0; j < len; j++) {                                                  \
        int64_t q = base + j * inner;                                                      \
        T v = j >= m ? 0 : logm ? g[q] - XEXP(y[q]) * s : (g[q] - s) * y[q];                \
        PUT(acc, gx[q], v * it);                                                           \
      }                                                                                    \
    });                                                                                    \
  }
DEF_SOFTMAX_LEN(float, f32)
DEF_SOFTMAX_LEN(double, f64)

int lmx_cpu_softmax_len(int dt, int64_t outer, int64_t len, int64_t inner, void *y,
                        const void *x, const void *lens, int l64, double temperature, int logm,
                        int acc) {
  int s = SLOT(dt);
  if (s < 0) return -1;
  if (s == 0) softmax_len_f32(outer, len, inner, y, x, lens, l64, temperature, logm, acc);
  else softmax_len_f64(outer, len, inner, y, x, lens, l64, temperature, logm, acc);
  return 0;
}

int lmx_cpu_softmax_len_bwd(int dt, int64_t outer, int64_t len, int64_t inner, void *gx,
                            const void *g, const void *y, const void *lens, int l64,
                            double temperature, int logm, int acc) {
  int s = SLOT(dt);
  if (s < 0) return -1;
  if (s == 0) softmax_len_bwd_f32(outer, len, inner, gx, g, y, lens, l64, temperature, logm, acc);
  else softmax_len_bwd_f64(outer, len, inner, gx, g, y, lens, l64, temperature, logm, acc);
  return 0;
}

/* ---- RReLU with a stored slope per element ------------------------------------------ */

/* MXNet's rrelu in training: y = x > 0 ? x : slope[i] * x (xelu); the gradient tests the
 * output, g * (y > 0 ? 1 : slope[i]) (xelu_grad(output, mask)). */
#define DEF_RRELU(T, S)                                                                    \
  static void rrelu_##S(int64_t n, T *y, const T *x, const T *a, int acc) {                \
    LMX_PAR_FOR(n, i, PUT(acc, y[i], x[i] > 0 ? x[i] : a[i] * x[i]););                     \
  }                                                                                        \
  static void rrelu_bwd_##S(int64_t n, T *gx, const T *g, const T *y, const T *a, int acc) { \
    LMX_PAR_FOR(n, i, PUT(acc, gx[i], y[i] > 0 ? g[i] : a[i] * g[i]););                    \
  }
DEF_RRELU(float, f32)
DEF_RRELU(double, f64)

int lmx_cpu_rrelu(int dt, int64_t n, void *y, const void *x, const void *slope, int acc) {
  int s = SLOT(dt);
  if (s < 0) return -1;
  if (s == 0) rrelu_f32(n, y, x, slope, acc);
  else rrelu_f64(n, y, x, slope, acc);
  return 0;
}

int lmx_cpu_rrelu_bwd(int dt, int64_t n, void *gx, const void *g, const void *y,
                      const void *slope, int acc) {
  int s = SLOT(dt);
  if (s < 0) return -1;
  if (s == 0) rrelu_bwd_f32(n, gx, g, y, slope, acc);
  else rrelu_bwd_f64(n, gx, g, y, slope, acc);
  return 0;
}
