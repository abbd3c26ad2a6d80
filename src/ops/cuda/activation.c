/* activation.c — CUDA glue of Activation (src/ops/cpu/activation.c's Activation part):
 * act_type relu, sigmoid, tanh, softrelu, softsign onto K1's elementwise kernels
 * (lmx_cu_unary / lmx_cu_unary_bwd, the CPU's op codes); the gradient reads the output,
 * except softsign's (the input). float32, float64 and float16 (float math).
 */
#include "../op_impl.h"
#include "k1_glue.h"

static int act_code(const lmx_op_ctx *c) {
  switch (((const lmx_act_param *)c->param)->act_type) {
    case LMX_ACT_RELU: return LMX_UN_RELU;
    case LMX_ACT_SIGMOID: return LMX_UN_SIGMOID;
    case LMX_ACT_TANH: return LMX_UN_TANH;
    case LMX_ACT_SOFTRELU: return LMX_UN_SOFTRELU;
    case LMX_ACT_SOFTSIGN: return LMX_UN_SOFTSIGN;
    default: return -1;
  }
}

int lmx_cuda_fwd_Activation(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                            const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int op = act_code(c);
  if (op < 0) return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'act_type': unsupported value");
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &in[0], lmx_glue_size(&in[0]), "input 'data'"));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, in[0].dtype, "output"));
  return lmx_cuda_fail(c, lmx_cu_unary(LMX_CU_S(c), op, in[0].dtype, lmx_glue_size(&in[0]),
                                       out[0].data, in[0].data, req[0] == LMX_REQ_ADD),
                       "lmx_cu_unary");
}

int lmx_cuda_bwd_Activation(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                            const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                            const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int op = act_code(c);
  if (op < 0) return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'act_type': unsupported value");
  int soft = op == LMX_UN_SOFTSIGN, dt = ig[0].dtype;
  LMX_TRY(lmx_cuda_check_float(c, &ig[0], "gradient of 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &ig[0], lmx_glue_size(&ig[0]), "gradient of 'data'"));
  LMX_TRY(lmx_glue_check_like(c, &og[0], &ig[0].shape, dt, "output gradient"));
  if (soft) LMX_TRY(lmx_glue_check_like(c, &in[0], &ig[0].shape, dt, "input 'data'"));
  else LMX_TRY(lmx_glue_check_like(c, &out[0], &ig[0].shape, dt, "output"));
  return lmx_cuda_fail(c, lmx_cu_unary_bwd(LMX_CU_S(c), op, dt, lmx_glue_size(&ig[0]),
                                           ig[0].data, og[0].data, soft ? in[0].data : NULL,
                                           soft ? NULL : out[0].data, req[0] == LMX_REQ_ADD),
                       "lmx_cu_unary_bwd");
}
