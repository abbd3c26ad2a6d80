/* indexing.c — gather, arithmetic-on-shape and copy ops of MXNet's tensor family: take,
 * one_hot, where, clip, Cast, Embedding, dot, batch_dot, zeros_like, ones_like, _copy.
 *
 * (Split from matrix.c to keep files small.) dtypes: take/Embedding/one_hot read
 * integer-valued indices of any dtype; one_hot and Cast produce their `dtype` parameter;
 * Embedding's weight and output take `dtype`.
 * MXNet 1.9: src/operator/tensor/indexing_op.cc, control_flow_op.cc, matrix_op.cc,
 * elemwise_unary_op_basic.cc, dot.cc.
 */
#include "op_impl.h"

static const int inplace_00[][2] = {{0, 0}};
enum { G = LMX_NEEDS_OUT_GRADS, GI = LMX_NEEDS_OUT_GRADS | LMX_NEEDS_INPUTS };

static int cat_shapes(const lmx_op_ctx *c, const lmx_shape *a, int a0, int a1,
                      const lmx_shape *b, int b0, int b1, lmx_shape *o) {
  o->ndim = 0;
  if ((a1 - a0) + (b1 - b0) > LMX_MAX_NDIM)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "output would have more than %d dims", LMX_MAX_NDIM);
  for (int i = a0; i < a1; i++) o->dim[o->ndim++] = a->dim[i];
  for (int i = b0; i < b1; i++) o->dim[o->ndim++] = b->dim[i];
  return LMX_OK;
}

/* ---- take ----------------------------------------------------------------------------- */

static const lmx_param_field take_fields[] = {
    LMX_PF(lmx_take_param, axis, LMX_PT_INT, "0", NULL, 0, 0,
           "The axis of input array to be taken."),
    LMX_PF(lmx_take_param, mode, LMX_PT_ENUM, "clip", LMX_TAKE_CHOICES, 0, 0,
           "Specify how out-of-bound indices bahave."),
};

static const char *const take_inputs[] = {"a", "indices", NULL};

static int take_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                            int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_take_param *p = LMX_PRM(c, lmx_take_param);
  if (in[0].ndim <= 0 || in[1].ndim <= 0) return LMX_OK;
  int a;
  LMX_TRY(lmx_op_axis(c, "axis", p->axis, in[0].ndim, &a));
  lmx_shape t, o;
  LMX_TRY(cat_shapes(c, &in[0], 0, a, &in[1], 0, in[1].ndim, &t));
  LMX_TRY(cat_shapes(c, &t, 0, t.ndim, &in[0], a + 1, in[0].ndim, &o));
  return lmx_out_assign(c, out, 0, &o);
}

static int take_infer_type(const lmx_op_ctx *c, int *in, int nin, int *out, int nout, int *aux,
                           int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  LMX_TRY(lmx_dtype_assign(c, &out[0], in[0], "output 'output'"));
  LMX_TRY(lmx_dtype_assign(c, &in[0], out[0], "input 'a'"));
  return lmx_dtype_assign(c, &in[1], in[0] >= 0 && in[1] < 0 ? in[0] : -1, "input 'indices'");
}

const lmx_op lmx_op_take = {
    .name = "take",
    .doc = "Takes elements from an input array along the given axis.",
    LMX_PARAMS(take_fields, lmx_take_param),
    .inputs = take_inputs,
    .infer_shape = take_infer_shape,
    .infer_type = take_infer_type,
    .backward_needs = GI,
};

/* ---- one_hot -------------------------------------------------------------------------- */

static const lmx_param_field onehot_fields[] = {
    LMX_PF(lmx_onehot_param, depth, LMX_PT_INT, NULL, NULL, 1, 1e15,
           "Depth of the one hot dimension."),
    LMX_PF(lmx_onehot_param, on_value, LMX_PT_FLOAT, "1.0", NULL, 0, 0,
           "The value assigned to the locations represented by indices."),
    LMX_PF(lmx_onehot_param, off_value, LMX_PT_FLOAT, "0.0", NULL, 0, 0,
           "The value assigned to the locations not represented by indices."),
    LMX_PF(lmx_onehot_param, dtype, LMX_PT_DTYPE, "float32", NULL, 0, 0,
           "DType of the output."),
};

static const char *const onehot_inputs[] = {"indices", NULL};

static int onehot_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                              int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_onehot_param *p = LMX_PRM(c, lmx_onehot_param);
  if (in[0].ndim <= 0) return LMX_OK;
  lmx_shape d = LMX_SHP(p->depth), o;
  LMX_TRY(cat_shapes(c, &in[0], 0, in[0].ndim, &d, 0, 1, &o));
  return lmx_out_assign(c, out, 0, &o);
}

static int dtype_param_out_type(const lmx_op_ctx *c, int *in, int nin, int *out, int nout,
                                int *aux, int naux) {
  (void)in, (void)nin, (void)nout, (void)aux, (void)naux;
  return lmx_dtype_assign(c, &out[0], *(const int *)((const char *)c->param +
                                                     c->op->params[c->op->num_params - 1].offset),
                          "output 'output'");
}

const lmx_op lmx_op_one_hot = {
    .name = "one_hot",
    .doc = "Returns a one-hot array.",
    LMX_PARAMS(onehot_fields, lmx_onehot_param),
    .inputs = onehot_inputs,
    .infer_shape = onehot_infer_shape,
    .infer_type = dtype_param_out_type,
    .flags = LMX_OPF_NO_GRAD,
};

/* ---- where / clip / Cast --------------------------------------------------------------- */

static const char *const where_inputs[] = {"condition", "x", "y", NULL};

static int where_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                             int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)aux, (void)naux;
  LMX_TRY(lmx_infer_same_shape(c, in + 1, 2, out, nout)); /* messages name x, y by index */
  const lmx_shape *x = &in[1], *cond = &in[0];
  if (x->ndim <= 0) return LMX_OK;
  if (cond->ndim == 1 && x->ndim > 1) { /* a 1-D condition selects rows */
    lmx_shape e = LMX_SHP(x->dim[0]);
    return lmx_in_assign(c, in, 0, &e);
  }
  return lmx_in_assign(c, in, 0, x);
}

static int where_infer_type(const lmx_op_ctx *c, int *in, int nin, int *out, int nout, int *aux,
                            int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  int dt = in[1] >= 0 ? in[1] : in[2] >= 0 ? in[2] : out[0];
  LMX_TRY(lmx_dtype_assign(c, &in[1], dt, "input 'x'"));
  LMX_TRY(lmx_dtype_assign(c, &in[2], dt, "input 'y'"));
  LMX_TRY(lmx_dtype_assign(c, &out[0], dt, "output 'output'"));
  if (in[0] < 0) in[0] = dt;
  return LMX_OK;
}

const lmx_op lmx_op_where = {
    .name = "where",
    .doc = "Return the elements, either from x or y, depending on the condition.",
    .inputs = where_inputs,
    .infer_shape = where_infer_shape,
    .infer_type = where_infer_type,
    .backward_needs = GI,
};

static const lmx_param_field clip_fields[] = {
    LMX_PF(lmx_clip_param, a_min, LMX_PT_FLOAT, NULL, NULL, 0, 0, "Minimum value"),
    LMX_PF(lmx_clip_param, a_max, LMX_PT_FLOAT, NULL, NULL, 0, 0, "Maximum value"),
};

const lmx_op lmx_op_clip = {
    .name = "clip",
    .doc = "Clips (limits) the values in an array.",
    LMX_PARAMS(clip_fields, lmx_clip_param),
    .backward_needs = GI,
    .inplace = inplace_00,
    .num_inplace = 1,
};

static const lmx_param_field cast_fields[] = {
    LMX_PF(lmx_cast_param, dtype, LMX_PT_DTYPE, NULL, NULL, 0, 0, "Output data type."),
};

static int cast_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                            int nout, lmx_shape *aux, int naux) {
  (void)aux, (void)naux;
  return lmx_infer_same_shape(c, in, nin, out, nout);
}

const lmx_op lmx_op_Cast = {
    .name = "Cast",
    .doc = "Casts all elements of the input to a new type.",
    LMX_PARAMS(cast_fields, lmx_cast_param),
    .infer_shape = cast_infer_shape,
    .infer_type = dtype_param_out_type,
    .backward_needs = G,
};

/* ---- Embedding ------------------------------------------------------------------------- */

static const lmx_param_field embed_fields[] = {
    LMX_PF(lmx_embed_param, input_dim, LMX_PT_INT, NULL, NULL, 1, 1e15,
           "Vocabulary size of the input indices."),
    LMX_PF(lmx_embed_param, output_dim, LMX_PT_INT, NULL, NULL, 1, 1e15,
           "Dimension of the embedding vectors."),
    LMX_PF(lmx_embed_param, dtype, LMX_PT_DTYPE, "float32", NULL, 0, 0, "Data type of weight."),
    LMX_PF(lmx_embed_param, sparse_grad, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Compute row sparse gradient in the backward calculation."),
};

static const char *const embed_inputs[] = {"data", "weight", NULL};

static int embed_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                             int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_embed_param *p = LMX_PRM(c, lmx_embed_param);
  lmx_shape w = LMX_SHP(p->input_dim, p->output_dim), e = LMX_SHP(p->output_dim), o;
  LMX_TRY(lmx_in_assign(c, in, 1, &w));
  if (in[0].ndim <= 0) return LMX_OK;
  LMX_TRY(cat_shapes(c, &in[0], 0, in[0].ndim, &e, 0, 1, &o));
  return lmx_out_assign(c, out, 0, &o);
}

static int embed_infer_type(const lmx_op_ctx *c, int *in, int nin, int *out, int nout, int *aux,
                            int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_embed_param *p = LMX_PRM(c, lmx_embed_param);
  LMX_TRY(lmx_dtype_assign(c, &in[1], p->dtype, "input 'weight'"));
  LMX_TRY(lmx_dtype_assign(c, &out[0], p->dtype, "output 'output'"));
  if (in[0] < 0) in[0] = p->dtype;
  return LMX_OK;
}

const lmx_op lmx_op_Embedding = {
    .name = "Embedding",
    .doc = "Maps integer indices to vector representations (embeddings).",
    LMX_PARAMS(embed_fields, lmx_embed_param),
    .inputs = embed_inputs,
    .infer_shape = embed_infer_shape,
    .infer_type = embed_infer_type,
    .backward_needs = GI,
};

/* ---- dot / batch_dot ------------------------------------------------------------------- */

static const lmx_param_field dot_fields[] = {
    LMX_PF(lmx_dot_param, transpose_a, LMX_PT_BOOL, "False", NULL, 0, 0,
           "If true then transpose the first input before dot."),
    LMX_PF(lmx_dot_param, transpose_b, LMX_PT_BOOL, "False", NULL, 0, 0,
           "If true then transpose the second input before dot."),
    LMX_PF(lmx_dot_param, forward_stype, LMX_PT_ENUM, "None", "None|default|row_sparse|csr", 0, 0,
           "The desired storage type of the forward output."),
};

static const char *const in_lhs_rhs[] = {"lhs", "rhs", NULL};

static void reversed(const lmx_shape *s, lmx_shape *r) {
  r->ndim = s->ndim;
  for (int i = 0; i < s->ndim; i++) r->dim[i] = s->dim[s->ndim - 1 - i];
}

static int contraction_bad(const lmx_op_ctx *c, const lmx_shape *a, const lmx_shape *b) {
  char sa[LMX_SHAPE_STRCAP], sb[LMX_SHAPE_STRCAP];
  return lmx_op_fail(c, LMX_ERR_SHAPE, "inputs 'lhs' %s and 'rhs' %s: the contracted dims "
                     "differ", lmx_shape_str(a, sa), lmx_shape_str(b, sb));
}

/* lhs (..., k) . rhs (k, ...) -> lhs[:-1] ++ rhs[1:]; transpose_* reverse all axes. */
static int dot_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                           int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_dot_param *p = LMX_PRM(c, lmx_dot_param);
  if (in[0].ndim <= 0 || in[1].ndim <= 0) return LMX_OK;
  lmx_shape l = in[0], r = in[1], o;
  if (p->transpose_a) reversed(&in[0], &l);
  if (p->transpose_b) reversed(&in[1], &r);
  int64_t kl = l.dim[l.ndim - 1], kr = r.dim[0];
  if (kl && kr && kl != kr) return contraction_bad(c, &in[0], &in[1]);
  LMX_TRY(cat_shapes(c, &l, 0, l.ndim - 1, &r, 1, r.ndim, &o));
  if (o.ndim == 0) o = LMX_SHP(1);
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_dot = {
    .name = "dot",
    .doc = "Dot product of two arrays.",
    LMX_PARAMS(dot_fields, lmx_dot_param),
    .inputs = in_lhs_rhs,
    .infer_shape = dot_infer_shape,
    .backward_needs = GI,
};

/* (B.., M, K) x (B.., K, N) -> (B.., M, N); transpose_* swap the last two axes. */
static int batch_dot_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                                 int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_dot_param *p = LMX_PRM(c, lmx_dot_param);
  const lmx_shape *a = &in[0], *b = &in[1];
  if (a->ndim <= 0 || b->ndim <= 0) return LMX_OK;
  if (a->ndim < 3 || a->ndim != b->ndim) {
    char sa[LMX_SHAPE_STRCAP], sb[LMX_SHAPE_STRCAP];
    return lmx_op_fail(c, LMX_ERR_SHAPE, "inputs 'lhs' %s and 'rhs' %s must both be at least "
                       "3-D with the same ndim", lmx_shape_str(a, sa), lmx_shape_str(b, sb));
  }
  int n = a->ndim;
  int64_t m = p->transpose_a ? a->dim[n - 1] : a->dim[n - 2];
  int64_t ka = p->transpose_a ? a->dim[n - 2] : a->dim[n - 1];
  int64_t kb = p->transpose_b ? b->dim[n - 1] : b->dim[n - 2];
  int64_t nn = p->transpose_b ? b->dim[n - 2] : b->dim[n - 1];
  if (ka && kb && ka != kb) return contraction_bad(c, a, b);
  lmx_shape o = *a;
  for (int i = 0; i < n - 2; i++) {
    if (a->dim[i] && b->dim[i] && a->dim[i] != b->dim[i]) return contraction_bad(c, a, b);
    o.dim[i] = a->dim[i] ? a->dim[i] : b->dim[i];
  }
  o.dim[n - 2] = m;
  o.dim[n - 1] = nn;
  return lmx_out_assign(c, out, 0, &o);
}

const lmx_op lmx_op_batch_dot = {
    .name = "batch_dot",
    .doc = "Batchwise dot product.",
    LMX_PARAMS(dot_fields, lmx_dot_param),
    .inputs = in_lhs_rhs,
    .infer_shape = batch_dot_infer_shape,
    .backward_needs = GI,
};

/* ---- zeros_like / ones_like / _copy ---------------------------------------------------- */

const lmx_op lmx_op_zeros_like = {
    .name = "zeros_like",
    .doc = "Return an array of zeros with the same shape, type and storage type as the input.",
    .flags = LMX_OPF_NO_GRAD,
};

const lmx_op lmx_op_ones_like = {
    .name = "ones_like",
    .doc = "Return an array of ones with the same shape and type as the input array.",
    .flags = LMX_OPF_NO_GRAD,
};

const lmx_op lmx_op__copy = {
    .name = "_copy",
    .doc = "Returns a copy of the input (alias identity).",
    .backward_needs = G,
    .inplace = inplace_00,
    .num_inplace = 1,
};
