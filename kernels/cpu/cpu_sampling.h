/* cpu_sampling.h — CPU kernels of GridGenerator, BilinearSampler, ROIPooling,
 * ROIAlign and PSROIPooling (kernels/cpu/sampling.c; the arithmetic is kernels/sampling_impl.h,
 * shared with the CUDA kernels). float32 / float64; each returns 0, or -1 for another dtype. acc:
 * add into the destination instead of writing it.
 */
#ifndef LMX_KERNELS_CPU_SAMPLING_H
#define LMX_KERNELS_CPU_SAMPLING_H

#include "../sampling_impl.h"

/* GridGenerator of N grids (N, 2, H, W): forward from theta (N, 6) (warp: from the flow
 * (N, 2, H, W)) into grid; backward from the grid's gradient into theta's (flow's). */
int lmx_cpu_gridgen_fwd(int dt, int warp, int64_t N, int64_t H, int64_t W, const void *src,
                        void *grid);
int lmx_cpu_gridgen_bwd(int dt, int warp, int64_t N, int64_t H, int64_t W, const void *ggrid,
                        void *gsrc, int acc);
/* BilinearSampler; backward's gx or ggrid may be NULL (not wanted). */
int lmx_cpu_bsampler_fwd(int dt, const lmx_smp_geom *g, const void *x, const void *grid, void *y);
int lmx_cpu_bsampler_bwd(int dt, const lmx_smp_geom *g, const void *x, const void *grid,
                         const void *gy, void *gx, int acc_x, void *ggrid, int acc_grid);
/* ROIPooling (arg: the argmax positions, as the data's dtype), ROIAlign, PSROIPooling. */
int lmx_cpu_roipool_fwd(int dt, const lmx_roi_geom *g, const void *x, const void *rois, void *y,
                        void *arg);
int lmx_cpu_roipool_bwd(int dt, const lmx_roi_geom *g, const void *rois, const void *arg,
                        const void *gy, void *gx, int acc);
int lmx_cpu_roialign_fwd(int dt, const lmx_roi_geom *g, const void *x, const void *rois, void *y);
int lmx_cpu_psroi_fwd(int dt, const lmx_roi_geom *g, const void *x, const void *rois, void *y);
int lmx_cpu_psroi_bwd(int dt, const lmx_roi_geom *g, const void *rois, const void *gy, void *gx,
                      int acc);
int lmx_cpu_roialign_bwd(int dt, const lmx_roi_geom *g, const void *rois, const void *gy, void *gx,
                         int acc);

#endif
