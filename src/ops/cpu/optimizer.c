/* optimizer.c — CPU glue of the fused optimizer updates (sgd_update, sgd_mom_update,
 * nag_mom_update, adam_update, rmsprop_update, adagrad_update).
 *
 * Inputs weight, grad, then the states, all of weight's shape and dtype (checked: a
 * mismatch would read past a buffer). The output is the new weight, normally the weight
 * itself (in place); the states are updated in place through the input tensors, as the
 * descriptor's LMX_OPF_UPDATE says. No backward. Formulas: kernels/cpu/optim.c.
 */
#include "../../../kernels/cpu/cpu_kernels.h"
#include "../../tensor/dtype.h"
#include "../op_impl.h"
#include "cpu_ops.h"

static int update(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                  const int *req, int rule, int nstate) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  static const char *const names[] = {"input 'weight'", "input 'grad'", "state 1", "state 2",
                                      "state 3"};
  LMX_TRY(lmx_cpu_check_float(c, &in[0], names[0]));
  int64_t n = lmx_glue_size(&in[0]);
  for (int i = 0; i < 2 + nstate; i++)
    LMX_TRY(lmx_glue_check_like(c, &in[i], &in[0].shape, in[0].dtype, names[i]));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, in[0].dtype, "output"));
  /* Each rule reads only the fields its op lists (op_params.h: lmx_upd_param). */
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
  lmx_cpu_update(in[0].dtype, &u, n, out[0].data, in[0].data, in[1].data,
                 nstate > 0 ? in[2].data : NULL, nstate > 1 ? in[3].data : NULL,
                 req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

/* Fills u from the op's parameters. */
static lmx_cpu_upd upd_of(const lmx_op_ctx *c, int rule) {
  const lmx_upd_param *p = c->param;
  lmx_cpu_upd u = {.rule = rule, .lr = p->lr, .wd = p->wd, .rescale = p->rescale_grad,
                   .clip = p->clip_gradient, .momentum = p->momentum, .beta1 = p->beta1,
                   .beta2 = p->beta2, .epsilon = p->epsilon, .gamma1 = p->gamma1,
                   .clip_weights = p->clip_weights, .lamda1 = p->lamda1, .beta = p->beta,
                   .wd_lh = p->wd_lh};
  return u;
}

/* ---- multi-precision: float16 weight / grad, float32 mom and weight32 ------------------ */

size_t lmx_cpu_ws_mp_sgd_update(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) {
  (void)c, (void)out;
  return (size_t)lmx_shape_size(&in[0]) * sizeof(float); /* the gradient as float32 */
}
size_t lmx_cpu_ws_mp_sgd_mom_update(const lmx_op_ctx *c, const lmx_shape *in,
                                    const lmx_shape *out) {
  return lmx_cpu_ws_mp_sgd_update(c, in, out);
}
size_t lmx_cpu_ws_mp_nag_mom_update(const lmx_op_ctx *c, const lmx_shape *in,
                                    const lmx_shape *out) {
  return lmx_cpu_ws_mp_sgd_update(c, in, out);
}

/* The float32 rule on weight32 (in place) with the gradient widened to float32 in the
 * workspace; the output receives weight32 rounded to float16 (added for req ADD). */
static int mp_update(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                     const int *req, int rule, int nstate) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int nin = 3 + nstate;
  const lmx_tensor *w32 = &in[nin - 1];
  if (in[0].dtype != LMX_FLOAT16)
    return lmx_op_fail(c, LMX_ERR_DTYPE, "input 'weight': expected float16 (multi-precision "
                       "update), got %s", lmx_dtype_str(in[0].dtype));
  int64_t n = lmx_glue_size(&in[0]);
  LMX_TRY(lmx_glue_check_like(c, &in[0], &in[0].shape, LMX_FLOAT16, "input 'weight'"));
  LMX_TRY(lmx_glue_check_like(c, &in[1], &in[0].shape, LMX_FLOAT16, "input 'grad'"));
  if (nstate) LMX_TRY(lmx_glue_check_like(c, &in[2], &in[0].shape, LMX_FLOAT32, "input 'mom'"));
  LMX_TRY(lmx_glue_check_like(c, w32, &in[0].shape, LMX_FLOAT32, "input 'weight32'"));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, LMX_FLOAT16, "output"));
  LMX_TRY(lmx_glue_check_ws(c, (size_t)n * sizeof(float)));
  float *g32 = c->workspace;
  lmx_cpu_convert(g32, LMX_FLOAT32, in[1].data, LMX_FLOAT16, n);
  lmx_cpu_upd u = upd_of(c, rule);
  lmx_cpu_update(LMX_FLOAT32, &u, n, w32->data, w32->data, g32, nstate ? in[2].data : NULL,
                 NULL, 0);
  if (req[0] != LMX_REQ_ADD) {
    lmx_cpu_convert(out[0].data, LMX_FLOAT16, w32->data, LMX_FLOAT32, n);
  } else {
    const float *m = w32->data;
    for (int64_t i = 0; i < n; i++)
      lmx_store_f64(out[0].data, LMX_FLOAT16, i,
                    (float)(lmx_load_f64(out[0].data, LMX_FLOAT16, i) + m[i]));
  }
  return LMX_OK;
}

#define CPU_MP_UPDATE(id, RULE, NSTATE)                                                     \
  int lmx_cpu_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,    \
                       const int *req, const lmx_tensor *aux) {                             \
    (void)aux;                                                                              \
    return mp_update(c, in, out, req, RULE, NSTATE);                                        \
  }

CPU_MP_UPDATE(mp_sgd_update, LMX_UPD_SGD, 0)
CPU_MP_UPDATE(mp_sgd_mom_update, LMX_UPD_SGD_MOM, 1)
CPU_MP_UPDATE(mp_nag_mom_update, LMX_UPD_NAG, 1)

#define CPU_UPDATE(id, RULE, NSTATE)                                                        \
  int lmx_cpu_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,    \
                       const int *req, const lmx_tensor *aux) {                             \
    (void)aux;                                                                              \
    return update(c, in, out, req, RULE, NSTATE);                                           \
  }

CPU_UPDATE(sgd_update, LMX_UPD_SGD, 0)
CPU_UPDATE(sgd_mom_update, LMX_UPD_SGD_MOM, 1)
CPU_UPDATE(nag_mom_update, LMX_UPD_NAG, 1)
CPU_UPDATE(adam_update, LMX_UPD_ADAM, 2)
CPU_UPDATE(rmsprop_update, LMX_UPD_RMSPROP, 1)
CPU_UPDATE(adagrad_update, LMX_UPD_ADAGRAD, 1)
CPU_UPDATE(ftrl_update, LMX_UPD_FTRL, 2)
CPU_UPDATE(signum_update, LMX_UPD_SIGNUM, 1)
CPU_UPDATE(signsgd_update, LMX_UPD_SIGNSGD, 0)
CPU_UPDATE(ftml_update, LMX_UPD_FTML, 3)
