/* optimizer.c — CUDA glue of the fused optimizer updates (sgd_update, sgd_mom_update,
 * nag_mom_update, adam_update, rmsprop_update, adagrad_update): src/ops/cpu/optimizer.c's
 * twin on kernels/cuda/optim.cu. Inputs weight, grad, then the states, all of weight's
 * shape and dtype (float32, float64, float16); the output is the new weight, normally
 * the weight itself; states update in place. No backward. The multi-precision updates
 * (mp_sgd_update, mp_sgd_mom_update, mp_nag_mom_update) run the float32 rule on the
 * master copy weight32 with the float16 gradient and write the float16 weight.
 */
#include "../../tensor/dtype.h"
#include "../op_impl.h"
#include "k1_glue.h"

static int update(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                  const int *req, int rule, int nstate) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  static const char *const names[] = {"input 'weight'", "input 'grad'", "state 1", "state 2",
                                      "state 3"};
  LMX_TRY(lmx_cuda_check_float(c, &in[0], names[0]));
  int64_t n = lmx_glue_size(&in[0]);
  for (int i = 0; i < 2 + nstate; i++)
    LMX_TRY(lmx_glue_check_like(c, &in[i], &in[0].shape, in[0].dtype, names[i]));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, in[0].dtype, "output"));
  const lmx_upd_param *p = c->param;
  lmx_cpu_upd u = {
      .rule = rule,
      .lr = p->lr,
      .wd = p->wd,
      .rescale = p->rescale_grad,
      .clip = p->clip_gradient,
      .momentum = p->momentum,
      .beta1 = p->beta1,
      .beta2 = p->beta2,
      .epsilon = p->epsilon,
      .gamma1 = p->gamma1,
      .clip_weights = p->clip_weights,
      .lamda1 = p->lamda1,
      .beta = p->beta,
      .wd_lh = p->wd_lh,
      .t = (double)p->t,
      .s2 = nstate > 2 ? in[4].data : NULL,
  };
  if (rule == LMX_UPD_FTML) u.clip = p->clip_grad; /* ftml_update names it clip_grad */
  return lmx_cuda_fail(c, lmx_cu_update(LMX_CU_S(c), in[0].dtype, &u, n, out[0].data, in[0].data,
                                        in[1].data, nstate > 0 ? in[2].data : NULL,
                                        nstate > 1 ? in[3].data : NULL, req[0] == LMX_REQ_ADD),
                       "lmx_cu_update");
}

#define CUDA_UPDATE(id, RULE, NSTATE)                                                       \
  int lmx_cuda_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,   \
                        const int *req, const lmx_tensor *aux) {                            \
    (void)aux;                                                                              \
    return update(c, in, out, req, RULE, NSTATE);                                           \
  }

CUDA_UPDATE(sgd_update, LMX_UPD_SGD, 0)
CUDA_UPDATE(sgd_mom_update, LMX_UPD_SGD_MOM, 1)
CUDA_UPDATE(nag_mom_update, LMX_UPD_NAG, 1)
CUDA_UPDATE(adam_update, LMX_UPD_ADAM, 2)
CUDA_UPDATE(rmsprop_update, LMX_UPD_RMSPROP, 1)
CUDA_UPDATE(adagrad_update, LMX_UPD_ADAGRAD, 1)
CUDA_UPDATE(ftrl_update, LMX_UPD_FTRL, 2)
CUDA_UPDATE(signum_update, LMX_UPD_SIGNUM, 1)
CUDA_UPDATE(signsgd_update, LMX_UPD_SIGNSGD, 0)
CUDA_UPDATE(ftml_update, LMX_UPD_FTML, 3)

static int mp_update(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                     const int *req, int rule, int nstate) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  const lmx_tensor *w32 = &in[2 + nstate];
  if (in[0].dtype != LMX_FLOAT16)
    return lmx_op_fail(c, LMX_ERR_DTYPE, "input 'weight': expected float16 (multi-precision "
                       "update), got %s", lmx_dtype_str(in[0].dtype));
  LMX_TRY(lmx_glue_check_like(c, &in[0], &in[0].shape, LMX_FLOAT16, "input 'weight'"));
  LMX_TRY(lmx_glue_check_like(c, &in[1], &in[0].shape, LMX_FLOAT16, "input 'grad'"));
  if (nstate) LMX_TRY(lmx_glue_check_like(c, &in[2], &in[0].shape, LMX_FLOAT32, "input 'mom'"));
  LMX_TRY(lmx_glue_check_like(c, w32, &in[0].shape, LMX_FLOAT32, "input 'weight32'"));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, LMX_FLOAT16, "output"));
  const lmx_upd_param *p = c->param;
  lmx_cpu_upd u = {.rule = rule, .lr = p->lr, .wd = p->wd, .rescale = p->rescale_grad,
                   .clip = p->clip_gradient, .momentum = p->momentum};
  return lmx_cuda_fail(c, lmx_cu_update_mp(LMX_CU_S(c), &u, lmx_glue_size(&in[0]), out[0].data,
                                           in[1].data, nstate ? in[2].data : NULL, NULL,
                                           w32->data, req[0] == LMX_REQ_ADD),
                       "lmx_cu_update_mp");
}

#define CUDA_MP_UPDATE(id, RULE, NSTATE)                                                    \
  int lmx_cuda_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,   \
                        const int *req, const lmx_tensor *aux) {                            \
    (void)aux;                                                                              \
    return mp_update(c, in, out, req, RULE, NSTATE);                                        \
  }

CUDA_MP_UPDATE(mp_sgd_update, LMX_UPD_SGD, 0)
CUDA_MP_UPDATE(mp_sgd_mom_update, LMX_UPD_SGD_MOM, 1)
CUDA_MP_UPDATE(mp_nag_mom_update, LMX_UPD_NAG, 1)
