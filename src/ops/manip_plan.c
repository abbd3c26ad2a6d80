/* manip_plan.c — index arithmetic of the tensor-manipulation operators, shared by the
 * CPU and CUDA glue (see manip_plan.h). */
#include "manip_plan.h"

#include "../core/status.h"
#include "../tensor/dtype.h"
#include "glue.h"
#include "layout_plan.h"
#include "manip_params.h"
#include "op_impl.h"

extern const lmx_op lmx_op_tile, lmx_op_repeat, lmx_op_stack, lmx_op_reshape_like,
    lmx_op_slice_like, lmx_op_diag, lmx_op_size_array, lmx_op__split_v2, lmx_op__arange,
    lmx_op_batch_take;

#define SH(s) lmx_shape_str((s), (char[LMX_SHAPE_STRCAP]){0})

static const char *xname(int bwd) { return bwd ? "input gradient" : "input 'data'"; }
static const char *yname(int bwd) { return bwd ? "output gradient" : "output"; }

/* x and y have data for their sizes and one dtype. */
static int check_pair(const lmx_op_ctx *c, const lmx_tensor *x, const lmx_tensor *y, int bwd) {
  LMX_TRY(lmx_glue_check_size(c, x, lmx_glue_size(x), xname(bwd)));
  LMX_TRY(lmx_glue_check_size(c, y, lmx_glue_size(y), yname(bwd)));
  if (x->dtype != y->dtype)
    return lmx_op_fail(c, LMX_ERR_DTYPE, "%s: expected %s like %s, got %s", yname(bwd),
                       lmx_dtype_str(x->dtype), xname(bwd), lmx_dtype_str(y->dtype));
  return LMX_OK;
}

static int shape_mismatch(const lmx_op_ctx *c, const lmx_tensor *x, const lmx_tensor *y,
                          int bwd) {
  return lmx_op_fail(c, LMX_ERR_SHAPE, "%s %s does not fit %s %s", yname(bwd), SH(&y->shape),
                     xname(bwd), SH(&x->shape));
}

/* ---- replication ------------------------------------------------------------------------ */

typedef struct {
  int n;
  int64_t size[2 * LMX_MAX_NDIM + 2], str[2 * LMX_MAX_NDIM + 2];
} raw_view;

static void push(raw_view *r, int64_t size, int64_t str) {
  r->size[r->n] = size, r->str[r->n] = str, r->n++;
}

/* Drops size-1 axes, merges neighbours that walk x in one run (or both replicate). */
static int finish(const lmx_op_ctx *c, const raw_view *r, lmx_mplan_rep *v) {
  int64_t sz[2 * LMX_MAX_NDIM + 2], st[2 * LMX_MAX_NDIM + 2];
  int n = 0;
  for (int i = 0; i < r->n; i++) {
    if (r->size[i] == 1) continue;
    if (n > 0 && st[n - 1] == r->str[i] * r->size[i]) {
      sz[n - 1] *= r->size[i], st[n - 1] = r->str[i];
      continue;
    }
    sz[n] = r->size[i], st[n] = r->str[i], n++;
  }
  if (n == 0) sz[0] = 1, st[0] = 1, n = 1;
  if (n > LMX_MAX_NDIM)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "the replication needs %d index dims (at most %d)",
                       n, LMX_MAX_NDIM);
  v->nd = n;
  for (int i = 0; i < n; i++) v->shape[i] = sz[i], v->sstr[i] = st[i];
  lmx_plan_contig_strides(n, v->shape, v->dstr);
  return LMX_OK;
}

static int plan_tile(const lmx_op_ctx *c, const lmx_tensor *x, const lmx_tensor *y, int bwd,
                     raw_view *r) {
  const lmx_shape *reps = &((const lmx_tile_param *)c->param)->reps;
  int nd = x->shape.ndim > reps->ndim ? x->shape.ndim : reps->ndim;
  int64_t xst[LMX_MAX_NDIM];
  lmx_plan_contig_strides(x->shape.ndim, x->shape.dim, xst);
  lmx_shape want = {nd, {0}};
  for (int k = 0; k < nd; k++) {
    int i = k - (nd - x->shape.ndim), j = k - (nd - reps->ndim);
    int64_t d = i >= 0 ? x->shape.dim[i] : 1, rp = j >= 0 ? reps->dim[j] : 1;
    want.dim[k] = d * rp;
    push(r, rp, 0);
    push(r, d, i >= 0 ? xst[i] : 0);
  }
  return lmx_shape_equal(&want, &y->shape) ? LMX_OK : shape_mismatch(c, x, y, bwd);
}

static int plan_repeat(const lmx_op_ctx *c, const lmx_tensor *x, const lmx_tensor *y, int bwd,
                       raw_view *r) {
  const lmx_repeat_param *p = c->param;
  lmx_shape want = x->shape;
  if (p->axis == LMX_PARAM_NONE_INT) {
    want = LMX_SHP(lmx_glue_size(x) * p->repeats);
    push(r, lmx_glue_size(x), 1);
    push(r, p->repeats, 0);
  } else {
    int a, nd = x->shape.ndim;
    LMX_TRY(lmx_op_axis(c, "axis", p->axis, nd, &a));
    int64_t xst[LMX_MAX_NDIM];
    lmx_plan_contig_strides(nd, x->shape.dim, xst);
    for (int k = 0; k < nd; k++) {
      push(r, x->shape.dim[k], xst[k]);
      if (k == a) push(r, p->repeats, 0);
    }
    want.dim[a] *= p->repeats;
  }
  return lmx_shape_equal(&want, &y->shape) ? LMX_OK : shape_mismatch(c, x, y, bwd);
}

/* broadcast_to / broadcast_axis / broadcast_like: y's dims, x's where not 1. */
static int plan_bcast(const lmx_op_ctx *c, const lmx_tensor *x, const lmx_tensor *y, int bwd,
                      raw_view *r) {
  int nd = x->shape.ndim;
  if (y->shape.ndim != nd) return shape_mismatch(c, x, y, bwd);
  int64_t xst[LMX_MAX_NDIM];
  lmx_plan_contig_strides(nd, x->shape.dim, xst);
  for (int k = 0; k < nd; k++) {
    int64_t d = x->shape.dim[k];
    if (d != 1 && d != y->shape.dim[k]) return shape_mismatch(c, x, y, bwd);
    push(r, y->shape.dim[k], d == 1 ? 0 : xst[k]);
  }
  return LMX_OK;
}

int lmx_mplan_replicate(const lmx_op_ctx *c, const lmx_tensor *x, const lmx_tensor *y, int bwd,
                        lmx_mplan_rep *v) {
  LMX_TRY(check_pair(c, x, y, bwd));
  raw_view r = {0, {0}, {0}};
  if (c->op == &lmx_op_tile) LMX_TRY(plan_tile(c, x, y, bwd, &r));
  else if (c->op == &lmx_op_repeat) LMX_TRY(plan_repeat(c, x, y, bwd, &r));
  else LMX_TRY(plan_bcast(c, x, y, bwd, &r));
  return finish(c, &r, v);
}

/* ---- copies ----------------------------------------------------------------------------- */

static void copy_contig(lmx_mplan_copy *p, const lmx_shape *s) {
  p->nd = s->ndim;
  for (int k = 0; k < s->ndim; k++) p->shape[k] = s->dim[k];
  lmx_plan_contig_strides(s->ndim, s->dim, p->xstr);
  lmx_plan_contig_strides(s->ndim, s->dim, p->ystr);
}

static int plan_slice_like(const lmx_op_ctx *c, const lmx_tensor *x, const lmx_tensor *y,
                           int bwd, lmx_mplan_copy *p) {
  int nd = x->shape.ndim;
  if (y->shape.ndim != nd) return shape_mismatch(c, x, y, bwd);
  for (int k = 0; k < nd; k++)
    if (y->shape.dim[k] > x->shape.dim[k]) return shape_mismatch(c, x, y, bwd);
  copy_contig(p, &y->shape);
  lmx_plan_contig_strides(nd, x->shape.dim, p->xstr);
  p->zero_x = 1;
  return LMX_OK;
}

static int plan_diag(const lmx_op_ctx *c, const lmx_tensor *x, const lmx_tensor *y, int bwd,
                     lmx_mplan_copy *p) {
  const lmx_diag_param *q = c->param;
  const lmx_shape *d = &x->shape;
  int64_t k = q->k, ak = k < 0 ? -k : k;
  if (d->ndim == 1) {
    int64_t N = d->dim[0] + ak;
    lmx_shape want = LMX_SHP(N, N);
    if (!lmx_shape_equal(&want, &y->shape)) return shape_mismatch(c, x, y, bwd);
    p->nd = 1, p->shape[0] = d->dim[0], p->xstr[0] = 1, p->ystr[0] = N + 1;
    p->yoff = k >= 0 ? k : ak * N;
    p->zero_y = 1;
    return LMX_OK;
  }
  int a1, a2;
  if (d->ndim < 1) return shape_mismatch(c, x, y, bwd);
  LMX_TRY(lmx_op_axis(c, "axis1", q->axis1, d->ndim, &a1));
  LMX_TRY(lmx_op_axis(c, "axis2", q->axis2, d->ndim, &a2));
  if (a1 == a2)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameters 'axis1' and 'axis2': expected different "
                       "axes, got %d for both", a1);
  int64_t h = d->dim[a1] + (k < 0 ? k : 0), w = d->dim[a2] - (k > 0 ? k : 0);
  int64_t len = h < w ? h : w, xst[LMX_MAX_NDIM];
  lmx_plan_contig_strides(d->ndim, d->dim, xst);
  lmx_shape want = {0, {0}};
  p->nd = 0;
  for (int i = 0; i < d->ndim; i++)
    if (i != a1 && i != a2) {
      want.dim[want.ndim++] = d->dim[i];
      p->xstr[p->nd] = xst[i], p->shape[p->nd++] = d->dim[i];
    }
  want.dim[want.ndim++] = len;
  if (len <= 0 || !lmx_shape_equal(&want, &y->shape)) return shape_mismatch(c, x, y, bwd);
  p->shape[p->nd] = len, p->xstr[p->nd++] = xst[a1] + xst[a2];
  p->xoff = k > 0 ? k * xst[a2] : ak * xst[a1];
  lmx_plan_contig_strides(p->nd, p->shape, p->ystr);
  p->zero_x = 1;
  return LMX_OK;
}

static int plan_stack(const lmx_op_ctx *c, int i, const lmx_tensor *x, const lmx_tensor *y,
                      int bwd, lmx_mplan_copy *p) {
  const lmx_stack_param *q = c->param;
  int nd = x->shape.ndim, a;
  if (y->shape.ndim != nd + 1) return shape_mismatch(c, x, y, bwd);
  LMX_TRY(lmx_op_axis(c, "axis", q->axis, nd + 1, &a));
  int64_t outer = 1, inner = 1;
  for (int k = 0, j = 0; k <= nd; k++) {
    if (k == a) {
      if (y->shape.dim[k] != q->num_args) return shape_mismatch(c, x, y, bwd);
      continue;
    }
    if (y->shape.dim[k] != x->shape.dim[j]) return shape_mismatch(c, x, y, bwd);
    if (k < a) outer *= x->shape.dim[j];
    else inner *= x->shape.dim[j];
    j++;
  }
  p->nd = 2, p->shape[0] = outer, p->shape[1] = inner;
  p->xstr[0] = inner, p->xstr[1] = 1;
  p->ystr[0] = q->num_args * inner, p->ystr[1] = 1;
  p->yoff = i * inner;
  return LMX_OK;
}

/* _split_v2 output i: x as [outer, len·inner], y = its columns [b·inner, e·inner). */
static int plan_split(const lmx_op_ctx *c, int i, const lmx_tensor *x, const lmx_tensor *y,
                      int bwd, lmx_mplan_copy *p) {
  const lmx_splitv2_param *q = c->param;
  int a;
  LMX_TRY(lmx_op_axis(c, "axis", q->axis, x->shape.ndim, &a));
  int64_t b, e, len = x->shape.dim[a];
  LMX_TRY(lmx_splitv2_range(c, i, len, &b, &e));
  int64_t outer = lmx_glue_outer(&x->shape, a), inner = lmx_glue_inner(&x->shape, a);
  if (lmx_glue_size(y) != outer * (e - b) * inner) return shape_mismatch(c, x, y, bwd);
  p->nd = 2, p->shape[0] = outer, p->shape[1] = (e - b) * inner;
  p->xstr[0] = len * inner, p->xstr[1] = 1, p->xoff = b * inner;
  p->ystr[0] = (e - b) * inner, p->ystr[1] = 1;
  p->zero_x = 1;
  return LMX_OK;
}

int lmx_mplan_copy_of(const lmx_op_ctx *c, int i, const lmx_tensor *x, const lmx_tensor *y,
                      int bwd, lmx_mplan_copy *p) {
  LMX_TRY(check_pair(c, x, y, bwd));
  *p = (lmx_mplan_copy){0};
  if (c->op == &lmx_op__split_v2) return plan_split(c, i, x, y, bwd, p);
  if (c->op == &lmx_op_slice_like) return plan_slice_like(c, x, y, bwd, p);
  if (c->op == &lmx_op_diag) return plan_diag(c, x, y, bwd, p);
  if (c->op == &lmx_op_stack) return plan_stack(c, i, x, y, bwd, p);
  /* reshape_like: the same elements */
  if (lmx_glue_size(x) != lmx_glue_size(y)) return shape_mismatch(c, x, y, bwd);
  lmx_shape flat = LMX_SHP(lmx_glue_size(x));
  copy_contig(p, &flat);
  return LMX_OK;
}

int lmx_mplan_shape_values(const lmx_op_ctx *c, const lmx_tensor *x, const lmx_tensor *y,
                           int64_t *vals, int *n) {
  if (c->op == &lmx_op_size_array) {
    *n = 1;
    vals[0] = lmx_glue_size(x);
  } else {
    *n = x->shape.ndim;
    for (int k = 0; k < *n; k++) vals[k] = x->shape.dim[k];
  }
  lmx_shape want = LMX_SHP(*n);
  return lmx_glue_check_like(c, y, &want, LMX_INT64, "output");
}

/* ---- generators and argmax_channel --------------------------------------------------------- */

int lmx_mplan_range_of(const lmx_op_ctx *c, const lmx_tensor *y, lmx_mplan_range *r) {
  if (c->op == &lmx_op__arange) {
    const lmx_arange_param *p = c->param;
    int none = isnan(p->stop);
    r->start = none ? 0 : p->start, r->step = p->step, r->repeat = p->repeat;
    LMX_TRY(lmx_arange_count(c, r->start, none ? p->start : p->stop, p->step, &r->n));
    r->n *= p->repeat;
  } else {
    const lmx_arange_like_param *p = c->param;
    r->start = p->start, r->step = p->step, r->repeat = p->repeat;
    r->n = lmx_glue_size(y);
  }
  return lmx_glue_check_size(c, y, r->n, "output");
}

int lmx_mplan_eye(const lmx_op_ctx *c, const lmx_tensor *y, int64_t *off, int64_t *len,
                  int64_t *stride) {
  const lmx_eye_param *p = c->param;
  int64_t N = p->N, M = p->M > 0 ? p->M : p->N, k = p->k;
  lmx_shape want = LMX_SHP(N, M);
  LMX_TRY(lmx_glue_check_like(c, y, &want, y->dtype, "output"));
  int64_t r0 = k < 0 ? -k : 0, c0 = k > 0 ? k : 0;
  int64_t h = N - r0, w = M - c0;
  *len = h < w ? h : w;
  if (*len < 0) *len = 0;
  *off = r0 * M + c0, *stride = M + 1;
  return LMX_OK;
}

int lmx_mplan_argmax_channel(const lmx_op_ctx *c, const lmx_tensor *x, const lmx_tensor *y,
                             int64_t *outer, int64_t *len) {
  LMX_TRY(lmx_glue_check_size(c, x, lmx_glue_size(x), "input 'data'"));
  *len = x->shape.ndim > 0 ? x->shape.dim[x->shape.ndim - 1] : 0;
  if (*len <= 0) return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': cannot search an empty axis");
  *outer = lmx_glue_size(x) / *len;
  LMX_TRY(lmx_glue_check_size(c, y, *outer, "output"));
  if (y->dtype != x->dtype)
    return lmx_op_fail(c, LMX_ERR_DTYPE, "output: expected %s like input 'data', got %s",
                       lmx_dtype_str(x->dtype), lmx_dtype_str(y->dtype));
  return LMX_OK;
}

/* ---- pick / cumsum ----------------------------------------------------------------------- */

int lmx_mplan_pick(const lmx_op_ctx *c, const lmx_tensor *data, const lmx_tensor *index,
                   const lmx_tensor *out, int bwd, int64_t *outer, int64_t *A, int64_t *inner) {
  const lmx_pick_param *p = c->param;
  int a;
  int bt = c->op == &lmx_op_batch_take;
  if (bt) { /* rows of the last axis, clipped */
    static const lmx_pick_param last = {-1, 0, LMX_PICK_CLIP};
    p = &last;
  }
  if (data->shape.ndim < 1)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input '%s' has no dims", bt ? "a" : "data");
  if (p->axis == LMX_PARAM_NONE_INT)
    return lmx_op_fail(c, LMX_ERR_UNSUPPORTED, "parameter 'axis': None is not supported");
  LMX_TRY(lmx_op_axis(c, "axis", p->axis, data->shape.ndim, &a));
  *outer = lmx_glue_outer(&data->shape, a), *A = data->shape.dim[a];
  *inner = lmx_glue_inner(&data->shape, a);
  if (*A <= 0) return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': the picked axis is empty");
  LMX_TRY(lmx_glue_check_size(c, data, lmx_glue_size(data), xname(bwd)));
  LMX_TRY(lmx_glue_check_size(c, index, *outer * *inner, bt ? "input 'indices'" : "input 'index'"));
  LMX_TRY(lmx_glue_check_size(c, out, *outer * *inner, yname(bwd)));
  if (out->dtype != data->dtype)
    return lmx_op_fail(c, LMX_ERR_DTYPE, "%s: expected %s like %s, got %s", yname(bwd),
                       lmx_dtype_str(data->dtype), xname(bwd), lmx_dtype_str(out->dtype));
  return LMX_OK;
}

int lmx_mplan_cumsum(const lmx_op_ctx *c, const lmx_tensor *x, const lmx_tensor *y, int bwd,
                     int64_t *outer, int64_t *len, int64_t *inner) {
  const lmx_cumsum_param *p = c->param;
  int64_t n = lmx_glue_size(x);
  *outer = 1, *len = n, *inner = 1;
  if (p->axis != LMX_PARAM_NONE_INT) {
    int a;
    LMX_TRY(lmx_op_axis(c, "axis", p->axis, x->shape.ndim, &a));
    *outer = lmx_glue_outer(&x->shape, a), *len = x->shape.dim[a];
    *inner = lmx_glue_inner(&x->shape, a);
  }
  LMX_TRY(lmx_glue_check_size(c, x, n, xname(bwd)));
  return lmx_glue_check_size(c, y, n, yname(bwd));
}

/* ---- gather_nd / scatter_nd -------------------------------------------------------------- */

int lmx_mplan_nd(const lmx_op_ctx *c, const lmx_tensor *big, const lmx_tensor *idx,
                 const lmx_tensor *small, int *M, int64_t *dims, int64_t *nY, int64_t *inner) {
  if (idx->shape.ndim < 1 || idx->shape.dim[0] < 1 || idx->shape.dim[0] > big->shape.ndim)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'indices' %s does not fit the indexed shape %s",
                       SH(&idx->shape), SH(&big->shape));
  *M = (int)idx->shape.dim[0];
  *inner = 1;
  for (int k = 0; k < big->shape.ndim; k++) {
    if (k < *M) dims[k] = big->shape.dim[k];
    else *inner *= big->shape.dim[k];
  }
  *nY = lmx_glue_size(idx) / *M;
  LMX_TRY(lmx_glue_check_size(c, idx, lmx_glue_size(idx), "input 'indices'"));
  LMX_TRY(lmx_glue_check_size(c, big, lmx_glue_size(big), "the indexed array"));
  LMX_TRY(lmx_glue_check_size(c, small, *nY * *inner, "the gathered array"));
  if (small->dtype != big->dtype)
    return lmx_op_fail(c, LMX_ERR_DTYPE, "expected one dtype for data and output, got %s and %s",
                       lmx_dtype_str(small->dtype), lmx_dtype_str(big->dtype));
  return LMX_OK;
}
