/* elemwise_binary.c — elementwise binary ops on equal shapes: elemwise_add/sub/mul/div,
 * _power, _maximum, _minimum, and add_n (ElementWiseSum, any number of inputs).
 *
 * Shapes: every input and the output share one shape, merged in both directions (no
 * broadcasting: broadcast.c has the broadcast_* family). The operator overloads of the
 * symbol layer call MXNet's internal aliases (_Plus, _Minus, _Mul, _Div, _Power), which
 * resolve here; the node keeps the canonical name (elemwise_add) and the automatic name
 * comes from the alias (`a + b` -> `_plus0`, see lmx_op_hint_of).
 * MXNet 1.9: src/operator/tensor/elemwise_binary_op_basic.cc, elemwise_sum.cc.
 */
#include "op_impl.h"

static const char *const in_lhs_rhs[] = {"lhs", "rhs", NULL};
static const int inplace_bin[][2] = {{0, 0}, {1, 0}};

#define BINARY_OP(id, docstr)                                              \
  const lmx_op lmx_op_##id = {                                             \
      .name = #id,                                                         \
      .doc = docstr,                                                       \
      .inputs = in_lhs_rhs,                                                \
      .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUT_GRADS,            \
      .inplace = inplace_bin,                                              \
      .num_inplace = 2,                                                    \
  }

BINARY_OP(elemwise_add, "Adds arguments element-wise (equal shapes).");
BINARY_OP(elemwise_sub, "Subtracts arguments element-wise (equal shapes).");
BINARY_OP(elemwise_mul, "Multiplies arguments element-wise (equal shapes).");
BINARY_OP(elemwise_div, "Divides arguments element-wise (equal shapes).");
BINARY_OP(_power, "First array raised to the powers of the second, element-wise.");
BINARY_OP(_maximum, "Element-wise maximum of the arguments.");
BINARY_OP(_minimum, "Element-wise minimum of the arguments.");

/* ---- add_n (ElementWiseSum) -------------------------------------------------------- */

static const lmx_param_field addn_fields[] = {
    LMX_PF(lmx_addn_param, num_args, LMX_PT_INT, NULL, NULL, 1, 100000,
           "Number of inputs to be summed."),
};

static int addn_num_inputs(const void *p) { return (int)((const lmx_addn_param *)p)->num_args; }

static void addn_input_name(const void *p, int i, char *buf, size_t cap) {
  (void)p;
  snprintf(buf, cap, "arg%d", i);
}

static const int inplace_00[][2] = {{0, 0}};

const lmx_op lmx_op_add_n = {
    .name = "add_n",
    .doc = "Adds all input arguments element-wise (alias ElementWiseSum).",
    LMX_PARAMS(addn_fields, lmx_addn_param),
    .num_inputs = addn_num_inputs,
    .input_name = addn_input_name,
    .backward_needs = LMX_NEEDS_OUT_GRADS,
    .inplace = inplace_00,
    .num_inplace = 1,
};
