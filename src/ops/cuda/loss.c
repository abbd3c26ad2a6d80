/* loss.c — CUDA glue of the output layers: SoftmaxOutput, Linear/Logistic/MAE
 * RegressionOutput, MakeLoss, BlockGrad (src/ops/cpu/loss.c's twin, on the call's stream).
 *
 * Layouts and data-free normalisations come from src/ops/softmax_plan.c, shared with the
 * CPU glue. The 'valid' normalisations depend on data on the device: lmx_cu_count counts
 * the labels that are not ignore_label (SoftmaxOutput) or the outputs above valid_thresh
 * (MakeLoss) into a float in the workspace (at least 1), which the gradient kernel divides
 * by, so nothing waits for the device. The label gets a zero gradient. Forward outputs:
 * softmax (SoftmaxOutput), identity / sigmoid (regression), identity (MakeLoss,
 * BlockGrad). float32, float64 and float16.
 */
#include "../op_impl.h"
#include "../softmax_plan.h"
#include "k1_glue.h"

/* the device float the 'valid' counts go to */
static size_t count_ws(void) { return 16; }

/* ---- SoftmaxOutput -------------------------------------------------------------------- */

size_t lmx_cuda_ws_SoftmaxOutput(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) {
  (void)c, (void)in, (void)out;
  return count_ws();
}

static int smo_layout(const lmx_op_ctx *c, const lmx_tensor *in, lmx_smo_plan *d) {
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &in[0], lmx_glue_size(&in[0]), "input 'data'"));
  return lmx_plan_smo(c, &in[0].shape, d);
}

int lmx_cuda_fwd_SoftmaxOutput(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                               const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  lmx_smo_plan d;
  LMX_TRY(smo_layout(c, in, &d));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, in[0].dtype, "output"));
  return lmx_cuda_fail(c, lmx_cu_softmax(LMX_CU_S(c), in[0].dtype, d.outer, d.k, d.inner,
                                         out[0].data, in[0].data, 1.0, 0, req[0] == LMX_REQ_ADD),
                       "lmx_cu_softmax");
}

int lmx_cuda_bwd_SoftmaxOutput(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                               const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                               const lmx_tensor *aux) {
  (void)aux;
  LMX_TRY(lmx_cuda_zero_grad(c, &ig[1], req[1]));
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  lmx_smo_plan d;
  LMX_TRY(smo_layout(c, in, &d));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, in[0].dtype, "output"));
  LMX_TRY(lmx_glue_check_like(c, &ig[0], &in[0].shape, in[0].dtype, "gradient of 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &in[1], d.outer * d.inner, "input 'label'"));
  if (in[1].dtype != in[0].dtype) return lmx_cuda_fail_dtype(c, &in[1], "input 'label'");
  const lmx_smo_param *p = c->param;
  const void *g = NULL;
  if (p->out_grad) {
    LMX_TRY(lmx_glue_check_like(c, &og[0], &in[0].shape, in[0].dtype, "output gradient"));
    g = og[0].data;
  }
  double norm = lmx_plan_smo_norm(c, &d);
  float *count = NULL;
  if (norm == 0) { /* 'valid': count the labels on the device */
    LMX_TRY(lmx_glue_check_ws(c, count_ws()));
    count = c->workspace;
    LMX_TRY(lmx_cuda_fail(c, lmx_cu_count(LMX_CU_S(c), in[1].dtype, lmx_glue_size(&in[1]),
                                          in[1].data, 0, p->ignore_label, count),
                          "lmx_cu_count"));
    norm = 1.0;
  }
  return lmx_cuda_fail(c, lmx_cu_softmax_output_grad(LMX_CU_S(c), in[0].dtype, d.outer, d.k,
                                                     d.inner, ig[0].data, out[0].data,
                                                     in[1].data, g, p->smooth_alpha,
                                                     p->use_ignore, p->ignore_label,
                                                     p->grad_scale / norm, count,
                                                     req[0] == LMX_REQ_ADD),
                       "lmx_cu_softmax_output_grad");
}

/* ---- regression outputs --------------------------------------------------------------- */

static int reg_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                   const int *req, int logistic) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &in[0], lmx_glue_size(&in[0]), "input 'data'"));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, in[0].dtype, "output"));
  return lmx_cuda_fail(c, lmx_cu_unary(LMX_CU_S(c), logistic ? LMX_UN_SIGMOID : LMX_UN_COPY,
                                       in[0].dtype, lmx_glue_size(&in[0]), out[0].data,
                                       in[0].data, req[0] == LMX_REQ_ADD),
                       "lmx_cu_unary");
}

static int reg_bwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                   const lmx_tensor *ig, const int *req, int mae) {
  LMX_TRY(lmx_cuda_zero_grad(c, &ig[1], req[1]));
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_cuda_check_float(c, &out[0], "output"));
  int64_t n = lmx_glue_size(&out[0]);
  LMX_TRY(lmx_glue_check_size(c, &out[0], n, "output"));
  LMX_TRY(lmx_glue_check_size(c, &in[1], n, "input 'label'"));
  if (in[1].dtype != out[0].dtype) return lmx_cuda_fail_dtype(c, &in[1], "input 'label'");
  LMX_TRY(lmx_glue_check_like(c, &ig[0], &out[0].shape, out[0].dtype, "gradient of 'data'"));
  return lmx_cuda_fail(c, lmx_cu_regression_grad(LMX_CU_S(c), out[0].dtype, n, ig[0].data,
                                                 out[0].data, in[1].data, mae,
                                                 lmx_plan_reg_scale(c, &in[1].shape),
                                                 req[0] == LMX_REQ_ADD),
                       "lmx_cu_regression_grad");
}

#define CUDA_REG(id, LOGISTIC, MAE)                                                          \
  int lmx_cuda_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,    \
                        const int *req, const lmx_tensor *aux) {                             \
    (void)aux;                                                                               \
    return reg_fwd(c, in, out, req, LOGISTIC);                                               \
  }                                                                                          \
  int lmx_cuda_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,     \
                        const lmx_tensor *out, const lmx_tensor *ig, const int *req,         \
                        const lmx_tensor *aux) {                                             \
    (void)aux, (void)og;                                                                     \
    return reg_bwd(c, in, out, ig, req, MAE);                                                \
  }

CUDA_REG(LinearRegressionOutput, 0, 0)
CUDA_REG(LogisticRegressionOutput, 1, 0)
CUDA_REG(MAERegressionOutput, 0, 1)

/* ---- MakeLoss, BlockGrad ---------------------------------------------------------------- */

static int identity_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                        const int *req) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_glue_check_size(c, &in[0], lmx_glue_size(&in[0]), "input 'data'"));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, in[0].dtype, "output"));
  int rc = lmx_cu_scale(LMX_CU_S(c), in[0].dtype, lmx_glue_size(&in[0]), out[0].data,
                        in[0].data, 1.0, req[0] == LMX_REQ_ADD);
  if (rc == -1) return lmx_cuda_fail_dtype(c, &in[0], "input 'data'");
  return lmx_cuda_fail(c, rc, "lmx_cu_scale");
}

size_t lmx_cuda_ws_MakeLoss(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) {
  (void)c, (void)in, (void)out;
  return count_ws();
}

int lmx_cuda_fwd_MakeLoss(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                          const int *req, const lmx_tensor *aux) {
  (void)aux;
  return identity_fwd(c, in, out, req);
}

int lmx_cuda_bwd_MakeLoss(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                          const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                          const lmx_tensor *aux) {
  (void)og, (void)in, (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_cuda_check_float(c, &ig[0], "gradient of 'data'"));
  const lmx_makeloss_param *p = c->param;
  const lmx_shape *s = &ig[0].shape;
  int64_t n = lmx_glue_size(&ig[0]);
  LMX_TRY(lmx_glue_check_size(c, &ig[0], n, "gradient of 'data'"));
  float *count = NULL;
  if (p->normalization == LMX_NORM_VALID) {
    /* the output equals data (identity forward); backward_needs asks for the output */
    LMX_TRY(lmx_glue_check_like(c, &out[0], s, ig[0].dtype, "output"));
    LMX_TRY(lmx_glue_check_ws(c, count_ws()));
    count = c->workspace;
    LMX_TRY(lmx_cuda_fail(c, lmx_cu_count(LMX_CU_S(c), out[0].dtype, n, out[0].data, 1,
                                          p->valid_thresh, count),
                          "lmx_cu_count"));
  }
  return lmx_cuda_fail(c, lmx_cu_fill_div(LMX_CU_S(c), ig[0].dtype, n, ig[0].data,
                                          lmx_plan_makeloss_value(c, s), count,
                                          req[0] == LMX_REQ_ADD),
                       "lmx_cu_fill_div");
}

int lmx_cuda_fwd_BlockGrad(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                           const int *req, const lmx_tensor *aux) {
  (void)aux;
  return identity_fwd(c, in, out, req);
}

int lmx_cuda_bwd_BlockGrad(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                           const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                           const lmx_tensor *aux) {
  (void)og, (void)in, (void)out, (void)aux;
  return lmx_cuda_zero_grad(c, &ig[0], req[0]);
}
