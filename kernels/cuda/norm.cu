/* norm.cu — BatchNorm and LayerNorm forward/backward on [outer, C, inner] data
 * (kernels/cpu/norm.c, whose formulas and MXNet conventions these follow: invstd is
 * 1/sqrt(var + eps) of the biased variance, 0 when both are 0; the moving statistics take
 * the biased variance with momentum; fix_gamma reads gamma as 1 and gives it gradient 0).
 *
 * BatchNorm runs one block per channel: the threads stride over the channel's
 * outer × inner elements, partial sums are combined by a fixed shared-memory tree
 * (block_sum), mean first and then the centred sum of squares (two passes, as the CPU),
 * then every thread normalizes its elements. Thread 0 writes the per-channel outputs.
 * LayerNorm runs one block per (outer, inner) row over C, and its gamma / beta gradients
 * one block per channel over the rows. Sums are in float (double for float64); the CPU
 * sums in double, so float32 results agree to rounding, not bit for bit.
 */
#include <math.h>

#include "cu_norm.h"
#include "cudnn_args.h" /* lmx_dnn_bn_fold, lmx_dnn_bn_biased */
#include "cu_util.cuh"

enum { NT = 256 }; /* threads per block: a power of two (block_sum) */

/* Σ v over the block, the same tree every time; every thread gets the result. */
template <typename A>
__device__ static inline A block_sum(A v, A *sh) {
  unsigned t = threadIdx.x;
  __syncthreads(); /* the previous result has been read by everyone */
  sh[t] = v;
  __syncthreads();
  for (unsigned k = NT / 2; k > 0; k >>= 1) {
    if (t < k) sh[t] += sh[t + k];
    __syncthreads();
  }
  return sh[0];
}

/* parameter (gamma, beta, statistics) type for data type T */
template <typename T> struct pty { typedef T type; };
template <> struct pty<lmx_h16> { typedef float type; };

#define PUT(acc, p, i, v) lmx_cu_st(p, i, (acc) ? (v) + lmx_cu_ld(p, i) : (v))

template <typename T>
__global__ void k_bn_fwd(lmx_cpu_bn b, const T *x, T *y, const typename pty<T>::type *gam,
                         const typename pty<T>::type *bet, typename pty<T>::type *mean,
                         typename pty<T>::type *invstd, typename pty<T>::type *mmean,
                         typename pty<T>::type *mvar, int acc) {
  typedef typename lmx_cu_acc<T>::type A;
  __shared__ A sh[NT];
  int64_t c = blockIdx.x, cnt = b.outer * b.inner;
#define BN_Q(q) (((q) / b.inner * b.C + c) * b.inner + (q) % b.inner)
  A m;
  double is;
  if (b.batch_stats) {
    A s = 0, ss = 0;
    for (int64_t q = threadIdx.x; q < cnt; q += NT) s += lmx_cu_ld(x, BN_Q(q));
    s = block_sum(s, sh);
    m = cnt ? s / (A)cnt : (A)0;
    for (int64_t q = threadIdx.x; q < cnt; q += NT) {
      A d = lmx_cu_ld(x, BN_Q(q)) - m;
      ss += d * d;
    }
    ss = block_sum(ss, sh);
    A var = cnt ? ss / (A)cnt : (A)0;
    is = (var == 0 && b.eps == 0) ? 0 : 1.0 / sqrt((double)var + b.eps);
    if (b.update_moving && threadIdx.x == 0) {
      mmean[c] = (typename pty<T>::type)(mmean[c] * b.momentum + (double)m * (1 - b.momentum));
      mvar[c] = (typename pty<T>::type)(mvar[c] * b.momentum + (double)var * (1 - b.momentum));
    }
  } else {
    m = (A)mmean[c];
    is = 1.0 / sqrt((double)mvar[c] + b.eps);
  }
  if (threadIdx.x == 0) {
    if (mean) mean[c] = (typename pty<T>::type)m;
    if (invstd) invstd[c] = (typename pty<T>::type)is;
  }
  if (!y) return;
  A w = b.fix_gamma ? (A)1 : (A)gam[c], bb = (A)bet[c], isa = (A)is;
  for (int64_t q = threadIdx.x; q < cnt; q += NT) {
    int64_t i = BN_Q(q);
    A v = (lmx_cu_ld(x, i) - m) * isa * w + bb;
    PUT(acc, y, i, v);
  }
}

template <typename T>
__global__ void k_bn_bwd(lmx_cpu_bn b, const T *x, const T *g, const typename pty<T>::type *gam,
                         const typename pty<T>::type *mean, const typename pty<T>::type *invstd,
                         T *gx, typename pty<T>::type *ggam, typename pty<T>::type *gbet,
                         int acc0, int acc1, int acc2) {
  typedef typename lmx_cu_acc<T>::type A;
  __shared__ A sh[NT];
  int64_t c = blockIdx.x, cnt = b.outer * b.inner;
  A m = (A)mean[c], is = (A)invstd[c], sg = 0, dot = 0;
  A w = b.fix_gamma ? (A)1 : (A)gam[c];
  for (int64_t q = threadIdx.x; q < cnt; q += NT) {
    int64_t i = BN_Q(q);
    A gv = lmx_cu_ld(g, i);
    sg += gv;
    dot += (lmx_cu_ld(x, i) - m) * gv;
  }
  sg = block_sum(sg, sh);
  dot = block_sum(dot, sh);
  if (gx) {
    A n = (A)(cnt ? cnt : 1), k = dot * is * is / n, gm = sg / n;
    for (int64_t q = threadIdx.x; q < cnt; q += NT) {
      int64_t i = BN_Q(q);
      A gv = lmx_cu_ld(g, i);
      A v = b.batch_stats ? (gv - gm - (lmx_cu_ld(x, i) - m) * k) * is * w : gv * is * w;
      PUT(acc0, gx, i, v);
    }
  }
  if (threadIdx.x == 0) {
    if (ggam) ggam[c] = (typename pty<T>::type)((b.fix_gamma ? (A)0 : dot * is) +
                                                 (acc1 ? (A)ggam[c] : (A)0));
    if (gbet) gbet[c] = (typename pty<T>::type)(sg + (acc2 ? (A)gbet[c] : (A)0));
  }
#undef BN_Q
}

int lmx_cu_bn_fwd(lmx_cu_stream s, int dt, const lmx_cpu_bn *b, const void *x, void *y,
                  const void *gamma, const void *beta, void *mean, void *invstd, void *mmean,
                  void *mvar, int acc) {
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
    typedef typename pty<T>::type P;
    if (b->C == 0) return 0;
    LMX_LAUNCH(k_bn_fwd<T>, (unsigned)b->C, NT, 0, s, *b, (const T *)x, (T *)y,
               (const P *)gamma, (const P *)beta, (P *)mean, (P *)invstd, (P *)mmean,
               (P *)mvar, acc))
  return lmx_cu_last_error();
}

int lmx_cu_bn_bwd(lmx_cu_stream s, int dt, const lmx_cpu_bn *b, const void *x, const void *g,
                  const void *gamma, const void *mean, const void *invstd, void *gx,
                  void *ggamma, void *gbeta, const int *acc) {
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
    typedef typename pty<T>::type P;
    if (b->C == 0) return 0;
    LMX_LAUNCH(k_bn_bwd<T>, (unsigned)b->C, NT, 0, s, *b, (const T *)x, (const T *)g,
               (const P *)gamma, (const P *)mean, (const P *)invstd, (T *)gx, (P *)ggamma,
               (P *)gbeta, acc[0], acc[1], acc[2]))
  return lmx_cu_last_error();
}

/* cuDNN BatchNorm's helpers (cudnn_exec.cu): the moving statistics, luamx's way, from
 * cuDNN's batch mean and unbiased variance; the inference outputs mean / invstd */
__global__ void k_bn_fold_moving(int64_t C, double f, int64_t count, const float *bmean,
                                 const float *bvar, float *mmean, float *mvar) {
  LMX_CU_GRID_LOOP(i, C) {
    mmean[i] = (float)lmx_dnn_bn_fold(mmean[i], bmean[i], f);
    mvar[i] = (float)lmx_dnn_bn_fold(mvar[i], lmx_dnn_bn_biased(bvar[i], count), f);
  }
}

__global__ void k_bn_inf_stats(int64_t C, double eps, const float *mmean, const float *mvar,
                               float *mean, float *invstd) {
  LMX_CU_GRID_LOOP(i, C) {
    mean[i] = mmean[i];
    invstd[i] = (float)(1.0 / sqrt((double)mvar[i] + eps));
  }
}

int lmx_cu_bn_fold_moving(lmx_cu_stream s, int64_t C, double f, int64_t count, const void *bmean,
                          const void *bvar, void *mmean, void *mvar) {
  if (C == 0) return 0;
  LMX_LAUNCH(k_bn_fold_moving, lmx_cu_blocks(C), LMX_CU_THREADS, 0, s, C, f, count,
             (const float *)bmean, (const float *)bvar, (float *)mmean, (float *)mvar);
  return lmx_cu_last_error();
}

int lmx_cu_bn_inf_stats(lmx_cu_stream s, int64_t C, double eps, const void *mmean,
                        const void *mvar, void *mean, void *invstd) {
  if (C == 0) return 0;
  LMX_LAUNCH(k_bn_inf_stats, lmx_cu_blocks(C), LMX_CU_THREADS, 0, s, C, eps,
             (const float *)mmean, (const float *)mvar, (float *)mean, (float *)invstd);
  return lmx_cu_last_error();
}

/* ---- LayerNorm ------------------------------------------------------------------------ */

template <typename T>
__global__ void k_ln_fwd(int64_t C, int64_t inner, double eps, const T *x, T *y, const T *gam,
                         const T *bet, T *mean, T *sd_out, int acc) {
  typedef typename lmx_cu_acc<T>::type A;
  __shared__ A sh[NT];
  int64_t r = blockIdx.x, base = r / inner * C * inner + r % inner;
  A s = 0, ss = 0;
  for (int64_t c = threadIdx.x; c < C; c += NT) s += lmx_cu_ld(x, base + c * inner);
  s = block_sum(s, sh);
  A m = C ? s / (A)C : (A)0;
  for (int64_t c = threadIdx.x; c < C; c += NT) {
    A d = lmx_cu_ld(x, base + c * inner) - m;
    ss += d * d;
  }
  ss = block_sum(ss, sh);
  A sd = (A)sqrt((double)(C ? ss / (A)C : (A)0) + eps);
  if (threadIdx.x == 0) {
    if (mean) lmx_cu_st(mean, r, m);
    if (sd_out) lmx_cu_st(sd_out, r, sd);
  }
  for (int64_t c = threadIdx.x; c < C; c += NT) {
    int64_t i = base + c * inner;
    A v = (lmx_cu_ld(x, i) - m) / sd * (A)lmx_cu_ld(gam, c) + (A)lmx_cu_ld(bet, c);
    PUT(acc, y, i, v);
  }
}

template <typename T>
__global__ void k_ln_bwd_data(int64_t C, int64_t inner, const T *x, const T *g, const T *gam,
                              const T *mean, const T *sdv, T *gx, int acc) {
  typedef typename lmx_cu_acc<T>::type A;
  __shared__ A sh[NT];
  int64_t r = blockIdx.x, base = r / inner * C * inner + r % inner;
  A m = lmx_cu_ld(mean, r), sd = lmx_cu_ld(sdv, r), a = 0, bs = 0;
  for (int64_t c = threadIdx.x; c < C; c += NT) {
    A xh = (lmx_cu_ld(x, base + c * inner) - m) / sd;
    A gh = lmx_cu_ld(g, base + c * inner) * (A)lmx_cu_ld(gam, c);
    a += gh, bs += gh * xh;
  }
  a = block_sum(a, sh) / (A)C;
  bs = block_sum(bs, sh) / (A)C;
  for (int64_t c = threadIdx.x; c < C; c += NT) {
    int64_t i = base + c * inner;
    A xh = (lmx_cu_ld(x, i) - m) / sd, gh = lmx_cu_ld(g, i) * (A)lmx_cu_ld(gam, c);
    PUT(acc, gx, i, (gh - a - xh * bs) / sd);
  }
}

template <typename T>
__global__ void k_ln_bwd_param(int64_t outer, int64_t C, int64_t inner, const T *x, const T *g,
                               const T *mean, const T *sdv, T *ggam, T *gbet, int acc1,
                               int acc2) {
  typedef typename lmx_cu_acc<T>::type A;
  __shared__ A sh[NT];
  int64_t c = blockIdx.x, rows = outer * inner;
  A sgam = 0, sbet = 0;
  for (int64_t r = threadIdx.x; r < rows; r += NT) {
    int64_t q = (r / inner * C + c) * inner + r % inner;
    A gv = lmx_cu_ld(g, q);
    sgam += gv * (lmx_cu_ld(x, q) - (A)lmx_cu_ld(mean, r)) / (A)lmx_cu_ld(sdv, r);
    sbet += gv;
  }
  sgam = block_sum(sgam, sh);
  sbet = block_sum(sbet, sh);
  if (threadIdx.x == 0) {
    if (ggam) PUT(acc1, ggam, c, sgam);
    if (gbet) PUT(acc2, gbet, c, sbet);
  }
}

int lmx_cu_ln_fwd(lmx_cu_stream s, int dt, int64_t outer, int64_t C, int64_t inner, double eps,
                  const void *x, void *y, const void *gamma, const void *beta, void *mean,
                  void *std, int acc) {
  int64_t rows = outer * inner;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
    if (rows == 0) return 0;
    LMX_LAUNCH(k_ln_fwd<T>, (unsigned)rows, NT, 0, s, C, inner, eps, (const T *)x, (T *)y,
               (const T *)gamma, (const T *)beta, (T *)mean, (T *)std, acc))
  return lmx_cu_last_error();
}

int lmx_cu_ln_bwd(lmx_cu_stream s, int dt, int64_t outer, int64_t C, int64_t inner,
                  const void *x, const void *g, const void *gamma, const void *mean,
                  const void *std, void *gx, void *ggamma, void *gbeta, const int *acc) {
  int64_t rows = outer * inner;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
    if (gx && rows > 0 && C > 0) {
      LMX_LAUNCH(k_ln_bwd_data<T>, (unsigned)rows, NT, 0, s, C, inner, (const T *)x,
                 (const T *)g, (const T *)gamma, (const T *)mean, (const T *)std, (T *)gx,
                 acc[0]);
      int rc = lmx_cu_last_error();
      if (rc) return rc;
    }
    if ((ggamma || gbeta) && C > 0)
      LMX_LAUNCH(k_ln_bwd_param<T>, (unsigned)C, NT, 0, s, outer, C, inner, (const T *)x,
                 (const T *)g, (const T *)mean, (const T *)std, (T *)ggamma, (T *)gbeta,
                 acc[1], acc[2]))
  return lmx_cu_last_error();
}
