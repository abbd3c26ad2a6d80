/* norm.c — BatchNorm and LayerNorm forward/backward on [outer, C, inner] data.
 *
 * BatchNorm normalizes each channel c over outer × inner (parallel over channels);
 * LayerNorm normalizes each (outer, inner) position over C (parallel over positions).
 * Statistics are accumulated in double whatever the dtype. BatchNorm's `invstd` is
 * 1/sqrt(var + eps) with the biased variance, MXNet's saved form (its "var" output);
 * the moving statistics take the biased variance with momentum. Gradients follow MXNet
 * (src/operator/nn/batch_norm.cc, layer_norm-inl.h).
 */
#include <math.h>

#include "../../src/tensor/dtype.h"
#include "cpu_kernels.h"
#include "cpu_par.h"

#define PUT(acc, dst, v) ((acc) ? ((dst) += (v)) : ((dst) = (v)))

/* Channel sums in 32 float lanes (two AVX-512 or four AVX2 accumulators per sum, so the
 * adds of one lane do not wait on each other) that carry on across the channel's rows and
 * are flushed into double after BN_FILL additions per lane: a single double accumulator
 * is a serial chain the compiler may not reorder, and double lanes fed from float did not
 * vectorise either. Rows shorter than the lanes (ResNet's 4x4 planes, MobileNet's 7x7)
 * take a 16-wide step; what is left (fewer than 16) goes to the doubles directly. Flushing
 * once per row instead made the 16-float rows of a 4x4 plane cost 32 serial double adds
 * each (BatchNorm's backward 4x slower than PyTorch's there; bench/README.md).
 * Statistics take one pass over x (sums of d = x - k and d² with k the channel's first
 * element, which keeps the cancellation in var = E[d²] - E[d]² small), the output a
 * second; the backward pass reads x and g once for its two sums and once more for gx. Per
 * element the arithmetic is a few multiply-adds in T with per-channel coefficients, on
 * x - mean so that a large mean does not cancel. */
#define BN_LANES 32
#define BN_FILL 64 /* additions per float lane between flushes into double */
#define BN_ROWS(b, c, ...)                                                                 \
  for (int64_t o = 0; o < (b)->outer; o++) {                                               \
    int64_t base = (o * (b)->C + (c)) * (b)->inner;                                        \
    __VA_ARGS__                                                                            \
  }
/* t1 += Σ E1, t2 += Σ E2 over channel c's elements (E1, E2: expressions of the element's
 * index k, in T), lanes as above; D1, D2: the same in double for the leftover elements. */
#define BN_SUMS(T, b, c, t1, t2, E1, E2, D1, D2)                                           \
  do {                                                                                     \
    T s1_[BN_LANES] = {0}, s2_[BN_LANES] = {0};                                            \
    int64_t in_ = (b)->inner, fill_ = 0;                                                   \
    BN_ROWS(b, c, {                                                                        \
      int64_t i_ = 0;                                                                      \
      while (in_ - i_ >= 16) {                                                             \
        int64_t st_ = (in_ - i_) / BN_LANES, e_;                                           \
        if (st_ > BN_FILL - fill_) st_ = BN_FILL - fill_;                                  \
        if (st_ > 0) {                                                                     \
          for (e_ = i_ + st_ * BN_LANES; i_ < e_; i_ += BN_LANES)                          \
            for (int j = 0; j < BN_LANES; j++) {                                           \
              int64_t k = base + i_ + j;                                                   \
              s1_[j] += (E1), s2_[j] += (E2);                                              \
            }                                                                              \
          fill_ += st_;                                                                    \
        } else { /* 16 to 31 left */                                                       \
          for (int j = 0; j < 16; j++) {                                                   \
            int64_t k = base + i_ + j;                                                     \
            s1_[j] += (E1), s2_[j] += (E2);                                                \
          }                                                                                \
          i_ += 16, fill_++;                                                               \
        }                                                                                  \
        if (fill_ == BN_FILL) {                                                            \
          for (int j = 0; j < BN_LANES; j++) t1 += s1_[j], t2 += s2_[j], s1_[j] = s2_[j] = 0; \
          fill_ = 0;                                                                       \
        }                                                                                  \
      }                                                                                    \
      for (; i_ < in_; i_++) {                                                             \
        int64_t k = base + i_;                                                             \
        t1 += (D1), t2 += (D2);                                                            \
      }                                                                                    \
    })                                                                                     \
    for (int j = 0; j < BN_LANES; j++) t1 += s1_[j], t2 += s2_[j];                         \
  } while (0)

#define DEF_BN(T, S)                                                                       \
  LMX_SIMD_CLONES                                                                           \
  static void bn_fwd_##S(const lmx_cpu_bn *b, const T *x, T *y, const T *gam, const T *bet, \
                         T *mean, T *invstd, T *mmean, T *mvar, int acc) {                 \
    int64_t cnt = b->outer * b->inner, in = b->inner;                                      \
    LMX_PAR_FOR_W(b->C, cnt, c, {                                                          \
      double m, is;                                                                        \
      if (b->batch_stats) {                                                                \
        double t1 = 0, t2 = 0;                                                             \
        T tk = cnt ? x[c * in] : (T)0;                                                     \
        double k0 = tk;                                                                    \
        BN_SUMS(T, b, c, t1, t2, x[k] - tk, (x[k] - tk) * (x[k] - tk), (double)x[k] - k0,     \
                ((double)x[k] - k0) * ((double)x[k] - k0));                                \
        double e1 = cnt ? t1 / (double)cnt : 0, var = cnt ? t2 / (double)cnt - e1 * e1 : 0; \
        if (var < 0) var = 0;                                                              \
        m = k0 + e1;                                                                       \
        is = (var == 0 && b->eps == 0) ? 0 : 1.0 / sqrt(var + b->eps);                     \
        if (b->update_moving) {                                                            \
          mmean[c] = (T)(mmean[c] * b->momentum + m * (1 - b->momentum));                  \
          mvar[c] = (T)(mvar[c] * b->momentum + var * (1 - b->momentum));                  \
        }                                                                                  \
      } else {                                                                             \
        m = mmean[c];                                                                      \
        is = 1.0 / sqrt((double)mvar[c] + b->eps);                                         \
      }                                                                                    \
      if (mean) mean[c] = (T)m;                                                            \
      if (invstd) invstd[c] = (T)is;                                                       \
      double w = b->fix_gamma ? 1.0 : gam[c];                                              \
      T tm = (T)m, sc = (T)(is * w), sh = bet[c];                                          \
      if (y)                                                                               \
        BN_ROWS(b, c, {                                                                    \
          if (acc)                                                                         \
            for (int64_t i = 0; i < in; i++) y[base + i] += (x[base + i] - tm) * sc + sh;  \
          else                                                                             \
            for (int64_t i = 0; i < in; i++) y[base + i] = (x[base + i] - tm) * sc + sh;   \
        })                                                                                 \
    });                                                                                    \
  }                                                                                        \
  LMX_SIMD_CLONES                                                                          \
  static void bn_bwd_##S(const lmx_cpu_bn *b, const T *x, const T *g, const T *gam,        \
                         const T *mean, const T *invstd, T *gx, T *ggam, T *gbet,          \
                         const int *acc) {                                                 \
    int64_t cnt = b->outer * b->inner, in = b->inner;                                      \
    LMX_PAR_FOR_W(b->C, cnt, c, {                                                          \
      double m = mean[c], is = invstd[c], sg, dot;                                         \
      double w = b->fix_gamma ? 1.0 : gam[c];                                              \
      T tm = (T)m;                                                                         \
      sg = 0, dot = 0;                                                                     \
      BN_SUMS(T, b, c, sg, dot, g[k], (x[k] - tm) * g[k], g[k], ((double)x[k] - m) * g[k]);  \
      if (gx) {                                                                            \
        double n1 = (double)(cnt ? cnt : 1), k = dot * is * is / n1, gm = sg / n1;         \
        /* gx = (g - gm - (x - m) k) is w, or g is w with the moving statistics */         \
        double ga = is * w, xa = b->batch_stats ? -k * is * w : 0;                         \
        double ca = b->batch_stats ? -gm * is * w : 0;                                     \
        T tg = (T)ga, tx = (T)xa, tc = (T)ca;                                              \
        BN_ROWS(b, c, {                                                                    \
          if (acc[0])                                                                      \
            for (int64_t i = 0; i < in; i++)                                               \
              gx[base + i] += g[base + i] * tg + (x[base + i] - tm) * tx + tc;             \
          else                                                                             \
            for (int64_t i = 0; i < in; i++)                                               \
              gx[base + i] = g[base + i] * tg + (x[base + i] - tm) * tx + tc;              \
        })                                                                                 \
      }                                                                                    \
      if (ggam) PUT(acc[1], ggam[c], (T)(b->fix_gamma ? 0.0 : dot * is));                  \
      if (gbet) PUT(acc[2], gbet[c], (T)sg);                                               \
    });                                                                                    \
  }
DEF_BN(float, f32)
DEF_BN(double, f64)

int lmx_cpu_bn_fwd(int dt, const lmx_cpu_bn *b, const void *x, void *y, const void *gamma,
                   const void *beta, void *mean, void *invstd, void *mmean, void *mvar,
                   int acc) {
  if (dt == LMX_FLOAT32) bn_fwd_f32(b, x, y, gamma, beta, mean, invstd, mmean, mvar, acc);
  else if (dt == LMX_FLOAT64) bn_fwd_f64(b, x, y, gamma, beta, mean, invstd, mmean, mvar, acc);
  else return -1;
  return 0;
}

int lmx_cpu_bn_bwd(int dt, const lmx_cpu_bn *b, const void *x, const void *g, const void *gamma,
                   const void *mean, const void *invstd, void *gx, void *ggamma, void *gbeta,
                   const int *acc) {
  if (dt == LMX_FLOAT32) bn_bwd_f32(b, x, g, gamma, mean, invstd, gx, ggamma, gbeta, acc);
  else if (dt == LMX_FLOAT64) bn_bwd_f64(b, x, g, gamma, mean, invstd, gx, ggamma, gbeta, acc);
  else return -1;
  return 0;
}

/* ---- LayerNorm ------------------------------------------------------------------------ */

#define DEF_LN(T, S)                                                                       \
  LMX_SIMD_CLONES                                                                           \
  static void ln_fwd_##S(int64_t outer, int64_t C, int64_t inner, double eps, const T *x,   \
                         T *y, const T *gam, const T *bet, T *mean, T *std, int acc) {      \
    LMX_PAR_FOR_W(outer * inner, C, r, {                                                   \
      int64_t o = r / inner, i = r % inner, base = o * C * inner + i;                      \
      double s = 0, ss = 0;                                                                \
      for (int64_t c = 0; c < C; c++) s += x[base + c * inner];                            \
      double m = C ? s / (double)C : 0;                                                    \
      for (int64_t c = 0; c < C; c++) {                                                    \
        double d = x[base + c * inner] - m;                                                \
        ss += d * d;                                                                       \
      }                                                                                    \
      double sd = sqrt((C ? ss / (double)C : 0) + eps);                                    \
      if (mean) mean[r] = (T)m;                                                            \
      if (std) std[r] = (T)sd;                                                             \
      for (int64_t c = 0; c < C; c++)                                                      \
        PUT(acc, y[base + c * inner], (T)((x[base + c * inner] - m) / sd * gam[c] + bet[c])); \
    });                                                                                    \
  }                                                                                        \
  LMX_SIMD_CLONES                                                                           \
  static void ln_bwd_##S(int64_t outer, int64_t C, int64_t inner, const T *x, const T *g,   \
                         const T *gam, const T *mean, const T *std, T *gx, T *ggam,        \
                         T *gbet, const int *acc) {                                        \
    if (gx)                                                                                \
      LMX_PAR_FOR_W(outer * inner, C, r, {                                                 \
        int64_t o = r / inner, i = r % inner, base = o * C * inner + i;                    \
        double m = mean[r], sd = std[r], a = 0, bsum = 0;                                  \
        for (int64_t c = 0; c < C; c++) {                                                  \
          double xh = (x[base + c * inner] - m) / sd, gh = g[base + c * inner] * gam[c];   \
          a += gh, bsum += gh * xh;                                                        \
        }                                                                                  \
        a /= (double)C, bsum /= (double)C;                                                 \
        for (int64_t c = 0; c < C; c++) {                                                  \
          double xh = (x[base + c * inner] - m) / sd, gh = g[base + c * inner] * gam[c];   \
          PUT(acc[0], gx[base + c * inner], (T)((gh - a - xh * bsum) / sd));               \
        }                                                                                  \
      });                                                                                  \
    for (int64_t c = 0; c < C; c++) {                                                      \
      double sgam = 0, sbet = 0;                                                           \
      for (int64_t o = 0; o < outer; o++)                                                  \
        for (int64_t i = 0; i < inner; i++) {                                              \
          int64_t q = (o * C + c) * inner + i, r = o * inner + i;                          \
          sgam += g[q] * (x[q] - mean[r]) / std[r];                                        \
          sbet += g[q];                                                                    \
        }                                                                                  \
      if (ggam) PUT(acc[1], ggam[c], (T)sgam);                                             \
      if (gbet) PUT(acc[2], gbet[c], (T)sbet);                                             \
    }                                                                                      \
  }
DEF_LN(float, f32)
DEF_LN(double, f64)

int lmx_cpu_ln_fwd(int dt, int64_t outer, int64_t C, int64_t inner, double eps, const void *x,
                   void *y, const void *gamma, const void *beta, void *mean, void *std, int acc) {
  if (dt == LMX_FLOAT32) ln_fwd_f32(outer, C, inner, eps, x, y, gamma, beta, mean, std, acc);
  else if (dt == LMX_FLOAT64) ln_fwd_f64(outer, C, inner, eps, x, y, gamma, beta, mean, std, acc);
  else return -1;
  return 0;
}

int lmx_cpu_ln_bwd(int dt, int64_t outer, int64_t C, int64_t inner, const void *x, const void *g,
                   const void *gamma, const void *mean, const void *std, void *gx, void *ggamma,
                   void *gbeta, const int *acc) {
  if (dt == LMX_FLOAT32) ln_bwd_f32(outer, C, inner, x, g, gamma, mean, std, gx, ggamma, gbeta, acc);
  else if (dt == LMX_FLOAT64)
    ln_bwd_f64(outer, C, inner, x, g, gamma, mean, std, gx, ggamma, gbeta, acc);
  else return -1;
  return 0;
}
