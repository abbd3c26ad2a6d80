/* manip.c — CPU kernels of the tensor-manipulation operators that are not strided copies:
 * the ranges of _arange / _contrib_arange_like, pick (and its gradient) and cumsum (and
 * its gradient, the reverse scan). Values go through double (lmx_load_f64 /
 * lmx_store_f64), so every dtype is served by one loop; these ops move little data per
 * element. Index arrays of any dtype are truncated toward zero like a C cast. */
#include <math.h>

#include "../../src/tensor/dtype.h"
#include "cpu_kernels.h"
#include "cpu_par.h"

void lmx_cpu_range(int dt, int64_t n, void *y, double start, double step, int64_t repeat) {
  enum { CH = 256 };
  double buf[CH];
  int64_t es = lmx_dtype_size(dt);
  for (int64_t i0 = 0; i0 < n; i0 += CH) {
    int64_t m = n - i0 < CH ? n - i0 : CH;
    for (int64_t j = 0; j < m; j++) buf[j] = start + (double)((i0 + j) / repeat) * step;
    lmx_cpu_convert((char *)y + i0 * es, dt, buf, LMX_FLOAT64, m);
  }
}

/* index k of idx resolved into [0, A): clipped, or wrapped (Python's modulo) */
static int64_t pick_at(const void *idx, int idt, int64_t k, int64_t A, int wrap) {
  double v = lmx_load_f64(idx, idt, k);
  int64_t i = isfinite(v) && fabs(v) < 9.2e18 ? (int64_t)v : 0;
  if (i >= 0 && i < A) return i;
  if (wrap) return ((i % A) + A) % A;
  return i < 0 ? 0 : A - 1;
}

void lmx_cpu_pick(int dt, int idt, int64_t outer, int64_t A, int64_t inner, void *y,
                  const void *x, const void *idx, int wrap, int acc) {
  LMX_PAR_FOR(outer * inner, e, {
    int64_t o = e / inner, j = e % inner, i = pick_at(idx, idt, e, A, wrap);
    double v = lmx_load_f64(x, dt, (o * A + i) * inner + j);
    lmx_store_f64(y, dt, e, acc ? lmx_load_f64(y, dt, e) + v : v);
  });
}

void lmx_cpu_pick_bwd(int dt, int idt, int64_t outer, int64_t A, int64_t inner, void *gx,
                      const void *g, const void *idx, int wrap, int acc) {
  LMX_PAR_FOR(outer * A * inner, e, {
    int64_t j = e % inner, a = (e / inner) % A, o = e / (A * inner), r = o * inner + j;
    double v = pick_at(idx, idt, r, A, wrap) == a ? lmx_load_f64(g, dt, r) : 0.0;
    lmx_store_f64(gx, dt, e, acc ? lmx_load_f64(gx, dt, e) + v : v);
  });
}

void lmx_cpu_cumsum(int xdt, int ydt, int64_t outer, int64_t len, int64_t inner, void *y,
                    const void *x, int reverse, int acc) {
  LMX_PAR_FOR_W(outer * inner, len, c, {
    int64_t o = c / inner, j = c % inner;
    double s = 0;
    for (int64_t t = 0; t < len; t++) {
      int64_t e = (o * len + (reverse ? len - 1 - t : t)) * inner + j;
      s += lmx_load_f64(x, xdt, e);
      lmx_store_f64(y, ydt, e, acc ? lmx_load_f64(y, ydt, e) + s : s);
    }
  });
}

/* row r of the indexed dims for column y of idx[M, nY]: negatives count from the end,
 * then clipped into range (a kernel never reads out of bounds) */
static int64_t nd_row(const void *idx, int idt, int M, const int64_t *dims, int64_t nY,
                      int64_t y) {
  int64_t r = 0;
  for (int k = 0; k < M; k++) {
    double v = lmx_load_f64(idx, idt, k * nY + y);
    int64_t i = isfinite(v) && fabs(v) < 9.2e18 ? (int64_t)v : 0;
    if (i < 0) i += dims[k];
    i = i < 0 ? 0 : i >= dims[k] ? dims[k] - 1 : i;
    r = r * dims[k] + i;
  }
  return r;
}

void lmx_cpu_gather_nd(int dt, int idt, int M, const int64_t *dims, int64_t nY, int64_t inner,
                       void *y, const void *data, const void *idx, int acc) {
  LMX_PAR_FOR(nY * inner, e, {
    int64_t c = e / inner, j = e % inner, r = nd_row(idx, idt, M, dims, nY, c);
    double v = lmx_load_f64(data, dt, r * inner + j);
    lmx_store_f64(y, dt, e, acc ? lmx_load_f64(y, dt, e) + v : v);
  });
}

void lmx_cpu_scatter_nd(int dt, int idt, int M, const int64_t *dims, int64_t nY, int64_t inner,
                        void *out, const void *src, const void *idx, int add, int acc) {
  int64_t rows = 1;
  for (int k = 0; k < M; k++) rows *= dims[k];
  LMX_PAR_FOR_W(rows * inner, nY, e, {
    int64_t r = e / inner, j = e % inner;
    double v = 0;
    for (int64_t c = 0; c < nY; c++)
      if (nd_row(idx, idt, M, dims, nY, c) == r) {
        double s = lmx_load_f64(src, dt, c * inner + j);
        v = add ? v + s : s;
      }
    lmx_store_f64(out, dt, e, acc ? lmx_load_f64(out, dt, e) + v : v);
  });
}
