/* init_op.c — array-creation operators with no inputs: _zeros, _ones, _full.
 *
 * MXNet's mx.sym.zeros / ones / full build these nodes (RNN cells use _zeros for their
 * begin states). The output shape comes from the `shape` parameter; a dim of 0 is
 * unknown and may be filled by backward inference from consumers (MXNet allows
 * `shape=(0, H)` so the batch size is inferred). dtype comes from `dtype`. No inputs,
 * no gradient. MXNet 1.9: src/operator/tensor/init_op.cc (InitOpParam, InitOpWithScalarParam).
 */
#include "../../kernels/cpu/cpu_kernels.h"
#include "op_impl.h"

typedef struct {
  lmx_shape shape;
  char *ctx;
  int dtype;
  double value;
} init_param;

#define INIT_COMMON                                                                       \
  LMX_PF(init_param, shape, LMX_PT_SHAPE, "()", NULL, 0, 0, "The shape of the output"),    \
      LMX_PF(init_param, ctx, LMX_PT_STRING, "", NULL, 0, 0,                               \
             "Context of output, in format [cpu|gpu|cpu_pinned](n). Only used for "       \
             "imperative calls."),                                                        \
      LMX_PF(init_param, dtype, LMX_PT_DTYPE, "float32", NULL, 0, 0,                       \
             "Target data type.")

static const lmx_param_field init_fields[] = {INIT_COMMON};
static const lmx_param_field full_fields[] = {
    INIT_COMMON,
    LMX_PF(init_param, value, LMX_PT_FLOAT, NULL, NULL, 0, 0, "Value with which to fill"),
};

static double init_value(const lmx_op_ctx *c);

/* CPU forward: fill the output (ADD accumulates the value; NULL leaves it). */
static int fwd_init_cpu(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                        const int *req, const lmx_tensor *aux) {
  (void)in, (void)aux;
  int64_t n = lmx_shape_size(&out[0].shape);
  double v = init_value(c);
  if (req[0] == LMX_REQ_NULL || n == 0) return LMX_OK;
  if (req[0] == LMX_REQ_ADD) {
    if (v != 0.0) lmx_cpu_scalar(LMX_BIN_ADD, out[0].dtype, n, out[0].data, out[0].data, v, 0);
    return LMX_OK;
  }
  lmx_cpu_fill(out[0].data, out[0].dtype, n, v);
  return LMX_OK;
}

static int no_inputs(const void *param) {
  (void)param;
  return 0;
}

static int init_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                            int nout, lmx_shape *aux, int naux) {
  (void)in, (void)nin, (void)nout, (void)aux, (void)naux;
  const init_param *p = LMX_PRM(c, init_param);
  if (p->shape.ndim < 0)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'shape' must be a tuple, got None");
  return lmx_out_assign(c, out, 0, &p->shape);
}

static int init_infer_type(const lmx_op_ctx *c, int *in, int nin, int *out, int nout,
                           int *aux, int naux) {
  (void)in, (void)nin, (void)nout, (void)aux, (void)naux;
  const init_param *p = LMX_PRM(c, init_param);
  return lmx_dtype_assign(c, &out[0], p->dtype < 0 ? LMX_FLOAT32 : p->dtype, "output");
}

#define INIT_OP(id, fields, text)                                                        \
  const lmx_op lmx_op_##id = {                                                             \
      .name = #id,                                                                         \
      .doc = "Returns an array of the given shape filled with " text ".",                  \
      LMX_PARAMS(fields, init_param),                                                      \
      .num_inputs = no_inputs,                                                             \
      .infer_shape = init_infer_shape,                                                     \
      .infer_type = init_infer_type,                                                       \
      .forward = {[LMX_DEV_SLOT_CPU] = fwd_init_cpu},                                      \
      .flags = LMX_OPF_NO_GRAD,                                                            \
  }

INIT_OP(_zeros, init_fields, "zeros");
INIT_OP(_ones, init_fields, "ones");
INIT_OP(_full, full_fields, "`value`");

/* The fill value of a creation node: 0, 1, or the _full value. */
static double init_value(const lmx_op_ctx *c) {
  if (c->op == &lmx_op__ones) return 1.0;
  if (c->op == &lmx_op__full) return LMX_PRM(c, init_param)->value;
  return 0.0;
}
