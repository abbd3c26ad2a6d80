/* reduce.c — CPU glue of the broadcast_* binary ops and the reductions (sum, mean, max,
 * min, prod, norm, argmax, argmin).
 *
 * Broadcasting: operands are right-aligned against the output; an operand's stride is
 * 0 along every axis where its dim is 1, so the kernels read it repeatedly. The gradient
 * of an operand sums d(op)/d(operand) · head over the axes it was broadcast along (the
 * same strides, on the destination). Comparisons have a zero gradient.
 * Reductions: the output is addressed from the input index with strides that are 0 on
 * reduced axes (keepdims does not change the element order). mean scales by
 * out_size / in_size; max/min gradients go to every element equal to the result (ties
 * share, like MXNet); prod's gradient is head · out / x; norm's is head · x / out
 * (ord 2) or head · sign(x) (ord 1). argmax/argmin give indices in the input's dtype and
 * no gradient. req ADD on a forward output is supported for sum and mean.
 * MXNet 1.9: src/operator/tensor/broadcast_reduce_op.h, elemwise_binary_broadcast_op.h.
 */
#include "../../../kernels/cpu/cpu_kernels.h"
#include "../../tensor/dtype.h"
#include "../op_impl.h"
#include "cpu_ops.h"

/* ---- broadcast_* -------------------------------------------------------------------- */

static void bstrides(const lmx_shape *s, int nd, int64_t *st) {
  int64_t acc = 1;
  for (int k = nd - 1; k >= 0; k--) {
    int i = k - (nd - s->ndim);
    int64_t d = i >= 0 ? s->dim[i] : 1;
    st[k] = d == 1 ? 0 : acc;
    acc *= d;
  }
}

static int bcast_check(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *o) {
  LMX_TRY(lmx_cpu_check_float(c, &in[0], "input 'lhs'"));
  if (in[1].dtype != in[0].dtype) return lmx_cpu_fail_dtype(c, &in[1], "input 'rhs'");
  int nd = o->shape.ndim;
  for (int s = 0; s < 2; s++) {
    const lmx_shape *x = &in[s].shape;
    if (x->ndim > nd) goto bad;
    for (int k = 0; k < x->ndim; k++) {
      int64_t od = o->shape.dim[nd - x->ndim + k];
      if (x->dim[k] != 1 && x->dim[k] != od) goto bad;
    }
    LMX_TRY(lmx_glue_check_size(c, &in[s], lmx_glue_size(&in[s]), s ? "input 'rhs'" : "input 'lhs'"));
    continue;
  bad: {
    char a[LMX_SHAPE_STRCAP], b[LMX_SHAPE_STRCAP];
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input '%s' %s does not broadcast to %s",
                       s ? "rhs" : "lhs", lmx_shape_str(x, a), lmx_shape_str(&o->shape, b));
  }
  }
  return lmx_glue_check_size(c, o, lmx_glue_size(o), "output");
}

static int bcast_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                     const int *req, int op) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(bcast_check(c, in, &out[0]));
  if (out[0].dtype != in[0].dtype) return lmx_cpu_fail_dtype(c, &out[0], "output");
  int nd = out[0].shape.ndim;
  /* equal shapes: the elementwise kernel (vectorised, parallel above the threshold) */
  static const int to_bin[] = {LMX_BIN_ADD, LMX_BIN_SUB, LMX_BIN_MUL, LMX_BIN_DIV,
                               LMX_BIN_MAX, LMX_BIN_MIN, LMX_BIN_POW};
  if (op <= LMX_BC_POW && lmx_shape_equal(&in[0].shape, &out[0].shape) &&
      lmx_shape_equal(&in[1].shape, &out[0].shape))
    return lmx_cpu_ew_binary(to_bin[op], in[0].dtype, lmx_glue_size(&out[0]), out[0].data,
                             in[0].data, in[1].data, req[0] == LMX_REQ_ADD) < 0
               ? lmx_cpu_fail_dtype(c, &in[0], "input 'lhs'") : LMX_OK;
  int64_t as[LMX_MAX_NDIM], bs[LMX_MAX_NDIM];
  bstrides(&in[0].shape, nd, as);
  bstrides(&in[1].shape, nd, bs);
  lmx_cpu_bcast_binary(op, in[0].dtype, nd, out[0].shape.dim, out[0].data, in[0].data, as,
                       in[1].data, bs, req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

static int bcast_bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                     const lmx_tensor *ig, const int *req, int op) {
  if (op >= LMX_BC_EQ) {
    lmx_cpu_zero_grad(&ig[0], req[0]);
    lmx_cpu_zero_grad(&ig[1], req[1]);
    return LMX_OK;
  }
  LMX_TRY(bcast_check(c, in, &og[0]));
  int nd = og[0].shape.ndim;
  int64_t as[LMX_MAX_NDIM], bs[LMX_MAX_NDIM];
  bstrides(&in[0].shape, nd, as);
  bstrides(&in[1].shape, nd, bs);
  for (int s = 0; s < 2; s++) {
    if (req[s] == LMX_REQ_NULL) continue;
    LMX_TRY(lmx_glue_check_like(c, &ig[s], &in[s].shape, in[s].dtype, "input gradient"));
    lmx_cpu_bcast_binary_grad(op, s, in[0].dtype, nd, og[0].shape.dim, ig[s].data, s ? bs : as,
                              lmx_glue_size(&ig[s]), og[0].data, in[0].data, as, in[1].data, bs,
                              req[s] == LMX_REQ_ADD);
  }
  return LMX_OK;
}

#define CPU_BCAST(id, OP)                                                                   \
  int lmx_cpu_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,    \
                       const int *req, const lmx_tensor *aux) {                             \
    (void)aux;                                                                              \
    return bcast_fwd(c, in, out, req, OP);                                                  \
  }                                                                                         \
  int lmx_cpu_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,     \
                       const lmx_tensor *out, const lmx_tensor *ig, const int *req,         \
                       const lmx_tensor *aux) {                                             \
    (void)aux, (void)out;                                                                   \
    return bcast_bwd(c, og, in, ig, req, OP);                                               \
  }

CPU_BCAST(broadcast_add, LMX_BC_ADD)
CPU_BCAST(broadcast_sub, LMX_BC_SUB)
CPU_BCAST(broadcast_mul, LMX_BC_MUL)
CPU_BCAST(broadcast_div, LMX_BC_DIV)
CPU_BCAST(broadcast_maximum, LMX_BC_MAX)
CPU_BCAST(broadcast_minimum, LMX_BC_MIN)
CPU_BCAST(broadcast_power, LMX_BC_POW)
CPU_BCAST(broadcast_equal, LMX_BC_EQ)
CPU_BCAST(broadcast_not_equal, LMX_BC_NE)
CPU_BCAST(broadcast_greater, LMX_BC_GT)
CPU_BCAST(broadcast_lesser, LMX_BC_LT)

/* ---- reductions ----------------------------------------------------------------------- */

/* Output strides over the input's index space (0 on reduced axes). */
static int red_plan(const lmx_op_ctx *c, const lmx_shape *x, int kind, int64_t *ystr,
                    int64_t *ysize) {
  int nd = x->ndim, mask[LMX_MAX_NDIM];
  lmx_shape ax;
  int exclude = 0;
  if (kind == LMX_RED_NORM1 || kind == LMX_RED_NORM2) { /* norm: its own struct, no exclude */
    ax = ((const lmx_norm_param *)c->param)->axis;
  } else {
    const lmx_red_param *p = c->param;
    ax = p->axis, exclude = p->exclude;
  }
  for (int i = 0; i < nd; i++) mask[i] = ax.ndim < 0 ? 1 : exclude;
  for (int k = 0; k < ax.ndim; k++) {
    int a;
    LMX_TRY(lmx_op_axis(c, "axis", ax.dim[k], nd, &a));
    mask[a] = !exclude;
  }
  int64_t acc = 1;
  for (int i = nd - 1; i >= 0; i--) {
    ystr[i] = mask[i] ? 0 : acc;
    if (!mask[i]) acc *= x->dim[i];
  }
  *ysize = acc;
  return LMX_OK;
}

static int red_kind(const lmx_op_ctx *c, int kind) {
  if (kind == LMX_RED_NORM2 && ((const lmx_norm_param *)c->param)->ord == 1) return LMX_RED_NORM1;
  return kind;
}

static int red_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                   const int *req, int kind) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  kind = red_kind(c, kind);
  int64_t ystr[LMX_MAX_NDIM], ysize, xsize = lmx_glue_size(&in[0]);
  LMX_TRY(lmx_cpu_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &in[0], xsize, "input 'data'"));
  LMX_TRY(red_plan(c, &in[0].shape, kind, ystr, &ysize));
  LMX_TRY(lmx_glue_check_size(c, &out[0], ysize, "output"));
  if (out[0].dtype != in[0].dtype) return lmx_cpu_fail_dtype(c, &out[0], "output");
  int acc = req[0] == LMX_REQ_ADD;
  if (acc && kind != LMX_RED_SUM && kind != LMX_RED_MEAN) return lmx_cpu_fail_req_add(c, "output");
  double scale = kind == LMX_RED_MEAN && xsize ? (double)ysize / (double)xsize : 1.0;
  lmx_cpu_reduce(kind, in[0].dtype, in[0].shape.ndim, in[0].shape.dim, in[0].data, out[0].data,
                 ystr, ysize, scale, acc);
  return LMX_OK;
}

static int red_bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                   const lmx_tensor *out, const lmx_tensor *ig, const int *req, int kind) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  kind = red_kind(c, kind);
  int64_t ystr[LMX_MAX_NDIM], ysize, xsize = lmx_glue_size(&ig[0]);
  LMX_TRY(lmx_cpu_check_float(c, &ig[0], "gradient of 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &ig[0], xsize, "gradient of 'data'"));
  LMX_TRY(red_plan(c, &ig[0].shape, kind, ystr, &ysize));
  LMX_TRY(lmx_glue_check_size(c, &og[0], ysize, "output gradient"));
  int linear = kind == LMX_RED_SUM || kind == LMX_RED_MEAN;
  if (!linear) {
    LMX_TRY(lmx_glue_check_like(c, &in[0], &ig[0].shape, ig[0].dtype, "input 'data'"));
    LMX_TRY(lmx_glue_check_size(c, &out[0], ysize, "output"));
  }
  double scale = kind == LMX_RED_MEAN && xsize ? (double)ysize / (double)xsize : 1.0;
  lmx_cpu_reduce_bwd(kind, ig[0].dtype, ig[0].shape.ndim, ig[0].shape.dim, ig[0].data,
                     linear ? NULL : in[0].data, og[0].data, linear ? NULL : out[0].data, ystr,
                     scale, req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

#define CPU_REDUCE(id, KIND)                                                                \
  int lmx_cpu_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,    \
                       const int *req, const lmx_tensor *aux) {                             \
    (void)aux;                                                                              \
    return red_fwd(c, in, out, req, KIND);                                                  \
  }                                                                                         \
  int lmx_cpu_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,     \
                       const lmx_tensor *out, const lmx_tensor *ig, const int *req,         \
                       const lmx_tensor *aux) {                                             \
    (void)aux;                                                                              \
    return red_bwd(c, og, in, out, ig, req, KIND);                                          \
  }

CPU_REDUCE(sum, LMX_RED_SUM)
CPU_REDUCE(mean, LMX_RED_MEAN)
CPU_REDUCE(max, LMX_RED_MAX)
CPU_REDUCE(min, LMX_RED_MIN)
CPU_REDUCE(prod, LMX_RED_PROD)
CPU_REDUCE(norm, LMX_RED_NORM2)

/* ---- argmax / argmin -------------------------------------------------------------------- */

static int arg_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                   const int *req, int want_min) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  if (req[0] == LMX_REQ_ADD) return lmx_cpu_fail_req_add(c, "output");
  LMX_TRY(lmx_cpu_check_float(c, &in[0], "input 'data'"));
  const lmx_shape *s = &in[0].shape;
  int64_t size = lmx_glue_size(&in[0]), outer = 1, len = size, inner = 1;
  int64_t axv = ((const lmx_arg_param *)c->param)->axis; /* LMX_PARAM_NONE_INT: None */
  if (axv != LMX_PARAM_NONE_INT) {
    int ax;
    LMX_TRY(lmx_op_axis(c, "axis", axv, s->ndim, &ax));
    outer = lmx_glue_outer(s, ax), len = s->dim[ax], inner = lmx_glue_inner(s, ax);
  }
  if (len == 0) return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': cannot search an empty axis");
  LMX_TRY(lmx_glue_check_size(c, &in[0], size, "input 'data'"));
  LMX_TRY(lmx_glue_check_size(c, &out[0], outer * inner, "output"));
  if (out[0].dtype != in[0].dtype) return lmx_cpu_fail_dtype(c, &out[0], "output");
  lmx_cpu_argmax(want_min, in[0].dtype, outer, len, inner, in[0].data, out[0].data);
  return LMX_OK;
}

int lmx_cpu_fwd_argmax(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                       const int *req, const lmx_tensor *aux) {
  (void)aux;
  return arg_fwd(c, in, out, req, 0);
}

int lmx_cpu_fwd_argmin(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                       const int *req, const lmx_tensor *aux) {
  (void)aux;
  return arg_fwd(c, in, out, req, 1);
}
