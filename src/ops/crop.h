/* crop.h — the geometry of depth_to_space / space_to_depth and Crop (nn_crop.c), shared
 * by the CPU and CUDA glue. */
#ifndef LMX_OPS_CROP_H
#define LMX_OPS_CROP_H

#include "op.h"
#include "op_params.h"

/* depth_to_space's view: the small side (N, C b^2, H, W) and the large (N, C, H b, W b) */
typedef struct {
  int64_t N, C, H, W, b;
} lmx_d2s_geom;
/* to_depth 0: d is depth_to_space's input; 1: space_to_depth's. Fails naming the op. */
int lmx_d2s_plan(const lmx_op_ctx *c, int to_depth, const lmx_shape *d, lmx_d2s_geom *g);

/* Crop: planes (N C) of H x W cropped to h x w at (oy, ox) */
typedef struct {
  int64_t planes, H, W, h, w, oy, ox;
} lmx_crop_geom;
/* like: crop_like's shape (num_args 2) or NULL. Fails naming the op. */
int lmx_crop_plan(const lmx_op_ctx *c, const lmx_shape *d, const lmx_shape *like,
                  lmx_crop_geom *g);

#endif
