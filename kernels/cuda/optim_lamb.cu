/* optim_lamb.cu — LAMB's two phases (issue 17): one thread per element, the rules of
 * kernels/cpu/optim_lamb.c (MXNet 1.9 LambUpdatePhaseOne/TwoKernel and their MP twins) in
 * the compute type (float for float32 / float16, double for float64) with the constants
 * cast to it first. Phase two reads r1[0] and r2[0] from device memory in every thread.
 * Multi-precision: the gradient is float16, everything else float32; phase two writes the
 * float32 master copy back and rounds it into the float16 output.
 */
#include "../cpu/cpu_kernels.h"
#include "cu_optim_lamb.h"
#include "cu_util.cuh"

struct Lamb1Args {
  double beta1, beta2, epsilon, wd, rescale, clip, c1, c2;
  int bias_correction;
};

/* S: weight (or weight32), mean, var and g; T: the gradient */
template <typename S, typename T>
__global__ void k_lamb1(Lamb1Args a, int64_t n, S *out, const S *w, const T *gr, S *m, S *v,
                        int acc) {
  typedef typename lmx_cu_acc<S>::type C;
  const C b1 = (C)a.beta1, b2 = (C)a.beta2, ep = (C)a.epsilon, wd = (C)a.wd;
  const C rs = (C)a.rescale, cl = (C)a.clip, c1 = (C)a.c1, c2 = (C)a.c2;
  LMX_CU_GRID_LOOP(i, n) {
    C g = rs * (C)lmx_cu_ld(gr, i);
    if (cl >= 0) g = g > cl ? cl : g < -cl ? -cl : g;
    C mi = b1 * (C)lmx_cu_ld(m, i) + (1 - b1) * g;
    C vi = b2 * (C)lmx_cu_ld(v, i) + (1 - b2) * g * g;
    lmx_cu_st(m, i, mi);
    lmx_cu_st(v, i, vi);
    if (a.bias_correction) mi /= c1, vi /= c2;
    C r = mi / (sqrt(vi) + ep) + wd * (C)lmx_cu_ld(w, i);
    if (acc) r += (C)lmx_cu_ld(out, i);
    lmx_cu_st(out, i, r);
  }
}

/* T: the output; S: the weight read (weight, or weight32 written back with MP), g, r1, r2 */
template <typename T, typename S, int MP>
__global__ void k_lamb2(double lr_, double lo_, double hi_, int64_t n, T *out, S *w,
                        const S *g, const S *r1, const S *r2, int acc) {
  typedef typename lmx_cu_acc<S>::type C;
  const C lo = (C)lo_, hi = (C)hi_, b = (C)lmx_cu_ld(r2, 0);
  C a = (C)lmx_cu_ld(r1, 0), rate = (C)lr_;
  if (lo >= 0) a = a > lo ? a : lo;
  if (hi >= 0) a = a < hi ? a : hi;
  if (!(a == 0 || b == 0)) rate = rate * a / b;
  LMX_CU_GRID_LOOP(i, n) {
    C nw = (C)lmx_cu_ld(w, i) - rate * (C)lmx_cu_ld(g, i);
    if (MP) lmx_cu_st(w, i, nw);
    if (acc) nw = (C)lmx_cu_ld(out, i) + nw;
    lmx_cu_st(out, i, nw);
  }
}

static Lamb1Args args1(const lmx_cpu_lamb1 *u) {
  Lamb1Args a = {u->beta1, u->beta2, u->epsilon, u->wd, u->rescale, u->clip,
                 1 - u->beta1_t, 1 - u->beta2_t, u->bias_correction};
  return a;
}

int lmx_cu_lamb_phase1(lmx_cu_stream s, int dt, const lmx_cpu_lamb1 *u, int64_t n, void *g,
                       const void *w, const void *grad, void *mean, void *var, int acc) {
  if (!u) return -1;
  if (n <= 0) return 0;
  Lamb1Args a = args1(u);
  LMX_CU_DISPATCH_FLOAT(dt, return -1, {
    LMX_LAUNCH((k_lamb1<T, T>), lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, a, n, (T *)g,
               (const T *)w, (const T *)grad, (T *)mean, (T *)var, acc);
  });
  return lmx_cu_last_error();
}

int lmx_cu_lamb_phase2(lmx_cu_stream s, int dt, const lmx_cpu_lamb2 *u, int64_t n, void *out,
                       const void *w, const void *g, const void *r1, const void *r2, int acc) {
  if (!u) return -1;
  if (n <= 0) return 0;
  LMX_CU_DISPATCH_FLOAT(dt, return -1, {
    LMX_LAUNCH((k_lamb2<T, T, 0>), lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, u->lr,
               u->lower_bound, u->upper_bound, n, (T *)out, (T *)w, (const T *)g,
               (const T *)r1, (const T *)r2, acc);
  });
  return lmx_cu_last_error();
}

int lmx_cu_lamb_phase1_mp(lmx_cu_stream s, const lmx_cpu_lamb1 *u, int64_t n, void *g,
                          const void *w32, const void *grad16, void *mean, void *var, int acc) {
  if (!u) return -1;
  if (n <= 0) return 0;
  Lamb1Args a = args1(u);
  LMX_LAUNCH((k_lamb1<float, lmx_h16>), lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, a, n,
             (float *)g, (const float *)w32, (const lmx_h16 *)grad16, (float *)mean,
             (float *)var, acc);
  return lmx_cu_last_error();
}

int lmx_cu_lamb_phase2_mp(lmx_cu_stream s, const lmx_cpu_lamb2 *u, int64_t n, void *out16,
                          void *w32, const void *g, const void *r1, const void *r2, int acc) {
  if (!u) return -1;
  if (n <= 0) return 0;
  LMX_LAUNCH((k_lamb2<lmx_h16, float, 1>), lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, u->lr,
             u->lower_bound, u->upper_bound, n, (lmx_h16 *)out16, (float *)w32,
             (const float *)g, (const float *)r1, (const float *)r2, acc);
  return lmx_cu_last_error();
}
