/* nn_plan.h — dims and geometry of the GEMM-shaped operators (FullyConnected, dot,
 * batch_dot, Convolution, Deconvolution, Pooling, BatchNorm / LayerNorm, RNN), computed
 * from shapes and typed parameters once for every backend: the CPU glue (src/ops/cpu)
 * and the CUDA glue (src/ops/cuda) call these and keep only what is their own (which
 * dtypes their kernels take, workspace layout, chunking). Each check fails through
 * lmx_op_fail with the op, node, argument, expected and actual; none reads tensor data.
 */
#ifndef LMX_OPS_NN_PLAN_H
#define LMX_OPS_NN_PLAN_H

#include "../../kernels/cpu/cpu_kernels.h"
#include "op.h"

/* FullyConnected: data read as x[m, k], weight [n, k], bias [n] (when !no_bias); checks
 * that data is a matrix and weight / bias have data's dtype and these shapes. */
typedef struct {
  int64_t m, k, n;
  int bias;
} lmx_fc_dims;
int lmx_fc_plan(const lmx_op_ctx *c, const lmx_tensor *in, lmx_fc_dims *d);

/* dot / batch_dot: C[batch][m, n] = op(A)·op(B) with k the reduction dim (shapes only;
 * the dtypes are the backend's). */
typedef struct {
  int64_t batch, m, n, k;
  int ta, tb;
} lmx_mm_dims;
int lmx_mm_plan(const lmx_op_ctx *c, const lmx_tensor *in, int batched, lmx_mm_dims *d);

/* Convolution / Deconvolution in the "convolution view": g (normalized to 3-D) maps the
 * image (conv: data; deconv: output) to the patch side; N images, C image channels,
 * F patch-side channels, G groups; per group CK = (C/G)·K rows of im2col; O / I output /
 * image volumes. Checks weight and bias shapes and dtypes and that data has its data. */
typedef struct {
  lmx_cpu_geom g;
  int64_t N, C, F, G, K, CK, O, I;
  int dt, deconv, bias;
} lmx_conv_dims;
int lmx_conv_plan(const lmx_op_ctx *c, int deconv, const lmx_tensor *in,
                  const lmx_shape *oshape, lmx_conv_dims *d);
/* The same from the image and patch-side shapes alone (dtype dt), without the weight and
 * bias checks (workspace sizing). */
int lmx_conv_dims_of(const lmx_op_ctx *c, int deconv, const lmx_shape *img,
                     const lmx_shape *pat, int dt, lmx_conv_dims *d);

/* Pooling x -> y: geometry (normalized), LMX_POOL_* type, count_include_pad, lp power
 * (None = 2); checks the conventions' output sizes. */
int lmx_pool_plan(const lmx_op_ctx *c, const lmx_shape *x, const lmx_shape *y, lmx_cpu_geom *g,
                  int *type, int *include_pad, int *p_value);

/* BatchNorm / LayerNorm layout: x read as [outer, C, inner] around `axis` (checked). */
int lmx_norm_plan(const lmx_op_ctx *c, const lmx_tensor *x, int64_t axis, int64_t *outer,
                  int64_t *C, int64_t *inner);

/* The fused RNN's description (mode, gates, L, D, T, N, In, H, drop) from data x (T, N, In)
 * and the parameters, for dtype dt. */
int lmx_rnn_plan(const lmx_op_ctx *c, const lmx_shape *x, int dt, lmx_cpu_rnn *r);

#endif
