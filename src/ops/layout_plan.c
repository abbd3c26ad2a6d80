/* layout_plan.c — index arithmetic shared by the CPU and CUDA glue (see layout_plan.h).
 * Moved here from src/ops/cpu/reduce.c and matrix.c so both backends compute the same
 * dims from the same parameters. */
#include "layout_plan.h"

#include "../core/status.h"
#include "../tensor/dtype.h"
#include "glue.h"
#include "op_impl.h"

void lmx_plan_contig_strides(int nd, const int64_t *shape, int64_t *st) {
  int64_t s = 1;
  for (int d = nd - 1; d >= 0; d--) {
    st[d] = s;
    s *= shape[d];
  }
}

void lmx_plan_bcast_strides(const lmx_shape *s, int nd, int64_t *st) {
  int64_t acc = 1;
  for (int k = nd - 1; k >= 0; k--) {
    int i = k - (nd - s->ndim);
    int64_t d = i >= 0 ? s->dim[i] : 1;
    st[k] = d == 1 ? 0 : acc;
    acc *= d;
  }
}

int lmx_plan_bcast_check(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *o) {
  int nd = o->shape.ndim;
  for (int s = 0; s < 2; s++) {
    const lmx_shape *x = &in[s].shape;
    int ok = x->ndim <= nd;
    for (int k = 0; ok && k < x->ndim; k++) {
      int64_t od = o->shape.dim[nd - x->ndim + k];
      ok = x->dim[k] == 1 || x->dim[k] == od;
    }
    if (!ok) {
      char a[LMX_SHAPE_STRCAP], b[LMX_SHAPE_STRCAP];
      return lmx_op_fail(c, LMX_ERR_SHAPE, "input '%s' %s does not broadcast to %s",
                         s ? "rhs" : "lhs", lmx_shape_str(x, a), lmx_shape_str(&o->shape, b));
    }
    LMX_TRY(lmx_glue_check_size(c, &in[s], lmx_glue_size(&in[s]),
                                s ? "input 'rhs'" : "input 'lhs'"));
  }
  return lmx_glue_check_size(c, o, lmx_glue_size(o), "output");
}

int lmx_plan_reduce(const lmx_op_ctx *c, const lmx_shape *x, int is_norm, int64_t *ystr,
                    int64_t *ysize) {
  int nd = x->ndim, mask[LMX_MAX_NDIM];
  lmx_shape ax;
  int exclude = 0;
  if (is_norm) { /* norm: its own struct, no exclude */
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

int lmx_plan_arg(const lmx_op_ctx *c, const lmx_shape *s, int64_t *outer, int64_t *len,
                 int64_t *inner) {
  *outer = 1, *len = lmx_shape_size(s), *inner = 1;
  int64_t axv = ((const lmx_arg_param *)c->param)->axis;
  if (axv != LMX_PARAM_NONE_INT) {
    int ax;
    LMX_TRY(lmx_op_axis(c, "axis", axv, s->ndim, &ax));
    *outer = lmx_glue_outer(s, ax), *len = s->dim[ax], *inner = lmx_glue_inner(s, ax);
  }
  if (*len == 0) return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': cannot search an empty axis");
  return LMX_OK;
}

int lmx_plan_perm(const lmx_op_ctx *c, int swap, int nd, int *perm) {
  for (int k = 0; k < nd; k++) perm[k] = swap ? k : nd - 1 - k;
  if (swap) {
    const lmx_swap_param *p = c->param;
    int a, b;
    LMX_TRY(lmx_op_axis(c, "dim1", p->dim1, nd, &a));
    LMX_TRY(lmx_op_axis(c, "dim2", p->dim2, nd, &b));
    perm[a] = b, perm[b] = a;
    return LMX_OK;
  }
  const lmx_shape ax = ((const lmx_transpose_param *)c->param)->axes;
  if (ax.ndim <= 0) return LMX_OK;
  if (ax.ndim != nd)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'axes': expected %d axes, got %d", nd, ax.ndim);
  int seen[LMX_MAX_NDIM] = {0};
  for (int k = 0; k < nd; k++) {
    LMX_TRY(lmx_op_axis(c, "axes", ax.dim[k], nd, &perm[k]));
    if (seen[perm[k]]++) return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'axes': repeated axis");
  }
  return LMX_OK;
}

/* begin[k], step[k] per axis of x (shape s) from the op's parameters */
static int slice_begin(const lmx_op_ctx *c, int axis_mode, const lmx_shape *s, int64_t *b,
                       int64_t *st) {
  for (int k = 0; k < s->ndim; k++) b[k] = 0, st[k] = 1;
  if (axis_mode) {
    const lmx_slice_axis_param *p = c->param;
    int ax;
    LMX_TRY(lmx_op_axis(c, "axis", p->axis, s->ndim, &ax));
    int64_t v = p->begin;
    b[ax] = v < 0 ? v + s->dim[ax] : v;
    return LMX_OK;
  }
  const lmx_slice_param *p = c->param;
  const lmx_shape bg = p->begin, sp = p->step; /* ndim -1: None */
  if (bg.ndim > s->ndim) return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'begin': too many axes");
  for (int k = 0; k < bg.ndim; k++) {
    int64_t step = sp.ndim > k && sp.dim[k] != LMX_PARAM_NONE_INT ? sp.dim[k] : 1;
    int64_t v = bg.dim[k];
    if (v == LMX_PARAM_NONE_INT) v = step > 0 ? 0 : s->dim[k] - 1;
    else if (v < 0) v += s->dim[k];
    b[k] = v, st[k] = step;
  }
  return LMX_OK;
}

int lmx_plan_slice(const lmx_op_ctx *c, int axis_mode, const lmx_tensor *x, const lmx_tensor *y,
                   int64_t *off, int64_t *ps) {
  int nd = x->shape.ndim;
  int64_t b[LMX_MAX_NDIM], st[LMX_MAX_NDIM], xs[LMX_MAX_NDIM];
  LMX_TRY(slice_begin(c, axis_mode, &x->shape, b, st));
  if (y->shape.ndim != nd || y->dtype != x->dtype)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "%s: expected %d dims of %s", "output", nd,
                       lmx_dtype_str(x->dtype));
  lmx_plan_contig_strides(nd, x->shape.dim, xs);
  *off = 0;
  for (int k = 0; k < nd; k++) {
    int64_t last = b[k] + (y->shape.dim[k] - 1) * st[k];
    if (y->shape.dim[k] > 0 && (b[k] < 0 || b[k] >= x->shape.dim[k] || last < 0 ||
                                last >= x->shape.dim[k]))
      return lmx_op_fail(c, LMX_ERR_SHAPE, "slice on axis %d: out of range for a dim of size "
                         "%lld", k, (long long)x->shape.dim[k]);
    *off += b[k] * xs[k], ps[k] = st[k] * xs[k];
  }
  LMX_TRY(lmx_glue_check_size(c, x, lmx_glue_size(x), "data"));
  return lmx_glue_check_size(c, y, lmx_glue_size(y), "output");
}

int lmx_plan_reverse(const lmx_op_ctx *c, const lmx_tensor *x, const lmx_tensor *y,
                     int64_t *off, int64_t *ps) {
  const lmx_reverse_param *p = c->param;
  int nd = x->shape.ndim;
  if (y->shape.ndim != nd || y->dtype != x->dtype)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "%s: expected %d dims of %s", "output", nd,
                       lmx_dtype_str(x->dtype));
  for (int k = 0; k < nd; k++)
    if (y->shape.dim[k] != x->shape.dim[k])
      return lmx_op_fail(c, LMX_ERR_SHAPE, "output: dim %d is %lld, the input's is %lld", k,
                         (long long)y->shape.dim[k], (long long)x->shape.dim[k]);
  lmx_plan_contig_strides(nd, x->shape.dim, ps);
  *off = 0;
  int seen[LMX_MAX_NDIM] = {0};
  for (int i = 0; i < p->axis.ndim; i++) {
    int a;
    LMX_TRY(lmx_op_axis(c, "axis", p->axis.dim[i], nd, &a));
    if (seen[a]++) return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'axis': axis %d repeats", a);
    if (x->shape.dim[a] > 0) *off += (x->shape.dim[a] - 1) * ps[a];
    ps[a] = -ps[a];
  }
  LMX_TRY(lmx_glue_check_size(c, x, lmx_glue_size(x), "data"));
  return lmx_glue_check_size(c, y, lmx_glue_size(y), "output");
}

int lmx_plan_concat(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *whole,
                    int64_t *rows, int64_t *W) {
  const lmx_concat_param *p = c->param;
  int ax;
  LMX_TRY(lmx_op_axis(c, "dim", p->dim, whole->shape.ndim, &ax));
  int nin = (int)p->num_args;
  *rows = lmx_glue_outer(&whole->shape, ax);
  int64_t inner = lmx_glue_inner(&whole->shape, ax), sum = 0;
  *W = whole->shape.dim[ax] * inner;
  for (int i = 0; i < nin; i++) {
    char nm[32];
    snprintf(nm, sizeof nm, "input 'arg%d'", i);
    if (in[i].dtype != whole->dtype)
      return lmx_op_fail(c, LMX_ERR_DTYPE, "%s: expected %s, got %s", nm,
                         lmx_dtype_str(whole->dtype), lmx_dtype_str(in[i].dtype));
    if (in[i].shape.ndim != whole->shape.ndim)
      return lmx_op_fail(c, LMX_ERR_SHAPE, "%s: expected %d dims", nm, whole->shape.ndim);
    LMX_TRY(lmx_glue_check_size(c, &in[i], *rows * in[i].shape.dim[ax] * inner, nm));
    sum += in[i].shape.dim[ax];
  }
  if (sum != whole->shape.dim[ax])
    return lmx_op_fail(c, LMX_ERR_SHAPE, "output: dim %d is %lld, inputs sum to %lld", ax,
                       (long long)whole->shape.dim[ax], (long long)sum);
  return lmx_glue_check_size(c, whole, *rows * *W, "output");
}

int lmx_plan_split(const lmx_op_ctx *c, const lmx_tensor *whole, int64_t *rows, int64_t *W,
                   int64_t *w) {
  const lmx_split_param *p = c->param;
  int ax;
  LMX_TRY(lmx_op_axis(c, "axis", p->axis, whole->shape.ndim, &ax));
  int64_t k = p->num_outputs;
  if (k <= 0 || whole->shape.dim[ax] % k)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': dim %d of size %lld is not divisible "
                       "by num_outputs %lld", ax, (long long)whole->shape.dim[ax], (long long)k);
  *rows = lmx_glue_outer(&whole->shape, ax);
  *W = whole->shape.dim[ax] * lmx_glue_inner(&whole->shape, ax);
  *w = *W / k;
  return lmx_glue_check_size(c, whole, *rows * *W, "input 'data'");
}
