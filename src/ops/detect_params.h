/* detect_params.h — parameter blocks of the detection operators (issue 14, det14:
 * src/ops/detect.c) and the shape plans their CPU and CUDA glue share
 * (src/ops/detect_plan.c): output shapes, the kernels' geometry (kernels/detect_core.h)
 * and the workspace. Plans read shapes and parameters only, never data, and fail with
 * "<Op> '<node>': ..." messages naming the argument, expected and actual.
 */
#ifndef LMX_OPS_DETECT_PARAMS_H
#define LMX_OPS_DETECT_PARAMS_H

#include "../../kernels/detect_core.h"
#include "op.h"

typedef struct {
  lmx_ftuple sizes, ratios;
  int clip;
  lmx_ftuple steps, offsets;
} lmx_mbprior_param;

typedef struct {
  double overlap_threshold, ignore_label, negative_mining_ratio, negative_mining_thresh;
  int64_t minimum_negative_samples;
  lmx_ftuple variances;
} lmx_mbtarget_param;

typedef struct {
  int clip;
  double threshold;
  int64_t background_id;
  double nms_threshold;
  int force_suppress;
  lmx_ftuple variances;
  int64_t nms_topk;
} lmx_mbdetect_param;

typedef struct {
  double overlap_thresh, valid_thresh;
  int64_t topk, coord_start, score_index, id_index, background_id;
  int force_suppress, in_format, out_format;
} lmx_boxnms_param;

typedef struct {
  int format;
} lmx_boxiou_param;

typedef struct {
  int is_ascend;
  double threshold;
  int64_t topk;
} lmx_bmatch_param;

extern const lmx_op lmx_op__contrib_MultiBoxPrior, lmx_op__contrib_MultiBoxTarget,
    lmx_op__contrib_MultiBoxDetection, lmx_op__contrib_box_nms, lmx_op__contrib_box_iou,
    lmx_op__contrib_bipartite_matching;

/* Output shapes of c->op from fully known input shapes in[] (every output). */
int lmx_det_out_shapes(const lmx_op_ctx *c, const lmx_shape *in, lmx_shape *out);
/* Checks out[0, nout) against lmx_det_out_shapes (data present, in's dtype). */
int lmx_det_check_outs(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out, int nout,
                       const char *what);
/* Workspace bytes of one forward (an upper bound for either float dtype). */
size_t lmx_det_ws_bytes(const lmx_op_ctx *c, const lmx_shape *in);

/* The kernels' geometry from checked input shapes. */
void lmx_det_plan_prior(const lmx_op_ctx *c, const lmx_shape *data, lmx_det_prior *p);
void lmx_det_plan_nms(const lmx_op_ctx *c, const lmx_shape *data, lmx_det_nms *p);
void lmx_det_plan_match(const lmx_op_ctx *c, const lmx_shape *data, lmx_det_match *p);
void lmx_det_plan_target(const lmx_op_ctx *c, const lmx_shape *in, lmx_det_target *p);
void lmx_det_plan_detect(const lmx_op_ctx *c, const lmx_shape *in, lmx_det_detect *p);

#endif
