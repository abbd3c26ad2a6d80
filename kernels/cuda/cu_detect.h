/* cu_detect.h — CUDA launchers of the detection operators (kernels/cuda/detect.cu), the
 * twins of kernels/cpu/detect.c's lmx_cpu_det_* with the same arguments, stream first;
 * every pointer is device memory. The algorithms are kernels/detect_core.h's: elementwise
 * ones (MultiBoxPrior, box_iou, box_nms's gradient) one thread per element, the others a
 * simple per-batch kernel (one thread per batch item, its scratch in the workspace).
 * float32 / float64. Return 0, a cudaError_t code, or -1 for another dtype. */
#ifndef LMX_KERNELS_CU_DETECT_H
#define LMX_KERNELS_CU_DETECT_H

#include "../detect_core.h"
#include "cu_base.h"

LMX_CU_BEGIN

int lmx_cu_det_prior(lmx_cu_stream s, int dt, const lmx_det_prior *p, void *out);
int lmx_cu_det_iou(lmx_cu_stream s, int dt, int64_t nl, int64_t nr, int fmt, const void *lhs,
                   const void *rhs, void *out);
int lmx_cu_det_nms(lmx_cu_stream s, int dt, const lmx_det_nms *p, const void *x, void *out,
                   void *rec, void *ws);
int lmx_cu_det_nms_bwd(lmx_cu_stream s, int dt, int64_t rows, int64_t w, const void *og,
                       const void *rec, void *gx, int acc);
int lmx_cu_det_match(lmx_cu_stream s, int dt, const lmx_det_match *p, const void *x, void *rowm,
                     void *colm, void *ws);
int lmx_cu_det_target(lmx_cu_stream s, int dt, const lmx_det_target *p, const void *anchor,
                      const void *label, const void *cls_pred, void *loc_t, void *loc_m,
                      void *cls_t, void *ws);
int lmx_cu_det_detect(lmx_cu_stream s, int dt, const lmx_det_detect *p, const void *cls_prob,
                      const void *loc_pred, const void *anchor, void *out, void *ws);

LMX_CU_END

#endif
