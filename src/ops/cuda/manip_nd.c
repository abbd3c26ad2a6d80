/* manip_nd.c — CUDA glue of gather_nd and scatter_nd (src/ops/cpu/manip_nd.c's twin) over
 * kernels/cuda/manip.cu: deterministic, no atomics (the scatter walks every column per
 * output element). Forward takes any dtype, the gradients float32 / float64 / float16.
 */
#include "../manip_plan.h"
#include "../op_impl.h"
#include "k1_glue.h"

static int nd_run(const lmx_op_ctx *c, int gather, int add, const lmx_tensor *big,
                  const lmx_tensor *idx, const lmx_tensor *small, int req, int grad) {
  if (req == LMX_REQ_NULL) return LMX_OK;
  int M;
  int64_t dims[LMX_MAX_NDIM], nY, inner;
  LMX_TRY(lmx_mplan_nd(c, big, idx, small, &M, dims, &nY, &inner));
  const lmx_tensor *dst = gather ? small : big;
  if (grad || req == LMX_REQ_ADD)
    LMX_TRY(lmx_cuda_check_float(c, dst, grad ? "input gradient" : "output"));
  if (gather)
    return lmx_cuda_fail(c, lmx_cu_gather_nd(LMX_CU_S(c), big->dtype, idx->dtype, M, dims, nY,
                                             inner, small->data, big->data, idx->data,
                                             req == LMX_REQ_ADD),
                         "lmx_cu_gather_nd");
  return lmx_cuda_fail(c, lmx_cu_scatter_nd(LMX_CU_S(c), big->dtype, idx->dtype, M, dims, nY,
                                            inner, big->data, small->data, idx->data, add,
                                            req == LMX_REQ_ADD),
                       "lmx_cu_scatter_nd");
}

int lmx_cuda_fwd_gather_nd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                           const int *req, const lmx_tensor *aux) {
  (void)aux;
  return nd_run(c, 1, 0, &in[0], &in[1], &out[0], req[0], 0);
}

int lmx_cuda_bwd_gather_nd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                           const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                           const lmx_tensor *aux) {
  (void)out, (void)aux;
  LMX_TRY(lmx_cuda_zero_grad(c, &ig[1], req[1]));
  return nd_run(c, 0, 1, &ig[0], &in[1], &og[0], req[0], 1);
}

int lmx_cuda_fwd_scatter_nd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                            const int *req, const lmx_tensor *aux) {
  (void)aux;
  return nd_run(c, 0, 0, &out[0], &in[1], &in[0], req[0], 0);
}

int lmx_cuda_bwd_scatter_nd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                            const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                            const lmx_tensor *aux) {
  (void)out, (void)aux;
  LMX_TRY(lmx_cuda_zero_grad(c, &ig[1], req[1]));
  return nd_run(c, 1, 0, &og[0], &in[1], &ig[0], req[0], 1);
}
