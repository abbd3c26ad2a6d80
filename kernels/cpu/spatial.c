/* spatial.c — Pad (constant / edge / reflect, 4-D and 5-D) and nearest UpSampling,
 * forward and backward, float32 / float64 (other dtypes return -1).
 *
 * Pad's forward walks output rows (every axis but the last) in parallel, maps the row to
 * its source row once and the last axis element by element (kernels/pad_index.h); its
 * backward gathers, per input element, the output positions that read it
 * (lmx_pad_gather_*), so it runs in parallel without atomics and sums in the same order
 * as the CUDA kernel. Nearest UpSampling copies x[n, c, h, w] to the s x s block at
 * (h s, w s) of channel coff + c (or adds it: the later inputs of multi_input_mode sum);
 * its backward sums each block back. depth_to_space / space_to_depth are one permutation
 * (walked from the large side) and Crop a slice of each plane; their backwards are the
 * inverse moves (Crop's fills the rest of the plane with zeros).
 */
#include "../pad_index.h"
#include "../../src/tensor/dtype.h"
#include "cpu_kernels.h"
#include "cpu_par.h"

#define PUT(acc, dst, v) ((acc) ? ((dst) += (v)) : ((dst) = (v)))

#define LD(p, q) ((double)(p)[q])
LMX_PAD_DEF_GATHER(float, f32, LD)
LMX_PAD_DEF_GATHER(double, f64, LD)

#define DEF_PAD(T, S)                                                                     \
  static void pad_fwd_##S(int mode, int nd, const int64_t *ish, const int64_t *osh,       \
                          const int64_t *pw, double cval, const T *x, T *y) {             \
    int64_t rows = 1, W = osh[nd - 1], IW = ish[nd - 1], b = pw[2 * (nd - 1)];            \
    for (int a = 0; a < nd - 1; a++) rows *= osh[a];                                      \
    LMX_PAR_FOR_W(rows, W, r, {                                                           \
      int64_t rem = r, src = 0, mul = 1;                                                  \
      int inside = 1;                                                                     \
      for (int a = nd - 2; a >= 0; a--) {                                                 \
        int64_t o = rem % osh[a], i = lmx_pad_src(mode, o, pw[2 * a], ish[a]);            \
        rem /= osh[a];                                                                    \
        if (i < 0) inside = 0;                                                            \
        src += i * mul, mul *= ish[a];                                                    \
      }                                                                                   \
      T *yr = y + r * W;                                                                  \
      const T *xr = x + src * IW;                                                         \
      for (int64_t o = 0; o < W; o++) {                                                   \
        int64_t i = inside ? lmx_pad_src(mode, o, b, IW) : -1;                            \
        yr[o] = i < 0 ? (T)cval : xr[i];                                                  \
      }                                                                                   \
    });                                                                                   \
  }                                                                                       \
  static void pad_bwd_##S(int mode, int nd, const int64_t *ish, const int64_t *osh,       \
                          const int64_t *pw, const T *gy, T *gx, int acc) {               \
    int64_t n = 1;                                                                        \
    for (int a = 0; a < nd; a++) n *= ish[a];                                             \
    LMX_PAR_FOR(n, e, {                                                                   \
      T v = (T)lmx_pad_gather_##S(mode, nd, ish, osh, pw, e, gy);                         \
      PUT(acc, gx[e], v);                                                                 \
    });                                                                                   \
  }

DEF_PAD(float, f32)
DEF_PAD(double, f64)

int lmx_cpu_pad_fwd(int dt, int mode, int nd, const int64_t *ishape, const int64_t *oshape,
                    const int64_t *pw, double cval, const void *x, void *y) {
  if (nd < 1 || nd > 5) return -1;
  if (dt == LMX_FLOAT32) pad_fwd_f32(mode, nd, ishape, oshape, pw, cval, x, y);
  else if (dt == LMX_FLOAT64) pad_fwd_f64(mode, nd, ishape, oshape, pw, cval, x, y);
  else return -1;
  return 0;
}

int lmx_cpu_pad_bwd(int dt, int mode, int nd, const int64_t *ishape, const int64_t *oshape,
                    const int64_t *pw, const void *gy, void *gx, int acc) {
  if (nd < 1 || nd > 5) return -1;
  if (dt == LMX_FLOAT32) pad_bwd_f32(mode, nd, ishape, oshape, pw, gy, gx, acc);
  else if (dt == LMX_FLOAT64) pad_bwd_f64(mode, nd, ishape, oshape, pw, gy, gx, acc);
  else return -1;
  return 0;
}

/* ---- nearest UpSampling ------------------------------------------------------------------ */

#define DEF_UPS(T, S)                                                                     \
  static void ups_fwd_##S(const lmx_cpu_ups *u, const T *x, T *y, int acc) {              \
    int64_t OH = u->H * u->s, OW = u->W * u->s;                                           \
    LMX_PAR_FOR_W(u->N * u->C * OH, OW, r, {                                              \
      int64_t oh = r % OH, nc = r / OH, c = nc % u->C, n = nc / u->C;                     \
      const T *xr = x + (nc * u->H + oh / u->s) * u->W;                                   \
      T *yr = y + ((n * u->Cout + u->coff + c) * OH + oh) * OW;                           \
      for (int64_t ow = 0; ow < OW; ow++) PUT(acc, yr[ow], xr[ow / u->s]);                \
    });                                                                                   \
  }                                                                                       \
  static void ups_bwd_##S(const lmx_cpu_ups *u, const T *gy, T *gx, int acc) {            \
    int64_t OH = u->H * u->s, OW = u->W * u->s;                                           \
    LMX_PAR_FOR_W(u->N * u->C * u->H, u->W * u->s * u->s, r, {                            \
      int64_t h = r % u->H, nc = r / u->H, c = nc % u->C, n = nc / u->C;                  \
      const T *g0 = gy + ((n * u->Cout + u->coff + c) * OH + h * u->s) * OW;              \
      for (int64_t w = 0; w < u->W; w++) {                                                \
        double v = 0;                                                                     \
        for (int64_t a = 0; a < u->s; a++)                                                \
          for (int64_t b = 0; b < u->s; b++) v += g0[a * OW + w * u->s + b];              \
        PUT(acc, gx[r * u->W + w], (T)v);                                                 \
      }                                                                                   \
    });                                                                                   \
  }

DEF_UPS(float, f32)
DEF_UPS(double, f64)

int lmx_cpu_ups_fwd(int dt, const lmx_cpu_ups *u, const void *x, void *y, int acc) {
  if (dt == LMX_FLOAT32) ups_fwd_f32(u, x, y, acc);
  else if (dt == LMX_FLOAT64) ups_fwd_f64(u, x, y, acc);
  else return -1;
  return 0;
}

int lmx_cpu_ups_bwd(int dt, const lmx_cpu_ups *u, const void *gy, void *gx, int acc) {
  if (dt == LMX_FLOAT32) ups_bwd_f32(u, gy, gx, acc);
  else if (dt == LMX_FLOAT64) ups_bwd_f64(u, gy, gx, acc);
  else return -1;
  return 0;
}

/* ---- depth_to_space / space_to_depth and Crop: permutations and slices ------------------- */

#define DEF_MOVE(T, S)                                                                    \
  static void d2s_##S(const lmx_cpu_d2s_geom *g, int to_small, const T *src, T *dst, int acc) { \
    int64_t b = g->b, HB = g->H * b, WB = g->W * b;                                       \
    LMX_PAR_FOR_W(g->N * g->C * HB, WB, r, {                                              \
      int64_t Y = r % HB, nc = r / HB, c = nc % g->C, n = nc / g->C;                      \
      int64_t h = Y / b, i = Y % b;                                                       \
      for (int64_t X = 0; X < WB; X++) {                                                  \
        int64_t w = X / b, j = X % b, big = r * WB + X;                                   \
        int64_t small = (((n * b * b + i * b + j) * g->C + c) * g->H + h) * g->W + w;     \
        if (to_small) PUT(acc, dst[small], src[big]);                                     \
        else PUT(acc, dst[big], src[small]);                                              \
      }                                                                                   \
    });                                                                                   \
  }                                                                                       \
  static void crop_##S(const lmx_cpu_crop_geom *g, int to_big, const T *src, T *dst, int acc) { \
    if (!to_big) {                                                                        \
      LMX_PAR_FOR_W(g->planes * g->h, g->w, r, {                                          \
        int64_t y = r % g->h, p = r / g->h;                                               \
        const T *s = src + (p * g->H + y + g->oy) * g->W + g->ox;                         \
        for (int64_t x = 0; x < g->w; x++) PUT(acc, dst[r * g->w + x], s[x]);             \
      });                                                                                 \
      return;                                                                             \
    }                                                                                     \
    LMX_PAR_FOR_W(g->planes * g->H, g->W, r, {                                            \
      int64_t y = r % g->H - g->oy, p = r / g->H;                                         \
      int in_y = y >= 0 && y < g->h;                                                      \
      for (int64_t X = 0; X < g->W; X++) {                                                \
        int64_t x = X - g->ox;                                                            \
        T v = in_y && x >= 0 && x < g->w ? src[(p * g->h + y) * g->w + x] : (T)0;         \
        PUT(acc, dst[r * g->W + X], v);                                                   \
      }                                                                                   \
    });                                                                                   \
  }

DEF_MOVE(float, f32)
DEF_MOVE(double, f64)

int lmx_cpu_d2s(int dt, const lmx_cpu_d2s_geom *g, int to_small, const void *src, void *dst,
                int acc) {
  if (dt == LMX_FLOAT32) d2s_f32(g, to_small, src, dst, acc);
  else if (dt == LMX_FLOAT64) d2s_f64(g, to_small, src, dst, acc);
  else return -1;
  return 0;
}

int lmx_cpu_crop(int dt, const lmx_cpu_crop_geom *g, int to_big, const void *src, void *dst,
                 int acc) {
  if (dt == LMX_FLOAT32) crop_f32(g, to_big, src, dst, acc);
  else if (dt == LMX_FLOAT64) crop_f64(g, to_big, src, dst, acc);
  else return -1;
  return 0;
}
