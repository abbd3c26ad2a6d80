/* cu_la_blas.h — CUDA launchers of issue 14's Cholesky and triangular linalg (ops14g;
 * kernels/cuda/la_blas.cu): own small kernels that the simulator runs too, for batches of
 * small row-major matrices. One thread per matrix column or row (tri), per output element
 * (syrk, tri_fix, eye), per matrix (potrf, check_diag): sequential sums in a fixed order,
 * no atomics, deterministic. float32 and float64 (double accumulation); -1 for another
 * dtype, else 0 or the launch's cudaError_t. Arguments as kernels/cpu/la_blas.h's. */
#ifndef LMX_KERNELS_CU_LA_BLAS_H
#define LMX_KERNELS_CU_LA_BLAS_H

#include "cu_base.h"

LMX_CU_BEGIN

/* B[batch, m, k] <- alpha · op(T) · B (right: B · op(T)), or with op(T)⁻¹ when solve, in
 * place; T the `lower` (else upper) triangle of A[batch, s, s] (s = m left, k right) */
int lmx_cu_la_trxm(lmx_cu_stream s, int dt, int64_t batch, int64_t m, int64_t k,
                   const void *A, void *B, int lower, int trans, int right, double alpha,
                   int solve);
/* C[batch, s, s] = alpha · A Aᵀ (s = m) or alpha · Aᵀ A (trans, s = k); C != A */
int lmx_cu_la_syrk(lmx_cu_stream s, int dt, int64_t batch, int64_t m, int64_t k, const void *A,
                   void *C, int trans, double alpha);
/* the other side of the `lower` triangle of A[batch, n, n] <- 0 (copy = 0) or its mirror */
int lmx_cu_la_tri_fix(lmx_cu_stream s, int dt, int64_t batch, int64_t n, void *A, int lower,
                      int copy);
/* A[batch, n, n] <- its Cholesky factor in place (only the `lower` side read; the other
 * zeroed); a matrix that is not positive definite is reported to `bad` at (matrix, order
 * of the failing leading minor) and left partly factored */
int lmx_cu_la_potrf(lmx_cu_stream s, int dt, int64_t batch, int64_t n, void *A, int lower,
                    lmx_cu_raise bad);
/* A[batch, n, n] <- identity matrices */
int lmx_cu_la_eye(lmx_cu_stream s, int dt, int64_t batch, int64_t n, void *A);
/* reports to `bad` (matrix, row) the first zero on a diagonal of A[batch, n, n] */
int lmx_cu_la_check_diag(lmx_cu_stream s, int dt, int64_t batch, int64_t n, const void *A,
                         lmx_cu_raise bad);

LMX_CU_END

#endif
