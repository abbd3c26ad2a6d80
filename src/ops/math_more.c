/* math_more.c — the math family (ops14a): MXNet 1.9's remaining unary functions, the
 * elementwise comparisons and logical ops (equal shapes, with a scalar, broadcasting),
 * hypot, mod and smooth_l1, the reductions nansum, nanprod and moments, and the
 * activations hard_sigmoid and softmin.
 *
 * Unary ops take one input "data" and give the same shape and dtype (may run in place);
 * backward_needs follows MXNet's gradient definitions (cbrt, tan and erfinv write theirs
 * with the output, gamma with both, fix / rint / trunc / logical_not have none).
 * Equal-shape binary ops take lhs, rhs of one shape (elemwise_binary.c's rules); the
 * scalar ops take `scalar` (and is_int) like elemwise_scalar.c; the broadcast ops use
 * broadcast.c's NumPy shape rule. Comparisons and logical ops give 0/1 in the inputs'
 * dtype and no gradient (MXNet's MakeZeroGradNodes). The formulas are the kernels'
 * (kernels/cpu/math_fns.h).
 * MXNet 1.9: src/operator/tensor/elemwise_unary_op_{basic,logexp,pow,trig}.cc,
 * elemwise_binary_op_{logic,extended,basic}.cc, elemwise_binary_scalar_op_{logic,
 * extended,basic}.cc, elemwise_binary_broadcast_op_{logic,extended,basic}.cc,
 * broadcast_reduce_{sum,prod}_value.cc, nn/moments.cc, nn/softmax.cc (softmin),
 * tensor/elemwise_unary_op_basic.cc (hard_sigmoid).
 */
#include "layout_plan.h"
#include "math_more.h"
#include "op_impl.h"

static const int inplace_00[][2] = {{0, 0}};
static const int inplace_bin[][2] = {{0, 0}, {1, 0}};
static const char *const in_lhs_rhs[] = {"lhs", "rhs", NULL};

enum {
  G = LMX_NEEDS_OUT_GRADS,
  BY_IN = LMX_NEEDS_INPUTS | LMX_NEEDS_OUT_GRADS,
  BY_OUT = LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS,
  BY_BOTH = LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS,
  NONE = 0
};

/* ---- unary ------------------------------------------------------------------------- */

#define MATH_UNARY(id, needs, docstr)                                  \
  const lmx_op lmx_op_##id = {                                         \
      .name = #id,                                                     \
      .doc = docstr,                                                   \
      .backward_needs = (needs),                                       \
      .inplace = inplace_00,                                           \
      .num_inplace = 1,                                                \
  }

MATH_UNARY(log1p, BY_IN, "Returns element-wise log(1 + x), accurate for small x.");
MATH_UNARY(expm1, BY_IN, "Returns element-wise exp(x) - 1, accurate for small x.");
MATH_UNARY(log2, BY_IN, "Returns element-wise base-2 logarithm of the input.");
MATH_UNARY(log10, BY_IN, "Returns element-wise base-10 logarithm of the input.");
MATH_UNARY(cbrt, BY_OUT, "Returns element-wise cube-root value of the input.");
MATH_UNARY(rcbrt, BY_IN, "Returns element-wise inverse cube-root value of the input.");
MATH_UNARY(degrees, G, "Converts each element of the input array from radians to degrees.");
MATH_UNARY(radians, G, "Converts each element of the input array from degrees to radians.");
MATH_UNARY(tan, BY_OUT, "Computes the element-wise tangent of the input array.");
MATH_UNARY(arcsin, BY_IN, "Returns element-wise inverse sine of the input array.");
MATH_UNARY(arccos, BY_IN, "Returns element-wise inverse cosine of the input array.");
MATH_UNARY(arctan, BY_IN, "Returns element-wise inverse tangent of the input array.");
MATH_UNARY(sinh, BY_IN, "Returns the hyperbolic sine of the input array, element-wise.");
MATH_UNARY(cosh, BY_IN, "Returns the hyperbolic cosine of the input array, element-wise.");
MATH_UNARY(arcsinh, BY_IN, "Returns the element-wise inverse hyperbolic sine of the input.");
MATH_UNARY(arccosh, BY_IN, "Returns the element-wise inverse hyperbolic cosine of the input.");
MATH_UNARY(arctanh, BY_IN, "Returns the element-wise inverse hyperbolic tangent of the input.");
MATH_UNARY(erf, BY_IN, "Returns element-wise gauss error function of the input.");
MATH_UNARY(erfinv, BY_OUT, "Returns element-wise inverse gauss error function of the input.");
MATH_UNARY(gamma, BY_BOTH, "Returns the gamma function (extension of the factorial) of the "
                           "input, element-wise.");
MATH_UNARY(gammaln, BY_IN, "Returns element-wise log of the absolute value of the gamma "
                           "function of the input.");
MATH_UNARY(fix, NONE, "Returns element-wise rounded value to the nearest integer towards "
                      "zero: fix([-2.1, -1.9, 1.9, 2.1]) = [-2, -1, 1, 2].");
MATH_UNARY(rint, NONE, "Returns element-wise rounded value to the nearest integer; n.5 "
                       "rounds to n: rint([-1.5, 1.5, 2.5]) = [-2, 1, 2].");
MATH_UNARY(trunc, NONE, "Returns element-wise truncated value of the input (towards zero).");
MATH_UNARY(softsign, BY_IN, "Computes softsign of x element-wise: x / (1 + abs(x)).");
MATH_UNARY(logical_not, NONE, "Returns the result of logical NOT (!) of the input, "
                              "element-wise (1 where x == 0, else 0).");

/* ---- equal-shape binary -------------------------------------------------------------- */

#define MATH_BINARY(id, needs, docstr)                                     \
  const lmx_op lmx_op_##id = {                                             \
      .name = #id,                                                         \
      .doc = docstr,                                                       \
      .inputs = in_lhs_rhs,                                                \
      .backward_needs = (needs),                                           \
      .inplace = inplace_bin,                                              \
      .num_inplace = 2,                                                    \
  }

MATH_BINARY(_equal, NONE, "lhs == rhs (0/1), element-wise on equal shapes.");
MATH_BINARY(_not_equal, NONE, "lhs != rhs (0/1), element-wise on equal shapes.");
MATH_BINARY(_greater, NONE, "lhs > rhs (0/1), element-wise on equal shapes.");
MATH_BINARY(_greater_equal, NONE, "lhs >= rhs (0/1), element-wise on equal shapes.");
MATH_BINARY(_lesser, NONE, "lhs < rhs (0/1), element-wise on equal shapes.");
MATH_BINARY(_lesser_equal, NONE, "lhs <= rhs (0/1), element-wise on equal shapes.");
MATH_BINARY(_logical_and, NONE, "lhs && rhs (0/1), element-wise on equal shapes.");
MATH_BINARY(_logical_or, NONE, "lhs || rhs (0/1), element-wise on equal shapes.");
MATH_BINARY(_logical_xor, NONE, "lhs xor rhs (0/1), element-wise on equal shapes.");
MATH_BINARY(_hypot, BY_IN, "Given the \"legs\" of a right triangle, return its hypotenuse: "
                           "sqrt(lhs^2 + rhs^2), element-wise on equal shapes.");
MATH_BINARY(_mod, BY_IN, "lhs mod rhs, element-wise on equal shapes (the result takes the "
                         "divisor's sign; 0 where rhs is 0).");

/* ---- with a scalar ------------------------------------------------------------------- */

static const lmx_param_field scalar_fields[] = {
    LMX_PF(lmx_scalar_param, scalar, LMX_PT_FLOAT, "1.0", NULL, 0, 0, "Scalar input value."),
    LMX_PF(lmx_scalar_param, is_int, LMX_PT_BOOL, "True", NULL, 0, 0,
           "Indicate whether scalar input is int type."),
};

#define MATH_SCALAR(id, needs, docstr)                                 \
  const lmx_op lmx_op_##id = {                                         \
      .name = #id,                                                     \
      .doc = docstr,                                                   \
      LMX_PARAMS(scalar_fields, lmx_scalar_param),                     \
      .backward_needs = (needs),                                       \
      .inplace = inplace_00,                                           \
      .num_inplace = 1,                                                \
  }

MATH_SCALAR(_logical_and_scalar, NONE, "data && scalar (0/1)");
MATH_SCALAR(_logical_or_scalar, NONE, "data || scalar (0/1)");
MATH_SCALAR(_logical_xor_scalar, NONE, "data xor scalar (0/1)");
MATH_SCALAR(_hypot_scalar, BY_IN, "sqrt(data^2 + scalar^2)");
MATH_SCALAR(_mod_scalar, G, "data mod scalar (the divisor's sign; 0 when scalar is 0)");
MATH_SCALAR(_rmod_scalar, BY_IN, "scalar mod data (the divisor's sign; 0 where data is 0)");
MATH_SCALAR(smooth_l1, BY_IN,
            "Calculate Smooth L1 Loss(lhs, scalar): f(x) = (sigma x)^2 / 2 where |x| < "
            "1/sigma^2, else |x| - 0.5/sigma^2, with sigma = scalar. Example: "
            "smooth_l1([1, 2, 3, 4], scalar=1) = [0.5, 1.5, 2.5, 3.5].");

/* ---- broadcasting -------------------------------------------------------------------- */

extern const lmx_op lmx_op_broadcast_add;

/* broadcast.c's rule (the same function, through its descriptor) */
static int bcast_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out, int nout,
                       lmx_shape *aux, int naux) {
  return lmx_op_broadcast_add.infer_shape(c, in, nin, out, nout, aux, naux);
}

#define MATH_BCAST(id, needs, docstr)                                             \
  const lmx_op lmx_op_##id = {                                                    \
      .name = #id,                                                                \
      .doc = docstr,                                                              \
      .inputs = in_lhs_rhs,                                                       \
      .infer_shape = bcast_shape,                                                 \
      .backward_needs = (needs),                                                  \
  }

MATH_BCAST(broadcast_greater_equal, NONE, "Returns lhs >= rhs (0/1), with broadcasting.");
MATH_BCAST(broadcast_lesser_equal, NONE, "Returns lhs <= rhs (0/1), with broadcasting.");
MATH_BCAST(broadcast_logical_and, NONE, "Returns lhs && rhs (0/1), with broadcasting.");
MATH_BCAST(broadcast_logical_or, NONE, "Returns lhs || rhs (0/1), with broadcasting.");
MATH_BCAST(broadcast_logical_xor, NONE, "Returns lhs xor rhs (0/1), with broadcasting.");
MATH_BCAST(broadcast_hypot, BY_IN, "Returns the hypotenuse of a right angled triangle, "
                                   "given its \"legs\", with broadcasting.");
MATH_BCAST(broadcast_mod, BY_IN, "Returns element-wise modulo (the divisor's sign) with "
                                 "broadcasting.");

/* ---- reductions: nansum, nanprod (sum's parameters and shapes), moments -------------- */

extern const lmx_op lmx_op_sum;

static const lmx_param_field red_fields[] = {
    LMX_PF(lmx_red_param, axis, LMX_PT_SHAPE, "None", NULL, 0, 0,
           "The axis or axes along which to reduce (None: all)."),
    LMX_PF(lmx_red_param, keepdims, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Keep reduced axes as dimensions of size 1."),
    LMX_PF(lmx_red_param, exclude, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Whether to reduce on all axes except those in axis."),
};

/* reduce.c's rule (through sum's descriptor) */
static int red_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out, int nout,
                     lmx_shape *aux, int naux) {
  return lmx_op_sum.infer_shape(c, in, nin, out, nout, aux, naux);
}

const lmx_op lmx_op_nansum = {
    .name = "nansum",
    .doc = "Computes the sum of array elements over given axes treating Not a Numbers "
           "(NaN) as zero.",
    LMX_PARAMS(red_fields, lmx_red_param),
    .infer_shape = red_shape,
    .backward_needs = BY_IN,
};

const lmx_op lmx_op_nanprod = {
    .name = "nanprod",
    .doc = "Computes the product of array elements over given axes treating Not a Numbers "
           "(NaN) as one.",
    LMX_PARAMS(red_fields, lmx_red_param),
    .infer_shape = red_shape,
    .backward_needs = BY_BOTH,
};

static const lmx_param_field moments_fields[] = {
    LMX_PF(lmx_moments_param, axes, LMX_PT_SHAPE, "None", NULL, 0, 0,
           "Array of ints. Axes along which to compute mean and variance."),
    LMX_PF(lmx_moments_param, keepdims, LMX_PT_BOOL, "False", NULL, 0, 0,
           "produce moments with the same dimensionality as the input."),
};

static const char *const moments_outputs[] = {"mean", "var", NULL};

/* moments' context as sum's: the same ctx with an lmx_red_param of axes / keepdims */
static lmx_op_ctx as_sum(const lmx_op_ctx *c, lmx_red_param *rp) {
  const lmx_moments_param *p = c->param;
  rp->axis = p->axes;
  rp->keepdims = p->keepdims;
  rp->exclude = 0;
  lmx_op_ctx s = *c;
  s.param = rp;
  return s;
}

/* axes checked under their own name (sum's rule would say 'axis') */
static int check_axes(const lmx_op_ctx *c, int ndim) {
  const lmx_moments_param *p = c->param;
  for (int k = 0; k < p->axes.ndim; k++) {
    int a;
    LMX_TRY(lmx_op_axis(c, "axes", p->axes.dim[k], ndim, &a));
  }
  return LMX_OK;
}

int lmx_math_moments_plan(const lmx_op_ctx *c, const lmx_shape *x, int64_t *ystr,
                          int64_t *ysize) {
  LMX_TRY(check_axes(c, x->ndim));
  lmx_red_param rp;
  lmx_op_ctx s = as_sum(c, &rp);
  return lmx_plan_reduce(&s, x, 0, ystr, ysize);
}

static int moments_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                         int nout, lmx_shape *aux, int naux) {
  if (in[0].ndim > 0) LMX_TRY(check_axes(c, in[0].ndim));
  lmx_red_param rp;
  lmx_op_ctx s = as_sum(c, &rp);
  LMX_TRY(lmx_op_sum.infer_shape(&s, in, nin, out, 1, aux, naux));
  (void)nout;
  if (out[0].ndim > 0) LMX_TRY(lmx_out_assign(c, out, 1, &out[0]));
  if (out[1].ndim > 0) LMX_TRY(lmx_out_assign(c, out, 0, &out[1]));
  return LMX_OK;
}

const lmx_op lmx_op_moments = {
    .name = "moments",
    .doc = "Calculate the mean and variance of `data` over `axes`: mean = mean(data), "
           "var = mean((data - mean)^2). Example: moments([[1, 2], [3, 4]], axes=(0,)) "
           "gives mean [2, 3] and var [1, 1].",
    LMX_PARAMS(moments_fields, lmx_moments_param),
    .outputs = moments_outputs,
    .infer_shape = moments_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS,
};

/* ---- activations: hard_sigmoid, softmin ------------------------------------------------ */

static const lmx_param_field hsig_fields[] = {
    LMX_PF(lmx_hsig_param, alpha, LMX_PT_FLOAT, "0.2", NULL, 0, 0, "Slope of hard sigmoid"),
    LMX_PF(lmx_hsig_param, beta, LMX_PT_FLOAT, "0.5", NULL, 0, 0, "Bias of hard sigmoid."),
};

const lmx_op lmx_op_hard_sigmoid = {
    .name = "hard_sigmoid",
    .doc = "Computes hard sigmoid of x element-wise: y = max(0, min(1, alpha * x + beta)).",
    LMX_PARAMS(hsig_fields, lmx_hsig_param),
    .backward_needs = BY_OUT,
    .inplace = inplace_00,
    .num_inplace = 1,
};

/* softmin = softmax of -data: softmax's parameters, inputs, shapes and types (nn_act.c) */
extern const lmx_op lmx_op_softmax;

static const lmx_param_field softmin_fields[] = {
    LMX_PF(lmx_softmax_param, axis, LMX_PT_INT, "-1", NULL, 0, 0,
           "The axis along which to compute softmax."),
    LMX_PF(lmx_softmax_param, temperature, LMX_PT_OPT_FLOAT, "None", NULL, 0, 0,
           "Temperature parameter in softmax."),
    LMX_PF(lmx_softmax_param, dtype, LMX_PT_DTYPE, "None", NULL, 0, 0,
           "DType of the output in case this can't be inferred."),
    LMX_PF(lmx_softmax_param, use_length, LMX_PT_OPT_BOOL, "False", NULL, 0, 0,
           "Whether to use the length input as a mask over the data input."),
};

static int softmin_num_inputs(const void *p) { return lmx_op_softmax.num_inputs(p); }
static void softmin_input_name(const void *p, int i, char *buf, size_t cap) {
  lmx_op_softmax.input_name(p, i, buf, cap);
}
static int softmin_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                         int nout, lmx_shape *aux, int naux) {
  return lmx_op_softmax.infer_shape(c, in, nin, out, nout, aux, naux);
}
static int softmin_type(const lmx_op_ctx *c, int *in, int nin, int *out, int nout, int *aux,
                        int naux) {
  return lmx_op_softmax.infer_type(c, in, nin, out, nout, aux, naux);
}
static unsigned softmin_needs(const void *p) { return lmx_op_softmax.backward_needs_of(p); }

const lmx_op lmx_op_softmin = {
    .name = "softmin",
    .doc = "Applies the softmin function along an axis: softmax(-data / temperature). "
           "Example: softmin([[1, 2, 3], [3, 2, 1]], axis=0) = [[0.88079703, 0.5, "
           "0.11920292], [0.11920292, 0.5, 0.88079703]].",
    LMX_PARAMS(softmin_fields, lmx_softmax_param),
    .num_inputs = softmin_num_inputs,
    .input_name = softmin_input_name,
    .infer_shape = softmin_shape,
    .infer_type = softmin_type,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS,
    .backward_needs_of = softmin_needs,
};
