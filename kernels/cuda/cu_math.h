/* cu_math.h — CUDA launchers of the math family (ops14a): the rows of
 * kernels/cpu/math_fns.h (codes LMX_MF_*), mirroring kernels/cpu/cpu_kernels.h's
 * lmx_cpu_math / lmx_cpu_math_strided with a stream first. Device pointers; operands may
 * be NULL (read as 0); the destination may alias an operand; acc = 1 adds into it.
 * dtypes float32, float64, float16 (float math). Return 0, a cudaError_t code from the
 * launch, or -1 for an unsupported dtype / code / rank. */
#ifndef LMX_KERNELS_CU_MATH_H
#define LMX_KERNELS_CU_MATH_H

#include "cu_base.h"

LMX_CU_BEGIN

/* out[n] (+)= f(a[n], b[n], c[n], s) */
int lmx_cu_math(lmx_cu_stream st, int fn, int dt, int64_t n, void *out, const void *a,
                const void *b, const void *c, double s, int acc);
/* out[oshape] (contiguous) (+)= f over in[3] addressed with strides str[k][ndim] (0 =
 * broadcast axis); in[k] NULL: absent (str[k] unused) */
int lmx_cu_math_strided(lmx_cu_stream st, int fn, int dt, int ndim, const int64_t *oshape,
                        void *out, const void *const *in, const int64_t *const *str, double s,
                        int acc);

LMX_CU_END

#endif
