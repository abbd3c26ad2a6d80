/* glue.c — the device-neutral checks every backend's glue makes (see glue.h). */
#include "glue.h"

#include "../core/status.h"
#include "../tensor/dtype.h"
#include "op_impl.h"

int64_t lmx_glue_size(const lmx_tensor *t) { return lmx_shape_size(&t->shape); }

int lmx_glue_check_size(const lmx_op_ctx *c, const lmx_tensor *t, int64_t n, const char *what) {
  if (!t->data && n > 0)
    return lmx_op_fail(c, LMX_ERR_ARG, "%s: no data given (expected %lld elements)", what,
                       (long long)n);
  int64_t have = lmx_glue_size(t);
  if (have != n)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "%s: expected %lld elements, got %lld", what,
                       (long long)n, (long long)have);
  return LMX_OK;
}

int lmx_glue_check_like(const lmx_op_ctx *c, const lmx_tensor *t, const lmx_shape *s,
                        int dtype, const char *what) {
  if (t->dtype != dtype)
    return lmx_op_fail(c, LMX_ERR_DTYPE, "%s: expected %s, got %s", what, lmx_dtype_str(dtype),
                       lmx_dtype_str(t->dtype));
  if (!lmx_shape_equal(&t->shape, s)) {
    char a[LMX_SHAPE_STRCAP], b[LMX_SHAPE_STRCAP];
    return lmx_op_fail(c, LMX_ERR_SHAPE, "%s: expected shape %s, got %s", what,
                       lmx_shape_str(s, a), lmx_shape_str(&t->shape, b));
  }
  if (!t->data && lmx_shape_size(s) > 0)
    return lmx_op_fail(c, LMX_ERR_ARG, "%s: no data given", what);
  return LMX_OK;
}

int lmx_glue_check_ws(const lmx_op_ctx *c, size_t bytes) {
  if (bytes && (!c->workspace || c->workspace_bytes < bytes))
    return lmx_op_fail(c, LMX_ERR_ARG, "workspace: expected at least %zu bytes, got %zu", bytes,
                       c->workspace ? c->workspace_bytes : (size_t)0);
  return LMX_OK;
}

int64_t lmx_glue_outer(const lmx_shape *s, int axis) {
  int64_t n = 1;
  for (int i = 0; i < axis && i < s->ndim; i++) n *= s->dim[i];
  return n;
}

int64_t lmx_glue_inner(const lmx_shape *s, int axis) {
  int64_t n = 1;
  for (int i = axis + 1; i < s->ndim; i++) n *= s->dim[i];
  return n;
}
