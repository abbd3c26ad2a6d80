/* nn_plan.c — shared dims of the GEMM-shaped operators (nn_plan.h). Moved here from the
 * CPU glue (src/ops/cpu/nn_fc.c, conv.c, norm.c, rnn.c) so that the CUDA glue computes
 * exactly the same geometry. MXNet 1.9: fully_connected-inl.h, dot-inl.h,
 * convolution-inl.h, deconvolution-inl.h (InferPad), pooling.cc, rnn-inl.h.
 */
#include "nn_plan.h"

#include "glue.h"
#include "op_impl.h"
#include "op_params.h"

int lmx_fc_plan(const lmx_op_ctx *c, const lmx_tensor *in, lmx_fc_dims *d) {
  const lmx_shape *x = &in[0].shape;
  const lmx_fc_param *p = c->param;
  d->n = p->num_hidden;
  d->bias = !p->no_bias;
  int flatten = p->flatten;
  int64_t size = lmx_glue_size(&in[0]);
  if (x->ndim < 1) return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': expected at least 1-D");
  if (flatten) d->m = x->ndim == 1 ? 1 : x->dim[0];
  else d->m = x->ndim == 1 ? 1 : size / (x->dim[x->ndim - 1] ? x->dim[x->ndim - 1] : 1);
  d->k = d->m ? size / d->m : 0;
  if (!flatten) d->k = x->dim[x->ndim - 1];
  if (d->m * d->k != size)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': cannot be read as a matrix");
  LMX_TRY(lmx_glue_check_size(c, &in[0], size, "input 'data'"));
  lmx_shape ws = {2, {d->n, d->k}};
  LMX_TRY(lmx_glue_check_like(c, &in[1], &ws, in[0].dtype, "input 'weight'"));
  if (d->bias) {
    lmx_shape bs = {1, {d->n}};
    LMX_TRY(lmx_glue_check_like(c, &in[2], &bs, in[0].dtype, "input 'bias'"));
  }
  return LMX_OK;
}

int lmx_mm_plan(const lmx_op_ctx *c, const lmx_tensor *in, int batched, lmx_mm_dims *d) {
  const lmx_shape *a = &in[0].shape, *b = &in[1].shape;
  const lmx_dot_param *p = c->param;
  d->ta = p->transpose_a;
  d->tb = p->transpose_b;
  int64_t sa = lmx_glue_size(&in[0]), sb = lmx_glue_size(&in[1]);
  if (batched) {
    if (a->ndim != 3 || b->ndim != 3 || a->dim[0] != b->dim[0])
      return lmx_op_fail(c, LMX_ERR_SHAPE, "inputs 'lhs' and 'rhs': expected 3-D arrays with "
                         "the same batch size");
    d->batch = a->dim[0];
    d->m = d->ta ? a->dim[2] : a->dim[1];
    d->k = d->ta ? a->dim[1] : a->dim[2];
    d->n = d->tb ? b->dim[1] : b->dim[2];
    int64_t kb = d->tb ? b->dim[2] : b->dim[1];
    if (kb != d->k)
      return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'rhs': expected reduction dim %lld, got %lld",
                         (long long)d->k, (long long)kb);
  } else {
    if (a->ndim < 1 || b->ndim < 1)
      return lmx_op_fail(c, LMX_ERR_SHAPE, "inputs 'lhs' and 'rhs': expected at least 1-D");
    d->batch = 1;
    d->k = d->ta ? a->dim[0] : a->dim[a->ndim - 1];
    d->m = d->k ? sa / d->k : 0;
    int64_t kb = d->tb ? b->dim[b->ndim - 1] : b->dim[0];
    if (kb != d->k)
      return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'rhs': expected reduction dim %lld, got %lld",
                         (long long)d->k, (long long)kb);
    d->n = kb ? sb / kb : 0;
  }
  LMX_TRY(lmx_glue_check_size(c, &in[0], sa, "input 'lhs'"));
  return lmx_glue_check_size(c, &in[1], sb, "input 'rhs'");
}

/* A per-spatial-dim tuple parameter (stride, dilate, pad): k entries, or () for `def`. */
static int tup(const lmx_op_ctx *c, const char *name, const lmx_shape *t, int k, int64_t def,
               int64_t *v) {
  if (t->ndim > 0 && t->ndim != k)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter '%s': expected %d entries, got %d", name, k,
                       t->ndim);
  for (int i = 0; i < k; i++) v[i] = t->ndim > 0 ? t->dim[i] : def;
  return LMX_OK;
}

/* Geometry from the parameters and the image / patch-side shapes (deconv: image = out). */
static int conv_geom_of(const lmx_op_ctx *c, int deconv, const lmx_shape *img,
                        const lmx_shape *pat, lmx_cpu_geom *g) {
  const lmx_conv_param *p = c->param;
  const lmx_shape ks = p->kernel;
  g->k = ks.ndim;
  if (g->k < 1 || g->k > 3 || img->ndim != g->k + 2 || pat->ndim != g->k + 2)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "expected %d-D data for a %d-D kernel", g->k + 2, g->k);
  for (int i = 0; i < g->k; i++) g->kernel[i] = ks.dim[i];
  LMX_TRY(tup(c, "stride", &p->stride, g->k, 1, g->stride));
  LMX_TRY(tup(c, "dilate", &p->dilate, g->k, 1, g->dilate));
  LMX_TRY(tup(c, "pad", &p->pad, g->k, 0, g->pad));
  const lmx_shape ts = p->target_shape; /* Convolution: ndim 0 */
  for (int i = 0; i < g->k; i++) {
    g->in[i] = img->dim[2 + i], g->out[i] = pat->dim[2 + i];
    int64_t ke = g->dilate[i] * (g->kernel[i] - 1) + 1;
    if (deconv && ts.ndim == g->k && ts.dim[i] > 0) { /* MXNet's InferPad */
      int64_t total = g->stride[i] * (g->out[i] - 1) + ke - ts.dim[i];
      g->pad[i] = total > 0 ? (total + 1) / 2 : 0;
    }
    if (g->stride[i] < 1 || g->dilate[i] < 1 || g->pad[i] < 0 ||
        (g->in[i] + 2 * g->pad[i] - ke) / g->stride[i] + 1 != g->out[i] ||
        g->in[i] + 2 * g->pad[i] < ke)
      return lmx_op_fail(c, LMX_ERR_SHAPE, "spatial dim %d: sizes %lld -> %lld do not match "
                         "kernel %lld, stride %lld, pad %lld, dilate %lld", i,
                         (long long)g->in[i], (long long)g->out[i], (long long)g->kernel[i],
                         (long long)g->stride[i], (long long)g->pad[i], (long long)g->dilate[i]);
  }
  lmx_cpu_geom_norm(g);
  return LMX_OK;
}

int lmx_conv_dims_of(const lmx_op_ctx *c, int deconv, const lmx_shape *img,
                     const lmx_shape *pat, int dt, lmx_conv_dims *p) {
  p->deconv = deconv, p->dt = dt;
  const lmx_conv_param *prm = c->param;
  p->bias = !prm->no_bias;
  p->G = prm->num_group;
  LMX_TRY(conv_geom_of(c, deconv, img, pat, &p->g));
  p->N = img->dim[0], p->C = img->dim[1], p->F = pat->dim[1];
  if (pat->dim[0] != p->N || p->G < 1 || p->C % p->G || p->F % p->G)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "channels %lld / %lld and batch do not match num_group "
                       "%lld", (long long)p->C, (long long)p->F, (long long)p->G);
  p->K = p->g.kernel[0] * p->g.kernel[1] * p->g.kernel[2];
  p->CK = p->C / p->G * p->K;
  p->O = p->g.out[0] * p->g.out[1] * p->g.out[2];
  p->I = p->g.in[0] * p->g.in[1] * p->g.in[2];
  return LMX_OK;
}

int lmx_conv_plan(const lmx_op_ctx *c, int deconv, const lmx_tensor *in,
                  const lmx_shape *oshape, lmx_conv_dims *p) {
  const lmx_shape *img = deconv ? oshape : &in[0].shape, *pat = deconv ? &in[0].shape : oshape;
  LMX_TRY(lmx_conv_dims_of(c, deconv, img, pat, in[0].dtype, p));
  /* conv weight (F, C/G, k...); deconv weight (data channels, out channels/G, k...) is
   * the same thing in the convolution view */
  lmx_shape ws = {img->ndim, {p->F, p->C / p->G}};
  for (int i = 0; i < img->ndim - 2; i++) ws.dim[2 + i] = p->g.kernel[3 - (img->ndim - 2) + i];
  LMX_TRY(lmx_glue_check_like(c, &in[1], &ws, p->dt, "input 'weight'"));
  if (p->bias) {
    lmx_shape bs = {1, {deconv ? p->C : p->F}};
    LMX_TRY(lmx_glue_check_like(c, &in[2], &bs, p->dt, "input 'bias'"));
  }
  return lmx_glue_check_size(c, &in[0], lmx_glue_size(&in[0]), "input 'data'");
}

/* Output size of one spatial dim under a convention (MXNet 1.9 pooling.cc PoolingShape):
 * valid floor((x + 2p - k) / s) + 1, full ceil((x + 2p - k) / s) + 1, same ceil((x + 2p) / s)
 * with p = 0 (the only pad 'same' accepts); 0 for an empty dim. */
static int64_t pool_out_size(int conv, int64_t x, int64_t k, int64_t s, int64_t p) {
  if (x == 0) return 0;
  if (conv == 2) return (x + 2 * p + s - 1) / s;
  if (conv == 1) return (x + 2 * p - k + s - 1) / s + 1;
  return (x + 2 * p - k) / s + 1;
}

/* 'same' runs the kernels with pad 0 and out = ceil(x / stride): MXNet passes its pad
 * (required 0) to pool.h unchanged, so windows start at o*stride and only the last ones
 * hang over the end (no padding in front). MXNet 1.9 takes 'same' for 1-D data only; here
 * 2-D and 3-D follow the same rule per dim. The output's spatial sizes must be the
 * convention's (the fast CPU kernels rely on it). */
int lmx_pool_plan(const lmx_op_ctx *c, const lmx_shape *x, const lmx_shape *y, lmx_cpu_geom *g,
                  int *type, int *include_pad, int *p_value) {
  static const char *const names[] = {"valid", "full", "same"};
  const lmx_pool_param *p = c->param;
  int gp = p->global_pool;
  int conv = p->pooling_convention == LMX_POOLC_SAME   ? 2
             : p->pooling_convention == LMX_POOLC_FULL ? 1 : 0;
  g->k = x->ndim - 2;
  if (g->k < 1 || g->k > 3 || y->ndim != x->ndim)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': expected 3-D to 5-D data");
  const lmx_shape ks = p->kernel;
  if (!gp && ks.ndim != g->k)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'kernel': expected %d entries, got %d", g->k,
                       ks.ndim);
  for (int i = 0; i < g->k; i++) {
    g->in[i] = x->dim[2 + i], g->out[i] = y->dim[2 + i], g->dilate[i] = 1;
    g->kernel[i] = gp ? x->dim[2 + i] : ks.dim[i];
  }
  if (gp) {
    for (int i = 0; i < g->k; i++) g->stride[i] = 1, g->pad[i] = 0;
  } else {
    LMX_TRY(tup(c, "stride", &p->stride, g->k, 1, g->stride));
    LMX_TRY(tup(c, "pad", &p->pad, g->k, 0, g->pad));
  }
  for (int i = 0; i < g->k; i++) {
    if (g->kernel[i] < 1 || g->stride[i] < 1 || g->pad[i] < 0)
      return lmx_op_fail(c, LMX_ERR_ARG, "spatial dim %d: kernel %lld and stride %lld must be "
                         ">= 1 and pad %lld >= 0", i, (long long)g->kernel[i],
                         (long long)g->stride[i], (long long)g->pad[i]);
    if (!gp && conv == 2 && g->pad[i] != 0)
      return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'pad': pooling_convention 'same' takes no "
                         "padding, got %lld on spatial dim %d", (long long)g->pad[i], i);
    int64_t want = gp ? 1 : pool_out_size(conv, g->in[i], g->kernel[i], g->stride[i], g->pad[i]);
    if (g->out[i] != want)
      return lmx_op_fail(c, LMX_ERR_SHAPE, "output: spatial dim %d: expected size %lld "
                         "(input %lld, kernel %lld, stride %lld, pad %lld, '%s'), got %lld", i,
                         (long long)want, (long long)g->in[i], (long long)g->kernel[i],
                         (long long)g->stride[i], (long long)g->pad[i],
                         gp ? "global_pool" : names[conv], (long long)g->out[i]);
  }
  *type = p->pool_type == LMX_POOLT_AVG   ? LMX_POOL_AVG
          : p->pool_type == LMX_POOLT_SUM ? LMX_POOL_SUM
          : p->pool_type == LMX_POOLT_LP  ? LMX_POOL_LP : LMX_POOL_MAX;
  *include_pad = p->count_include_pad != 0; /* None (-1): MXNet counts the padding */
  *p_value = p->p_value == LMX_PARAM_NONE_INT ? 2 : (int)p->p_value; /* None: 2 */
  lmx_cpu_geom_norm(g);
  if (x->dim[0] != y->dim[0] || x->dim[1] != y->dim[1])
    return lmx_op_fail(c, LMX_ERR_SHAPE, "output: batch and channels must match the input");
  return LMX_OK;
}

int lmx_norm_plan(const lmx_op_ctx *c, const lmx_tensor *x, int64_t axis, int64_t *o,
                  int64_t *C, int64_t *i) {
  int ax;
  LMX_TRY(lmx_glue_check_size(c, x, lmx_glue_size(x), "input 'data'"));
  LMX_TRY(lmx_op_axis(c, "axis", axis, x->shape.ndim, &ax));
  *o = lmx_glue_outer(&x->shape, ax), *C = x->shape.dim[ax], *i = lmx_glue_inner(&x->shape, ax);
  return LMX_OK;
}

int lmx_rnn_plan(const lmx_op_ctx *c, const lmx_shape *x, int dt, lmx_cpu_rnn *r) {
  const lmx_rnn_param *p = c->param;
  r->mode = p->mode == LMX_RNNM_LSTM       ? LMX_RNN_LSTM
            : p->mode == LMX_RNNM_GRU      ? LMX_RNN_GRU
            : p->mode == LMX_RNNM_RNN_TANH ? LMX_RNN_TANH : LMX_RNN_RELU;
  r->G = r->mode == LMX_RNN_LSTM ? 4 : r->mode == LMX_RNN_GRU ? 3 : 1;
  r->dt = dt;
  r->L = p->num_layers;
  r->D = p->bidirectional ? 2 : 1;
  r->H = p->state_size;
  if (x->ndim != 3)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': expected (sequence length, batch, "
                       "input size)");
  r->T = x->dim[0], r->N = x->dim[1], r->In = x->dim[2];
  r->drop = p->p > 0 && r->L > 1;
  return LMX_OK;
}
