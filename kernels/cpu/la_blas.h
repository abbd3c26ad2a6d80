/* la_blas.h — Cholesky and triangular kernels of issue 14's linalg operators (ops14g) on
 * LAPACK and BLAS from OpenBLAS (kernels/cpu/la_blas.c). Batches of row-major matrices,
 * contiguous; float32/float64 (-1 for another dtype). Included by cpu_kernels.h.
 *
 * LAPACK is column-major: a row-major matrix is the column-major transpose, so the
 * row-major lower triangle is LAPACK's upper one ('U' for lower = 1); the symmetric
 * results need no other change.
 */
#ifndef LMX_KERNELS_LA_BLAS_H
#define LMX_KERNELS_LA_BLAS_H

#include <stdint.h>

/* A[batch, n, n] <- its Cholesky factor in place, lower (A = L Lᵀ) or upper (A = Uᵀ U),
 * the other triangle set to 0; only the `lower` side of A is read. Returns 0, -1 for the
 * dtype, 1 when matrix *bad is not positive definite (the later ones are left undone). */
int lmx_cpu_potrf(int dt, int64_t batch, int64_t n, void *A, int lower, int64_t *bad);
/* A[batch, n, n]: a Cholesky factor (its `lower` side) <- the full symmetric inverse of
 * the matrix it factors, in place. 1 when factor *bad has a zero on its diagonal. */
int lmx_cpu_potri(int dt, int64_t batch, int64_t n, void *A, int lower, int64_t *bad);
/* B[batch, m, k] <- alpha · op(T) · B (or alpha · B · op(T) when right) in place, T the
 * `lower` (else upper) triangle of A[batch, s, s], s = m (left) or k (right), op()
 * transposing when trans. */
int lmx_cpu_trmm(int dt, int64_t batch, int64_t m, int64_t k, const void *A, void *B, int lower,
                 int trans, int right, double alpha);
/* the same with op(T)⁻¹ (a triangular solve) */
int lmx_cpu_trsm(int dt, int64_t batch, int64_t m, int64_t k, const void *A, void *B, int lower,
                 int trans, int right, double alpha);
/* C[batch, s, s] = alpha · A · Aᵀ (s = m) or alpha · Aᵀ · A (trans, s = k) for A[batch, m, k],
 * both triangles written */
int lmx_cpu_syrk(int dt, int64_t batch, int64_t m, int64_t k, const void *A, void *C, int trans,
                 double alpha);
/* A[batch, n, n]: copy = 0 zeroes the triangle opposite to `lower`'s (diagonal kept);
 * copy = 1 mirrors the `lower` side's triangle onto the other. */
int lmx_cpu_tri_fix(int dt, int64_t batch, int64_t n, void *A, int lower, int copy);

#endif
