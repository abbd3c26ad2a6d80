/* cu_la_lu.h — CUDA launcher of the inverse and determinants (issue 14, ops14g;
 * kernels/cuda/la_lu.cu): Gauss-Jordan elimination with partial pivoting in double, one
 * thread per matrix on ws (2·n·n doubles per matrix of device scratch): simple and
 * deterministic, meant for small matrices. The arguments and results of lmx_cpu_la_lu
 * (kernels/cpu/la_lu.h); a singular matrix with inv wanted is reported to `bad` (the
 * matrix) and its inverse left unwritten. float32 / float64; -1 for another dtype. */
#ifndef LMX_KERNELS_CU_LA_LU_H
#define LMX_KERNELS_CU_LA_LU_H

#include "cu_base.h"

LMX_CU_BEGIN

/* strict 0: a singular matrix's inverse is zeros, nothing reported */
int lmx_cu_la_lu(lmx_cu_stream s, int dt, int64_t batch, int64_t n, const void *A, void *inv,
                 void *det, void *sign, void *logabs, double *ws, int strict,
                 lmx_cu_raise bad);
/* dA[b] (+)= g[b] · f[b] · inv[b]ᵀ (f NULL: 1), 0 where keep[b] is 0 */
int lmx_cu_la_scale_t(lmx_cu_stream s, int dt, int64_t batch, int64_t n, const void *g,
                      const void *f, const void *keep, const void *inv, void *dA, int acc);

LMX_CU_END

#endif
