/* dwconv3.h — one plane of a 3x3 depthwise convolution (2-D, dilation 1, stride 1 or 2,
 * padding 0 to 2) over a zero-padded copy of the plane, as one flat loop (part of dwconv.c).
 *
 * The copy B is the padded image (stride 1), or its four phases P[a][b][i][j] = X[2i+a][2j+b]
 * (stride 2), with Wq columns: the output's width plus the two (stride 1) or one (stride 2)
 * columns that the taps reach past it. Then every output y[oh][ow] is the nine products
 * B[oh + kh][ow + kw] (stride 1; phase (kh&1, kw&1) at [oh + kh/2][ow + kw/2] for stride 2),
 * and the whole plane is one loop over the flat index j = oh·Wq + ow, nine loads at
 * constant offsets and nine multiply-adds, with the Wq - OW columns past each row computed
 * and dropped when the rows are copied out. No edge cases and no short rows: the row-wise
 * kernel (dw3_plane) ran 7- and 14-wide planes and stride 2 at 5 to 15 GFLOP/s on one Zen 5
 * core (MobileNet v2's batch 1: a third of the run); this one's loop is as long as the
 * plane. Planes whose buffers exceed DW3F_BYTES each go to dw3_plane.
 */
#ifndef LMX_KERNELS_CPU_DWCONV3_H
#define LMX_KERNELS_CPU_DWCONV3_H

#define DW3F_BYTES 65536
/* The flat loop runs in whole blocks of this many outputs (one AVX-512 register of
 * floats): a remainder loop of up to 15 scalar outputs of nine products each cost more
 * than the vectors on 7x7 planes. The block past the plane reads DW3F_LANES zeros that
 * follow the copy, and its outputs are dropped. */
#define DW3F_LANES 16

#define DEF_DW3F(T, S)                                                                      \
  /* the padded copy's columns and rows (per phase for stride 2), 0 when it does not apply */ \
  static inline int dw3f_dims_##S(const lmx_cpu_geom *g, int64_t *wq, int64_t *rows) {     \
    if (g->in[0] != 1 || g->out[0] != 1 || g->kernel[0] != 1 || g->pad[0] != 0) return 0;  \
    if (g->kernel[1] != 3 || g->kernel[2] != 3 || g->dilate[1] != 1 || g->dilate[2] != 1)  \
      return 0;                                                                            \
    int64_t s = g->stride[1];                                                              \
    if (s != g->stride[2] || (s != 1 && s != 2)) return 0;                                 \
    for (int i = 1; i < 3; i++)                                                            \
      if (g->pad[i] < 0 || g->pad[i] > 2) return 0;                                        \
    int64_t OH = g->out[1], OW = g->out[2];                                                \
    *wq = OW + (s == 1 ? 2 : 1), *rows = OH + (s == 1 ? 3 : 2);                            \
    int64_t cap = DW3F_BYTES / (int64_t)sizeof(T);                                         \
    return (s == 1 ? 1 : 4) * *rows * *wq + DW3F_LANES <= cap &&                           \
           (OH * *wq + DW3F_LANES - 1) / DW3F_LANES * DW3F_LANES <= cap;                   \
  }                                                                                        \
  /* B[r][c] = X[s r + a][s c + b], X the image padded by pad (zero outside the image) */  \
  static inline __attribute__((always_inline)) void dw3f_fill_##S(const lmx_cpu_geom *g, const T *x, T *B, int64_t wq,    \
                                   int64_t rows, int64_t s, int64_t a, int64_t b) {        \
    int64_t H = g->in[1], W = g->in[2];                                                    \
    /* the columns c with 0 <= s c + b - pad < W, [lo, hi): the same for every row */      \
    int64_t o = b - g->pad[2], lo = o >= 0 ? 0 : (-o + s - 1) / s;                         \
    int64_t hi = W - o <= 0 ? 0 : (W - o + s - 1) / s;                                     \
    if (hi > wq) hi = wq;                                                                  \
    if (lo > hi) lo = hi;                                                                  \
    for (int64_t r = 0; r < rows; r++) {                                                   \
      T *br = B + r * wq;                                                                  \
      int64_t ih = s * r + a - g->pad[1];                                                  \
      if (ih < 0 || ih >= H) {                                                             \
        for (int64_t c = 0; c < wq; c++) br[c] = 0;                                        \
        continue;                                                                          \
      }                                                                                    \
      const T *xr = x + ih * W;                                                            \
      for (int64_t c = 0; c < lo; c++) br[c] = 0;                                          \
      if (s == 1)                                                                          \
        for (int64_t c = lo; c < hi; c++) br[c] = xr[c + o];                               \
      else                                                                                 \
        for (int64_t c = lo; c < hi; c++) br[c] = xr[2 * c + o];                           \
      for (int64_t c = hi; c < wq; c++) br[c] = 0;                                         \
    }                                                                                      \
  }                                                                                        \
  /* y (+)= bias + the 3x3 convolution of plane x with w (9 taps, row-major); 0 done, -1 when \
   * the geometry is not this kernel's (nothing written) */                                \
  /* no memset / memcpy calls for the fill's short rows (GCC turns those loops into them) */ \
  __attribute__((optimize("no-tree-loop-distribute-patterns")))                            \
  LMX_SIMD_CLONES static int dw3f_plane_##S(const lmx_cpu_geom *g, const T *x, const T *w, \
                                             T bias, T *y, int acc) {                      \
    int64_t wq, rows;                                                                      \
    if (!dw3f_dims_##S(g, &wq, &rows)) return -1;                                          \
    T buf[DW3F_BYTES / sizeof(T)], out[DW3F_BYTES / sizeof(T)];                            \
    int64_t s = g->stride[1], OH = g->out[1], OW = g->out[2], ph = rows * wq;              \
    const T *p[9];                                                                         \
    int64_t nb = (s == 1 ? 1 : 4) * ph;                                                    \
    for (int64_t i = nb; i < nb + DW3F_LANES; i++) buf[i] = 0;                             \
    if (s == 1) {                                                                          \
      dw3f_fill_##S(g, x, buf, wq, rows, 1, 0, 0);                                         \
      for (int k = 0; k < 9; k++) p[k] = buf + (k / 3) * wq + k % 3;                       \
    } else {                                                                               \
      for (int a = 0; a < 2; a++)                                                          \
        for (int b = 0; b < 2; b++) dw3f_fill_##S(g, x, buf + (a * 2 + b) * ph, wq, rows, 2, a, b); \
      for (int k = 0; k < 9; k++) {                                                        \
        int kh = k / 3, kw = k % 3;                                                        \
        p[k] = buf + ((kh & 1) * 2 + (kw & 1)) * ph + (kh >> 1) * wq + (kw >> 1);          \
      }                                                                                    \
    }                                                                                      \
    const T *p0 = p[0], *p1 = p[1], *p2 = p[2], *p3 = p[3], *p4 = p[4], *p5 = p[5];        \
    const T *p6 = p[6], *p7 = p[7], *p8 = p[8];                                            \
    T w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5], w6 = w[6];         \
    T w7 = w[7], w8 = w[8];                                                                \
    T *restrict o = out;                                                                   \
    for (int64_t j0 = 0; j0 < OH * wq; j0 += DW3F_LANES)                                   \
      for (int64_t j = j0; j < j0 + DW3F_LANES; j++)                                       \
        o[j] = bias + w0 * p0[j] + w1 * p1[j] + w2 * p2[j] + w3 * p3[j] + w4 * p4[j] +     \
               w5 * p5[j] + w6 * p6[j] + w7 * p7[j] + w8 * p8[j];                          \
    for (int64_t oh = 0; oh < OH; oh++) {                                                  \
      T *yr = y + oh * OW;                                                                 \
      const T *orow = out + oh * wq;                                                       \
      if (acc)                                                                             \
        for (int64_t ow = 0; ow < OW; ow++) yr[ow] += orow[ow];                            \
      else                                                                                 \
        for (int64_t ow = 0; ow < OW; ow++) yr[ow] = orow[ow];                             \
    }                                                                                      \
    return 0;                                                                              \
  }

#endif
