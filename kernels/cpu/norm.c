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

/* Planes of BN_SHORT floats or more go channel by channel, row by row (short planes: the
 * blocks below). Channel sums in 32 float lanes (two AVX-512 or four AVX2 accumulators per
 * sum, so the adds of one lane do not wait on each other) that carry on across the
 * channel's rows and are flushed into double after BN_FILL additions per lane: a single
 * double accumulator is a serial chain the compiler may not reorder, and double lanes fed
 * from float did not vectorise either. A row's last 16 to 31 floats take a 16-wide step;
 * fewer than 16 go to the doubles directly. Flushing once per row instead had cost 32
 * serial double adds a row (bench/README.md, "The Intel machine").
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

/* Channel c's statistics from its sums t1, t2 of x - k0 (batch_stats) or the moving ones:
 * sets m and is (mean, 1/sqrt(var + eps)), writes mean/invstd, folds the moving ones. */
#define BN_STATS(T, b, c, cnt, t1, t2, k0, m, is)                                          \
  do {                                                                                     \
    if ((b)->batch_stats) {                                                                \
      double e1_ = (cnt) ? (t1) / (double)(cnt) : 0;                                       \
      double var_ = (cnt) ? (t2) / (double)(cnt) - e1_ * e1_ : 0;                          \
      if (var_ < 0) var_ = 0;                                                              \
      m = (k0) + e1_;                                                                      \
      is = (var_ == 0 && (b)->eps == 0) ? 0 : 1.0 / sqrt(var_ + (b)->eps);                 \
      if ((b)->update_moving) {                                                            \
        mmean[c] = (T)(mmean[c] * (b)->momentum + m * (1 - (b)->momentum));                \
        mvar[c] = (T)(mvar[c] * (b)->momentum + var_ * (1 - (b)->momentum));               \
      }                                                                                    \
    } else {                                                                               \
      m = mmean[c];                                                                        \
      is = 1.0 / sqrt((double)mvar[c] + (b)->eps);                                         \
    }                                                                                      \
    if (mean) mean[c] = (T)m;                                                              \
    if (invstd) invstd[c] = (T)is;                                                         \
  } while (0)
/* Channel c's backward coefficients from its sums sg (of g) and dot (of (x - m) g):
 * gx = g tg + (x - m) tx + tc, or g is w with the moving statistics. */
#define BN_BCOEF(T, b, cnt, is, w, sg, dot, tg, tx, tc)                                    \
  do {                                                                                     \
    double n1_ = (double)((cnt) ? (cnt) : 1), k_ = (dot) * (is) * (is) / n1_;              \
    tg = (T)((is) * (w));                                                                  \
    tx = (T)((b)->batch_stats ? -k_ * (is) * (w) : 0);                                     \
    tc = (T)((b)->batch_stats ? -((sg) / n1_) * (is) * (w) : 0);                           \
  } while (0)

/* Planes shorter than BN_SHORT floats (ResNet's 8x8 and 4x4, MobileNet's 7x7) go image by
 * image over blocks of channels: a block of an image is one contiguous run of L =
 * channels x plane floats, summed elementwise into L float lanes (flushed into the
 * channels' doubles every BN_FILL images) and then normalised with per-element
 * coefficients, so every loop is a flat vector loop over L instead of a 16- to 64-float
 * row at a stride of C planes. bench/batchnorm.lua, against the rows (Intel Xeon model
 * 207, 2 threads): 4x4 forward and backward 3-6x faster, 7x7 1.3-1.75x, 8x8 backward
 * 1.1-1.6x; at 14x14 (196) the rows were ahead, hence 128. */
#define BN_SHORT 128
#define BN_BLK 1024 /* most floats in a block (L) */
static int64_t bn_block(const lmx_cpu_bn *b) { /* channels per block */
  int64_t cb = BN_BLK / (b->inner ? b->inner : 1), quarter = b->C / 4;
  if (cb > quarter) cb = quarter; /* at least 4 blocks for the threads */
  return cb < 1 ? 1 : cb;
}
/* Sums over the block's L lanes: E1, E2 of the element at k (in x and g) and lane j. */
#define BN_BLK_SUMS(T, b, c0, nc, L, t1, t2, E1, E2)                                       \
  do {                                                                                     \
    T a1_[BN_BLK], a2_[BN_BLK];                                                            \
    int fill_ = 0;                                                                         \
    for (int64_t j = 0; j < (L); j++) a1_[j] = a2_[j] = 0;                                 \
    for (int64_t o = 0; o <= (b)->outer; o++) {                                            \
      if (o < (b)->outer) {                                                                \
        int64_t base = (o * (b)->C + (c0)) * (b)->inner;                                   \
        for (int64_t j = 0; j < (L); j++) {                                                \
          int64_t k = base + j;                                                            \
          a1_[j] += (E1), a2_[j] += (E2);                                                  \
        }                                                                                  \
        if (++fill_ < BN_FILL) continue;                                                   \
      }                                                                                    \
      for (int64_t cc = 0; cc < (nc); cc++)                                                \
        for (int64_t i = 0; i < (b)->inner; i++) {                                         \
          int64_t j = cc * (b)->inner + i;                                                 \
          t1[cc] += a1_[j], t2[cc] += a2_[j], a1_[j] = a2_[j] = 0;                         \
        }                                                                                  \
      fill_ = 0;                                                                           \
    }                                                                                      \
  } while (0)

/* b->ep (a fused activation, src/exec/fuse.c): applied to each row or block of y right
 * after it is written, while it is in L1; its scale and shift are NULL. */
#define DEF_BN(T, S)                                                                       \
  LMX_SIMD_CLONES                                                                          \
  static void bn_fwd_##S(const lmx_cpu_bn *b, const T *x, T *y, const T *gam, const T *bet, \
                         T *mean, T *invstd, T *mmean, T *mvar, int acc) {                 \
    int64_t cnt = b->outer * b->inner, in = b->inner;                                      \
    LMX_PAR_FOR_W(b->C, cnt, c, {                                                          \
      double m, is, t1 = 0, t2 = 0;                                                        \
      T tk = cnt ? x[c * in] : (T)0;                                                       \
      double k0 = tk;                                                                      \
      if (b->batch_stats)                                                                  \
        BN_SUMS(T, b, c, t1, t2, x[k] - tk, (x[k] - tk) * (x[k] - tk), (double)x[k] - k0,  \
                ((double)x[k] - k0) * ((double)x[k] - k0));                                \
      BN_STATS(T, b, c, cnt, t1, t2, k0, m, is);                                           \
      double w = b->fix_gamma ? 1.0 : gam[c];                                              \
      T tm = (T)m, sc = (T)(is * w), sh = bet[c];                                          \
      if (y)                                                                               \
        BN_ROWS(b, c, {                                                                    \
          if (acc)                                                                         \
            for (int64_t i = 0; i < in; i++) y[base + i] += (x[base + i] - tm) * sc + sh;  \
          else                                                                             \
            for (int64_t i = 0; i < in; i++) y[base + i] = (x[base + i] - tm) * sc + sh;   \
          if (b->ep) lmx_cpu_ep_row(LMX_CPU_DT_OF(T), b->ep, 0, in, y + base, y + base);  \
        })                                                                                 \
    });                                                                                    \
  }                                                                                        \
  LMX_SIMD_CLONES                                                                          \
  static void bn_fwd_blk_##S(const lmx_cpu_bn *b, const T *x, T *y, const T *gam,          \
                             const T *bet, T *mean, T *invstd, T *mmean, T *mvar, int acc) { \
    int64_t cnt = b->outer * b->inner, in = b->inner, cb = bn_block(b);                    \
    LMX_PAR_FOR_W((b->C + cb - 1) / cb, cb * cnt, blk, {                                   \
      int64_t c0 = blk * cb, nc = b->C - c0 < cb ? b->C - c0 : cb, L = nc * in;            \
      double t1[BN_BLK], t2[BN_BLK], k0[BN_BLK];                                           \
      T sft[BN_BLK], sc[BN_BLK], sh[BN_BLK];                                               \
      for (int64_t cc = 0; cc < nc; cc++) {                                                \
        t1[cc] = t2[cc] = 0;                                                               \
        k0[cc] = cnt ? x[(c0 + cc) * in] : 0;                                              \
        for (int64_t i = 0; i < in; i++) sft[cc * in + i] = (T)k0[cc];                     \
      }                                                                                    \
      if (b->batch_stats)                                                                  \
        BN_BLK_SUMS(T, b, c0, nc, L, t1, t2, x[k] - sft[j], (x[k] - sft[j]) * (x[k] - sft[j])); \
      for (int64_t cc = 0; cc < nc; cc++) {                                                \
        int64_t c = c0 + cc;                                                               \
        double m, is;                                                                      \
        BN_STATS(T, b, c, cnt, t1[cc], t2[cc], k0[cc], m, is);                             \
        double w = b->fix_gamma ? 1.0 : gam[c];                                            \
        for (int64_t i = 0; i < in; i++)                                                   \
          sft[cc * in + i] = (T)m, sc[cc * in + i] = (T)(is * w), sh[cc * in + i] = bet[c]; \
      }                                                                                    \
      for (int64_t o = 0; y && o < b->outer; o++) {                                        \
        int64_t base = (o * b->C + c0) * in;                                               \
        if (acc)                                                                           \
          for (int64_t j = 0; j < L; j++) y[base + j] += (x[base + j] - sft[j]) * sc[j] + sh[j]; \
        else                                                                               \
          for (int64_t j = 0; j < L; j++) y[base + j] = (x[base + j] - sft[j]) * sc[j] + sh[j]; \
        if (b->ep) lmx_cpu_ep_row(LMX_CPU_DT_OF(T), b->ep, 0, L, y + base, y + base);     \
      }                                                                                    \
    });                                                                                    \
  }                                                                                        \
  LMX_SIMD_CLONES                                                                          \
  static void bn_bwd_##S(const lmx_cpu_bn *b, const T *x, const T *g, const T *gam,        \
                         const T *mean, const T *invstd, T *gx, T *ggam, T *gbet,          \
                         const int *acc) {                                                 \
    int64_t cnt = b->outer * b->inner, in = b->inner;                                      \
    LMX_PAR_FOR_W(b->C, cnt, c, {                                                          \
      double m = mean[c], is = invstd[c], sg = 0, dot = 0;                                 \
      double w = b->fix_gamma ? 1.0 : gam[c];                                              \
      T tm = (T)m, tg, tx, tc;                                                             \
      BN_SUMS(T, b, c, sg, dot, g[k], (x[k] - tm) * g[k], g[k], ((double)x[k] - m) * g[k]); \
      BN_BCOEF(T, b, cnt, is, w, sg, dot, tg, tx, tc);                                     \
      if (gx)                                                                              \
        BN_ROWS(b, c, {                                                                    \
          if (acc[0])                                                                      \
            for (int64_t i = 0; i < in; i++)                                               \
              gx[base + i] += g[base + i] * tg + (x[base + i] - tm) * tx + tc;             \
          else                                                                             \
            for (int64_t i = 0; i < in; i++)                                               \
              gx[base + i] = g[base + i] * tg + (x[base + i] - tm) * tx + tc;              \
        })                                                                                 \
      if (ggam) PUT(acc[1], ggam[c], (T)(b->fix_gamma ? 0.0 : dot * is));                  \
      if (gbet) PUT(acc[2], gbet[c], (T)sg);                                               \
    });                                                                                    \
  }                                                                                        \
  LMX_SIMD_CLONES                                                                          \
  static void bn_bwd_blk_##S(const lmx_cpu_bn *b, const T *x, const T *g, const T *gam,    \
                             const T *mean, const T *invstd, T *gx, T *ggam, T *gbet,      \
                             const int *acc) {                                             \
    int64_t cnt = b->outer * b->inner, in = b->inner, cb = bn_block(b);                    \
    LMX_PAR_FOR_W((b->C + cb - 1) / cb, cb * cnt, blk, {                                   \
      int64_t c0 = blk * cb, nc = b->C - c0 < cb ? b->C - c0 : cb, L = nc * in;            \
      double sg[BN_BLK], dot[BN_BLK];                                                      \
      T tm[BN_BLK], tg[BN_BLK], tx[BN_BLK], tc[BN_BLK];                                    \
      for (int64_t cc = 0; cc < nc; cc++) {                                                \
        sg[cc] = dot[cc] = 0;                                                              \
        for (int64_t i = 0; i < in; i++) tm[cc * in + i] = mean[c0 + cc];                  \
      }                                                                                    \
      BN_BLK_SUMS(T, b, c0, nc, L, sg, dot, g[k], (x[k] - tm[j]) * g[k]);                  \
      for (int64_t cc = 0; cc < nc; cc++) {                                                \
        int64_t c = c0 + cc;                                                               \
        double is = invstd[c], w = b->fix_gamma ? 1.0 : gam[c];                            \
        T a, bx, cst;                                                                      \
        BN_BCOEF(T, b, cnt, is, w, sg[cc], dot[cc], a, bx, cst);                           \
        for (int64_t i = 0; i < in; i++)                                                   \
          tg[cc * in + i] = a, tx[cc * in + i] = bx, tc[cc * in + i] = cst;                \
        if (ggam) PUT(acc[1], ggam[c], (T)(b->fix_gamma ? 0.0 : dot[cc] * is));            \
        if (gbet) PUT(acc[2], gbet[c], (T)sg[cc]);                                         \
      }                                                                                    \
      for (int64_t o = 0; gx && o < b->outer; o++) {                                       \
        int64_t base = (o * b->C + c0) * in;                                               \
        if (acc[0])                                                                        \
          for (int64_t j = 0; j < L; j++)                                                  \
            gx[base + j] += g[base + j] * tg[j] + (x[base + j] - tm[j]) * tx[j] + tc[j];   \
        else                                                                               \
          for (int64_t j = 0; j < L; j++)                                                  \
            gx[base + j] = g[base + j] * tg[j] + (x[base + j] - tm[j]) * tx[j] + tc[j];    \
      }                                                                                    \
    });                                                                                    \
  }
DEF_BN(float, f32)
DEF_BN(double, f64)

int lmx_cpu_bn_fwd(int dt, const lmx_cpu_bn *b, const void *x, void *y, const void *gamma,
                   const void *beta, void *mean, void *invstd, void *mmean, void *mvar,
                   int acc) {
  int blk = b->inner < BN_SHORT;
  if (dt == LMX_FLOAT32 && blk) bn_fwd_blk_f32(b, x, y, gamma, beta, mean, invstd, mmean, mvar, acc);
  else if (dt == LMX_FLOAT32) bn_fwd_f32(b, x, y, gamma, beta, mean, invstd, mmean, mvar, acc);
  else if (dt == LMX_FLOAT64 && blk) bn_fwd_blk_f64(b, x, y, gamma, beta, mean, invstd, mmean, mvar, acc);
  else if (dt == LMX_FLOAT64) bn_fwd_f64(b, x, y, gamma, beta, mean, invstd, mmean, mvar, acc);
  else return -1;
  return 0;
}

int lmx_cpu_bn_bwd(int dt, const lmx_cpu_bn *b, const void *x, const void *g, const void *gamma,
                   const void *mean, const void *invstd, void *gx, void *ggamma, void *gbeta,
                   const int *acc) {
  int blk = b->inner < BN_SHORT;
  if (dt == LMX_FLOAT32 && blk) bn_bwd_blk_f32(b, x, g, gamma, mean, invstd, gx, ggamma, gbeta, acc);
  else if (dt == LMX_FLOAT32) bn_bwd_f32(b, x, g, gamma, mean, invstd, gx, ggamma, gbeta, acc);
  else if (dt == LMX_FLOAT64 && blk) bn_bwd_blk_f64(b, x, g, gamma, mean, invstd, gx, ggamma, gbeta, acc);
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
