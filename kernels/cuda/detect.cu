/* detect.cu — CUDA kernels of the detection operators (cu_detect.h) over the shared
 * algorithms of kernels/detect_core.h: one thread per element for MultiBoxPrior, box_iou
 * and box_nms's gradient scatter (each output row owns its input row, no atomics); one
 * thread per batch item for box_nms, bipartite_matching, MultiBoxTarget and
 * MultiBoxDetection, so results match the CPU's exactly in order. */
#include "cu_detect.h"
#include "cu_util.cuh"
#include "cuda_common.cuh"

#define DET_KERNELS(T, S)                                                                         \
  __global__ void k_prior##S(lmx_det_prior p, int64_t n, T *out) {                                \
    LMX_CU_GRID_LOOP(a, n) {                                                                      \
      float o[4];                                                                                 \
      lmx_det_prior_box(&p, a, o);                                                                \
      for (int i = 0; i < 4; i++) out[a * 4 + i] = (T)o[i];                                       \
    }                                                                                             \
  }                                                                                               \
  __global__ void k_iou##S(int64_t nl, int64_t nr, int fmt, const T *l, const T *r, T *out) {     \
    LMX_CU_GRID_LOOP(e, nl *nr) out[e] = lmx_det_iou##S(l + e / nr * 4, r + e % nr * 4, fmt);     \
  }                                                                                               \
  __global__ void k_nms##S(lmx_det_nms p, const T *x, T *out, T *rec, unsigned char *ws,          \
                           int64_t per) {                                                         \
    LMX_CU_GRID_LOOP(b, p.nb) {                                                                   \
      int32_t *idx = (int32_t *)(ws + b * per);                                                   \
      lmx_det_nms_item##S(&p, b, x, out, rec, idx, idx + p.n);                                    \
    }                                                                                             \
  }                                                                                               \
  __global__ void k_zero##S(int64_t n, T *p) {                                                    \
    LMX_CU_GRID_LOOP(i, n) p[i] = 0;                                                              \
  }                                                                                               \
  __global__ void k_nms_bwd##S(int64_t rows, int64_t w, const T *og, const T *rec, T *gx) {       \
    LMX_CU_GRID_LOOP(i, rows) {                                                                   \
      T r = rec[i];                                                                               \
      if (r >= 0 && r < (T)rows)                                                                  \
        for (int64_t j = 0; j < w; j++) gx[(int64_t)r * w + j] += og[i * w + j];                  \
    }                                                                                             \
  }                                                                                               \
  __global__ void k_match##S(lmx_det_match p, const T *x, T *rowm, T *colm, unsigned char *ws,    \
                             int64_t per) {                                                       \
    LMX_CU_GRID_LOOP(b, p.nb) {                                                                   \
      int32_t *idx = (int32_t *)(ws + b * per);                                                   \
      lmx_det_match_item##S(&p, b, x, rowm, colm, idx, idx + p.n * p.m);                          \
    }                                                                                             \
  }                                                                                               \
  __global__ void k_target##S(lmx_det_target p, const T *anchor, const T *label,                  \
                              const T *cls_pred, T *loc_t, T *loc_m, T *cls_t, unsigned char *ws, \
                              int64_t per) {                                                      \
    LMX_CU_GRID_LOOP(b, p.nb)                                                                     \
    lmx_det_target_item##S(&p, b, anchor, label, cls_pred, loc_t, loc_m, cls_t, ws + b * per);    \
  }                                                                                               \
  __global__ void k_detect##S(lmx_det_detect p, const T *cls_prob, const T *loc_pred,             \
                              const T *anchor, T *out, unsigned char *ws, int64_t per) {          \
    LMX_CU_GRID_LOOP(b, p.nb)                                                                     \
    lmx_det_detect_item##S(&p, b, cls_prob, loc_pred, anchor, out, ws + b * per);                 \
  }

DET_KERNELS(float, _f)
DET_KERNELS(double, _d)

#define DET_GO(dt, F, D) \
  switch (dt) {          \
    case LMX_FLOAT32: {  \
      F;                 \
    } break;             \
    case LMX_FLOAT64: {  \
      D;                 \
    } break;             \
    default:             \
      return -1;         \
  }                      \
  return lmx_cu_last_error()

int lmx_cu_det_prior(lmx_cu_stream s, int dt, const lmx_det_prior *p, void *out) {
  int64_t n = p->h * p->w * (p->ns + p->nr - 1);
  DET_GO(dt, LMX_LAUNCH(k_prior_f, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, *p, n, (float *)out),
         LMX_LAUNCH(k_prior_d, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, *p, n, (double *)out));
}

int lmx_cu_det_iou(lmx_cu_stream s, int dt, int64_t nl, int64_t nr, int fmt, const void *lhs,
                   const void *rhs, void *out) {
  if (nl * nr == 0) return 0;
  DET_GO(dt,
         LMX_LAUNCH(k_iou_f, lmx_cu_blocks(nl * nr), LMX_CU_THREADS, 0, s, nl, nr, fmt,
                    (const float *)lhs, (const float *)rhs, (float *)out),
         LMX_LAUNCH(k_iou_d, lmx_cu_blocks(nl * nr), LMX_CU_THREADS, 0, s, nl, nr, fmt,
                    (const double *)lhs, (const double *)rhs, (double *)out));
}

int lmx_cu_det_nms(lmx_cu_stream s, int dt, const lmx_det_nms *p, const void *x, void *out,
                   void *rec, void *ws) {
  if (p->nb * p->n == 0) return 0;
  int64_t per = lmx_det_ws_nms(p->n);
  DET_GO(dt,
         LMX_LAUNCH(k_nms_f, lmx_cu_blocks(p->nb), LMX_CU_THREADS, 0, s, *p, (const float *)x,
                    (float *)out, (float *)rec, (unsigned char *)ws, per),
         LMX_LAUNCH(k_nms_d, lmx_cu_blocks(p->nb), LMX_CU_THREADS, 0, s, *p, (const double *)x,
                    (double *)out, (double *)rec, (unsigned char *)ws, per));
}

int lmx_cu_det_nms_bwd(lmx_cu_stream s, int dt, int64_t rows, int64_t w, const void *og,
                       const void *rec, void *gx, int acc) {
  if (rows * w == 0) return 0;
  DET_GO(dt, if (!acc) LMX_LAUNCH(k_zero_f, lmx_cu_blocks(rows * w), LMX_CU_THREADS, 0, s, rows * w,
                                  (float *)gx);
         LMX_LAUNCH(k_nms_bwd_f, lmx_cu_blocks(rows), LMX_CU_THREADS, 0, s, rows, w,
                    (const float *)og, (const float *)rec, (float *)gx),
         if (!acc) LMX_LAUNCH(k_zero_d, lmx_cu_blocks(rows * w), LMX_CU_THREADS, 0, s, rows * w,
                              (double *)gx);
         LMX_LAUNCH(k_nms_bwd_d, lmx_cu_blocks(rows), LMX_CU_THREADS, 0, s, rows, w,
                    (const double *)og, (const double *)rec, (double *)gx));
}

int lmx_cu_det_match(lmx_cu_stream s, int dt, const lmx_det_match *p, const void *x, void *rowm,
                     void *colm, void *ws) {
  if (p->nb == 0) return 0;
  int64_t per = lmx_det_ws_match(p->n, p->m);
  DET_GO(dt,
         LMX_LAUNCH(k_match_f, lmx_cu_blocks(p->nb), LMX_CU_THREADS, 0, s, *p, (const float *)x,
                    (float *)rowm, (float *)colm, (unsigned char *)ws, per),
         LMX_LAUNCH(k_match_d, lmx_cu_blocks(p->nb), LMX_CU_THREADS, 0, s, *p, (const double *)x,
                    (double *)rowm, (double *)colm, (unsigned char *)ws, per));
}

int lmx_cu_det_target(lmx_cu_stream s, int dt, const lmx_det_target *p, const void *anchor,
                      const void *label, const void *cls_pred, void *loc_t, void *loc_m,
                      void *cls_t, void *ws) {
  if (p->nb == 0) return 0;
  int64_t per = lmx_det_ws_target(p->na, p->nl, dt == LMX_FLOAT64 ? 8 : 4);
  DET_GO(dt,
         LMX_LAUNCH(k_target_f, lmx_cu_blocks(p->nb), LMX_CU_THREADS, 0, s, *p,
                    (const float *)anchor, (const float *)label, (const float *)cls_pred,
                    (float *)loc_t, (float *)loc_m, (float *)cls_t, (unsigned char *)ws, per),
         LMX_LAUNCH(k_target_d, lmx_cu_blocks(p->nb), LMX_CU_THREADS, 0, s, *p,
                    (const double *)anchor, (const double *)label, (const double *)cls_pred,
                    (double *)loc_t, (double *)loc_m, (double *)cls_t, (unsigned char *)ws, per));
}

int lmx_cu_det_detect(lmx_cu_stream s, int dt, const lmx_det_detect *p, const void *cls_prob,
                      const void *loc_pred, const void *anchor, void *out, void *ws) {
  if (p->nb == 0) return 0;
  int64_t per = lmx_det_ws_detect(p->na, dt == LMX_FLOAT64 ? 8 : 4);
  DET_GO(dt,
         LMX_LAUNCH(k_detect_f, lmx_cu_blocks(p->nb), LMX_CU_THREADS, 0, s, *p,
                    (const float *)cls_prob, (const float *)loc_pred, (const float *)anchor,
                    (float *)out, (unsigned char *)ws, per),
         LMX_LAUNCH(k_detect_d, lmx_cu_blocks(p->nb), LMX_CU_THREADS, 0, s, *p,
                    (const double *)cls_prob, (const double *)loc_pred, (const double *)anchor,
                    (double *)out, (unsigned char *)ws, per));
}
