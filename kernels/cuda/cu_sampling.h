/* cu_sampling.h — CUDA launchers of GridGenerator, BilinearSampler, ROIPooling,
 * ROIAlign and PSROIPooling (kernels/cuda/sampling.cu), the twins of kernels/cpu/cpu_sampling.h
 * with the same arguments after the stream; every pointer is device memory. float32 / float64.
 * Return 0, a cudaError_t code from the launch, or -1 for another dtype.
 */
#ifndef LMX_KERNELS_CU_SAMPLING_H
#define LMX_KERNELS_CU_SAMPLING_H

#include "../sampling_impl.h"
#include "cu_base.h"

LMX_CU_BEGIN

int lmx_cu_gridgen_fwd(lmx_cu_stream s, int dt, int warp, int64_t N, int64_t H, int64_t W,
                       const void *src, void *grid);
int lmx_cu_gridgen_bwd(lmx_cu_stream s, int dt, int warp, int64_t N, int64_t H, int64_t W,
                       const void *ggrid, void *gsrc, int acc);
int lmx_cu_bsampler_fwd(lmx_cu_stream s, int dt, lmx_smp_geom g, const void *x, const void *grid,
                        void *y);
int lmx_cu_bsampler_bwd(lmx_cu_stream s, int dt, lmx_smp_geom g, const void *x, const void *grid,
                        const void *gy, void *gx, int acc_x, void *ggrid, int acc_grid);
int lmx_cu_roipool_fwd(lmx_cu_stream s, int dt, lmx_roi_geom g, const void *x, const void *rois,
                       void *y, void *arg);
int lmx_cu_roipool_bwd(lmx_cu_stream s, int dt, lmx_roi_geom g, const void *rois, const void *arg,
                       const void *gy, void *gx, int acc);
int lmx_cu_roialign_fwd(lmx_cu_stream s, int dt, lmx_roi_geom g, const void *x, const void *rois,
                        void *y);
int lmx_cu_roialign_bwd(lmx_cu_stream s, int dt, lmx_roi_geom g, const void *rois, const void *gy,
                        void *gx, int acc);

int lmx_cu_psroi_fwd(lmx_cu_stream s, int dt, lmx_roi_geom g, const void *x, const void *rois,
                     void *y);
int lmx_cu_psroi_bwd(lmx_cu_stream s, int dt, lmx_roi_geom g, const void *rois, const void *gy,
                     void *gx, int acc);

LMX_CU_END

#endif
