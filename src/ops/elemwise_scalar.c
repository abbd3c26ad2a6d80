/* elemwise_scalar.c — array-with-scalar ops: _plus_scalar ... _lesser_equal_scalar.
 *
 * One input "data", parameter `scalar` (MXNet 1.9's NumpyBinaryScalarParam: scalar
 * default 1, is_int default True — Python's overloads pass scalar only). Output has the
 * input's shape and dtype; it may overwrite the input. The symbol overloads call the
 * CamelCase aliases (_PlusScalar, _MulScalar, _RMinusScalar, ...) so the automatic name
 * is `_plusscalar0`, `_mulscalar0`, ... while the node stores `_plus_scalar`.
 * Comparisons return 0/1 in the input's dtype, like MXNet.
 * MXNet 1.9: src/operator/tensor/elemwise_binary_scalar_op_*.cc.
 */
#include "op_impl.h"

static const lmx_param_field scalar_fields[] = {
    LMX_PF(lmx_scalar_param, scalar, LMX_PT_FLOAT, "1.0", NULL, 0, 0, "Scalar input value."),
    LMX_PF(lmx_scalar_param, is_int, LMX_PT_BOOL, "True", NULL, 0, 0,
           "Indicate whether scalar input is int type."),
};

static const int inplace_00[][2] = {{0, 0}};

#define SCALAR_OP(id, hintstr, needs, docstr)                          \
  const lmx_op lmx_op_##id = {                                         \
      .name = #id,                                                     \
      .hint = hintstr,                                                 \
      .doc = docstr,                                                   \
      LMX_PARAMS(scalar_fields, lmx_scalar_param),                         \
      .backward_needs = (needs),                                       \
      .inplace = inplace_00,                                           \
      .num_inplace = 1,                                                \
  }

enum { G = LMX_NEEDS_OUT_GRADS, GI = LMX_NEEDS_OUT_GRADS | LMX_NEEDS_INPUTS };

SCALAR_OP(_plus_scalar, "_plusscalar", G, "data + scalar");
SCALAR_OP(_minus_scalar, "_minusscalar", G, "data - scalar");
SCALAR_OP(_rminus_scalar, "_rminusscalar", G, "scalar - data");
SCALAR_OP(_mul_scalar, "_mulscalar", G, "data * scalar");
SCALAR_OP(_div_scalar, "_divscalar", G, "data / scalar");
SCALAR_OP(_rdiv_scalar, "_rdivscalar", GI, "scalar / data");
SCALAR_OP(_power_scalar, "_powerscalar", GI, "data ** scalar");
SCALAR_OP(_rpower_scalar, "_rpowerscalar", GI | LMX_NEEDS_OUTPUTS, "scalar ** data");
SCALAR_OP(_maximum_scalar, "_maximumscalar", GI, "max(data, scalar)");
SCALAR_OP(_minimum_scalar, "_minimumscalar", GI, "min(data, scalar)");
SCALAR_OP(_equal_scalar, "_equalscalar", 0, "data == scalar (0/1)");
SCALAR_OP(_not_equal_scalar, "_notequalscalar", 0, "data != scalar (0/1)");
SCALAR_OP(_greater_scalar, "_greaterscalar", 0, "data > scalar (0/1)");
SCALAR_OP(_greater_equal_scalar, "_greaterequalscalar", 0, "data >= scalar (0/1)");
SCALAR_OP(_lesser_scalar, "_lesserscalar", 0, "data < scalar (0/1)");
SCALAR_OP(_lesser_equal_scalar, "_lesserequalscalar", 0, "data <= scalar (0/1)");
