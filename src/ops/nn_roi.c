/* nn_roi.c — ROIPooling, _contrib_ROIAlign and _contrib_PSROIPooling (issue 14).
 *
 * Both take data (N, C, H, W) and rois (R, 5) of (batch index, x1, y1, x2, y2) in the
 * image's coordinates (times spatial_scale on the data). ROIPooling max-pools each roi
 * (corners rounded) into pooled_size bins, output (R, C, PH, PW) and a hidden output
 * maxidx (the argmax's h W + w, -1 for an empty bin) that its backward reads. ROIAlign
 * averages bilinear samples per bin (Mask R-CNN); position_sensitive takes bin (ph, pw)
 * of channel c from input channel (c PH + ph) PW + pw, output (R, C / (PH PW), PH, PW);
 * aligned shifts the rois by half a pixel (Detectron2). PSROIPooling (R-FCN) averages
 * each bin of output channel c from input channel (c gs + gh) gs + gw, (gh, gw) the bin's
 * cell of a group_size grid (gs; 0: pooled_size), output (R, output_dim, pooled_size,
 * pooled_size); MXNet has it on the GPU only. rois get a zero gradient. Rois
 * with a batch index outside [0, N) or non-finite numbers give zeros (MXNet: negative
 * indices). The arithmetic is kernels/sampling_impl.h. MXNet 1.9: src/operator/
 * roi_pooling-inl.h, contrib/roi_align.cc, contrib/psroi_pooling.cu.
 */
#include "op_impl.h"
#include "sampling.h"

static const char *const roi_inputs[] = {"data", "rois", NULL};
static const char *const roipool_outputs[] = {"output", "maxidx", NULL};

static int roi_visible(const void *p) {
  (void)p;
  return 1;
}

static int check_pooled(const lmx_op_ctx *c, const lmx_shape *s) {
  if (s->ndim == 2 && s->dim[0] > 0 && s->dim[1] > 0) return LMX_OK;
  char b[LMX_SHAPE_STRCAP];
  return lmx_op_fail(c, LMX_ERR_ARG,
                     "parameter 'pooled_size': expected (h, w) with both above "
                     "0, got %s",
                     lmx_shape_str(s, b));
}

int lmx_roi_plan(const lmx_op_ctx *c, int kind, const lmx_shape *d, const lmx_shape *r,
                 lmx_roi_geom *g) {
  char a[LMX_SHAPE_STRCAP];
  if (d->ndim != 4)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': expected 4-D data (N, C, H, W), got %s",
                       lmx_shape_str(d, a));
  if (r->ndim != 2 || r->dim[1] != 5)
    return lmx_op_fail(c, LMX_ERR_SHAPE,
                       "input 'rois': expected (R, 5) rows of (batch index, "
                       "x1, y1, x2, y2), got %s",
                       lmx_shape_str(r, a));
  memset(g, 0, sizeof *g);
  g->N = d->dim[0], g->C = d->dim[1], g->H = d->dim[2], g->W = d->dim[3], g->R = r->dim[0];
  g->Cout = g->C;
  if (kind == LMX_ROI_PS) {
    const lmx_psroi_param *p = c->param;
    g->PH = g->PW = p->pooled_size, g->Cout = p->output_dim;
    g->gs = p->group_size > 0 ? p->group_size : p->pooled_size;
    g->scale = (double)(float)p->spatial_scale;
    if (g->C < g->Cout * g->gs * g->gs)
      return lmx_op_fail(c, LMX_ERR_SHAPE,
                         "input 'data': expected at least output_dim x "
                         "group_size^2 = %lld x %lld^2 channels, got %s",
                         (long long)g->Cout, (long long)g->gs, lmx_shape_str(d, a));
    return LMX_OK;
  }
  const lmx_shape *ps = kind == LMX_ROI_ALIGN ? &((const lmx_roialign_param *)c->param)->pooled_size
                                              : &((const lmx_roipool_param *)c->param)->pooled_size;
  double scale = kind == LMX_ROI_ALIGN ? ((const lmx_roialign_param *)c->param)->spatial_scale
                                       : ((const lmx_roipool_param *)c->param)->spatial_scale;
  g->PH = ps->dim[0], g->PW = ps->dim[1];
  g->scale = (double)(float)scale;
  if (kind == LMX_ROI_ALIGN) {
    const lmx_roialign_param *p = c->param;
    g->ratio = p->sample_ratio, g->ps = p->position_sensitive, g->aligned = p->aligned;
    if (g->ps) {
      if (g->C % (g->PH * g->PW))
        return lmx_op_fail(c, LMX_ERR_SHAPE,
                           "input 'data': position_sensitive needs channels "
                           "divisible by pooled_size's %lld x %lld, got %s",
                           (long long)g->PH, (long long)g->PW, lmx_shape_str(d, a));
      g->Cout = g->C / (g->PH * g->PW);
    }
  }
  return LMX_OK;
}

static int roi_infer(const lmx_op_ctx *c, int kind, lmx_shape *in, lmx_shape *out, int nout) {
  if (!lmx_shape_known(&in[0]) || !lmx_shape_known(&in[1])) return LMX_OK;
  lmx_roi_geom g;
  LMX_TRY(lmx_roi_plan(c, kind, &in[0], &in[1], &g));
  lmx_shape o = LMX_SHP(g.R, g.Cout, g.PH, g.PW);
  for (int i = 0; i < nout; i++) LMX_TRY(lmx_out_assign(c, out, i, &o));
  return LMX_OK;
}

/* ---- ROIPooling ------------------------------------------------------------------------- */

static const lmx_param_field roipool_fields[] = {
    LMX_PF(lmx_roipool_param, pooled_size, LMX_PT_SHAPE, NULL, NULL, 0, 0,
           "ROI pooling output shape (h,w) "),
    LMX_PF(lmx_roipool_param, spatial_scale, LMX_PT_FLOAT, NULL, NULL, 0, 1,
           "Ratio of input feature map height (or w) to raw image height (or w). Equals the "
           "reciprocal of total stride in convolutional layers"),
};

static int roipool_check(const lmx_op_ctx *c, void *param) {
  return check_pooled(c, &((const lmx_roipool_param *)param)->pooled_size);
}

static int roipool_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                               int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)aux, (void)naux;
  return roi_infer(c, LMX_ROI_POOL, in, out, nout);
}

const lmx_op lmx_op_ROIPooling = {
    .name = "ROIPooling",
    .doc =
        "Performs region of interest pooling on inputs: each roi (batch index, x1, y1, x2, "
        "y2) of rois (R, 5), scaled by spatial_scale and rounded, is max-pooled into "
        "pooled_size bins, output (R, C, h, w). Rois with a batch index outside the batch "
        "give zeros; rois get no gradient.",
    LMX_PARAMS(roipool_fields, lmx_roipool_param),
    .param_check = roipool_check,
    .inputs = roi_inputs,
    .outputs = roipool_outputs,
    .num_visible_outputs = roi_visible,
    .infer_shape = roipool_infer_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS,
};

/* ---- _contrib_ROIAlign ------------------------------------------------------------------ */

static const lmx_param_field roialign_fields[] = {
    LMX_PF(lmx_roialign_param, pooled_size, LMX_PT_SHAPE, NULL, NULL, 0, 0,
           "ROI Align output roi feature map height and width: (h, w)"),
    LMX_PF(lmx_roialign_param, spatial_scale, LMX_PT_FLOAT, NULL, NULL, 0, 1,
           "Ratio of input feature map height (or w) to raw image height (or w). Equals the "
           "reciprocal of total stride in convolutional layers"),
    LMX_PF(lmx_roialign_param, sample_ratio, LMX_PT_INT, "-1", NULL, -1e9,
           LMX_ROIALIGN_MAX_GRID,
           "Optional sampling ratio of ROI align, using adaptive size by default."),
    LMX_PF(lmx_roialign_param, position_sensitive, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Whether to perform position-sensitive RoI pooling. PSRoIPooling is first "
           "proposaled by R-FCN and it can reduce the computational cost."),
    LMX_PF(lmx_roialign_param, aligned, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Center-aligned ROIAlign introduced in Detectron2. To enable, set aligned to True."),
};

static int roialign_check(const lmx_op_ctx *c, void *param) {
  return check_pooled(c, &((const lmx_roialign_param *)param)->pooled_size);
}

static int roialign_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                                int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)aux, (void)naux;
  return roi_infer(c, LMX_ROI_ALIGN, in, out, nout);
}

const lmx_op lmx_op__contrib_ROIAlign = {
    .name = "_contrib_ROIAlign",
    .doc =
        "Aligns the feature map over the rois (R, 5) of (batch index, x1, y1, x2, y2): each "
        "of the pooled_size bins averages bilinear samples of the data (Mask R-CNN's "
        "ROIAlign; sample_ratio samples per bin side, or ceil(roi size / pooled size)); "
        "output (R, C, h, w), or (R, C / (h w), h, w) position-sensitive. Rois with a "
        "batch index outside the batch give zeros; rois get no gradient.",
    LMX_PARAMS(roialign_fields, lmx_roialign_param),
    .param_check = roialign_check,
    .inputs = roi_inputs,
    .infer_shape = roialign_infer_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUT_GRADS,
};

/* ---- _contrib_PSROIPooling -------------------------------------------------------------- */

static const lmx_param_field psroi_fields[] = {
    LMX_PF(lmx_psroi_param, spatial_scale, LMX_PT_FLOAT, NULL, NULL, 0, 1,
           "Ratio of input feature map height (or w) to raw image height (or w). Equals the "
           "reciprocal of total stride in convolutional layers"),
    LMX_PF(lmx_psroi_param, output_dim, LMX_PT_INT, NULL, NULL, 1, 1e9, "fix output dim"),
    LMX_PF(lmx_psroi_param, pooled_size, LMX_PT_INT, NULL, NULL, 1, 1e6, "fix pooled size"),
    LMX_PF(lmx_psroi_param, group_size, LMX_PT_INT, "0", NULL, 0, 1e6, "fix group size"),
};

static int psroi_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out, int nout,
                             lmx_shape *aux, int naux) {
  (void)nin, (void)aux, (void)naux;
  return roi_infer(c, LMX_ROI_PS, in, out, nout);
}

const lmx_op lmx_op__contrib_PSROIPooling = {
    .name = "_contrib_PSROIPooling",
    .doc =
        "Performs position-sensitive region-of-interest pooling (R-FCN): each of the "
        "pooled_size x pooled_size bins of a roi (batch index, x1, y1, x2, y2), scaled by "
        "spatial_scale, averages the input channel of its output channel and group cell, "
        "output (R, output_dim, pooled_size, pooled_size). Rois with a batch index outside "
        "the batch give zeros; rois get no gradient.",
    LMX_PARAMS(psroi_fields, lmx_psroi_param),
    .inputs = roi_inputs,
    .infer_shape = psroi_infer_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUT_GRADS,
};
