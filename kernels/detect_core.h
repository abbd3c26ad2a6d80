/* detect_core.h — the detection operators' algorithms (issue 14: _contrib_MultiBoxPrior,
 * _contrib_MultiBoxTarget, _contrib_MultiBoxDetection, _contrib_box_nms, _contrib_box_iou,
 * _contrib_bipartite_matching), one copy for the CPU kernels (kernels/cpu/detect.c) and
 * the CUDA ones (kernels/cuda/detect.cu), so both devices compute alike, in the same order.
 *
 * Each function does one batch item (or one element) serially: the CPU runs batch items
 * in parallel, the GPU one thread per batch item (a simple per-batch kernel: these ops
 * run once per step on at most a few thousand boxes). Sorting is a stable bottom-up
 * merge sort of int32 positions (MXNet sorts with stable sorts too: ties keep the lower
 * index first). Scratch memory comes from the caller (the operator's workspace), laid
 * out per batch item by the lmx_det_ws_* helpers below.
 * The typed functions are written once in detect_impl.h and instantiated here for float
 * (suffix _f) and double (_d). Include it after the CUDA headers in .cu files (the
 * simulator defines __host__ there).
 */
#ifndef LMX_KERNELS_DETECT_CORE_H
#define LMX_KERNELS_DETECT_CORE_H

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__) || defined(__host__)
#define LMX_DET_HD __host__ __device__
#else
#define LMX_DET_HD
#endif

/* box encodings (MXNet's box_common_enum) */
enum { LMX_DET_CORNER = 0, LMX_DET_CENTER = 1 };
#define LMX_DET_FORMAT_CHOICES "corner|center"

/* _contrib_MultiBoxPrior: an (h, w) grid, anchors per cell = ns + nr - 1 */
enum { LMX_DET_MAX_PRIOR = 8 };
typedef struct {
  int64_t h, w;
  int ns, nr, clip;
  float sizes[LMX_DET_MAX_PRIOR], ratios[LMX_DET_MAX_PRIOR];
  float step_y, step_x, off_y, off_x;
} lmx_det_prior;

/* _contrib_box_nms over nb batch items of n boxes of width w */
typedef struct {
  int64_t nb, n, w, topk; /* topk: boxes kept for nms per item (< 1: copy through) */
  int coord, score, id, in_fmt, out_fmt, force;
  float overlap, valid;
  int background;
} lmx_det_nms;

/* _contrib_bipartite_matching over nb score matrices (n, m) */
typedef struct {
  int64_t nb, n, m;
  float threshold;
  int asc, topk;
} lmx_det_match;

/* _contrib_MultiBoxTarget: na anchors, nl labels of width lw, nc classes */
typedef struct {
  int64_t nb, na, nl, lw, nc;
  float overlap, ignore, ratio, neg_thresh;
  float var[4];
} lmx_det_target;

/* _contrib_MultiBoxDetection: na anchors, nc classes (class 0 is the background) */
typedef struct {
  int64_t nb, na, nc;
  float threshold, nms_threshold;
  int clip, force, nms_topk;
  float var[4];
} lmx_det_detect;

/* ---- workspace per batch item (bytes, multiples of 8) ------------------------------------ */

LMX_DET_HD static inline int64_t lmx_det_r8(int64_t b) {
  return (b + 7) / 8 * 8;
}
/* box_nms: positions and merge buffer, n int32 each */
LMX_DET_HD static inline int64_t lmx_det_ws_nms(int64_t n) {
  return lmx_det_r8(8 * n);
}
/* bipartite_matching: n*m int32 twice */
LMX_DET_HD static inline int64_t lmx_det_ws_match(int64_t n, int64_t m) {
  return lmx_det_r8(8 * n * m);
}
/* MultiBoxTarget: best iou (float) na, background prob (T) na, then int32: flags, match,
 * positions, merge buffer (na each) and gt flags (nl) */
LMX_DET_HD static inline int64_t lmx_det_ws_target(int64_t na, int64_t nl, int64_t tsz) {
  return lmx_det_r8(na * tsz) + lmx_det_r8(4 * na) + lmx_det_r8(4 * (4 * na + nl));
}
/* MultiBoxDetection: a copy of the rows (T, na*6), positions and merge buffer (na int32) */
LMX_DET_HD static inline int64_t lmx_det_ws_detect(int64_t na, int64_t tsz) {
  return lmx_det_r8(6 * na * tsz) + lmx_det_r8(8 * na);
}

/* ---- untyped helpers --------------------------------------------------------------------- */

/* MultiBoxPrior's box a of the grid (float arithmetic as MXNet) into o[4] */
LMX_DET_HD static inline void lmx_det_prior_box(const lmx_det_prior *p, int64_t a, float *o) {
  int64_t per = p->ns + p->nr - 1, pix = a / per, k = a % per;
  int64_t r = pix / p->w, c = pix % p->w;
  float cy = ((float)r + p->off_y) * p->step_y, cx = ((float)c + p->off_x) * p->step_x;
  float bw, bh;
  if (k < p->ns) {
    float size = p->sizes[k];
    bw = size * (float)p->h / (float)p->w / 2;
    bh = size / 2;
  } else {
    float ratio = sqrtf(p->ratios[k - p->ns + 1]), size = p->sizes[0];
    bw = size * (float)p->h / (float)p->w * ratio / 2;
    bh = size / ratio / 2;
  }
  o[0] = cx - bw, o[1] = cy - bh, o[2] = cx + bw, o[3] = cy + bh;
  if (p->clip)
    for (int i = 0; i < 4; i++) o[i] = o[i] < 0.f ? 0.f : o[i] > 1.f ? 1.f : o[i];
}

#define DET_T float
#define DET_SFX _f
#define DET_EXP expf

#include "detect_impl.h"
#define DET_T double
#define DET_SFX _d
#define DET_EXP exp

#include "detect_impl.h"

#endif
