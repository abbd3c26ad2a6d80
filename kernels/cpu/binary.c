/* binary.c — elementwise binary ops with broadcasting, and scalar ops.
 *
 * Broadcasting walks the output in C order; the innermost dim runs one of three loops
 * (both contiguous, a scalar-broadcast, b scalar-broadcast). Outer dims use strides
 * that are 0 where an input is broadcast. float32/float64 have typed loops the compiler
 * vectorises; other dtypes go through doubles.
 */
#include <math.h>

#include "../../src/tensor/dtype.h"
#include "cpu_kernels.h"

#define APPLY(op, x, y)                                                                   \
  ((op) == LMX_BIN_ADD   ? (x) + (y)                                                      \
   : (op) == LMX_BIN_SUB ? (x) - (y)                                                      \
   : (op) == LMX_BIN_MUL ? (x) * (y)                                                      \
   : (op) == LMX_BIN_DIV ? (x) / (y)                                                      \
   : (op) == LMX_BIN_MAX ? ((x) > (y) ? (x) : (y))                                        \
   : (op) == LMX_BIN_MIN ? ((x) < (y) ? (x) : (y))                                        \
                         : 0)

#define DEFINE_ROW(T, POWF)                                                               \
  static void row_##T(int op, int64_t n, T *o, const T *a, int64_t sa, const T *b,         \
                      int64_t sb) {                                                       \
    if (op == LMX_BIN_POW) {                                                              \
      for (int64_t i = 0; i < n; i++) o[i] = POWF(a[i * sa], b[i * sb]);                  \
      return;                                                                             \
    }                                                                                     \
    if (sa == 1 && sb == 1) {                                                             \
      switch (op) {                                                                       \
        case LMX_BIN_ADD: for (int64_t i = 0; i < n; i++) o[i] = a[i] + b[i]; return;     \
        case LMX_BIN_SUB: for (int64_t i = 0; i < n; i++) o[i] = a[i] - b[i]; return;     \
        case LMX_BIN_MUL: for (int64_t i = 0; i < n; i++) o[i] = a[i] * b[i]; return;     \
        case LMX_BIN_DIV: for (int64_t i = 0; i < n; i++) o[i] = a[i] / b[i]; return;     \
        default: break;                                                                   \
      }                                                                                   \
    }                                                                                     \
    for (int64_t i = 0; i < n; i++) o[i] = APPLY(op, a[i * sa], b[i * sb]);               \
  }

DEFINE_ROW(float, powf)
DEFINE_ROW(double, pow)

static double apply_d(int op, double x, double y) {
  return op == LMX_BIN_POW ? pow(x, y) : APPLY(op, x, y);
}

static void row_generic(int op, int dt, int64_t n, void *o, int64_t oo, const void *a,
                        int64_t ao, int64_t sa, const void *b, int64_t bo, int64_t sb) {
  for (int64_t i = 0; i < n; i++) {
    double x = lmx_load_f64(a, dt, ao + i * sa), y = lmx_load_f64(b, dt, bo + i * sb);
    lmx_store_f64(o, dt, oo + i, apply_d(op, x, y));
  }
}

void lmx_cpu_binary(int op, int dt, int ndim, const int64_t *oshape, void *out,
                    const int64_t *ashape, const void *a, const int64_t *bshape, const void *b) {
  int64_t astr[LMX_MAX_NDIM], bstr[LMX_MAX_NDIM], idx[LMX_MAX_NDIM] = {0};
  int64_t as = 1, bs = 1, total = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    astr[d] = ashape[d] == 1 ? 0 : as;
    bstr[d] = bshape[d] == 1 ? 0 : bs;
    as *= ashape[d];
    bs *= bshape[d];
    total *= oshape[d];
  }
  if (total == 0) return;
  int64_t inner = ndim ? oshape[ndim - 1] : 1;
  int64_t sa = ndim ? astr[ndim - 1] : 0, sb = ndim ? bstr[ndim - 1] : 0;
  if (ndim == 0) sa = sb = 1;
  int64_t ao = 0, bo = 0;
  for (int64_t oo = 0; oo < total; oo += inner) {
    if (dt == LMX_FLOAT32)
      row_float(op, inner, (float *)out + oo, (const float *)a + ao, sa, (const float *)b + bo, sb);
    else if (dt == LMX_FLOAT64)
      row_double(op, inner, (double *)out + oo, (const double *)a + ao, sa,
                 (const double *)b + bo, sb);
    else
      row_generic(op, dt, inner, out, oo, a, ao, sa, b, bo, sb);
    /* advance the outer index (all dims but the last) */
    for (int d = ndim - 2; d >= 0; d--) {
      idx[d]++;
      ao += astr[d];
      bo += bstr[d];
      if (idx[d] < oshape[d]) break;
      ao -= astr[d] * oshape[d];
      bo -= bstr[d] * oshape[d];
      idx[d] = 0;
    }
  }
}

void lmx_cpu_scalar(int op, int dt, int64_t n, void *out, const void *a, double s, int reverse) {
  if (dt == LMX_FLOAT32) {
    float v = (float)s, *o = out;
    const float *x = a;
    if (reverse) row_float(op, n, o, &v, 0, x, 1);
    else row_float(op, n, o, x, 1, &v, 0);
  } else if (dt == LMX_FLOAT64) {
    double *o = out;
    const double *x = a;
    if (reverse) row_double(op, n, o, &s, 0, x, 1);
    else row_double(op, n, o, x, 1, &s, 0);
  } else {
    for (int64_t i = 0; i < n; i++) {
      double x = lmx_load_f64(a, dt, i);
      lmx_store_f64(out, dt, i, reverse ? apply_d(op, s, x) : apply_d(op, x, s));
    }
  }
}
