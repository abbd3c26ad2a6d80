/* reduce.c — reductions: sum, mean, max, min, prod, norm, argmax, argmin.
 *
 * sum/mean/max/min/prod: axis (tuple, None = all axes), keepdims, exclude (reduce every
 * axis *not* listed). Reducing everything without keepdims gives shape (1,) (MXNet 1.x
 * has no 0-D arrays); an empty axis tuple () reduces nothing (exclude: everything).
 * norm: ord (1 or 2), axis, out_dtype, keepdims. argmax/argmin: axis optional int (None:
 * over the flattened input, result (1,)), keepdims; result in the input's dtype.
 * MXNet 1.9: src/operator/tensor/broadcast_reduce_op_value.cc, broadcast_reduce_norm_value.cc.
 */
#include "op_impl.h"

static const lmx_param_field red_fields[] = {
    LMX_PF(lmx_red_param, axis, LMX_PT_SHAPE, "None", NULL, 0, 0,
           "The axis or axes along which to reduce (None: all)."),
    LMX_PF(lmx_red_param, keepdims, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Keep reduced axes as dimensions of size 1."),
    LMX_PF(lmx_red_param, exclude, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Whether to reduce on all axes except those in axis."),
};

/* Marks reduced axes in `mask` from an axis tuple (ndim -1 = all). */
static int reduce_mask(const lmx_op_ctx *c, const lmx_shape *axis, int exclude, int nd,
                       int *mask) {
  for (int i = 0; i < nd; i++) mask[i] = axis->ndim < 0 ? 1 : exclude;
  if (axis->ndim < 0) return LMX_OK;
  for (int k = 0; k < axis->ndim; k++) {
    int a;
    LMX_TRY(lmx_op_axis(c, "axis", axis->dim[k], nd, &a));
    mask[a] = !exclude;
  }
  return LMX_OK;
}

static int reduce_out(const lmx_op_ctx *c, const lmx_shape *d, const int *mask, int keepdims,
                      lmx_shape *out) {
  lmx_shape o = {0, {0}};
  for (int i = 0; i < d->ndim; i++) {
    if (!mask[i]) o.dim[o.ndim++] = d->dim[i];
    else if (keepdims) o.dim[o.ndim++] = 1;
  }
  if (o.ndim == 0) o = LMX_SHP(1);
  return lmx_out_assign(c, out, 0, &o);
}

static int red_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                           int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_red_param *p = LMX_PRM(c, lmx_red_param);
  if (in[0].ndim <= 0) return LMX_OK;
  int mask[LMX_MAX_NDIM];
  LMX_TRY(reduce_mask(c, &p->axis, p->exclude, in[0].ndim, mask));
  return reduce_out(c, &in[0], mask, p->keepdims, out);
}

#define REDUCE_OP(id, needs, docstr)                     \
  const lmx_op lmx_op_##id = {                           \
      .name = #id,                                       \
      .doc = docstr,                                     \
      LMX_PARAMS(red_fields, lmx_red_param),                 \
      .infer_shape = red_infer_shape,                    \
      .backward_needs = (needs),                         \
  }

enum { G = LMX_NEEDS_OUT_GRADS, GIO = LMX_NEEDS_OUT_GRADS | LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS };

REDUCE_OP(sum, G, "Computes the sum of array elements over given axes.");
REDUCE_OP(mean, G, "Computes the mean of array elements over given axes.");
REDUCE_OP(max, GIO, "Computes the max of array elements over given axes.");
REDUCE_OP(min, GIO, "Computes the min of array elements over given axes.");
REDUCE_OP(prod, GIO, "Computes the product of array elements over given axes.");

/* ---- norm ----------------------------------------------------------------------------- */

static const lmx_param_field norm_fields[] = {
    LMX_PF(lmx_norm_param, ord, LMX_PT_INT, "2", NULL, 1, 2, "Order of the norm (1 or 2)."),
    LMX_PF(lmx_norm_param, axis, LMX_PT_SHAPE, "None", NULL, 0, 0,
           "The axis or axes along which to compute the norm (None: all)."),
    LMX_PF(lmx_norm_param, out_dtype, LMX_PT_DTYPE, "None", NULL, 0, 0,
           "The data type of the output."),
    LMX_PF(lmx_norm_param, keepdims, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Keep reduced axes as dimensions of size 1."),
};

static int norm_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                            int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_norm_param *p = LMX_PRM(c, lmx_norm_param);
  if (in[0].ndim <= 0) return LMX_OK;
  if (p->axis.ndim > 2)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'axis': norm takes at most 2 axes, got %d",
                       p->axis.ndim);
  int mask[LMX_MAX_NDIM];
  LMX_TRY(reduce_mask(c, &p->axis, 0, in[0].ndim, mask));
  return reduce_out(c, &in[0], mask, p->keepdims, out);
}

static int norm_infer_type(const lmx_op_ctx *c, int *in, int nin, int *out, int nout,
                           int *aux, int naux) {
  (void)aux, (void)naux;
  const lmx_norm_param *p = LMX_PRM(c, lmx_norm_param);
  return lmx_infer_type_inputs_same(c, in, nin, out, nout, p->out_dtype >= 0 ? p->out_dtype : in[0]);
}

const lmx_op lmx_op_norm = {
    .name = "norm",
    .doc = "Computes the norm on an NDArray.",
    LMX_PARAMS(norm_fields, lmx_norm_param),
    .infer_shape = norm_infer_shape,
    .infer_type = norm_infer_type,
    .backward_needs = GIO,
};

/* ---- argmax / argmin ------------------------------------------------------------------ */

static const lmx_param_field arg_fields[] = {
    LMX_PF(lmx_arg_param, axis, LMX_PT_OPT_INT, "None", NULL, 0, 0,
           "The axis along which to search (None: the flattened input)."),
    LMX_PF(lmx_arg_param, keepdims, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Keep the reduced axis as a dimension of size 1."),
};

static int arg_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                           int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_arg_param *p = LMX_PRM(c, lmx_arg_param);
  if (in[0].ndim <= 0) return LMX_OK;
  lmx_shape ax = {-1, {0}};
  if (p->axis != LMX_PARAM_NONE_INT) ax = LMX_SHP(p->axis);
  int mask[LMX_MAX_NDIM];
  LMX_TRY(reduce_mask(c, &ax, 0, in[0].ndim, mask));
  if (ax.ndim < 0 && p->keepdims) {
    lmx_shape o = in[0];
    for (int i = 0; i < o.ndim; i++) o.dim[i] = 1;
    return lmx_out_assign(c, out, 0, &o);
  }
  return reduce_out(c, &in[0], mask, ax.ndim < 0 ? 0 : p->keepdims, out);
}

const lmx_op lmx_op_argmax = {
    .name = "argmax",
    .doc = "Returns indices of the maximum values along an axis.",
    LMX_PARAMS(arg_fields, lmx_arg_param),
    .infer_shape = arg_infer_shape,
    .flags = LMX_OPF_NO_GRAD,
};

const lmx_op lmx_op_argmin = {
    .name = "argmin",
    .doc = "Returns indices of the minimum values along an axis.",
    LMX_PARAMS(arg_fields, lmx_arg_param),
    .infer_shape = arg_infer_shape,
    .flags = LMX_OPF_NO_GRAD,
};
