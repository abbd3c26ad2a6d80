/* init.c — CUDA glue of the array-creation operators _zeros, _ones, _full
 * (src/ops/cpu/init.c's twin): fill the output with 0, 1 or `value` (any dtype); req add
 * adds the value (the array scalar op, any dtype); null leaves the output untouched. */
#include "../op_impl.h"
#include "k1_glue.h"

static int fill_out(const lmx_op_ctx *c, const lmx_tensor *out, const int *req, double v) {
  int64_t n = lmx_shape_size(&out[0].shape);
  if (req[0] == LMX_REQ_NULL || n == 0) return LMX_OK;
  LMX_TRY(lmx_glue_check_size(c, &out[0], n, "output"));
  if (req[0] == LMX_REQ_ADD) {
    if (v == 0.0) return LMX_OK;
    return lmx_cuda_fail(c, lmx_cu_scalar(LMX_CU_S(c), LMX_BIN_ADD, out[0].dtype, n, out[0].data,
                                          out[0].data, v, 0),
                         "lmx_cu_scalar");
  }
  return lmx_cuda_fail(c, lmx_cu_fill(LMX_CU_S(c), out[0].data, out[0].dtype, n, v),
                       "lmx_cu_fill");
}

int lmx_cuda_fwd__zeros(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                        const int *req, const lmx_tensor *aux) {
  (void)in, (void)aux;
  return fill_out(c, out, req, 0.0);
}

int lmx_cuda_fwd__ones(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                       const int *req, const lmx_tensor *aux) {
  (void)in, (void)aux;
  return fill_out(c, out, req, 1.0);
}

int lmx_cuda_fwd__full(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                       const int *req, const lmx_tensor *aux) {
  (void)in, (void)aux;
  return fill_out(c, out, req, ((const lmx_init_param *)c->param)->value);
}
