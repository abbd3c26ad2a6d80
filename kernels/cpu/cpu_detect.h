/* cpu_detect.h — CPU kernels of the detection operators (issue 14, det14;
 * kernels/cpu/detect.c), float32 / float64. The algorithms are kernels/detect_core.h's,
 * shared with the CUDA kernels; ws is the caller's scratch (lmx_det_ws_* bytes per batch
 * item). Each returns 0, or -1 for another dtype. */
#ifndef LMX_KERNELS_CPU_DETECT_H
#define LMX_KERNELS_CPU_DETECT_H

#include <stdint.h>

#include "../detect_core.h"

/* MultiBoxPrior: out (h w (ns + nr - 1), 4) */
int lmx_cpu_det_prior(int dt, const lmx_det_prior *p, void *out);
/* box_iou: out (nl, nr) of lhs (nl, 4) and rhs (nr, 4) */
int lmx_cpu_det_iou(int dt, int64_t nl, int64_t nr, int fmt, const void *lhs, const void *rhs,
                    void *out);
/* box_nms: out (nb, n, w), rec (nb, n) the flat input row of each output row or -1 */
int lmx_cpu_det_nms(int dt, const lmx_det_nms *p, const void *x, void *out, void *rec, void *ws);
/* box_nms gradient: gx (nb n, w) (+)= og's row i at row rec[i] (0 elsewhere) */
int lmx_cpu_det_nms_bwd(int dt, int64_t rows, int64_t w, const void *og, const void *rec, void *gx,
                        int acc);
/* bipartite_matching: rowm (nb, n), colm (nb, m) */
int lmx_cpu_det_match(int dt, const lmx_det_match *p, const void *x, void *rowm, void *colm,
                      void *ws);
/* MultiBoxTarget: loc_t, loc_m (nb, na 4), cls_t (nb, na) */
int lmx_cpu_det_target(int dt, const lmx_det_target *p, const void *anchor, const void *label,
                       const void *cls_pred, void *loc_t, void *loc_m, void *cls_t, void *ws);
/* MultiBoxDetection: out (nb, na, 6) */
int lmx_cpu_det_detect(int dt, const lmx_det_detect *p, const void *cls_prob, const void *loc_pred,
                       const void *anchor, void *out, void *ws);

#endif
