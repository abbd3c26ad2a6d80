/* nn_fc.c — FullyConnected: out = data · weightᵀ + bias.
 *
 * MXNet 1.9 src/operator/nn/fully_connected.cc. Inputs data, weight, bias (no bias input
 * when no_bias). flatten=True: data (N, d1, ..., dk) is read as (N, d1*...*dk) and the
 * output is (N, num_hidden); flatten=False: the op applies to the last axis, output
 * data.shape[:-1] + (num_hidden,). weight is (num_hidden, in_features), bias
 * (num_hidden,). Inference runs both ways: weight/bias/output from data, and data's
 * leading dims back from the output.
 */
#include "op_impl.h"

static const lmx_param_field fc_fields[] = {
    LMX_PF(lmx_fc_param, num_hidden, LMX_PT_INT, NULL, NULL, 1, 2147483647,
           "Number of hidden nodes of the output."),
    LMX_PF(lmx_fc_param, no_bias, LMX_PT_BOOL, "False", NULL, 0, 0, "Whether to disable bias."),
    LMX_PF(lmx_fc_param, flatten, LMX_PT_BOOL, "True", NULL, 0, 0,
           "Whether to collapse all but the first axis of the input data tensor."),
};

static const char *const fc_in_bias[] = {"data", "weight", "bias", NULL};

static int fc_num_inputs(const void *p) { return ((const lmx_fc_param *)p)->no_bias ? 2 : 3; }

static void fc_input_name(const void *p, int i, char *buf, size_t cap) {
  (void)p;
  snprintf(buf, cap, "%s", i >= 0 && i < 3 ? fc_in_bias[i] : "?");
}

static int fc_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                          int nout, lmx_shape *aux, int naux) {
  (void)nout, (void)aux, (void)naux;
  const lmx_fc_param *p = LMX_PRM(c, lmx_fc_param);
  lmx_shape *d = &in[0];
  if (d->ndim > 0 && out[0].ndim > 0) { /* backward: leading dims from the output */
    lmx_shape e = *d;
    if (p->flatten) e.dim[0] = out[0].dim[0];
    else for (int i = 0; i + 1 < d->ndim && i < out[0].ndim; i++) e.dim[i] = out[0].dim[i];
    LMX_TRY(lmx_in_assign(c, in, 0, &e));
  }
  if (d->ndim <= 0) return LMX_OK;
  int64_t nin_feat = 1;
  if (p->flatten) {
    for (int i = 1; i < d->ndim; i++) nin_feat *= d->dim[i];
    if (d->ndim == 1) nin_feat = d->dim[0];
  } else {
    nin_feat = d->dim[d->ndim - 1];
  }
  lmx_shape w = LMX_SHP(p->num_hidden, nin_feat);
  LMX_TRY(lmx_in_assign(c, in, 1, &w));
  if (!p->no_bias && nin > 2) {
    lmx_shape b = LMX_SHP(p->num_hidden);
    LMX_TRY(lmx_in_assign(c, in, 2, &b));
  }
  lmx_shape o;
  if (p->flatten) {
    o = LMX_SHP(d->ndim == 1 ? 1 : d->dim[0], p->num_hidden);
  } else {
    o = *d;
    o.dim[d->ndim - 1] = p->num_hidden;
  }
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_FullyConnected = {
    .name = "FullyConnected",
    .doc = "Applies a linear transformation: Y = XW^T + b.",
    LMX_PARAMS(fc_fields, lmx_fc_param),
    .num_inputs = fc_num_inputs,
    .input_name = fc_input_name,
    .infer_shape = fc_infer_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUT_GRADS,
};
