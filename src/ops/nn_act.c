/* nn_act.c — activations: Activation, LeakyReLU, softmax, log_softmax, SoftmaxActivation.
 *
 * All keep the data shape (LeakyReLU's prelu adds a gamma input of one slope per channel:
 * (C,) with C = data.shape[1]; rrelu has a second output, the sampled mask, hidden).
 * MXNet 1.9 sources: src/operator/nn/activation.cc, leaky_relu.cc, softmax.cc,
 * softmax_activation.cc. Activation may run in place (output over data).
 */
#include "op_impl.h"

/* ---- Activation ----------------------------------------------------------------------- */

typedef struct {
  int act_type;
} act_param;

static const lmx_param_field act_fields[] = {
    LMX_PF(act_param, act_type, LMX_PT_ENUM, NULL, "relu|sigmoid|tanh|softrelu|softsign", 0, 0,
           "Activation function to be applied."),
};

static const int inplace_00[][2] = {{0, 0}};

const lmx_op lmx_op_Activation = {
    .name = "Activation",
    .doc = "Applies an activation function element-wise to the input.",
    LMX_PARAMS(act_fields, act_param),
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS,
    .inplace = inplace_00,
    .num_inplace = 1,
};
