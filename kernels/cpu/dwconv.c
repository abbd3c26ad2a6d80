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
 * column of output column 0 for this tap), [lo, hi) (valid output columns). */
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
            int64_t c0 = kw * (g)->dilate[2] - (g)->pad[2], lo, hi;                        \
            span(c0, (g)->stride[2], (g)->out[2], (g)->in[2], &lo, &hi);                   \
            __VA_ARGS__                                                                    \
          }                                                                                \
        }                                                                                  \
      }

#define DEF_DW(T, S)                                                                       \
  static void dw_fwd_##S(const lmx_cpu_geom *g, int64_t N, int64_t C, int64_t m,           \
                         const T *x, const T *w, const T *b, T *y, int acc) {              \
    int64_t F = C * m, O = g->out[0] * g->out[1] * g->out[2];                              \
    int64_t I = g->in[0] * g->in[1] * g->in[2];                                            \
    int64_t K = g->kernel[0] * g->kernel[1] * g->kernel[2], sw = g->stride[2];             \
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
  static void dw_bwd_data_##S(const lmx_cpu_geom *g, int64_t N, int64_t C, int64_t m,      \
                              const T *w, const T *gy, T *gx, int acc) {                   \
    int64_t F = C * m, O = g->out[0] * g->out[1] * g->out[2];                              \
    int64_t I = g->in[0] * g->in[1] * g->in[2];                                            \
    int64_t K = g->kernel[0] * g->kernel[1] * g->kernel[2], sw = g->stride[2];             \
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
  static void dw_bwd_wb_##S(const lmx_cpu_geom *g, int64_t N, int64_t C, int64_t m,        \
                            const T *x, const T *gy, T *gw, T *gb, int accw, int accb) {   \
    int64_t F = C * m, O = g->out[0] * g->out[1] * g->out[2];                              \
    int64_t I = g->in[0] * g->in[1] * g->in[2];                                            \
    int64_t K = g->kernel[0] * g->kernel[1] * g->kernel[2], sw = g->stride[2];             \
    LMX_PAR_FOR_W(F, N * O * K, f, {                                                       \
      double s[LMX_CPU_DW_MAXK], sb = 0;                                                   \
      for (int64_t t = 0; t < K; t++) s[t] = 0;                                            \
      for (int64_t n = 0; n < N; n++) {                                                    \
        const T *gp = gy + (n * F + f) * O, *xp = x + (n * C + f / m) * I;                 \
        if (gb)                                                                            \
          for (int64_t o = 0; o < O; o++) sb += gp[o];                                     \
        if (!gw) continue;                                                                 \
        DW_VISIT(g, {                                                                      \
          const T *gr = gp + yo, *xr = xp + xi + c0;                                       \
          double a = 0;                                                                    \
          for (int64_t ow = lo; ow < hi; ow++) a += (double)gr[ow] * xr[ow * sw];          \
          s[t] += a;                                                                       \
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
