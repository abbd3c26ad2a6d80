/* linalg_more_plan.c — the batch-of-matrices plan of _linalg_gemm / _linalg_gemm2 and the
 * Khatri-Rao factors of khatri_rao, shared by the CPU and the CUDA glue
 * (linalg_more_plan.h). */
#include "linalg_more_plan.h"

#include "glue.h"
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

int lmx_kr_setup(const lmx_op_ctx *c, const lmx_tensor *in, int n, lmx_kr_args *a,
                 lmx_shape *os) {
  if (n < 1 || n > LMX_KR_MAX)
    return lmx_op_fail(c, LMX_ERR_ARG, "expected 1 to %d input matrices, got %d", LMX_KR_MAX, n);
  a->n = n;
  int64_t rows = 1;
  for (int i = 0; i < n; i++) {
    char nm[48], what[64];
    snprintf(what, sizeof what, "input '%s'", lmx_op_in_name(c, i, nm, sizeof nm));
    if (in[i].shape.ndim != 2)
      return lmx_op_fail(c, LMX_ERR_SHAPE, "%s: expected a 2-D matrix, got %d-D", what,
                         in[i].shape.ndim);
    if (i == 0) a->N = in[0].shape.dim[1];
    lmx_shape e = LMX_SHP(in[i].shape.dim[0], a->N);
    LMX_TRY(lmx_glue_check_like(c, &in[i], &e, in[0].dtype, what));
    a->M[i] = e.dim[0];
    a->A[i] = in[i].data;
    rows *= e.dim[0];
  }
  *os = LMX_SHP(rows, a->N);
  return LMX_OK;
}
