/* cuda_common.c — helpers shared by the CUDA glue files (see cuda_ops.h). */
#include "../../core/status.h"
#include "../../device/cuda_state.h"
#include "../op_impl.h"
#include "cuda_ops.h"
#include "k1_glue.h"

int lmx_cuda_fail(const lmx_op_ctx *c, int rc, const char *kernel) {
  if (rc == 0) return LMX_OK;
  if (rc == -1)
    return lmx_op_fail(c, LMX_ERR_DTYPE, "%s on gpu(%d): unsupported dtype or op", kernel,
                       c->dev_id);
  return lmx_op_fail(c, LMX_ERR_DEVICE, "%s on gpu(%d): CUDA error %d", kernel, c->dev_id, rc);
}

int lmx_cuda_raise_for(const lmx_op_ctx *c, lmx_cuda_raise_text text, int64_t range,
                       lmx_cu_raise *out) {
  int rc = lmx_cuda_raise_slot(c->dev_id, c->op ? c->op->name : "operator", c->node, text,
                               range, out);
  char label[256];
  return rc == LMX_OK ? LMX_OK : lmx_fail_prefix(rc, "%s: ", lmx_op_label(c, label, sizeof label));
}
