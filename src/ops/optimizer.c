/* optimizer.c — fused optimizer updates: sgd_update, sgd_mom_update, nag_mom_update,
 * adam_update, rmsprop_update, adagrad_update, ftrl_update, signum_update,
 * signsgd_update, ftml_update (three states: d, v, z), and the multi-precision mp_sgd_update,
 * mp_sgd_mom_update, mp_nag_mom_update.
 *
 * Inputs weight, grad and the optimizer states (mom / mean, var / n / history), all of
 * weight's shape and dtype; one output, the new weight, which may (and in practice does)
 * share memory with input 0; the state inputs are updated in place (LMX_OPF_UPDATE).
 * Note: MXNet also marks the state inputs FMutateInputs, which makes them auxiliary
 * states when such an op is composed into a symbol; op.h has no per-input mutate list,
 * so luamx treats them as ordinary inputs of an UPDATE op.
 * Common parameters: lr (required), wd 0, rescale_grad 1, clip_gradient -1 (off).
 * Multi-precision (MXNet's MP_SGDKernel / MP_SGDMomKernel / MP_NAGMomKernel): the weight
 * and gradient are float16, the last input `weight32` is the float32 master copy and the
 * momentum is float32; the rule runs in float32 on weight32 (updated in place) and the
 * output (float16) receives it rounded.
 * MXNet 1.9: src/operator/optimizer_op.cc, optimizer_op-inl.h.
 */
#include "op_impl.h"

#define F_LR LMX_PF(lmx_upd_param, lr, LMX_PT_FLOAT, NULL, NULL, 0, 0, "Learning rate")
#define F_WD LMX_PF(lmx_upd_param, wd, LMX_PT_FLOAT, "0.0", NULL, 0, 0, \
                    "Weight decay augments the objective function with a regularization term.")
#define F_RESCALE LMX_PF(lmx_upd_param, rescale_grad, LMX_PT_FLOAT, "1.0", NULL, 0, 0, \
                         "Rescale gradient to grad = rescale_grad*grad.")
#define F_CLIP LMX_PF(lmx_upd_param, clip_gradient, LMX_PT_FLOAT, "-1.0", NULL, 0, 0, \
                      "Clip gradient to [-clip_gradient, clip_gradient]; <= 0 turns it off.")
#define F_LAZY LMX_PF(lmx_upd_param, lazy_update, LMX_PT_BOOL, "True", NULL, 0, 0, \
                      "If true, lazy updates are applied if gradient's stype is row_sparse.")
#define F_MOM LMX_PF(lmx_upd_param, momentum, LMX_PT_FLOAT, "0.0", NULL, 0, 0, \
                     "The decay rate of momentum estimates at each epoch.")

static const lmx_param_field sgd_fields[] = {F_LR, F_WD, F_RESCALE, F_CLIP, F_LAZY};
static const lmx_param_field sgd_mom_fields[] = {F_LR, F_MOM, F_WD, F_RESCALE, F_CLIP, F_LAZY};
static const lmx_param_field nag_fields[] = {F_LR, F_MOM, F_WD, F_RESCALE, F_CLIP};
static const lmx_param_field adam_fields[] = {
    F_LR,
    LMX_PF(lmx_upd_param, beta1, LMX_PT_FLOAT, "0.9", NULL, 0, 0,
           "The decay rate for the 1st moment estimates."),
    LMX_PF(lmx_upd_param, beta2, LMX_PT_FLOAT, "0.999", NULL, 0, 0,
           "The decay rate for the 2nd moment estimates."),
    LMX_PF(lmx_upd_param, epsilon, LMX_PT_FLOAT, "1e-08", NULL, 0, 0,
           "A small constant for numerical stability."),
    F_WD, F_RESCALE, F_CLIP, F_LAZY,
};
static const lmx_param_field rmsprop_fields[] = {
    F_LR,
    LMX_PF(lmx_upd_param, gamma1, LMX_PT_FLOAT, "0.95", NULL, 0, 0,
           "The decay rate of momentum estimates."),
    LMX_PF(lmx_upd_param, epsilon, LMX_PT_FLOAT, "1e-08", NULL, 0, 0,
           "A small constant for numerical stability."),
    F_WD, F_RESCALE, F_CLIP,
    LMX_PF(lmx_upd_param, clip_weights, LMX_PT_FLOAT, "-1.0", NULL, 0, 0,
           "Clip weights to [-clip_weights, clip_weights]; <= 0 turns it off."),
};
static const lmx_param_field adagrad_fields[] = {
    F_LR,
    LMX_PF(lmx_upd_param, epsilon, LMX_PT_FLOAT, "1e-07", NULL, 0, 0, "epsilon"),
    F_WD, F_RESCALE, F_CLIP,
};

static const lmx_param_field ftrl_fields[] = {
    F_LR,
    LMX_PF(lmx_upd_param, lamda1, LMX_PT_FLOAT, "0.01", NULL, 0, 0, "The L1 regularization coefficient."),
    LMX_PF(lmx_upd_param, beta, LMX_PT_FLOAT, "1.0", NULL, 0, 0, "Per-Coordinate Learning Rate beta."),
    F_WD, F_RESCALE, F_CLIP,
};
static const lmx_param_field signum_fields[] = {
    F_LR, F_MOM, F_WD, F_RESCALE, F_CLIP,
    LMX_PF(lmx_upd_param, wd_lh, LMX_PT_FLOAT, "0.0", NULL, 0, 0,
           "The amount of weight decay that does not go into gradient/momentum calculations "
           "otherwise do weight decay algorithmically only."),
};
static const lmx_param_field signsgd_fields[] = {F_LR, F_WD, F_RESCALE, F_CLIP};
static const lmx_param_field ftml_fields[] = {
    F_LR,
    LMX_PF(lmx_upd_param, beta1, LMX_PT_FLOAT, "0.6", NULL, 0, 0, "Generally close to 0.5."),
    LMX_PF(lmx_upd_param, beta2, LMX_PT_FLOAT, "0.999", NULL, 0, 0, "Generally close to 1."),
    LMX_PF(lmx_upd_param, epsilon, LMX_PT_FLOAT, "1e-08", NULL, 0, 0, "Epsilon to prevent div 0."),
    LMX_PF(lmx_upd_param, t, LMX_PT_INT, NULL, NULL, 1, 1e15, "Number of update."),
    F_WD, F_RESCALE,
    LMX_PF(lmx_upd_param, clip_grad, LMX_PT_FLOAT, "-1.0", NULL, 0, 0,
           "Clip gradient to [-clip_grad, clip_grad]; <= 0 turns it off."),
};

static const char *const in_sgd[] = {"weight", "grad", NULL};
static const char *const in_ftrl[] = {"weight", "grad", "z", "n", NULL};
static const char *const in_ftml[] = {"weight", "grad", "d", "v", "z", NULL};
static const char *const in_mom[] = {"weight", "grad", "mom", NULL};
static const char *const in_adam[] = {"weight", "grad", "mean", "var", NULL};
static const char *const in_rms[] = {"weight", "grad", "n", NULL};
static const char *const in_adagrad[] = {"weight", "grad", "history", NULL};
static const int inplace_00[][2] = {{0, 0}};

#define UPDATE_OP(id, fields, ins, docstr)                     \
  const lmx_op lmx_op_##id = {                                 \
      .name = #id,                                             \
      .doc = docstr,                                           \
      .params = fields,                                        \
      .num_params = LMX_COUNT(fields),                         \
      .param_size = sizeof(lmx_upd_param),                     \
      .inputs = ins,                                           \
      .inplace = inplace_00,                                   \
      .num_inplace = 1,                                        \
      .flags = LMX_OPF_UPDATE | LMX_OPF_NO_GRAD,               \
  }

UPDATE_OP(sgd_update, sgd_fields, in_sgd, "Update function for Stochastic Gradient Descent "
                                          "(SGD) optimizer.");
UPDATE_OP(sgd_mom_update, sgd_mom_fields, in_mom, "Momentum update function for SGD.");
UPDATE_OP(nag_mom_update, nag_fields, in_mom, "Update function for Nesterov Accelerated "
                                             "Gradient (NAG) optimizer.");
UPDATE_OP(adam_update, adam_fields, in_adam, "Update function for Adam optimizer.");
UPDATE_OP(rmsprop_update, rmsprop_fields, in_rms, "Update function for RMSProp optimizer.");
UPDATE_OP(adagrad_update, adagrad_fields, in_adagrad, "Update function for AdaGrad optimizer.");
UPDATE_OP(ftrl_update, ftrl_fields, in_ftrl, "Update function for Ftrl optimizer.");
UPDATE_OP(signum_update, signum_fields, in_mom, "SIGN momentUM (Signum) optimizer.");
UPDATE_OP(signsgd_update, signsgd_fields, in_sgd, "Update function for SignSGD optimizer.");
UPDATE_OP(ftml_update, ftml_fields, in_ftml, "The FTML optimizer described in FTML - Follow "
                                             "the Moving Leader in Deep Learning.");

/* weight, grad and the output share one (float16) dtype; momentum and weight32 float32 */
static int mp_infer_type(const lmx_op_ctx *c, int *in, int nin, int *out, int nout, int *aux,
                         int naux) {
  (void)nout, (void)aux, (void)naux;
  int dt = in[0] >= 0 ? in[0] : in[1] >= 0 ? in[1] : out[0];
  LMX_TRY(lmx_dtype_assign(c, &in[0], dt, "input 'weight'"));
  LMX_TRY(lmx_dtype_assign(c, &in[1], dt, "input 'grad'"));
  LMX_TRY(lmx_dtype_assign(c, &out[0], dt, "output 'output'"));
  for (int i = 2; i < nin; i++)
    LMX_TRY(lmx_dtype_assign(c, &in[i], LMX_FLOAT32, i == nin - 1 ? "input 'weight32'"
                                                                     : "input 'mom'"));
  return LMX_OK;
}

static const char *const in_mp_sgd[] = {"weight", "grad", "weight32", NULL};
static const char *const in_mp_mom[] = {"weight", "grad", "mom", "weight32", NULL};

#define MP_UPDATE_OP(id, fields, ins, docstr)                  \
  const lmx_op lmx_op_##id = {                                 \
      .name = #id,                                             \
      .doc = docstr,                                           \
      .params = fields,                                        \
      .num_params = LMX_COUNT(fields),                         \
      .param_size = sizeof(lmx_upd_param),                     \
      .inputs = ins,                                           \
      .infer_type = mp_infer_type,                             \
      .inplace = inplace_00,                                   \
      .num_inplace = 1,                                        \
      .flags = LMX_OPF_UPDATE | LMX_OPF_NO_GRAD,               \
  }

MP_UPDATE_OP(mp_sgd_update, sgd_fields, in_mp_sgd, "Updater function for multi-precision sgd "
                                                   "optimizer.");
MP_UPDATE_OP(mp_sgd_mom_update, sgd_mom_fields, in_mp_mom, "Updater function for "
                                                          "multi-precision sgd optimizer.");
MP_UPDATE_OP(mp_nag_mom_update, nag_fields, in_mp_mom, "Update function for multi-precision "
                                                       "Nesterov Accelerated Gradient (NAG) "
                                                       "optimizer.");
