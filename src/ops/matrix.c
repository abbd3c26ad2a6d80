/* matrix.c — shape manipulation: Reshape, Flatten, transpose, SwapAxis, expand_dims,
 * squeeze, slice, slice_axis, Concat, SliceChannel.
 *
 * These ops move or view data without arithmetic; the interesting part is inference.
 * Reshape implements MXNet's special codes (0 copy, -1 infer, -2 copy the rest, -3 merge
 * two, -4 split one into the next two entries; reverse applies them right to left) and
 * the legacy target_shape/keep_highest pair. Concat and SliceChannel infer both ways
 * (a missing input's concat dim from the output; data from any output).
 * indexing.c holds the gather/arith family of the same MXNet file group.
 * MXNet 1.9: src/operator/tensor/matrix_op-inl.h, nn/concat.cc, slice_channel-inl.h.
 */
#include "op_impl.h"

static const int inplace_00[][2] = {{0, 0}};
enum { G = LMX_NEEDS_OUT_GRADS };

/* 0 when any dim is unknown; INT64_MAX when the dims (from parameters) overflow. */
static int64_t shape_size0(const lmx_shape *s) { return lmx_shape_size(s); }

/* ---- Reshape -------------------------------------------------------------------------- */

static const lmx_param_field reshape_fields[] = {
    LMX_PF(lmx_reshape_param, shape, LMX_PT_SHAPE, "()", NULL, 0, 0,
           "The target shape; may contain the special codes 0, -1, -2, -3, -4."),
    LMX_PF(lmx_reshape_param, reverse, LMX_PT_BOOL, "False", NULL, 0, 0,
           "If true then the special values are inferred from right to left."),
    LMX_PF(lmx_reshape_param, target_shape, LMX_PT_SHAPE, "()", NULL, 0, 0,
           "(Deprecated) Target new shape; 0 marks the dim to infer."),
    LMX_PF(lmx_reshape_param, keep_highest, LMX_PT_BOOL, "False", NULL, 0, 0,
           "(Deprecated) Keep the highest dim unchanged with target_shape."),
};

static void reverse_shape(lmx_shape *s) {
  for (int i = 0, j = s->ndim - 1; i < j; i++, j--) {
    int64_t t = s->dim[i];
    s->dim[i] = s->dim[j];
    s->dim[j] = t;
  }
}

static int push_dim(const lmx_op_ctx *c, lmx_shape *o, int64_t v) {
  if (o->ndim >= LMX_MAX_NDIM)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "parameter 'shape': result has more than %d dims",
                       LMX_MAX_NDIM);
  o->dim[o->ndim++] = v;
  return LMX_OK;
}

static int reshape_bad(const lmx_op_ctx *c, const char *why, const lmx_shape *d) {
  char s[LMX_SHAPE_STRCAP];
  return lmx_op_fail(c, LMX_ERR_SHAPE, "parameter 'shape': %s (input shape %s)", why,
                     lmx_shape_str(d, s));
}

/* One step of the code walk: consumes shape entries from *i and source dims from *src. */
static int reshape_code(const lmx_op_ctx *c, const lmx_shape *sp, int *i, const lmx_shape *d,
                        int *src, lmx_shape *o, int *inf) {
  int64_t v = sp->dim[*i];
  if (v == 0 || v > 0 || v == -1) {
    if (v == -1) {
      if (*inf >= 0) return reshape_bad(c, "more than one -1", d);
      *inf = o->ndim;
    }
    if (v == 0 && *src >= d->ndim) return reshape_bad(c, "0 copies a dim past the input's end", d);
    LMX_TRY(push_dim(c, o, v == 0 ? d->dim[*src] : v == -1 ? 1 : v));
    (*src)++;
  } else if (v == -2) {
    while (*src < d->ndim) LMX_TRY(push_dim(c, o, d->dim[(*src)++]));
  } else if (v == -3) {
    if (*src + 1 >= d->ndim) return reshape_bad(c, "-3 needs two input dims", d);
    LMX_TRY(push_dim(c, o, d->dim[*src] * d->dim[*src + 1]));
    *src += 2;
  } else if (v == -4) {
    if (*i + 2 >= sp->ndim || *src >= d->ndim) return reshape_bad(c, "-4 needs two more entries", d);
    int64_t whole = d->dim[(*src)++], a = sp->dim[*i + 1], b = sp->dim[*i + 2];
    *i += 2;
    if (a == -1 && b > 0) a = whole / b;
    if (b == -1 && a > 0) b = whole / a;
    int64_t ab;
    if (a <= 0 || b <= 0 || lmx_shape_mul(a, b, &ab) || ab != whole)
      return reshape_bad(c, "-4 split does not match the dim", d);
    LMX_TRY(push_dim(c, o, a));
    LMX_TRY(push_dim(c, o, b));
  } else {
    return reshape_bad(c, "invalid special code (valid: 0, -1, -2, -3, -4)", d);
  }
  return LMX_OK;
}

/* Reverses the code list, keeping "-4 a b" as one unit written "-4 b a". */
static void reverse_codes(const lmx_shape *sp, lmx_shape *r) {
  int start[LMX_MAX_NDIM], nt = 0;
  for (int i = 0; i < sp->ndim; i++) {
    start[nt++] = i;
    if (sp->dim[i] == -4) i += 2;
  }
  r->ndim = 0;
  for (int t = nt - 1; t >= 0; t--) {
    int i = start[t];
    r->dim[r->ndim++] = sp->dim[i];
    if (sp->dim[i] == -4 && i + 2 < sp->ndim) {
      r->dim[r->ndim++] = sp->dim[i + 2];
      r->dim[r->ndim++] = sp->dim[i + 1];
    }
  }
}

static int reshape_new(const lmx_op_ctx *c, const lmx_reshape_param *p, const lmx_shape *din,
                       lmx_shape *o) {
  lmx_shape d = *din, sp = p->shape;
  if (p->reverse) {
    reverse_shape(&d);
    reverse_codes(&p->shape, &sp);
  }
  o->ndim = 0;
  int src = 0, inf = -1;
  for (int i = 0; i < sp.ndim; i++) LMX_TRY(reshape_code(c, &sp, &i, &d, &src, o, &inf));
  if (inf >= 0) {
    int64_t rest = shape_size0(o);
    if (rest == 0 || shape_size0(&d) % rest != 0)
      return reshape_bad(c, "-1 cannot be inferred", din);
    o->dim[inf] = shape_size0(&d) / rest;
  }
  if (p->reverse) reverse_shape(o);
  return LMX_OK;
}

static int reshape_legacy(const lmx_op_ctx *c, const lmx_reshape_param *p, const lmx_shape *d,
                          lmx_shape *o) {
  *o = p->target_shape;
  if (p->keep_highest) {
    if (o->ndim + 1 > LMX_MAX_NDIM) return reshape_bad(c, "too many dims", d);
    for (int i = o->ndim; i > 0; i--) o->dim[i] = o->dim[i - 1];
    o->dim[0] = d->dim[0];
    o->ndim++;
  }
  int inf = -1;
  for (int i = p->keep_highest; i < o->ndim; i++)
    if (o->dim[i] == 0) {
      if (inf >= 0) return reshape_bad(c, "target_shape has more than one 0", d);
      inf = i;
    }
  if (inf >= 0) {
    o->dim[inf] = 1;
    o->dim[inf] = shape_size0(d) / shape_size0(o);
  }
  return LMX_OK;
}

static int reshape_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                               int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_reshape_param *p = LMX_PRM(c, lmx_reshape_param);
  if (!lmx_shape_known(&in[0])) return LMX_OK;
  lmx_shape o;
  if (p->shape.ndim == 0 && p->target_shape.ndim > 0) LMX_TRY(reshape_legacy(c, p, &in[0], &o));
  else LMX_TRY(reshape_new(c, p, &in[0], &o));
  if (shape_size0(&o) != shape_size0(&in[0])) {
    char a[LMX_SHAPE_STRCAP], b[LMX_SHAPE_STRCAP];
    return lmx_op_fail(c, LMX_ERR_SHAPE, "target shape %s (size %lld) is incompatible with "
                       "input 'data' shape %s (size %lld)", lmx_shape_str(&o, a),
                       (long long)shape_size0(&o), lmx_shape_str(&in[0], b),
                       (long long)shape_size0(&in[0]));
  }
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_Reshape = {
    .name = "Reshape",
    .doc = "Reshapes the input array (special codes 0, -1, -2, -3, -4).",
    LMX_PARAMS(reshape_fields, lmx_reshape_param),
    .infer_shape = reshape_infer_shape,
    .backward_needs = G,
    .inplace = inplace_00,
    .num_inplace = 1,
};

/* ---- Flatten -------------------------------------------------------------------------- */

static int flatten_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                               int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_shape *d = &in[0];
  if (d->ndim <= 0) return LMX_OK;
  int64_t rest = 1;
  for (int i = 1; i < d->ndim; i++) rest *= d->dim[i];
  lmx_shape o = LMX_SHP(d->dim[0], d->ndim == 1 ? 1 : rest);
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_Flatten = {
    .name = "Flatten",
    .doc = "Flattens the input array into a 2-D array by collapsing the higher dimensions.",
    .infer_shape = flatten_infer_shape,
    .backward_needs = G,
    .inplace = inplace_00,
    .num_inplace = 1,
};

/* ---- transpose / SwapAxis / expand_dims / squeeze ------------------------------------- */

static const lmx_param_field transpose_fields[] = {
    LMX_PF(lmx_transpose_param, axes, LMX_PT_SHAPE, "()", NULL, 0, 0,
           "Target axis order. By default the axes will be inverted."),
};

static int transpose_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                                 int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_transpose_param *p = LMX_PRM(c, lmx_transpose_param);
  const lmx_shape *d = &in[0];
  if (d->ndim <= 0) return LMX_OK;
  lmx_shape o = {d->ndim, {0}};
  if (p->axes.ndim == 0) {
    for (int i = 0; i < d->ndim; i++) o.dim[i] = d->dim[d->ndim - 1 - i];
    return lmx_out_assign(c, out, 0, &o);
  }
  if (p->axes.ndim != d->ndim)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "parameter 'axes': %d axes for %d-D input 'data'",
                       p->axes.ndim, d->ndim);
  int used[LMX_MAX_NDIM] = {0};
  for (int i = 0; i < d->ndim; i++) {
    int a;
    LMX_TRY(lmx_op_axis(c, "axes", p->axes.dim[i], d->ndim, &a));
    if (used[a]++) return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'axes': axis %d repeats", a);
    o.dim[i] = d->dim[a];
  }
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_transpose = {
    .name = "transpose",
    .doc = "Permutes the dimensions of an array.",
    LMX_PARAMS(transpose_fields, lmx_transpose_param),
    .infer_shape = transpose_infer_shape,
    .backward_needs = G,
};

static const lmx_param_field swap_fields[] = {
    LMX_PF(lmx_swap_param, dim1, LMX_PT_INT, "0", NULL, 0, 0, "the first axis to be swapped."),
    LMX_PF(lmx_swap_param, dim2, LMX_PT_INT, "0", NULL, 0, 0, "the second axis to be swapped."),
};

static int swap_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                            int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_swap_param *p = LMX_PRM(c, lmx_swap_param);
  if (in[0].ndim <= 0) return LMX_OK;
  int a, b;
  LMX_TRY(lmx_op_axis(c, "dim1", p->dim1, in[0].ndim, &a));
  LMX_TRY(lmx_op_axis(c, "dim2", p->dim2, in[0].ndim, &b));
  lmx_shape o = in[0];
  o.dim[a] = in[0].dim[b];
  o.dim[b] = in[0].dim[a];
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_SwapAxis = {
    .name = "SwapAxis",
    .doc = "Interchanges two axes of an array.",
    LMX_PARAMS(swap_fields, lmx_swap_param),
    .infer_shape = swap_infer_shape,
    .backward_needs = G,
};

static const lmx_param_field reverse_fields[] = {
    LMX_PF(lmx_reverse_param, axis, LMX_PT_SHAPE, NULL, NULL, 0, 0,
           "The axis which to reverse elements."),
};

static int reverse_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                               int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_reverse_param *p = LMX_PRM(c, lmx_reverse_param);
  if (in[0].ndim <= 0) {
    if (out[0].ndim > 0) in[0] = out[0]; /* same shape both ways */
    return LMX_OK;
  }
  int seen[LMX_MAX_NDIM] = {0};
  for (int i = 0; i < p->axis.ndim; i++) {
    int a;
    LMX_TRY(lmx_op_axis(c, "axis", p->axis.dim[i], in[0].ndim, &a));
    if (seen[a]++) return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'axis': axis %d repeats", a);
  }
  return lmx_out_assign(c, out, 0, &in[0]);
}

const lmx_op lmx_op_reverse = {
    .name = "reverse",
    .doc = "Reverses the order of elements along the given axes while preserving the shape.",
    LMX_PARAMS(reverse_fields, lmx_reverse_param),
    .infer_shape = reverse_infer_shape,
    .backward_needs = G,
};

static const lmx_param_field expand_fields[] = {
    LMX_PF(lmx_expand_param, axis, LMX_PT_INT, NULL, NULL, 0, 0,
           "Position where new axis is to be inserted (-ndim-1 .. ndim)."),
};

static int expand_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                              int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_expand_param *p = LMX_PRM(c, lmx_expand_param);
  const lmx_shape *d = &in[0];
  if (d->ndim <= 0) return LMX_OK;
  if (d->ndim >= LMX_MAX_NDIM)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data' already has %d dims", d->ndim);
  int a;
  LMX_TRY(lmx_op_axis(c, "axis", p->axis, d->ndim + 1, &a));
  lmx_shape o = {d->ndim + 1, {0}};
  for (int i = 0, j = 0; i < o.ndim; i++) o.dim[i] = i == a ? 1 : d->dim[j++];
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_expand_dims = {
    .name = "expand_dims",
    .doc = "Inserts a new axis of size 1 into the array shape.",
    LMX_PARAMS(expand_fields, lmx_expand_param),
    .infer_shape = expand_infer_shape,
    .backward_needs = G,
    .inplace = inplace_00,
    .num_inplace = 1,
};

static const lmx_param_field squeeze_fields[] = {
    LMX_PF(lmx_squeeze_param, axis, LMX_PT_SHAPE, "None", NULL, 0, 0,
           "Axes of size 1 to remove (None: all of them)."),
};

static int squeeze_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                               int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_squeeze_param *p = LMX_PRM(c, lmx_squeeze_param);
  const lmx_shape *d = &in[0];
  if (d->ndim <= 0) return LMX_OK;
  int drop[LMX_MAX_NDIM] = {0};
  for (int i = 0; i < d->ndim; i++) drop[i] = p->axis.ndim < 0 && d->dim[i] == 1;
  for (int k = 0; k < p->axis.ndim; k++) {
    int a;
    LMX_TRY(lmx_op_axis(c, "axis", p->axis.dim[k], d->ndim, &a));
    if (d->dim[a] != 1 && d->dim[a] != 0)
      return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': cannot squeeze axis %d of size %lld "
                         "(must be 1)", a, (long long)d->dim[a]);
    drop[a] = 1;
  }
  lmx_shape o = {0, {0}};
  for (int i = 0; i < d->ndim; i++)
    if (!drop[i]) o.dim[o.ndim++] = d->dim[i];
  if (o.ndim == 0) o = LMX_SHP(1);
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_squeeze = {
    .name = "squeeze",
    .doc = "Remove single-dimensional entries from the shape of an array.",
    LMX_PARAMS(squeeze_fields, lmx_squeeze_param),
    .infer_shape = squeeze_infer_shape,
    .backward_needs = G,
    .inplace = inplace_00,
    .num_inplace = 1,
};

/* ---- slice / slice_axis ---------------------------------------------------------------- */

static const lmx_param_field slice_fields[] = {
    LMX_PF(lmx_slice_param, begin, LMX_PT_OPT_INTS, NULL, NULL, 0, 0,
           "starting indices for the slice operation, supports negative indices."),
    LMX_PF(lmx_slice_param, end, LMX_PT_OPT_INTS, NULL, NULL, 0, 0,
           "ending indices for the slice operation, supports negative indices."),
    LMX_PF(lmx_slice_param, step, LMX_PT_OPT_INTS, "()", NULL, 0, 0,
           "step for the slice operation, supports negative values."),
};

/* Length of x[b:e:s] along a dim of size len (Python rules; None = open end). */
static int slice_len(const lmx_op_ctx *c, int axis, int64_t len, int64_t b, int64_t e,
                     int64_t s, int64_t *out) {
  if (s == 0) return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'step': step[%d] cannot be 0", axis);
  if (b == LMX_PARAM_NONE_INT) b = s > 0 ? 0 : len - 1;
  else if (b < 0) b += len;
  if (e == LMX_PARAM_NONE_INT) e = s > 0 ? len : -1;
  else if (e < 0) e += len;
  if (b < 0 || b > len || (s < 0 && b >= len) || e < -1 || e > len)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "slice on axis %d: begin/end out of range for a dim "
                       "of size %lld", axis, (long long)len);
  int64_t n = s > 0 ? (e - b + s - 1) / s : (b - e + (-s) - 1) / (-s);
  /* MXNet 1.9 refuses an empty range (SetSliceOpOutputDimSize: begin < end for a
   * positive step, begin > end for a negative one) */
  if (n <= 0)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'begin': begin[%d]=%lld is not %s "
                       "end[%d]=%lld for step %lld on axis %d of size %lld, so nothing is "
                       "selected", axis, (long long)b, s > 0 ? "below" : "above", axis,
                       (long long)e, (long long)s, axis, (long long)len);
  *out = n;
  return LMX_OK;
}

static int slice_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                             int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_slice_param *p = LMX_PRM(c, lmx_slice_param);
  const lmx_shape *d = &in[0];
  if (d->ndim <= 0) return LMX_OK;
  if (p->begin.ndim != p->end.ndim || (p->step.ndim > 0 && p->step.ndim != p->begin.ndim) ||
      p->begin.ndim > d->ndim)
    return lmx_op_fail(c, LMX_ERR_ARG, "begin, end and step must have the same length, at most "
                       "the input's %d dims (got %d, %d, %d)", d->ndim, p->begin.ndim,
                       p->end.ndim, p->step.ndim);
  lmx_shape o = *d;
  for (int i = 0; i < p->begin.ndim; i++) {
    int64_t s = p->step.ndim > 0 && p->step.dim[i] != LMX_PARAM_NONE_INT ? p->step.dim[i] : 1;
    if (d->dim[i] == 0) { o.dim[i] = 0; continue; }
    LMX_TRY(slice_len(c, i, d->dim[i], p->begin.dim[i], p->end.dim[i], s, &o.dim[i]));
  }
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_slice = {
    .name = "slice",
    .doc = "Slices a region of the array.",
    LMX_PARAMS(slice_fields, lmx_slice_param),
    .infer_shape = slice_infer_shape,
    .backward_needs = G,
};

static const lmx_param_field slice_axis_fields[] = {
    LMX_PF(lmx_slice_axis_param, axis, LMX_PT_INT, NULL, NULL, 0, 0,
           "Axis along which to be sliced, supports negative indexes."),
    LMX_PF(lmx_slice_axis_param, begin, LMX_PT_INT, NULL, NULL, 0, 0,
           "The beginning index along the axis to be sliced, supports negative indexes."),
    LMX_PF(lmx_slice_axis_param, end, LMX_PT_OPT_INT, NULL, NULL, 0, 0,
           "The ending index along the axis to be sliced, supports negative indexes."),
};

static int slice_axis_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                                  int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_slice_axis_param *p = LMX_PRM(c, lmx_slice_axis_param);
  if (in[0].ndim <= 0) return LMX_OK;
  int a;
  LMX_TRY(lmx_op_axis(c, "axis", p->axis, in[0].ndim, &a));
  int64_t len = in[0].dim[a], b = p->begin, e = p->end;
  lmx_shape o = in[0];
  if (len == 0) return lmx_out_assign(c, out, 0, &o);
  if (b < 0) b += len;
  if (e == LMX_PARAM_NONE_INT) e = len;
  else if (e < 0) e += len;
  if (b < 0 || e > len || b >= e)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "invalid begin %lld, end %lld for axis %d of size "
                       "%lld (need 0 <= begin < end <= size)", (long long)p->begin,
                       (long long)(p->end == LMX_PARAM_NONE_INT ? len : p->end), a,
                       (long long)len);
  o.dim[a] = e - b;
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_slice_axis = {
    .name = "slice_axis",
    .doc = "Slices along a given axis.",
    LMX_PARAMS(slice_axis_fields, lmx_slice_axis_param),
    .infer_shape = slice_axis_infer_shape,
    .backward_needs = G,
};

/* ---- Concat ---------------------------------------------------------------------------- */

static const lmx_param_field concat_fields[] = {
    LMX_PF(lmx_concat_param, num_args, LMX_PT_INT, NULL, NULL, 1, 100000,
           "Number of inputs to be concated."),
    LMX_PF(lmx_concat_param, dim, LMX_PT_INT, "1", NULL, 0, 0, "the dimension to be concated."),
};

static int concat_num_inputs(const void *p) { return (int)((const lmx_concat_param *)p)->num_args; }
static void arg_name(const void *p, int i, char *buf, size_t cap) {
  (void)p;
  snprintf(buf, cap, "arg%d", i);
}

/* Merges every known input into `t` except on axis; names the first mismatch. */
static int concat_template(const lmx_op_ctx *c, lmx_shape *in, int nin, int ax, lmx_shape *t) {
  int ref = -1; /* first known input: the shape messages compare against */
  for (int i = 0; i < nin; i++) {
    if (in[i].ndim <= 0) continue;
    if (in[i].ndim != t->ndim || ax >= t->ndim) goto bad;
    for (int k = 0; k < t->ndim; k++) {
      if (k == ax || in[i].dim[k] == 0) continue;
      if (t->dim[k] == 0) t->dim[k] = in[i].dim[k];
      else if (t->dim[k] != in[i].dim[k]) goto bad;
    }
    if (ref < 0) ref = i;
    continue;
  bad: {
    char a[LMX_SHAPE_STRCAP], b[LMX_SHAPE_STRCAP], nm[32];
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input '%s': shape %s does not match %s except on "
                       "dim %d", lmx_op_in_name(c, i, nm, sizeof nm), lmx_shape_str(&in[i], a),
                       lmx_shape_str(ref >= 0 ? &in[ref] : t, b), ax);
  }
  }
  return LMX_OK;
}

static int concat_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                              int nout, lmx_shape *aux, int naux) {
  (void)nout, (void)aux, (void)naux;
  const lmx_concat_param *p = LMX_PRM(c, lmx_concat_param);
  lmx_shape t = {0, {0}};
  for (int i = 0; i < nin && t.ndim == 0; i++) t.ndim = in[i].ndim > 0 ? in[i].ndim : 0;
  if (t.ndim == 0) t.ndim = out[0].ndim > 0 ? out[0].ndim : 0;
  if (t.ndim == 0) return LMX_OK;
  int ax;
  LMX_TRY(lmx_op_axis(c, "dim", p->dim, t.ndim, &ax));
  if (out[0].ndim == t.ndim) t = out[0], t.dim[ax] = 0;
  LMX_TRY(concat_template(c, in, nin, ax, &t));
  int64_t sum = 0;
  int unknown = -1, nunknown = 0;
  for (int i = 0; i < nin; i++) {
    lmx_shape e = t;
    e.dim[ax] = in[i].ndim > 0 ? in[i].dim[ax] : 0;
    LMX_TRY(lmx_in_assign(c, in, i, &e));
    if (in[i].dim[ax] == 0) unknown = i, nunknown++;
    if (in[i].dim[ax] > LMX_SHAPE_MAXSIZE - sum)
      return lmx_op_fail(c, LMX_ERR_SHAPE, "the sizes on dim %d add up to more than %lld", ax,
                         (long long)LMX_SHAPE_MAXSIZE);
    sum += in[i].dim[ax];
  }
  if (nunknown == 1 && out[0].ndim == t.ndim && out[0].dim[ax] > sum) {
    lmx_shape e = t;
    e.dim[ax] = out[0].dim[ax] - sum;
    LMX_TRY(lmx_in_assign(c, in, unknown, &e));
    nunknown = 0, sum = out[0].dim[ax];
  }
  t.dim[ax] = nunknown ? 0 : sum;
  return lmx_out_assign(c, out, 0, &t);
}

const lmx_op lmx_op_Concat = {
    .name = "Concat",
    .doc = "Joins input arrays along a given axis.",
    LMX_PARAMS(concat_fields, lmx_concat_param),
    .num_inputs = concat_num_inputs,
    .input_name = arg_name,
    .infer_shape = concat_infer_shape,
    .backward_needs = G,
};

/* ---- SliceChannel (split) -------------------------------------------------------------- */

static const lmx_param_field split_fields[] = {
    LMX_PF(lmx_split_param, num_outputs, LMX_PT_INT, NULL, NULL, 1, 100000,
           "Number of splits. Note that this should evenly divide the length of the axis."),
    LMX_PF(lmx_split_param, axis, LMX_PT_INT, "1", NULL, 0, 0, "Axis along which to split."),
    LMX_PF(lmx_split_param, squeeze_axis, LMX_PT_BOOL, "False", NULL, 0, 0,
           "If true, removes the axis with length 1 from the shapes of the output arrays."),
};

static int split_num_outputs(const void *p) {
  return (int)((const lmx_split_param *)p)->num_outputs;
}
static void split_output_name(const void *p, int i, char *buf, size_t cap) {
  (void)p;
  snprintf(buf, cap, "output%d", i);
}

/* Backward: data from a known output (axis times num_outputs). */
static int split_from_output(const lmx_op_ctx *c, const lmx_split_param *p, lmx_shape *in,
                             const lmx_shape *o) {
  int nd = p->squeeze_axis ? o->ndim + 1 : o->ndim, a;
  if (nd > LMX_MAX_NDIM) return LMX_OK;
  LMX_TRY(lmx_op_axis(c, "axis", p->axis, nd, &a));
  lmx_shape d = {nd, {0}};
  for (int i = 0, j = 0; i < nd; i++) {
    if (p->squeeze_axis && i == a) { d.dim[i] = p->num_outputs; continue; }
    if (i == a && lmx_shape_mul(o->dim[j], p->num_outputs, &d.dim[i]))
      return lmx_op_fail(c, LMX_ERR_SHAPE, "output dim %d times num_outputs %lld overflows",
                         j + 1, (long long)p->num_outputs);
    if (i != a) d.dim[i] = o->dim[j];
    j++;
  }
  return lmx_in_assign(c, in, 0, &d);
}

static int split_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                             int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)aux, (void)naux;
  const lmx_split_param *p = LMX_PRM(c, lmx_split_param);
  for (int k = 0; k < nout && in[0].ndim <= 0; k++)
    if (out[k].ndim > 0) LMX_TRY(split_from_output(c, p, in, &out[k]));
  const lmx_shape *d = &in[0];
  if (d->ndim <= 0) return LMX_OK;
  int a;
  LMX_TRY(lmx_op_axis(c, "axis", p->axis, d->ndim, &a));
  int64_t len = d->dim[a];
  if (len && len % p->num_outputs)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': dim %d of size %lld is not divisible "
                       "by num_outputs %lld", a, (long long)len, (long long)p->num_outputs);
  if (p->squeeze_axis && len && len != p->num_outputs)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': squeeze_axis needs dim %d (%lld) to "
                       "equal num_outputs %lld", a, (long long)len, (long long)p->num_outputs);
  lmx_shape o = *d;
  o.dim[a] = len / p->num_outputs;
  if (p->squeeze_axis) {
    for (int i = a; i + 1 < o.ndim; i++) o.dim[i] = o.dim[i + 1];
    o.ndim--;
    if (o.ndim == 0) o = LMX_SHP(1);
  }
  for (int k = 0; k < nout; k++) LMX_TRY(lmx_out_assign(c, out, k, &o));
  return LMX_OK;
}

const lmx_op lmx_op_SliceChannel = {
    .name = "SliceChannel",
    .doc = "Splits an array along a particular axis into multiple sub-arrays (alias split).",
    LMX_PARAMS(split_fields, lmx_split_param),
    .num_outputs = split_num_outputs,
    .output_name = split_output_name,
    .infer_shape = split_infer_shape,
    .backward_needs = G,
};
