/* optim.cu — fused optimizer updates: one thread per element, one kernel per rule.
 *
 * The rules are kernels/cpu/optim.c's (MXNet 1.9 optimizer_op-inl.h): g = rescale_grad *
 * grad, clipped to ±clip_gradient when that is >= 0, then SGD, SGD with momentum, NAG,
 * Adam (bias correction in the caller's lr), RMSProp (clip_weights), AdaGrad, Ftrl, Signum,
 * signSGD and FTML (its third state z passed in lmx_cpu_upd.s2), all in
 * the compute type (float for float32 / float16, double for float64) with the constants
 * cast to it first, as the CPU does. Multi-precision (MP = 1): the weight read and
 * written is the float32 master copy; the float16 output receives its rounding, which is
 * what MXNet's MP_SGDKernel / MP_SGDMomKernel / MP_NAGMomKernel do.
 */
#include "../cpu/cpu_kernels.h"
#include "cu_optim.h"
#include "cu_util.cuh"

struct UpdArgs {
  double lr, wd, rescale, clip, momentum, beta1, beta2, epsilon, gamma1, clip_weights;
  double lamda1, beta, wd_lh, t;
};

#define CLIPV(v, c) ((c) >= 0 ? ((v) > (c) ? (c) : (v) < -(c) ? -(c) : (v)) : (v))
#define SIGNV(v) ((v) > 0 ? 1 : (v) < 0 ? -1 : 0)

/* T: the weight / output / gradient type; S: the state type (T, or float with MP);
 * W: where the weight is read and written back (the output itself, or w32 with MP). */
template <typename T, typename S, int RULE, int MP>
__global__ void k_update(UpdArgs u, int64_t n, T *out, const T *w, const T *gr, S *s0, S *s1,
                         S *s2, float *w32, int acc) {
  typedef typename lmx_cu_acc<T>::type C;
  const C lr = (C)u.lr, wd = (C)u.wd, rs = (C)u.rescale, cl = (C)u.clip;
  const C mo = (C)u.momentum, b1 = (C)u.beta1, b2 = (C)u.beta2, ep = (C)u.epsilon;
  const C g1 = (C)u.gamma1, cw = (C)u.clip_weights;
  const C l1 = (C)u.lamda1, be = (C)u.beta, wl = (C)u.wd_lh;
  const C c1 = (C)(1 - pow(u.beta1, u.t)), c2 = (C)(1 - pow(u.beta2, u.t));
  LMX_CU_GRID_LOOP(i, n) {
    C wi = MP ? (C)w32[i] : (C)lmx_cu_ld(w, i);
    C g = rs * (C)lmx_cu_ld(gr, i), nw;
    if (RULE == LMX_UPD_SGD) {
      g = CLIPV(g, cl);
      nw = (1 - lr * wd) * wi - lr * g;
    } else if (RULE == LMX_UPD_SGD_MOM) {
      g = CLIPV(g, cl);
      C m = mo * (C)lmx_cu_ld(s0, i) - lr * wd * wi - lr * g;
      lmx_cu_st(s0, i, m);
      nw = wi + m;
    } else if (RULE == LMX_UPD_NAG) {
      g = CLIPV(g, cl) + wd * wi;
      C m = mo * (C)lmx_cu_ld(s0, i) + g;
      lmx_cu_st(s0, i, m);
      nw = wi - lr * (mo * m + g);
    } else if (RULE == LMX_UPD_ADAM) {
      g = g + wd * wi;
      g = CLIPV(g, cl);
      C m = b1 * (C)lmx_cu_ld(s0, i) + (1 - b1) * g;
      C v = b2 * (C)lmx_cu_ld(s1, i) + (1 - b2) * g * g;
      lmx_cu_st(s0, i, m);
      lmx_cu_st(s1, i, v);
      nw = wi - lr * m / (sqrt(v) + ep);
    } else if (RULE == LMX_UPD_RMSPROP) {
      g = g + wd * wi;
      g = CLIPV(g, cl);
      C m = (1 - g1) * g * g + g1 * (C)lmx_cu_ld(s0, i);
      lmx_cu_st(s0, i, m);
      nw = wi - lr * g / sqrt(m + ep);
      if (cw > 0) nw = CLIPV(nw, cw);
    } else if (RULE == LMX_UPD_FTRL) {
      g = CLIPV(g, cl);
      C z = (C)lmx_cu_ld(s0, i), nn = (C)lmx_cu_ld(s1, i);
      z += g - (sqrt(nn + g * g) - sqrt(nn)) * wi / lr;
      nn += g * g;
      lmx_cu_st(s0, i, z);
      lmx_cu_st(s1, i, nn);
      nw = fabs(z) > l1 ? (SIGNV(z) * l1 - z) / ((be + sqrt(nn)) / lr + wd) : (C)0;
    } else if (RULE == LMX_UPD_SIGNUM) {
      g = CLIPV(g, cl);
      C m = mo * (C)lmx_cu_ld(s0, i) - (1 - mo) * (wd * wi + g);
      lmx_cu_st(s0, i, m);
      nw = (1 - lr * wl) * wi + lr * SIGNV(m);
    } else if (RULE == LMX_UPD_FTML) {
      g = CLIPV(g + wd * wi, cl);
      C v = b2 * (C)lmx_cu_ld(s1, i) + (1 - b2) * g * g;
      C d_t = c1 / lr * (sqrt(v / c2) + ep);
      C z = b1 * (C)lmx_cu_ld(s2, i) + (1 - b1) * g - (d_t - b1 * (C)lmx_cu_ld(s0, i)) * wi;
      lmx_cu_st(s1, i, v);
      lmx_cu_st(s2, i, z);
      lmx_cu_st(s0, i, d_t);
      nw = -z / d_t;
    } else if (RULE == LMX_UPD_SIGNSGD) {
      C gs = (C)lmx_cu_ld(gr, i);
      nw = (1 - lr * wd) * wi - lr * SIGNV(gs);
    } else { /* ADAGRAD */
      g = CLIPV(g, cl);
      C h = (C)lmx_cu_ld(s0, i) + g * g;
      lmx_cu_st(s0, i, h);
      nw = wi - lr * (g / sqrt(h + ep) + wd * wi);
    }
    if (MP) w32[i] = (float)nw;
    if (acc) nw = (C)lmx_cu_ld(out, i) + nw;
    lmx_cu_st(out, i, nw);
  }
}

template <typename T, typename S, int MP>
static int upd_launch(lmx_cu_stream s, const lmx_cpu_upd *u, int64_t n, void *out,
                      const void *w, const void *grad, void *s0, void *s1, void *w32, int acc) {
  UpdArgs a = {u->lr, u->wd, u->rescale, u->clip, u->momentum, u->beta1, u->beta2,
               u->epsilon, u->gamma1, u->clip_weights, u->lamda1, u->beta, u->wd_lh, u->t};
  int nst = (u->rule == LMX_UPD_SGD || u->rule == LMX_UPD_SIGNSGD) ? 0
            : (u->rule == LMX_UPD_ADAM || u->rule == LMX_UPD_FTRL) ? 2
            : u->rule == LMX_UPD_FTML ? 3 : 1;
  if ((nst > 0 && !s0) || (nst > 1 && !s1) || (nst > 2 && !u->s2) || (MP && !w32)) return -1;
  if (n <= 0) return 0;
  unsigned g = lmx_cu_blocks(n);
  T *o = (T *)out;
  const T *wp = (const T *)w, *gp = (const T *)grad;
  S *a0 = (S *)s0, *a1 = (S *)s1, *a2 = (S *)u->s2;
  float *m = (float *)w32;
  switch (u->rule) {
#define UC(R)                                                                             \
  case R:                                                                                 \
    LMX_LAUNCH((k_update<T, S, R, MP>), g, LMX_CU_THREADS, 0, s, a, n, o, wp, gp, a0, a1, a2, \
               m, acc);                                                                   \
    break;
    UC(LMX_UPD_SGD) UC(LMX_UPD_SGD_MOM) UC(LMX_UPD_NAG) UC(LMX_UPD_ADAM) UC(LMX_UPD_RMSPROP)
    UC(LMX_UPD_ADAGRAD) UC(LMX_UPD_FTRL) UC(LMX_UPD_SIGNUM) UC(LMX_UPD_SIGNSGD) UC(LMX_UPD_FTML)
#undef UC
    default: return -1;
  }
  return lmx_cu_last_error();
}

int lmx_cu_update(lmx_cu_stream s, int dt, const lmx_cpu_upd *up, int64_t n, void *out,
                  const void *w, const void *grad, void *s0, void *s1, int acc) {
  if (!up) return -1;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        return upd_launch<T, T, 0>(s, up, n, out, w, grad, s0, s1, NULL, acc));
  return -1;
}

int lmx_cu_update_mp(lmx_cu_stream s, const lmx_cpu_upd *up, int64_t n, void *out16,
                     const void *grad16, void *s0, void *s1, void *w32, int acc) {
  if (!up) return -1;
  return upd_launch<lmx_h16, float, 1>(s, up, n, out16, NULL, grad16, s0, s1, w32, acc);
}
