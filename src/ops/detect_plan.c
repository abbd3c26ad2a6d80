/* detect_plan.c — shape rules, kernel geometry and workspace of the detection operators
 * (detect_params.h), shared by the descriptors (src/ops/detect.c) and the CPU / CUDA
 * glue. The shape rules are MXNet 1.9's (InferShape of multibox_*-inl.h, BoxNMSShape,
 * BoxOverlapShape, MatchingShape), with the checks MXNet makes in its kernels too.
 */
#include "detect_params.h"
#include "glue.h"
#include "op_impl.h"

static int want_ndim(const lmx_op_ctx *c, const lmx_shape *s, const char *name, int ndim,
                     const char *layout) {
  if (s->ndim != ndim)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input '%s': expected %d-D %s, got %d-D", name, ndim,
                       layout, s->ndim);
  return LMX_OK;
}

static int prior_shapes(const lmx_op_ctx *c, const lmx_shape *in, lmx_shape *out) {
  const lmx_mbprior_param *p = c->param;
  if (in[0].ndim < 4)
    return lmx_op_fail(c, LMX_ERR_SHAPE,
                       "input 'data': expected at least 4-D (batch, "
                       "channel, height, width), got %d-D",
                       in[0].ndim);
  if (in[0].dim[2] <= 0 || in[0].dim[3] <= 0)
    return lmx_op_fail(c, LMX_ERR_SHAPE,
                       "input 'data': expected height and width > 0, got "
                       "%lld x %lld",
                       (long long)in[0].dim[2], (long long)in[0].dim[3]);
  out[0] = LMX_SHP(1, in[0].dim[2] * in[0].dim[3] * (p->sizes.n + p->ratios.n - 1), 4);
  return LMX_OK;
}

static int box_last4(const lmx_op_ctx *c, const lmx_shape *s, const char *name) {
  if (s->ndim < 2 || s->dim[s->ndim - 1] != 4)
    return lmx_op_fail(c, LMX_ERR_SHAPE,
                       "input '%s': expected at least 2-D with a last dim "
                       "of 4 (boxes), got %d-D with last dim %lld",
                       name, s->ndim, (long long)(s->ndim > 0 ? s->dim[s->ndim - 1] : 0));
  return LMX_OK;
}

static int iou_shapes(const lmx_op_ctx *c, const lmx_shape *in, lmx_shape *out) {
  LMX_TRY(box_last4(c, &in[0], "lhs"));
  LMX_TRY(box_last4(c, &in[1], "rhs"));
  int nd = in[0].ndim + in[1].ndim - 2;
  if (nd > LMX_MAX_NDIM)
    return lmx_op_fail(c, LMX_ERR_SHAPE,
                       "output: expected at most %d dims, got %d "
                       "(lhs and rhs without their last dims)",
                       LMX_MAX_NDIM, nd);
  lmx_shape o = {nd, {0}};
  int k = 0;
  for (int i = 0; i + 1 < in[0].ndim; i++) o.dim[k++] = in[0].dim[i];
  for (int i = 0; i + 1 < in[1].ndim; i++) o.dim[k++] = in[1].dim[i];
  out[0] = o;
  return LMX_OK;
}

/* MXNet's BoxNMSShape index checks */
static int nms_shapes(const lmx_op_ctx *c, const lmx_shape *in, lmx_shape *out) {
  const lmx_boxnms_param *p = c->param;
  const lmx_shape *s = &in[0];
  if (s->ndim < 2)
    return lmx_op_fail(c, LMX_ERR_SHAPE,
                       "input 'data': expected at least 2-D (..., "
                       "num_box, box_width), got %d-D",
                       s->ndim);
  int64_t w = s->dim[s->ndim - 1], need = p->id_index >= 0 ? 6 : 5;
  int64_t cs = p->coord_start, ce = cs + 3, si = p->score_index, id = p->id_index;
  if (w < need)
    return lmx_op_fail(c, LMX_ERR_SHAPE,
                       "input 'data': expected a box width of at least "
                       "%lld (score, 4 coordinates%s), got %lld",
                       (long long)need, need == 6 ? ", id" : "", (long long)w);
  if (cs < 0 || ce >= w)
    return lmx_op_fail(c, LMX_ERR_ARG,
                       "parameter 'coord_start': expected coordinates "
                       "[%lld, %lld] inside the box width %lld",
                       (long long)cs, (long long)ce, (long long)w);
  if (si < 0 || si >= w || (si >= cs && si <= ce))
    return lmx_op_fail(c, LMX_ERR_ARG,
                       "parameter 'score_index': expected an index in [0, "
                       "%lld) outside the coordinates [%lld, %lld], got %lld",
                       (long long)w, (long long)cs, (long long)ce, (long long)si);
  if (id >= 0 && (id >= w || (id >= cs && id <= ce) || id == si))
    return lmx_op_fail(c, LMX_ERR_ARG,
                       "parameter 'id_index': expected an index in [0, "
                       "%lld) outside the coordinates [%lld, %lld] and not score_index %lld, "
                       "got %lld",
                       (long long)w, (long long)cs, (long long)ce, (long long)si, (long long)id);
  out[0] = *s;
  out[1] = *s;
  out[1].dim[s->ndim - 1] = 1;
  return LMX_OK;
}

static int match_shapes(const lmx_op_ctx *c, const lmx_shape *in, lmx_shape *out) {
  const lmx_shape *s = &in[0];
  if (s->ndim < 2)
    return lmx_op_fail(c, LMX_ERR_SHAPE,
                       "input 'data': expected at least 2-D (..., rows, "
                       "columns), got %d-D",
                       s->ndim);
  out[0] = *s;
  out[0].ndim--;
  out[1] = out[0];
  out[1].dim[out[1].ndim - 1] = s->dim[s->ndim - 1];
  return LMX_OK;
}

static int target_shapes(const lmx_op_ctx *c, const lmx_shape *in, lmx_shape *out) {
  const lmx_shape *a = &in[0], *l = &in[1], *p = &in[2];
  LMX_TRY(want_ndim(c, a, "anchor", 3, "(1, num_anchors, 4)"));
  if (a->dim[0] != 1 || a->dim[1] <= 0 || a->dim[2] != 4)
    return lmx_op_fail(c, LMX_ERR_SHAPE,
                       "input 'anchor': expected (1, num_anchors > 0, 4), "
                       "got (%lld,%lld,%lld)",
                       (long long)a->dim[0], (long long)a->dim[1], (long long)a->dim[2]);
  LMX_TRY(want_ndim(c, l, "label", 3, "(batch, num_labels, label_width)"));
  if (l->dim[1] <= 0 || l->dim[2] < 5)
    return lmx_op_fail(c, LMX_ERR_SHAPE,
                       "input 'label': expected num_labels > 0 and a "
                       "label width of at least 5 (id, xmin, ymin, xmax, ymax), got (%lld,"
                       "%lld,%lld)",
                       (long long)l->dim[0], (long long)l->dim[1], (long long)l->dim[2]);
  LMX_TRY(want_ndim(c, p, "cls_pred", 3, "(batch, num_classes, num_anchors)"));
  if (p->dim[0] != l->dim[0] || p->dim[2] != a->dim[1] || p->dim[1] <= 0)
    return lmx_op_fail(c, LMX_ERR_SHAPE,
                       "input 'cls_pred': expected (%lld, num_classes > 0, "
                       "%lld), got (%lld,%lld,%lld)",
                       (long long)l->dim[0], (long long)a->dim[1], (long long)p->dim[0],
                       (long long)p->dim[1], (long long)p->dim[2]);
  out[0] = LMX_SHP(l->dim[0], a->dim[1] * 4);
  out[1] = out[0];
  out[2] = LMX_SHP(l->dim[0], a->dim[1]);
  return LMX_OK;
}

static int detect_shapes(const lmx_op_ctx *c, const lmx_shape *in, lmx_shape *out) {
  const lmx_shape *cp = &in[0], *lp = &in[1], *a = &in[2];
  LMX_TRY(want_ndim(c, cp, "cls_prob", 3, "(batch, num_classes, num_anchors)"));
  LMX_TRY(want_ndim(c, lp, "loc_pred", 2, "(batch, num_anchors * 4)"));
  LMX_TRY(want_ndim(c, a, "anchor", 3, "(1, num_anchors, 4)"));
  if (a->dim[1] <= 0 || a->dim[2] != 4 || a->dim[0] < 1)
    return lmx_op_fail(c, LMX_ERR_SHAPE,
                       "input 'anchor': expected (1, num_anchors > 0, 4), "
                       "got (%lld,%lld,%lld)",
                       (long long)a->dim[0], (long long)a->dim[1], (long long)a->dim[2]);
  if (cp->dim[2] != a->dim[1] || cp->dim[1] <= 0)
    return lmx_op_fail(c, LMX_ERR_SHAPE,
                       "input 'cls_prob': expected (batch, num_classes > 0,"
                       " %lld), got (%lld,%lld,%lld)",
                       (long long)a->dim[1], (long long)cp->dim[0], (long long)cp->dim[1],
                       (long long)cp->dim[2]);
  if (lp->dim[0] != cp->dim[0] || lp->dim[1] != a->dim[1] * 4)
    return lmx_op_fail(c, LMX_ERR_SHAPE,
                       "input 'loc_pred': expected (%lld,%lld), got "
                       "(%lld,%lld)",
                       (long long)cp->dim[0], (long long)(a->dim[1] * 4), (long long)lp->dim[0],
                       (long long)lp->dim[1]);
  out[0] = LMX_SHP(cp->dim[0], a->dim[1], 6);
  return LMX_OK;
}

int lmx_det_out_shapes(const lmx_op_ctx *c, const lmx_shape *in, lmx_shape *out) {
  const lmx_op *op = c->op;
  if (op == &lmx_op__contrib_MultiBoxPrior) return prior_shapes(c, in, out);
  if (op == &lmx_op__contrib_box_iou) return iou_shapes(c, in, out);
  if (op == &lmx_op__contrib_box_nms) return nms_shapes(c, in, out);
  if (op == &lmx_op__contrib_bipartite_matching) return match_shapes(c, in, out);
  if (op == &lmx_op__contrib_MultiBoxTarget) return target_shapes(c, in, out);
  return detect_shapes(c, in, out);
}

int lmx_det_check_outs(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out, int nout,
                       const char *what) {
  lmx_shape is[3], os[3];
  int nin = lmx_op_num_inputs(c->op, c->param);
  for (int i = 0; i < nin && i < 3; i++) {
    is[i] = in[i].shape;
    if (in[i].dtype != in[0].dtype) {
      char nb[64];
      return lmx_op_fail(c, LMX_ERR_DTYPE, "input '%s': expected %s like input '%s', got %s",
                         lmx_op_in_name(c, i, nb, sizeof nb), lmx_dtype_str(in[0].dtype),
                         lmx_op_in_name(c, 0, (char[64]){0}, 64), lmx_dtype_str(in[i].dtype));
    }
    if (lmx_shape_size(&in[i].shape) > 0 && !in[i].data)
      return lmx_op_fail(c, LMX_ERR_ARG, "input %d has no data", i);
  }
  LMX_TRY(lmx_det_out_shapes(c, is, os));
  for (int i = 0; i < nout; i++) {
    char w[64];
    snprintf(w, sizeof w, "%s %d", what, i);
    LMX_TRY(lmx_glue_check_like(c, &out[i], &os[i], in[0].dtype, nout == 1 ? what : w));
  }
  return LMX_OK;
}

static int64_t batch_of(const lmx_shape *s, int keep) {
  int64_t b = 1;
  for (int i = 0; i + keep < s->ndim; i++) b *= s->dim[i];
  return b;
}

void lmx_det_plan_prior(const lmx_op_ctx *c, const lmx_shape *data, lmx_det_prior *p) {
  const lmx_mbprior_param *q = c->param;
  memset(p, 0, sizeof *p);
  p->h = data->dim[2], p->w = data->dim[3];
  p->ns = q->sizes.n, p->nr = q->ratios.n, p->clip = q->clip;
  for (int i = 0; i < q->sizes.n; i++) p->sizes[i] = (float)q->sizes.v[i];
  for (int i = 0; i < q->ratios.n; i++) p->ratios[i] = (float)q->ratios.v[i];
  float sy = (float)q->steps.v[0], sx = (float)q->steps.v[1];
  if (sy <= 0 || sx <= 0) sy = 1.f / (float)p->h, sx = 1.f / (float)p->w;
  p->step_y = sy, p->step_x = sx;
  p->off_y = (float)q->offsets.v[0], p->off_x = (float)q->offsets.v[1];
}

void lmx_det_plan_nms(const lmx_op_ctx *c, const lmx_shape *data, lmx_det_nms *p) {
  const lmx_boxnms_param *q = c->param;
  memset(p, 0, sizeof *p);
  p->nb = batch_of(data, 2), p->n = data->dim[data->ndim - 2], p->w = data->dim[data->ndim - 1];
  p->topk = q->topk < 0 ? p->n : q->topk < p->n ? q->topk : p->n;
  p->coord = (int)q->coord_start, p->score = (int)q->score_index, p->id = (int)q->id_index;
  p->in_fmt = q->in_format, p->out_fmt = q->out_format, p->force = q->force_suppress;
  p->overlap = (float)q->overlap_thresh, p->valid = (float)q->valid_thresh;
  p->background = (int)q->background_id;
}

void lmx_det_plan_match(const lmx_op_ctx *c, const lmx_shape *data, lmx_det_match *p) {
  const lmx_bmatch_param *q = c->param;
  memset(p, 0, sizeof *p);
  p->nb = batch_of(data, 2), p->n = data->dim[data->ndim - 2], p->m = data->dim[data->ndim - 1];
  p->threshold = (float)q->threshold, p->asc = q->is_ascend, p->topk = (int)q->topk;
}

void lmx_det_plan_target(const lmx_op_ctx *c, const lmx_shape *in, lmx_det_target *p) {
  const lmx_mbtarget_param *q = c->param;
  memset(p, 0, sizeof *p);
  p->nb = in[1].dim[0], p->na = in[0].dim[1], p->nl = in[1].dim[1], p->lw = in[1].dim[2];
  p->nc = in[2].dim[1];
  p->overlap = (float)q->overlap_threshold, p->ignore = (float)q->ignore_label;
  p->ratio = (float)q->negative_mining_ratio, p->neg_thresh = (float)q->negative_mining_thresh;
  for (int i = 0; i < 4; i++) p->var[i] = (float)q->variances.v[i];
}

void lmx_det_plan_detect(const lmx_op_ctx *c, const lmx_shape *in, lmx_det_detect *p) {
  const lmx_mbdetect_param *q = c->param;
  memset(p, 0, sizeof *p);
  p->nb = in[0].dim[0], p->nc = in[0].dim[1], p->na = in[0].dim[2];
  p->threshold = (float)q->threshold, p->nms_threshold = (float)q->nms_threshold;
  p->clip = q->clip, p->force = q->force_suppress, p->nms_topk = (int)q->nms_topk;
  for (int i = 0; i < 4; i++) p->var[i] = (float)q->variances.v[i];
}

size_t lmx_det_ws_bytes(const lmx_op_ctx *c, const lmx_shape *in) {
  const lmx_op *op = c->op;
  if (op == &lmx_op__contrib_box_nms && in[0].ndim >= 2)
    return (size_t)(batch_of(&in[0], 2) * lmx_det_ws_nms(in[0].dim[in[0].ndim - 2]));
  if (op == &lmx_op__contrib_bipartite_matching && in[0].ndim >= 2)
    return (size_t)(batch_of(&in[0], 2) *
                    lmx_det_ws_match(in[0].dim[in[0].ndim - 2], in[0].dim[in[0].ndim - 1]));
  if (op == &lmx_op__contrib_MultiBoxTarget && in[0].ndim == 3 && in[1].ndim == 3)
    return (size_t)(in[1].dim[0] * lmx_det_ws_target(in[0].dim[1], in[1].dim[1], 8));
  if (op == &lmx_op__contrib_MultiBoxDetection && in[0].ndim == 3)
    return (size_t)(in[0].dim[0] * lmx_det_ws_detect(in[0].dim[2], 8));
  return 0;
}
