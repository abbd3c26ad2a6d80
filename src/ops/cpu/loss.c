/* loss.c — CPU glue of the output layers: SoftmaxOutput, Linear/Logistic/MAE
 * RegressionOutput, MakeLoss, BlockGrad.
 *
 * Their backward needs no head gradient (LMX_OPF_LOSS): SoftmaxOutput's input gradient
 * is (softmax - onehot(label)) * grad_scale / valid_cnt with MXNet's normalization
 * (null: 1, batch: data.shape[0], valid: labels != ignore_label, at least 1), label
 * smoothing (smooth_alpha), use_ignore, multi_output (softmax over axis 1 of
 * (n, k, rest...)), preserve_shape (over the last axis) and out_grad (times the head
 * gradient). The regression outputs give (out - label) * grad_scale / (label.size /
 * label.shape[0]) (MAE: its sign). MakeLoss gives grad_scale (/ batch or / count of
 * data > valid_thresh). The label gets no gradient (zeros, like MXNet).
 * MXNet 1.9: src/operator/softmax_output-inl.h, regression_output-inl.h, make_loss-inl.h.
 */
#include <math.h>

#include "../../../kernels/cpu/cpu_kernels.h"
#include "../../tensor/dtype.h"
#include "../op_impl.h"
#include "../softmax_plan.h"
#include "cpu_ops.h"

/* ---- SoftmaxOutput -------------------------------------------------------------------- */

typedef lmx_smo_plan smo_dims;

static int smo_layout(const lmx_op_ctx *c, const lmx_tensor *in, smo_dims *d) {
  LMX_TRY(lmx_cpu_check_float(c, &in[0], "input 'data'"));
  return lmx_plan_smo(c, &in[0].shape, d);
}

int lmx_cpu_fwd_SoftmaxOutput(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                              const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  smo_dims d = {0};
  LMX_TRY(smo_layout(c, in, &d));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, in[0].dtype, "output"));
  LMX_TRY(lmx_glue_check_size(c, &in[0], lmx_glue_size(&in[0]), "input 'data'"));
  lmx_cpu_softmax(in[0].dtype, d.outer, d.k, d.inner, out[0].data, in[0].data, 1.0, 0,
                  req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

double lmx_cpu_smo_valid_cnt(const lmx_op_ctx *c, const lmx_tensor *label, const lmx_smo_plan *d) {
  double norm = lmx_plan_smo_norm(c, d);
  if (norm > 0) return norm;
  int64_t n = lmx_glue_size(label), cnt = n;
  int ign = (int)((const lmx_smo_param *)c->param)->ignore_label;
  for (int64_t i = 0; i < n; i++)
    if ((int)lmx_load_f64(label->data, label->dtype, i) == ign) cnt--;
  return cnt > 0 ? (double)cnt : 1.0;
}

int lmx_cpu_bwd_SoftmaxOutput(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                              const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                              const lmx_tensor *aux) {
  (void)aux;
  lmx_cpu_zero_grad(&ig[1], req[1]);
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  smo_dims d = {0};
  LMX_TRY(smo_layout(c, in, &d));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, in[0].dtype, "output"));
  LMX_TRY(lmx_glue_check_like(c, &ig[0], &in[0].shape, in[0].dtype, "gradient of 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &in[1], d.outer * d.inner, "input 'label'"));
  if (in[1].dtype != in[0].dtype) return lmx_cpu_fail_dtype(c, &in[1], "input 'label'");
  const lmx_smo_param *p = c->param;
  const void *g = NULL;
  if (p->out_grad) {
    LMX_TRY(lmx_glue_check_like(c, &og[0], &in[0].shape, in[0].dtype, "output gradient"));
    g = og[0].data;
  }
  double scale = p->grad_scale / lmx_cpu_smo_valid_cnt(c, &in[1], &d);
  lmx_cpu_softmax_output_grad(in[0].dtype, d.outer, d.k, d.inner, ig[0].data, out[0].data,
                              in[1].data, g, p->smooth_alpha, p->use_ignore, p->ignore_label,
                              scale, req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

/* ---- regression outputs --------------------------------------------------------------- */

static int reg_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                   const int *req, int logistic) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_cpu_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, in[0].dtype, "output"));
  lmx_cpu_unary(logistic ? LMX_UN_SIGMOID : LMX_UN_COPY, in[0].dtype, lmx_glue_size(&in[0]),
                out[0].data, in[0].data, req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

static int reg_bwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                   const lmx_tensor *ig, const int *req, int mae) {
  lmx_cpu_zero_grad(&ig[1], req[1]);
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_cpu_check_float(c, &out[0], "output"));
  int64_t n = lmx_glue_size(&out[0]);
  LMX_TRY(lmx_glue_check_size(c, &out[0], n, "output"));
  LMX_TRY(lmx_glue_check_size(c, &in[1], n, "input 'label'"));
  if (in[1].dtype != out[0].dtype) return lmx_cpu_fail_dtype(c, &in[1], "input 'label'");
  LMX_TRY(lmx_glue_check_like(c, &ig[0], &out[0].shape, out[0].dtype, "gradient of 'data'"));
  double scale = lmx_plan_reg_scale(c, &in[1].shape);
  lmx_cpu_regression_grad(out[0].dtype, n, ig[0].data, out[0].data, in[1].data, mae, scale,
                          req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

#define CPU_REG(id, LOGISTIC, MAE)                                                          \
  int lmx_cpu_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,    \
                       const int *req, const lmx_tensor *aux) {                             \
    (void)aux;                                                                              \
    return reg_fwd(c, in, out, req, LOGISTIC);                                              \
  }                                                                                         \
  int lmx_cpu_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,     \
                       const lmx_tensor *out, const lmx_tensor *ig, const int *req,         \
                       const lmx_tensor *aux) {                                             \
    (void)aux, (void)og;                                                                    \
    return reg_bwd(c, in, out, ig, req, MAE);                                               \
  }

CPU_REG(LinearRegressionOutput, 0, 0)
CPU_REG(LogisticRegressionOutput, 1, 0)
CPU_REG(MAERegressionOutput, 0, 1)

/* ---- MakeLoss, BlockGrad ---------------------------------------------------------------- */

static int identity_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                        const int *req) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, in[0].dtype, "output"));
  if (lmx_cpu_scale(in[0].dtype, lmx_glue_size(&in[0]), out[0].data, in[0].data, 1.0,
                    req[0] == LMX_REQ_ADD) < 0)
    return lmx_cpu_fail_dtype(c, &in[0], "input 'data'");
  return LMX_OK;
}

int lmx_cpu_fwd_MakeLoss(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                         const int *req, const lmx_tensor *aux) {
  (void)aux;
  return identity_fwd(c, in, out, req);
}

int lmx_cpu_bwd_MakeLoss(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                         const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                         const lmx_tensor *aux) {
  (void)og, (void)in, (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_cpu_check_float(c, &ig[0], "gradient of 'data'"));
  const lmx_makeloss_param *p = c->param;
  const lmx_shape *s = &ig[0].shape;
  double v = lmx_plan_makeloss_value(c, s);
  if (p->normalization == LMX_NORM_VALID) {
    /* the output equals data (identity forward); backward_needs asks for the output */
    LMX_TRY(lmx_glue_check_like(c, &out[0], s, ig[0].dtype, "output"));
    double th = p->valid_thresh;
    int64_t n = lmx_glue_size(&out[0]), cnt = 0;
    for (int64_t i = 0; i < n; i++) cnt += lmx_load_f64(out[0].data, out[0].dtype, i) > th;
    v /= (double)(cnt > 1 ? cnt : 1);
  }
  int64_t n = lmx_glue_size(&ig[0]);
  if (req[0] == LMX_REQ_ADD)
    lmx_cpu_scalar_op(LMX_SC_PLUS, ig[0].dtype, n, ig[0].data, ig[0].data, v, 0);
  else
    lmx_cpu_fill(ig[0].data, ig[0].dtype, n, v);
  return LMX_OK;
}

int lmx_cpu_fwd_BlockGrad(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                          const int *req, const lmx_tensor *aux) {
  (void)aux;
  return identity_fwd(c, in, out, req);
}

int lmx_cpu_bwd_BlockGrad(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                          const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                          const lmx_tensor *aux) {
  (void)c, (void)og, (void)in, (void)out, (void)aux;
  lmx_cpu_zero_grad(&ig[0], req[0]);
  return LMX_OK;
}
