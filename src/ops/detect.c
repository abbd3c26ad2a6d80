/* detect.c — the detection operators of issue 14 (det14), MXNet 1.9's contrib names:
 * _contrib_MultiBoxPrior, _contrib_MultiBoxTarget, _contrib_MultiBoxDetection (the SSD
 * heads), _contrib_box_nms (alias _contrib_box_non_maximum_suppression), _contrib_box_iou
 * and _contrib_bipartite_matching. Shape rules, kernel geometry and workspace live in
 * detect_plan.c, the algorithms in kernels/detect_core.h (CPU kernels/cpu/detect.c, CUDA
 * kernels/cuda/detect.cu; glue src/ops/{cpu,cuda}/detect.c).
 * Gradients as MXNet defines them: box_nms passes each kept box's head gradient back to
 * the input row it came from (zero for suppressed rows); the others give zero gradients.
 * MXNet 1.9 sources: src/operator/contrib/multibox_{prior,target,detection}(-inl.h, .cc),
 * bounding_box(-inl.h, -common.h, .cc).
 */
#include <math.h>

#include "detect_params.h"
#include "op_impl.h"

#define VAR_DOC "Variances to be encoded in box regression target."

/* ---- shared rules --------------------------------------------------------------------- */

static int det_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out, int nout,
                           lmx_shape *aux, int naux) {
  (void)aux, (void)naux;
  for (int i = 0; i < nin; i++)
    if (!lmx_shape_known(&in[i])) return LMX_OK;
  lmx_shape o[3];
  LMX_TRY(lmx_det_out_shapes(c, in, o));
  for (int i = 0; i < nout; i++) LMX_TRY(lmx_out_assign(c, out, i, &o[i]));
  return LMX_OK;
}

static int ftuple_n(const lmx_op_ctx *c, const char *name, const lmx_ftuple *t, int lo, int hi) {
  if (t->n < lo || t->n > hi) {
    if (lo == hi)
      return lmx_op_fail(c, LMX_ERR_ARG, "parameter '%s': expected %d values, got %d", name, lo,
                         t->n);
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter '%s': expected %d to %d values, got %d", name, lo,
                       hi, t->n);
  }
  return LMX_OK;
}

static int one_visible(const void *param) {
  return (void)param, 1;
}

/* ---- _contrib_MultiBoxPrior ------------------------------------------------------------- */

static const lmx_param_field prior_fields[] = {
    LMX_PF(lmx_mbprior_param, sizes, LMX_PT_FLOATS, "(1.0,)", NULL, 0, 0,
           "List of sizes of generated MultiBoxPriores."),
    LMX_PF(lmx_mbprior_param, ratios, LMX_PT_FLOATS, "(1.0,)", NULL, 0, 0,
           "List of aspect ratios of generated MultiBoxPriores."),
    LMX_PF(lmx_mbprior_param, clip, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Whether to clip out-of-boundary boxes."),
    LMX_PF(lmx_mbprior_param, steps, LMX_PT_FLOATS, "(-1.0, -1.0)", NULL, 0, 0,
           "Priorbox step across y and x, -1 for auto calculation."),
    LMX_PF(lmx_mbprior_param, offsets, LMX_PT_FLOATS, "(0.5, 0.5)", NULL, 0, 0,
           "Priorbox center offsets, y and x respectively"),
};

static int prior_check(const lmx_op_ctx *c, void *param) {
  const lmx_mbprior_param *p = param;
  LMX_TRY(ftuple_n(c, "sizes", &p->sizes, 1, LMX_DET_MAX_PRIOR));
  LMX_TRY(ftuple_n(c, "ratios", &p->ratios, 1, LMX_DET_MAX_PRIOR));
  LMX_TRY(ftuple_n(c, "steps", &p->steps, 2, 2));
  LMX_TRY(ftuple_n(c, "offsets", &p->offsets, 2, 2));
  if (p->steps.v[0] * p->steps.v[1] < 0)
    return lmx_op_fail(c, LMX_ERR_ARG,
                       "parameter 'steps': expected both step_y and step_x "
                       "(or both -1), got (%g, %g)",
                       p->steps.v[0], p->steps.v[1]);
  for (int i = 0; i < 2; i++)
    if (!(p->offsets.v[i] >= 0 && p->offsets.v[i] <= 1))
      return lmx_op_fail(c, LMX_ERR_ARG,
                         "parameter 'offsets': expected values in [0, 1], "
                         "got %g",
                         p->offsets.v[i]);
  for (int i = 0; i < p->ratios.n; i++)
    if (!(p->ratios.v[i] > 0))
      return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'ratios': expected values > 0, got %g",
                         p->ratios.v[i]);
  return LMX_OK;
}

const lmx_op lmx_op__contrib_MultiBoxPrior = {
    .name = "_contrib_MultiBoxPrior",
    .doc =
        "Generate prior(anchor) boxes from data, sizes and ratios. data (batch, channel, "
        "height, width) gives the grid; the output (1, height * width * (len(sizes) + "
        "len(ratios) - 1), 4) holds [xmin, ymin, xmax, ymax] per anchor, cell by cell "
        "(row-major), each cell's anchors being every size at ratio 1, then sizes[0] at "
        "ratios[1:]. Centers are ((x + offsets[1]) * steps[1], (y + offsets[0]) * "
        "steps[0]); steps -1 means 1/width, 1/height; a box of size s and ratio r is s * "
        "height / width * sqrt(r) wide and s / sqrt(r) high. The gradient is zero.",
    LMX_PARAMS(prior_fields, lmx_mbprior_param),
    .param_check = prior_check,
    .infer_shape = det_infer_shape,
};

/* ---- _contrib_MultiBoxTarget ------------------------------------------------------------ */

static const lmx_param_field target_fields[] = {
    LMX_PF(lmx_mbtarget_param, overlap_threshold, LMX_PT_FLOAT, "0.5", NULL, 0, 0,
           "Anchor-GT overlap threshold to be regarded as a positive match."),
    LMX_PF(lmx_mbtarget_param, ignore_label, LMX_PT_FLOAT, "-1", NULL, 0, 0,
           "Label for ignored anchors."),
    LMX_PF(lmx_mbtarget_param, negative_mining_ratio, LMX_PT_FLOAT, "-1", NULL, 0, 0,
           "Max negative to positive samples ratio, use -1 to disable mining"),
    LMX_PF(lmx_mbtarget_param, negative_mining_thresh, LMX_PT_FLOAT, "0.5", NULL, 0, 0,
           "Threshold used for negative mining."),
    LMX_PF(lmx_mbtarget_param, minimum_negative_samples, LMX_PT_INT, "0", NULL, 0, 0,
           "Minimum number of negative samples."),
    LMX_PF(lmx_mbtarget_param, variances, LMX_PT_FLOATS, "(0.1, 0.1, 0.2, 0.2)", NULL, 0, 0,
           VAR_DOC),
};

static int target_check(const lmx_op_ctx *c, void *param) {
  const lmx_mbtarget_param *p = param;
  LMX_TRY(ftuple_n(c, "variances", &p->variances, 4, 4));
  if (p->negative_mining_ratio > 0 && !(p->negative_mining_thresh > 0))
    return lmx_op_fail(c, LMX_ERR_ARG,
                       "parameter 'negative_mining_thresh': expected > 0 "
                       "when negative_mining_ratio > 0, got %g",
                       p->negative_mining_thresh);
  return LMX_OK;
}

static const char *const target_inputs[] = {"anchor", "label", "cls_pred", NULL};
static const char *const target_outputs[] = {"loc_target", "loc_mask", "cls_target", NULL};

const lmx_op lmx_op__contrib_MultiBoxTarget = {
    .name = "_contrib_MultiBoxTarget",
    .doc =
        "Compute Multibox training targets. anchor (1, num_anchors, 4) corner boxes, label "
        "(batch, num_labels, width >= 5) rows [class, xmin, ymin, xmax, ymax] padded with "
        "-1 rows, cls_pred (batch, num_classes, num_anchors). Each ground truth first "
        "takes its best free anchor (greedy, highest overlap first), then every other "
        "anchor whose best overlap exceeds overlap_threshold is positive. Positives get "
        "cls_target = class + 1, loc_mask 1 and loc_target the center offsets and log "
        "size ratios divided by variances; negatives cls_target 0. With "
        "negative_mining_ratio > 0 only the ratio * positives anchors with overlap below "
        "negative_mining_thresh and the lowest background probability (softmax of "
        "cls_pred) are negatives, the rest get ignore_label (hard negative mining). "
        "Outputs: loc_target and loc_mask (batch, num_anchors * 4), cls_target (batch, "
        "num_anchors). The gradient is zero. minimum_negative_samples is accepted and "
        "unused, as in MXNet's kernels.",
    LMX_PARAMS(target_fields, lmx_mbtarget_param),
    .param_check = target_check,
    .inputs = target_inputs,
    .outputs = target_outputs,
    .infer_shape = det_infer_shape,
};

/* ---- _contrib_MultiBoxDetection --------------------------------------------------------- */

static const lmx_param_field detect_fields[] = {
    LMX_PF(lmx_mbdetect_param, clip, LMX_PT_BOOL, "True", NULL, 0, 0,
           "Clip out-of-boundary boxes."),
    LMX_PF(lmx_mbdetect_param, threshold, LMX_PT_FLOAT, "0.01", NULL, 0, 0,
           "Threshold to be a positive prediction."),
    LMX_PF(lmx_mbdetect_param, background_id, LMX_PT_INT, "0", NULL, 0, 0, "Background id."),
    LMX_PF(lmx_mbdetect_param, nms_threshold, LMX_PT_FLOAT, "0.5", NULL, 0, 0,
           "Non-maximum suppression threshold."),
    LMX_PF(lmx_mbdetect_param, force_suppress, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Suppress all detections regardless of class_id."),
    LMX_PF(lmx_mbdetect_param, variances, LMX_PT_FLOATS, "(0.1, 0.1, 0.2, 0.2)", NULL, 0, 0,
           "Variances to be decoded from box regression output."),
    LMX_PF(lmx_mbdetect_param, nms_topk, LMX_PT_INT, "-1", NULL, 0, 0,
           "Keep maximum top k detections before nms, -1 for no limit."),
};

static int detect_check(const lmx_op_ctx *c, void *param) {
  return ftuple_n(c, "variances", &((const lmx_mbdetect_param *)param)->variances, 4, 4);
}

static const char *const detect_inputs[] = {"cls_prob", "loc_pred", "anchor", NULL};

const lmx_op lmx_op__contrib_MultiBoxDetection = {
    .name = "_contrib_MultiBoxDetection",
    .doc =
        "Convert multibox detection predictions. cls_prob (batch, num_classes, "
        "num_anchors) with class 0 the background, loc_pred (batch, num_anchors * 4), "
        "anchor (1, num_anchors, 4). Each anchor takes its best non-background class; "
        "below threshold it is dropped. Kept anchors' boxes are decoded (center + offset "
        "* variance * anchor size, size * exp(offset * variance)), clipped to [0, 1] with "
        "clip, sorted by score, limited to nms_topk, and suppressed when they overlap a "
        "better box of the same class (any class with force_suppress) by nms_threshold "
        "or more. Output (batch, num_anchors, 6): rows [class_id, score, xmin, ymin, "
        "xmax, ymax], suppressed rows with class_id -1, unused rows all -1. The gradient "
        "is zero.",
    LMX_PARAMS(detect_fields, lmx_mbdetect_param),
    .param_check = detect_check,
    .inputs = detect_inputs,
    .infer_shape = det_infer_shape,
};

/* ---- _contrib_box_nms -------------------------------------------------------------------- */

static const lmx_param_field nms_fields[] = {
    LMX_PF(lmx_boxnms_param, overlap_thresh, LMX_PT_FLOAT, "0.5", NULL, 0, 0,
           "Overlapping(IoU) threshold to suppress object with smaller score."),
    LMX_PF(lmx_boxnms_param, valid_thresh, LMX_PT_FLOAT, "0", NULL, 0, 0,
           "Filter input boxes to those whose scores greater than valid_thresh."),
    LMX_PF(lmx_boxnms_param, topk, LMX_PT_INT, "-1", NULL, 0, 0,
           "Apply nms to topk boxes with descending scores, -1 to no restriction."),
    LMX_PF(lmx_boxnms_param, coord_start, LMX_PT_INT, "2", NULL, 0, 0,
           "Start index of the consecutive 4 coordinates."),
    LMX_PF(lmx_boxnms_param, score_index, LMX_PT_INT, "1", NULL, 0, 0,
           "Index of the scores/confidence of boxes."),
    LMX_PF(lmx_boxnms_param, id_index, LMX_PT_INT, "-1", NULL, 0, 0,
           "Optional, index of the class categories, -1 to disable."),
    LMX_PF(lmx_boxnms_param, background_id, LMX_PT_INT, "-1", NULL, 0, 0,
           "Optional, id of the background class which will be ignored in nms."),
    LMX_PF(lmx_boxnms_param, force_suppress, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Optional, if set false and id_index is provided, nms will only apply to boxes "
           "belongs to the same category"),
    LMX_PF(lmx_boxnms_param, in_format, LMX_PT_ENUM, "corner", LMX_DET_FORMAT_CHOICES, 0, 0,
           "The input box encoding type. \"corner\" means boxes are encoded as [xmin, ymin, "
           "xmax, ymax], \"center\" means boxes are encodes as [x, y, width, height]."),
    LMX_PF(lmx_boxnms_param, out_format, LMX_PT_ENUM, "corner", LMX_DET_FORMAT_CHOICES, 0, 0,
           "The output box encoding type. \"corner\" means boxes are encoded as [xmin, ymin, "
           "xmax, ymax], \"center\" means boxes are encodes as [x, y, width, height]."),
};

static const char *const nms_outputs[] = {"output0", "output1", NULL};

const lmx_op lmx_op__contrib_box_nms = {
    .name = "_contrib_box_nms",
    .doc =
        "Apply non-maximum suppression to input. data (..., num_box, width): each box "
        "[id, score, xmin, ymin, xmax, ymax, ...] by default (coord_start, score_index, "
        "id_index say where). Boxes with score <= valid_thresh (or of class "
        "background_id) are dropped; the rest, sorted by score, suppress the later ones "
        "they overlap by more than overlap_thresh (same class only unless force_suppress "
        "or id_index -1); only the first topk take part. The output has the input's "
        "shape: kept boxes sorted by score first, then rows of -1. The gradient of each "
        "kept box goes back to its input row, suppressed rows get 0. Example: x = [[0, "
        "0.5, 0.1, 0.1, 0.2, 0.2], [1, 0.4, 0.1, 0.1, 0.2, 0.2], [0, 0.3, 0.1, 0.1, 0.14, "
        "0.14], [2, 0.6, 0.5, 0.5, 0.7, 0.8]]; box_nms(x, overlap_thresh=0.1, "
        "coord_start=2, score_index=1, id_index=0, force_suppress=True) = [[2, 0.6, 0.5, "
        "0.5, 0.7, 0.8], [0, 0.5, 0.1, 0.1, 0.2, 0.2], [-1, ...], [-1, ...]].",
    LMX_PARAMS(nms_fields, lmx_boxnms_param),
    .outputs = nms_outputs,
    .num_visible_outputs = one_visible,
    .infer_shape = det_infer_shape,
    .backward_needs = LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS,
};

/* ---- _contrib_box_iou -------------------------------------------------------------------- */

static const lmx_param_field iou_fields[] = {
    LMX_PF(lmx_boxiou_param, format, LMX_PT_ENUM, "corner", LMX_DET_FORMAT_CHOICES, 0, 0,
           "The box encoding type. \"corner\" means boxes are encoded as [xmin, ymin, xmax, "
           "ymax], \"center\" means boxes are encodes as [x, y, width, height]."),
};

static const char *const iou_inputs[] = {"lhs", "rhs", NULL};

const lmx_op lmx_op__contrib_box_iou = {
    .name = "_contrib_box_iou",
    .doc =
        "Bounding box overlap of two arrays: the Intersection-over-Union of every box of "
        "lhs (a_1, ..., a_n, 4) with every box of rhs (b_1, ..., b_m, 4), output (a_1, "
        "..., a_n, b_1, ..., b_m). Zero gradients are back-propagated. Example: x = "
        "[[0.5, 0.5, 1.0, 1.0], [0.0, 0.0, 0.5, 0.5]], y = [[0.25, 0.25, 0.75, 0.75]]: "
        "box_iou(x, y, format='corner') = [[0.1428], [0.1428]].",
    LMX_PARAMS(iou_fields, lmx_boxiou_param),
    .inputs = iou_inputs,
    .infer_shape = det_infer_shape,
};

/* ---- _contrib_bipartite_matching --------------------------------------------------------- */

static const lmx_param_field match_fields[] = {
    LMX_PF(lmx_bmatch_param, is_ascend, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Use ascend order for scores instead of descending. Please set threshold "
           "accordingly."),
    LMX_PF(lmx_bmatch_param, threshold, LMX_PT_FLOAT, NULL, NULL, 0, 0,
           "Ignore matching when score < thresh, if is_ascend=false, or ignore score > "
           "thresh, if is_ascend=true."),
    LMX_PF(lmx_bmatch_param, topk, LMX_PT_INT, "-1", NULL, 0, 0,
           "Limit the number of matches to topk, set -1 for no limit"),
};

static const char *const match_outputs[] = {"output0", "output1", NULL};

const lmx_op lmx_op__contrib_bipartite_matching = {
    .name = "_contrib_bipartite_matching",
    .doc =
        "Compute bipartite matching. The matching is performed on score matrix with shape "
        "[B, N, M]: greedily by score (descending, or ascending with is_ascend), each row "
        "and column matched once, stopping at the first free pair beyond threshold. "
        "Returns x (B, N): the matched column of each row, -1 if none, and y (B, M): the "
        "matched row of each column. Zero gradients are back-propagated. Example: s = "
        "[[0.5, 0.6], [0.1, 0.2], [0.3, 0.4]], bipartite_matching(s, threshold=1e-12, "
        "is_ascend=False) gives x = [1, -1, 0], y = [2, 0].",
    LMX_PARAMS(match_fields, lmx_bmatch_param),
    .outputs = match_outputs,
    .infer_shape = det_infer_shape,
};
