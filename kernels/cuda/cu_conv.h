/* cu_conv.h — CUDA launchers for convolution lowering and pooling (kernels/cpu/conv.c,
 * pool.c), same arguments after the stream; device pointers. Geometry is the CPU's
 * lmx_cpu_geom (1-D / 2-D normalized to 3-D by lmx_cpu_geom_norm; the launchers
 * normalize a copy, so either form is accepted). dtypes: float32, float64 and float16
 * (storage; float arithmetic). Return 0, a cudaError_t code, or -1 (dtype / pool type). */
#ifndef LMX_KERNELS_CU_CONV_H
#define LMX_KERNELS_CU_CONV_H

#include "cu_base.h"

LMX_CU_BEGIN
#include "../cpu/cpu_kernels.h" /* lmx_cpu_geom, LMX_POOL_* */

/* col[C*K, nimg*O] (row stride ld >= nimg*O; image n at columns n*O) <- patches of
 * x[nimg, C, in...]; padding reads as 0. One thread per col element. */
int lmx_cu_im2col(lmx_cu_stream s, int dt, const lmx_cpu_geom *g, int64_t C, int64_t nimg,
                  const void *x, void *col, int64_t ld);
/* x[nimg, C, in...] += the transpose of im2col applied to col[C*K, nimg*O] (row stride
 * ld). One thread per image element gathers its col entries (kernel positions in order),
 * so there are no atomics and the result does not depend on the launch. */
int lmx_cu_col2im(lmx_cu_stream s, int dt, const lmx_cpu_geom *g, int64_t C, int64_t nimg,
                  const void *col, void *x, int64_t ld);

/* y[planes, out...] (+)= pooling (LMX_POOL_*) of x[planes, in...]; windows, divisors and
 * the first-maximum rule exactly as kernels/cpu/pool.c (one thread per output). */
int lmx_cu_pool(lmx_cu_stream s, int type, int p_value, int dt, const lmx_cpu_geom *g,
                int include_pad, int64_t planes, const void *x, void *y, int acc);
/* gx[planes, in...] (+)= gradient from gy[planes, out...], x and, for lp, y (else NULL).
 * One thread per input element adds the shares of the windows covering it in output
 * order, the CPU's order, so float32 results equal the CPU's; max sends each window's
 * gradient to the first maximum in scan order (ties as on the CPU). acc = 0 overwrites. */
int lmx_cu_pool_bwd(lmx_cu_stream s, int type, int p_value, int dt, const lmx_cpu_geom *g,
                    int include_pad, int64_t planes, void *gx, const void *gy, const void *x,
                    const void *y, int acc);

/* Direct depthwise convolution (kernels/cpu/dwconv.c's arguments): x[N, C, in...],
 * w[C m, 1, kernel...] (any number of taps), b[C m] or NULL, y[N, C m, out...]. Forward:
 * one thread per output (bias, then the taps in order); data gradient: one thread per
 * input element gathers its m filters' taps in order; weight and bias gradients: one
 * block per filter, a deterministic block reduction per tap. acc* = 1 adds. */
int lmx_cu_dwconv_fwd(lmx_cu_stream s, int dt, const lmx_cpu_geom *g, int64_t N, int64_t C,
                      int64_t m, const void *x, const void *w, const void *b, void *y, int acc);
int lmx_cu_dwconv_bwd_data(lmx_cu_stream s, int dt, const lmx_cpu_geom *g, int64_t N,
                           int64_t C, int64_t m, const void *w, const void *gy, void *gx,
                           int acc);
int lmx_cu_dwconv_bwd_wb(lmx_cu_stream s, int dt, const lmx_cpu_geom *g, int64_t N, int64_t C,
                         int64_t m, const void *x, const void *gy, void *gw, void *gb,
                         int accw, int accb);

LMX_CU_END

#endif
