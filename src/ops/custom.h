/* custom.h — the Custom operator's run entry points, shared by the backends' glue.
 *
 * The kernels of "Custom" are the same on every backend that runs it: they lend the
 * tensors to the host as NDArrays and call the host's forward / backward (custom.c).
 */
#ifndef LMX_OPS_CUSTOM_H
#define LMX_OPS_CUSTOM_H

#include "op.h"

int lmx_custom_forward(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                       const int *req, const lmx_tensor *aux);
int lmx_custom_backward(const lmx_op_ctx *c, const lmx_tensor *out_grad, const lmx_tensor *in,
                        const lmx_tensor *out, const lmx_tensor *in_grad, const int *req,
                        const lmx_tensor *aux);

/* The host's callbacks (src/api/api_custom.c installs them; NULL uninstalls). */
void lmx_custom_install(const lmx_custom_callbacks *cb);
/* Drains released prop ids (see lmx_custom_released in luamx.h). */
int lmx_custom_take_released(int64_t *ids, int cap);

#endif
