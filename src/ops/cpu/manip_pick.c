/* manip_pick.c — CPU glue of pick and cumsum (src/ops/manip_pick.c) over the kernels of
 * kernels/cpu/manip.c; plans in src/ops/manip_plan.c. pick's forward takes any dtype, its
 * gradient float32 / float64 (the index's gradient is zero); cumsum reads and writes any
 * dtype, its gradient is the reverse scan of the output gradient.
 */
#include "../../../kernels/cpu/cpu_kernels.h"
#include "../../tensor/dtype.h"
#include "../manip_params.h"
#include "../manip_plan.h"
#include "../op_impl.h"
#include "cpu_ops.h"

static int wrap_of(const lmx_op_ctx *c) {
  return ((const lmx_pick_param *)c->param)->mode == LMX_PICK_WRAP;
}

int lmx_cpu_fwd_pick(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                     const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int64_t outer, A, inner;
  LMX_TRY(lmx_mplan_pick(c, &in[0], &in[1], &out[0], 0, &outer, &A, &inner));
  if (req[0] == LMX_REQ_ADD) LMX_TRY(lmx_cpu_check_float(c, &out[0], "output"));
  lmx_cpu_pick(in[0].dtype, in[1].dtype, outer, A, inner, out[0].data, in[0].data, in[1].data,
               wrap_of(c), req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

int lmx_cpu_bwd_pick(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                     const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                     const lmx_tensor *aux) {
  (void)out, (void)aux;
  lmx_cpu_zero_grad(&ig[1], req[1]);
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int64_t outer, A, inner;
  LMX_TRY(lmx_mplan_pick(c, &ig[0], &in[1], &og[0], 1, &outer, &A, &inner));
  LMX_TRY(lmx_cpu_check_float(c, &ig[0], "input gradient"));
  lmx_cpu_pick_bwd(ig[0].dtype, in[1].dtype, outer, A, inner, ig[0].data, og[0].data,
                   in[1].data, wrap_of(c), req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

int lmx_cpu_fwd_cumsum(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                       const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int64_t outer, len, inner;
  LMX_TRY(lmx_mplan_cumsum(c, &in[0], &out[0], 0, &outer, &len, &inner));
  if (req[0] == LMX_REQ_ADD) LMX_TRY(lmx_cpu_check_float(c, &out[0], "output"));
  lmx_cpu_cumsum(in[0].dtype, out[0].dtype, outer, len, inner, out[0].data, in[0].data, 0,
                 req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

int lmx_cpu_bwd_cumsum(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                       const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                       const lmx_tensor *aux) {
  (void)in, (void)out, (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int64_t outer, len, inner;
  LMX_TRY(lmx_mplan_cumsum(c, &ig[0], &og[0], 1, &outer, &len, &inner));
  LMX_TRY(lmx_cpu_check_float(c, &ig[0], "input gradient"));
  lmx_cpu_cumsum(og[0].dtype, ig[0].dtype, outer, len, inner, ig[0].data, og[0].data, 1,
                 req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

int lmx_cpu_fwd_batch_take(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                           const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  if (req[0] == LMX_REQ_ADD) return lmx_cpu_fail_req_add(c, "output");
  int64_t outer, A, inner;
  LMX_TRY(lmx_mplan_pick(c, &in[0], &in[1], &out[0], 0, &outer, &A, &inner));
  lmx_cpu_pick(in[0].dtype, in[1].dtype, outer, A, inner, out[0].data, in[0].data, in[1].data,
               0, 0);
  return LMX_OK;
}
