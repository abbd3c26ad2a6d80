/* loss_more.c — CPU glue of softmax_cross_entropy, _contrib_div_sqrt_dim, SVMOutput and
 * IdentityAttachKLSparseReg (issue 14's losses; descriptors in src/ops/loss_more.c).
 *
 * softmax_cross_entropy: float32/float64 (as SoftmaxOutput on the CPU); a label that is
 * not a class index in [0, classes) fails the call naming the row and the value. Its
 * backward reads the head gradient (one number) on the host. _contrib_div_sqrt_dim scales
 * by 1/sqrt(data.shape[-1]) both ways, in the elementwise dtypes of lmx_cpu_scale.
 * SVMOutput copies forward and writes the hinge gradient from the output and the label
 * (float32/float64); the label gets a zero gradient. IdentityAttachKLSparseReg copies
 * forward; its backward updates the aux state moving_avg, then writes the gradient.
 */
#include <math.h>

#include "../../../kernels/cpu/cpu_kernels.h"
#include "../../tensor/dtype.h"
#include "../op_impl.h"
#include "../loss_more_plan.h"
#include "cpu_ops.h"

/* ---- softmax_cross_entropy ------------------------------------------------------------ */

static int sce_check(const lmx_op_ctx *c, const lmx_tensor *in, int64_t *n, int64_t *k) {
  LMX_TRY(lmx_cpu_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_plan_sce(c, &in[0].shape, &in[1].shape, n, k));
  LMX_TRY(lmx_glue_check_size(c, &in[0], *n * *k, "input 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &in[1], *n, "input 'label'"));
  if (in[1].dtype != in[0].dtype) return lmx_cpu_fail_dtype(c, &in[1], "input 'label'");
  return LMX_OK;
}

static int sce_bad_label(const lmx_op_ctx *c, const lmx_tensor *label, int64_t row, int64_t k) {
  return lmx_op_fail(c, LMX_ERR_ARG, "input 'label': expected class indices in [0, %lld), "
                     "got %g at row %lld", (long long)k, lmx_load_f64(label->data,
                     label->dtype, row), (long long)row);
}

int lmx_cpu_fwd_softmax_cross_entropy(const lmx_op_ctx *c, const lmx_tensor *in,
                                      const lmx_tensor *out, const int *req,
                                      const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int64_t n, k;
  LMX_TRY(sce_check(c, in, &n, &k));
  lmx_shape one = LMX_SHP(1);
  LMX_TRY(lmx_glue_check_like(c, &out[0], &one, in[0].dtype, "output"));
  int64_t bad = lmx_cpu_sce_fwd(in[0].dtype, n, k, out[0].data, in[0].data, in[1].data,
                                req[0] == LMX_REQ_ADD);
  if (bad >= 0) return sce_bad_label(c, &in[1], bad, k);
  return LMX_OK;
}

int lmx_cpu_bwd_softmax_cross_entropy(const lmx_op_ctx *c, const lmx_tensor *og,
                                      const lmx_tensor *in, const lmx_tensor *out,
                                      const lmx_tensor *ig, const int *req,
                                      const lmx_tensor *aux) {
  (void)out, (void)aux;
  lmx_cpu_zero_grad(&ig[1], req[1]);
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int64_t n, k;
  LMX_TRY(sce_check(c, in, &n, &k));
  lmx_shape one = LMX_SHP(1);
  LMX_TRY(lmx_glue_check_like(c, &og[0], &one, in[0].dtype, "output gradient"));
  LMX_TRY(lmx_glue_check_like(c, &ig[0], &in[0].shape, in[0].dtype, "gradient of 'data'"));
  for (int64_t i = 0; i < n; i++) {
    double v = lmx_load_f64(in[1].data, in[1].dtype, i);
    if (!(v >= 0.0) || v >= (double)k) return sce_bad_label(c, &in[1], i, k);
  }
  double g = lmx_load_f64(og[0].data, og[0].dtype, 0);
  lmx_cpu_sce_bwd(in[0].dtype, n, k, ig[0].data, in[0].data, in[1].data, g,
                  req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

/* ---- _contrib_div_sqrt_dim -------------------------------------------------------------- */

static int dsd_run(const lmx_op_ctx *c, const lmx_tensor *x, const lmx_tensor *y, int req,
                   const char *xwhat, const char *ywhat) {
  if (req == LMX_REQ_NULL) return LMX_OK;
  double alpha;
  LMX_TRY(lmx_plan_div_sqrt_dim(c, &x->shape, &alpha));
  int64_t n = lmx_glue_size(x);
  LMX_TRY(lmx_glue_check_size(c, x, n, xwhat));
  LMX_TRY(lmx_glue_check_like(c, y, &x->shape, x->dtype, ywhat));
  if (lmx_cpu_scale(x->dtype, n, y->data, x->data, alpha, req == LMX_REQ_ADD) < 0)
    return lmx_cpu_fail_dtype_ew(c, x, xwhat);
  return LMX_OK;
}

int lmx_cpu_fwd__contrib_div_sqrt_dim(const lmx_op_ctx *c, const lmx_tensor *in,
                                      const lmx_tensor *out, const int *req,
                                      const lmx_tensor *aux) {
  (void)aux;
  return dsd_run(c, &in[0], &out[0], req[0], "input 'data'", "output");
}

int lmx_cpu_bwd__contrib_div_sqrt_dim(const lmx_op_ctx *c, const lmx_tensor *og,
                                      const lmx_tensor *in, const lmx_tensor *out,
                                      const lmx_tensor *ig, const int *req,
                                      const lmx_tensor *aux) {
  (void)in, (void)out, (void)aux;
  return dsd_run(c, &og[0], &ig[0], req[0], "output gradient", "gradient of 'data'");
}

/* ---- SVMOutput ------------------------------------------------------------------------- */

int lmx_cpu_fwd_SVMOutput(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                          const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_cpu_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &in[0], lmx_glue_size(&in[0]), "input 'data'"));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, in[0].dtype, "output"));
  lmx_cpu_scale(in[0].dtype, lmx_glue_size(&in[0]), out[0].data, in[0].data, 1.0,
                req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

int lmx_cpu_bwd_SVMOutput(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                          const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                          const lmx_tensor *aux) {
  (void)og, (void)aux;
  lmx_cpu_zero_grad(&ig[1], req[1]);
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  const lmx_svm_param *p = c->param;
  int64_t n, k;
  LMX_TRY(lmx_cpu_check_float(c, &out[0], "output"));
  LMX_TRY(lmx_plan_svm(c, &out[0].shape, &in[1].shape, &n, &k));
  LMX_TRY(lmx_glue_check_size(c, &out[0], n * k, "output"));
  LMX_TRY(lmx_glue_check_size(c, &in[1], n, "input 'label'"));
  if (in[1].dtype != out[0].dtype) return lmx_cpu_fail_dtype(c, &in[1], "input 'label'");
  LMX_TRY(lmx_glue_check_like(c, &ig[0], &out[0].shape, out[0].dtype, "gradient of 'data'"));
  lmx_cpu_svm_grad(out[0].dtype, n, k, ig[0].data, out[0].data, in[1].data, p->margin,
                   p->regularization_coefficient, p->use_linear, req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

/* ---- IdentityAttachKLSparseReg ------------------------------------------------------------ */

int lmx_cpu_fwd_IdentityAttachKLSparseReg(const lmx_op_ctx *c, const lmx_tensor *in,
                                          const lmx_tensor *out, const int *req,
                                          const lmx_tensor *aux) {
  return lmx_cpu_fwd_SVMOutput(c, in, out, req, aux); /* the same checked copy */
}

int lmx_cpu_bwd_IdentityAttachKLSparseReg(const lmx_op_ctx *c, const lmx_tensor *og,
                                          const lmx_tensor *in, const lmx_tensor *out,
                                          const lmx_tensor *ig, const int *req,
                                          const lmx_tensor *aux) {
  (void)out;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  const lmx_klreg_param *p = c->param;
  int64_t n, k;
  LMX_TRY(lmx_cpu_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_plan_klreg(c, &in[0].shape, &aux[0].shape, &n, &k));
  LMX_TRY(lmx_glue_check_size(c, &in[0], n * k, "input 'data'"));
  LMX_TRY(lmx_glue_check_like(c, &aux[0], &aux[0].shape, in[0].dtype, "aux state 'moving_avg'"));
  LMX_TRY(lmx_glue_check_size(c, &aux[0], k, "aux state 'moving_avg'"));
  LMX_TRY(lmx_glue_check_like(c, &og[0], &in[0].shape, in[0].dtype, "output gradient"));
  LMX_TRY(lmx_glue_check_like(c, &ig[0], &in[0].shape, in[0].dtype, "gradient of 'data'"));
  lmx_cpu_klreg_bwd(in[0].dtype, n, k, ig[0].data, og[0].data, in[0].data, aux[0].data,
                    p->sparseness_target, p->penalty, p->momentum, req[0] == LMX_REQ_ADD);
  return LMX_OK;
}
