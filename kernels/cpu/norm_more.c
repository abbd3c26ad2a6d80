/* norm_more.c — LRN and the row normalisations (InstanceNorm, GroupNorm, L2Normalization)
 * forward and backward, float32 / float64 (other dtypes return -1).
 *
 * LRN works on x[N, C, S] (S = the product of the dims after C): for each (n, c) the
 * window sum of squares over channels [c - nsize/2, c + nsize/2] (clipped) is built a
 * whole row of S at a time, so the inner loops run along contiguous memory and
 * vectorise; rows run in parallel (cpu_par.h). Backward uses the forward's output y and
 * tmp_norm t: gx_c = gy_c t_c^-beta - 2 alpha beta / nsize x_c sum_{j near c} gy_j y_j / t_j.
 *
 * Row normalisations (src/ops/norm_more.h): row (o, i) holds x[(o len + l) inner + i].
 * Statistics are accumulated in double, two passes (mean, then the centred squares).
 * Mean/var kinds: xhat = (x - mean) rstd, y = xhat gamma[o % na] + beta[o % na]; the
 * backward is gx = rstd (w - mean(w) - xhat mean(w xhat)) with w = gy gamma, and
 * ggamma[a] / gbeta[a] sum gy xhat / gy over the rows of a (one thread per a, rows in
 * order: deterministic). L2: y = x / n, n = sqrt(sum x^2 + eps); gx = (gy - y sum(gy y)) / n.
 */
#include <math.h>

#include "../../src/tensor/dtype.h"
#include "cpu_kernels.h"
#include "cpu_par.h"

#define PUT(acc, dst, v) ((acc) ? ((dst) += (v)) : ((dst) = (v)))

#define DEF_LRN(T, S)                                                                     \
  static void lrn_fwd_##S(int64_t N, int64_t C, int64_t SP, int64_t nsize, double alpha,  \
                          double beta, double knorm, const T *x, T *y, T *t) {            \
    int64_t h = nsize / 2;                                                                \
    double sa = alpha / (double)nsize;                                                    \
    LMX_PAR_FOR_W(N * C, SP * nsize, r, {                                                 \
      int64_t n = r / C, c = r % C, lo = c - h < 0 ? 0 : c - h;                           \
      int64_t hi = c + h >= C ? C - 1 : c + h;                                            \
      T *tr = t + r * SP, *yr = y + r * SP;                                               \
      const T *xr = x + r * SP;                                                           \
      for (int64_t s = 0; s < SP; s++) tr[s] = 0;                                         \
      for (int64_t j = lo; j <= hi; j++) {                                                \
        const T *xj = x + (n * C + j) * SP;                                               \
        for (int64_t s = 0; s < SP; s++) tr[s] += xj[s] * xj[s];                          \
      }                                                                                   \
      for (int64_t s = 0; s < SP; s++) {                                                  \
        tr[s] = (T)(knorm + sa * tr[s]);                                                  \
        yr[s] = (T)(xr[s] * pow((double)tr[s], -beta));                                   \
      }                                                                                   \
    });                                                                                   \
  }                                                                                       \
  static void lrn_bwd_##S(int64_t N, int64_t C, int64_t SP, int64_t nsize, double alpha,  \
                          double beta, const T *x, const T *y, const T *t, const T *gy,   \
                          T *gx, int acc) {                                               \
    int64_t h = nsize / 2;                                                                \
    double f = 2.0 * alpha * beta / (double)nsize;                                        \
    LMX_PAR_FOR_W(N * C, SP * nsize, r, {                                                 \
      int64_t n = r / C, c = r % C, lo = c - h < 0 ? 0 : c - h;                           \
      int64_t hi = c + h >= C ? C - 1 : c + h;                                            \
      const T *xr = x + r * SP, *tr = t + r * SP, *gr = gy + r * SP;                      \
      T *gxr = gx + r * SP;                                                               \
      for (int64_t s = 0; s < SP; s++) {                                                  \
        double a = 0;                                                                     \
        for (int64_t j = lo; j <= hi; j++) {                                              \
          int64_t q = (n * C + j) * SP + s;                                               \
          a += (double)gy[q] * y[q] / t[q];                                               \
        }                                                                                 \
        double v = gr[s] * pow((double)tr[s], -beta) - f * xr[s] * a;                     \
        PUT(acc, gxr[s], (T)v);                                                           \
      }                                                                                   \
    });                                                                                   \
  }

DEF_LRN(float, f32)
DEF_LRN(double, f64)

int lmx_cpu_lrn_fwd(int dt, int64_t N, int64_t C, int64_t SP, int64_t nsize, double alpha,
                    double beta, double knorm, const void *x, void *y, void *tmp) {
  if (dt == LMX_FLOAT32) lrn_fwd_f32(N, C, SP, nsize, alpha, beta, knorm, x, y, tmp);
  else if (dt == LMX_FLOAT64) lrn_fwd_f64(N, C, SP, nsize, alpha, beta, knorm, x, y, tmp);
  else return -1;
  return 0;
}

int lmx_cpu_lrn_bwd(int dt, int64_t N, int64_t C, int64_t SP, int64_t nsize, double alpha,
                    double beta, const void *x, const void *y, const void *tmp, const void *gy,
                    void *gx, int acc) {
  if (dt == LMX_FLOAT32) lrn_bwd_f32(N, C, SP, nsize, alpha, beta, x, y, tmp, gy, gx, acc);
  else if (dt == LMX_FLOAT64) lrn_bwd_f64(N, C, SP, nsize, alpha, beta, x, y, tmp, gy, gx, acc);
  else return -1;
  return 0;
}

/* ---- row normalisations ---------------------------------------------------------------- */

#define AT(rn, o, l, i) (((o) * (rn)->len + (l)) * (rn)->inner + (i))

#define DEF_RN(T, S)                                                                      \
  static void rn_fwd_##S(int kind, const lmx_cpu_rownorm *rn, double eps, const T *x,     \
                         const T *gam, const T *bet, T *y, T *s1, T *s2) {                \
    int64_t L = rn->len;                                                                    \
    LMX_PAR_FOR_W(rn->outer * rn->inner, L, r, {                                                  \
      int64_t o = r / rn->inner, i = r % rn->inner;                                               \
      if (kind == LMX_CPU_RN_L2) {                                                        \
        double ss = 0;                                                                    \
        for (int64_t l = 0; l < L; l++) {                                                 \
          double v = x[AT(rn, o, l, i)];                                                  \
          ss += v * v;                                                                    \
        }                                                                                 \
        double nrm = sqrt(ss + eps);                                                      \
        s1[r] = (T)nrm;                                                                   \
        for (int64_t l = 0; l < L; l++) y[AT(rn, o, l, i)] = (T)(x[AT(rn, o, l, i)] / nrm); \
      } else {                                                                            \
        double m = 0, ss = 0;                                                             \
        for (int64_t l = 0; l < L; l++) m += x[AT(rn, o, l, i)];                          \
        m = L ? m / (double)L : 0;                                                        \
        for (int64_t l = 0; l < L; l++) {                                                 \
          double d = x[AT(rn, o, l, i)] - m;                                              \
          ss += d * d;                                                                    \
        }                                                                                 \
        double var = L ? ss / (double)L : 0, sd = sqrt(var + eps);                        \
        double w = gam[o % rn->na], b = bet[o % rn->na];                                    \
        s1[r] = (T)m;                                                                     \
        s2[r] = (T)(kind == LMX_CPU_RN_GROUP ? sd : var);                                 \
        for (int64_t l = 0; l < L; l++)                                                   \
          y[AT(rn, o, l, i)] = (T)((x[AT(rn, o, l, i)] - m) / sd * w + b);                \
      }                                                                                   \
    });                                                                                   \
  }                                                                                       \
  static void rn_bwd_##S(int kind, const lmx_cpu_rownorm *rn, double eps, const T *x,     \
                         const T *y, const T *gam, const T *s1, const T *s2, const T *gy, \
                         T *gx, T *gg, T *gb, const int *acc) {                           \
    int64_t L = rn->len;                                                                    \
    if (gx)                                                                               \
      LMX_PAR_FOR_W(rn->outer * rn->inner, L, r, {                                                \
        int64_t o = r / rn->inner, i = r % rn->inner;                                             \
        if (kind == LMX_CPU_RN_L2) {                                                      \
          double d = 0, nrm = s1[r];                                                      \
          for (int64_t l = 0; l < L; l++) d += (double)gy[AT(rn, o, l, i)] * y[AT(rn, o, l, i)]; \
          for (int64_t l = 0; l < L; l++) {                                               \
            int64_t q = AT(rn, o, l, i);                                                  \
            PUT(acc[0], gx[q], (T)((gy[q] - y[q] * d) / nrm));                            \
          }                                                                               \
        } else {                                                                          \
          double m = s1[r], rs = kind == LMX_CPU_RN_GROUP ? 1.0 / s2[r]                   \
                                                          : 1.0 / sqrt((double)s2[r] + eps); \
          double w = gam[o % rn->na], mw = 0, mwx = 0;                                     \
          for (int64_t l = 0; l < L; l++) {                                               \
            int64_t q = AT(rn, o, l, i);                                                  \
            double xh = (x[q] - m) * rs, wq = gy[q] * w;                                  \
            mw += wq, mwx += wq * xh;                                                     \
          }                                                                               \
          mw = L ? mw / (double)L : 0, mwx = L ? mwx / (double)L : 0;                     \
          for (int64_t l = 0; l < L; l++) {                                               \
            int64_t q = AT(rn, o, l, i);                                                  \
            double xh = (x[q] - m) * rs;                                                  \
            PUT(acc[0], gx[q], (T)(rs * (gy[q] * w - mw - xh * mwx)));                    \
          }                                                                               \
        }                                                                                 \
      });                                                                                 \
    if (kind == LMX_CPU_RN_L2 || (!gg && !gb)) return;                                    \
    LMX_PAR_FOR_W(rn->na, rn->outer / rn->na * L, a, {                                          \
      double sg = 0, sb = 0;                                                              \
      for (int64_t o = a; o < rn->outer; o += rn->na) {                                        \
        double m = s1[o], rs = kind == LMX_CPU_RN_GROUP ? 1.0 / s2[o]                     \
                                                        : 1.0 / sqrt((double)s2[o] + eps); \
        for (int64_t l = 0; l < L; l++) {                                                 \
          int64_t q = o * L + l;                                                          \
          sg += gy[q] * (x[q] - m) * rs, sb += gy[q];                                     \
        }                                                                                 \
      }                                                                                   \
      if (gg) PUT(acc[1], gg[a], (T)sg);                                                  \
      if (gb) PUT(acc[2], gb[a], (T)sb);                                                  \
    });                                                                                   \
  }

DEF_RN(float, f32)
DEF_RN(double, f64)

int lmx_cpu_rownorm_fwd(int dt, int kind, const lmx_cpu_rownorm *rn, double eps, const void *x,
                        const void *gamma, const void *beta, void *y, void *s1, void *s2) {
  if (dt == LMX_FLOAT32) rn_fwd_f32(kind, rn, eps, x, gamma, beta, y, s1, s2);
  else if (dt == LMX_FLOAT64) rn_fwd_f64(kind, rn, eps, x, gamma, beta, y, s1, s2);
  else return -1;
  return 0;
}

int lmx_cpu_rownorm_bwd(int dt, int kind, const lmx_cpu_rownorm *rn, double eps, const void *x,
                        const void *y, const void *gamma, const void *s1, const void *s2,
                        const void *gy, void *gx, void *ggamma, void *gbeta, const int *acc) {
  if (dt == LMX_FLOAT32)
    rn_bwd_f32(kind, rn, eps, x, y, gamma, s1, s2, gy, gx, ggamma, gbeta, acc);
  else if (dt == LMX_FLOAT64)
    rn_bwd_f64(kind, rn, eps, x, y, gamma, s1, s2, gy, gx, ggamma, gbeta, acc);
  else return -1;
  return 0;
}
