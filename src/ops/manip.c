/* manip.c — tensor manipulation operators (issue 14): tile, repeat, stack, broadcast_to,
 * broadcast_axis (broadcast_axes), broadcast_like, reshape_like, slice_like, diag,
 * shape_array, size_array.
 *
 * Descriptors and shape inference only; the index arithmetic both backends share is
 * src/ops/manip_plan.c, the glue src/ops/cpu/manip.c and src/ops/cuda/manip.c. Every op
 * here is a strided copy (forward) whose gradient is either the reverse copy or, for the
 * replicating ones (tile, repeat, the broadcast_to family), a sum over the replicas.
 * The second input of broadcast_like / reshape_like / slice_like only gives a shape: its
 * gradient is zero (MXNet's zeros_like node). shape_array and size_array write int64.
 * MXNet 1.9: src/operator/tensor/matrix_op(-inl.h), broadcast_reduce_op_value.cc,
 * diag_op(-inl.h), elemwise_unary_op_basic.cc (shape_array, size_array).
 */
#include "manip_params.h"
#include "op_impl.h"

enum { G = LMX_NEEDS_OUT_GRADS };

extern const lmx_op lmx_op_size_array;

/* A shape as text for a message (the buffer lives to the end of the enclosing block). */
#define SH(i, s) ((void)(i), lmx_shape_str((s), (char[LMX_SHAPE_STRCAP]){0}))

static int too_many_dims(const lmx_op_ctx *c, int nd) {
  return lmx_op_fail(c, LMX_ERR_SHAPE, "the output would have %d dims (at most %d)", nd,
                     LMX_MAX_NDIM);
}

/* ---- tile ------------------------------------------------------------------------------ */

static const lmx_param_field tile_fields[] = {
    LMX_PF(lmx_tile_param, reps, LMX_PT_SHAPE, NULL, NULL, 0, 0,
           "The number of times for repeating the tensor a. Each dim size of reps must be a "
           "positive integer. If reps has length d, the result will have dimension of "
           "max(d, a.ndim); a is promoted to d dims by prepending 1s, or reps by prepending "
           "1s."),
};

static int tile_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                            int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_tile_param *p = LMX_PRM(c, lmx_tile_param);
  for (int i = 0; i < p->reps.ndim; i++)
    if (p->reps.dim[i] <= 0)
      return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'reps': expected positive entries, got "
                         "%lld at position %d", (long long)p->reps.dim[i], i);
  if (in[0].ndim <= 0) return LMX_OK;
  int nd = in[0].ndim > p->reps.ndim ? in[0].ndim : p->reps.ndim;
  lmx_shape o = {nd, {0}};
  for (int k = 0; k < nd; k++) {
    int i = k - (nd - in[0].ndim), r = k - (nd - p->reps.ndim);
    o.dim[k] = (i >= 0 ? in[0].dim[i] : 1) * (r >= 0 ? p->reps.dim[r] : 1);
  }
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_tile = {
    .name = "tile",
    .doc = "Repeats the whole array multiple times: tile(x, reps=(2, 3)) of shape (2, 2) has "
           "shape (4, 6).",
    LMX_PARAMS(tile_fields, lmx_tile_param),
    .infer_shape = tile_infer_shape,
    .backward_needs = G,
};

/* ---- repeat ---------------------------------------------------------------------------- */

static const lmx_param_field repeat_fields[] = {
    LMX_PF(lmx_repeat_param, repeats, LMX_PT_INT, NULL, NULL, 1, 1e15,
           "The number of repetitions for each element."),
    LMX_PF(lmx_repeat_param, axis, LMX_PT_OPT_INT, "None", NULL, 0, 0,
           "The axis along which to repeat values. Negative counts from the end. By default, "
           "the flattened input array is repeated and a flat output array returned."),
};

static int repeat_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                              int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_repeat_param *p = LMX_PRM(c, lmx_repeat_param);
  if (!lmx_shape_known(&in[0])) return LMX_OK;
  lmx_shape o = in[0];
  if (p->axis == LMX_PARAM_NONE_INT) {
    o = LMX_SHP(lmx_shape_size(&in[0]) * p->repeats);
  } else {
    int a;
    LMX_TRY(lmx_op_axis(c, "axis", p->axis, in[0].ndim, &a));
    o.dim[a] *= p->repeats;
  }
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_repeat = {
    .name = "repeat",
    .doc = "Repeats each element of an array after the other: repeat([1, 2], repeats=2) is "
           "[1, 1, 2, 2].",
    LMX_PARAMS(repeat_fields, lmx_repeat_param),
    .infer_shape = repeat_infer_shape,
    .backward_needs = G,
};

/* ---- stack ----------------------------------------------------------------------------- */

static const lmx_param_field stack_fields[] = {
    LMX_PF(lmx_stack_param, axis, LMX_PT_INT, "0", NULL, 0, 0,
           "The axis in the result array along which the input arrays are stacked."),
    LMX_PF(lmx_stack_param, num_args, LMX_PT_INT, NULL, NULL, 1, 100000,
           "Number of inputs to be stacked."),
};

static int stack_num_inputs(const void *p) { return (int)((const lmx_stack_param *)p)->num_args; }
static void arg_name(const void *p, int i, char *buf, size_t cap) {
  (void)p;
  snprintf(buf, cap, "arg%d", i);
}

static int stack_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                             int nout, lmx_shape *aux, int naux) {
  (void)nout, (void)aux, (void)naux;
  const lmx_stack_param *p = LMX_PRM(c, lmx_stack_param);
  lmx_shape t = {0, {0}};
  if (out[0].ndim > 1) { /* inputs from the output: drop the stacked axis */
    int a;
    LMX_TRY(lmx_op_axis(c, "axis", p->axis, out[0].ndim, &a));
    t.ndim = out[0].ndim - 1;
    for (int i = 0, j = 0; i < out[0].ndim; i++)
      if (i != a) t.dim[j++] = out[0].dim[i];
  }
  for (int i = 0; i < nin && t.ndim == 0; i++)
    if (in[i].ndim > 0) t = in[i];
  if (t.ndim == 0) return LMX_OK;
  for (int i = 0; i < nin; i++) LMX_TRY(lmx_in_assign(c, in, i, &t));
  for (int i = 0; i < nin; i++) /* merged dims back into t */
    for (int k = 0; k < t.ndim; k++)
      if (!t.dim[k]) t.dim[k] = in[i].dim[k];
  if (t.ndim + 1 > LMX_MAX_NDIM) return too_many_dims(c, t.ndim + 1);
  int a;
  LMX_TRY(lmx_op_axis(c, "axis", p->axis, t.ndim + 1, &a));
  lmx_shape o = {t.ndim + 1, {0}};
  for (int i = 0, j = 0; i < o.ndim; i++) o.dim[i] = i == a ? p->num_args : t.dim[j++];
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_stack = {
    .name = "stack",
    .doc = "Joins a sequence of arrays of one shape along a new axis.",
    LMX_PARAMS(stack_fields, lmx_stack_param),
    .num_inputs = stack_num_inputs,
    .input_name = arg_name,
    .infer_shape = stack_infer_shape,
    .backward_needs = G,
};

/* ---- broadcast_to / broadcast_axis / broadcast_like ------------------------------------ */

static int bcast_dim(const lmx_op_ctx *c, const lmx_shape *x, int k, int64_t want, lmx_shape *o) {
  if (x->dim[k] != 1 && x->dim[k] != want)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input shape %s cannot be broadcast to size %lld on "
                       "axis %d (only dims of size 1 broadcast)", SH(0, x), (long long)want, k);
  o->dim[k] = want;
  return LMX_OK;
}

static const lmx_param_field bto_fields[] = {
    LMX_PF(lmx_bto_param, shape, LMX_PT_SHAPE, "[]", NULL, 0, 0,
           "The shape of the desired array. A 0 keeps the input's dim: broadcast_to of "
           "(2, 1) with shape (0, 3) gives (2, 3)."),
};

static int bto_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                           int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_bto_param *p = LMX_PRM(c, lmx_bto_param);
  if (!lmx_shape_known(&in[0])) return LMX_OK;
  if (p->shape.ndim != in[0].ndim)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "parameter 'shape': expected %d dims like input "
                       "'data' %s, got %s", in[0].ndim, SH(0, &in[0]), SH(1, &p->shape));
  lmx_shape o = in[0];
  for (int k = 0; k < o.ndim; k++)
    LMX_TRY(bcast_dim(c, &in[0], k, p->shape.dim[k] ? p->shape.dim[k] : in[0].dim[k], &o));
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_broadcast_to = {
    .name = "broadcast_to",
    .doc = "Broadcasts the input array to a new shape (dims of size 1 are replicated).",
    LMX_PARAMS(bto_fields, lmx_bto_param),
    .infer_shape = bto_infer_shape,
    .backward_needs = G,
};

static const lmx_param_field baxis_fields[] = {
    LMX_PF(lmx_baxis_param, axis, LMX_PT_SHAPE, "[]", NULL, 0, 0,
           "The axes to perform the broadcasting."),
    LMX_PF(lmx_baxis_param, size, LMX_PT_SHAPE, "[]", NULL, 0, 0,
           "Target sizes of the broadcasting axes."),
};

static int baxis_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                             int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_baxis_param *p = LMX_PRM(c, lmx_baxis_param);
  if (p->axis.ndim != p->size.ndim)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameters 'axis' and 'size': expected the same "
                       "length, got %d and %d", p->axis.ndim, p->size.ndim);
  if (!lmx_shape_known(&in[0])) return LMX_OK;
  lmx_shape o = in[0];
  for (int i = 0; i < p->axis.ndim; i++) {
    int a;
    LMX_TRY(lmx_op_axis(c, "axis", p->axis.dim[i], in[0].ndim, &a));
    if (in[0].dim[a] != 1)
      return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data' %s: axis %d to broadcast must have "
                         "size 1, got %lld", SH(0, &in[0]), a, (long long)in[0].dim[a]);
    if (p->size.dim[i] <= 0)
      return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'size': expected positive sizes, got "
                         "%lld", (long long)p->size.dim[i]);
    o.dim[a] = p->size.dim[i];
  }
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_broadcast_axis = {
    .name = "broadcast_axis",
    .doc = "Broadcasts the input array over particular axes (alias broadcast_axes).",
    LMX_PARAMS(baxis_fields, lmx_baxis_param),
    .infer_shape = baxis_infer_shape,
    .backward_needs = G,
};

static const char *const lhs_rhs[] = {"lhs", "rhs", NULL};

static const lmx_param_field blike_fields[] = {
    LMX_PF(lmx_blike_param, lhs_axes, LMX_PT_SHAPE, "None", NULL, 0, 0,
           "Axes to perform broadcast on in the first input array."),
    LMX_PF(lmx_blike_param, rhs_axes, LMX_PT_SHAPE, "None", NULL, 0, 0,
           "Axes to copy from the second input array."),
};

static int blike_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                             int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_blike_param *p = LMX_PRM(c, lmx_blike_param);
  if ((p->lhs_axes.ndim < 0) != (p->rhs_axes.ndim < 0) || p->lhs_axes.ndim != p->rhs_axes.ndim)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameters 'lhs_axes' and 'rhs_axes': expected both "
                       "None or of the same length, got %d and %d entries",
                       p->lhs_axes.ndim, p->rhs_axes.ndim);
  if (!lmx_shape_known(&in[0]) || !lmx_shape_known(&in[1])) return LMX_OK;
  lmx_shape o = in[0];
  if (p->lhs_axes.ndim < 0) {
    if (in[0].ndim != in[1].ndim)
      return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'lhs' %s cannot be broadcast like input "
                         "'rhs' %s: expected the same number of dims", SH(0, &in[0]),
                         SH(1, &in[1]));
    for (int k = 0; k < o.ndim; k++) LMX_TRY(bcast_dim(c, &in[0], k, in[1].dim[k], &o));
  } else {
    for (int i = 0; i < p->lhs_axes.ndim; i++) {
      int la, ra;
      LMX_TRY(lmx_op_axis(c, "lhs_axes", p->lhs_axes.dim[i], in[0].ndim, &la));
      LMX_TRY(lmx_op_axis(c, "rhs_axes", p->rhs_axes.dim[i], in[1].ndim, &ra));
      LMX_TRY(bcast_dim(c, &in[0], la, in[1].dim[ra], &o));
    }
  }
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_broadcast_like = {
    .name = "broadcast_like",
    .doc = "Broadcasts lhs to the shape of rhs (or copies the sizes of rhs_axes of rhs onto "
           "lhs_axes of lhs). rhs only gives a shape: its gradient is zero.",
    LMX_PARAMS(blike_fields, lmx_blike_param),
    .inputs = lhs_rhs,
    .infer_shape = blike_infer_shape,
    .backward_needs = G,
};

/* ---- reshape_like ---------------------------------------------------------------------- */

static const lmx_param_field rlike_fields[] = {
    LMX_PF(lmx_rlike_param, lhs_begin, LMX_PT_OPT_INT, "None", NULL, 0, 0,
           "Defaults to 0. The beginning index along which the lhs dimensions are to be "
           "reshaped. Supports negative indices."),
    LMX_PF(lmx_rlike_param, lhs_end, LMX_PT_OPT_INT, "None", NULL, 0, 0,
           "Defaults to None. The ending index along which the lhs dimensions are to be "
           "used for reshaping. Supports negative indices."),
    LMX_PF(lmx_rlike_param, rhs_begin, LMX_PT_OPT_INT, "None", NULL, 0, 0,
           "Defaults to 0. The beginning index along which the rhs dimensions are to be "
           "used for reshaping. Supports negative indices."),
    LMX_PF(lmx_rlike_param, rhs_end, LMX_PT_OPT_INT, "None", NULL, 0, 0,
           "Defaults to None. The ending index along which the rhs dimensions are to be "
           "used for reshaping. Supports negative indices."),
};

/* [begin, end) of a dim range from optional bounds (None: 0 / nd; negative from the end). */
static int dim_range(const lmx_op_ctx *c, const char *side, int64_t b, int64_t e, int nd,
                     int *ob, int *oe) {
  int64_t B = b == LMX_PARAM_NONE_INT ? 0 : b < 0 ? b + nd : b;
  int64_t E = e == LMX_PARAM_NONE_INT ? nd : e < 0 ? e + nd : e;
  if (B < 0 || E > nd || B > E)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameters '%s_begin' and '%s_end': expected "
                       "0 <= begin <= end <= %d after counting negatives from the end, got "
                       "[%lld, %lld)", side, side, nd, (long long)B, (long long)E);
  *ob = (int)B, *oe = (int)E;
  return LMX_OK;
}

static int rlike_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                             int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_rlike_param *p = LMX_PRM(c, lmx_rlike_param);
  if (!lmx_shape_known(&in[0]) || !lmx_shape_known(&in[1])) return LMX_OK;
  int lb, le, rb, re;
  LMX_TRY(dim_range(c, "lhs", p->lhs_begin, p->lhs_end, in[0].ndim, &lb, &le));
  LMX_TRY(dim_range(c, "rhs", p->rhs_begin, p->rhs_end, in[1].ndim, &rb, &re));
  int nd = lb + (re - rb) + (in[0].ndim - le);
  if (nd > LMX_MAX_NDIM) return too_many_dims(c, nd);
  lmx_shape o = {0, {0}};
  int64_t lsz = 1, rsz = 1;
  for (int i = 0; i < lb; i++) o.dim[o.ndim++] = in[0].dim[i];
  for (int i = rb; i < re; i++) o.dim[o.ndim++] = in[1].dim[i], rsz *= in[1].dim[i];
  for (int i = le; i < in[0].ndim; i++) o.dim[o.ndim++] = in[0].dim[i];
  for (int i = lb; i < le; i++) lsz *= in[0].dim[i];
  if (o.ndim == 0) o = LMX_SHP(1);
  if (lsz != rsz)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "cannot reshape dims [%d, %d) of input 'lhs' %s "
                       "(%lld elements) like dims [%d, %d) of input 'rhs' %s (%lld elements)",
                       lb, le, SH(0, &in[0]), (long long)lsz, rb, re, SH(1, &in[1]),
                       (long long)rsz);
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_reshape_like = {
    .name = "reshape_like",
    .doc = "Reshapes lhs (its dims [lhs_begin, lhs_end)) like rhs (its dims [rhs_begin, "
           "rhs_end)). rhs only gives a shape: its gradient is zero.",
    LMX_PARAMS(rlike_fields, lmx_rlike_param),
    .inputs = lhs_rhs,
    .infer_shape = rlike_infer_shape,
    .backward_needs = G,
};

/* ---- slice_like ------------------------------------------------------------------------ */

static const char *const slike_inputs[] = {"data", "shape_like", NULL};

static const lmx_param_field slike_fields[] = {
    LMX_PF(lmx_slike_param, axes, LMX_PT_SHAPE, "()", NULL, 0, 0,
           "List of axes on which input data will be sliced according to the corresponding "
           "size of the second input. By default will slice on all axes. Negative axes are "
           "supported."),
};

static int slike_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                             int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_slike_param *p = LMX_PRM(c, lmx_slike_param);
  if (!lmx_shape_known(&in[0]) || !lmx_shape_known(&in[1])) return LMX_OK;
  lmx_shape o = in[0];
  const lmx_shape *d = &in[0], *f = &in[1];
  if (p->axes.ndim <= 0) {
    if (d->ndim != f->ndim)
      return lmx_op_fail(c, LMX_ERR_SHAPE, "slicing all axes needs inputs of one ndim: input "
                         "'data' %s, input 'shape_like' %s", SH(0, d), SH(1, f));
    for (int k = 0; k < d->ndim; k++) o.dim[k] = f->dim[k];
  } else {
    for (int i = 0; i < p->axes.ndim; i++) {
      int a;
      LMX_TRY(lmx_op_axis(c, "axes", p->axes.dim[i], d->ndim, &a));
      if (a >= f->ndim)
        return lmx_op_fail(c, LMX_ERR_SHAPE, "parameter 'axes': axis %d is beyond input "
                           "'shape_like' %s", a, SH(0, f));
      o.dim[a] = f->dim[a];
    }
  }
  for (int k = 0; k < d->ndim; k++)
    if (o.dim[k] > d->dim[k])
      return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'shape_like' %s is larger than input 'data' "
                         "%s on axis %d", SH(0, f), SH(1, d), k);
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_slice_like = {
    .name = "slice_like",
    .doc = "Slices the beginning of data like shape_like (on all axes, or on `axes`). "
           "shape_like only gives a shape: its gradient is zero.",
    LMX_PARAMS(slike_fields, lmx_slike_param),
    .inputs = slike_inputs,
    .infer_shape = slike_infer_shape,
    .backward_needs = G,
};

/* ---- diag ------------------------------------------------------------------------------ */

static const lmx_param_field diag_fields[] = {
    LMX_PF(lmx_diag_param, k, LMX_PT_INT, "0", NULL, 0, 0,
           "Diagonal in question. The default is 0. Use k>0 for diagonals above the main "
           "diagonal, and k<0 for diagonals below the main diagonal. If input has shape "
           "(S0 S1) k must be between -S0 and S1"),
    LMX_PF(lmx_diag_param, axis1, LMX_PT_INT, "0", NULL, 0, 0,
           "The first axis of the sub-arrays of interest. Ignored when the input is a 1-D "
           "array."),
    LMX_PF(lmx_diag_param, axis2, LMX_PT_INT, "1", NULL, 0, 0,
           "The second axis of the sub-arrays of interest. Ignored when the input is a 1-D "
           "array."),
};

static int diag_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                            int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_diag_param *p = LMX_PRM(c, lmx_diag_param);
  if (!lmx_shape_known(&in[0])) return LMX_OK;
  const lmx_shape *d = &in[0];
  int64_t k = p->k, ak = k < 0 ? -k : k;
  if (d->ndim == 1) {
    lmx_shape o = LMX_SHP(d->dim[0] + ak, d->dim[0] + ak);
    return lmx_out_assign(c, out, 0, &o);
  }
  int a1, a2;
  LMX_TRY(lmx_op_axis(c, "axis1", p->axis1, d->ndim, &a1));
  LMX_TRY(lmx_op_axis(c, "axis2", p->axis2, d->ndim, &a2));
  if (a1 == a2)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameters 'axis1' and 'axis2': expected different "
                       "axes, got %d for both", a1);
  int64_t h = d->dim[a1] + (k < 0 ? k : 0), w = d->dim[a2] - (k > 0 ? k : 0);
  int64_t len = h < w ? h : w;
  if (len <= 0)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'k': diagonal %lld of input 'data' %s on "
                       "axes %d and %d is empty (expected %lld < k < %lld)", (long long)k,
                       SH(0, d), a1, a2, -(long long)d->dim[a1], (long long)d->dim[a2]);
  lmx_shape o = {0, {0}};
  for (int i = 0; i < d->ndim; i++)
    if (i != a1 && i != a2) o.dim[o.ndim++] = d->dim[i];
  o.dim[o.ndim++] = len;
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_diag = {
    .name = "diag",
    .doc = "Extracts a diagonal (k-th, over axis1 and axis2; appended as the last axis) or "
           "constructs a diagonal array from a 1-D one.",
    LMX_PARAMS(diag_fields, lmx_diag_param),
    .infer_shape = diag_infer_shape,
    .backward_needs = G,
};

/* ---- shape_array / size_array ---------------------------------------------------------- */

static int shape_arr_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                                 int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  if (in[0].ndim <= 0) return LMX_OK;
  lmx_shape o = LMX_SHP(c->op == &lmx_op_size_array ? 1 : in[0].ndim);
  return lmx_out_assign(c, out, 0, &o);
}

static int int64_out_type(const lmx_op_ctx *c, int *in, int nin, int *out, int nout, int *aux,
                          int naux) {
  (void)aux, (void)naux;
  return lmx_infer_type_inputs_same(c, in, nin, out, nout, LMX_INT64);
}

const lmx_op lmx_op_shape_array = {
    .name = "shape_array",
    .doc = "Returns a 1-D int64 array holding the shape of the input.",
    .infer_shape = shape_arr_infer_shape,
    .infer_type = int64_out_type,
    .flags = LMX_OPF_NO_GRAD,
};

const lmx_op lmx_op_size_array = {
    .name = "size_array",
    .doc = "Returns a 1-D int64 array of one element: the number of elements of the input.",
    .infer_shape = shape_arr_infer_shape,
    .infer_type = int64_out_type,
    .flags = LMX_OPF_NO_GRAD,
};
