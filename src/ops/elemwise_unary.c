/* elemwise_unary.c — shape-preserving unary math: exp, log, sqrt, rsqrt, square, abs,
 * sign, sin, cos, tanh, sigmoid, relu, negative, reciprocal, floor, ceil, round.
 *
 * No parameters, one input "data", output of the same shape and dtype (the default
 * rules), and the output may overwrite the input. backward_needs follows MXNet's
 * gradient definitions: the ones whose derivative is written with the output (exp,
 * sqrt, tanh, sigmoid, relu) use the output, the others the input; floor/ceil/round/sign
 * have a zero gradient and need nothing.
 * MXNet 1.9: src/operator/tensor/elemwise_unary_op_basic.cc, _pow.cc, _trig.cc.
 */
#include "op_impl.h"

static const int inplace_00[][2] = {{0, 0}};

#define UNARY_OP(id, needs, docstr)                                    \
  const lmx_op lmx_op_##id = {                                         \
      .name = #id,                                                     \
      .doc = docstr,                                                   \
      .backward_needs = (needs),                                       \
      .inplace = inplace_00,                                           \
      .num_inplace = 1,                                                \
  }

enum {
  BY_IN = LMX_NEEDS_INPUTS | LMX_NEEDS_OUT_GRADS,
  BY_OUT = LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS,
  ZERO = 0
};

UNARY_OP(exp, BY_OUT, "Returns element-wise exponential value of the input.");
UNARY_OP(log, BY_IN, "Returns element-wise natural logarithm of the input.");
UNARY_OP(sqrt, BY_OUT, "Returns element-wise square root of the input.");
UNARY_OP(rsqrt, BY_IN, "Returns element-wise inverse square root of the input.");
UNARY_OP(square, BY_IN, "Returns element-wise squared value of the input.");
UNARY_OP(abs, BY_IN, "Returns element-wise absolute value of the input.");
UNARY_OP(sign, ZERO, "Returns element-wise sign of the input.");
UNARY_OP(sin, BY_IN, "Computes the element-wise sine of the input array.");
UNARY_OP(cos, BY_IN, "Computes the element-wise cosine of the input array.");
UNARY_OP(tanh, BY_OUT, "Returns the hyperbolic tangent of the input array, element-wise.");
UNARY_OP(sigmoid, BY_OUT, "Computes sigmoid of x element-wise.");
UNARY_OP(relu, BY_OUT, "Computes rectified linear activation: max(x, 0).");
UNARY_OP(negative, ZERO | LMX_NEEDS_OUT_GRADS, "Numerical negative of the argument.");
UNARY_OP(reciprocal, BY_IN, "Returns the reciprocal of the argument, element-wise.");
UNARY_OP(floor, ZERO, "Returns element-wise floor of the input.");
UNARY_OP(ceil, ZERO, "Returns element-wise ceiling of the input.");
UNARY_OP(round, ZERO, "Returns element-wise rounded value to the nearest integer.");
