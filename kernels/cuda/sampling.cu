/* sampling.cu — CUDA kernels of GridGenerator, BilinearSampler, ROIPooling, ROIAlign and
 * PSROIPooling (cu_sampling.h): one thread per output element, grid point or theta entry calling
 * kernels/sampling_impl.h's functions, the CPU's own arithmetic. Data gradients take one
 * thread per (n, c) plane walking the outputs that read it in the CPU's order: no
 * atomics, deterministic, equal to the CPU, but only N C threads (a known cost of
 * large planes). float32 / float64.
 */
#include "cuda_common.cuh"
#include "cu_sampling.h"
#include "cu_util.cuh"
#include "../sampling_impl.h"

LMX_SAMPLING_DEFINE(float, f32)
LMX_SAMPLING_DEFINE(double, f64)

/* Runs BODY with T and the function suffix S bound for float32 / float64. */
#define SMP_DISPATCH(dt, BODY)                      \
  switch (dt) {                                     \
    case LMX_FLOAT32: BODY(float, f32); break;      \
    case LMX_FLOAT64: BODY(double, f64); break;     \
    default: return -1;                             \
  }

#define SMP_KERNELS(T, S)                                                                    \
  __global__ void k_gg_fwd_##S(int warp, int64_t N, int64_t H, int64_t W, const T *src,       \
                               T *grid) {                                                    \
    LMX_CU_GRID_LOOP(e, N * 2 * H * W) {                                                     \
      if (warp) lmx_gg_warp_fwd_##S(H, W, e, src, grid);                                     \
      else lmx_gg_affine_fwd_##S(H, W, e, src, grid);                                        \
    }                                                                                        \
  }                                                                                          \
  __global__ void k_gg_warp_bwd_##S(int64_t N, int64_t H, int64_t W, const T *gg, T *gs,      \
                                    int acc) {                                               \
    LMX_CU_GRID_LOOP(e, N * 2 * H * W) {                                                     \
      double v = (double)gg[e] * lmx_gg_warp_scale_##S(H, W, e);                             \
      gs[e] = (T)(acc ? (double)gs[e] + v : v);                                              \
    }                                                                                        \
  }                                                                                          \
  __global__ void k_gg_affine_bwd_##S(int64_t N, int64_t H, int64_t W, const T *gg, T *gs,    \
                                      int acc) {                                             \
    LMX_CU_GRID_LOOP(j, N * 6) { lmx_gg_affine_bwd_##S(H, W, j, gg, gs, acc); }              \
  }                                                                                          \
  __global__ void k_bs_fwd_##S(lmx_smp_geom g, const T *x, const T *grid, T *y) {            \
    LMX_CU_GRID_LOOP(e, g.N * g.C * g.OH * g.OW) { lmx_bs_fwd_##S(&g, e, x, grid, y); }      \
  }                                                                                          \
  __global__ void k_bs_bwd_data_##S(lmx_smp_geom g, const T *grid, const T *gy, T *gx,       \
                                    int acc) {                                               \
    LMX_CU_GRID_LOOP(p, g.N * g.C) { lmx_bs_bwd_data_##S(&g, p, grid, gy, gx, acc); }        \
  }                                                                                          \
  __global__ void k_bs_bwd_grid_##S(lmx_smp_geom g, const T *x, const T *grid, const T *gy,  \
                                    T *gg, int acc) {                                        \
    LMX_CU_GRID_LOOP(q, g.N * g.OH * g.OW) { lmx_bs_bwd_grid_##S(&g, q, x, grid, gy, gg, acc); } \
  }                                                                                          \
  __global__ void k_rp_fwd_##S(lmx_roi_geom g, const T *x, const T *rois, T *y, T *arg) {    \
    LMX_CU_GRID_LOOP(e, g.R * g.C * g.PH * g.PW) { lmx_roipool_fwd_##S(&g, e, x, rois, y, arg); } \
  }                                                                                          \
  __global__ void k_rp_bwd_##S(lmx_roi_geom g, const T *rois, const T *arg, const T *gy,     \
                               T *gx, int acc) {                                             \
    LMX_CU_GRID_LOOP(p, g.N * g.C) { lmx_roipool_bwd_##S(&g, p, rois, arg, gy, gx, acc); }   \
  }                                                                                          \
  __global__ void k_ra_fwd_##S(lmx_roi_geom g, const T *x, const T *rois, T *y) {            \
    LMX_CU_GRID_LOOP(e, g.R * g.Cout * g.PH * g.PW) { lmx_roialign_fwd_##S(&g, e, x, rois, y); } \
  }                                                                                          \
  __global__ void k_ps_fwd_##S(lmx_roi_geom g, const T *x, const T *rois, T *y) {            \
    LMX_CU_GRID_LOOP(e, g.R * g.Cout * g.PH * g.PW) { lmx_psroi_fwd_##S(&g, e, x, rois, y); }  \
  }                                                                                          \
  __global__ void k_ps_bwd_##S(lmx_roi_geom g, const T *rois, const T *gy, T *gx, int acc) { \
    LMX_CU_GRID_LOOP(p, g.N * g.C) { lmx_psroi_bwd_##S(&g, p, rois, gy, gx, acc); }          \
  }                                                                                          \
  __global__ void k_ra_bwd_##S(lmx_roi_geom g, const T *rois, const T *gy, T *gx, int acc) { \
    LMX_CU_GRID_LOOP(p, g.N * g.C) { lmx_roialign_bwd_##S(&g, p, rois, gy, gx, acc); }       \
  }

SMP_KERNELS(float, f32)
SMP_KERNELS(double, f64)

#define GO(kern, n, ...)                                                                 \
  do {                                                                                   \
    if ((n) > 0) LMX_LAUNCH(kern, lmx_cu_blocks(n), LMX_CU_THREADS, 0, s, __VA_ARGS__);  \
  } while (0)

int lmx_cu_gridgen_fwd(lmx_cu_stream s, int dt, int warp, int64_t N, int64_t H, int64_t W,
                       const void *src, void *grid) {
#define B_GGF(T, S) GO(k_gg_fwd_##S, N * 2 * H * W, warp, N, H, W, (const T *)src, (T *)grid)
  SMP_DISPATCH(dt, B_GGF)
  return lmx_cu_last_error();
}

int lmx_cu_gridgen_bwd(lmx_cu_stream s, int dt, int warp, int64_t N, int64_t H, int64_t W,
                       const void *ggrid, void *gsrc, int acc) {
#define B_GGB(T, S)                                                                        \
  if (warp) GO(k_gg_warp_bwd_##S, N * 2 * H * W, N, H, W, (const T *)ggrid, (T *)gsrc, acc); \
  else GO(k_gg_affine_bwd_##S, N * 6, N, H, W, (const T *)ggrid, (T *)gsrc, acc)
  SMP_DISPATCH(dt, B_GGB)
  return lmx_cu_last_error();
}

int lmx_cu_bsampler_fwd(lmx_cu_stream s, int dt, lmx_smp_geom g, const void *x,
                        const void *grid, void *y) {
#define B_BSF(T, S) \
  GO(k_bs_fwd_##S, g.N * g.C * g.OH * g.OW, g, (const T *)x, (const T *)grid, (T *)y)
  SMP_DISPATCH(dt, B_BSF)
  return lmx_cu_last_error();
}

int lmx_cu_bsampler_bwd(lmx_cu_stream s, int dt, lmx_smp_geom g, const void *x,
                        const void *grid, const void *gy, void *gx, int acc_x, void *ggrid,
                        int acc_grid) {
#define B_BSB(T, S)                                                                          \
  if (gx) GO(k_bs_bwd_data_##S, g.N * g.C, g, (const T *)grid, (const T *)gy, (T *)gx, acc_x); \
  if (ggrid)                                                                                 \
    GO(k_bs_bwd_grid_##S, g.N * g.OH * g.OW, g, (const T *)x, (const T *)grid,               \
       (const T *)gy, (T *)ggrid, acc_grid)
  SMP_DISPATCH(dt, B_BSB)
  return lmx_cu_last_error();
}

int lmx_cu_roipool_fwd(lmx_cu_stream s, int dt, lmx_roi_geom g, const void *x, const void *rois,
                       void *y, void *arg) {
#define B_RPF(T, S)                                                                     \
  GO(k_rp_fwd_##S, g.R * g.C * g.PH * g.PW, g, (const T *)x, (const T *)rois, (T *)y, \
     (T *)arg)
  SMP_DISPATCH(dt, B_RPF)
  return lmx_cu_last_error();
}

int lmx_cu_roipool_bwd(lmx_cu_stream s, int dt, lmx_roi_geom g, const void *rois,
                       const void *arg, const void *gy, void *gx, int acc) {
#define B_RPB(T, S)                                                                        \
  GO(k_rp_bwd_##S, g.N * g.C, g, (const T *)rois, (const T *)arg, (const T *)gy, (T *)gx, \
     acc)
  SMP_DISPATCH(dt, B_RPB)
  return lmx_cu_last_error();
}

int lmx_cu_roialign_fwd(lmx_cu_stream s, int dt, lmx_roi_geom g, const void *x,
                        const void *rois, void *y) {
#define B_RAF(T, S) \
  GO(k_ra_fwd_##S, g.R * g.Cout * g.PH * g.PW, g, (const T *)x, (const T *)rois, (T *)y)
  SMP_DISPATCH(dt, B_RAF)
  return lmx_cu_last_error();
}

int lmx_cu_roialign_bwd(lmx_cu_stream s, int dt, lmx_roi_geom g, const void *rois,
                        const void *gy, void *gx, int acc) {
#define B_RAB(T, S) GO(k_ra_bwd_##S, g.N * g.C, g, (const T *)rois, (const T *)gy, (T *)gx, acc)
  SMP_DISPATCH(dt, B_RAB)
  return lmx_cu_last_error();
}

int lmx_cu_psroi_fwd(lmx_cu_stream s, int dt, lmx_roi_geom g, const void *x, const void *rois,
                     void *y) {
#define B_PSF(T, S) \
  GO(k_ps_fwd_##S, g.R * g.Cout * g.PH * g.PW, g, (const T *)x, (const T *)rois, (T *)y)
  SMP_DISPATCH(dt, B_PSF)
  return lmx_cu_last_error();
}

int lmx_cu_psroi_bwd(lmx_cu_stream s, int dt, lmx_roi_geom g, const void *rois, const void *gy,
                     void *gx, int acc) {
#define B_PSB(T, S) GO(k_ps_bwd_##S, g.N * g.C, g, (const T *)rois, (const T *)gy, (T *)gx, acc)
  SMP_DISPATCH(dt, B_PSB)
  return lmx_cu_last_error();
}
