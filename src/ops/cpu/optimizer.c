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
  static const char *const names[] = {"input 'weight'", "input 'grad'", "state 1", "state 2"};
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
  };
  lmx_cpu_update(in[0].dtype, &u, n, out[0].data, in[0].data, in[1].data,
                 nstate > 0 ? in[2].data : NULL, nstate > 1 ? in[3].data : NULL,
                 req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

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
