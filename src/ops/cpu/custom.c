/* custom.c — CPU glue of the operator "Custom" (operators written in Lua).
 *
 * Nothing device-specific: the tensors are lent to the host's forward / backward as
 * NDArrays on the call's context (src/ops/custom.c). Only the CPU table lists Custom,
 * so a Custom node on a GPU context is "no kernel for Custom on gpu(0)" at bind.
 */
#include "../custom.h"
#include "cpu_ops.h"

int lmx_cpu_fwd_Custom(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                       const int *req, const lmx_tensor *aux) {
  return lmx_custom_forward(c, in, out, req, aux);
}

int lmx_cpu_bwd_Custom(const lmx_op_ctx *c, const lmx_tensor *out_grad, const lmx_tensor *in,
                       const lmx_tensor *out, const lmx_tensor *in_grad, const int *req,
                       const lmx_tensor *aux) {
  return lmx_custom_backward(c, out_grad, in, out, in_grad, req, aux);
}
