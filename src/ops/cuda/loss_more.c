/* loss_more.c — CUDA glue of softmax_cross_entropy, _contrib_div_sqrt_dim, SVMOutput and
 * IdentityAttachKLSparseReg
 * (src/ops/cpu/loss_more.c's twin, on the call's stream). Shapes come from
 * src/ops/loss_more_plan.c, shared with the CPU glue. softmax_cross_entropy's head
 * gradient stays on the device (the kernel reads it); a label outside [0, classes) gives
 * NaN there instead of the CPU's error, since checking it would wait for the device.
 * float32, float64 and float16.
 */
#include "../loss_more_plan.h"
#include "../op_impl.h"
#include "k1_glue.h"

/* ---- softmax_cross_entropy ------------------------------------------------------------ */

static int sce_check(const lmx_op_ctx *c, const lmx_tensor *in, int64_t *n, int64_t *k) {
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_plan_sce(c, &in[0].shape, &in[1].shape, n, k));
  LMX_TRY(lmx_glue_check_size(c, &in[0], *n * *k, "input 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &in[1], *n, "input 'label'"));
  if (in[1].dtype != in[0].dtype) return lmx_cuda_fail_dtype(c, &in[1], "input 'label'");
  return LMX_OK;
}

int lmx_cuda_fwd_softmax_cross_entropy(const lmx_op_ctx *c, const lmx_tensor *in,
                                       const lmx_tensor *out, const int *req,
                                       const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int64_t n, k;
  LMX_TRY(sce_check(c, in, &n, &k));
  lmx_shape one = LMX_SHP(1);
  LMX_TRY(lmx_glue_check_like(c, &out[0], &one, in[0].dtype, "output"));
  return lmx_cuda_fail(c, lmx_cu_sce_fwd(LMX_CU_S(c), in[0].dtype, n, k, out[0].data,
                                         in[0].data, in[1].data, req[0] == LMX_REQ_ADD),
                       "lmx_cu_sce_fwd");
}

int lmx_cuda_bwd_softmax_cross_entropy(const lmx_op_ctx *c, const lmx_tensor *og,
                                       const lmx_tensor *in, const lmx_tensor *out,
                                       const lmx_tensor *ig, const int *req,
                                       const lmx_tensor *aux) {
  (void)out, (void)aux;
  LMX_TRY(lmx_cuda_zero_grad(c, &ig[1], req[1]));
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int64_t n, k;
  LMX_TRY(sce_check(c, in, &n, &k));
  lmx_shape one = LMX_SHP(1);
  LMX_TRY(lmx_glue_check_like(c, &og[0], &one, in[0].dtype, "output gradient"));
  LMX_TRY(lmx_glue_check_like(c, &ig[0], &in[0].shape, in[0].dtype, "gradient of 'data'"));
  return lmx_cuda_fail(c, lmx_cu_sce_bwd(LMX_CU_S(c), in[0].dtype, n, k, ig[0].data,
                                         in[0].data, in[1].data, og[0].data,
                                         req[0] == LMX_REQ_ADD),
                       "lmx_cu_sce_bwd");
}

/* ---- _contrib_div_sqrt_dim -------------------------------------------------------------- */

static int dsd_run(const lmx_op_ctx *c, const lmx_tensor *x, const lmx_tensor *y, int req,
                   const char *xwhat, const char *ywhat) {
  if (req == LMX_REQ_NULL) return LMX_OK;
  double alpha;
  LMX_TRY(lmx_cuda_check_float(c, x, xwhat));
  LMX_TRY(lmx_plan_div_sqrt_dim(c, &x->shape, &alpha));
  int64_t n = lmx_glue_size(x);
  LMX_TRY(lmx_glue_check_size(c, x, n, xwhat));
  LMX_TRY(lmx_glue_check_like(c, y, &x->shape, x->dtype, ywhat));
  return lmx_cuda_fail(c, lmx_cu_scale(LMX_CU_S(c), x->dtype, n, y->data, x->data, alpha,
                                       req == LMX_REQ_ADD),
                       "lmx_cu_scale");
}

int lmx_cuda_fwd__contrib_div_sqrt_dim(const lmx_op_ctx *c, const lmx_tensor *in,
                                       const lmx_tensor *out, const int *req,
                                       const lmx_tensor *aux) {
  (void)aux;
  return dsd_run(c, &in[0], &out[0], req[0], "input 'data'", "output");
}

int lmx_cuda_bwd__contrib_div_sqrt_dim(const lmx_op_ctx *c, const lmx_tensor *og,
                                       const lmx_tensor *in, const lmx_tensor *out,
                                       const lmx_tensor *ig, const int *req,
                                       const lmx_tensor *aux) {
  (void)in, (void)out, (void)aux;
  return dsd_run(c, &og[0], &ig[0], req[0], "output gradient", "gradient of 'data'");
}

/* ---- SVMOutput ------------------------------------------------------------------------- */

int lmx_cuda_fwd_SVMOutput(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                           const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &in[0], lmx_glue_size(&in[0]), "input 'data'"));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, in[0].dtype, "output"));
  return lmx_cuda_fail(c, lmx_cu_scale(LMX_CU_S(c), in[0].dtype, lmx_glue_size(&in[0]),
                                       out[0].data, in[0].data, 1.0, req[0] == LMX_REQ_ADD),
                       "lmx_cu_scale");
}

int lmx_cuda_bwd_SVMOutput(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                           const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                           const lmx_tensor *aux) {
  (void)og, (void)aux;
  LMX_TRY(lmx_cuda_zero_grad(c, &ig[1], req[1]));
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  const lmx_svm_param *p = c->param;
  int64_t n, k;
  LMX_TRY(lmx_cuda_check_float(c, &out[0], "output"));
  LMX_TRY(lmx_plan_svm(c, &out[0].shape, &in[1].shape, &n, &k));
  LMX_TRY(lmx_glue_check_size(c, &out[0], n * k, "output"));
  LMX_TRY(lmx_glue_check_size(c, &in[1], n, "input 'label'"));
  if (in[1].dtype != out[0].dtype) return lmx_cuda_fail_dtype(c, &in[1], "input 'label'");
  LMX_TRY(lmx_glue_check_like(c, &ig[0], &out[0].shape, out[0].dtype, "gradient of 'data'"));
  return lmx_cuda_fail(c, lmx_cu_svm_grad(LMX_CU_S(c), out[0].dtype, n, k, ig[0].data,
                                          out[0].data, in[1].data, p->margin,
                                          p->regularization_coefficient, p->use_linear,
                                          req[0] == LMX_REQ_ADD),
                       "lmx_cu_svm_grad");
}

/* ---- IdentityAttachKLSparseReg ------------------------------------------------------------ */

int lmx_cuda_fwd_IdentityAttachKLSparseReg(const lmx_op_ctx *c, const lmx_tensor *in,
                                           const lmx_tensor *out, const int *req,
                                           const lmx_tensor *aux) {
  return lmx_cuda_fwd_SVMOutput(c, in, out, req, aux); /* the same checked copy */
}

int lmx_cuda_bwd_IdentityAttachKLSparseReg(const lmx_op_ctx *c, const lmx_tensor *og,
                                           const lmx_tensor *in, const lmx_tensor *out,
                                           const lmx_tensor *ig, const int *req,
                                           const lmx_tensor *aux) {
  (void)out;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  const lmx_klreg_param *p = c->param;
  int64_t n, k;
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_plan_klreg(c, &in[0].shape, &aux[0].shape, &n, &k));
  LMX_TRY(lmx_glue_check_size(c, &in[0], n * k, "input 'data'"));
  LMX_TRY(lmx_glue_check_like(c, &aux[0], &aux[0].shape, in[0].dtype, "aux state 'moving_avg'"));
  LMX_TRY(lmx_glue_check_size(c, &aux[0], k, "aux state 'moving_avg'"));
  LMX_TRY(lmx_glue_check_like(c, &og[0], &in[0].shape, in[0].dtype, "output gradient"));
  LMX_TRY(lmx_glue_check_like(c, &ig[0], &in[0].shape, in[0].dtype, "gradient of 'data'"));
  return lmx_cuda_fail(c, lmx_cu_klreg_bwd(LMX_CU_S(c), in[0].dtype, n, k, ig[0].data,
                                           og[0].data, in[0].data, aux[0].data,
                                           p->sparseness_target, p->penalty, p->momentum,
                                           req[0] == LMX_REQ_ADD),
                       "lmx_cu_klreg_bwd");
}
