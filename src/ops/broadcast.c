/* broadcast.c — broadcast_{add,sub,mul,div,maximum,minimum,power,equal,not_equal,
 * greater,lesser} on inputs lhs, rhs.
 *
 * NumPy broadcasting: shapes are right-aligned, each dim pair must be equal or contain a
 * 1, the output takes the larger. Unknown dims (0) yield an unknown output dim unless
 * the other side fixes it (a known dim > 1 wins over an unknown one). Like MXNet, no
 * backward inference: an input's shape is never deduced from the output.
 * Comparisons return 0/1 in the inputs' dtype.
 * MXNet 1.9: src/operator/tensor/elemwise_binary_broadcast_op_*.cc.
 */
#include "op_impl.h"

static const char *const in_lhs_rhs[] = {"lhs", "rhs", NULL};

static int64_t bdim(int64_t l, int64_t r, int *bad) {
  if (l == r) return l;
  if (l == 1) return r;
  if (r == 1) return l;
  if (l == 0) return r; /* r > 1 is forced */
  if (r == 0) return l;
  *bad = 1;
  return 0;
}

static int bcast_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                             int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  const lmx_shape *a = &in[0], *b = &in[1];
  if (a->ndim <= 0 || b->ndim <= 0) return LMX_OK;
  int nd = a->ndim > b->ndim ? a->ndim : b->ndim, bad = 0;
  lmx_shape o = {nd, {0}};
  for (int i = 0; i < nd; i++) {
    int ia = i - (nd - a->ndim), ib = i - (nd - b->ndim);
    o.dim[i] = bdim(ia >= 0 ? a->dim[ia] : 1, ib >= 0 ? b->dim[ib] : 1, &bad);
  }
  if (bad) {
    char sa[LMX_SHAPE_STRCAP], sb[LMX_SHAPE_STRCAP];
    return lmx_op_fail(c, LMX_ERR_SHAPE, "inputs 'lhs' %s and 'rhs' %s cannot be broadcast "
                       "together", lmx_shape_str(a, sa), lmx_shape_str(b, sb));
  }
  return lmx_out_assign(c, out, 0, &o);
}

#define BCAST_OP(id, docstr)                                                      \
  const lmx_op lmx_op_##id = {                                                    \
      .name = #id,                                                                \
      .doc = docstr,                                                              \
      .inputs = in_lhs_rhs,                                                       \
      .infer_shape = bcast_infer_shape,                                           \
      .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS, \
  }

BCAST_OP(broadcast_add, "Returns element-wise sum of the input arrays with broadcasting.");
BCAST_OP(broadcast_sub, "Returns element-wise difference with broadcasting.");
BCAST_OP(broadcast_mul, "Returns element-wise product with broadcasting.");
BCAST_OP(broadcast_div, "Returns element-wise division with broadcasting.");
BCAST_OP(broadcast_maximum, "Returns element-wise maximum with broadcasting.");
BCAST_OP(broadcast_minimum, "Returns element-wise minimum with broadcasting.");
BCAST_OP(broadcast_power, "Returns result of first array elements raised to powers from "
                          "second array, element-wise with broadcasting.");
BCAST_OP(broadcast_equal, "Returns lhs == rhs (0/1), with broadcasting.");
BCAST_OP(broadcast_not_equal, "Returns lhs != rhs (0/1), with broadcasting.");
BCAST_OP(broadcast_greater, "Returns lhs > rhs (0/1), with broadcasting.");
BCAST_OP(broadcast_lesser, "Returns lhs < rhs (0/1), with broadcasting.");
