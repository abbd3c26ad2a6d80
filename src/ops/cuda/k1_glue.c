/* k1_glue.c — helpers of K1's CUDA glue files (see k1_glue.h). */
#include "k1_glue.h"

#include "../../core/status.h"
#include "../../tensor/dtype.h"
#include "../op_impl.h"

int lmx_cuda_fail_dtype(const lmx_op_ctx *c, const lmx_tensor *t, const char *what) {
  return lmx_op_fail(c, LMX_ERR_DTYPE,
                     "%s: expected float32, float64 or float16 on the GPU, got %s", what,
                     lmx_dtype_str(t->dtype));
}

int lmx_cuda_check_float(const lmx_op_ctx *c, const lmx_tensor *t, const char *what) {
  if (t->dtype != LMX_FLOAT32 && t->dtype != LMX_FLOAT64 && t->dtype != LMX_FLOAT16)
    return lmx_cuda_fail_dtype(c, t, what);
  return LMX_OK;
}

int lmx_cuda_zero_grad(const lmx_op_ctx *c, const lmx_tensor *t, int req) {
  if (req == LMX_REQ_NULL || req == LMX_REQ_ADD || !t->data) return LMX_OK;
  return lmx_cuda_fail(c, lmx_cu_fill(LMX_CU_S(c), t->data, t->dtype, lmx_glue_size(t), 0.0),
                       "lmx_cu_fill");
}

int lmx_cuda_fail_req_add(const lmx_op_ctx *c, const char *what) {
  return lmx_op_fail(c, LMX_ERR_UNSUPPORTED,
                     "%s: req 'add' is not supported for this forward output on the GPU", what);
}
