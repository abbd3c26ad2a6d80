/* linalg_blas_run.h — forward and backward of _linalg_potrf, _linalg_potri, _linalg_trmm,
 * _linalg_trsm and _linalg_syrk once for every backend (ops14g): the glue of a backend
 * (src/ops/cpu/linalg_blas.c, src/ops/cuda/linalg_blas.c) hands its primitives in a
 * table, and linalg_blas_run.c composes them after MXNet's formulas (la_op-inl.h):
 *   trmm  C = α op(T) B:    dT = α G Bᵀ / α B Gᵀ (left, transpose or not), α Bᵀ G / α Gᵀ B
 *                           (right), masked to T's triangle; dB = trmm(A, G) with op flipped
 *   trsm  C = α op(T)⁻¹ B:  dB = trsm(A, G) with op flipped; dT = -(1/α) × the trmm
 *                           products with (G, B) replaced by (dB, C), masked
 *   syrk  C = α A Aᵀ:       dA = α (G + Gᵀ) A;  Aᵀ A: dA = α A (G + Gᵀ)
 *   potrf A = L Lᵀ:         dA = 0.5 L⁻ᵀ copyLTU(Lᵀ G) L⁻¹ (upper: 0.5 U⁻¹ copyUTL(G Uᵀ) U⁻ᵀ)
 *   potri X = (L Lᵀ)⁻¹:     dL = -tril(X (G + Gᵀ) L⁻ᵀ) (upper: -triu(U⁻ᵀ (G + Gᵀ) X))
 * with G the head gradient. Forward writes its output (req add is refused); a gradient
 * is made in its own buffer, or in the workspace when it is added (req add). The
 * workspace holds two buffers of the largest matrix batch, in doubles.
 */
#ifndef LMX_OPS_LINALG_BLAS_RUN_H
#define LMX_OPS_LINALG_BLAS_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "linalg_blas_plan.h"

/* A backend's primitives on its own memory, batches of row-major matrices. Each returns
 * LMX_OK or a status whose message names the operator (lmx_op_fail). */
typedef struct lmx_la_prims {
  /* fails unless t's dtype is one the backend runs these operators in */
  int (*check_dtype)(const lmx_op_ctx *c, const lmx_tensor *t, const char *what);
  /* for i < batch: C_i = alpha · op(A_i) · op(B_i) + beta · C_i (lmx_cpu_gemm_sbatch) */
  int (*gemm)(const lmx_op_ctx *c, int dt, int64_t batch, int ta, int tb, int64_t m,
              int64_t n, int64_t k, double alpha, const void *A, int64_t lda, int64_t sa,
              const void *B, int64_t ldb, int64_t sb, double beta, void *C, int64_t ldc,
              int64_t sc);
  /* B[batch, m, k] <- alpha · op(T) · B, or op(T)⁻¹ when solve (B · op(T) when right),
   * in place; T the `lower` (else upper) triangle of A (la_blas.h) */
  int (*tri)(const lmx_op_ctx *c, int dt, int64_t batch, int64_t m, int64_t k, const void *A,
             void *B, int lower, int trans, int right, double alpha, int solve);
  /* C = alpha · A Aᵀ (Aᵀ A when trans), both triangles */
  int (*syrk)(const lmx_op_ctx *c, int dt, int64_t batch, int64_t m, int64_t k, const void *A,
              void *C, int trans, double alpha);
  /* zero (copy = 0) or mirror (copy = 1) the other side of the `lower` triangle */
  int (*tri_fix)(const lmx_op_ctx *c, int dt, int64_t batch, int64_t n, void *A, int lower,
                 int copy);
  /* out[n] (+)= x[n] */
  int (*copy)(const lmx_op_ctx *c, int dt, int64_t n, void *out, const void *x, int acc);
  /* dst <- potrf(src) (inv = 0) or potri(src) (inv = 1), failing naming the matrix that
   * is not positive definite / the factor with a zero diagonal; dst != src */
  int (*chol)(const lmx_op_ctx *c, int dt, int64_t batch, int64_t n, const void *src,
              void *dst, int lower, int inv);
} lmx_la_prims;

int lmx_la_blas_forward(const lmx_la_prims *P, const lmx_op_ctx *c, int kind,
                        const lmx_tensor *in, const lmx_tensor *out, int req);
int lmx_la_blas_backward(const lmx_la_prims *P, const lmx_op_ctx *c, int kind,
                         const lmx_tensor *og, const lmx_tensor *in, const lmx_tensor *out,
                         const lmx_tensor *ig, const int *req);
/* the workspace bytes of one call (forward or backward) */
size_t lmx_la_blas_ws(const lmx_op_ctx *c, int kind, const lmx_shape *in);

#endif
