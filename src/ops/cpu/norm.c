/* norm.c — CPU glue of BatchNorm, LayerNorm and Dropout.
 *
 * BatchNorm (axis = channel axis, data read as [outer, C, inner]): in training without
 * use_global_stats it normalizes with the batch statistics and folds them into the aux
 * states moving_mean / moving_var with `momentum` (biased variance) during forward, like
 * MXNet's cuDNN/MKLDNN paths (its plain CPU kernel defers that to backward); otherwise it
 * uses the moving statistics. Outputs mean and var hold the mean and 1/sqrt(var + eps)
 * actually used (MXNet's saved form); backward reads them, so it needs no aux. fix_gamma
 * reads gamma as 1 and gives it a zero gradient (MXNet also overwrites the gamma input
 * with 1; we leave inputs untouched). LayerNorm normalizes over `axis` (outputs mean and
 * std have that axis of size 1). Dropout draws its mask (0 or 1/(1-p), full data shape,
 * shared along `axes`) from the global generator in training or with mode 'always', and
 * is the identity (mask of ones) otherwise; backward multiplies by the mask.
 */
#include <string.h>

#include "../../../kernels/cpu/cpu_kernels.h"
#include "../../tensor/dtype.h"
#include "../../tensor/random.h"
#include "../nn_plan.h"
#include "../op_impl.h"
#include "cpu_ops.h"

static int norm_layout(const lmx_op_ctx *c, const lmx_tensor *x, int64_t axis, int64_t *o,
                       int64_t *C, int64_t *i) {
  LMX_TRY(lmx_cpu_check_float(c, x, "input 'data'"));
  return lmx_norm_plan(c, x, axis, o, C, i); /* shared with the CUDA glue */
}

static int vec_check(const lmx_op_ctx *c, const lmx_tensor *t, int64_t n, int dt, const char *w) {
  LMX_TRY(lmx_glue_check_size(c, t, n, w));
  if (t->dtype != dt) return lmx_cpu_fail_dtype(c, t, w);
  return LMX_OK;
}

/* ---- BatchNorm ------------------------------------------------------------------------ */

static int bn_setup(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                    lmx_cpu_bn *b) {
  const lmx_bn_param *p = c->param;
  LMX_TRY(norm_layout(c, &in[0], p->axis, &b->outer, &b->C, &b->inner));
  int dt = in[0].dtype;
  LMX_TRY(vec_check(c, &in[1], b->C, dt, "input 'gamma'"));
  LMX_TRY(vec_check(c, &in[2], b->C, dt, "input 'beta'"));
  LMX_TRY(vec_check(c, &out[1], b->C, dt, "output 'mean'"));
  LMX_TRY(vec_check(c, &out[2], b->C, dt, "output 'var'"));
  b->eps = p->eps;
  b->momentum = p->momentum;
  b->fix_gamma = p->fix_gamma;
  b->batch_stats = c->is_train && !p->use_global_stats;
  b->update_moving = b->batch_stats;
  b->ep = NULL;
  return LMX_OK;
}

int lmx_cpu_fwd_BatchNorm(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                          const int *req, const lmx_tensor *aux) {
  lmx_cpu_bn b;
  LMX_TRY(bn_setup(c, in, out, &b));
  int dt = in[0].dtype;
  LMX_TRY(vec_check(c, &aux[0], b.C, dt, "aux 'moving_mean'"));
  LMX_TRY(vec_check(c, &aux[1], b.C, dt, "aux 'moving_var'"));
  if (req[0]) LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, dt, "output"));
  if (req[1] == LMX_REQ_ADD || req[2] == LMX_REQ_ADD) return lmx_cpu_fail_req_add(c, "mean/var");
  lmx_cpu_bn_fwd(dt, &b, in[0].data, req[0] ? out[0].data : NULL, in[1].data, in[2].data, out[1].data,
                 out[2].data, aux[0].data, aux[1].data, req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

int lmx_cpu_bn_act_forward(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                           const int *req, const lmx_tensor *aux, const lmx_op_ctx *act,
                           const lmx_tensor *z, const int *zreq) {
  int dt = in[0].dtype;
  lmx_cpu_ep ep = {0};
  lmx_cpu_bn b;
  if ((dt != LMX_FLOAT32 && dt != LMX_FLOAT64) || z->dtype != dt ||
      (zreq[0] != LMX_REQ_WRITE && zreq[0] != LMX_REQ_INPLACE) || req[1] == LMX_REQ_ADD ||
      req[2] == LMX_REQ_ADD || !lmx_cpu_ep_act(act, &ep))
    return 0;
  /* z may be x itself (in place: each element is read before it is written), nothing else */
  if (lmx_cpu_tensors_overlap(z, &in[0]) &&
      (z->data != in[0].data || lmx_glue_size(z) != lmx_glue_size(&in[0])))
    return 0;
  const lmx_tensor *other[] = {&in[1], &in[2], &out[1], &out[2], &aux[0], &aux[1]};
  for (int i = 0; i < 6; i++)
    if (lmx_cpu_tensors_overlap(z, other[i])) return 0;
  if (bn_setup(c, in, out, &b) != LMX_OK || !lmx_shape_equal(&z->shape, &in[0].shape))
    return 0; /* the step itself then reports what bn_setup found */
  for (int i = 0; i < 2; i++)
    if (aux[i].dtype != dt || lmx_glue_size(&aux[i]) != b.C) return 0;
  b.ep = &ep;
  lmx_cpu_bn_fwd(dt, &b, in[0].data, z->data, in[1].data, in[2].data, out[1].data,
                 out[2].data, aux[0].data, aux[1].data, 0);
  return 1;
}

int lmx_cpu_bwd_BatchNorm(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                          const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                          const lmx_tensor *aux) {
  (void)aux;
  lmx_cpu_bn b;
  LMX_TRY(bn_setup(c, in, out, &b));
  int dt = in[0].dtype;
  LMX_TRY(lmx_glue_check_like(c, &og[0], &in[0].shape, dt, "output gradient"));
  for (int i = 0; i < 3; i++)
    if (req[i] != LMX_REQ_NULL)
      LMX_TRY(lmx_glue_check_like(c, &ig[i], &in[i].shape, dt, "input gradient"));
  int acc[3] = {req[0] == LMX_REQ_ADD, req[1] == LMX_REQ_ADD, req[2] == LMX_REQ_ADD};
  lmx_cpu_bn_bwd(dt, &b, in[0].data, og[0].data, in[1].data, out[1].data, out[2].data,
                 req[0] ? ig[0].data : NULL, req[1] ? ig[1].data : NULL,
                 req[2] ? ig[2].data : NULL, acc);
  return LMX_OK;
}

/* ---- LayerNorm ------------------------------------------------------------------------ */

static int ln_setup(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                    int64_t *o, int64_t *C, int64_t *i) {
  LMX_TRY(norm_layout(c, &in[0], ((const lmx_ln_param *)c->param)->axis, o, C, i));
  int dt = in[0].dtype;
  LMX_TRY(vec_check(c, &in[1], *C, dt, "input 'gamma'"));
  LMX_TRY(vec_check(c, &in[2], *C, dt, "input 'beta'"));
  LMX_TRY(vec_check(c, &out[1], *o * *i, dt, "output 'mean'"));
  return vec_check(c, &out[2], *o * *i, dt, "output 'std'");
}

int lmx_cpu_fwd_LayerNorm(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                          const int *req, const lmx_tensor *aux) {
  (void)aux;
  int64_t o, C, i;
  LMX_TRY(ln_setup(c, in, out, &o, &C, &i));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, in[0].dtype, "output"));
  if (req[1] == LMX_REQ_ADD || req[2] == LMX_REQ_ADD) return lmx_cpu_fail_req_add(c, "mean/std");
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  lmx_cpu_ln_fwd(in[0].dtype, o, C, i, ((const lmx_ln_param *)c->param)->eps, in[0].data,
                 out[0].data, in[1].data, in[2].data, out[1].data, out[2].data,
                 req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

int lmx_cpu_bwd_LayerNorm(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                          const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                          const lmx_tensor *aux) {
  (void)aux;
  int64_t o, C, i;
  LMX_TRY(ln_setup(c, in, out, &o, &C, &i));
  int dt = in[0].dtype;
  LMX_TRY(lmx_glue_check_like(c, &og[0], &in[0].shape, dt, "output gradient"));
  for (int k = 0; k < 3; k++)
    if (req[k] != LMX_REQ_NULL)
      LMX_TRY(lmx_glue_check_like(c, &ig[k], &in[k].shape, dt, "input gradient"));
  int acc[3] = {req[0] == LMX_REQ_ADD, req[1] == LMX_REQ_ADD, req[2] == LMX_REQ_ADD};
  lmx_cpu_ln_bwd(dt, o, C, i, in[0].data, og[0].data, in[1].data, out[1].data, out[2].data,
                 req[0] ? ig[0].data : NULL, req[1] ? ig[1].data : NULL,
                 req[2] ? ig[2].data : NULL, acc);
  return LMX_OK;
}

/* ---- Dropout -------------------------------------------------------------------------- */

/* Makes the mask constant along `axes`: every element takes the value at index 0 of
 * those axes (in place; C order reads each source before it could be rewritten). */
static int share_mask(const lmx_op_ctx *c, const lmx_tensor *m) {
  const lmx_shape axes = ((const lmx_dropout_param *)c->param)->axes;
  if (axes.ndim <= 0) return LMX_OK;
  int nd = m->shape.ndim;
  int64_t st[LMX_MAX_NDIM], src[LMX_MAX_NDIM];
  lmx_cpu_contig_strides(nd, m->shape.dim, st);
  memcpy(src, st, sizeof st);
  for (int k = 0; k < axes.ndim; k++) {
    int a;
    LMX_TRY(lmx_op_axis(c, "axes", axes.dim[k], nd, &a));
    src[a] = 0;
  }
  lmx_cpu_strided_copy(m->dtype, nd, m->shape.dim, m->data, st, m->data, src, 0);
  return LMX_OK;
}

int lmx_cpu_fwd_Dropout(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                        const int *req, const lmx_tensor *aux) {
  (void)aux;
  int dt = in[0].dtype;
  int64_t n = lmx_glue_size(&in[0]);
  LMX_TRY(lmx_cpu_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &in[0], n, "input 'data'"));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, dt, "output"));
  LMX_TRY(lmx_glue_check_like(c, &out[1], &in[0].shape, dt, "output 'mask'"));
  if (req[1] == LMX_REQ_ADD) return lmx_cpu_fail_req_add(c, "mask");
  const lmx_dropout_param *prm = c->param;
  double p = prm->p;
  int active = (c->is_train || prm->mode == LMX_DROPOUT_ALWAYS) && p > 0;
  if (!active) {
    lmx_cpu_fill(out[1].data, dt, n, 1.0);
    if (req[0]) lmx_cpu_scale(dt, n, out[0].data, in[0].data, 1.0, req[0] == LMX_REQ_ADD);
    return LMX_OK;
  }
  lmx_rng_fill_uniform(out[1].data, dt, n, 0.0, 1.0);
  lmx_cpu_dropout_mask(dt, n, out[1].data, p);
  LMX_TRY(share_mask(c, &out[1]));
  if (req[0])
    lmx_cpu_ew_binary(LMX_BIN_MUL, dt, n, out[0].data, in[0].data, out[1].data,
                      req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

int lmx_cpu_bwd_Dropout(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                        const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                        const lmx_tensor *aux) {
  (void)in, (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int dt = ig[0].dtype;
  int64_t n = lmx_glue_size(&ig[0]);
  LMX_TRY(lmx_cpu_check_float(c, &ig[0], "gradient of 'data'"));
  LMX_TRY(lmx_glue_check_like(c, &og[0], &ig[0].shape, dt, "output gradient"));
  LMX_TRY(lmx_glue_check_like(c, &out[1], &ig[0].shape, dt, "output 'mask'"));
  lmx_cpu_ew_binary(LMX_BIN_MUL, dt, n, ig[0].data, og[0].data, out[1].data,
                    req[0] == LMX_REQ_ADD);
  return LMX_OK;
}
