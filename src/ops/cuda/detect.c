/* detect.c — CUDA glue of the detection operators (issue 14, det14): the shared glue
 * (src/ops/detect_glue.c) over the launchers of kernels/cuda/detect.cu. */
#include "../../../kernels/cuda/cu_detect.h"
#include "../detect_glue.h"
#include "../op_impl.h"
#include "k1_glue.h"

static int prior(void *s, int dt, const lmx_det_prior *p, void *out) {
  return lmx_cu_det_prior((lmx_cu_stream)s, dt, p, out);
}
static int iou(void *s, int dt, int64_t nl, int64_t nr, int fmt, const void *l, const void *r,
               void *out) {
  return lmx_cu_det_iou((lmx_cu_stream)s, dt, nl, nr, fmt, l, r, out);
}
static int nms(void *s, int dt, const lmx_det_nms *p, const void *x, void *out, void *rec,
               void *ws) {
  return lmx_cu_det_nms((lmx_cu_stream)s, dt, p, x, out, rec, ws);
}
static int nms_bwd(void *s, int dt, int64_t rows, int64_t w, const void *og, const void *rec,
                   void *gx, int acc) {
  return lmx_cu_det_nms_bwd((lmx_cu_stream)s, dt, rows, w, og, rec, gx, acc);
}
static int match(void *s, int dt, const lmx_det_match *p, const void *x, void *rowm, void *colm,
                 void *ws) {
  return lmx_cu_det_match((lmx_cu_stream)s, dt, p, x, rowm, colm, ws);
}
static int target(void *s, int dt, const lmx_det_target *p, const void *anchor, const void *label,
                  const void *cls_pred, void *loc_t, void *loc_m, void *cls_t, void *ws) {
  return lmx_cu_det_target((lmx_cu_stream)s, dt, p, anchor, label, cls_pred, loc_t, loc_m, cls_t,
                           ws);
}
static int detect(void *s, int dt, const lmx_det_detect *p, const void *cls_prob,
                  const void *loc_pred, const void *anchor, void *out, void *ws) {
  return lmx_cu_det_detect((lmx_cu_stream)s, dt, p, cls_prob, loc_pred, anchor, out, ws);
}

static const lmx_det_backend be = {
    "GPU", prior, iou, nms, nms_bwd, match, target, detect, lmx_cuda_zero_grad, lmx_cuda_fail};

#define DET_GLUE(id)                                                                        \
  int lmx_cuda_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,   \
                        const int *req, const lmx_tensor *aux) {                            \
    (void)aux;                                                                              \
    return lmx_det_forward(&be, c, in, out, req);                                           \
  }                                                                                         \
  int lmx_cuda_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,    \
                        const lmx_tensor *out, const lmx_tensor *ig, const int *req,        \
                        const lmx_tensor *aux) {                                            \
    (void)aux;                                                                              \
    return lmx_det_backward(&be, c, og, in, out, ig, req);                                  \
  }                                                                                         \
  size_t lmx_cuda_ws_##id(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) { \
    (void)out;                                                                              \
    return lmx_det_workspace(c, in);                                                        \
  }

DET_GLUE(_contrib_MultiBoxPrior)
DET_GLUE(_contrib_MultiBoxTarget)
DET_GLUE(_contrib_MultiBoxDetection)
DET_GLUE(_contrib_box_nms)
DET_GLUE(_contrib_box_iou)
DET_GLUE(_contrib_bipartite_matching)
