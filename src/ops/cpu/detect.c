/* detect.c — CPU glue of the detection operators (issue 14, det14): the shared glue
 * (src/ops/detect_glue.c) over kernels/cpu/detect.c. */
#include "../../../kernels/cpu/cpu_detect.h"
#include "../detect_glue.h"
#include "../op_impl.h"
#include "cpu_ops.h"

static int prior(void *s, int dt, const lmx_det_prior *p, void *out) {
  return (void)s, lmx_cpu_det_prior(dt, p, out);
}
static int iou(void *s, int dt, int64_t nl, int64_t nr, int fmt, const void *l, const void *r,
               void *out) {
  return (void)s, lmx_cpu_det_iou(dt, nl, nr, fmt, l, r, out);
}
static int nms(void *s, int dt, const lmx_det_nms *p, const void *x, void *out, void *rec,
               void *ws) {
  return (void)s, lmx_cpu_det_nms(dt, p, x, out, rec, ws);
}
static int nms_bwd(void *s, int dt, int64_t rows, int64_t w, const void *og, const void *rec,
                   void *gx, int acc) {
  return (void)s, lmx_cpu_det_nms_bwd(dt, rows, w, og, rec, gx, acc);
}
static int match(void *s, int dt, const lmx_det_match *p, const void *x, void *rowm, void *colm,
                 void *ws) {
  return (void)s, lmx_cpu_det_match(dt, p, x, rowm, colm, ws);
}
static int target(void *s, int dt, const lmx_det_target *p, const void *anchor, const void *label,
                  const void *cls_pred, void *loc_t, void *loc_m, void *cls_t, void *ws) {
  return (void)s, lmx_cpu_det_target(dt, p, anchor, label, cls_pred, loc_t, loc_m, cls_t, ws);
}
static int detect(void *s, int dt, const lmx_det_detect *p, const void *cls_prob,
                  const void *loc_pred, const void *anchor, void *out, void *ws) {
  return (void)s, lmx_cpu_det_detect(dt, p, cls_prob, loc_pred, anchor, out, ws);
}
static int zero(const lmx_op_ctx *c, const lmx_tensor *t, int req) {
  (void)c;
  lmx_cpu_zero_grad(t, req);
  return LMX_OK;
}
static int fail(const lmx_op_ctx *c, int rc, const char *kernel) {
  if (rc == 0) return LMX_OK;
  return lmx_op_fail(c, LMX_ERR_DTYPE, "%s on the CPU: unsupported dtype", kernel);
}

static const lmx_det_backend be = {"CPU", prior,  iou,    nms,  nms_bwd,
                                   match, target, detect, zero, fail};

#define DET_GLUE(id)                                                                       \
  int lmx_cpu_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,   \
                       const int *req, const lmx_tensor *aux) {                            \
    (void)aux;                                                                             \
    return lmx_det_forward(&be, c, in, out, req);                                          \
  }                                                                                        \
  int lmx_cpu_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,    \
                       const lmx_tensor *out, const lmx_tensor *ig, const int *req,        \
                       const lmx_tensor *aux) {                                            \
    (void)aux;                                                                             \
    return lmx_det_backward(&be, c, og, in, out, ig, req);                                 \
  }                                                                                        \
  size_t lmx_cpu_ws_##id(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) { \
    (void)out;                                                                             \
    return lmx_det_workspace(c, in);                                                       \
  }

DET_GLUE(_contrib_MultiBoxPrior)
DET_GLUE(_contrib_MultiBoxTarget)
DET_GLUE(_contrib_MultiBoxDetection)
DET_GLUE(_contrib_box_nms)
DET_GLUE(_contrib_box_iou)
DET_GLUE(_contrib_bipartite_matching)
