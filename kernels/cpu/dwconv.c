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
 * output in order, so every result is deterministic. Kernels of more than
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
#define DW_SPANS(g)                                                                        \
  int64_t sp_c0[LMX_CPU_DW_MAXK], sp_lo[LMX_CPU_DW_MAXK], sp_hi[LMX_CPU_DW_MAXK];          \
  for (int64_t kw = 0; kw < (g)->kernel[2]; kw++) {                                        \
    sp_c0[kw] = kw * (g)->dilate[2] - (g)->pad[2];                                         \
    span(sp_c0[kw], (g)->stride[2], (g)->out[2], (g)->in[2], &sp_lo[kw], &sp_hi[kw]);      \
  }
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
          int64_t xi = (id * (g)->in[1] + ih) * (g)->in[2];                                \
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
  static inline double dot_strided_##S(const T *a, const T *b, int64_t sb, int64_t n) {    \
    double r = 0;                                                                          \
    for (int64_t i = 0; i < n; i++) r += (double)a[i] * b[i * sb];                         \
    return r;                                                                              \
  }
DEF_DOT(float, f32)
DEF_DOT(double, f64)

#define DEF_DW(T, S)                                                                       \
  LMX_SIMD_CLONES static void dw_fwd_##S(const lmx_cpu_geom *g, int64_t N, int64_t C, int64_t m,           \
                         const T *x, const T *w, const T *b, T *y, int acc) {              \
    int64_t F = C * m, O = g->out[0] * g->out[1] * g->out[2];                              \
    int64_t I = g->in[0] * g->in[1] * g->in[2];                                            \
    int64_t K = g->kernel[0] * g->kernel[1] * g->kernel[2], sw = g->stride[2];             \
    DW_SPANS(g)                                                                            \
    LMX_PAR_FOR_W(N * F, O * K, r, {                                                       \
      int64_t n = r / F, f = r % F;                                                        \
      T *yp = y + r * O;                                                                   \
      const T *xp = x + (n * C + f / m) * I, *wf = w + f * K;                              \
      T bv = b ? b[f] : (T)0;                                                              \
      for (int64_t o = 0; o < O; o++) yp[o] = acc ? yp[o] + bv : bv;                       \
      DW_VISIT(g, {                                                                        \
        T wv = wf[t];                                                                      \
        T *yr = yp + yo;                                                                   \
        const T *xr = xp + xi + c0;                                                        \
        if (sw == 1)                                                                       \
          for (int64_t ow = lo; ow < hi; ow++) yr[ow] += wv * xr[ow];                      \
        else                                                                               \
          for (int64_t ow = lo; ow < hi; ow++) yr[ow] += wv * xr[ow * sw];                 \
      })                                                                                   \
    });                                                                                    \
  }                                                                                        \
  LMX_SIMD_CLONES static void dw_bwd_data_##S(const lmx_cpu_geom *g, int64_t N, int64_t C, int64_t m,      \
                              const T *w, const T *gy, T *gx, int acc) {                   \
    int64_t F = C * m, O = g->out[0] * g->out[1] * g->out[2];                              \
    int64_t I = g->in[0] * g->in[1] * g->in[2];                                            \
    int64_t K = g->kernel[0] * g->kernel[1] * g->kernel[2], sw = g->stride[2];             \
    DW_SPANS(g)                                                                            \
    LMX_PAR_FOR_W(N * C, O * K * m, r, {                                                   \
      int64_t n = r / C, c = r % C;                                                        \
      T *xp = gx + r * I;                                                                  \
      if (!acc)                                                                            \
        for (int64_t i = 0; i < I; i++) xp[i] = 0;                                         \
      for (int64_t f = c * m; f < (c + 1) * m; f++) {                                      \
        const T *gp = gy + (n * F + f) * O, *wf = w + f * K;                               \
        DW_VISIT(g, {                                                                      \
          T wv = wf[t];                                                                    \
          const T *gr = gp + yo;                                                           \
          T *xr = xp + xi + c0;                                                            \
          for (int64_t ow = lo; ow < hi; ow++) xr[ow * sw] += wv * gr[ow];                 \
        })                                                                                 \
      }                                                                                    \
    });                                                                                    \
  }                                                                                        \
  LMX_SIMD_CLONES static void dw_bwd_wb_##S(const lmx_cpu_geom *g, int64_t N, int64_t C, int64_t m,        \
                            const T *x, const T *gy, T *gw, T *gb, int accw, int accb) {   \
    int64_t F = C * m, O = g->out[0] * g->out[1] * g->out[2];                              \
    int64_t I = g->in[0] * g->in[1] * g->in[2];                                            \
    int64_t K = g->kernel[0] * g->kernel[1] * g->kernel[2], sw = g->stride[2];             \
    int64_t ow_n = g->out[2], rowacc = K * ow_n <= DW_ROWACC;                              \
    DW_SPANS(g)                                                                            \
    LMX_PAR_FOR_W(F, N * O * K, f, {                                                       \
      double s[LMX_CPU_DW_MAXK], sb = 0;                                                   \
      T ra[DW_ROWACC];                                                                     \
      for (int64_t t = 0; t < K; t++) s[t] = 0;                                            \
      for (int64_t n = 0; n < N; n++) {                                                    \
        const T *gp = gy + (n * F + f) * O, *xp = x + (n * C + f / m) * I;                 \
        if (gb) sb += sum_##S(gp, O);                                                      \
        if (!gw) continue;                                                                 \
        if (rowacc) {                                                                      \
          for (int64_t i = 0; i < K * ow_n; i++) ra[i] = 0;                                \
          DW_VISIT(g, {                                                                    \
            const T *gr = gp + yo, *xr = xp + xi + c0;                                     \
            T *a = ra + t * ow_n;                                                          \
            if (sw == 1)                                                                   \
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
                       const void *x, const void *w, const void *b, void *y, int acc) {
  if (dt == LMX_FLOAT32) dw_fwd_f32(g, N, C, m, x, w, b, y, acc);
  else if (dt == LMX_FLOAT64) dw_fwd_f64(g, N, C, m, x, w, b, y, acc);
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
