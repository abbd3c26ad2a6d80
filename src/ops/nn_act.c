/* nn_act.c — activations: Activation, LeakyReLU, softmax, log_softmax, SoftmaxActivation.
 *
 * All keep the data shape (LeakyReLU's prelu adds a gamma input of one slope per channel:
 * (C,) with C = data.shape[1]; rrelu has a second output, the sampled slopes ('mask',
 * hidden), drawn from the global generator in training, hence LMX_OPF_RANDOM).
 * softmax / log_softmax take a second input 'length' only when use_length is true: its
 * shape is data's without the softmax axis ((1,) for 1-D data), its dtype is the caller's
 * (int32 or int64; not inferred, as in MXNet), and only then does the backward read the
 * inputs. MXNet 1.9 sources: src/operator/nn/activation.cc, leaky_relu.cc, softmax.cc,
 * softmax-inl.h, softmax_activation.cc. Activation may run in place (output over data).
 */
#include "op_impl.h"

/* ---- Activation ----------------------------------------------------------------------- */

static const lmx_param_field act_fields[] = {
    LMX_PF(lmx_act_param, act_type, LMX_PT_ENUM, NULL, LMX_ACT_CHOICES, 0, 0,
           "Activation function to be applied."),
};

static const int inplace_00[][2] = {{0, 0}};

/* The backward kernel reads the input only for softsign (act_type index 4); the rest
 * use the output, so the planner may free (or overwrite in place) the input. */
static unsigned act_backward_needs(const void *p) {
  return ((const lmx_act_param *)p)->act_type == 4
             ? LMX_NEEDS_INPUTS | LMX_NEEDS_OUT_GRADS
             : LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS;
}

const lmx_op lmx_op_Activation = {
    .name = "Activation",
    .doc = "Applies an activation function element-wise to the input.",
    LMX_PARAMS(act_fields, lmx_act_param),
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS,
    .inplace = inplace_00,
    .num_inplace = 1,
    .backward_needs_of = act_backward_needs,
    .backward_inplace = inplace_00,
    .num_backward_inplace = 1,
};

/* ---- LeakyReLU ------------------------------------------------------------------------ */

enum { LR_LEAKY, LR_ELU, LR_PRELU, LR_RRELU, LR_SELU, LR_GELU };

static const lmx_param_field lrelu_fields[] = {
    LMX_PF(lmx_lrelu_param, act_type, LMX_PT_ENUM, "leaky", LMX_LRELU_CHOICES, 0, 0,
           "Activation function to be applied."),
    LMX_PF(lmx_lrelu_param, slope, LMX_PT_FLOAT, "0.25", NULL, 0, 0,
           "Init slope for the activation (for leaky and elu)."),
    LMX_PF(lmx_lrelu_param, lower_bound, LMX_PT_FLOAT, "0.125", NULL, 0, 0,
           "Lower bound of random slope (for rrelu only)."),
    LMX_PF(lmx_lrelu_param, upper_bound, LMX_PT_FLOAT, "0.334", NULL, 0, 0,
           "Upper bound of random slope (for rrelu only)."),
};

static int lrelu_num_inputs(const void *p) {
  return ((const lmx_lrelu_param *)p)->act_type == LR_PRELU ? 2 : 1;
}
static void lrelu_input_name(const void *p, int i, char *buf, size_t cap) {
  (void)p;
  snprintf(buf, cap, "%s", i == 0 ? "data" : i == 1 ? "gamma" : "?");
}
static int lrelu_num_outputs(const void *p) {
  return ((const lmx_lrelu_param *)p)->act_type == LR_RRELU ? 2 : 1;
}
static void lrelu_output_name(const void *p, int i, char *buf, size_t cap) {
  (void)p;
  snprintf(buf, cap, "%s", i == 0 ? "output" : i == 1 ? "mask" : "?");
}
static int one_visible(const void *p) {
  (void)p;
  return 1;
}

static int lrelu_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                             int nout, lmx_shape *aux, int naux) {
  (void)aux, (void)naux;
  LMX_TRY(lmx_infer_same_shape(c, in, 1, out, nout));
  if (nin < 2 || in[0].ndim <= 0) return LMX_OK;
  int64_t ch = in[0].ndim >= 2 ? in[0].dim[1] : 1;
  if (in[1].ndim == 1 && in[1].dim[0] == 1) return LMX_OK; /* one shared slope */
  lmx_shape g = LMX_SHP(ch);
  return lmx_in_assign(c, in, 1, &g);
}

const lmx_op lmx_op_LeakyReLU = {
    .name = "LeakyReLU",
    .doc = "Applies Leaky rectified linear unit activation element-wise to the input.",
    LMX_PARAMS(lrelu_fields, lmx_lrelu_param),
    .num_inputs = lrelu_num_inputs,
    .input_name = lrelu_input_name,
    .num_outputs = lrelu_num_outputs,
    .output_name = lrelu_output_name,
    .num_visible_outputs = one_visible,
    .infer_shape = lrelu_infer_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS,
    .flags = LMX_OPF_RANDOM, /* rrelu in training */
};

/* ---- softmax / log_softmax ------------------------------------------------------------ */

static const lmx_param_field softmax_fields[] = {
    LMX_PF(lmx_softmax_param, axis, LMX_PT_INT, "-1", NULL, 0, 0,
           "The axis along which to compute softmax."),
    LMX_PF(lmx_softmax_param, temperature, LMX_PT_OPT_FLOAT, "None", NULL, 0, 0,
           "Temperature parameter in softmax."),
    LMX_PF(lmx_softmax_param, dtype, LMX_PT_DTYPE, "None", NULL, 0, 0,
           "DType of the output in case this can't be inferred."),
    LMX_PF(lmx_softmax_param, use_length, LMX_PT_OPT_BOOL, "False", NULL, 0, 0,
           "Whether to use the length input as a mask over the data input."),
};

static int softmax_num_inputs(const void *p) {
  return ((const lmx_softmax_param *)p)->use_length == 1 ? 2 : 1;
}
static void softmax_input_name(const void *p, int i, char *buf, size_t cap) {
  (void)p;
  snprintf(buf, cap, "%s", i == 0 ? "data" : i == 1 ? "length" : "?");
}

static int softmax_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                               int nout, lmx_shape *aux, int naux) {
  (void)aux, (void)naux;
  const lmx_softmax_param *p = LMX_PRM(c, lmx_softmax_param);
  LMX_TRY(lmx_infer_same_shape(c, in, 1, out, nout));
  if (in[0].ndim <= 0) return LMX_OK;
  int ax;
  LMX_TRY(lmx_op_axis(c, "axis", p->axis, in[0].ndim, &ax));
  if (nin < 2) return LMX_OK;
  lmx_shape l = in[0]; /* length: data's shape without the softmax axis; (1,) for 1-D */
  for (int i = ax; i + 1 < l.ndim; i++) l.dim[i] = l.dim[i + 1];
  if (l.ndim == 1) l.dim[0] = 1;
  else l.ndim--;
  return lmx_in_assign(c, in, 1, &l);
}

static int softmax_infer_type(const lmx_op_ctx *c, int *in, int nin, int *out, int nout,
                              int *aux, int naux) {
  (void)aux, (void)naux, (void)nin, (void)nout;
  const lmx_softmax_param *p = LMX_PRM(c, lmx_softmax_param);
  int dt = p->dtype >= 0 ? p->dtype : in[0];
  LMX_TRY(lmx_dtype_assign(c, &out[0], dt, "output 'output'"));
  /* MXNet: without dtype, data and output share one dtype both ways; with it, data takes
   * the output's only when unknown. 'length' is left as given. */
  if (p->dtype < 0 || in[0] < 0) LMX_TRY(lmx_dtype_assign(c, &in[0], out[0], "input 'data'"));
  return LMX_OK;
}

/* The backward reads 'length' (an input) only with use_length; otherwise just the output
 * and its gradient (MXNet's ElemwiseGradUseOut vs ElemwiseGradUseInOut). The memory
 * planner asks this; the static backward_needs below is the union of both cases. */
static unsigned softmax_backward_needs(const void *p) {
  return ((const lmx_softmax_param *)p)->use_length == 1
             ? LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS
             : LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS;
}

#define SOFTMAX_OP(id, docstr)                               \
  const lmx_op lmx_op_##id = {                               \
      .name = #id,                                           \
      .doc = docstr,                                         \
      LMX_PARAMS(softmax_fields, lmx_softmax_param),             \
      .num_inputs = softmax_num_inputs,                      \
      .input_name = softmax_input_name,                      \
      .infer_shape = softmax_infer_shape,                    \
      .infer_type = softmax_infer_type,                      \
      .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS, \
      .backward_needs_of = softmax_backward_needs,           \
  }

SOFTMAX_OP(softmax, "Applies the softmax function along an axis.");
SOFTMAX_OP(log_softmax, "Computes the log softmax of the input along an axis.");

/* ---- SoftmaxActivation ---------------------------------------------------------------- */

static const lmx_param_field smact_fields[] = {
    LMX_PF(lmx_smact_param, mode, LMX_PT_ENUM, "instance", LMX_SMACT_CHOICES, 0, 0,
           "Softmax over each instance (flattened) or over the channel axis (axis 1)."),
};

const lmx_op lmx_op_SoftmaxActivation = {
    .name = "SoftmaxActivation",
    .doc = "Applies softmax activation to input (deprecated: use softmax).",
    LMX_PARAMS(smact_fields, lmx_smact_param),
    .backward_needs = LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS,
};
