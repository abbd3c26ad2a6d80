/* optimizer_lamb.c — CUDA glue of LAMB's fused update (issue 17): src/ops/cpu/
 * optimizer_lamb.c's twin on kernels/cuda/optim_lamb.cu. The plain ops take float32,
 * float64 and float16; the mp_ ops float16 weight and grad with float32 mean, var,
 * weight32, g, r1 and r2 (phase two updates weight32 in place and rounds it into the
 * float16 output). r1 and r2 stay on the device: the kernel reads them.
 */
#include "../../tensor/dtype.h"
#include "../op_impl.h"
#include "k1_glue.h"

static lmx_cpu_lamb1 lamb1_of(const lmx_lamb1_param *p) {
  lmx_cpu_lamb1 u = {.beta1 = p->beta1, .beta2 = p->beta2, .epsilon = p->epsilon, .wd = p->wd,
                     .rescale = p->rescale_grad, .clip = p->clip_gradient,
                     .beta1_t = pow(p->beta1, (double)p->t), .beta2_t = pow(p->beta2, (double)p->t),
                     .bias_correction = p->bias_correction};
  return u;
}

static int check_scalar(const lmx_op_ctx *c, const lmx_tensor *t, int dt, const char *what) {
  if (t->dtype != dt)
    return lmx_op_fail(c, LMX_ERR_DTYPE, "%s: expected %s, got %s", what, lmx_dtype_str(dt),
                       lmx_dtype_str(t->dtype));
  if (lmx_glue_size(t) != 1) {
    char b[LMX_SHAPE_STRCAP];
    return lmx_op_fail(c, LMX_ERR_SHAPE, "%s: expected one element (shape (1,)), got shape %s",
                       what, lmx_shape_str(&t->shape, b));
  }
  return lmx_glue_check_size(c, t, 1, what);
}

static int check_half_weight(const lmx_op_ctx *c, const lmx_tensor *w) {
  if (w->dtype != LMX_FLOAT16)
    return lmx_op_fail(c, LMX_ERR_DTYPE, "input 'weight': expected float16 (multi-precision "
                       "update), got %s", lmx_dtype_str(w->dtype));
  return LMX_OK;
}

int lmx_cuda_fwd_lamb_update_phase1(const lmx_op_ctx *c, const lmx_tensor *in,
                                    const lmx_tensor *out, const int *req,
                                    const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  static const char *const nm[] = {"input 'weight'", "input 'grad'", "input 'mean'",
                                   "input 'var'"};
  LMX_TRY(lmx_cuda_check_float(c, &in[0], nm[0]));
  for (int i = 1; i < 4; i++) LMX_TRY(lmx_glue_check_like(c, &in[i], &in[0].shape, in[0].dtype, nm[i]));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, in[0].dtype, "output"));
  lmx_cpu_lamb1 u = lamb1_of(c->param);
  return lmx_cuda_fail(c, lmx_cu_lamb_phase1(LMX_CU_S(c), in[0].dtype, &u, lmx_glue_size(&in[0]),
                                             out[0].data, in[0].data, in[1].data, in[2].data,
                                             in[3].data, req[0] == LMX_REQ_ADD),
                       "lmx_cu_lamb_phase1");
}

int lmx_cuda_fwd_lamb_update_phase2(const lmx_op_ctx *c, const lmx_tensor *in,
                                    const lmx_tensor *out, const int *req,
                                    const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'weight'"));
  LMX_TRY(lmx_glue_check_like(c, &in[1], &in[0].shape, in[0].dtype, "input 'g'"));
  LMX_TRY(check_scalar(c, &in[2], in[0].dtype, "input 'r1'"));
  LMX_TRY(check_scalar(c, &in[3], in[0].dtype, "input 'r2'"));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, in[0].dtype, "output"));
  const lmx_lamb2_param *p = c->param;
  lmx_cpu_lamb2 u = {p->lr, p->lower_bound, p->upper_bound};
  return lmx_cuda_fail(c, lmx_cu_lamb_phase2(LMX_CU_S(c), in[0].dtype, &u, lmx_glue_size(&in[0]),
                                             out[0].data, in[0].data, in[1].data, in[2].data,
                                             in[3].data, req[0] == LMX_REQ_ADD),
                       "lmx_cu_lamb_phase2");
}

int lmx_cuda_fwd_mp_lamb_update_phase1(const lmx_op_ctx *c, const lmx_tensor *in,
                                       const lmx_tensor *out, const int *req,
                                       const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  static const char *const nm[] = {"input 'weight'", "input 'grad'", "input 'mean'",
                                   "input 'var'", "input 'weight32'"};
  LMX_TRY(check_half_weight(c, &in[0]));
  for (int i = 1; i < 5; i++)
    LMX_TRY(lmx_glue_check_like(c, &in[i], &in[0].shape, i < 2 ? LMX_FLOAT16 : LMX_FLOAT32,
                                nm[i]));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, LMX_FLOAT32, "output"));
  lmx_cpu_lamb1 u = lamb1_of(c->param);
  return lmx_cuda_fail(c, lmx_cu_lamb_phase1_mp(LMX_CU_S(c), &u, lmx_glue_size(&in[0]),
                                                out[0].data, in[4].data, in[1].data, in[2].data,
                                                in[3].data, req[0] == LMX_REQ_ADD),
                       "lmx_cu_lamb_phase1_mp");
}

int lmx_cuda_fwd_mp_lamb_update_phase2(const lmx_op_ctx *c, const lmx_tensor *in,
                                       const lmx_tensor *out, const int *req,
                                       const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(check_half_weight(c, &in[0]));
  LMX_TRY(lmx_glue_check_like(c, &in[1], &in[0].shape, LMX_FLOAT32, "input 'g'"));
  LMX_TRY(check_scalar(c, &in[2], LMX_FLOAT32, "input 'r1'"));
  LMX_TRY(check_scalar(c, &in[3], LMX_FLOAT32, "input 'r2'"));
  LMX_TRY(lmx_glue_check_like(c, &in[4], &in[0].shape, LMX_FLOAT32, "input 'weight32'"));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, LMX_FLOAT16, "output"));
  const lmx_lamb2_param *p = c->param;
  lmx_cpu_lamb2 u = {p->lr, p->lower_bound, p->upper_bound};
  return lmx_cuda_fail(c, lmx_cu_lamb_phase2_mp(LMX_CU_S(c), &u, lmx_glue_size(&in[0]),
                                                out[0].data, in[4].data, in[1].data, in[2].data,
                                                in[3].data, req[0] == LMX_REQ_ADD),
                       "lmx_cu_lamb_phase2_mp");
}
