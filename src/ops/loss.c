/* loss.c — output (loss) layers: SoftmaxOutput, Linear/Logistic/MAE RegressionOutput,
 * MakeLoss, BlockGrad.
 *
 * Loss layers carry LMX_OPF_LOSS: their backward needs no head gradient (it reads the
 * label and the output). The label's shape is deduced from data: SoftmaxOutput's label
 * is data.shape[:-1] ((N, prod(rest)) with multi_output); the regression outputs' label
 * has data's shape (MXNet also accepts a 1-D label for (N, 1) data).
 * MXNet 1.9 sources: src/operator/softmax_output.cc, regression_output.cc, make_loss.cc,
 * tensor/elemwise_unary_op_basic.cc (BlockGrad).
 */
#include "op_impl.h"

static const char *const in_data_label[] = {"data", "label", NULL};
static const int inplace_00[][2] = {{0, 0}};

/* ---- SoftmaxOutput -------------------------------------------------------------------- */

static const lmx_param_field smo_fields[] = {
    LMX_PF(lmx_smo_param, grad_scale, LMX_PT_FLOAT, "1.0", NULL, 0, 0, "Scales the gradient."),
    LMX_PF(lmx_smo_param, ignore_label, LMX_PT_FLOAT, "-1.0", NULL, 0, 0,
           "Label value to ignore when use_ignore is True."),
    LMX_PF(lmx_smo_param, multi_output, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Softmax over axis 1 of an (n, k, x1, ..., xn) input."),
    LMX_PF(lmx_smo_param, use_ignore, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Whether labels equal to ignore_label get no gradient."),
    LMX_PF(lmx_smo_param, preserve_shape, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Softmax over the last axis, keeping the shape."),
    LMX_PF(lmx_smo_param, normalization, LMX_PT_ENUM, "null", LMX_NORM_CHOICES, 0, 0,
           "Normalizes the gradient."),
    LMX_PF(lmx_smo_param, out_grad, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Multiplies the gradient with the output gradient."),
    LMX_PF(lmx_smo_param, smooth_alpha, LMX_PT_FLOAT, "0.0", NULL, 0, 0,
           "Label smoothing constant."),
};

static int smo_label_matches(const lmx_shape *l, const lmx_shape *e) {
  if (l->ndim != e->ndim) return 0;
  for (int i = 0; i < l->ndim; i++)
    if (l->dim[i] && e->dim[i] && l->dim[i] != e->dim[i]) return 0;
  return 1;
}

static int smo_multi_label(const lmx_op_ctx *c, lmx_shape *in) {
  const lmx_shape *d = &in[0];
  if (d->ndim < 2)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': multi_output needs at least 2-D "
                       "data, got %d-D", d->ndim);
  int64_t rest = 1;
  for (int i = 2; i < d->ndim; i++) rest *= d->dim[i];
  lmx_shape l1 = LMX_SHP(d->dim[0], rest), l2 = {d->ndim - 1, {0}}, l3 = *d;
  l2.dim[0] = d->dim[0];
  for (int i = 2; i < d->ndim; i++) l2.dim[i - 1] = d->dim[i];
  l3.dim[1] = 1;
  lmx_shape *l = &in[1];
  if (l->ndim > 0 && (smo_label_matches(l, &l2) || smo_label_matches(l, &l3)))
    return LMX_OK;
  return lmx_in_assign(c, in, 1, &l1);
}

static int smo_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                           int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_smo_param *p = LMX_PRM(c, lmx_smo_param);
  LMX_TRY(lmx_in_assign(c, in, 0, &out[0]));
  if (in[0].ndim <= 0) return LMX_OK;
  if (p->multi_output) {
    LMX_TRY(smo_multi_label(c, in));
  } else {
    lmx_shape l = in[0];
    l.ndim = in[0].ndim - 1;
    LMX_TRY(lmx_in_assign(c, in, 1, &l));
  }
  return lmx_out_assign(c, out, 0, &in[0]);
}

const lmx_op lmx_op_SoftmaxOutput = {
    .name = "SoftmaxOutput",
    .doc = "Computes the gradient of cross entropy loss with respect to softmax output.",
    LMX_PARAMS(smo_fields, lmx_smo_param),
    .inputs = in_data_label,
    .infer_shape = smo_infer_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS,
    .inplace = inplace_00,
    .num_inplace = 1,
    .flags = LMX_OPF_LOSS,
};

/* ---- Linear / Logistic / MAE RegressionOutput ------------------------------------------ */

static const lmx_param_field reg_fields[] = {
    LMX_PF(lmx_reg_param, grad_scale, LMX_PT_FLOAT, "1.0", NULL, 0, 0,
           "Scale the gradient by a float factor."),
};

/* label: data's shape, or (N,) for (N, 1) data; output: data's shape. */
static int reg_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                           int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  LMX_TRY(lmx_in_assign(c, in, 0, &out[0]));
  if (in[0].ndim <= 0) return LMX_OK;
  const lmx_shape *d = &in[0], *l = &in[1];
  int64_t rest = 1;
  for (int i = 1; i < d->ndim; i++) rest *= d->dim[i];
  if (l->ndim == 1 && d->ndim >= 1 && rest == 1) {
    lmx_shape e = LMX_SHP(d->dim[0]);
    LMX_TRY(lmx_in_assign(c, in, 1, &e));
  } else {
    LMX_TRY(lmx_in_assign(c, in, 1, d));
  }
  return lmx_out_assign(c, out, 0, d);
}

#define REG_OP(id, docstr)                                    \
  const lmx_op lmx_op_##id = {                                \
      .name = #id,                                            \
      .doc = docstr,                                          \
      LMX_PARAMS(reg_fields, lmx_reg_param),                      \
      .inputs = in_data_label,                                \
      .infer_shape = reg_infer_shape,                         \
      .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS, \
      .inplace = inplace_00,                                  \
      .num_inplace = 1,                                       \
      .flags = LMX_OPF_LOSS,                                  \
  }

REG_OP(LinearRegressionOutput, "Computes and optimizes for squared loss during backward "
                               "propagation.");
REG_OP(LogisticRegressionOutput, "Applies a logistic function to the input; the gradient is "
                                 "that of the log loss.");
REG_OP(MAERegressionOutput, "Computes mean absolute error of the input.");

/* ---- MakeLoss / BlockGrad -------------------------------------------------------------- */

static const lmx_param_field makeloss_fields[] = {
    LMX_PF(lmx_makeloss_param, grad_scale, LMX_PT_FLOAT, "1.0", NULL, 0, 0,
           "Gradient scale as a supplement to unary and binary operators."),
    LMX_PF(lmx_makeloss_param, valid_thresh, LMX_PT_FLOAT, "0.0", NULL, 0, 0,
           "Clip each element in the array to 0 when it is less than valid_thresh."),
    LMX_PF(lmx_makeloss_param, normalization, LMX_PT_ENUM, "null", LMX_NORM_CHOICES, 0, 0,
           "How to normalize the gradient."),
};

const lmx_op lmx_op_MakeLoss = {
    .name = "MakeLoss",
    .doc = "Make your own loss function in network construction.",
    LMX_PARAMS(makeloss_fields, lmx_makeloss_param),
    .backward_needs = LMX_NEEDS_OUTPUTS,
    .inplace = inplace_00,
    .num_inplace = 1,
    .flags = LMX_OPF_LOSS,
};

const lmx_op lmx_op_BlockGrad = {
    .name = "BlockGrad",
    .doc = "Stops gradient computation (alias stop_gradient).",
    .inplace = inplace_00,
    .num_inplace = 1,
    .flags = LMX_OPF_NO_GRAD,
};
