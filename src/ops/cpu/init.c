/* init.c — CPU glue of the array-creation operators _zeros, _ones, _full: fill the
 * output with 0, 1 or the `value` parameter (req add accumulates the value; null
 * leaves the output untouched). No inputs, no gradient. */
#include "../../../kernels/cpu/cpu_kernels.h"
#include "../op_impl.h"
#include "cpu_ops.h"

static int fill_out(const lmx_tensor *out, const int *req, double v) {
  int64_t n = lmx_shape_size(&out[0].shape);
  if (req[0] == LMX_REQ_NULL || n == 0) return LMX_OK;
  if (req[0] == LMX_REQ_ADD) {
    if (v != 0.0) lmx_cpu_scalar(LMX_BIN_ADD, out[0].dtype, n, out[0].data, out[0].data, v, 0);
    return LMX_OK;
  }
  lmx_cpu_fill(out[0].data, out[0].dtype, n, v);
  return LMX_OK;
}

int lmx_cpu_fwd__zeros(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                       const int *req, const lmx_tensor *aux) {
  (void)c, (void)in, (void)aux;
  return fill_out(out, req, 0.0);
}

int lmx_cpu_fwd__ones(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                      const int *req, const lmx_tensor *aux) {
  (void)c, (void)in, (void)aux;
  return fill_out(out, req, 1.0);
}

int lmx_cpu_fwd__full(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                      const int *req, const lmx_tensor *aux) {
  (void)in, (void)aux;
  const lmx_init_param *p = c->param;
  return fill_out(out, req, p->value);
}
