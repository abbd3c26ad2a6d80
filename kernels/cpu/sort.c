/* sort.c — CPU kernels of topk, sort and argsort (src/ops/sort.c) and of the values'
 * gradient. Each row of x[outer, n, inner] is sorted as (key, index) pairs with qsort, the
 * index breaking ties, so equal values keep their original order (the lower index first)
 * in both directions; NaNs come after every number in both orders. Values go
 * through double (lmx_load_f64 / lmx_store_f64), so one loop serves every dtype; rows run
 * in parallel, each with its own buffer. */
#include <math.h>
#include <stdlib.h>

#include "../../src/tensor/dtype.h"
#include "cpu_kernels.h"
#include "cpu_par.h"

typedef struct {
  double key;
  int64_t i;
} kv;

/* ascending by key, NaN last, then by index */
static int cmp_kv(const void *pa, const void *pb) {
  const kv *a = pa, *b = pb;
  int na = isnan(a->key), nb = isnan(b->key);
  if (na != nb) return na - nb;
  if (!na && a->key != b->key) return a->key < b->key ? -1 : 1;
  return (a->i > b->i) - (a->i < b->i);
}

/* r's row sorted into buf[0, n): keys negated for descending order (ties stay by index) */
static void sort_row(int dt, const void *x, int64_t n, int64_t inner, int64_t r, int asc,
                     kv *buf) {
  int64_t o = r / inner, j = r % inner;
  for (int64_t t = 0; t < n; t++) {
    double v = lmx_load_f64(x, dt, (o * n + t) * inner + j);
    buf[t].key = asc || isnan(v) ? v : -v, buf[t].i = t;
  }
  qsort(buf, (size_t)n, sizeof *buf, cmp_kv);
}

enum { STACK_N = 64 };

int lmx_cpu_topk(int dt, int idt, int64_t outer, int64_t n, int64_t inner, int64_t k, int asc,
                 const void *x, void *val, void *idx, void *mask, int acc) {
  int bad = 0;
  LMX_PAR_FOR_W(outer * inner, n * 8, r, {
    kv st[STACK_N], *buf = n <= STACK_N ? st : malloc((size_t)n * sizeof *buf);
    if (!buf) {
      bad = 1;
      continue;
    }
    sort_row(dt, x, n, inner, r, asc, buf);
    int64_t o = r / inner, j = r % inner;
    for (int64_t t = 0; t < k; t++) {
      int64_t e = (o * k + t) * inner + j, src = (o * n + buf[t].i) * inner + j;
      if (val) {
        double v = lmx_load_f64(x, dt, src);
        lmx_store_f64(val, dt, e, acc ? lmx_load_f64(val, dt, e) + v : v);
      }
      if (idx) lmx_store_f64(idx, idt, e, (double)buf[t].i);
    }
    if (mask) {
      for (int64_t t = 0; t < n; t++) lmx_store_f64(mask, dt, (o * n + t) * inner + j, 0.0);
      for (int64_t t = 0; t < k; t++) lmx_store_f64(mask, dt, (o * n + buf[t].i) * inner + j, 1.0);
    }
    if (buf != st) free(buf);
  });
  return bad ? -1 : 0;
}

int lmx_cpu_topk_bwd(int dt, int64_t outer, int64_t n, int64_t inner, int64_t k, int asc,
                     const void *x, void *gx, const void *g, int acc) {
  int bad = 0;
  LMX_PAR_FOR_W(outer * inner, n * 8, r, {
    kv st[STACK_N], *buf = n <= STACK_N ? st : malloc((size_t)n * sizeof *buf);
    if (!buf) {
      bad = 1;
      continue;
    }
    sort_row(dt, x, n, inner, r, asc, buf);
    int64_t o = r / inner, j = r % inner;
    for (int64_t t = 0; t < n; t++) {
      int64_t e = (o * n + buf[t].i) * inner + j;
      double v = t < k ? lmx_load_f64(g, dt, (o * k + t) * inner + j) : 0.0;
      lmx_store_f64(gx, dt, e, acc ? lmx_load_f64(gx, dt, e) + v : v);
    }
    if (buf != st) free(buf);
  });
  return bad ? -1 : 0;
}
