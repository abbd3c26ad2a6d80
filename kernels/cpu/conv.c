/* conv.c — convolution lowering (im2col / col2im, 1-D to 3-D, dilated) and pooling
 * (max / avg / sum / lp, padded, count_include_pad) on channel-first data.
 *
 * Geometry is always handled as 3-D: 1-D and 2-D problems get leading spatial dims of 1
 * (lmx_cpu_geom_norm), so one loop nest serves all. im2col writes col[C*K, O] for one
 * image (K = kernel volume, O = output volume, row stride ld >= O so several images can
 * sit side by side; padding reads as 0); col2im adds such a
 * matrix back into the image (the transpose, so it always accumulates). The GEMMs
 * around them are the glue's business (src/ops/cpu/conv.c).
 * Pooling windows follow MXNet's pool.h: the window starts at o*stride - pad and ends
 * at min(start + kernel, in + pad); avg divides by that padded size unless
 * count_include_pad is false (then by the in-range size); max takes in-range elements
 * only and its gradient goes to the first maximum of the window.
 * float32 and float64 siblings from one macro; other dtypes return -1.
 */
#include <math.h>
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

#define DEF_IM2COL(T, S)                                                                   \
  static void im2col_##S(const lmx_cpu_geom *g, int64_t C, const T *x, T *col, int64_t ld) {           \
    int64_t K = g->kernel[0] * g->kernel[1] * g->kernel[2];                                \
    for (int64_t c = 0; c < C; c++)                                                        \
      for (int64_t kd = 0; kd < g->kernel[0]; kd++)                                        \
        for (int64_t kh = 0; kh < g->kernel[1]; kh++)                                      \
          for (int64_t kw = 0; kw < g->kernel[2]; kw++) {                                  \
            int64_t row = c * K + (kd * g->kernel[1] + kh) * g->kernel[2] + kw;            \
            T *dst = col + row * ld;                                                       \
            const T *src = x + c * g->in[0] * g->in[1] * g->in[2];                         \
            for (int64_t od = 0; od < g->out[0]; od++) {                                   \
              int64_t id = od * g->stride[0] - g->pad[0] + kd * g->dilate[0];              \
              for (int64_t oh = 0; oh < g->out[1]; oh++) {                                 \
                int64_t ih = oh * g->stride[1] - g->pad[1] + kh * g->dilate[1];            \
                T *d = dst + (od * g->out[1] + oh) * g->out[2];                            \
                if (id < 0 || id >= g->in[0] || ih < 0 || ih >= g->in[1]) {                \
                  memset(d, 0, (size_t)g->out[2] * sizeof(T));                             \
                  continue;                                                                \
                }                                                                          \
                const T *srow = src + (id * g->in[1] + ih) * g->in[2];                     \
                int64_t iw0 = kw * g->dilate[2] - g->pad[2], sw = g->stride[2];            \
                if (sw == 1 && iw0 >= 0 && iw0 + g->out[2] <= g->in[2]) {                  \
                  const T *sr = srow + iw0; /* rows are short: a loop beats memcpy */      \
                  for (int64_t ow = 0; ow < g->out[2]; ow++) d[ow] = sr[ow];               \
                  continue;                                                                \
                }                                                                          \
                for (int64_t ow = 0; ow < g->out[2]; ow++) {                               \
                  int64_t iw = iw0 + ow * sw;                                              \
                  d[ow] = iw >= 0 && iw < g->in[2] ? srow[iw] : 0;                         \
                }                                                                          \
              }                                                                            \
            }                                                                              \
          }                                                                                \
  }                                                                                        \
  static void col2im_##S(const lmx_cpu_geom *g, int64_t C, const T *col, T *x, int64_t ld) {           \
    int64_t K = g->kernel[0] * g->kernel[1] * g->kernel[2];                                \
    for (int64_t c = 0; c < C; c++)                                                        \
      for (int64_t kd = 0; kd < g->kernel[0]; kd++)                                        \
        for (int64_t kh = 0; kh < g->kernel[1]; kh++)                                      \
          for (int64_t kw = 0; kw < g->kernel[2]; kw++) {                                  \
            int64_t row = c * K + (kd * g->kernel[1] + kh) * g->kernel[2] + kw;            \
            const T *src = col + row * ld;                                                 \
            T *dst = x + c * g->in[0] * g->in[1] * g->in[2];                               \
            for (int64_t od = 0; od < g->out[0]; od++) {                                   \
              int64_t id = od * g->stride[0] - g->pad[0] + kd * g->dilate[0];              \
              if (id < 0 || id >= g->in[0]) continue;                                      \
              for (int64_t oh = 0; oh < g->out[1]; oh++) {                                 \
                int64_t ih = oh * g->stride[1] - g->pad[1] + kh * g->dilate[1];            \
                if (ih < 0 || ih >= g->in[1]) continue;                                    \
                const T *s = src + (od * g->out[1] + oh) * g->out[2];                      \
                T *drow = dst + (id * g->in[1] + ih) * g->in[2];                           \
                int64_t iw0 = kw * g->dilate[2] - g->pad[2], sw = g->stride[2];            \
                if (sw == 1 && iw0 >= 0 && iw0 + g->out[2] <= g->in[2]) {                  \
                  T *dd = drow + iw0;                                                      \
                  for (int64_t ow = 0; ow < g->out[2]; ow++) dd[ow] += s[ow];              \
                  continue;                                                                \
                }                                                                          \
                int64_t lo = iw0 < 0 ? (-iw0 + sw - 1) / sw : 0, hi = g->out[2];           \
                int64_t lim = g->in[2] - 1 - iw0; /* last ow with iw < in: lim / sw */     \
                if (lim < 0) hi = 0;                                                       \
                else if (lim / sw + 1 < hi) hi = lim / sw + 1;                             \
                for (int64_t ow = lo; ow < hi; ow++) drow[iw0 + ow * sw] += s[ow];         \
              }                                                                            \
            }                                                                              \
          }                                                                                \
  }
DEF_IM2COL(float, f32)
DEF_IM2COL(double, f64)

int lmx_cpu_im2col(int dt, const lmx_cpu_geom *g, int64_t C, const void *x, void *col,
                   int64_t ld) {
  if (dt == LMX_FLOAT32) im2col_f32(g, C, x, col, ld);
  else if (dt == LMX_FLOAT64) im2col_f64(g, C, x, col, ld);
  else return -1;
  return 0;
}

int lmx_cpu_col2im(int dt, const lmx_cpu_geom *g, int64_t C, const void *col, void *x,
                   int64_t ld) {
  if (dt == LMX_FLOAT32) col2im_f32(g, C, col, x, ld);
  else if (dt == LMX_FLOAT64) col2im_f64(g, C, col, x, ld);
  else return -1;
  return 0;
}

/* ---- pooling ----------------------------------------------------------------------- */

typedef struct {
  int64_t s[3], e[3], size;
} pwin;

/* Window of output position (od, oh, ow), clipped to the input; size per MXNet. */
static void pool_window(const lmx_cpu_geom *g, const int64_t *o, int include_pad, pwin *w) {
  int64_t full = 1, in_range = 1;
  for (int i = 0; i < 3; i++) {
    int64_t s = o[i] * g->stride[i] - g->pad[i];
    int64_t e = s + g->kernel[i];
    if (e > g->in[i] + g->pad[i]) e = g->in[i] + g->pad[i];
    if (e < s) e = s; /* a 'full'-convention window past the padded end is empty */
    full *= e - s;
    w->s[i] = s < 0 ? 0 : s;
    w->e[i] = e > g->in[i] ? g->in[i] : e;
    in_range *= w->e[i] > w->s[i] ? w->e[i] - w->s[i] : 0;
  }
  w->size = include_pad ? full : in_range;
}

#define DEF_POOL(T, S)                                                                     \
  static T pool_one_##S(int type, int pv, const lmx_cpu_geom *g, const T *x, const pwin *w, \
                        int64_t *arg) {                                                    \
    T acc = type == LMX_POOL_MAX ? -INFINITY : 0;                                          \
    for (int64_t d = w->s[0]; d < w->e[0]; d++)                                            \
      for (int64_t h = w->s[1]; h < w->e[1]; h++)                                          \
        for (int64_t q = w->s[2]; q < w->e[2]; q++) {                                      \
          int64_t i = (d * g->in[1] + h) * g->in[2] + q;                                   \
          T v = x[i];                                                                      \
          if (type == LMX_POOL_MAX) {                                                      \
            if (v > acc || *arg < 0) acc = v, *arg = i;                                    \
          } else if (type == LMX_POOL_LP) {                                                \
            acc += pv == 1 ? fabs(v) : v * v;                                              \
          } else {                                                                         \
            acc += v;                                                                      \
          }                                                                                \
        }                                                                                  \
    if (type == LMX_POOL_AVG) acc = w->size > 0 ? acc / (T)w->size : 0;                    \
    if (type == LMX_POOL_LP && pv == 2) acc = sqrt(acc);                                   \
    return acc;                                                                            \
  }                                                                                        \
  static void pool_##S(int type, int pv, const lmx_cpu_geom *g, int include_pad,           \
                       int64_t planes, const T *x, T *y, int acc) {                        \
    int64_t I = g->in[0] * g->in[1] * g->in[2], O = g->out[0] * g->out[1] * g->out[2];     \
    LMX_PAR_FOR_W(planes, O * g->kernel[0] * g->kernel[1] * g->kernel[2], p, {             \
      for (int64_t j = 0; j < O; j++) {                                                    \
        int64_t o[3] = {j / (g->out[1] * g->out[2]), (j / g->out[2]) % g->out[1],          \
                        j % g->out[2]}, arg = -1;                                          \
        pwin w;                                                                            \
        pool_window(g, o, include_pad, &w);                                                \
        T v = pool_one_##S(type, pv, g, x + p * I, &w, &arg);                              \
        if (acc) y[p * O + j] += v;                                                        \
        else y[p * O + j] = v;                                                             \
      }                                                                                    \
    });                                                                                    \
  }                                                                                        \
  static void pool_bwd_##S(int type, int pv, const lmx_cpu_geom *g, int include_pad,       \
                           int64_t planes, T *gx, const T *gy, const T *x, const T *y) {   \
    int64_t I = g->in[0] * g->in[1] * g->in[2], O = g->out[0] * g->out[1] * g->out[2];     \
    LMX_PAR_FOR_W(planes, O * g->kernel[0] * g->kernel[1] * g->kernel[2], p, {             \
      const T *xp = x + p * I;                                                             \
      T *gp = gx + p * I;                                                                  \
      for (int64_t j = 0; j < O; j++) {                                                    \
        int64_t o[3] = {j / (g->out[1] * g->out[2]), (j / g->out[2]) % g->out[1],          \
                        j % g->out[2]}, arg = -1;                                          \
        pwin w;                                                                            \
        pool_window(g, o, include_pad, &w);                                                \
        T gv = gy[p * O + j];                                                              \
        if (type == LMX_POOL_MAX) {                                                        \
          pool_one_##S(type, pv, g, xp, &w, &arg);                                         \
          if (arg >= 0) gp[arg] += gv;                                                     \
          continue;                                                                        \
        }                                                                                  \
        T yv = y ? y[p * O + j] : 0;                                                       \
        T sc = type == LMX_POOL_AVG ? (w.size > 0 ? gv / (T)w.size : 0) : gv;              \
        for (int64_t d = w.s[0]; d < w.e[0]; d++)                                          \
          for (int64_t h = w.s[1]; h < w.e[1]; h++)                                        \
            for (int64_t q = w.s[2]; q < w.e[2]; q++) {                                    \
              int64_t i = (d * g->in[1] + h) * g->in[2] + q;                               \
              if (type != LMX_POOL_LP) gp[i] += sc;                                        \
              else if (pv == 1) gp[i] += xp[i] > 0 ? gv : xp[i] < 0 ? -gv : 0;             \
              else gp[i] += yv != 0 ? gv * xp[i] / yv : 0;                                 \
            }                                                                              \
      }                                                                                    \
    });                                                                                    \
  }
DEF_POOL(float, f32)
DEF_POOL(double, f64)

int lmx_cpu_pool(int type, int p_value, int dt, const lmx_cpu_geom *g, int include_pad,
                 int64_t planes, const void *x, void *y, int acc) {
  if (dt == LMX_FLOAT32) pool_f32(type, p_value, g, include_pad, planes, x, y, acc);
  else if (dt == LMX_FLOAT64) pool_f64(type, p_value, g, include_pad, planes, x, y, acc);
  else return -1;
  return 0;
}

int lmx_cpu_pool_bwd(int type, int p_value, int dt, const lmx_cpu_geom *g, int include_pad,
                     int64_t planes, void *gx, const void *gy, const void *x, const void *y) {
  if (dt == LMX_FLOAT32) pool_bwd_f32(type, p_value, g, include_pad, planes, gx, gy, x, y);
  else if (dt == LMX_FLOAT64) pool_bwd_f64(type, p_value, g, include_pad, planes, gx, gy, x, y);
  else return -1;
  return 0;
}
