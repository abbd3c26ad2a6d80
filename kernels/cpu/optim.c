/* optim.c — fused optimizer updates: one pass over weight, gradient and state.
 *
 * g = rescale_grad * grad, clipped to ±clip_gradient when that is >= 0, then per rule
 * (MXNet 1.9 src/operator/optimizer_op-inl.h):
 *   SGD      w' = (1 - lr wd) w - lr g
 *   SGD_MOM  m = momentum m - lr wd w - lr g;            w' = w + m
 *   NAG      g += wd w; m = momentum m + g;              w' = w - lr (momentum m + g)
 *   ADAM     g = clip(rescale grad + wd w); m = b1 m + (1-b1) g; v = b2 v + (1-b2) g²;
 *            w' = w - lr m / (sqrt(v) + eps)   (bias correction is the caller's lr)
 *   RMSPROP  g = clip(rescale grad + wd w); n = (1-g1) g² + g1 n;
 *            w' = w - lr g / sqrt(n + eps), clipped to ±clip_weights when > 0
 *   ADAGRAD  h += g²; w' = w - lr (g / sqrt(h + eps) + wd w)
 *   FTRL     z += g - (sqrt(n + g²) - sqrt(n)) w / lr; n += g²;
 *            w' = (sign(z) lamda1 - z) / ((beta + sqrt(n)) / lr + wd) if |z| > lamda1, else 0
 *   SIGNUM   m = momentum m - (1-momentum) (wd w + g);  w' = (1 - lr wd_lh) w + lr sign(m)
 *   SIGNSGD  w' = (1 - lr wd) w - lr sign(grad)        (no rescale or clipping: the sign)
 *   FTML     g = clip(rescale grad + wd w); v = b2 v + (1-b2) g²;
 *            d_t = (1 - b1^t)/lr (sqrt(v / (1 - b2^t)) + eps);
 *            z = b1 z + (1-b1) g - (d_t - b1 d) w; d = d_t; w' = -z / d_t   (z: u->s2)
 * States s0/s1 are updated in place; out may alias w (in-place update). float32/float64.
 * Subnormal values are flushed to zero inside the updates (cpu_par.h says why).
 */
#include <tgmath.h>

#include "../../src/tensor/dtype.h"
#include "cpu_kernels.h"
#include "cpu_par.h"

#define CLIPV(v, c) ((c) >= 0 ? ((v) > (c) ? (c) : (v) < -(c) ? -(c) : (v)) : (v))
#define SIGNV(v) ((v) > 0 ? 1 : (v) < 0 ? -1 : 0)

/* One loop per rule (the switch is outside the loops, so each loop vectorises), with
 * subnormals flushed (LMX_PAR_FOR_FTZ, cpu_par.h: the states decay through them). */
#define UPD_LOOP(T, ...)                                                                     \
  LMX_PAR_FOR_FTZ(n, i, {                                                                  \
    T wi = w[i], g = rs * gr[i], nw;                                                       \
    __VA_ARGS__;                                                                           \
    if (acc) out[i] += nw;                                                                 \
    else out[i] = nw;                                                                      \
  })
#define DEF_UPD(T, S)                                                                      \
  LMX_SIMD_CLONES                                                                          \
  static void upd_##S(const lmx_cpu_upd *u, int64_t n, T *out, const T *w, const T *gr,    \
                      T *s0, T *s1, int acc) {                                             \
    const T lr = (T)u->lr, wd = (T)u->wd, rs = (T)u->rescale, cl = (T)u->clip;             \
    const T mo = (T)u->momentum, b1 = (T)u->beta1, b2 = (T)u->beta2, ep = (T)u->epsilon;   \
    const T g1 = (T)u->gamma1, cw = (T)u->clip_weights;                                    \
    const T l1 = (T)u->lamda1, be = (T)u->beta, wl = (T)u->wd_lh;                          \
    const T c1 = (T)(1 - pow(u->beta1, u->t)), c2 = (T)(1 - pow(u->beta2, u->t));          \
    T *s2 = u->s2;                                                                         \
    (void)s2, (void)c1, (void)c2;                                                          \
    (void)s1, (void)mo, (void)b1, (void)b2, (void)ep, (void)g1, (void)cw;                  \
    switch (u->rule) {                                                                     \
      case LMX_UPD_SGD: UPD_LOOP(T, g = CLIPV(g, cl); nw = (1 - lr * wd) * wi - lr * g); break; \
      case LMX_UPD_SGD_MOM:                                                                \
        UPD_LOOP(T, g = CLIPV(g, cl); s0[i] = mo * s0[i] - lr * wd * wi - lr * g; nw = wi + s0[i]); \
        break;                                                                             \
      case LMX_UPD_NAG:                                                                    \
        UPD_LOOP(T, g = CLIPV(g, cl) + wd * wi; s0[i] = mo * s0[i] + g;                       \
                 nw = wi - lr * (mo * s0[i] + g));                                         \
        break;                                                                             \
      case LMX_UPD_ADAM:                                                                   \
        UPD_LOOP(T, g = CLIPV(g + wd * wi, cl); s0[i] = b1 * s0[i] + (1 - b1) * g;            \
                 s1[i] = b2 * s1[i] + (1 - b2) * g * g;                                    \
                 nw = wi - lr * s0[i] / (sqrt(s1[i]) + ep));                               \
        break;                                                                             \
      case LMX_UPD_RMSPROP:                                                                \
        UPD_LOOP(T, g = CLIPV(g + wd * wi, cl); s0[i] = (1 - g1) * g * g + g1 * s0[i];        \
                 nw = wi - lr * g / sqrt(s0[i] + ep); if (cw > 0) nw = CLIPV(nw, cw));     \
        break;                                                                             \
      case LMX_UPD_FTRL:                                                                   \
        UPD_LOOP(T, g = CLIPV(g, cl); s0[i] += g - (sqrt(s1[i] + g * g) - sqrt(s1[i])) * wi / lr; \
                 s1[i] += g * g;                                                           \
                 nw = fabs(s0[i]) > l1                                                     \
                          ? (SIGNV(s0[i]) * l1 - s0[i]) / ((be + sqrt(s1[i])) / lr + wd) : 0); \
        break;                                                                             \
      case LMX_UPD_SIGNUM:                                                                 \
        UPD_LOOP(T, g = CLIPV(g, cl); s0[i] = mo * s0[i] - (1 - mo) * (wd * wi + g);          \
                 nw = (1 - lr * wl) * wi + lr * SIGNV(s0[i]));                             \
        break;                                                                             \
      case LMX_UPD_FTML:                                                                   \
        UPD_LOOP(T, g = CLIPV(g + wd * wi, cl); s1[i] = b2 * s1[i] + (1 - b2) * g * g;        \
                 T d_t = c1 / lr * (sqrt(s1[i] / c2) + ep);                                \
                 s2[i] = b1 * s2[i] + (1 - b1) * g - (d_t - b1 * s0[i]) * wi; s0[i] = d_t; \
                 nw = -s2[i] / d_t);                                                       \
        break;                                                                             \
      case LMX_UPD_SIGNSGD:                                                                \
        UPD_LOOP(T, (void)g; nw = (1 - lr * wd) * wi - lr * SIGNV(gr[i]));                 \
        break;                                                                             \
      default: /* ADAGRAD */                                                               \
        UPD_LOOP(T, g = CLIPV(g, cl); s0[i] += g * g;                                         \
                 nw = wi - lr * (g / sqrt(s0[i] + ep) + wd * wi));                         \
    }                                                                                      \
  }
DEF_UPD(float, f32)
DEF_UPD(double, f64)

int lmx_cpu_update(int dt, const lmx_cpu_upd *u, int64_t n, void *out, const void *w,
                   const void *grad, void *s0, void *s1, int acc) {
  if (dt == LMX_FLOAT32) upd_f32(u, n, out, w, grad, s0, s1, acc);
  else if (dt == LMX_FLOAT64) upd_f64(u, n, out, w, grad, s0, s1, acc);
  else return -1;
  return 0;
}
