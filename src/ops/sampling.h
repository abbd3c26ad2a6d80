/* sampling.h — parameters and shape plans of the spatial sampling and ROI operators
 * (issue 14, ops14f): GridGenerator, BilinearSampler, SpatialTransformer
 * (nn_sampling.c), ROIPooling, _contrib_ROIAlign and _contrib_PSROIPooling (nn_roi.c), shared by
 * the CPU and CUDA glue (src/ops/cpu/sampling.c, src/ops/cuda/sampling.c).
 */
#ifndef LMX_OPS_SAMPLING_H
#define LMX_OPS_SAMPLING_H

#include "../../kernels/sampling_impl.h"
#include "op.h"

enum { LMX_GG_AFFINE = 0, LMX_GG_WARP = 1 };

typedef struct {
  int transform_type; /* LMX_GG_AFFINE / LMX_GG_WARP */
  lmx_shape target_shape;
} lmx_gridgen_param;

typedef struct {
  int cudnn_off; /* optional bool; luamx has no cuDNN sampler, so it changes nothing */
} lmx_bsampler_param;

typedef struct {
  lmx_shape target_shape;
  int transform_type, sampler_type; /* only affine / bilinear */
  int cudnn_off;
} lmx_stn_param;

typedef struct {
  lmx_shape pooled_size;
  double spatial_scale;
} lmx_roipool_param;

typedef struct {
  lmx_shape pooled_size;
  double spatial_scale;
  int64_t sample_ratio;
  int position_sensitive, aligned;
} lmx_roialign_param;

typedef struct {
  double spatial_scale;
  int64_t output_dim, pooled_size, group_size; /* group_size 0: pooled_size */
} lmx_psroi_param;

enum { LMX_ROI_POOL = 0, LMX_ROI_ALIGN = 1, LMX_ROI_PS = 2 };

/* Output shape (N, 2, H, W) of GridGenerator for data d. */
int lmx_gridgen_plan(const lmx_op_ctx *c, const lmx_shape *d, lmx_shape *o);
/* BilinearSampler: the geometry of data d and grid gr (fails naming the input). */
int lmx_bsampler_plan(const lmx_op_ctx *c, const lmx_shape *d, const lmx_shape *gr,
                      lmx_smp_geom *g);
/* SpatialTransformer: the sampler geometry of data d and loc l. */
int lmx_stn_plan(const lmx_op_ctx *c, const lmx_shape *d, const lmx_shape *l, lmx_smp_geom *g);
/* ROIPooling / ROIAlign / PSROIPooling (kind LMX_ROI_*): the geometry of data d and rois r. */
int lmx_roi_plan(const lmx_op_ctx *c, int kind, const lmx_shape *d, const lmx_shape *r,
                 lmx_roi_geom *g);

#endif
