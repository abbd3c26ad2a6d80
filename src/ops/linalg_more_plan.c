/* linalg_more_plan.c — the batch-of-matrices plan of _linalg_gemm / _linalg_gemm2, shared
 * by the CPU and the CUDA glue (linalg_more_plan.h). */
#include "linalg_more_plan.h"

#include "op_impl.h"

int lmx_plan_la_gemm(const lmx_op_ctx *c, const lmx_shape *a, const lmx_shape *b,
                     lmx_la_gemm_plan *p) {
  const lmx_la_gemm_param *q = c->param;
  int nd = a->ndim;
  if (nd < 2)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'A': expected at least 2-D, got %d-D", nd);
  if (b->ndim != nd)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'B': expected %d-D like 'A', got %d-D", nd,
                       b->ndim);
  int64_t ax = q->axis < 0 ? q->axis + nd : q->axis;
  if (ax < 0 || ax >= nd - 1)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'axis': expected an axis in [%d, %d) that "
                       "is not the last, got %lld", -nd, nd - 1, (long long)q->axis);
  p->axis = (int)ax;
  p->outer = p->mid = 1;
  for (int i = 0; i < nd - 1; i++) {
    if (i == ax) continue;
    if (a->dim[i] != b->dim[i])
      return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'B': expected dim %d to be %lld like 'A' "
                         "(batch dims agree), got %lld", i, (long long)a->dim[i],
                         (long long)b->dim[i]);
    if (i < ax) p->outer *= a->dim[i];
    else p->mid *= a->dim[i];
  }
  p->ar = a->dim[ax], p->ac = a->dim[nd - 1];
  p->br = b->dim[ax], p->bc = b->dim[nd - 1];
  p->m = q->transpose_a ? p->ac : p->ar;
  p->k = q->transpose_a ? p->ar : p->ac;
  int64_t kb = q->transpose_b ? p->bc : p->br;
  p->n = q->transpose_b ? p->br : p->bc;
  if (kb != p->k)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'B': expected %lld %s (the inner dim of "
                       "op(A)), got %lld", (long long)p->k, q->transpose_b ? "columns" : "rows",
                       (long long)kb);
  return LMX_OK;
}

lmx_shape lmx_plan_la_gemm_out(const lmx_shape *a, const lmx_la_gemm_plan *p) {
  lmx_shape o = *a;
  o.dim[p->axis] = p->m;
  o.dim[a->ndim - 1] = p->n;
  return o;
}
