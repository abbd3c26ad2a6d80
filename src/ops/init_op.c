/* init_op.c — array-creation operators with no inputs: _zeros, _ones, _full.
 *
 * MXNet's mx.sym.zeros / ones / full build these nodes (RNN cells use _zeros for their
 * begin states). The output shape comes from the `shape` parameter; a dim of 0 is
 * unknown and may be filled by backward inference from consumers (MXNet allows
 * `shape=(0, H)` so the batch size is inferred). dtype comes from `dtype`. No inputs,
 * no gradient; the kernels fill the output (src/ops/cpu/init.c). MXNet 1.9:
 * src/operator/tensor/init_op.cc (InitOpParam, InitOpWithScalarParam).
 */
#include "op_impl.h"

#define INIT_COMMON                                                                       \
  LMX_PF(lmx_init_param, shape, LMX_PT_SHAPE, "()", NULL, 0, 0, "The shape of the output"),    \
      LMX_PF(lmx_init_param, ctx, LMX_PT_STRING, "", NULL, 0, 0,                               \
             "Context of output, in format [cpu|gpu|cpu_pinned](n). Only used for "       \
             "imperative calls."),                                                        \
      LMX_PF(lmx_init_param, dtype, LMX_PT_DTYPE, "float32", NULL, 0, 0,                       \
             "Target data type.")

static const lmx_param_field init_fields[] = {INIT_COMMON};
static const lmx_param_field full_fields[] = {
    INIT_COMMON,
    LMX_PF(lmx_init_param, value, LMX_PT_FLOAT, NULL, NULL, 0, 0, "Value with which to fill"),
};

static int no_inputs(const void *param) {
  (void)param;
  return 0;
}

static int init_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                            int nout, lmx_shape *aux, int naux) {
  (void)in, (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_init_param *p = LMX_PRM(c, lmx_init_param);
  if (p->shape.ndim < 0)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'shape' must be a tuple, got None");
  return lmx_out_assign(c, out, 0, &p->shape);
}

static int init_infer_type(const lmx_op_ctx *c, int *in, int nin, int *out, int nout,
                           int *aux, int naux) {
  (void)in, (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_init_param *p = LMX_PRM(c, lmx_init_param);
  return lmx_dtype_assign(c, &out[0], p->dtype < 0 ? LMX_FLOAT32 : p->dtype, "output");
}

#define INIT_OP(id, fields, text)                                                        \
  const lmx_op lmx_op_##id = {                                                             \
      .name = #id,                                                                         \
      .doc = "Returns an array of the given shape filled with " text ".",                  \
      LMX_PARAMS(fields, lmx_init_param),                                                      \
      .num_inputs = no_inputs,                                                             \
      .infer_shape = init_infer_shape,                                                     \
      .infer_type = init_infer_type,                                                       \
      .flags = LMX_OPF_NO_GRAD,                                                            \
  }

INIT_OP(_zeros, init_fields, "zeros");
INIT_OP(_ones, init_fields, "ones");
INIT_OP(_full, full_fields, "`value`");
