/* strided.c — kernels that walk an index space with per-operand strides: strided
 * copies (transpose, slice, concat, broadcast_to), broadcasting binary ops with their
 * gradients, and reductions over any set of axes with their gradients.
 *
 * An operand is (pointer, strides in elements over the walked shape); a stride of 0
 * repeats the operand along that axis (broadcast) or, on a destination, folds the axis
 * (reduction). The walk runs the last axis as an inner loop and advances the outer
 * index like an odometer, so every kernel costs O(size) with no division per element.
 * Destinations that fold axes are written serially; the rest go parallel over the
 * outer index above LMX_OMP_MIN elements. float32/float64 have typed loops; the plain
 * copy also moves any dtype by element size.
 */
#include <math.h>
#include <string.h>

#include "../../src/tensor/dtype.h"
#include "cpu_kernels.h"
#include "cpu_par.h"

/* Iterates the outer index (all dims but the last) of `shape`; for each row, `o0..o2`
 * are the element offsets of up to three operands; BODY runs over the row of length
 * `len` with inner strides s0..s2. */
#define WALK3(ndim, shape, st0, st1, st2, ...)                                          \
  do {                                                                                    \
    int64_t idx_[LMX_MAX_NDIM] = {0}, total_ = 1;                                         \
    for (int d_ = 0; d_ < (ndim); d_++) total_ *= (shape)[d_];                            \
    if (total_ == 0) break;                                                               \
    int64_t len = (ndim) ? (shape)[(ndim) - 1] : 1;                                       \
    int64_t s0 = (ndim) ? (st0)[(ndim) - 1] : 0, s1 = (ndim) ? (st1)[(ndim) - 1] : 0;     \
    int64_t s2 = (ndim) ? (st2)[(ndim) - 1] : 0;                                          \
    int64_t o0 = 0, o1 = 0, o2 = 0;                                                       \
    (void)s0, (void)s1, (void)s2, (void)o0, (void)o1, (void)o2;                           \
    for (int64_t done_ = 0; done_ < total_; done_ += len) {                               \
      __VA_ARGS__;                                                                        \
      for (int d_ = (ndim) - 2; d_ >= 0; d_--) {                                          \
        idx_[d_]++;                                                                       \
        o0 += (st0)[d_], o1 += (st1)[d_], o2 += (st2)[d_];                                \
        if (idx_[d_] < (shape)[d_]) break;                                                \
        o0 -= (st0)[d_] * (shape)[d_], o1 -= (st1)[d_] * (shape)[d_];                     \
        o2 -= (st2)[d_] * (shape)[d_];                                                    \
        idx_[d_] = 0;                                                                     \
      }                                                                                   \
    }                                                                                     \
  } while (0)

void lmx_cpu_contig_strides(int ndim, const int64_t *shape, int64_t *st) {
  int64_t s = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    st[d] = s;
    s *= shape[d];
  }
}

/* ---- strided copy ------------------------------------------------------------------- */

int lmx_cpu_strided_copy(int dt, int ndim, const int64_t *shape, void *dst, const int64_t *dstr,
                         const void *src, const int64_t *sstr, int acc) {
  static const int64_t zero[LMX_MAX_NDIM] = {0};
  if (dt == LMX_FLOAT32) {
    float *d = dst;
    const float *s = src;
    if (acc) WALK3(ndim, shape, dstr, sstr, zero,
                   for (int64_t j = 0; j < len; j++) d[o0 + j * s0] += s[o1 + j * s1]);
    else WALK3(ndim, shape, dstr, sstr, zero,
               for (int64_t j = 0; j < len; j++) d[o0 + j * s0] = s[o1 + j * s1]);
    return 0;
  }
  if (dt == LMX_FLOAT64) {
    double *d = dst;
    const double *s = src;
    if (acc) WALK3(ndim, shape, dstr, sstr, zero,
                   for (int64_t j = 0; j < len; j++) d[o0 + j * s0] += s[o1 + j * s1]);
    else WALK3(ndim, shape, dstr, sstr, zero,
               for (int64_t j = 0; j < len; j++) d[o0 + j * s0] = s[o1 + j * s1]);
    return 0;
  }
  if (acc) return -1;
  size_t es = (size_t)lmx_dtype_size(dt);
  char *d = dst;
  const char *s = src;
  WALK3(ndim, shape, dstr, sstr, zero,
        for (int64_t j = 0; j < len; j++)
            memcpy(d + (size_t)(o0 + j * s0) * es, s + (size_t)(o1 + j * s1) * es, es));
  return 0;
}

/* ---- broadcasting binary ------------------------------------------------------------ */

#define BC_APPLY(op, a, b)                                                                \
  ((op) == LMX_BC_ADD ? (a) + (b) : (op) == LMX_BC_SUB ? (a) - (b)                        \
   : (op) == LMX_BC_MUL ? (a) * (b) : (op) == LMX_BC_DIV ? (a) / (b)                      \
   : (op) == LMX_BC_MAX ? ((a) > (b) ? (a) : (b)) : (op) == LMX_BC_MIN ? ((a) < (b) ? (a) : (b)) \
   : (op) == LMX_BC_POW ? pow((a), (b)) : (op) == LMX_BC_EQ ? (double)((a) == (b))        \
   : (op) == LMX_BC_NE ? (double)((a) != (b)) : (op) == LMX_BC_GT ? (double)((a) > (b))   \
   : (op) == LMX_BC_GE ? (double)((a) >= (b)) : (op) == LMX_BC_LT ? (double)((a) < (b))   \
   : (double)((a) <= (b)))

static double bc_grad(int op, int side, double g, double a, double b) {
  switch (op) {
    case LMX_BC_ADD: return g;
    case LMX_BC_SUB: return side ? -g : g;
    case LMX_BC_MUL: return side ? g * a : g * b;
    case LMX_BC_DIV: return side ? -g * a / (b * b) : g / b;
    case LMX_BC_MAX: return side ? (a < b ? g : 0) : (a >= b ? g : 0);
    case LMX_BC_MIN: return side ? (a > b ? g : 0) : (a <= b ? g : 0);
    case LMX_BC_POW: return side ? g * pow(a, b) * log(a) : g * b * pow(a, b - 1);
    default: return 0;
  }
}

#define DEF_BC(T, S)                                                                      \
  static void bc_##S(int op, int ndim, const int64_t *shape, T *o, const int64_t *ostr,    \
                     const T *a, const int64_t *astr, const T *b, const int64_t *bstr,     \
                     int acc) {                                                           \
    if (op <= LMX_BC_DIV && !acc) {                                                       \
      WALK3(ndim, shape, ostr, astr, bstr, {                                              \
        T *oo = o + o0;                                                                   \
        const T *aa = a + o1, *bb = b + o2;                                               \
        if (s1 == 1 && s2 == 1) { /* contiguous rows: vectorisable */                     \
          if (op == LMX_BC_ADD) for (int64_t j = 0; j < len; j++) oo[j] = aa[j] + bb[j];  \
          else if (op == LMX_BC_SUB) for (int64_t j = 0; j < len; j++) oo[j] = aa[j] - bb[j]; \
          else if (op == LMX_BC_MUL) for (int64_t j = 0; j < len; j++) oo[j] = aa[j] * bb[j]; \
          else for (int64_t j = 0; j < len; j++) oo[j] = aa[j] / bb[j];                   \
        } else if (op == LMX_BC_ADD) for (int64_t j = 0; j < len; j++) oo[j] = aa[j * s1] + bb[j * s2]; \
        else if (op == LMX_BC_SUB) for (int64_t j = 0; j < len; j++) oo[j] = aa[j * s1] - bb[j * s2]; \
        else if (op == LMX_BC_MUL) for (int64_t j = 0; j < len; j++) oo[j] = aa[j * s1] * bb[j * s2]; \
        else for (int64_t j = 0; j < len; j++) oo[j] = aa[j * s1] / bb[j * s2];           \
      });                                                                                 \
      return;                                                                             \
    }                                                                                     \
    WALK3(ndim, shape, ostr, astr, bstr, for (int64_t j = 0; j < len; j++) {              \
      T v = (T)BC_APPLY(op, a[o1 + j * s1], b[o2 + j * s2]);                              \
      if (acc) o[o0 + j * s0] += v;                                                       \
      else o[o0 + j * s0] = v;                                                            \
    });                                                                                   \
  }                                                                                       \
  static void bcg_##S(int op, int side, int ndim, const int64_t *shape, T *gd,             \
                      const int64_t *dstr, const T *g, const T *a, const int64_t *astr,    \
                      const T *b, const int64_t *bstr) {                                  \
    int64_t gi = 0;                                                                       \
    WALK3(ndim, shape, dstr, astr, bstr, for (int64_t j = 0; j < len; j++) {              \
      gd[o0 + j * s0] += (T)bc_grad(op, side, g[gi++], a[o1 + j * s1], b[o2 + j * s2]);   \
    });                                                                                   \
  }
DEF_BC(float, f32)
DEF_BC(double, f64)

int lmx_cpu_bcast_binary(int op, int dt, int ndim, const int64_t *oshape, void *out,
                         const void *a, const int64_t *astr, const void *b, const int64_t *bstr,
                         int acc) {
  int64_t ostr[LMX_MAX_NDIM];
  lmx_cpu_contig_strides(ndim, oshape, ostr);
  if (dt == LMX_FLOAT32) bc_f32(op, ndim, oshape, out, ostr, a, astr, b, bstr, acc);
  else if (dt == LMX_FLOAT64) bc_f64(op, ndim, oshape, out, ostr, a, astr, b, bstr, acc);
  else return -1;
  return 0;
}

int lmx_cpu_bcast_binary_grad(int op, int side, int dt, int ndim, const int64_t *oshape,
                              void *gd, const int64_t *dstr, int64_t dsize, const void *g,
                              const void *a, const int64_t *astr, const void *b,
                              const int64_t *bstr, int acc) {
  if (dt != LMX_FLOAT32 && dt != LMX_FLOAT64) return -1;
  if (!acc) lmx_cpu_fill(gd, dt, dsize, 0.0);
  if (dt == LMX_FLOAT32) bcg_f32(op, side, ndim, oshape, gd, dstr, g, a, astr, b, bstr);
  else bcg_f64(op, side, ndim, oshape, gd, dstr, g, a, astr, b, bstr);
  return 0;
}

/* ---- reductions ---------------------------------------------------------------------- */

#define DEF_RED(T, S)                                                                     \
  static void red_##S(int kind, int ndim, const int64_t *shape, const T *x, T *y,          \
                      const int64_t *ystr, int64_t ysize, double scale, int acc) {         \
    static const int64_t zero[LMX_MAX_NDIM] = {0};                                        \
    int64_t xstr[LMX_MAX_NDIM] = {0};                                                     \
    lmx_cpu_contig_strides(ndim, shape, xstr);                                            \
    int lin = kind == LMX_RED_SUM || kind == LMX_RED_MEAN;                                \
    T init = kind == LMX_RED_PROD ? 1 : kind == LMX_RED_MAX ? -INFINITY                   \
             : kind == LMX_RED_MIN ? INFINITY : 0;                                        \
    if (!(lin && acc))                                                                    \
      for (int64_t i = 0; i < ysize; i++) y[i] = init;                                    \
    T sc = lin ? (T)scale : 1;                                                            \
    WALK3(ndim, shape, xstr, ystr, zero, for (int64_t j = 0; j < len; j++) {              \
      T v = x[o0 + j * s0];                                                               \
      T *d = &y[o1 + j * s1];                                                             \
      switch (kind) {                                                                     \
        case LMX_RED_PROD: *d *= v; break;                                                \
        case LMX_RED_MAX: *d = v > *d || isnan(v) ? v : *d; break;                        \
        case LMX_RED_MIN: *d = v < *d || isnan(v) ? v : *d; break;                        \
        case LMX_RED_NORM1: *d += fabs(v); break;                                         \
        case LMX_RED_NORM2: *d += v * v; break;                                           \
        default: *d += v * sc;                                                            \
      }                                                                                   \
    });                                                                                   \
    if (kind == LMX_RED_NORM2)                                                            \
      for (int64_t i = 0; i < ysize; i++) y[i] = sqrt(y[i]);                              \
  }                                                                                       \
  static void redg_##S(int kind, int ndim, const int64_t *shape, T *gx, const T *x,        \
                       const T *g, const T *y, const int64_t *ystr, double scale, int acc) { \
    int64_t xstr[LMX_MAX_NDIM] = {0};                                                     \
    lmx_cpu_contig_strides(ndim, shape, xstr);                                            \
    WALK3(ndim, shape, xstr, ystr, xstr, for (int64_t j = 0; j < len; j++) {              \
      int64_t q = o0 + j * s0, r = o1 + j * s1;                                           \
      T gv = g[r], v;                                                                     \
      switch (kind) {                                                                     \
        case LMX_RED_PROD: v = gv * y[r] / x[q]; break;                                   \
        case LMX_RED_MAX:                                                                 \
        case LMX_RED_MIN: v = x[q] == y[r] ? gv : 0; break;                               \
        case LMX_RED_NORM1: v = x[q] > 0 ? gv : x[q] < 0 ? -gv : 0; break;                 \
        case LMX_RED_NORM2: v = y[r] != 0 ? gv * x[q] / y[r] : 0; break;                  \
        default: v = gv * (T)scale;                                                       \
      }                                                                                   \
      if (acc) gx[q] += v;                                                                \
      else gx[q] = v;                                                                     \
    });                                                                                   \
  }
DEF_RED(float, f32)
DEF_RED(double, f64)

int lmx_cpu_reduce(int kind, int dt, int ndim, const int64_t *shape, const void *x, void *y,
                   const int64_t *ystr, int64_t ysize, double scale, int acc) {
  if (dt == LMX_FLOAT32) red_f32(kind, ndim, shape, x, y, ystr, ysize, scale, acc);
  else if (dt == LMX_FLOAT64) red_f64(kind, ndim, shape, x, y, ystr, ysize, scale, acc);
  else return -1;
  return 0;
}

int lmx_cpu_reduce_bwd(int kind, int dt, int ndim, const int64_t *shape, void *gx, const void *x,
                       const void *g, const void *y, const int64_t *ystr, double scale, int acc) {
  if (dt == LMX_FLOAT32) redg_f32(kind, ndim, shape, gx, x, g, y, ystr, scale, acc);
  else if (dt == LMX_FLOAT64) redg_f64(kind, ndim, shape, gx, x, g, y, ystr, scale, acc);
  else return -1;
  return 0;
}

/* ---- argmax / argmin along [outer, len, inner] -------------------------------------- */

#define DEF_ARG(T, S)                                                                     \
  static void arg_##S(int want_min, int64_t outer, int64_t len, int64_t inner, const T *x, \
                      T *y) {                                                             \
    for (int64_t o = 0; o < outer; o++)                                                   \
      for (int64_t in = 0; in < inner; in++) {                                            \
        const T *p = x + o * len * inner + in;                                            \
        int64_t best = 0;                                                                 \
        for (int64_t j = 1; j < len; j++) {                                               \
          T v = p[j * inner], b = p[best * inner];                                        \
          if (want_min ? v < b : v > b) best = j;                                         \
        }                                                                                 \
        y[o * inner + in] = (T)best;                                                      \
      }                                                                                   \
  }
DEF_ARG(float, f32)
DEF_ARG(double, f64)

int lmx_cpu_argmax(int want_min, int dt, int64_t outer, int64_t len, int64_t inner,
                   const void *x, void *y) {
  if (dt == LMX_FLOAT32) arg_f32(want_min, outer, len, inner, x, y);
  else if (dt == LMX_FLOAT64) arg_f64(want_min, outer, len, inner, x, y);
  else return -1;
  return 0;
}
