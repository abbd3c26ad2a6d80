/* optim_lamb.c — LAMB's fused update in MXNet 1.9's two phases (optimizer_op-inl.h,
 * LambUpdatePhaseOneKernel / LambUpdatePhaseTwoKernel):
 *
 *   phase one  g = clip(rescale_grad * grad) (clip when clip_gradient >= 0);
 *              mean = beta1 mean + (1-beta1) g;  var = beta2 var + (1-beta2) g²;
 *              out = mean / (sqrt(var) + eps) + wd w, or with bias_correction
 *              out = (mean/(1-beta1^t)) / (sqrt(var/(1-beta2^t)) + eps) + wd w
 *   phase two  r1' = r1 clamped to [lower_bound, upper_bound] (each bound when >= 0);
 *              rate = lr if r1' == 0 or r2 == 0, else lr r1'/r2;  out = w - rate g
 *
 * r1 = ||w|| and r2 = ||g|| are the caller's (one-element arrays, MXNet's `norm`). The
 * arithmetic runs in the storage type with the constants cast to it first, as MXNet's
 * DType kernels; the multi-precision glue calls the float32 rules on the master copy.
 */
#include <tgmath.h>

#include "../../src/tensor/dtype.h"
#include "cpu_kernels.h"
#include "cpu_par.h"

#define DEF_LAMB(T, S)                                                                      \
  LMX_SIMD_CLONES                                                                           \
  static void lamb1_##S(const lmx_cpu_lamb1 *u, int64_t n, T *out, const T *w, const T *gr, \
                        T *m, T *v, int acc) {                                              \
    const T b1 = (T)u->beta1, b2 = (T)u->beta2, ep = (T)u->epsilon, wd = (T)u->wd;          \
    const T rs = (T)u->rescale, cl = (T)u->clip;                                            \
    const T c1 = (T)(1 - u->beta1_t), c2 = (T)(1 - u->beta2_t);                             \
    const int bc = u->bias_correction;                                                      \
    LMX_PAR_FOR_FTZ(n, i, { /* the moments decay through subnormals (cpu_par.h) */           \
      T g = rs * gr[i];                                                                     \
      if (cl >= 0) g = g > cl ? cl : g < -cl ? -cl : g;                                     \
      T mi = b1 * m[i] + (1 - b1) * g, vi = b2 * v[i] + (1 - b2) * g * g;                   \
      m[i] = mi, v[i] = vi;                                                                 \
      if (bc) mi /= c1, vi /= c2;                                                           \
      T r = mi / (sqrt(vi) + ep) + wd * w[i];                                               \
      if (acc) out[i] += r;                                                                 \
      else out[i] = r;                                                                      \
    });                                                                                     \
  }                                                                                         \
  LMX_SIMD_CLONES                                                                           \
  static void lamb2_##S(T rate, int64_t n, T *out, const T *w, const T *g, int acc) {       \
    LMX_PAR_FOR(n, i, {                                                                     \
      T nw = w[i] - rate * g[i];                                                            \
      if (acc) out[i] += nw;                                                                \
      else out[i] = nw;                                                                     \
    });                                                                                     \
  }
DEF_LAMB(float, f32)
DEF_LAMB(double, f64)

int lmx_cpu_lamb_phase1(int dt, const lmx_cpu_lamb1 *u, int64_t n, void *g, const void *w,
                        const void *grad, void *mean, void *var, int acc) {
  if (dt == LMX_FLOAT32) lamb1_f32(u, n, g, w, grad, mean, var, acc);
  else if (dt == LMX_FLOAT64) lamb1_f64(u, n, g, w, grad, mean, var, acc);
  else return -1;
  return 0;
}

/* float16 gradients widen in blocks on the stack (no workspace, so no allocation per step) */
int lmx_cpu_lamb_phase1_mp(const lmx_cpu_lamb1 *u, int64_t n, float *g, const float *w32,
                           const void *grad16, float *mean, float *var, int acc) {
  enum { B = 2048 };
  const uint16_t *gh = grad16;
  int64_t nb = (n + B - 1) / B;
  LMX_PAR_FOR_W(nb, B, b, {
    float buf[B];
    int64_t o = b * B, k = n - o < B ? n - o : B;
    lmx_cpu_convert(buf, LMX_FLOAT32, gh + o, LMX_FLOAT16, k);
    lamb1_f32(u, k, g + o, w32 + o, buf, mean + o, var + o, acc);
  });
  return 0;
}

int lmx_cpu_lamb_phase2(int dt, const lmx_cpu_lamb2 *u, int64_t n, void *out, const void *w,
                        const void *g, const void *r1, const void *r2, int acc) {
  if (dt == LMX_FLOAT32) {
    /* the rate in float, as MXNet's DType kernel */
    float lo = (float)u->lower_bound, hi = (float)u->upper_bound, a = *(const float *)r1;
    if (lo >= 0) a = a > lo ? a : lo;
    if (hi >= 0) a = a < hi ? a : hi;
    float b = *(const float *)r2, lr = (float)u->lr;
    lamb2_f32((a == 0 || b == 0) ? lr : lr * a / b, n, out, w, g, acc);
  } else if (dt == LMX_FLOAT64) {
    double rate = lmx_lamb_rate(u->lr, *(const double *)r1, *(const double *)r2,
                                u->lower_bound, u->upper_bound);
    lamb2_f64(rate, n, out, w, g, acc);
  } else {
    return -1;
  }
  return 0;
}
