/* linalg_blas_plan.c — shapes of potrf, potri, trmm, trsm and syrk (linalg_blas_plan.h);
 * MXNet 1.9 la_op.h: LaTriangMatrixMultOpShape, LaSyrkShape, the square-matrix rule. */
#include "linalg_blas_plan.h"

#include "op_impl.h"

static int64_t lead(const lmx_shape *s) {
  int64_t b = 1;
  for (int i = 0; i < s->ndim - 2; i++) b *= s->dim[i];
  return b;
}

int lmx_la_blas_plan_make(const lmx_op_ctx *c, int kind, const lmx_shape *in,
                          lmx_la_blas_plan *p) {
  memset(p, 0, sizeof *p);
  const lmx_shape *a = &in[0];
  int nd = a->ndim;
  if (nd < 2)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'A': expected a tensor of matrices (at "
                       "least 2-D), got %d-D", nd);
  int64_t r = a->dim[nd - 2], q = a->dim[nd - 1];
  p->batch = lead(a);
  if (kind == LMX_LA_SYRK) {
    const lmx_la_syrk_param *s = c->param;
    p->m = r, p->k = q;
    p->n = s->transpose ? q : r;
    p->out = *a;
    p->out.dim[nd - 2] = p->out.dim[nd - 1] = p->n;
    return LMX_OK;
  }
  if (r != q)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'A': expected square matrices in the last "
                       "two dims, got %lld x %lld", (long long)r, (long long)q);
  p->n = r;
  p->out = *a;
  if (kind == LMX_LA_POTRF || kind == LMX_LA_POTRI) return LMX_OK;
  const lmx_la_trmm_param *t = c->param;
  const lmx_shape *b = &in[1];
  if (b->ndim != nd)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'B': expected %d-D like 'A', got %d-D", nd,
                       b->ndim);
  for (int i = 0; i < nd - 2; i++)
    if (b->dim[i] != a->dim[i])
      return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'B': expected dim %d to be %lld like 'A' "
                         "(batch dims agree), got %lld", i, (long long)a->dim[i],
                         (long long)b->dim[i]);
  p->m = b->dim[nd - 2], p->k = b->dim[nd - 1];
  int64_t inner = t->rightside ? p->k : p->m;
  if (inner != r)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'B': expected %lld %s (the size of 'A'), got "
                       "%lld", (long long)r, t->rightside ? "columns" : "rows",
                       (long long)inner);
  p->out = *b;
  return LMX_OK;
}
