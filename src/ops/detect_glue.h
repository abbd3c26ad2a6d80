/* detect_glue.h — the device-neutral glue of the detection operators (detect_glue.c):
 * every check, the workspace and the output / gradient bookkeeping are done once there;
 * a backend (src/ops/cpu/detect.c, src/ops/cuda/detect.c) only supplies its launchers
 * (kernels/cpu/cpu_kernels.h's lmx_cpu_det_*, kernels/cuda/cu_detect.h's lmx_cu_det_*)
 * through this table, the stream / context as `s`. */
#ifndef LMX_OPS_DETECT_GLUE_H
#define LMX_OPS_DETECT_GLUE_H

#include "detect_params.h"

typedef struct {
  const char *device; /* "CPU" / "GPU", for messages */
  int (*prior)(void *s, int dt, const lmx_det_prior *p, void *out);
  int (*iou)(void *s, int dt, int64_t nl, int64_t nr, int fmt, const void *l, const void *r,
             void *out);
  int (*nms)(void *s, int dt, const lmx_det_nms *p, const void *x, void *out, void *rec, void *ws);
  int (*nms_bwd)(void *s, int dt, int64_t rows, int64_t w, const void *og, const void *rec,
                 void *gx, int acc);
  int (*match)(void *s, int dt, const lmx_det_match *p, const void *x, void *rowm, void *colm,
               void *ws);
  int (*target)(void *s, int dt, const lmx_det_target *p, const void *anchor, const void *label,
                const void *cls_pred, void *loc_t, void *loc_m, void *cls_t, void *ws);
  int (*detect)(void *s, int dt, const lmx_det_detect *p, const void *cls_prob,
                const void *loc_pred, const void *anchor, void *out, void *ws);
  /* zero gradient t for req WRITE / INPLACE */
  int (*zero)(const lmx_op_ctx *c, const lmx_tensor *t, int req);
  /* turns a launcher's return code into a status naming the kernel */
  int (*fail)(const lmx_op_ctx *c, int rc, const char *kernel);
} lmx_det_backend;

int lmx_det_forward(const lmx_det_backend *be, const lmx_op_ctx *c, const lmx_tensor *in,
                    const lmx_tensor *out, const int *req);
int lmx_det_backward(const lmx_det_backend *be, const lmx_op_ctx *c, const lmx_tensor *og,
                     const lmx_tensor *in, const lmx_tensor *out, const lmx_tensor *ig,
                     const int *req);
size_t lmx_det_workspace(const lmx_op_ctx *c, const lmx_shape *in);

#endif
