/* optimizer.c — fused optimizer updates: sgd_update, sgd_mom_update, nag_mom_update,
 * adam_update, rmsprop_update, adagrad_update.
 *
 * Inputs weight, grad and the optimizer states (mom / mean, var / n / history), all of
 * weight's shape and dtype; one output, the new weight, which may (and in practice does)
 * share memory with input 0; the state inputs are updated in place (LMX_OPF_UPDATE).
 * Note: MXNet also marks the state inputs FMutateInputs, which makes them auxiliary
 * states when such an op is composed into a symbol; op.h has no per-input mutate list,
 * so luamx treats them as ordinary inputs of an UPDATE op.
 * Common parameters: lr (required), wd 0, rescale_grad 1, clip_gradient -1 (off).
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
    LMX_PF(lmx_upd_param, gamma1, LMX_PT_FLOAT, "0.95", NULL, 0, 0, "The decay rate of momentum estimates."),
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

static const char *const in_sgd[] = {"weight", "grad", NULL};
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
      .param_size = sizeof(lmx_upd_param),                         \
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
