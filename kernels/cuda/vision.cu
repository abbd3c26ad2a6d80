/* vision.cu — CUDA kernels of LRN, the row normalisations, Pad and nearest UpSampling
 * (cu_vision.h), the twins of kernels/cpu/norm_more.c and spatial.c:
 *  - LRN: one thread per element, its channel window summed in order (forward: the
 *    squares; backward: gy y / tmp), as the CPU does;
 *  - row normalisations: one block per row, partial sums per thread in double combined
 *    by the deterministic block reduction (cu_util.cuh), so results are reproducible but
 *    round differently from the CPU's serial sums; gamma / beta gradients one block per
 *    group of gamma, rows in order;
 *  - Pad: one thread per output element (forward) or per input element gathering the
 *    output positions that read it (backward; kernels/pad_index.h, shared with the CPU,
 *    so the sums run in the same order), no atomics;
 *  - nearest UpSampling: one thread per output element, or per input element summing its
 *    block (backward);
 *  - depth_to_space / space_to_depth and Crop: one thread per destination element.
 * float16 loads widen to float and stores round like the CPU's routine.
 */
#include "cuda_common.cuh"
#include "cu_vision.h"
#include "cu_util.cuh"
#include "../pad_index.h"

struct VSum {
  template <typename C> __device__ static C identity() { return (C)0; }
  template <typename C> __device__ static C merge(C a, C b) { return a + b; }
};

enum { ROW_THREADS = 128 };

/* ---- LRN ------------------------------------------------------------------------------ */

template <typename T>
__global__ void k_lrn_fwd(int64_t N, int64_t C, int64_t SP, int64_t nsize, double alpha,
                          double beta, double knorm, const T *x, T *y, T *t) {
  int64_t h = nsize / 2;
  double sa = alpha / (double)nsize;
  LMX_CU_GRID_LOOP(e, N * C * SP) {
    int64_t s = e % SP, c = (e / SP) % C, n = e / (SP * C);
    int64_t lo = c - h < 0 ? 0 : c - h, hi = c + h >= C ? C - 1 : c + h;
    double a = 0;
    for (int64_t j = lo; j <= hi; j++) {
      double v = lmx_cu_ld(x, (n * C + j) * SP + s);
      a += v * v;
    }
    double tv = knorm + sa * a;
    lmx_cu_st(t, e, tv);
    lmx_cu_st(y, e, (double)lmx_cu_ld(x, e) * pow(tv, -beta));
  }
}

template <typename T>
__global__ void k_lrn_bwd(int64_t N, int64_t C, int64_t SP, int64_t nsize, double alpha,
                          double beta, const T *x, const T *y, const T *t, const T *gy, T *gx,
                          int acc) {
  int64_t h = nsize / 2;
  double f = 2.0 * alpha * beta / (double)nsize;
  LMX_CU_GRID_LOOP(e, N * C * SP) {
    int64_t s = e % SP, c = (e / SP) % C, n = e / (SP * C);
    int64_t lo = c - h < 0 ? 0 : c - h, hi = c + h >= C ? C - 1 : c + h;
    double a = 0;
    for (int64_t j = lo; j <= hi; j++) {
      int64_t q = (n * C + j) * SP + s;
      a += (double)lmx_cu_ld(gy, q) * (double)lmx_cu_ld(y, q) / (double)lmx_cu_ld(t, q);
    }
    double v = (double)lmx_cu_ld(gy, e) * pow((double)lmx_cu_ld(t, e), -beta) -
               f * (double)lmx_cu_ld(x, e) * a;
    if (acc) v += (double)lmx_cu_ld(gx, e);
    lmx_cu_st(gx, e, v);
  }
}

int lmx_cu_lrn_fwd(lmx_cu_stream s, int dt, int64_t N, int64_t C, int64_t SP, int64_t nsize,
                   double alpha, double beta, double knorm, const void *x, void *y, void *tmp) {
  int64_t n = N * C * SP;
  if (n == 0) return 0;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_lrn_fwd<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, N, C,
                                   SP, nsize, alpha, beta, knorm, (const T *)x, (T *)y,
                                   (T *)tmp));
  return lmx_cu_last_error();
}

int lmx_cu_lrn_bwd(lmx_cu_stream s, int dt, int64_t N, int64_t C, int64_t SP, int64_t nsize,
                   double alpha, double beta, const void *x, const void *y, const void *tmp,
                   const void *gy, void *gx, int acc) {
  int64_t n = N * C * SP;
  if (n == 0) return 0;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_lrn_bwd<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, N, C,
                                   SP, nsize, alpha, beta, (const T *)x, (const T *)y,
                                   (const T *)tmp, (const T *)gy, (T *)gx, acc));
  return lmx_cu_last_error();
}

/* ---- row normalisations ---------------------------------------------------------------- */

#define AT(rn, o, l, i) (((o) * (rn).len + (l)) * (rn).inner + (i))

/* 1 / std of row r from the stored statistic */
template <typename T>
__device__ static inline double rstd_of(int kind, const T *s2, int64_t r, double eps) {
  double v = lmx_cu_ld(s2, r);
  return kind == 2 ? 1.0 / v : 1.0 / sqrt(v + eps);
}

template <typename T>
__global__ void k_rn_fwd(int kind, lmx_cu_rownorm rn, double eps, const T *x, const T *gam,
                         const T *bet, T *y, T *s1, T *s2) {
  __shared__ double sh[32];
  int64_t rows = rn.outer * rn.inner, L = rn.len;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t o = r / rn.inner, i = r % rn.inner;
    double a = 0;
    if (kind == 0) {
      for (int64_t l = threadIdx.x; l < L; l += blockDim.x) {
        double v = lmx_cu_ld(x, AT(rn, o, l, i));
        a += v * v;
      }
      double nrm = sqrt(lmx_cu_block_reduce<double, VSum>(a, sh) + eps);
      if (threadIdx.x == 0) lmx_cu_st(s1, r, nrm);
      for (int64_t l = threadIdx.x; l < L; l += blockDim.x)
        lmx_cu_st(y, AT(rn, o, l, i), (double)lmx_cu_ld(x, AT(rn, o, l, i)) / nrm);
    } else {
      for (int64_t l = threadIdx.x; l < L; l += blockDim.x) a += lmx_cu_ld(x, AT(rn, o, l, i));
      double m = lmx_cu_block_reduce<double, VSum>(a, sh);
      m = L ? m / (double)L : 0;
      __syncthreads();
      a = 0;
      for (int64_t l = threadIdx.x; l < L; l += blockDim.x) {
        double d = lmx_cu_ld(x, AT(rn, o, l, i)) - m;
        a += d * d;
      }
      double ss = lmx_cu_block_reduce<double, VSum>(a, sh);
      double var = L ? ss / (double)L : 0, sd = sqrt(var + eps);
      double w = lmx_cu_ld(gam, o % rn.na), b = lmx_cu_ld(bet, o % rn.na);
      if (threadIdx.x == 0) {
        lmx_cu_st(s1, r, m);
        lmx_cu_st(s2, r, kind == 2 ? sd : var);
      }
      for (int64_t l = threadIdx.x; l < L; l += blockDim.x)
        lmx_cu_st(y, AT(rn, o, l, i), ((double)lmx_cu_ld(x, AT(rn, o, l, i)) - m) / sd * w + b);
    }
    __syncthreads();
  }
}

template <typename T>
__global__ void k_rn_bwd_x(int kind, lmx_cu_rownorm rn, double eps, const T *x, const T *y,
                           const T *gam, const T *s1, const T *s2, const T *gy, T *gx, int acc) {
  __shared__ double sh[32];
  int64_t rows = rn.outer * rn.inner, L = rn.len;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t o = r / rn.inner, i = r % rn.inner;
    if (kind == 0) {
      double d = 0, nrm = lmx_cu_ld(s1, r);
      for (int64_t l = threadIdx.x; l < L; l += blockDim.x) {
        int64_t q = AT(rn, o, l, i);
        d += (double)lmx_cu_ld(gy, q) * (double)lmx_cu_ld(y, q);
      }
      d = lmx_cu_block_reduce<double, VSum>(d, sh);
      for (int64_t l = threadIdx.x; l < L; l += blockDim.x) {
        int64_t q = AT(rn, o, l, i);
        double v = ((double)lmx_cu_ld(gy, q) - (double)lmx_cu_ld(y, q) * d) / nrm;
        if (acc) v += (double)lmx_cu_ld(gx, q);
        lmx_cu_st(gx, q, v);
      }
    } else {
      double m = lmx_cu_ld(s1, r), rs = rstd_of(kind, s2, r, eps);
      double w = lmx_cu_ld(gam, o % rn.na), mw = 0, mwx = 0;
      for (int64_t l = threadIdx.x; l < L; l += blockDim.x) {
        int64_t q = AT(rn, o, l, i);
        double xh = ((double)lmx_cu_ld(x, q) - m) * rs, wq = (double)lmx_cu_ld(gy, q) * w;
        mw += wq, mwx += wq * xh;
      }
      mw = lmx_cu_block_reduce<double, VSum>(mw, sh);
      __syncthreads();
      mwx = lmx_cu_block_reduce<double, VSum>(mwx, sh);
      mw = L ? mw / (double)L : 0, mwx = L ? mwx / (double)L : 0;
      for (int64_t l = threadIdx.x; l < L; l += blockDim.x) {
        int64_t q = AT(rn, o, l, i);
        double xh = ((double)lmx_cu_ld(x, q) - m) * rs;
        double v = rs * ((double)lmx_cu_ld(gy, q) * w - mw - xh * mwx);
        if (acc) v += (double)lmx_cu_ld(gx, q);
        lmx_cu_st(gx, q, v);
      }
    }
    __syncthreads();
  }
}

/* gamma / beta gradients: one block per group a (inner is 1 for the mean/var kinds) */
template <typename T>
__global__ void k_rn_bwd_gb(int kind, lmx_cu_rownorm rn, double eps, const T *x, const T *s1,
                            const T *s2, const T *gy, T *gg, T *gb, int accg, int accb) {
  __shared__ double sh[32];
  int64_t L = rn.len;
  for (int64_t a = blockIdx.x; a < rn.na; a += gridDim.x) {
    double sg = 0, sb = 0;
    for (int64_t o = a; o < rn.outer; o += rn.na) {
      double m = lmx_cu_ld(s1, o), rs = rstd_of(kind, s2, o, eps);
      for (int64_t l = threadIdx.x; l < L; l += blockDim.x) {
        int64_t q = o * L + l;
        double g = lmx_cu_ld(gy, q);
        sg += g * ((double)lmx_cu_ld(x, q) - m) * rs, sb += g;
      }
    }
    sg = lmx_cu_block_reduce<double, VSum>(sg, sh);
    __syncthreads();
    sb = lmx_cu_block_reduce<double, VSum>(sb, sh);
    if (threadIdx.x == 0) {
      if (gg) lmx_cu_st(gg, a, sg + (accg ? (double)lmx_cu_ld(gg, a) : 0.0));
      if (gb) lmx_cu_st(gb, a, sb + (accb ? (double)lmx_cu_ld(gb, a) : 0.0));
    }
    __syncthreads();
  }
}

static unsigned row_blocks(int64_t rows) {
  return (unsigned)(rows < 1 ? 1 : rows > 65535 ? 65535 : rows);
}

int lmx_cu_rownorm_fwd(lmx_cu_stream s, int dt, int kind, lmx_cu_rownorm rn, double eps,
                       const void *x, const void *gamma, const void *beta, void *y, void *s1,
                       void *s2) {
  int64_t rows = rn.outer * rn.inner;
  if (rows == 0) return 0;
  if (kind != 0 && rn.na <= 0) return -1;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_rn_fwd<T>, row_blocks(rows), ROW_THREADS, 0, s, kind, rn,
                                   eps, (const T *)x, (const T *)gamma, (const T *)beta, (T *)y,
                                   (T *)s1, (T *)s2));
  return lmx_cu_last_error();
}

int lmx_cu_rownorm_bwd(lmx_cu_stream s, int dt, int kind, lmx_cu_rownorm rn, double eps,
                       const void *x, const void *y, const void *gamma, const void *s1,
                       const void *s2, const void *gy, void *gx, void *ggamma, void *gbeta,
                       int acc0, int acc1, int acc2) {
  int64_t rows = rn.outer * rn.inner;
  if (rows == 0) return 0;
  if (kind != 0 && rn.na <= 0) return -1;
  if (gx)
    LMX_CU_DISPATCH_FLOAT(dt, return -1,
                          LMX_LAUNCH(k_rn_bwd_x<T>, row_blocks(rows), ROW_THREADS, 0, s, kind,
                                     rn, eps, (const T *)x, (const T *)y, (const T *)gamma,
                                     (const T *)s1, (const T *)s2, (const T *)gy, (T *)gx,
                                     acc0));
  if (kind != 0 && (ggamma || gbeta)) {
    int rc = lmx_cu_last_error();
    if (rc) return rc;
    LMX_CU_DISPATCH_FLOAT(dt, return -1,
                          LMX_LAUNCH(k_rn_bwd_gb<T>, row_blocks(rn.na), ROW_THREADS, 0, s, kind,
                                     rn, eps, (const T *)x, (const T *)s1, (const T *)s2,
                                     (const T *)gy, (T *)ggamma, (T *)gbeta, acc1, acc2));
  }
  return lmx_cu_last_error();
}

/* ---- Pad ------------------------------------------------------------------------------ */

#define LD(p, q) ((double)lmx_cu_ld(p, q))
LMX_PAD_DEF_GATHER(float, f32, LD)
LMX_PAD_DEF_GATHER(double, f64, LD)
LMX_PAD_DEF_GATHER(lmx_h16, f16, LD)
__device__ static inline double pad_gather(int mode, const lmx_cu_pad &g, int64_t e,
                                            const float *gy) {
  return lmx_pad_gather_f32(mode, g.nd, g.ish, g.osh, g.pw, e, gy);
}
__device__ static inline double pad_gather(int mode, const lmx_cu_pad &g, int64_t e,
                                            const double *gy) {
  return lmx_pad_gather_f64(mode, g.nd, g.ish, g.osh, g.pw, e, gy);
}
__device__ static inline double pad_gather(int mode, const lmx_cu_pad &g, int64_t e,
                                            const lmx_h16 *gy) {
  return lmx_pad_gather_f16(mode, g.nd, g.ish, g.osh, g.pw, e, gy);
}

template <typename T>
__global__ void k_pad_fwd(int mode, lmx_cu_pad g, int64_t n, double cval, const T *x, T *y) {
  LMX_CU_GRID_LOOP(e, n) {
    int64_t rem = e, src = 0, mul = 1;
    int inside = 1;
    for (int a = g.nd - 1; a >= 0; a--) {
      int64_t o = rem % g.osh[a], i = lmx_pad_src(mode, o, g.pw[2 * a], g.ish[a]);
      rem /= g.osh[a];
      if (i < 0) inside = 0;
      src += i * mul, mul *= g.ish[a];
    }
    if (inside) y[e] = x[src];
    else lmx_cu_st(y, e, cval);
  }
}

template <typename T>
__global__ void k_pad_bwd(int mode, lmx_cu_pad g, int64_t n, const T *gy, T *gx, int acc) {
  LMX_CU_GRID_LOOP(e, n) {
    double v = pad_gather(mode, g, e, gy);
    if (acc) v += (double)lmx_cu_ld(gx, e);
    lmx_cu_st(gx, e, v);
  }
}

int lmx_cu_pad_fwd(lmx_cu_stream s, int dt, int mode, lmx_cu_pad g, double cval, const void *x,
                   void *y) {
  if (g.nd < 1 || g.nd > 5) return -1;
  int64_t n = 1;
  for (int a = 0; a < g.nd; a++) n *= g.osh[a];
  if (n == 0) return 0;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_pad_fwd<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, mode, g,
                                   n, cval, (const T *)x, (T *)y));
  return lmx_cu_last_error();
}

int lmx_cu_pad_bwd(lmx_cu_stream s, int dt, int mode, lmx_cu_pad g, const void *gy, void *gx,
                   int acc) {
  if (g.nd < 1 || g.nd > 5) return -1;
  int64_t n = 1;
  for (int a = 0; a < g.nd; a++) n *= g.ish[a];
  if (n == 0) return 0;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_pad_bwd<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, mode, g,
                                   n, (const T *)gy, (T *)gx, acc));
  return lmx_cu_last_error();
}

/* ---- nearest UpSampling ------------------------------------------------------------------ */

template <typename T>
__global__ void k_ups_fwd(lmx_cu_ups u, const T *x, T *y, int acc) {
  int64_t OH = u.H * u.sc, OW = u.W * u.sc;
  LMX_CU_GRID_LOOP(e, u.N * u.C * OH * OW) {
    int64_t ow = e % OW, oh = (e / OW) % OH, nc = e / (OW * OH), c = nc % u.C, n = nc / u.C;
    int64_t q = ((n * u.Cout + u.coff + c) * OH + oh) * OW + ow;
    double v = lmx_cu_ld(x, (nc * u.H + oh / u.sc) * u.W + ow / u.sc);
    if (acc) v += (double)lmx_cu_ld(y, q);
    lmx_cu_st(y, q, v);
  }
}

template <typename T>
__global__ void k_ups_bwd(lmx_cu_ups u, const T *gy, T *gx, int acc) {
  int64_t OH = u.H * u.sc, OW = u.W * u.sc;
  LMX_CU_GRID_LOOP(e, u.N * u.C * u.H * u.W) {
    int64_t w = e % u.W, h = (e / u.W) % u.H, nc = e / (u.W * u.H), c = nc % u.C, n = nc / u.C;
    int64_t base = ((n * u.Cout + u.coff + c) * OH + h * u.sc) * OW + w * u.sc;
    double v = 0;
    for (int64_t a = 0; a < u.sc; a++)
      for (int64_t b = 0; b < u.sc; b++) v += (double)lmx_cu_ld(gy, base + a * OW + b);
    if (acc) v += (double)lmx_cu_ld(gx, e);
    lmx_cu_st(gx, e, v);
  }
}

int lmx_cu_ups_fwd(lmx_cu_stream s, int dt, lmx_cu_ups u, const void *x, void *y, int acc) {
  int64_t n = u.N * u.C * u.H * u.sc * u.W * u.sc;
  if (n == 0) return 0;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_ups_fwd<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, u,
                                   (const T *)x, (T *)y, acc));
  return lmx_cu_last_error();
}

int lmx_cu_ups_bwd(lmx_cu_stream s, int dt, lmx_cu_ups u, const void *gy, void *gx, int acc) {
  int64_t n = u.N * u.C * u.H * u.W;
  if (n == 0) return 0;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_ups_bwd<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, u,
                                   (const T *)gy, (T *)gx, acc));
  return lmx_cu_last_error();
}

/* ---- depth_to_space / space_to_depth and Crop ------------------------------------------ */

template <typename T>
__global__ void k_d2s(lmx_cu_d2s_geom g, int to_small, const T *src, T *dst, int acc) {
  int64_t b = g.b, HB = g.H * b, WB = g.W * b;
  LMX_CU_GRID_LOOP(big, g.N * g.C * HB * WB) {
    int64_t X = big % WB, Y = (big / WB) % HB, nc = big / (WB * HB), c = nc % g.C, n = nc / g.C;
    int64_t small = (((n * b * b + (Y % b) * b + X % b) * g.C + c) * g.H + Y / b) * g.W + X / b;
    int64_t d = to_small ? small : big, s = to_small ? big : small;
    double v = lmx_cu_ld(src, s);
    if (acc) v += (double)lmx_cu_ld(dst, d);
    lmx_cu_st(dst, d, v);
  }
}

template <typename T>
__global__ void k_crop(lmx_cu_crop_geom g, int to_big, const T *src, T *dst, int acc) {
  int64_t ow = to_big ? g.W : g.w, oh = to_big ? g.H : g.h;
  LMX_CU_GRID_LOOP(e, g.planes * oh * ow) {
    int64_t x = e % ow, y = (e / ow) % oh, p = e / (ow * oh);
    double v;
    if (!to_big) {
      v = lmx_cu_ld(src, (p * g.H + y + g.oy) * g.W + x + g.ox);
    } else {
      int64_t sy = y - g.oy, sx = x - g.ox;
      int in = sy >= 0 && sy < g.h && sx >= 0 && sx < g.w;
      v = in ? (double)lmx_cu_ld(src, (p * g.h + sy) * g.w + sx) : 0.0;
    }
    if (acc) v += (double)lmx_cu_ld(dst, e);
    lmx_cu_st(dst, e, v);
  }
}

int lmx_cu_d2s(lmx_cu_stream s, int dt, lmx_cu_d2s_geom g, int to_small, const void *src, void *dst,
               int acc) {
  int64_t n = g.N * g.C * g.H * g.b * g.W * g.b;
  if (n == 0) return 0;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_d2s<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, g,
                                   to_small, (const T *)src, (T *)dst, acc));
  return lmx_cu_last_error();
}

int lmx_cu_crop(lmx_cu_stream s, int dt, lmx_cu_crop_geom g, int to_big, const void *src, void *dst,
                int acc) {
  int64_t n = g.planes * (to_big ? g.H * g.W : g.h * g.w);
  if (n == 0) return 0;
  LMX_CU_DISPATCH_FLOAT(dt, return -1,
                        LMX_LAUNCH(k_crop<T>, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, g, to_big,
                                   (const T *)src, (T *)dst, acc));
  return lmx_cu_last_error();
}
