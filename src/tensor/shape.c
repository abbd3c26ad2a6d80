/* shape.c — shape construction, printing and broadcasting (see shape.h). */
#include "shape.h"

#include <stdio.h>
#include <string.h>

#include "../core/status.h"

/* The product of the nonzero dims must stay under LMX_SHAPE_MAXSIZE: a zero dim makes the
 * size 0 but does not make the other dims safe, since reductions, slices and views drop
 * the zero dim and keep the rest. */
static int check_dims(const int64_t *dims, int ndim, const char *what) {
  int64_t nz = 1;
  for (int i = 0; i < ndim; i++) {
    if (dims[i] < 0)
      return lmx_fail(LMX_ERR_ARG, "%s: dim %d must be >= 0, got %lld", what, i + 1,
                      (long long)dims[i]);
    if (dims[i] == 0) continue;
    if (nz > LMX_SHAPE_MAXSIZE / dims[i])
      return lmx_fail(LMX_ERR_SHAPE, "%s: shape is too large (dim %d = %lld makes the product "
                      "of the nonzero dims exceed %lld)", what, i + 1, (long long)dims[i],
                      (long long)LMX_SHAPE_MAXSIZE);
    nz *= dims[i];
  }
  return LMX_OK;
}

int lmx_shape_make(lmx_shape *s, const int64_t *dims, int ndim, const char *what) {
  if (ndim < 0 || ndim > LMX_MAX_NDIM)
    return lmx_fail(LMX_ERR_ARG, "%s: ndim must be in 0..%d, got %d", what, LMX_MAX_NDIM, ndim);
  if (ndim > 0 && !dims) return lmx_fail(LMX_ERR_ARG, "%s: dims must not be NULL", what);
  LMX_TRY(check_dims(dims, ndim, what));
  s->ndim = ndim;
  memset(s->dim, 0, sizeof s->dim);
  for (int i = 0; i < ndim; i++) s->dim[i] = dims[i];
  return LMX_OK;
}

int lmx_shape_check(const lmx_shape *s, const char *what) {
  if (s->ndim < 0 || s->ndim > LMX_MAX_NDIM)
    return lmx_fail(LMX_ERR_SHAPE, "%s: ndim must be in 0..%d, got %d", what, LMX_MAX_NDIM,
                    s->ndim);
  return check_dims(s->dim, s->ndim, what);
}

int lmx_shape_mul(int64_t a, int64_t b, int64_t *out) {
  if (a < 0 || b < 0 || (a > 0 && b > LMX_SHAPE_MAXSIZE / a)) return 1;
  *out = a * b;
  return 0;
}

int64_t lmx_shape_size(const lmx_shape *s) {
  int64_t n = 1;
  for (int i = 0; i < s->ndim; i++)
    if (s->dim[i] == 0) return 0;
  for (int i = 0; i < s->ndim; i++)
    if (lmx_shape_mul(n, s->dim[i], &n)) return INT64_MAX; /* only for an unchecked shape */
  return n;
}

int lmx_shape_equal(const lmx_shape *a, const lmx_shape *b) {
  if (a->ndim != b->ndim) return 0;
  for (int i = 0; i < a->ndim; i++)
    if (a->dim[i] != b->dim[i]) return 0;
  return 1;
}

const char *lmx_shape_str(const lmx_shape *s, char *buf) {
  size_t at = 0;
  buf[at++] = '(';
  for (int i = 0; i < s->ndim && i < LMX_MAX_NDIM; i++)
    at += (size_t)snprintf(buf + at, LMX_SHAPE_STRCAP - at, i ? ",%lld" : "%lld",
                           (long long)s->dim[i]);
  if (s->ndim == 1) buf[at++] = ',';
  buf[at++] = ')';
  buf[at] = '\0';
  return buf;
}

int lmx_shape_broadcast(const lmx_shape *a, const lmx_shape *b, lmx_shape *out,
                        const char *what) {
  int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
  lmx_shape r = {nd, {0}};
  for (int i = 0; i < nd; i++) {
    int ia = i - (nd - a->ndim), ib = i - (nd - b->ndim);
    int64_t da = ia >= 0 ? a->dim[ia] : 1, db = ib >= 0 ? b->dim[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      char sa[LMX_SHAPE_STRCAP], sb[LMX_SHAPE_STRCAP];
      return lmx_fail(LMX_ERR_SHAPE, "%s: shapes %s and %s cannot be broadcast together", what,
                      lmx_shape_str(a, sa), lmx_shape_str(b, sb));
    }
    r.dim[i] = da == 1 ? db : da;
  }
  LMX_TRY(lmx_shape_check(&r, what));
  *out = r;
  return LMX_OK;
}
