/* conv.c — convolution lowering (im2col / col2im, 1-D to 3-D, dilated) on channel-first
 * data (pooling is in pool.c).
 *
 * Geometry is always handled as 3-D: 1-D and 2-D problems get leading spatial dims of 1
 * (lmx_cpu_geom_norm), so one loop nest serves all. im2col writes col[C*K, nimg*O] for
 * nimg consecutive images (K = kernel volume, O = output volume, image n at columns n*O,
 * row stride ld >= nimg*O; padding reads as 0); col2im adds such a matrix back into the
 * images (the transpose, so it always accumulates). The GEMMs
 * around them are the glue's business (src/ops/cpu/conv.c).
 * float32 and float64 siblings from one macro; other dtypes return -1.
 */
#include <string.h>

#include "../../src/tensor/dtype.h"
#include "cpu_kernels.h"
#include "cpu_par.h"

void lmx_cpu_geom_norm(lmx_cpu_geom *g) {
  int k = g->k, s = 3 - k;
  if (k >= 3) return;
  for (int i = 2; i >= 0; i--) {
    int j = i - s;
    g->in[i] = j >= 0 ? g->in[j] : 1;
    g->out[i] = j >= 0 ? g->out[j] : 1;
    g->kernel[i] = j >= 0 ? g->kernel[j] : 1;
    g->stride[i] = j >= 0 ? g->stride[j] : 1;
    g->pad[i] = j >= 0 ? g->pad[j] : 0;
    g->dilate[i] = j >= 0 ? g->dilate[j] : 1;
  }
  g->k = 3;
}

/* The geometry is copied into a local (G) so stores through the data pointers cannot
 * alias it and its fields stay in registers, and whether a kernel column's source rows
 * are contiguous and in range (stride 1, no clipping) is decided once per kernel column,
 * not per output row: the rows are short (8 floats for LeNet's second convolution), so
 * per-row bookkeeping used to cost more than the copies. Both take nimg images at once
 * (image n: x + n·C·I, columns col + n·O) with the images inside the col-row loop, so col
 * (hundreds of KiB, in L2) is written / read row after row in address order, while the
 * images (a few KiB each) stay in L1; one image per call read col in 256-byte pieces at
 * a 1 KiB stride, and that streaming, not the arithmetic, was the cost (perf: im2col and
 * col2im 20% each of a LeNet conv2 backward). col2im runs the kernel-column loop (kw)
 * outermost, so back-to-back updates of an image row cover the same elements instead of
 * overlapping shifted by one (which defeats store forwarding). */
/* Output positions o in [0, n_out) whose input index start + o*stride lies in [0, n_in):
 * [*lo, *hi) (empty when lo == hi). */
static void in_range(int64_t start, int64_t stride, int64_t n_out, int64_t n_in, int64_t *lo,
                     int64_t *hi) {
  int64_t l = start < 0 ? (-start + stride - 1) / stride : 0, lim = n_in - 1 - start;
  int64_t h = lim < 0 ? 0 : lim / stride + 1;
  if (h > n_out) h = n_out;
  if (l > h) l = h;
  *lo = l, *hi = h;
}

/* rows x w block moves between strided rows; the fixed 8-wide inner loop becomes one
 * vector move (two in the SSE2 clone) instead of a runtime-length vector loop with its
 * prologue and remainder per 8-float row. */
#define DEF_BLK(T, S)                                                                      \
  static inline void blk_copy_##S(T *restrict d, int64_t dd, const T *restrict s,          \
                                  int64_t ss, int64_t rows, int64_t w) {                   \
    for (int64_t r = 0; r < rows; r++, d += dd, s += ss) {                                 \
      int64_t j = 0;                                                                       \
      for (; j + 8 <= w; j += 8)                                                           \
        for (int k = 0; k < 8; k++) d[j + k] = s[j + k];                                   \
      for (; j < w; j++) d[j] = s[j];                                                      \
    }                                                                                      \
  }                                                                                        \
  static inline void blk_add_##S(T *restrict d, int64_t dd, const T *restrict s,           \
                                 int64_t ss, int64_t rows, int64_t w) {                    \
    for (int64_t r = 0; r < rows; r++, d += dd, s += ss) {                                 \
      int64_t j = 0;                                                                       \
      for (; j + 8 <= w; j += 8)                                                           \
        for (int k = 0; k < 8; k++) d[j + k] += s[j + k];                                  \
      for (; j < w; j++) d[j] += s[j];                                                     \
    }                                                                                      \
  }

enum { PAD_COLS = 4096 }; /* floats of images re-laid with their zero columns (im2col) */

/* One image's part of one col row: output rows oh in [hl, hh) read input rows, the rest
 * is padding (zeros). */
#define IM2COL_ROW(T, S)                                                                   \
  for (int64_t od = 0; od < G.out[0]; od++) {                                              \
    int64_t id = od * G.stride[0] - G.pad[0] + kd * G.dilate[0];                           \
    T *dp = dst + od * G.out[1] * ow_n;                                                    \
    if (id < 0 || id >= G.in[0]) {                                                         \
      for (int64_t j = 0; j < G.out[1] * ow_n; j++) dp[j] = 0;                             \
      continue;                                                                            \
    }                                                                                      \
    const T *sp = src + id * G.in[1] * G.in[2];                                            \
    for (int64_t j = 0; j < hl * ow_n; j++) dp[j] = 0;                                     \
    for (int64_t j = hh * ow_n; j < G.out[1] * ow_n; j++) dp[j] = 0;                       \
    if (fast) {                                                                            \
      if (hh > hl)                                                                         \
        blk_copy_##S(dp + hl * ow_n, ow_n, sp + (h0 + hl * G.stride[1]) * G.in[2] + iw0,   \
                     G.stride[1] * G.in[2], hh - hl, ow_n);                                \
      continue;                                                                            \
    }                                                                                      \
    for (int64_t oh = hl; oh < hh; oh++) {                                                 \
      const T *sr = sp + (h0 + oh * G.stride[1]) * G.in[2];                                \
      T *d = dp + oh * ow_n;                                                               \
      for (int64_t ow = 0; ow < ow_n; ow++) {                                              \
        int64_t iw = iw0 + ow * sw;                                                        \
        d[ow] = iw >= 0 && iw < G.in[2] ? sr[iw] : 0;                                      \
      }                                                                                    \
    }                                                                                      \
  }

/* One image's part of one col row added back: rows [hl, hh), columns [wl, wh) land inside
 * the image. */
#define COL2IM_ROW(T, S)                                                                   \
  for (int64_t od = 0; od < G.out[0]; od++) {                                              \
    int64_t id = od * G.stride[0] - G.pad[0] + kd * G.dilate[0];                           \
    if (id < 0 || id >= G.in[0]) continue;                                                 \
    const T *sp = src + od * G.out[1] * ow_n;                                              \
    T *dp = dst + id * G.in[1] * G.in[2];                                                  \
    if (sw == 1) {                                                                         \
      if (hh > hl && wh > wl)                                                              \
        blk_add_##S(dp + (h0 + hl * G.stride[1]) * G.in[2] + iw0 + wl,                     \
                    G.stride[1] * G.in[2], sp + hl * ow_n + wl, ow_n, hh - hl, wh - wl);   \
      continue;                                                                            \
    }                                                                                      \
    for (int64_t oh = hl; oh < hh; oh++) {                                                 \
      const T *s = sp + oh * ow_n;                                                         \
      T *drow = dp + (h0 + oh * G.stride[1]) * G.in[2];                                    \
      for (int64_t ow = wl; ow < wh; ow++) drow[iw0 + ow * sw] += s[ow];                   \
    }                                                                                      \
  }

#define DEF_IM2COL(T, S)                                                                   \
  /* the col rows of channel c from images x (stride xs), of geometry G */                 \
  static inline void im2col_c_##S(const lmx_cpu_geom G, int64_t c, int64_t nimg,           \
                                  const T *restrict x, int64_t xs, T *restrict col,        \
                                  int64_t ld) {                                            \
    int64_t K = G.kernel[0] * G.kernel[1] * G.kernel[2], ow_n = G.out[2];                  \
    int64_t O = G.out[0] * G.out[1] * ow_n;                                                \
    for (int64_t kd = 0; kd < G.kernel[0]; kd++)                                           \
      for (int64_t kh = 0; kh < G.kernel[1]; kh++)                                         \
        for (int64_t kw = 0; kw < G.kernel[2]; kw++) {                                     \
          int64_t iw0 = kw * G.dilate[2] - G.pad[2], sw = G.stride[2];                     \
          int fast = sw == 1 && iw0 >= 0 && iw0 + ow_n <= G.in[2];                         \
          int64_t h0 = kh * G.dilate[1] - G.pad[1], hl, hh;                                \
          in_range(h0, G.stride[1], G.out[1], G.in[1], &hl, &hh);                          \
          T *row = col + (c * K + (kd * G.kernel[1] + kh) * G.kernel[2] + kw) * ld;        \
          for (int64_t n = 0; n < nimg; n++) {                                             \
            T *dst = row + n * O;                                                          \
            const T *src = x + n * xs;                                                     \
            IM2COL_ROW(T, S)                                                               \
          }                                                                                \
        }                                                                                  \
  }                                                                                        \
  /* Channels [c0, c1). With stride 1 along the rows and padding there, the images of a  \
   * channel are first copied with their zero columns (PAD_COLS floats at most): every     \
   * kernel column is then a plain block copy instead of a clipped one (2/3 of a 3x3      \
   * convolution's rows; per-element bounds tests on 4- to 16-float rows made im2col     \
   * cost as much as the GEMM of a batch-1 ResNet layer). */                             \
  LMX_SIMD_CLONES static void im2col_##S(const lmx_cpu_geom *g, int64_t c0, int64_t c1,    \
                                         int64_t C, int64_t nimg, const T *restrict x,     \
                                         T *restrict col, int64_t ld) {                    \
    const lmx_cpu_geom G = *g;                                                             \
    int64_t I = G.in[0] * G.in[1] * G.in[2], W = G.in[2], pw = G.pad[2], wp = W + 2 * pw;  \
    int64_t rows = G.in[0] * G.in[1];                                                      \
    if (G.stride[2] != 1 || pw == 0 || nimg * rows * wp > PAD_COLS) {                      \
      for (int64_t c = c0; c < c1; c++)                                                    \
        im2col_c_##S(G, c, nimg, x + c * I, C * I, col, ld);                               \
      return;                                                                              \
    }                                                                                      \
    T buf[PAD_COLS];                                                                       \
    lmx_cpu_geom P = G;                                                                    \
    P.in[2] = wp, P.pad[2] = 0;                                                            \
    for (int64_t c = c0; c < c1; c++) {                                                    \
      for (int64_t n = 0; n < nimg; n++)                                                   \
        for (int64_t r = 0; r < rows; r++) {                                               \
          T *d = buf + (n * rows + r) * wp;                                                \
          const T *sr = x + (n * C + c) * I + r * W;                                       \
          for (int64_t i = 0; i < pw; i++) d[i] = 0, d[pw + W + i] = 0;                    \
          for (int64_t i = 0; i < W; i++) d[pw + i] = sr[i];                               \
        }                                                                                  \
      im2col_c_##S(P, c, nimg, buf, rows * wp, col, ld);                                   \
    }                                                                                      \
  }                                                                                        \
  LMX_SIMD_CLONES static void col2im_##S(const lmx_cpu_geom *g, int64_t C, int64_t nimg,   \
                                         const T *restrict col, T *restrict x, int64_t ld) { \
    const lmx_cpu_geom G = *g;                                                             \
    int64_t K = G.kernel[0] * G.kernel[1] * G.kernel[2], ow_n = G.out[2];                  \
    int64_t I = G.in[0] * G.in[1] * G.in[2], O = G.out[0] * G.out[1] * ow_n;               \
    for (int64_t kw = 0; kw < G.kernel[2]; kw++)                                           \
      for (int64_t c = 0; c < C; c++)                                                      \
        for (int64_t kd = 0; kd < G.kernel[0]; kd++)                                       \
          for (int64_t kh = 0; kh < G.kernel[1]; kh++) {                                   \
            int64_t iw0 = kw * G.dilate[2] - G.pad[2], sw = G.stride[2];                   \
            int64_t h0 = kh * G.dilate[1] - G.pad[1], hl, hh, wl, wh;                      \
            in_range(h0, G.stride[1], G.out[1], G.in[1], &hl, &hh);                        \
            in_range(iw0, sw, ow_n, G.in[2], &wl, &wh);                                    \
            const T *row = col + (c * K + (kd * G.kernel[1] + kh) * G.kernel[2] + kw) * ld; \
            for (int64_t n = 0; n < nimg; n++) {                                           \
              const T *src = row + n * O;                                                  \
              T *dst = x + (n * C + c) * I;                                                \
              COL2IM_ROW(T, S)                                                             \
            }                                                                              \
          }                                                                                \
  }
DEF_BLK(float, f32)
DEF_BLK(double, f64)
DEF_IM2COL(float, f32)
DEF_IM2COL(double, f64)

/* Channels go over the threads from LMX_OMP_MIN_STREAM elements when no region is open
 * (batch 1: the GEMM after it runs on every thread, and im2col had run on one while the
 * others waited; ResNet-18's 256x8x8 and 512x4x4 layers have 147k and 74k). */
int lmx_cpu_im2col(int dt, const lmx_cpu_geom *g, int64_t C, int64_t nimg, const void *x,
                   void *col, int64_t ld) {
  if (dt != LMX_FLOAT32 && dt != LMX_FLOAT64) return -1;
  int64_t per = g->kernel[0] * g->kernel[1] * g->kernel[2] * g->out[0] * g->out[1] *
                g->out[2] * nimg;
  LMX_PAR_FOR_WM(C, per, LMX_OMP_MIN_FREE, c, {
    if (dt == LMX_FLOAT32) im2col_f32(g, c, c + 1, C, nimg, x, col, ld);
    else im2col_f64(g, c, c + 1, C, nimg, x, col, ld);
  });
  return 0;
}

int lmx_cpu_col2im(int dt, const lmx_cpu_geom *g, int64_t C, int64_t nimg, const void *col,
                   void *x, int64_t ld) {
  if (dt == LMX_FLOAT32) col2im_f32(g, C, nimg, col, x, ld);
  else if (dt == LMX_FLOAT64) col2im_f64(g, C, nimg, col, x, ld);
  else return -1;
  return 0;
}
