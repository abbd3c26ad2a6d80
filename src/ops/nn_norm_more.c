/* nn_norm_more.c — LRN, InstanceNorm, L2Normalization and GroupNorm (channel-first data).
 *
 * LRN: data (N, C, ...) -> output, tmp_norm (hidden), both of data's shape:
 *   tmp_norm = knorm + alpha / nsize * sum_{|j - c| <= nsize/2} x_j^2,
 *   output = x * tmp_norm^(-beta); nsize must be odd (MXNet checks it).
 * InstanceNorm: data (N, C, spatial...), gamma, beta (C,) -> output, mean, var (N, C)
 *   (hidden), normalising each (n, c) over its spatial positions with var + eps.
 * L2Normalization: data -> output, norm (hidden): output = x / sqrt(sum x^2 + eps) over
 *   everything but N (instance; norm (N,)), over C (channel; norm (N, 1, spatial...)) or
 *   over the spatial positions (spatial; norm (N, C)).
 * GroupNorm: data (N, C, spatial...), gamma, beta (num_groups,) -> output, mean, std
 *   (N, num_groups), visible with output_mean_var; each (n, group) of C/num_groups
 *   channels is normalised with std = sqrt(var + eps) and scaled by its group's gamma and
 *   beta (MXNet 1.x keeps one gamma/beta per group, not per channel).
 * Every one is a "row" normalisation; lmx_rownorm_plan gives the rows (shared by the CPU
 * and CUDA glue). MXNet 1.9: src/operator/lrn.cc, instance_norm.cc, l2_normalization.cc,
 * nn/group_norm.cc.
 */
#include "norm_more.h"
#include "op_impl.h"

/* ---- LRN ------------------------------------------------------------------------------ */

static const lmx_param_field lrn_fields[] = {
    LMX_PF(lmx_lrn_param, alpha, LMX_PT_FLOAT, "0.0001", NULL, 0, 0,
           "The variance scaling parameter alpha in the LRN expression."),
    LMX_PF(lmx_lrn_param, beta, LMX_PT_FLOAT, "0.75", NULL, 0, 0,
           "The power parameter beta in the LRN expression."),
    LMX_PF(lmx_lrn_param, knorm, LMX_PT_FLOAT, "2", NULL, 0, 0,
           "The parameter k in the LRN expression."),
    LMX_PF(lmx_lrn_param, nsize, LMX_PT_INT, NULL, NULL, 1, 1e9,
           "normalization window width in elements."),
};

static int lrn_check(const lmx_op_ctx *c, void *param) {
  const lmx_lrn_param *p = param;
  if (p->nsize % 2 != 1)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'nsize': expected an odd window width, "
                       "got %lld", (long long)p->nsize);
  return LMX_OK;
}

static const char *const lrn_outputs[] = {"output", "tmp_norm", NULL};

static int one_visible(const void *p) {
  (void)p;
  return 1;
}

static int need_ndim(const lmx_op_ctx *c, const lmx_shape *d, int lo, int hi) {
  if (d->ndim >= lo && d->ndim <= hi) return LMX_OK;
  char s[LMX_SHAPE_STRCAP];
  return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': expected %d-D to %d-D data (N, C, ...), "
                     "got %s", lo, hi, lmx_shape_str(d, s));
}

static int lrn_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                           int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)aux, (void)naux;
  LMX_TRY(lmx_in_assign(c, in, 0, &out[0]));
  if (in[0].ndim <= 0) return LMX_OK;
  LMX_TRY(need_ndim(c, &in[0], 2, LMX_MAX_NDIM));
  for (int i = 0; i < nout; i++) LMX_TRY(lmx_out_assign(c, out, i, &in[0]));
  return LMX_OK;
}

const lmx_op lmx_op_LRN = {
    .name = "LRN",
    .doc = "Applies local response normalization to the input: each element is divided by "
           "(knorm + alpha / nsize * sum of the squares over nsize neighbouring channels) "
           "to the power beta.",
    LMX_PARAMS(lrn_fields, lmx_lrn_param),
    .param_check = lrn_check,
    .outputs = lrn_outputs,
    .num_visible_outputs = one_visible,
    .infer_shape = lrn_infer_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS,
};

/* ---- the row view -------------------------------------------------------------------- */

int lmx_rownorm_plan(const lmx_op_ctx *c, int kind, const lmx_shape *d, lmx_rownorm *r) {
  int64_t N = d->dim[0], C = d->ndim > 1 ? d->dim[1] : 1, S = 1;
  for (int i = 2; i < d->ndim; i++) S *= d->dim[i];
  r->na = 1;
  switch (kind) {
  case LMX_RN_INSTANCE: r->outer = N * C, r->len = S, r->inner = 1, r->na = C; break;
  case LMX_RN_GROUP: {
    int64_t G = ((const lmx_gn_param *)c->param)->num_groups;
    if (C % G != 0)
      return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': %lld channels are not divisible by "
                         "num_groups %lld", (long long)C, (long long)G);
    r->outer = N * G, r->len = C / G * S, r->inner = 1, r->na = G;
    break;
  }
  default: {
    int mode = ((const lmx_l2n_param *)c->param)->mode;
    if (mode == LMX_L2N_CHANNEL) r->outer = N, r->len = C, r->inner = S;
    else if (mode == LMX_L2N_SPATIAL) r->outer = N * C, r->len = S, r->inner = 1;
    else r->outer = N, r->len = C * S, r->inner = 1;
  }
  }
  return LMX_OK;
}

static const char *const norm_inputs[] = {"data", "gamma", "beta", NULL};

/* data at least 3-D; gamma/beta (a,); the two statistics outputs of shape st */
static int stats_infer(const lmx_op_ctx *c, lmx_shape *in, lmx_shape *out, int64_t a) {
  LMX_TRY(lmx_in_assign(c, in, 0, &out[0]));
  if (in[0].ndim <= 0) return LMX_OK;
  LMX_TRY(need_ndim(c, &in[0], 3, LMX_MAX_NDIM));
  lmx_shape g = LMX_SHP(a), st = LMX_SHP(in[0].dim[0], a);
  LMX_TRY(lmx_in_assign(c, in, 1, &g));
  LMX_TRY(lmx_in_assign(c, in, 2, &g));
  LMX_TRY(lmx_out_assign(c, out, 0, &in[0]));
  LMX_TRY(lmx_out_assign(c, out, 1, &st));
  return lmx_out_assign(c, out, 2, &st);
}

/* ---- InstanceNorm --------------------------------------------------------------------- */

static const lmx_param_field in_fields[] = {
    LMX_PF(lmx_inorm_param, eps, LMX_PT_FLOAT, "0.001", NULL, 0, 0,
           "An `epsilon` parameter to prevent division by 0."),
};

static const char *const in_outputs[] = {"output", "mean", "var", NULL};

static int in_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                          int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  if (in[0].ndim <= 0 && out[0].ndim <= 0) return LMX_OK;
  if (in[0].ndim <= 0) LMX_TRY(lmx_in_assign(c, in, 0, &out[0]));
  if (in[0].ndim < 2) return need_ndim(c, &in[0], 3, LMX_MAX_NDIM);
  return stats_infer(c, in, out, in[0].dim[1]);
}

const lmx_op lmx_op_InstanceNorm = {
    .name = "InstanceNorm",
    .doc = "Applies instance normalization to the n-dimensional input array: each channel of "
           "each sample is normalised over its spatial positions, then scaled by gamma and "
           "shifted by beta (per channel).",
    LMX_PARAMS(in_fields, lmx_inorm_param),
    .inputs = norm_inputs,
    .outputs = in_outputs,
    .num_visible_outputs = one_visible,
    .infer_shape = in_infer_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS,
};

/* ---- GroupNorm ------------------------------------------------------------------------ */

static const lmx_param_field gn_fields[] = {
    LMX_PF(lmx_gn_param, num_groups, LMX_PT_INT, "1", NULL, 1, 1e9, "Total number of groups."),
    LMX_PF(lmx_gn_param, eps, LMX_PT_FLOAT, "1e-05", NULL, 0, 0,
           "An `epsilon` parameter to prevent division by 0."),
    LMX_PF(lmx_gn_param, output_mean_var, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Output the mean and std calculated along the given axis."),
};

static const char *const gn_outputs[] = {"output", "mean", "std", NULL};

static int gn_visible(const void *p) { return ((const lmx_gn_param *)p)->output_mean_var ? 3 : 1; }

static int gn_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                          int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_gn_param *p = LMX_PRM(c, lmx_gn_param);
  if (in[0].ndim <= 0) LMX_TRY(lmx_in_assign(c, in, 0, &out[0]));
  if (in[0].ndim <= 0) return LMX_OK;
  LMX_TRY(need_ndim(c, &in[0], 3, LMX_MAX_NDIM));
  if (in[0].dim[1] && in[0].dim[1] % p->num_groups != 0)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': %lld channels are not divisible by "
                       "num_groups %lld", (long long)in[0].dim[1], (long long)p->num_groups);
  return stats_infer(c, in, out, p->num_groups);
}

const lmx_op lmx_op_GroupNorm = {
    .name = "GroupNorm",
    .doc = "Group normalization: the channels are split into num_groups groups; each group "
           "of each sample is normalised over its channels and spatial positions, then "
           "scaled by its gamma and shifted by its beta (one per group).",
    LMX_PARAMS(gn_fields, lmx_gn_param),
    .inputs = norm_inputs,
    .outputs = gn_outputs,
    .num_visible_outputs = gn_visible,
    .infer_shape = gn_infer_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS,
};

/* ---- L2Normalization ------------------------------------------------------------------ */

static const lmx_param_field l2_fields[] = {
    LMX_PF(lmx_l2n_param, eps, LMX_PT_FLOAT, "1e-10", NULL, 0, 0,
           "A small constant for numerical stability."),
    LMX_PF(lmx_l2n_param, mode, LMX_PT_ENUM, "instance", LMX_L2N_CHOICES, 0, 0,
           "Specify the dimension along which to compute L2 norm."),
};

static const char *const l2_outputs[] = {"output", "norm", NULL};

static int l2_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                          int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_l2n_param *p = LMX_PRM(c, lmx_l2n_param);
  LMX_TRY(lmx_in_assign(c, in, 0, &out[0]));
  if (in[0].ndim <= 0) return LMX_OK;
  const lmx_shape *d = &in[0];
  LMX_TRY(need_ndim(c, d, p->mode == LMX_L2N_INSTANCE ? 2 : 3, LMX_MAX_NDIM));
  lmx_shape nm;
  if (p->mode == LMX_L2N_INSTANCE) nm = LMX_SHP(d->dim[0]);
  else if (p->mode == LMX_L2N_SPATIAL) nm = LMX_SHP(d->dim[0], d->dim[1]);
  else nm = *d, nm.dim[1] = 1;
  LMX_TRY(lmx_out_assign(c, out, 0, d));
  return lmx_out_assign(c, out, 1, &nm);
}

const lmx_op lmx_op_L2Normalization = {
    .name = "L2Normalization",
    .doc = "Normalize the input array using the L2 norm: out = data / sqrt(sum(data ** 2) + "
           "eps), the sum over every axis but the first (mode instance), over the channel "
           "axis (channel) or over the spatial axes (spatial).",
    LMX_PARAMS(l2_fields, lmx_l2n_param),
    .outputs = l2_outputs,
    .num_visible_outputs = one_visible,
    .infer_shape = l2_infer_shape,
    .backward_needs = LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS,
};
