/* norm.c — CUDA glue of BatchNorm and LayerNorm (src/ops/cpu/norm.c with device
 * launchers; the layout from nn_plan.c). BatchNorm's conventions are the CPU glue's:
 * batch statistics in training without use_global_stats, folded into the moving ones with
 * momentum during forward; outputs mean and var hold the mean and 1/sqrt(var + eps) used.
 * float16 data keeps gamma, beta, mean, var and the moving statistics in float32 (the
 * op's infer_type); LayerNorm keeps every array in the data dtype.
 * Real builds with cuDNN first offer BatchNorm to it (dnn.c; its workspace holds cuDNN's
 * ones and scratch vectors); what cudnn_args.c refuses runs here.
 */
#include "dnn.h"
#include "nn_util.h"
#include "../nn_plan.h"

/* parameters' dtype for data dtype dt */
static int param_dt(int dt) { return dt == LMX_FLOAT16 ? LMX_FLOAT32 : dt; }

static int vec_check(const lmx_op_ctx *c, const lmx_tensor *t, int64_t n, int dt, const char *w) {
  LMX_TRY(lmx_glue_check_size(c, t, n, w));
  if (t->dtype != dt)
    return lmx_op_fail(c, LMX_ERR_DTYPE, "%s: expected %s, got %s", w, lmx_dtype_str(dt),
                       lmx_dtype_str(t->dtype));
  return LMX_OK;
}

static int bn_setup(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                    lmx_cpu_bn *b) {
  const lmx_bn_param *p = c->param;
  LMX_TRY(lmx_cunn_check_float(c, &in[0], 1, "input 'data'"));
  LMX_TRY(lmx_norm_plan(c, &in[0], p->axis, &b->outer, &b->C, &b->inner));
  int pt = param_dt(in[0].dtype);
  LMX_TRY(vec_check(c, &in[1], b->C, pt, "input 'gamma'"));
  LMX_TRY(vec_check(c, &in[2], b->C, pt, "input 'beta'"));
  LMX_TRY(vec_check(c, &out[1], b->C, pt, "output 'mean'"));
  LMX_TRY(vec_check(c, &out[2], b->C, pt, "output 'var'"));
  b->eps = p->eps;
  b->momentum = p->momentum;
  b->fix_gamma = p->fix_gamma;
  b->batch_stats = c->is_train && !p->use_global_stats;
  b->update_moving = b->batch_stats;
  b->ep = NULL; /* the CPU kernels' fused activation; the GPU runs the steps */
  return LMX_OK;
}

static int req_add(const lmx_op_ctx *c, const char *what) {
  return lmx_op_fail(c, LMX_ERR_UNSUPPORTED,
                     "%s: req 'add' is not supported for this forward output on gpu(%d)", what,
                     c->dev_id);
}

/* cuDNN's ones and scratch vectors (none without cuDNN); in[1] is gamma [C] */
size_t lmx_cuda_ws_BatchNorm(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) {
  (void)c, (void)out;
#ifdef LUAMX_HAVE_CUDNN
  return in[1].ndim == 1 ? lmx_dnn_bn_ws(in[1].dim[0]) : 0;
#else
  (void)in;
  return 0;
#endif
}

int lmx_cuda_fwd_BatchNorm(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                           const int *req, const lmx_tensor *aux) {
  lmx_cpu_bn b;
  LMX_TRY(bn_setup(c, in, out, &b));
  int dt = in[0].dtype, pt = param_dt(dt);
  LMX_TRY(vec_check(c, &aux[0], b.C, pt, "aux 'moving_mean'"));
  LMX_TRY(vec_check(c, &aux[1], b.C, pt, "aux 'moving_var'"));
  if (req[0]) LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, dt, "output"));
  if (req[1] == LMX_REQ_ADD || req[2] == LMX_REQ_ADD) return req_add(c, "mean/var");
  int rc = lmx_cudnn_bn_fwd(c, &b, in, out, req, aux);
  if (rc != LMX_CUDNN_OWN) return rc;
  LMX_CU_TRY(c, lmx_cu_bn_fwd(LMX_CU_S(c), dt, &b, in[0].data, req[0] ? out[0].data : NULL,
                              in[1].data, in[2].data, out[1].data, out[2].data, aux[0].data,
                              aux[1].data, req[0] == LMX_REQ_ADD), "lmx_cu_bn_fwd");
  return LMX_OK;
}

int lmx_cuda_bwd_BatchNorm(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                           const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                           const lmx_tensor *aux) {
  (void)aux;
  lmx_cpu_bn b;
  LMX_TRY(bn_setup(c, in, out, &b));
  int dt = in[0].dtype;
  LMX_TRY(lmx_glue_check_like(c, &og[0], &in[0].shape, dt, "output gradient"));
  for (int i = 0; i < 3; i++)
    if (req[i] != LMX_REQ_NULL)
      LMX_TRY(lmx_glue_check_like(c, &ig[i], &in[i].shape, in[i].dtype, "input gradient"));
  int rc = lmx_cudnn_bn_bwd(c, &b, og, in, out, ig, req);
  if (rc != LMX_CUDNN_OWN) return rc;
  int acc[3] = {req[0] == LMX_REQ_ADD, req[1] == LMX_REQ_ADD, req[2] == LMX_REQ_ADD};
  LMX_CU_TRY(c, lmx_cu_bn_bwd(LMX_CU_S(c), dt, &b, in[0].data, og[0].data, in[1].data,
                              out[1].data, out[2].data, req[0] ? ig[0].data : NULL,
                              req[1] ? ig[1].data : NULL, req[2] ? ig[2].data : NULL, acc),
             "lmx_cu_bn_bwd");
  return LMX_OK;
}

/* ---- LayerNorm ------------------------------------------------------------------------ */

static int ln_setup(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                    int64_t *o, int64_t *C, int64_t *i) {
  LMX_TRY(lmx_cunn_check_float(c, &in[0], 1, "input 'data'"));
  LMX_TRY(lmx_norm_plan(c, &in[0], ((const lmx_ln_param *)c->param)->axis, o, C, i));
  int dt = in[0].dtype;
  LMX_TRY(vec_check(c, &in[1], *C, dt, "input 'gamma'"));
  LMX_TRY(vec_check(c, &in[2], *C, dt, "input 'beta'"));
  LMX_TRY(vec_check(c, &out[1], *o * *i, dt, "output 'mean'"));
  return vec_check(c, &out[2], *o * *i, dt, "output 'std'");
}

int lmx_cuda_fwd_LayerNorm(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                           const int *req, const lmx_tensor *aux) {
  (void)aux;
  int64_t o, C, i;
  LMX_TRY(ln_setup(c, in, out, &o, &C, &i));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, in[0].dtype, "output"));
  if (req[1] == LMX_REQ_ADD || req[2] == LMX_REQ_ADD) return req_add(c, "mean/std");
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_CU_TRY(c, lmx_cu_ln_fwd(LMX_CU_S(c), in[0].dtype, o, C, i,
                              ((const lmx_ln_param *)c->param)->eps, in[0].data, out[0].data,
                              in[1].data, in[2].data, out[1].data, out[2].data,
                              req[0] == LMX_REQ_ADD), "lmx_cu_ln_fwd");
  return LMX_OK;
}

int lmx_cuda_bwd_LayerNorm(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
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
  LMX_CU_TRY(c, lmx_cu_ln_bwd(LMX_CU_S(c), dt, o, C, i, in[0].data, og[0].data, in[1].data,
                              out[1].data, out[2].data, req[0] ? ig[0].data : NULL,
                              req[1] ? ig[1].data : NULL, req[2] ? ig[2].data : NULL, acc),
             "lmx_cu_ln_bwd");
  return LMX_OK;
}
