/* manip_pick.c — pick and cumsum (issue 14), with their own kernels (kernels/cpu/manip.c,
 * kernels/cuda/manip.cu; glue src/ops/{cpu,cuda}/manip_pick.c).
 *
 * pick(data, index): out[o, i] = data[o, index[o, i], i] around `axis`; an index of any
 * dtype is truncated, then clipped into [0, A) (mode clip) or wrapped (mode wrap); the
 * output drops the axis (keepdims: keeps it as 1); the gradient goes to the picked
 * elements, and the index gets a zero gradient (MXNet's zeros_like node).
 * cumsum (MXNet 1.9's _np_cumsum, kept as an alias): running sums along `axis` (None: of
 * the flattened array, a 1-D output), in `dtype` (None: the input's), summed in double;
 * the gradient is the reverse running sum of the output gradient.
 * MXNet 1.9: src/operator/tensor/broadcast_reduce_op(-inl.h) (PickParam),
 * src/operator/numpy/np_cumsum(-inl.h) (CumsumParam).
 */
#include "manip_params.h"
#include "op_impl.h"

enum { G = LMX_NEEDS_OUT_GRADS };

/* ---- pick --------------------------------------------------------------------------------- */

static const char *const pick_inputs[] = {"data", "index", NULL};

static const lmx_param_field pick_fields[] = {
    LMX_PF(lmx_pick_param, axis, LMX_PT_OPT_INT, "-1", NULL, 0, 0,
           "int or None. The axis to picking the elements. Negative values means indexing "
           "from right to left. If is `None`, the elements in the index w.r.t the flattened "
           "input will be picked (not supported, as in MXNet: give an axis)."),
    LMX_PF(lmx_pick_param, keepdims, LMX_PT_BOOL, "False", NULL, 0, 0,
           "If true, the axis where we pick the elements is left in the result as dimension "
           "with size one."),
    LMX_PF(lmx_pick_param, mode, LMX_PT_ENUM, "clip", LMX_PICK_CHOICES, 0, 0,
           "Specify how out-of-bound indices behave. Default is 'clip'. 'clip' means clip "
           "to the range. So, if all indices mentioned are too large, they are replaced by "
           "the index that addresses the last element along an axis. 'wrap' means to wrap "
           "around."),
};

static int pick_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                            int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_pick_param *p = LMX_PRM(c, lmx_pick_param);
  if (p->axis == LMX_PARAM_NONE_INT)
    return lmx_op_fail(c, LMX_ERR_UNSUPPORTED, "parameter 'axis': None is not supported by "
                       "pick (as in MXNet); give an axis");
  if (!lmx_shape_known(&in[0])) return LMX_OK;
  int a;
  LMX_TRY(lmx_op_axis(c, "axis", p->axis, in[0].ndim, &a));
  lmx_shape ix = in[0], o = in[0]; /* the index never has the axis (MXNet's rule) */
  for (int k = a; k + 1 < ix.ndim; k++) ix.dim[k] = ix.dim[k + 1];
  if (--ix.ndim == 0) ix = LMX_SHP(1);
  if (p->keepdims) o.dim[a] = 1;
  else o = ix;
  LMX_TRY(lmx_in_assign(c, in, 1, &ix));
  return lmx_out_assign(c, out, 0, &o);
}

static int pick_infer_type(const lmx_op_ctx *c, int *in, int nin, int *out, int nout, int *aux,
                           int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  if (in[0] < 0 && out[0] >= 0) in[0] = out[0];
  return in[0] < 0 ? LMX_OK : lmx_dtype_assign(c, &out[0], in[0], "output");
}

const lmx_op lmx_op_pick = {
    .name = "pick",
    .doc = "Picks elements from an input array according to the input indices along the given "
           "axis: out[i, j] = data[i, index[i, j], j] around `axis` (the index has data's shape "
           "without the axis; keepdims keeps it in the output). The index gets a zero "
           "gradient.",
    LMX_PARAMS(pick_fields, lmx_pick_param),
    .inputs = pick_inputs,
    .infer_shape = pick_infer_shape,
    .infer_type = pick_infer_type,
    .backward_needs = G | LMX_NEEDS_INPUTS,
};

/* ---- cumsum ------------------------------------------------------------------------------- */

static const char *const cumsum_inputs[] = {"a", NULL};

static const lmx_param_field cumsum_fields[] = {
    LMX_PF(lmx_cumsum_param, axis, LMX_PT_OPT_INT, "None", NULL, 0, 0,
           "Axis along which the cumulative sum is computed. The default (None) is to compute "
           "the cumsum over the flattened array."),
    LMX_PF(lmx_cumsum_param, dtype, LMX_PT_DTYPE, "None", NULL, 0, 0,
           "Type of the returned array and of the accumulator in which the elements are "
           "summed. If dtype is not specified, it defaults to the dtype of a."),
};

static int cumsum_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                              int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_cumsum_param *p = LMX_PRM(c, lmx_cumsum_param);
  if (!lmx_shape_known(&in[0])) return LMX_OK;
  if (p->axis == LMX_PARAM_NONE_INT) {
    lmx_shape o = LMX_SHP(lmx_shape_size(&in[0]));
    return lmx_out_assign(c, out, 0, &o);
  }
  int a;
  LMX_TRY(lmx_op_axis(c, "axis", p->axis, in[0].ndim, &a));
  return lmx_out_assign(c, out, 0, &in[0]);
}

static int cumsum_infer_type(const lmx_op_ctx *c, int *in, int nin, int *out, int nout,
                             int *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_cumsum_param *p = LMX_PRM(c, lmx_cumsum_param);
  if (p->dtype >= 0) return lmx_dtype_assign(c, &out[0], p->dtype, "output");
  if (in[0] < 0 && out[0] >= 0) in[0] = out[0];
  return in[0] < 0 ? LMX_OK : lmx_dtype_assign(c, &out[0], in[0], "output");
}

const lmx_op lmx_op_cumsum = {
    .name = "cumsum",
    .doc = "Returns the cumulative sum of the elements along a given axis (MXNet 1.9's "
           "_np_cumsum, an alias).",
    LMX_PARAMS(cumsum_fields, lmx_cumsum_param),
    .inputs = cumsum_inputs,
    .infer_shape = cumsum_infer_shape,
    .infer_type = cumsum_infer_type,
    .backward_needs = G,
};

/* ---- batch_take ----------------------------------------------------------------------------- */

static const char *const batch_take_inputs[] = {"a", "indices", NULL};

static int batch_take_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                                  int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  if (in[1].ndim > 0) LMX_TRY(lmx_out_assign(c, out, 0, &in[1]));
  else if (out[0].ndim > 0) LMX_TRY(lmx_in_assign(c, in, 1, &out[0]));
  if (!lmx_shape_known(&in[0]) || !lmx_shape_known(&in[1])) return LMX_OK;
  int64_t rows = lmx_shape_size(&in[0]) / in[0].dim[in[0].ndim - 1];
  if (rows != lmx_shape_size(&in[1]))
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'indices' has %lld elements, expected one per "
                       "row of input 'a' (%lld)", (long long)lmx_shape_size(&in[1]),
                       (long long)rows);
  return LMX_OK;
}

static int batch_take_infer_type(const lmx_op_ctx *c, int *in, int nin, int *out, int nout,
                                 int *aux, int naux) {
  LMX_TRY(lmx_dtype_assign(c, &in[1], LMX_INT32, "input 'indices'"));
  return pick_infer_type(c, in, nin, out, nout, aux, naux);
}

const lmx_op lmx_op_batch_take = {
    .name = "batch_take",
    .doc = "Takes one element per row of a along its last axis: out[i] = a[i, indices[i]] "
           "(int32 indices, clipped into range). No gradient, as in MXNet.",
    .inputs = batch_take_inputs,
    .infer_shape = batch_take_infer_shape,
    .infer_type = batch_take_infer_type,
};
