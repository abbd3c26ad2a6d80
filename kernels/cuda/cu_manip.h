/* cu_manip.h — CUDA launchers of the tensor-manipulation kernels that are not strided
 * copies (kernels/cuda/manip.cu): pick and its gradient, cumsum and its gradient (the
 * reverse scan). They mirror kernels/cpu/manip.c: the same index rules (any dtype,
 * truncated toward zero; clipped or wrapped into [0, A)) and double sums. Stream first;
 * every pointer is device memory. Return 0, a cudaError_t code, or -1 for an unsupported
 * dtype. Deterministic: one thread per output element (pick), per input-gradient element
 * (its gradient, no atomics) or per scanned column (cumsum). */
#ifndef LMX_KERNELS_CU_MANIP_H
#define LMX_KERNELS_CU_MANIP_H

#include "cu_base.h"

LMX_CU_BEGIN

/* y[outer, inner] (+)= x[outer, A, inner] at the resolved idx[outer, inner] (idt any dtype);
 * x / y: any of the 7 dtypes */
int lmx_cu_pick(lmx_cu_stream s, int dt, int idt, int64_t outer, int64_t A, int64_t inner,
                void *y, const void *x, const void *idx, int wrap, int acc);
/* gx[outer, A, inner] (+)= g[outer, inner] where a is the resolved index, 0 elsewhere
 * (float32 / float64 / float16) */
int lmx_cu_pick_bwd(lmx_cu_stream s, int dt, int idt, int64_t outer, int64_t A, int64_t inner,
                    void *gx, const void *g, const void *idx, int wrap, int acc);
/* y[outer, len, inner] (dtype ydt) (+)= the running sum of x (dtype xdt) along len, from the
 * end when reverse; any of the 7 dtypes each (acc: float ones for y) */
int lmx_cu_cumsum(lmx_cu_stream s, int xdt, int ydt, int64_t outer, int64_t len, int64_t inner,
                  void *y, const void *x, int reverse, int acc);

/* gather_nd: data as [rows of the M indexed dims dims[M] (a HOST array), inner]; idx[M, nY]
 * (any dtype, truncated; negatives from the end; clipped); y[nY, inner] (+)= data at each
 * row. Any of the 7 dtypes. */
int lmx_cu_gather_nd(lmx_cu_stream s, int dt, int idt, int M, const int64_t *dims, int64_t nY,
                     int64_t inner, void *y, const void *data, const void *idx, int acc);
/* out[rows, inner] (+)= the src[nY, inner] columns whose index names that row: their sum
 * (add: gather_nd's gradient) or the last one (scatter_nd); 0 for rows nobody names.
 * One thread per output element scanning the nY columns: deterministic, no atomics. */
int lmx_cu_scatter_nd(lmx_cu_stream s, int dt, int idt, int M, const int64_t *dims, int64_t nY,
                      int64_t inner, void *out, const void *src, const void *idx, int add,
                      int acc);

LMX_CU_END

#endif
