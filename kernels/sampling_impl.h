/* sampling_impl.h — the arithmetic of GridGenerator, BilinearSampler, ROIPooling and
 * ROIAlign, one copy for the CPU kernels (kernels/cpu/sampling.c) and the CUDA ones
 * (kernels/cuda/sampling.cu): every function computes one output element or one gradient
 * plane, and both backends call them in their loops, so they compute alike (in double)
 * and sum in the same order. No atomics: a data gradient is owned by the loop over its
 * (n, c) plane, which walks the outputs that read it in a fixed order.
 *
 * Conventions (MXNet 1.9):
 *  - grids hold normalised (x, y) in [-1, 1] as (N, 2, H, W); x maps to the pixel
 *    (x + 1) (W - 1) / 2 (the corners are the corner pixels' centres); the sampler reads
 *    zeros outside the image. GridGenerator's base grid is x_w = -1 + 2 w / (W - 1)
 *    (x = -1 when W = 1, where MXNet divides by zero);
 *  - a roi is (batch index, x1, y1, x2, y2) in image coordinates times spatial_scale;
 *    a roi whose batch index is outside [0, N) or whose numbers are not finite (or
 *    beyond 1e15) is ignored: its outputs are zero and it sends no gradient;
 *  - ROIPooling rounds the scaled corners and takes the max of each bin (ties: the first
 *    in row-major order), recording its position (h W + w, -1 for an empty bin);
 *  - ROIAlign averages gh x gw bilinear samples per bin (Detectron's rules; aligned
 *    shifts by half a pixel), gh = sample_ratio or ceil(roi height / pooled height),
 *    at most LMX_ROIALIGN_MAX_GRID (a guard against hostile rois);
 *  - PSROIPooling (R-FCN) averages each bin of the rounded roi (corners round(x) s and
 *    (round(x) + 1) s, at least 0.1 wide) over input channel (c gs + gh) gs + gw, where
 *    (gh, gw) is the bin's cell of the group_size (gs) grid.
 * Include it after the CUDA headers in .cu files (the simulator defines __host__ there).
 */
#ifndef LMX_KERNELS_SAMPLING_IMPL_H
#define LMX_KERNELS_SAMPLING_IMPL_H

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__) || defined(__host__)
#define LMX_SMP_HD __host__ __device__
#else
#define LMX_SMP_HD
#endif

enum { LMX_ROIALIGN_MAX_GRID = 64 };

/* BilinearSampler: data (N, C, H, W), grid (N, 2, OH, OW), output (N, C, OH, OW). */
typedef struct {
  int64_t N, C, H, W, OH, OW;
} lmx_smp_geom;

/* ROIPooling / ROIAlign: data (N, C, H, W), rois (R, 5), output (R, Cout, PH, PW). */
typedef struct {
  int64_t N, C, H, W, R, Cout, PH, PW;
  double scale;      /* spatial_scale as MXNet's float */
  int64_t ratio;     /* ROIAlign's sample_ratio (<= 0: adaptive) */
  int ps, aligned;   /* ROIAlign's position_sensitive, aligned */
  int64_t gs;        /* PSROIPooling's group_size */
} lmx_roi_geom;

/* GridGenerator's base coordinate of pixel i of n. */
LMX_SMP_HD static inline double lmx_grid_base(int64_t i, int64_t n) {
  return n > 1 ? -1.0 + (double)i * 2.0 / (double)(n - 1) : -1.0;
}

/* One axis of a sampler point: normalised g over n pixels; i0 the lower pixel and w0 its
 * weight (1 - w0 for i0 + 1). Returns 0 when neither pixel is inside (NaN included). */
LMX_SMP_HD static inline int lmx_smp_axis(double g, int64_t n, int64_t *i0, double *w0) {
  double r = (g + 1.0) * (double)(n - 1) / 2.0;
  if (!(r > -1.0 && r < (double)n)) return 0;
  double f = floor(r);
  *i0 = (int64_t)f;
  *w0 = 1.0 - (r - f);
  return 1;
}

/* The batch index of a roi, or -1 when it is ignored. */
LMX_SMP_HD static inline int64_t lmx_roi_batch(const double *v, int64_t N) {
  for (int k = 1; k < 5; k++)
    if (!(v[k] > -1e15 && v[k] < 1e15)) return -1;
  if (!(v[0] > -1.0 && v[0] < (double)N)) return -1;
  return (int64_t)v[0];
}

/* ROIPooling's window of bin (ph, pw): rows [*hs, *he), columns [*ws, *we). */
LMX_SMP_HD static inline void lmx_roipool_bin(const lmx_roi_geom *g, const double *v, int f32,
                                              int64_t ph, int64_t pw, int64_t *hs, int64_t *he,
                                              int64_t *ws, int64_t *we) {
  double c[4];
  for (int k = 0; k < 4; k++) {
    double p = f32 ? (double)((float)v[k + 1] * (float)g->scale) : v[k + 1] * g->scale;
    c[k] = round(p);
  }
  double rw = fmax(c[2] - c[0] + 1.0, 1.0), rh = fmax(c[3] - c[1] + 1.0, 1.0);
  double bh = rh / (double)g->PH, bw = rw / (double)g->PW;
  double h0 = floor((double)ph * bh) + c[1], h1 = ceil((double)(ph + 1) * bh) + c[1];
  double w0 = floor((double)pw * bw) + c[0], w1 = ceil((double)(pw + 1) * bw) + c[0];
  *hs = (int64_t)fmin(fmax(h0, 0.0), (double)g->H);
  *he = (int64_t)fmin(fmax(h1, 0.0), (double)g->H);
  *ws = (int64_t)fmin(fmax(w0, 0.0), (double)g->W);
  *we = (int64_t)fmin(fmax(w1, 0.0), (double)g->W);
}

/* ROIAlign's bins of one roi: start, bin size and sample grid per axis. */
typedef struct {
  double sh, sw, bh, bw;
  int64_t gh, gw;
  double count;
} lmx_roialign_box;

LMX_SMP_HD static inline lmx_roialign_box lmx_roialign_box_of(const lmx_roi_geom *g,
                                                              const double *v) {
  lmx_roialign_box b;
  double off = g->aligned ? 0.5 : 0.0;
  b.sw = v[1] * g->scale - off, b.sh = v[2] * g->scale - off;
  double rw = v[3] * g->scale - off - b.sw, rh = v[4] * g->scale - off - b.sh;
  if (!g->aligned) rw = fmax(rw, 1.0), rh = fmax(rh, 1.0);
  b.bh = rh / (double)g->PH, b.bw = rw / (double)g->PW;
  double gh = g->ratio > 0 ? (double)g->ratio : ceil(rh / (double)g->PH);
  double gw = g->ratio > 0 ? (double)g->ratio : ceil(rw / (double)g->PW);
  b.gh = (int64_t)fmin(fmax(gh, 0.0), (double)LMX_ROIALIGN_MAX_GRID);
  b.gw = (int64_t)fmin(fmax(gw, 0.0), (double)LMX_ROIALIGN_MAX_GRID);
  b.count = b.gh * b.gw > 0 ? (double)(b.gh * b.gw) : 1.0;
  return b;
}

/* ROIAlign's bilinear sample at (y, x): the 4 positions and weights; 0 when outside. */
LMX_SMP_HD static inline int lmx_roialign_point(int64_t H, int64_t W, double y, double x,
                                                int64_t *pos, double *w) {
  if (y < -1.0 || y > (double)H || x < -1.0 || x > (double)W) return 0;
  if (y <= 0) y = 0;
  if (x <= 0) x = 0;
  int64_t yl = (int64_t)y, xl = (int64_t)x, yh, xh;
  if (yl >= H - 1) yh = yl = H - 1, y = (double)yl;
  else yh = yl + 1;
  if (xl >= W - 1) xh = xl = W - 1, x = (double)xl;
  else xh = xl + 1;
  double ly = y - (double)yl, lx = x - (double)xl, hy = 1.0 - ly, hx = 1.0 - lx;
  pos[0] = yl * W + xl, pos[1] = yl * W + xh, pos[2] = yh * W + xl, pos[3] = yh * W + xh;
  w[0] = hy * hx, w[1] = hy * lx, w[2] = ly * hx, w[3] = ly * lx;
  return 1;
}

/* PSROIPooling's window of bin (ph, pw): rows [*hs, *he), columns [*ws, *we). */
LMX_SMP_HD static inline void lmx_psroi_bin(const lmx_roi_geom *g, const double *v, int64_t ph,
                                            int64_t pw, int64_t *hs, int64_t *he, int64_t *ws,
                                            int64_t *we) {
  double sw = round(v[1]) * g->scale, sh = round(v[2]) * g->scale;
  double rw = fmax((round(v[3]) + 1.0) * g->scale - sw, 0.1);
  double rh = fmax((round(v[4]) + 1.0) * g->scale - sh, 0.1);
  double bh = rh / (double)g->PH, bw = rw / (double)g->PW;
  *hs = (int64_t)fmin(fmax(floor((double)ph * bh + sh), 0.0), (double)g->H);
  *he = (int64_t)fmin(fmax(ceil((double)(ph + 1) * bh + sh), 0.0), (double)g->H);
  *ws = (int64_t)fmin(fmax(floor((double)pw * bw + sw), 0.0), (double)g->W);
  *we = (int64_t)fmin(fmax(ceil((double)(pw + 1) * bw + sw), 0.0), (double)g->W);
}

/* The input channel PSROIPooling reads for output channel c at bin (ph, pw). */
LMX_SMP_HD static inline int64_t lmx_psroi_channel(const lmx_roi_geom *g, int64_t c, int64_t ph,
                                                   int64_t pw) {
  int64_t gw = pw * g->gs / g->PW, gh = ph * g->gs / g->PH;
  gw = gw < 0 ? 0 : gw >= g->gs ? g->gs - 1 : gw;
  gh = gh < 0 ? 0 : gh >= g->gs ? g->gs - 1 : gh;
  return (c * g->gs + gh) * g->gs + gw;
}

/* The per-element functions, for element type T (suffix S). */
#define LMX_SAMPLING_DEFINE(T, S)                                                            \
  /* GridGenerator affine: element e of (N, 2, H, W) from theta (N, 6) */                   \
  LMX_SMP_HD static inline void lmx_gg_affine_fwd_##S(int64_t H, int64_t W, int64_t e,      \
                                                      const T *th, T *y) {                  \
    int64_t w = e % W, h = (e / W) % H, k = (e / (W * H)) % 2, n = e / (2 * W * H);         \
    const T *t = th + n * 6 + 3 * k;                                                        \
    y[e] = (T)((double)t[0] * lmx_grid_base(w, W) + (double)t[1] * lmx_grid_base(h, H) +    \
               (double)t[2]);                                                               \
  }                                                                                         \
  /* its gradient of theta entry j of batch n (j = 3 k + m) */                              \
  LMX_SMP_HD static inline void lmx_gg_affine_bwd_##S(int64_t H, int64_t W, int64_t nj,     \
                                                      const T *gy, T *gth, int acc) {       \
    int64_t n = nj / 6, j = nj % 6, k = j / 3, m = j % 3;                                   \
    const T *g = gy + (n * 2 + k) * H * W;                                                  \
    double s = 0;                                                                           \
    for (int64_t h = 0; h < H; h++)                                                         \
      for (int64_t w = 0; w < W; w++) {                                                     \
        double b = m == 0 ? lmx_grid_base(w, W) : m == 1 ? lmx_grid_base(h, H) : 1.0;      \
        s += (double)g[h * W + w] * b;                                                      \
      }                                                                                     \
    gth[nj] = (T)(acc ? (double)gth[nj] + s : s);                                           \
  }                                                                                         \
  /* GridGenerator warp: element e of (N, 2, H, W) from the flow; bwd: gx = gy factor */    \
  LMX_SMP_HD static inline double lmx_gg_warp_scale_##S(int64_t H, int64_t W, int64_t e) {  \
    int64_t n = ((e / (W * H)) % 2) ? H : W;                                                \
    return n > 1 ? 2.0 / (double)(n - 1) : 0.0;                                            \
  }                                                                                         \
  LMX_SMP_HD static inline void lmx_gg_warp_fwd_##S(int64_t H, int64_t W, int64_t e,        \
                                                    const T *fl, T *y) {                    \
    int64_t w = e % W, h = (e / W) % H, k = (e / (W * H)) % 2;                              \
    double base = k ? (double)h : (double)w;                                                \
    y[e] = (T)(((double)fl[e] + base) * lmx_gg_warp_scale_##S(H, W, e) - 1.0);              \
  }                                                                                         \
  /* BilinearSampler: output element e of (N, C, OH, OW) */                                 \
  LMX_SMP_HD static inline double lmx_bs_at_##S(const lmx_smp_geom *g, const T *xp,         \
                                                int64_t y, int64_t x) {                     \
    return y >= 0 && y < g->H && x >= 0 && x < g->W ? (double)xp[y * g->W + x] : 0.0;       \
  }                                                                                         \
  LMX_SMP_HD static inline void lmx_bs_fwd_##S(const lmx_smp_geom *g, int64_t e,           \
                                               const T *x, const T *grid, T *y) {           \
    int64_t P = g->OH * g->OW, p = e % P, nc = e / P, n = nc / g->C;                        \
    const T *gr = grid + n * 2 * P + p;                                                     \
    int64_t x0, y0;                                                                         \
    double wx, wy, v = 0;                                                                   \
    if (lmx_smp_axis((double)gr[0], g->W, &x0, &wx) &&                                      \
        lmx_smp_axis((double)gr[P], g->H, &y0, &wy)) {                                      \
      const T *xp = x + nc * g->H * g->W;                                                   \
      v = wy * (wx * lmx_bs_at_##S(g, xp, y0, x0) + (1 - wx) * lmx_bs_at_##S(g, xp, y0, x0 + 1)) + \
          (1 - wy) * (wx * lmx_bs_at_##S(g, xp, y0 + 1, x0) +                               \
                      (1 - wx) * lmx_bs_at_##S(g, xp, y0 + 1, x0 + 1));                     \
    }                                                                                       \
    y[e] = (T)v;                                                                            \
  }                                                                                         \
  /* its data gradient: plane nc of (N, C, H, W), walking the plane's outputs in order */   \
  LMX_SMP_HD static inline void lmx_bs_bwd_data_##S(const lmx_smp_geom *g, int64_t nc,     \
                                                    const T *grid, const T *gy, T *gx,      \
                                                    int acc) {                              \
    int64_t P = g->OH * g->OW, n = nc / g->C;                                               \
    T *gp = gx + nc * g->H * g->W;                                                          \
    if (!acc)                                                                               \
      for (int64_t i = 0; i < g->H * g->W; i++) gp[i] = (T)0;                               \
    for (int64_t p = 0; p < P; p++) {                                                       \
      const T *gr = grid + n * 2 * P + p;                                                   \
      int64_t x0, y0;                                                                       \
      double wx, wy, go = (double)gy[nc * P + p];                                           \
      if (!lmx_smp_axis((double)gr[0], g->W, &x0, &wx) ||                                   \
          !lmx_smp_axis((double)gr[P], g->H, &y0, &wy))                                     \
        continue;                                                                           \
      for (int a = 0; a < 2; a++)                                                           \
        for (int b = 0; b < 2; b++) {                                                       \
          int64_t yy = y0 + a, xx = x0 + b;                                                 \
          if (yy < 0 || yy >= g->H || xx < 0 || xx >= g->W) continue;                       \
          double wgt = (a ? 1 - wy : wy) * (b ? 1 - wx : wx);                               \
          gp[yy * g->W + xx] = (T)((double)gp[yy * g->W + xx] + go * wgt);                  \
        }                                                                                   \
    }                                                                                       \
  }                                                                                         \
  /* its grid gradient at point q of (N, OH, OW): both coordinates, channels summed */      \
  LMX_SMP_HD static inline void lmx_bs_bwd_grid_##S(const lmx_smp_geom *g, int64_t q,      \
                                                    const T *x, const T *grid, const T *gy, \
                                                    T *gg, int acc) {                       \
    int64_t P = g->OH * g->OW, p = q % P, n = q / P;                                        \
    const T *gr = grid + n * 2 * P + p;                                                     \
    int64_t x0, y0;                                                                         \
    double wx, wy, sx = 0, sy = 0;                                                          \
    if (lmx_smp_axis((double)gr[0], g->W, &x0, &wx) &&                                      \
        lmx_smp_axis((double)gr[P], g->H, &y0, &wy)) {                                      \
      for (int64_t c = 0; c < g->C; c++) {                                                  \
        const T *xp = x + (n * g->C + c) * g->H * g->W;                                     \
        double go = (double)gy[(n * g->C + c) * P + p];                                     \
        double tl = lmx_bs_at_##S(g, xp, y0, x0), tr = lmx_bs_at_##S(g, xp, y0, x0 + 1);    \
        double bl = lmx_bs_at_##S(g, xp, y0 + 1, x0);                                       \
        double br = lmx_bs_at_##S(g, xp, y0 + 1, x0 + 1);                                   \
        sx += go * (wy * (tr - tl) + (1 - wy) * (br - bl));                                 \
        sy += go * (wx * (bl - tl) + (1 - wx) * (br - tr));                                 \
      }                                                                                     \
      sx *= (double)(g->W - 1) / 2.0, sy *= (double)(g->H - 1) / 2.0;                       \
    }                                                                                       \
    T *o = gg + n * 2 * P + p;                                                              \
    o[0] = (T)(acc ? (double)o[0] + sx : sx);                                               \
    o[P] = (T)(acc ? (double)o[P] + sy : sy);                                               \
  }                                                                                         \
  /* ROIPooling: output element e of (R, C, PH, PW) and its argmax */                       \
  LMX_SMP_HD static inline void lmx_roipool_fwd_##S(const lmx_roi_geom *g, int64_t e,      \
                                                    const T *x, const T *rois, T *y,        \
                                                    T *arg) {                               \
    int64_t pw = e % g->PW, ph = (e / g->PW) % g->PH, c = (e / (g->PW * g->PH)) % g->C;     \
    int64_t r = e / (g->PW * g->PH * g->C);                                                 \
    double v[5];                                                                            \
    for (int k = 0; k < 5; k++) v[k] = (double)rois[r * 5 + k];                             \
    int64_t b = lmx_roi_batch(v, g->N), hs, he, ws, we, best = -1;                          \
    T m = (T)0;                                                                             \
    if (b >= 0) {                                                                           \
      lmx_roipool_bin(g, v, sizeof(T) == 4, ph, pw, &hs, &he, &ws, &we);                    \
      const T *xp = x + (b * g->C + c) * g->H * g->W;                                       \
      for (int64_t h = hs; h < he; h++)                                                     \
        for (int64_t w = ws; w < we; w++)                                                   \
          if (best < 0 || xp[h * g->W + w] > m) m = xp[h * g->W + w], best = h * g->W + w;  \
    }                                                                                       \
    y[e] = best < 0 ? (T)0 : m;                                                             \
    arg[e] = (T)best;                                                                       \
  }                                                                                         \
  /* its data gradient: plane nc, the rois of batch n in order */                           \
  LMX_SMP_HD static inline void lmx_roipool_bwd_##S(const lmx_roi_geom *g, int64_t nc,     \
                                                    const T *rois, const T *arg,            \
                                                    const T *gy, T *gx, int acc) {          \
    int64_t n = nc / g->C, c = nc % g->C, B = g->PH * g->PW;                                \
    T *gp = gx + nc * g->H * g->W;                                                          \
    if (!acc)                                                                               \
      for (int64_t i = 0; i < g->H * g->W; i++) gp[i] = (T)0;                               \
    for (int64_t r = 0; r < g->R; r++) {                                                    \
      double v[5];                                                                          \
      for (int k = 0; k < 5; k++) v[k] = (double)rois[r * 5 + k];                           \
      if (lmx_roi_batch(v, g->N) != n) continue;                                            \
      int64_t o = (r * g->C + c) * B;                                                       \
      for (int64_t i = 0; i < B; i++) {                                                     \
        double a = (double)arg[o + i];                                                      \
        if (!(a >= 0 && a < (double)(g->H * g->W))) continue;                               \
        int64_t q = (int64_t)a;                                                             \
        gp[q] = (T)((double)gp[q] + (double)gy[o + i]);                                     \
      }                                                                                     \
    }                                                                                       \
  }                                                                                         \
  /* ROIAlign: output element e of (R, Cout, PH, PW) */                                     \
  LMX_SMP_HD static inline void lmx_roialign_fwd_##S(const lmx_roi_geom *g, int64_t e,     \
                                                     const T *x, const T *rois, T *y) {     \
    int64_t pw = e % g->PW, ph = (e / g->PW) % g->PH, c = (e / (g->PW * g->PH)) % g->Cout;  \
    int64_t r = e / (g->PW * g->PH * g->Cout);                                              \
    double v[5], s = 0;                                                                     \
    for (int k = 0; k < 5; k++) v[k] = (double)rois[r * 5 + k];                             \
    int64_t b = lmx_roi_batch(v, g->N);                                                     \
    if (b < 0) {                                                                            \
      y[e] = (T)0;                                                                          \
      return;                                                                               \
    }                                                                                       \
    lmx_roialign_box bx = lmx_roialign_box_of(g, v);                                        \
    int64_t ci = g->ps ? (c * g->PH + ph) * g->PW + pw : c;                                 \
    const T *xp = x + (b * g->C + ci) * g->H * g->W;                                        \
    for (int64_t iy = 0; iy < bx.gh; iy++) {                                                \
      double yy = bx.sh + (double)ph * bx.bh + ((double)iy + 0.5) * bx.bh / (double)bx.gh;  \
      for (int64_t ix = 0; ix < bx.gw; ix++) {                                              \
        double xx = bx.sw + (double)pw * bx.bw + ((double)ix + 0.5) * bx.bw / (double)bx.gw; \
        int64_t pos[4];                                                                     \
        double w[4];                                                                        \
        if (!lmx_roialign_point(g->H, g->W, yy, xx, pos, w)) continue;                      \
        for (int k = 0; k < 4; k++) s += w[k] * (double)xp[pos[k]];                         \
      }                                                                                     \
    }                                                                                       \
    y[e] = (T)(s / bx.count);                                                               \
  }                                                                                         \
  /* its data gradient: plane (n, ci), the rois of batch n and the bins reading ci */       \
  LMX_SMP_HD static inline void lmx_roialign_bwd_##S(const lmx_roi_geom *g, int64_t nc,    \
                                                     const T *rois, const T *gy, T *gx,     \
                                                     int acc) {                             \
    int64_t n = nc / g->C, ci = nc % g->C, B = g->PH * g->PW;                               \
    T *gp = gx + nc * g->H * g->W;                                                          \
    if (!acc)                                                                               \
      for (int64_t i = 0; i < g->H * g->W; i++) gp[i] = (T)0;                               \
    int64_t c = g->ps ? ci / B : ci, i0 = g->ps ? ci % B : 0, i1 = g->ps ? i0 + 1 : B;      \
    for (int64_t r = 0; r < g->R; r++) {                                                    \
      double v[5];                                                                          \
      for (int k = 0; k < 5; k++) v[k] = (double)rois[r * 5 + k];                           \
      if (lmx_roi_batch(v, g->N) != n) continue;                                            \
      lmx_roialign_box bx = lmx_roialign_box_of(g, v);                                      \
      for (int64_t i = i0; i < i1; i++) {                                                   \
        int64_t ph = i / g->PW, pw = i % g->PW;                                             \
        double go = (double)gy[(r * g->Cout + c) * B + i] / bx.count;                       \
        for (int64_t iy = 0; iy < bx.gh; iy++) {                                            \
          double yy = bx.sh + (double)ph * bx.bh + ((double)iy + 0.5) * bx.bh / (double)bx.gh; \
          for (int64_t ix = 0; ix < bx.gw; ix++) {                                          \
            double xx =                                                                     \
                bx.sw + (double)pw * bx.bw + ((double)ix + 0.5) * bx.bw / (double)bx.gw;    \
            int64_t pos[4];                                                                 \
            double w[4];                                                                    \
            if (!lmx_roialign_point(g->H, g->W, yy, xx, pos, w)) continue;                  \
            for (int k = 0; k < 4; k++) gp[pos[k]] = (T)((double)gp[pos[k]] + go * w[k]);   \
          }                                                                                 \
        }                                                                                   \
      }                                                                                     \
    }                                                                                       \
  }                                                                                         \
  /* PSROIPooling: output element e of (R, Cout, PH, PW) */                                 \
  LMX_SMP_HD static inline void lmx_psroi_fwd_##S(const lmx_roi_geom *g, int64_t e,        \
                                                  const T *x, const T *rois, T *y) {        \
    int64_t pw = e % g->PW, ph = (e / g->PW) % g->PH, c = (e / (g->PW * g->PH)) % g->Cout;  \
    int64_t r = e / (g->PW * g->PH * g->Cout), hs, he, ws, we;                              \
    double v[5], s = 0;                                                                     \
    for (int k = 0; k < 5; k++) v[k] = (double)rois[r * 5 + k];                             \
    int64_t b = lmx_roi_batch(v, g->N);                                                     \
    y[e] = (T)0;                                                                            \
    if (b < 0) return;                                                                      \
    lmx_psroi_bin(g, v, ph, pw, &hs, &he, &ws, &we);                                        \
    if (he <= hs || we <= ws) return;                                                       \
    const T *xp = x + (b * g->C + lmx_psroi_channel(g, c, ph, pw)) * g->H * g->W;           \
    for (int64_t h = hs; h < he; h++)                                                       \
      for (int64_t w = ws; w < we; w++) s += (double)xp[h * g->W + w];                      \
    y[e] = (T)(s / (double)((he - hs) * (we - ws)));                                        \
  }                                                                                         \
  /* its data gradient: plane (n, ci), the rois of batch n and the bins reading ci */       \
  LMX_SMP_HD static inline void lmx_psroi_bwd_##S(const lmx_roi_geom *g, int64_t nc,       \
                                                  const T *rois, const T *gy, T *gx,        \
                                                  int acc) {                                \
    int64_t n = nc / g->C, ci = nc % g->C, c = ci / (g->gs * g->gs), B = g->PH * g->PW;     \
    T *gp = gx + nc * g->H * g->W;                                                          \
    if (!acc)                                                                               \
      for (int64_t i = 0; i < g->H * g->W; i++) gp[i] = (T)0;                               \
    if (c >= g->Cout) return;                                                               \
    for (int64_t r = 0; r < g->R; r++) {                                                    \
      double v[5];                                                                          \
      for (int k = 0; k < 5; k++) v[k] = (double)rois[r * 5 + k];                           \
      if (lmx_roi_batch(v, g->N) != n) continue;                                            \
      for (int64_t i = 0; i < B; i++) {                                                     \
        int64_t ph = i / g->PW, pw = i % g->PW, hs, he, ws, we;                             \
        if (lmx_psroi_channel(g, c, ph, pw) != ci) continue;                                \
        lmx_psroi_bin(g, v, ph, pw, &hs, &he, &ws, &we);                                    \
        if (he <= hs || we <= ws) continue;                                                 \
        double go = (double)gy[(r * g->Cout + c) * B + i] / (double)((he - hs) * (we - ws)); \
        for (int64_t h = hs; h < he; h++)                                                   \
          for (int64_t w = ws; w < we; w++)                                                 \
            gp[h * g->W + w] = (T)((double)gp[h * g->W + w] + go);                          \
      }                                                                                     \
    }                                                                                       \
  }

#endif
