/* cpu_common.c — CPU-only helpers shared by the CPU glue files: the dtypes the CPU
 * kernels take, and zeroing a gradient in host memory. The device-neutral checks are in
 * ../glue.c; parameters come as the op's typed struct (op_params.h). */
#include <string.h>

#include "../../core/status.h"
#include "../../tensor/dtype.h"
#include "../op_impl.h"
#include "cpu_ops.h"

int lmx_cpu_fail_dtype(const lmx_op_ctx *c, const lmx_tensor *t, const char *what) {
  return lmx_op_fail(c, LMX_ERR_DTYPE, "%s: expected float32 or float64 on the CPU, got %s",
                     what, lmx_dtype_str(t->dtype));
}

int lmx_cpu_fail_dtype_ew(const lmx_op_ctx *c, const lmx_tensor *t, const char *what) {
  return lmx_op_fail(c, LMX_ERR_DTYPE,
                     "%s: expected float32, float64, float16 or bfloat16 on the CPU, got %s",
                     what, lmx_dtype_str(t->dtype));
}

int lmx_cpu_check_float(const lmx_op_ctx *c, const lmx_tensor *t, const char *what) {
  if (t->dtype != LMX_FLOAT32 && t->dtype != LMX_FLOAT64) return lmx_cpu_fail_dtype(c, t, what);
  return LMX_OK;
}

int lmx_cpu_fail_req_add(const lmx_op_ctx *c, const char *what) {
  return lmx_op_fail(c, LMX_ERR_UNSUPPORTED,
                     "%s: req 'add' is not supported for this forward output on the CPU", what);
}

void lmx_cpu_zero_grad(const lmx_tensor *t, int req) {
  if (req == LMX_REQ_NULL || req == LMX_REQ_ADD || !t->data) return;
  size_t n = (size_t)lmx_glue_size(t) * (size_t)lmx_dtype_size(t->dtype);
  memset(t->data, 0, n);
}

int lmx_cpu_tensors_overlap(const lmx_tensor *a, const lmx_tensor *b) {
  const char *pa = a->data, *pb = b->data;
  size_t na = (size_t)lmx_glue_size(a) * (size_t)lmx_dtype_size(a->dtype);
  size_t nb = (size_t)lmx_glue_size(b) * (size_t)lmx_dtype_size(b->dtype);
  return pa && pb && na && nb && pa < pb + nb && pb < pa + na;
}
