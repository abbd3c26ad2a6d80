/* spatial.h — the shape plans of Pad and UpSampling (nn_spatial.c), shared by the CPU
 * and CUDA glue. */
#ifndef LMX_OPS_SPATIAL_H
#define LMX_OPS_SPATIAL_H

#include "op.h"
#include "op_params.h"

/* Pad: output shape o of data d (c->param is Pad's parameters); fails naming the op. */
int lmx_pad_plan(const lmx_op_ctx *c, const lmx_shape *d, lmx_shape *o);

/* UpSampling: output shape o of the nin inputs (all known); fails naming the input. */
int lmx_ups_plan(const lmx_op_ctx *c, const lmx_shape *in, int nin, lmx_shape *o);
/* Bilinear UpSampling's kernel size and its Deconvolution parameters for C channels. */
int64_t lmx_ups_kernel(int64_t scale);
void lmx_ups_deconv(const lmx_ups_param *p, int64_t C, lmx_conv_param *d);

#endif
