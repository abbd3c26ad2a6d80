/* sampling.c — CPU kernels of GridGenerator, BilinearSampler, ROIPooling, ROIAlign and
 * PSROIPooling:
 * the loops over kernels/sampling_impl.h's per-element functions, in parallel over
 * output elements (forward), over (n, c) planes (data gradients: each plane is written
 * by one iteration, so no two threads touch it) and over grid points or theta entries.
 */
#include "cpu_sampling.h"

#include "../../src/tensor/dtype.h"
#include "cpu_par.h"

LMX_SAMPLING_DEFINE(float, f32)
LMX_SAMPLING_DEFINE(double, f64)

#define DISPATCH(dt, CALL)            \
  do {                                \
    if ((dt) == LMX_FLOAT32) {        \
      CALL(float, f32);               \
    } else if ((dt) == LMX_FLOAT64) { \
      CALL(double, f64);              \
    } else {                          \
      return -1;                      \
    }                                 \
    return 0;                         \
  } while (0)

int lmx_cpu_gridgen_fwd(int dt, int warp, int64_t N, int64_t H, int64_t W, const void *src,
                        void *grid) {
#define GG_FWD(T, S)                                             \
  LMX_PAR_FOR(N * 2 * H * W, e, {                                \
    if (warp)                                                    \
      lmx_gg_warp_fwd_##S(H, W, e, (const T *)src, (T *)grid);   \
    else                                                         \
      lmx_gg_affine_fwd_##S(H, W, e, (const T *)src, (T *)grid); \
  })
  DISPATCH(dt, GG_FWD);
}

int lmx_cpu_gridgen_bwd(int dt, int warp, int64_t N, int64_t H, int64_t W, const void *ggrid,
                        void *gsrc, int acc) {
#define GG_BWD(T, S)                                                                      \
  if (warp) {                                                                             \
    LMX_PAR_FOR(N * 2 * H * W, e, {                                                       \
      T *o = (T *)gsrc + e;                                                               \
      double v = (double)((const T *)ggrid)[e] * lmx_gg_warp_scale_##S(H, W, e);          \
      *o = (T)(acc ? (double)*o + v : v);                                                 \
    });                                                                                   \
  } else {                                                                                \
    LMX_PAR_FOR_W(N * 6, H * W, j,                                                        \
                  { lmx_gg_affine_bwd_##S(H, W, j, (const T *)ggrid, (T *)gsrc, acc); }); \
  }
  DISPATCH(dt, GG_BWD);
}

int lmx_cpu_bsampler_fwd(int dt, const lmx_smp_geom *g, const void *x, const void *grid, void *y) {
#define BS_FWD(T, S)                                               \
  LMX_PAR_FOR_W(g->N * g->C * g->OH, g->OW, r, {                   \
    for (int64_t e = r * g->OW; e < (r + 1) * g->OW; e++)          \
      lmx_bs_fwd_##S(g, e, (const T *)x, (const T *)grid, (T *)y); \
  })
  DISPATCH(dt, BS_FWD);
}

int lmx_cpu_bsampler_bwd(int dt, const lmx_smp_geom *g, const void *x, const void *grid,
                         const void *gy, void *gx, int acc_x, void *ggrid, int acc_grid) {
#define BS_BWD(T, S)                                                                               \
  if (gx)                                                                                          \
    LMX_PAR_FOR_W(g->N * g->C, g->OH * g->OW, p,                                                   \
                  { lmx_bs_bwd_data_##S(g, p, (const T *)grid, (const T *)gy, (T *)gx, acc_x); }); \
  if (ggrid)                                                                                       \
  LMX_PAR_FOR_W(g->N * g->OH * g->OW, g->C, q, {                                                   \
    lmx_bs_bwd_grid_##S(g, q, (const T *)x, (const T *)grid, (const T *)gy, (T *)ggrid, acc_grid); \
  })
  DISPATCH(dt, BS_BWD);
}

int lmx_cpu_roipool_fwd(int dt, const lmx_roi_geom *g, const void *x, const void *rois, void *y,
                        void *arg) {
#define RP_FWD(T, S)                                \
  LMX_PAR_FOR_W(g->R * g->C * g->PH * g->PW, 16, e, \
                { lmx_roipool_fwd_##S(g, e, (const T *)x, (const T *)rois, (T *)y, (T *)arg); })
  DISPATCH(dt, RP_FWD);
}

int lmx_cpu_roipool_bwd(int dt, const lmx_roi_geom *g, const void *rois, const void *arg,
                        const void *gy, void *gx, int acc) {
#define RP_BWD(T, S)                                                                         \
  LMX_PAR_FOR_W(g->N * g->C, g->R * g->PH * g->PW, p, {                                      \
    lmx_roipool_bwd_##S(g, p, (const T *)rois, (const T *)arg, (const T *)gy, (T *)gx, acc); \
  })
  DISPATCH(dt, RP_BWD);
}

int lmx_cpu_roialign_fwd(int dt, const lmx_roi_geom *g, const void *x, const void *rois, void *y) {
#define RA_FWD(T, S)                                   \
  LMX_PAR_FOR_W(g->R * g->Cout * g->PH * g->PW, 16, e, \
                { lmx_roialign_fwd_##S(g, e, (const T *)x, (const T *)rois, (T *)y); })
  DISPATCH(dt, RA_FWD);
}

int lmx_cpu_roialign_bwd(int dt, const lmx_roi_geom *g, const void *rois, const void *gy, void *gx,
                         int acc) {
#define RA_BWD(T, S)                                  \
  LMX_PAR_FOR_W(g->N * g->C, g->R * g->PH * g->PW, p, \
                { lmx_roialign_bwd_##S(g, p, (const T *)rois, (const T *)gy, (T *)gx, acc); })
  DISPATCH(dt, RA_BWD);
}

int lmx_cpu_psroi_fwd(int dt, const lmx_roi_geom *g, const void *x, const void *rois, void *y) {
#define PS_FWD(T, S)                                   \
  LMX_PAR_FOR_W(g->R * g->Cout * g->PH * g->PW, 16, e, \
                { lmx_psroi_fwd_##S(g, e, (const T *)x, (const T *)rois, (T *)y); })
  DISPATCH(dt, PS_FWD);
}

int lmx_cpu_psroi_bwd(int dt, const lmx_roi_geom *g, const void *rois, const void *gy, void *gx,
                      int acc) {
#define PS_BWD(T, S)                                  \
  LMX_PAR_FOR_W(g->N * g->C, g->R * g->PH * g->PW, p, \
                { lmx_psroi_bwd_##S(g, p, (const T *)rois, (const T *)gy, (T *)gx, acc); })
  DISPATCH(dt, PS_BWD);
}
