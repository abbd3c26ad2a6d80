/* cuda_common.c — helpers shared by the CUDA glue files (see cuda_ops.h). */
#include "../../core/status.h"
#include "../op_impl.h"
#include "cuda_ops.h"

int lmx_cuda_fail(const lmx_op_ctx *c, int rc, const char *kernel) {
  if (rc == 0) return LMX_OK;
  if (rc == -1)
    return lmx_op_fail(c, LMX_ERR_DTYPE, "%s on gpu(%d): unsupported dtype or op", kernel,
                       c->dev_id);
  return lmx_op_fail(c, LMX_ERR_DEVICE, "%s on gpu(%d): CUDA error %d", kernel, c->dev_id, rc);
}
