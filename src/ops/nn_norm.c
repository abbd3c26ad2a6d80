/* nn_norm.c — BatchNorm and LayerNorm.
 *
 * BatchNorm: inputs data, gamma, beta; aux moving_mean, moving_var (written in training:
 * LMX_OPF_MUTATES_AUX); outputs output, mean, var with only `output` visible unless
 * output_mean_var. C = data.shape[axis]; gamma, beta, the aux states and the mean/var
 * outputs are (C,). dtypes: float16 data keeps float32 parameters (MXNet's rule).
 * LayerNorm: inputs data, gamma, beta (C,) with C = data.shape[axis]; outputs output,
 * mean, std, the last two of data's shape with axis set to 1; visible as BatchNorm.
 * MXNet 1.9: src/operator/nn/batch_norm.cc, layer_norm.cc.
 */
#include "op_impl.h"

static const char *const norm_inputs[] = {"data", "gamma", "beta", NULL};

static int norm_channel(const lmx_op_ctx *c, const lmx_shape *d, int64_t axis, int *ax) {
  if (d->ndim <= 0) return LMX_OK;
  return lmx_op_axis(c, "axis", axis, d->ndim, ax);
}

static int norm_params_from(const lmx_op_ctx *c, lmx_shape *in, int64_t ch) {
  lmx_shape g = LMX_SHP(ch);
  LMX_TRY(lmx_in_assign(c, in, 1, &g));
  return lmx_in_assign(c, in, 2, &g);
}

/* ---- BatchNorm ------------------------------------------------------------------------ */

static const lmx_param_field bn_fields[] = {
    LMX_PF(lmx_bn_param, eps, LMX_PT_FLOAT, "0.001", NULL, 0, 0,
           "Epsilon to prevent div 0."),
    LMX_PF(lmx_bn_param, momentum, LMX_PT_FLOAT, "0.9", NULL, 0, 0,
           "Momentum for moving average."),
    LMX_PF(lmx_bn_param, fix_gamma, LMX_PT_BOOL, "True", NULL, 0, 0,
           "Fix gamma while training."),
    LMX_PF(lmx_bn_param, use_global_stats, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Whether use global moving statistics instead of local batch-norm."),
    LMX_PF(lmx_bn_param, output_mean_var, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Output the mean and inverse std."),
    LMX_PF(lmx_bn_param, axis, LMX_PT_INT, "1", NULL, 0, 0,
           "Specify which shape axis the channel is."),
    LMX_PF(lmx_bn_param, cudnn_off, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Do not select CUDNN operator, if available."),
    LMX_PF(lmx_bn_param, min_calib_range, LMX_PT_OPT_FLOAT, "None", NULL, 0, 0,
           "Minimum calibration value (quantization)."),
    LMX_PF(lmx_bn_param, max_calib_range, LMX_PT_OPT_FLOAT, "None", NULL, 0, 0,
           "Maximum calibration value (quantization)."),
};

static const char *const bn_outputs[] = {"output", "mean", "var", NULL};
static const char *const bn_aux[] = {"moving_mean", "moving_var", NULL};
/* MXNet sets __init__ on the moving stats when BatchNorm is composed. */
static const char *const bn_aux_init[] = {"[\"zero\", {}]", "[\"one\", {}]"};

static int bn_visible(const void *p) { return ((const lmx_bn_param *)p)->output_mean_var ? 3 : 1; }

static int bn_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                          int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)naux;
  const lmx_bn_param *p = LMX_PRM(c, lmx_bn_param);
  LMX_TRY(lmx_in_assign(c, in, 0, &out[0]));
  if (in[0].ndim <= 0) return LMX_OK;
  int ax;
  LMX_TRY(norm_channel(c, &in[0], p->axis, &ax));
  int64_t ch = in[0].dim[ax];
  LMX_TRY(norm_params_from(c, in, ch));
  lmx_shape g = LMX_SHP(ch);
  LMX_TRY(lmx_aux_assign(c, aux, 0, &g));
  LMX_TRY(lmx_aux_assign(c, aux, 1, &g));
  LMX_TRY(lmx_out_assign(c, out, 0, &in[0]));
  LMX_TRY(lmx_out_assign(c, out, 1, &g));
  return lmx_out_assign(c, out, 2, &g);
}

/* float16 data: gamma/beta/aux/mean/var are float32; otherwise all share data's dtype. */
static int bn_infer_type(const lmx_op_ctx *c, int *in, int nin, int *out, int nout, int *aux,
                         int naux) {
  (void)nin, (void)nout, (void)naux;
  int dt = in[0] >= 0 ? in[0] : out[0];
  if (dt < 0) return LMX_OK;
  int pt = dt == LMX_FLOAT16 ? LMX_FLOAT32 : dt;
  LMX_TRY(lmx_dtype_assign(c, &in[0], dt, "input 'data'"));
  LMX_TRY(lmx_dtype_assign(c, &out[0], dt, "output 'output'"));
  LMX_TRY(lmx_dtype_assign(c, &in[1], pt, "input 'gamma'"));
  LMX_TRY(lmx_dtype_assign(c, &in[2], pt, "input 'beta'"));
  LMX_TRY(lmx_dtype_assign(c, &out[1], pt, "output 'mean'"));
  LMX_TRY(lmx_dtype_assign(c, &out[2], pt, "output 'var'"));
  LMX_TRY(lmx_dtype_assign(c, &aux[0], pt, "aux 'moving_mean'"));
  return lmx_dtype_assign(c, &aux[1], pt, "aux 'moving_var'");
}

const lmx_op lmx_op_BatchNorm = {
    .name = "BatchNorm",
    .doc = "Batch normalization.",
    LMX_PARAMS(bn_fields, lmx_bn_param),
    .inputs = norm_inputs,
    .outputs = bn_outputs,
    .num_visible_outputs = bn_visible,
    .aux = bn_aux,
    .aux_init = bn_aux_init,
    .infer_shape = bn_infer_shape,
    .infer_type = bn_infer_type,
    /* backward reads the saved mean and var, not the normalised output: an Activation after
     * it may then take its place (src/exec/fuse.c), and the plan frees it early */
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS | LMX_NEEDS_NOT_OUT0 |
                      LMX_NEEDS_OUT_GRADS,
    .flags = LMX_OPF_MUTATES_AUX,
};

/* ---- LayerNorm ------------------------------------------------------------------------ */

static const lmx_param_field ln_fields[] = {
    LMX_PF(lmx_ln_param, axis, LMX_PT_INT, "-1", NULL, 0, 0,
           "The axis to perform layer normalization."),
    LMX_PF(lmx_ln_param, eps, LMX_PT_FLOAT, "1e-05", NULL, 0, 0,
           "An epsilon parameter to prevent division by 0."),
    LMX_PF(lmx_ln_param, output_mean_var, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Output the mean and std calculated along the given axis."),
};

static const char *const ln_outputs[] = {"output", "mean", "std", NULL};

static int ln_visible(const void *p) { return ((const lmx_ln_param *)p)->output_mean_var ? 3 : 1; }

static int ln_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                          int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_ln_param *p = LMX_PRM(c, lmx_ln_param);
  LMX_TRY(lmx_in_assign(c, in, 0, &out[0]));
  if (in[0].ndim <= 0) return LMX_OK;
  int ax;
  LMX_TRY(norm_channel(c, &in[0], p->axis, &ax));
  LMX_TRY(norm_params_from(c, in, in[0].dim[ax]));
  lmx_shape m = in[0];
  m.dim[ax] = 1;
  LMX_TRY(lmx_out_assign(c, out, 0, &in[0]));
  LMX_TRY(lmx_out_assign(c, out, 1, &m));
  return lmx_out_assign(c, out, 2, &m);
}

const lmx_op lmx_op_LayerNorm = {
    .name = "LayerNorm",
    .doc = "Layer normalization.",
    LMX_PARAMS(ln_fields, lmx_ln_param),
    .inputs = norm_inputs,
    .outputs = ln_outputs,
    .num_visible_outputs = ln_visible,
    .infer_shape = ln_infer_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS,
};
