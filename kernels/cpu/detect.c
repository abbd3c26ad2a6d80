/* detect.c — CPU kernels of the detection operators (issue 14): the per-item algorithms
 * of kernels/detect_core.h, batch items (or elements) in parallel, float32 / float64. */
#include <string.h>

#include "../../src/luamx.h"
#include "cpu_detect.h"
#include "cpu_par.h"

#define DET_DISPATCH(dt, F, D) \
  switch (dt) {                \
    case LMX_FLOAT32: {        \
      F;                       \
    }                          \
      return 0;                \
    case LMX_FLOAT64: {        \
      D;                       \
    }                          \
      return 0;                \
    default:                   \
      return -1;               \
  }

int lmx_cpu_det_prior(int dt, const lmx_det_prior *p, void *out) {
  int64_t n = p->h * p->w * (p->ns + p->nr - 1);
  DET_DISPATCH(dt,
               LMX_PAR_FOR(n, a,
                           {
                             float o[4];
                             lmx_det_prior_box(p, a, o);
                             for (int i = 0; i < 4; i++) ((float *)out)[a * 4 + i] = o[i];
                           }),
               LMX_PAR_FOR(n, a, {
                 float o[4];
                 lmx_det_prior_box(p, a, o);
                 for (int i = 0; i < 4; i++) ((double *)out)[a * 4 + i] = o[i];
               }))
}

int lmx_cpu_det_iou(int dt, int64_t nl, int64_t nr, int fmt, const void *lhs, const void *rhs,
                    void *out) {
  DET_DISPATCH(dt,
               LMX_PAR_FOR(nl * nr, e,
                           {
                             ((float *)out)[e] =
                                 lmx_det_iou_f((const float *)lhs + e / nr * 4,
                                               (const float *)rhs + e % nr * 4, fmt);
                           }),
               LMX_PAR_FOR(nl * nr, e, {
                 ((double *)out)[e] = lmx_det_iou_d((const double *)lhs + e / nr * 4,
                                                    (const double *)rhs + e % nr * 4, fmt);
               }))
}

int lmx_cpu_det_nms(int dt, const lmx_det_nms *p, const void *x, void *out, void *rec, void *ws) {
  int64_t per = lmx_det_ws_nms(p->n);
#define ITEM(S, T)                                                                \
  LMX_PAR_FOR_W(p->nb, p->n * p->n, b, {                                          \
    int32_t *idx = (int32_t *)((unsigned char *)ws + b * per);                    \
    lmx_det_nms_item##S(p, b, (const T *)x, (T *)out, (T *)rec, idx, idx + p->n); \
  })
  DET_DISPATCH(dt, ITEM(_f, float), ITEM(_d, double))
#undef ITEM
}

int lmx_cpu_det_nms_bwd(int dt, int64_t rows, int64_t w, const void *og, const void *rec, void *gx,
                        int acc) {
#define SCATTER(T)                                                                                 \
  if (!acc) memset(gx, 0, (size_t)(rows * w) * sizeof(T));                                         \
  LMX_PAR_FOR_W(rows, w, i, {                                                                      \
    double r = ((const T *)rec)[i];                                                                \
    if (r >= 0 && r < (double)rows)                                                                \
      for (int64_t j = 0; j < w; j++) ((T *)gx)[(int64_t)r * w + j] += ((const T *)og)[i * w + j]; \
  })
  DET_DISPATCH(dt, SCATTER(float), SCATTER(double))
#undef SCATTER
}

int lmx_cpu_det_match(int dt, const lmx_det_match *p, const void *x, void *rowm, void *colm,
                      void *ws) {
  int64_t per = lmx_det_ws_match(p->n, p->m), nm = p->n * p->m;
#define ITEM(S, T)                                                                  \
  LMX_PAR_FOR_W(p->nb, nm * 8, b, {                                                 \
    int32_t *idx = (int32_t *)((unsigned char *)ws + b * per);                      \
    lmx_det_match_item##S(p, b, (const T *)x, (T *)rowm, (T *)colm, idx, idx + nm); \
  })
  DET_DISPATCH(dt, ITEM(_f, float), ITEM(_d, double))
#undef ITEM
}

int lmx_cpu_det_target(int dt, const lmx_det_target *p, const void *anchor, const void *label,
                       const void *cls_pred, void *loc_t, void *loc_m, void *cls_t, void *ws) {
  int64_t per = lmx_det_ws_target(p->na, p->nl, dt == LMX_FLOAT64 ? 8 : 4);
#define ITEM(S, T)                                                                             \
  LMX_PAR_FOR_W(p->nb, p->na * p->nl * 8, b, {                                                 \
    lmx_det_target_item##S(p, b, (const T *)anchor, (const T *)label, (const T *)cls_pred,     \
                           (T *)loc_t, (T *)loc_m, (T *)cls_t, (unsigned char *)ws + b * per); \
  })
  DET_DISPATCH(dt, ITEM(_f, float), ITEM(_d, double))
#undef ITEM
}

int lmx_cpu_det_detect(int dt, const lmx_det_detect *p, const void *cls_prob, const void *loc_pred,
                       const void *anchor, void *out, void *ws) {
  int64_t per = lmx_det_ws_detect(p->na, dt == LMX_FLOAT64 ? 8 : 4);
#define ITEM(S, T)                                                                            \
  LMX_PAR_FOR_W(p->nb, p->na * p->nc, b, {                                                    \
    lmx_det_detect_item##S(p, b, (const T *)cls_prob, (const T *)loc_pred, (const T *)anchor, \
                           (T *)out, (unsigned char *)ws + b * per);                          \
  })
  DET_DISPATCH(dt, ITEM(_f, float), ITEM(_d, double))
#undef ITEM
}
