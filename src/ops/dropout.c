/* dropout.c — Dropout: zeroes elements with probability p during training (mode
 * 'training') or always (mode 'always'), scaling the kept ones by 1/(1-p).
 *
 * Outputs output and mask (hidden; the mask has data's shape — with `axes` the mask is
 * shared along those axes, but MXNet still stores a full-shape mask). Draws from the
 * global generator: LMX_OPF_RANDOM. MXNet 1.9: src/operator/nn/dropout.cc, dropout-inl.h.
 */
#include "op_impl.h"

static const lmx_param_field dropout_fields[] = {
    LMX_PF(lmx_dropout_param, p, LMX_PT_FLOAT, "0.5", NULL, 0, 1,
           "Fraction of the input that gets dropped out during training time."),
    LMX_PF(lmx_dropout_param, mode, LMX_PT_ENUM, "training", LMX_DROPOUT_CHOICES, 0, 0,
           "Whether to only turn on dropout during training or to also turn on for "
           "inference."),
    LMX_PF(lmx_dropout_param, axes, LMX_PT_SHAPE, "()", NULL, 0, 0,
           "Axes for variational dropout kernel."),
    LMX_PF(lmx_dropout_param, cudnn_off, LMX_PT_OPT_BOOL, "False", NULL, 0, 0,
           "Whether to turn off cudnn in dropout operator."),
};

static const char *const dropout_outputs[] = {"output", "mask", NULL};

static int dropout_visible(const void *p) {
  (void)p;
  return 1;
}

static int dropout_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                               int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)aux, (void)naux;
  const lmx_dropout_param *p = LMX_PRM(c, lmx_dropout_param);
  LMX_TRY(lmx_infer_same_shape(c, in, 1, out, 1));
  if (in[0].ndim <= 0) return LMX_OK;
  for (int i = 0; i < p->axes.ndim; i++) {
    int ax;
    LMX_TRY(lmx_op_axis(c, "axes", p->axes.dim[i], in[0].ndim, &ax));
  }
  return nout > 1 ? lmx_out_assign(c, out, 1, &in[0]) : LMX_OK;
}

const lmx_op lmx_op_Dropout = {
    .name = "Dropout",
    .doc = "Applies dropout operation to input array.",
    LMX_PARAMS(dropout_fields, lmx_dropout_param),
    .outputs = dropout_outputs,
    .num_visible_outputs = dropout_visible,
    .infer_shape = dropout_infer_shape,
    .backward_needs = LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS,
    .flags = LMX_OPF_RANDOM,
};
