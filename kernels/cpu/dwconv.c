/* dwconv.c — direct depthwise convolution (num_group == channels, m = F / C filters per
 * channel; 1-D to 3-D through the normalized 3-D geometry, strided, padded, dilated),
 * forward and backward, float32 / float64 (other dtypes return -1).
 *
 * im2col + one GEMM per group degenerates here (a 1 x K by K x O product per channel),
 * so each output plane is computed directly: for every kernel tap the output columns
 * whose input lies inside the row are found once per row (no per-element bounds checks)
 * and the inner loop runs y[ow] += w * x[ow * stride + offset], which vectorises for
 * stride 1. Forward runs the (n, f) planes in parallel; the data gradient runs the (n, c)
 * planes (each written by one thread: its m filters scatter into it in order); the
 * weight and bias gradients run one filter per thread, summing in double over n and the
 * output in order, so every result is deterministic. The forward may apply a per-channel
 * epilogue (chan_ep.c) to each plane right after computing it. Kernels of more than
 * LMX_CPU_DW_MAXK taps are left to the GEMM path (the weight gradient sums per tap on the
 * stack).
 */
#include "../../src/tensor/dtype.h"
#include "cpu_kernels.h"
#include "cpu_par.h"

/* output positions o in [0, n_out) with start + o * stride in [0, n_in): [*lo, *hi) */
static void span(int64_t start, int64_t stride, int64_t n_out, int64_t n_in, int64_t *lo,
                 int64_t *hi) {
  int64_t l = start < 0 ? (-start + stride - 1) / stride : 0, lim = n_in - 1 - start;
  int64_t h = lim < 0 ? 0 : lim / stride + 1;
  if (h > n_out) h = n_out;
  if (l > h) l = h;
  *lo = l, *hi = h;
}

/* Visits every (output row, tap) pair of a plane whose input row is inside the image:
 * BODY sees yo (output row offset), xi (input row offset), t (tap index), c0 (input
 * column of output column 0 for this tap), [lo, hi) (valid output columns). The column
 * spans depend on the tap's column only, so they are found once per plane (DW_SPANS):
 * found per row and tap, their divisions cost more than a 7x7 or 14x14 plane's row of
 * multiply-adds. */
#define DW_SPANS(g, T)                                                                      \
  int64_t sp_c0[LMX_CPU_DW_MAXK], sp_lo[LMX_CPU_DW_MAXK], sp_hi[LMX_CPU_DW_MAXK];          \
  int64_t sp_ph[LMX_CPU_DW_MAXK];                                                          \
  int64_t ph_rows = (g)->in[0] * (g)->in[1], ph_w = ((g)->in[2] + sw - 1) / sw;            \
  int use_ph = sw > 1 && sw * ph_w * ph_rows <= DW_PHASE_BYTES / (int64_t)sizeof(T);      \
  for (int64_t kw = 0; kw < (g)->kernel[2]; kw++) {                                        \
    sp_c0[kw] = kw * (g)->dilate[2] - (g)->pad[2];                                         \
    span(sp_c0[kw], (g)->stride[2], (g)->out[2], (g)->in[2], &sp_lo[kw], &sp_hi[kw]);      \
    int64_t p = ((sp_c0[kw] % sw) + sw) % sw;                                              \
    sp_ph[kw] = p * ph_rows * ph_w + (sp_c0[kw] - p) / sw;                                 \
  }
/* Column stride sw > 1: a plane of at most DW_PHASE_BYTES is first split into its sw
 * column phases, ph[p][row][j] = plane[row][j sw + p] (zero past the row), so that every
 * tap reads (or, for the data gradient, adds into) a contiguous row at ph + sp_ph[kw] +
 * xrow ph_w: the strided accesses compiled to scalar loads and stores, a third of
 * MobileNet v2's batch-1 inference. */
#define DW_PHASE_BYTES 65536
#define DW_PH_SRC(ph, xp, kw) ((ph) + sp_ph[kw] + xrow * ph_w)
#define DW_VISIT(g, ...)                                                                   \
  for (int64_t od = 0; od < (g)->out[0]; od++)                                             \
    for (int64_t oh = 0; oh < (g)->out[1]; oh++)                                           \
      for (int64_t kd = 0; kd < (g)->kernel[0]; kd++) {                                    \
        int64_t id = od * (g)->stride[0] - (g)->pad[0] + kd * (g)->dilate[0];              \
        if (id < 0 || id >= (g)->in[0]) continue;                                          \
        for (int64_t kh = 0; kh < (g)->kernel[1]; kh++) {                                  \
          int64_t ih = oh * (g)->stride[1] - (g)->pad[1] + kh * (g)->dilate[1];            \
          if (ih < 0 || ih >= (g)->in[1]) continue;                                        \
          int64_t yo = (od * (g)->out[1] + oh) * (g)->out[2];                              \
          int64_t xrow = id * (g)->in[1] + ih, xi = xrow * (g)->in[2];                     \
          (void)xrow;                                                                      \
          for (int64_t kw = 0; kw < (g)->kernel[2]; kw++) {                                \
            int64_t t = (kd * (g)->kernel[1] + kh) * (g)->kernel[2] + kw;                  \
            int64_t c0 = sp_c0[kw], lo = sp_lo[kw], hi = sp_hi[kw];                        \
            __VA_ARGS__                                                                    \
          }                                                                                \
        }                                                                                  \
      }

/* The weight gradient: per plane, each tap's products are added into a row of
 * accumulators in T (ra[t][ow], K x out-width, at most DW_ROWACC: a few KiB in L1),
 * vectorised along the row, and summed into double once per plane; so is the bias
 * gradient's plane sum (sum_). Planes wider than that take row dot products instead. */
#define DW_ROWACC 4096
/* The weight gradient's row dot products: DW_LANES independent partial sums in T (a
 * row is at most a few hundred products, so each lane adds a few dozen), summed in
 * double; a single double accumulator was a serial chain of dependent adds that does not
 * vectorise (that loop was 15% of MobileNet v2's training step). */
#define DW_LANES 16
#define DEF_DOT(T, S)                                                                      \
  static inline double dot_##S(const T *a, const T *b, int64_t n) {                        \
    T l[DW_LANES] = {0};                                                                   \
    int64_t i = 0;                                                                         \
    for (; i + DW_LANES <= n; i += DW_LANES)                                               \
      for (int j = 0; j < DW_LANES; j++) l[j] += a[i + j] * b[i + j];                      \
    double r = 0;                                                                          \
    for (; i < n; i++) r += (double)a[i] * b[i];                                           \
    for (int j = 0; j < DW_LANES; j++) r += l[j];                                          \
    return r;                                                                              \
  }                                                                                        \
  static inline double sum_blk_##S(const T *a, int64_t n) {                               \
    T l[DW_LANES] = {0};                                                                   \
    int64_t i = 0;                                                                         \
    for (; i + DW_LANES <= n; i += DW_LANES)                                               \
      for (int j = 0; j < DW_LANES; j++) l[j] += a[i + j];                                 \
    double r = 0;                                                                          \
    for (; i < n; i++) r += a[i];                                                          \
    for (int j = 0; j < DW_LANES; j++) r += l[j];                                          \
    return r;                                                                              \
  }                                                                                        \
  /* blocks of 1024: each lane adds at most 64 values in T */                              \
  static inline double sum_##S(const T *a, int64_t n) {                                    \
    double r = 0;                                                                          \
    for (int64_t b = 0; b < n; b += 1024) r += sum_blk_##S(a + b, n - b < 1024 ? n - b : 1024); \
    return r;                                                                              \
  }                                                                                        \
  static inline void to_phase_##S(const T *x, T *ph, int64_t rows, int64_t W, int64_t sw,  \
                                  int64_t pw) {                                           \
    for (int64_t p = 0; p < sw; p++)                                                       \
      for (int64_t r = 0; r < rows; r++)                                                   \
        for (int64_t j = 0; j < pw; j++) {                                                 \
          int64_t c = j * sw + p;                                                          \
          ph[(p * rows + r) * pw + j] = c < W ? x[r * W + c] : (T)0;                       \
        }                                                                                  \
  }                                                                                        \
  static inline void from_phase_add_##S(T *x, const T *ph, int64_t rows, int64_t W,        \
                                        int64_t sw, int64_t pw) {                          \
    for (int64_t r = 0; r < rows; r++)                                                     \
      for (int64_t c = 0; c < W; c++) x[r * W + c] += ph[((c % sw) * rows + r) * pw + c / sw]; \
  }                                                                                        \
  static inline double dot_strided_##S(const T *a, const T *b, int64_t sb, int64_t n) {    \
    double r = 0;                                                                          \
    for (int64_t i = 0; i < n; i++) r += (double)a[i] * b[i * sb];                         \
    return r;                                                                              \
  }
DEF_DOT(float, f32)
DEF_DOT(double, f64)

#include "dwconv3.h"
DEF_DW3F(float, f32)
DEF_DW3F(double, f64)

/* Forward of a 2-D 3x3 plane (any stride, pad, dilation; stride > 1 through the phase
 * plane): each output is its nine products summed in a register and stored once, over the
 * columns where every tap is inside the row (vectorised, nine row pointers; a row outside
 * the image points at zeros), with per-tap checks only at the edges. The tap-by-tap loop
 * (DW_VISIT) reads and writes each output row nine times, with a loop setup per row and
 * tap, which on MobileNet's 7- to 56-wide rows cost more than the arithmetic. */
#define DW_ZERO 4096
#define DEF_DW3(T, S)                                                                      \
  static const T dw_zero_##S[DW_ZERO];                                                     \
  LMX_SIMD_CLONES static void dw3_plane_##S(const lmx_cpu_geom *g, const T *xp,            \
                                            const T *ph, int64_t ph_w, const int64_t *c0,  \
                                            const int64_t *phoff, const int64_t *lo,       \
                                            const int64_t *hi, const T *wf, T bv,          \
                                            T *restrict yp, int acc) {                     \
    int64_t ow_n = g->out[2], LO = 0, HI = ow_n;                                           \
    for (int kw = 0; kw < 3; kw++) {                                                       \
      if (lo[kw] > LO) LO = lo[kw];                                                        \
      if (hi[kw] < HI) HI = hi[kw];                                                        \
    }                                                                                      \
    if (HI < LO) HI = LO;                                                                  \
    T w0 = wf[0], w1 = wf[1], w2 = wf[2], w3 = wf[3], w4 = wf[4], w5 = wf[5], w6 = wf[6];  \
    T w7 = wf[7], w8 = wf[8];                                                              \
    for (int64_t oh = 0; oh < g->out[1]; oh++) {                                           \
      const T *P[9];                                                                       \
      for (int kh = 0; kh < 3; kh++) {                                                     \
        int64_t ih = oh * g->stride[1] - g->pad[1] + kh * g->dilate[1];                    \
        for (int kw = 0; kw < 3; kw++)                                                     \
          P[kh * 3 + kw] = ih < 0 || ih >= g->in[1] ? dw_zero_##S                           \
                           : ph ? ph + phoff[kw] + ih * ph_w                               \
                                : xp + ih * g->in[2] + c0[kw];                             \
      }                                                                                    \
      T *yr = yp + oh * ow_n;                                                              \
      const T *p0 = P[0], *p1 = P[1], *p2 = P[2], *p3 = P[3], *p4 = P[4], *p5 = P[5];      \
      const T *p6 = P[6], *p7 = P[7], *p8 = P[8];                                          \
      for (int64_t ow = 0; ow < ow_n; ow++) {                                              \
        if (ow == LO) ow = HI;                                                             \
        if (ow >= ow_n) break;                                                             \
        T v = bv;                                                                          \
        for (int k = 0; k < 9; k++)                                                        \
          if (ow >= lo[k % 3] && ow < hi[k % 3]) v += wf[k] * P[k][ow];                     \
        yr[ow] = acc ? yr[ow] + v : v;                                                     \
      }                                                                                    \
      if (acc)                                                                             \
        for (int64_t ow = LO; ow < HI; ow++)                                               \
          yr[ow] += bv + w0 * p0[ow] + w1 * p1[ow] + w2 * p2[ow] + w3 * p3[ow] +           \
                    w4 * p4[ow] + w5 * p5[ow] + w6 * p6[ow] + w7 * p7[ow] + w8 * p8[ow];   \
      else                                                                                 \
        for (int64_t ow = LO; ow < HI; ow++)                                               \
          yr[ow] = bv + w0 * p0[ow] + w1 * p1[ow] + w2 * p2[ow] + w3 * p3[ow] +            \
                   w4 * p4[ow] + w5 * p5[ow] + w6 * p6[ow] + w7 * p7[ow] + w8 * p8[ow];    \
    }                                                                                      \
  }
DEF_DW3(float, f32)
DEF_DW3(double, f64)

#define DEF_DW(T, S)                                                                       \
  LMX_SIMD_CLONES static void dw_fwd_##S(const lmx_cpu_geom *g, int64_t N, int64_t C, int64_t m,           \
                         const T *x, const T *w, const T *b, T *y, int acc,                \
                         const lmx_cpu_ep *ep) {                                           \
    int64_t F = C * m, O = g->out[0] * g->out[1] * g->out[2];                              \
    int64_t I = g->in[0] * g->in[1] * g->in[2];                                            \
    int64_t K = g->kernel[0] * g->kernel[1] * g->kernel[2], sw = g->stride[2];             \
    DW_SPANS(g, T)                                                                          \
    int fast3 = g->in[0] == 1 && g->out[0] == 1 && g->kernel[0] == 1 && g->pad[0] == 0 &&  \
                g->kernel[1] == 3 && g->kernel[2] == 3 && (sw == 1 || use_ph) &&           \
                g->out[2] <= DW_ZERO;                                                      \
    int64_t fl_wq, fl_rows;                                                                \
    int flat = dw3f_dims_##S(g, &fl_wq, &fl_rows);                                         \
    LMX_PAR_FOR_W(N * F, O * K, r, {                                                       \
      int64_t n = r / F, f = r % F;                                                        \
      T *yp = y + r * O;                                                                   \
      const T *xp = x + (n * C + f / m) * I, *wf = w + f * K;                              \
      T bv = b ? b[f] : (T)0;                                                              \
      do { /* the plane, then the epilogue over it while it is in cache */                 \
        if (flat && dw3f_plane_##S(g, xp, wf, bv, yp, acc) == 0) break;                    \
        T ph[DW_PHASE_BYTES / sizeof(T)];                                                  \
        if (use_ph) to_phase_##S(xp, ph, ph_rows, g->in[2], sw, ph_w);                      \
        if (fast3) {                                                                       \
          dw3_plane_##S(g, xp, use_ph ? ph : NULL, ph_w, sp_c0, sp_ph, sp_lo, sp_hi, wf,    \
                        bv, yp, acc);                                                      \
          break;                                                                           \
        }                                                                                  \
        for (int64_t o = 0; o < O; o++) yp[o] = acc ? yp[o] + bv : bv;                     \
        DW_VISIT(g, {                                                                      \
          T wv = wf[t];                                                                    \
          T *yr = yp + yo;                                                                 \
          const T *xr = xp + xi + c0;                                                      \
          if (use_ph) {                                                                    \
            const T *src = DW_PH_SRC(ph, xp, kw);                                          \
            for (int64_t ow = lo; ow < hi; ow++) yr[ow] += wv * src[ow];                   \
          } else if (sw == 1)                                                              \
            for (int64_t ow = lo; ow < hi; ow++) yr[ow] += wv * xr[ow];                    \
          else                                                                             \
            for (int64_t ow = lo; ow < hi; ow++) yr[ow] += wv * xr[ow * sw];               \
        })                                                                                 \
      } while (0);                                                                         \
      if (ep) lmx_cpu_ep_row(LMX_CPU_DT_OF(T), ep, f, O, yp, yp);                          \
    });                                                                                    \
  }                                                                                        \
  LMX_SIMD_CLONES static void dw_bwd_data_##S(const lmx_cpu_geom *g, int64_t N, int64_t C, int64_t m,      \
                              const T *w, const T *gy, T *gx, int acc) {                   \
    int64_t F = C * m, O = g->out[0] * g->out[1] * g->out[2];                              \
    int64_t I = g->in[0] * g->in[1] * g->in[2];                                            \
    int64_t K = g->kernel[0] * g->kernel[1] * g->kernel[2], sw = g->stride[2];             \
    DW_SPANS(g, T)                                                                          \
    /* 3x3 at stride 1: the forward's register path on the transposed geometry (gy padded \
     * by 2 dilate - pad, the kernel flipped) */                                           \
    lmx_cpu_geom gt = *g;                                                                  \
    int64_t tc0[3], tlo[3], thi[3];                                                        \
    int bwd3 = g->in[0] == 1 && g->out[0] == 1 && g->kernel[0] == 1 && g->pad[0] == 0 &&   \
               g->kernel[1] == 3 && g->kernel[2] == 3 && g->stride[1] == 1 && sw == 1 &&   \
               g->in[2] <= DW_ZERO;                                                        \
    if (bwd3) {                                                                            \
      for (int i = 1; i < 3; i++) {                                                        \
        gt.in[i] = g->out[i], gt.out[i] = g->in[i];                                        \
        gt.pad[i] = 2 * g->dilate[i] - g->pad[i];                                          \
      }                                                                                    \
      for (int kw = 0; kw < 3; kw++) {                                                     \
        tc0[kw] = kw * gt.dilate[2] - gt.pad[2];                                           \
        span(tc0[kw], 1, gt.out[2], gt.in[2], &tlo[kw], &thi[kw]);                         \
      }                                                                                    \
    }                                                                                      \
    int64_t flb_wq, flb_rows;                                                              \
    int flat_b = bwd3 && dw3f_dims_##S(&gt, &flb_wq, &flb_rows);                          \
    LMX_PAR_FOR_W(N * C, O * K * m, r, {                                                   \
      int64_t n = r / C, c = r % C;                                                        \
      T *xp = gx + r * I;                                                                  \
      if (bwd3) {                                                                          \
        for (int64_t f = c * m; f < (c + 1) * m; f++) {                                    \
          T wfl[9];                                                                        \
          for (int k = 0; k < 9; k++) wfl[k] = w[f * 9 + 8 - k];                           \
          if (flat_b && dw3f_plane_##S(&gt, gy + (n * F + f) * O, wfl, (T)0, xp,            \
                                       acc || f > c * m) == 0)                             \
            continue;                                                                      \
          dw3_plane_##S(&gt, gy + (n * F + f) * O, NULL, 0, tc0, NULL, tlo, thi, wfl, (T)0, \
                        xp, acc || f > c * m);                                             \
        }                                                                                  \
        continue;                                                                          \
      }                                                                                    \
      if (!acc)                                                                            \
        for (int64_t i = 0; i < I; i++) xp[i] = 0;                                         \
      T ph[DW_PHASE_BYTES / sizeof(T)];                                                    \
      if (use_ph)                                                                          \
        for (int64_t i = 0; i < sw * ph_rows * ph_w; i++) ph[i] = 0;                       \
      for (int64_t f = c * m; f < (c + 1) * m; f++) {                                      \
        const T *gp = gy + (n * F + f) * O, *wf = w + f * K;                               \
        DW_VISIT(g, {                                                                      \
          T wv = wf[t];                                                                    \
          const T *gr = gp + yo;                                                           \
          T *xr = xp + xi + c0;                                                            \
          if (use_ph) {                                                                    \
            T *dst = ph + sp_ph[kw] + xrow * ph_w;                                         \
            for (int64_t ow = lo; ow < hi; ow++) dst[ow] += wv * gr[ow];                   \
          } else                                                                           \
            for (int64_t ow = lo; ow < hi; ow++) xr[ow * sw] += wv * gr[ow];               \
        })                                                                                 \
      }                                                                                    \
      if (use_ph) from_phase_add_##S(xp, ph, ph_rows, g->in[2], sw, ph_w);                  \
    });                                                                                    \
  }                                                                                        \
  LMX_SIMD_CLONES static void dw_bwd_wb_##S(const lmx_cpu_geom *g, int64_t N, int64_t C, int64_t m,        \
                            const T *x, const T *gy, T *gw, T *gb, int accw, int accb) {   \
    int64_t F = C * m, O = g->out[0] * g->out[1] * g->out[2];                              \
    int64_t I = g->in[0] * g->in[1] * g->in[2];                                            \
    int64_t K = g->kernel[0] * g->kernel[1] * g->kernel[2], sw = g->stride[2];             \
    int64_t ow_n = g->out[2], rowacc = K * ow_n <= DW_ROWACC;                              \
    DW_SPANS(g, T)                                                                          \
    LMX_PAR_FOR_W(F, N * O * K, f, {                                                       \
      double s[LMX_CPU_DW_MAXK], sb = 0;                                                   \
      T ra[DW_ROWACC], ph[DW_PHASE_BYTES / sizeof(T)];                                     \
      for (int64_t t = 0; t < K; t++) s[t] = 0;                                            \
      for (int64_t n = 0; n < N; n++) {                                                    \
        const T *gp = gy + (n * F + f) * O, *xp = x + (n * C + f / m) * I;                 \
        if (gb) sb += sum_##S(gp, O);                                                      \
        if (!gw) continue;                                                                 \
        if (rowacc) {                                                                      \
          for (int64_t i = 0; i < K * ow_n; i++) ra[i] = 0;                                \
          if (use_ph) to_phase_##S(xp, ph, ph_rows, g->in[2], sw, ph_w);                    \
          DW_VISIT(g, {                                                                    \
            const T *gr = gp + yo, *xr = xp + xi + c0;                                     \
            T *a = ra + t * ow_n;                                                          \
            if (use_ph) {                                                                  \
              const T *src = DW_PH_SRC(ph, xp, kw);                                        \
              for (int64_t ow = lo; ow < hi; ow++) a[ow] += gr[ow] * src[ow];              \
            } else if (sw == 1)                                                            \
              for (int64_t ow = lo; ow < hi; ow++) a[ow] += gr[ow] * xr[ow];               \
            else                                                                           \
              for (int64_t ow = lo; ow < hi; ow++) a[ow] += gr[ow] * xr[ow * sw];          \
          })                                                                               \
          for (int64_t t = 0; t < K; t++) s[t] += sum_##S(ra + t * ow_n, ow_n);            \
          continue;                                                                        \
        }                                                                                  \
        DW_VISIT(g, {                                                                      \
          const T *gr = gp + yo, *xr = xp + xi + c0;                                       \
          s[t] += sw == 1 ? dot_##S(gr + lo, xr + lo, hi - lo)                             \
                          : dot_strided_##S(gr + lo, xr + lo * sw, sw, hi - lo);           \
        })                                                                                 \
      }                                                                                    \
      if (gw)                                                                              \
        for (int64_t t = 0; t < K; t++)                                                    \
          gw[f * K + t] = (T)(accw ? gw[f * K + t] + s[t] : s[t]);                         \
      if (gb) gb[f] = (T)(accb ? gb[f] + sb : sb);                                         \
    });                                                                                    \
  }

DEF_DW(float, f32)
DEF_DW(double, f64)

int lmx_cpu_dwconv_fwd(int dt, const lmx_cpu_geom *g, int64_t N, int64_t C, int64_t m,
                       const void *x, const void *w, const void *b, void *y, int acc,
                       const lmx_cpu_ep *ep) {
  if (dt == LMX_FLOAT32) dw_fwd_f32(g, N, C, m, x, w, b, y, acc, ep);
  else if (dt == LMX_FLOAT64) dw_fwd_f64(g, N, C, m, x, w, b, y, acc, ep);
  else return -1;
  return 0;
}

int lmx_cpu_dwconv_bwd_data(int dt, const lmx_cpu_geom *g, int64_t N, int64_t C, int64_t m,
                            const void *w, const void *gy, void *gx, int acc) {
  if (dt == LMX_FLOAT32) dw_bwd_data_f32(g, N, C, m, w, gy, gx, acc);
  else if (dt == LMX_FLOAT64) dw_bwd_data_f64(g, N, C, m, w, gy, gx, acc);
  else return -1;
  return 0;
}

int lmx_cpu_dwconv_bwd_wb(int dt, const lmx_cpu_geom *g, int64_t N, int64_t C, int64_t m,
                          const void *x, const void *gy, void *gw, void *gb, int accw,
                          int accb) {
  if (g->kernel[0] * g->kernel[1] * g->kernel[2] > LMX_CPU_DW_MAXK) return -1;
  if (dt == LMX_FLOAT32) dw_bwd_wb_f32(g, N, C, m, x, gy, gw, gb, accw, accb);
  else if (dt == LMX_FLOAT64) dw_bwd_wb_f64(g, N, C, m, x, gy, gw, gb, accw, accb);
  else return -1;
  return 0;
}
