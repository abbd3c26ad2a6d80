/* manip_nd.c — CPU glue of gather_nd and scatter_nd (src/ops/manip_nd.c) over
 * kernels/cpu/manip.c; plans in src/ops/manip_plan.c. Forward takes any dtype; the
 * gradients (the other op: a summing scatter for gather_nd, a gather for scatter_nd)
 * float32 / float64; indices get zeros.
 */
#include "../../../kernels/cpu/cpu_kernels.h"
#include "../manip_plan.h"
#include "../op_impl.h"
#include "cpu_ops.h"

/* big[rows, inner] <-> small[nY, inner]: gather (big to small) or scatter (small to big) */
static int nd_run(const lmx_op_ctx *c, int gather, int add, const lmx_tensor *big,
                  const lmx_tensor *idx, const lmx_tensor *small, int req, int grad) {
  if (req == LMX_REQ_NULL) return LMX_OK;
  int M;
  int64_t dims[LMX_MAX_NDIM], nY, inner;
  LMX_TRY(lmx_mplan_nd(c, big, idx, small, &M, dims, &nY, &inner));
  const lmx_tensor *dst = gather ? small : big;
  if (grad || req == LMX_REQ_ADD)
    LMX_TRY(lmx_cpu_check_float(c, dst, grad ? "input gradient" : "output"));
  if (gather)
    lmx_cpu_gather_nd(big->dtype, idx->dtype, M, dims, nY, inner, small->data, big->data,
                      idx->data, req == LMX_REQ_ADD);
  else
    lmx_cpu_scatter_nd(big->dtype, idx->dtype, M, dims, nY, inner, big->data, small->data,
                       idx->data, add, req == LMX_REQ_ADD);
  return LMX_OK;
}

int lmx_cpu_fwd_gather_nd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                          const int *req, const lmx_tensor *aux) {
  (void)aux;
  return nd_run(c, 1, 0, &in[0], &in[1], &out[0], req[0], 0);
}

int lmx_cpu_bwd_gather_nd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                          const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                          const lmx_tensor *aux) {
  (void)out, (void)aux;
  lmx_cpu_zero_grad(&ig[1], req[1]);
  return nd_run(c, 0, 1, &ig[0], &in[1], &og[0], req[0], 1);
}

int lmx_cpu_fwd_scatter_nd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                           const int *req, const lmx_tensor *aux) {
  (void)aux;
  return nd_run(c, 0, 0, &out[0], &in[1], &in[0], req[0], 0);
}

int lmx_cpu_bwd_scatter_nd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                           const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                           const lmx_tensor *aux) {
  (void)out, (void)aux;
  lmx_cpu_zero_grad(&ig[1], req[1]);
  return nd_run(c, 1, 0, &og[0], &in[1], &ig[0], req[0], 1);
}
