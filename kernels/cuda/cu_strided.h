/* cu_strided.h — CUDA launchers for index walks with per-operand strides: strided
 * copies (transpose, SwapAxis, slice, slice_axis, Concat / SliceChannel pieces,
 * broadcast_to), broadcasting binary ops and their gradients, reductions over any axes
 * and their gradients, argmax / argmin. Mirrors kernels/cpu/strided.c (and binary.c's
 * lmx_cpu_binary): same arguments and meaning, a stream first. Shapes, strides (in
 * elements) and other int64 arrays are HOST arrays of ndim entries (ndim <= LMX_MAX_NDIM);
 * data pointers are device memory. Return 0, a cudaError_t code, or -1 for an unsupported
 * dtype / op / ndim. Reductions are deterministic: the order of every sum depends on the
 * shapes only (one block of fixed size per output, or one thread per output when the
 * reduced extent is short). */
#ifndef LMX_KERNELS_CU_STRIDED_H
#define LMX_KERNELS_CU_STRIDED_H

#include "cu_base.h"

LMX_CU_BEGIN

/* for every index i of shape[ndim]: dst[i·dstr] (+)= src[i·sstr]. Any dtype without acc;
 * float32/float64/float16 with acc. dst and src must not overlap (unless identical). */
int lmx_cu_strided_copy(lmx_cu_stream s, int dt, int ndim, const int64_t *shape, void *dst,
                        const int64_t *dstr, const void *src, const int64_t *sstr, int acc);
/* out[oshape] (contiguous) (+)= a[i·astr] op b[i·bstr], op = LMX_BC_* (stride 0 =
 * broadcast axis); float32/float64/float16 */
int lmx_cu_bcast_binary(lmx_cu_stream s, int op, int dt, int ndim, const int64_t *oshape,
                        void *out, const void *a, const int64_t *astr, const void *b,
                        const int64_t *bstr, int acc);
/* gd[dsize] (+)= Σ over the axes where dstr is 0 of d(a op b)/d(side) · g[oshape] */
int lmx_cu_bcast_binary_grad(lmx_cu_stream s, int op, int side, int dt, int ndim,
                             const int64_t *oshape, void *gd, const int64_t *dstr,
                             int64_t dsize, const void *g, const void *a, const int64_t *astr,
                             const void *b, const int64_t *bstr, int acc);
/* y[ysize] = reduction (LMX_RED_*) of x[shape] where y is addressed by ystr (0 on reduced
 * axes); SUM/MEAN multiply each element by scale and may accumulate (acc); others
 * overwrite. float32/float64/float16 */
int lmx_cu_reduce(lmx_cu_stream s, int kind, int dt, int ndim, const int64_t *shape,
                  const void *x, void *y, const int64_t *ystr, int64_t ysize, double scale,
                  int acc);
/* gx[shape] (+)= the reduction's gradient from g, y (addressed by ystr) and x (x, y may be
 * NULL for SUM / MEAN) */
int lmx_cu_reduce_bwd(lmx_cu_stream s, int kind, int dt, int ndim, const int64_t *shape,
                      void *gx, const void *x, const void *g, const void *y,
                      const int64_t *ystr, double scale, int acc);
/* y[outer, inner] = index (in y's dtype, = x's) of the first max (min when want_min) of
 * x[outer, len, inner] along len */
int lmx_cu_argmax(lmx_cu_stream s, int want_min, int dt, int64_t outer, int64_t len,
                  int64_t inner, const void *x, void *y);
/* out[oshape] = a[ashape] op b[bshape] broadcast (a, b given with ndim dims, 1 where
 * broadcast), op = LMX_BIN_*; all 7 dtypes (integers through double) — lmx_cpu_binary */
int lmx_cu_binary(lmx_cu_stream s, int op, int dt, int ndim, const int64_t *oshape, void *out,
                  const int64_t *ashape, const void *a, const int64_t *bshape, const void *b);

LMX_CU_END

#endif
