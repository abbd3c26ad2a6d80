/* linalg_tri_plan.c — shapes of the diagonal / triangle operators and sumlogdiag
 * (linalg_tri_plan.h); MXNet 1.9 la_op.h LaDiagTrianShape and LaReduceShape<2>. */
#include "linalg_tri_plan.h"

#include "op_impl.h"

static int square(const lmx_op_ctx *c, const lmx_shape *in) {
  if (in->ndim < 2)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'A': expected a tensor of square matrices "
                       "(at least 2-D), got %d-D", in->ndim);
  if (in->dim[in->ndim - 2] != in->dim[in->ndim - 1])
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'A': expected square matrices in the last "
                       "two dims, got %lld x %lld", (long long)in->dim[in->ndim - 2],
                       (long long)in->dim[in->ndim - 1]);
  return LMX_OK;
}

int lmx_la_tri_plan_make(const lmx_op_ctx *c, int kind, const lmx_shape *in,
                         lmx_la_tri_plan *p) {
  memset(p, 0, sizeof *p);
  int nd = in->ndim;
  p->batch = 1;
  if (kind == LMX_LA_SUMLOGDIAG) {
    LMX_TRY(square(c, in));
    for (int i = 0; i < nd - 2; i++) p->batch *= in->dim[i];
    p->t.n = in->dim[nd - 1];
    p->out = nd == 2 ? LMX_SHP(1) : *in;
    p->out.ndim = nd == 2 ? 1 : nd - 2;
    return LMX_OK;
  }
  const lmx_la_tri_param *q = c->param;
  int64_t k = q->offset, ak = k < 0 ? -k : k;
  p->t.trian = kind == LMX_LA_EXTRACTTRIAN || kind == LMX_LA_MAKETRIAN;
  p->t.lower = q->lower;
  p->t.offset = k;
  p->make = kind == LMX_LA_MAKEDIAG || kind == LMX_LA_MAKETRIAN;
  if (!p->make) {
    LMX_TRY(square(c, in));
    int64_t n = in->dim[nd - 1];
    if (n - ak <= 0)
      return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'offset': expected |offset| < %lld (the "
                         "matrix size), got %lld", (long long)n, (long long)k);
    for (int i = 0; i < nd - 2; i++) p->batch *= in->dim[i];
    p->t.n = n;
    p->out = *in;
    p->out.ndim = nd - 1;
    p->out.dim[nd - 2] = lmx_la_tri_len(&p->t);
    return LMX_OK;
  }
  if (nd < 1 || nd + 1 > LMX_MAX_NDIM)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'A': expected 1-D to %d-D, got %d-D",
                       LMX_MAX_NDIM - 1, nd);
  int64_t len = in->dim[nd - 1], m = len;
  if (p->t.trian) { /* len = m(m+1)/2 */
    m = (int64_t)floor(0.5 + (sqrt(8.0 * (double)len + 1.0) - 1.0) * 0.5);
    if (m * (m + 1) / 2 != len)
      return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'A': expected a last dim m(m+1)/2 (a "
                         "triangle's entries), got %lld", (long long)len);
  }
  for (int i = 0; i < nd - 1; i++) p->batch *= in->dim[i];
  p->t.n = m + ak;
  p->out = *in;
  p->out.ndim = nd + 1;
  p->out.dim[nd - 1] = p->out.dim[nd] = m + ak;
  return LMX_OK;
}
