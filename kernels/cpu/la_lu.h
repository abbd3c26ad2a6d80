/* la_lu.h — LU-based kernels of issue 14's _linalg_inverse, _linalg_det and
 * _linalg_slogdet (ops14g): on the CPU LAPACK's ?getrf / ?getri (kernels/cpu/la_lu.c),
 * on the GPU Gauss-Jordan elimination with partial pivoting, one thread per matrix
 * (kernels/cuda/la_lu.cu, cu_la_lu.h). Batches of row-major n x n matrices, float32 or
 * float64 (-1 for another dtype). A row-major matrix is LAPACK's transpose: its inverse
 * is the transpose of the inverse, its determinant the same, so nothing is transposed.
 */
#ifndef LMX_KERNELS_LA_LU_H
#define LMX_KERNELS_LA_LU_H

#include <stdint.h>

/* scratch doubles of lmx_cpu_la_lu for one call */
int64_t lmx_cpu_la_lu_ws(int64_t batch, int64_t n);
/* For each matrix of A[batch, n, n]: inv (when not NULL) <- its inverse, and the sign and
 * the log of the absolute value of its determinant into sign / logabs (dtype dt, NULL
 * skips), det (when not NULL) <- sign · exp(logabs). A singular matrix gets sign 0 and
 * logabs -inf; with inv wanted and strict it stops the call: returns 1 with *bad the
 * matrix (inv not written for it and the ones after); not strict, its inverse is zeros.
 * ws: lmx_cpu_la_lu_ws doubles. */
int lmx_cpu_la_lu(int dt, int64_t batch, int64_t n, const void *A, void *inv, void *det,
                  void *sign, void *logabs, double *ws, int strict, int64_t *bad);
/* dA[b] (+)= g[b] · f[b] · inv[b]ᵀ (f NULL: 1), 0 where keep[b] is 0: the gradient of det
 * (f = keep = det) and of slogdet's logabsdet (f NULL, keep = sign). A[batch, n, n]. */
int lmx_cpu_la_scale_t(int dt, int64_t batch, int64_t n, const void *g, const void *f,
                       const void *keep, const void *inv, void *dA, int acc);

#endif
