/* manip_pick.c — CUDA glue of pick and cumsum (src/ops/cpu/manip_pick.c's twin) over the
 * launchers of kernels/cuda/manip.cu; plans in src/ops/manip_plan.c. pick's forward takes
 * any dtype, its gradient float32 / float64 / float16 (the index's gradient is zero);
 * cumsum reads and writes any dtype, its gradient is the reverse scan.
 */
#include "../../tensor/dtype.h"
#include "../manip_params.h"
#include "../manip_plan.h"
#include "../op_impl.h"
#include "k1_glue.h"

static int wrap_of(const lmx_op_ctx *c) {
  return ((const lmx_pick_param *)c->param)->mode == LMX_PICK_WRAP;
}

int lmx_cuda_fwd_pick(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                      const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int64_t outer, A, inner;
  LMX_TRY(lmx_mplan_pick(c, &in[0], &in[1], &out[0], 0, &outer, &A, &inner));
  if (req[0] == LMX_REQ_ADD) LMX_TRY(lmx_cuda_check_float(c, &out[0], "output"));
  return lmx_cuda_fail(c, lmx_cu_pick(LMX_CU_S(c), in[0].dtype, in[1].dtype, outer, A, inner,
                                      out[0].data, in[0].data, in[1].data, wrap_of(c),
                                      req[0] == LMX_REQ_ADD),
                       "lmx_cu_pick");
}

int lmx_cuda_bwd_pick(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                      const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                      const lmx_tensor *aux) {
  (void)out, (void)aux;
  LMX_TRY(lmx_cuda_zero_grad(c, &ig[1], req[1]));
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int64_t outer, A, inner;
  LMX_TRY(lmx_mplan_pick(c, &ig[0], &in[1], &og[0], 1, &outer, &A, &inner));
  LMX_TRY(lmx_cuda_check_float(c, &ig[0], "input gradient"));
  return lmx_cuda_fail(c, lmx_cu_pick_bwd(LMX_CU_S(c), ig[0].dtype, in[1].dtype, outer, A,
                                          inner, ig[0].data, og[0].data, in[1].data,
                                          wrap_of(c), req[0] == LMX_REQ_ADD),
                       "lmx_cu_pick_bwd");
}

int lmx_cuda_fwd_cumsum(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                        const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int64_t outer, len, inner;
  LMX_TRY(lmx_mplan_cumsum(c, &in[0], &out[0], 0, &outer, &len, &inner));
  if (req[0] == LMX_REQ_ADD) LMX_TRY(lmx_cuda_check_float(c, &out[0], "output"));
  return lmx_cuda_fail(c, lmx_cu_cumsum(LMX_CU_S(c), in[0].dtype, out[0].dtype, outer, len,
                                        inner, out[0].data, in[0].data, 0,
                                        req[0] == LMX_REQ_ADD),
                       "lmx_cu_cumsum");
}

int lmx_cuda_bwd_cumsum(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                        const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                        const lmx_tensor *aux) {
  (void)in, (void)out, (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int64_t outer, len, inner;
  LMX_TRY(lmx_mplan_cumsum(c, &ig[0], &og[0], 1, &outer, &len, &inner));
  LMX_TRY(lmx_cuda_check_float(c, &ig[0], "input gradient"));
  return lmx_cuda_fail(c, lmx_cu_cumsum(LMX_CU_S(c), og[0].dtype, ig[0].dtype, outer, len,
                                        inner, ig[0].data, og[0].data, 1,
                                        req[0] == LMX_REQ_ADD),
                       "lmx_cu_cumsum");
}

int lmx_cuda_fwd_batch_take(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                            const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  if (req[0] == LMX_REQ_ADD) return lmx_cuda_fail_req_add(c, "output");
  int64_t outer, A, inner;
  LMX_TRY(lmx_mplan_pick(c, &in[0], &in[1], &out[0], 0, &outer, &A, &inner));
  return lmx_cuda_fail(c, lmx_cu_pick(LMX_CU_S(c), in[0].dtype, in[1].dtype, outer, A, inner,
                                      out[0].data, in[0].data, in[1].data, 0, 0),
                       "lmx_cu_pick");
}
