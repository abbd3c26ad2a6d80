/* linalg_blas.c — CPU glue of _linalg_potrf, _linalg_potri, _linalg_trmm, _linalg_trsm
 * and _linalg_syrk (descriptors in src/ops/linalg_blas.c): the CPU's primitives for
 * src/ops/linalg_blas_run.c, on LAPACK / BLAS (kernels/cpu/la_blas.c) and the strided
 * batched GEMM (kernels/cpu/gemm_batch.c). float32 and float64.
 */
#include "../../../kernels/cpu/cpu_kernels.h"
#include "../linalg_blas_run.h"
#include "../op_impl.h"
#include "cpu_ops.h"

static int gemm(const lmx_op_ctx *c, int dt, int64_t batch, int ta, int tb, int64_t m,
                int64_t n, int64_t k, double alpha, const void *A, int64_t lda, int64_t sa,
                const void *B, int64_t ldb, int64_t sb, double beta, void *C, int64_t ldc,
                int64_t sc) {
  (void)c;
  lmx_cpu_gemm_sbatch(dt, batch, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc,
                      sc);
  return LMX_OK;
}

static int tri(const lmx_op_ctx *c, int dt, int64_t batch, int64_t m, int64_t k, const void *A,
               void *B, int lower, int trans, int right, double alpha, int solve) {
  int rc = solve ? lmx_cpu_trsm(dt, batch, m, k, A, B, lower, trans, right, alpha)
                 : lmx_cpu_trmm(dt, batch, m, k, A, B, lower, trans, right, alpha);
  return rc ? lmx_op_fail(c, LMX_ERR_DTYPE, "unsupported dtype") : LMX_OK;
}

static int syrk(const lmx_op_ctx *c, int dt, int64_t batch, int64_t m, int64_t k, const void *A,
                void *C, int trans, double alpha) {
  int rc = lmx_cpu_syrk(dt, batch, m, k, A, C, trans, alpha);
  return rc ? lmx_op_fail(c, LMX_ERR_DTYPE, "unsupported dtype") : LMX_OK;
}

static int tri_fix(const lmx_op_ctx *c, int dt, int64_t batch, int64_t n, void *A, int lower,
                   int copy) {
  int rc = lmx_cpu_tri_fix(dt, batch, n, A, lower, copy);
  return rc ? lmx_op_fail(c, LMX_ERR_DTYPE, "unsupported dtype") : LMX_OK;
}

static int copy(const lmx_op_ctx *c, int dt, int64_t n, void *out, const void *x, int acc) {
  int rc = lmx_cpu_scale(dt, n, out, x, 1.0, acc);
  return rc ? lmx_op_fail(c, LMX_ERR_DTYPE, "unsupported dtype") : LMX_OK;
}

static int chol(const lmx_op_ctx *c, int dt, int64_t batch, int64_t n, const void *src,
                void *dst, int lower, int inv) {
  LMX_TRY(copy(c, dt, batch * n * n, dst, src, 0));
  int64_t bad = 0;
  int rc = inv ? lmx_cpu_potri(dt, batch, n, dst, lower, &bad)
               : lmx_cpu_potrf(dt, batch, n, dst, lower, &bad);
  if (rc == 1 && !inv)
    return lmx_op_fail(c, LMX_ERR_ARG, "input 'A': expected symmetric positive-definite "
                       "matrices, got matrix %lld that is not (LAPACK potrf failed)",
                       (long long)bad);
  if (rc == 1)
    return lmx_op_fail(c, LMX_ERR_ARG, "input 'A': expected Cholesky factors with a non-zero "
                       "diagonal, got factor %lld with a zero (LAPACK potri failed)",
                       (long long)bad);
  return rc ? lmx_op_fail(c, LMX_ERR_DTYPE, "unsupported dtype") : LMX_OK;
}

static const lmx_la_prims cpu_prims = {
    .check_dtype = lmx_cpu_check_float,
    .gemm = gemm,
    .tri = tri,
    .syrk = syrk,
    .tri_fix = tri_fix,
    .copy = copy,
    .chol = chol,
};

#define BLAS_GLUE(id, kind)                                                                 \
  int lmx_cpu_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,    \
                       const int *req, const lmx_tensor *aux) {                             \
    (void)aux;                                                                              \
    return lmx_la_blas_forward(&cpu_prims, c, kind, in, out, req[0]);                       \
  }                                                                                         \
  int lmx_cpu_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,     \
                       const lmx_tensor *out, const lmx_tensor *ig, const int *req,         \
                       const lmx_tensor *aux) {                                             \
    (void)aux;                                                                              \
    return lmx_la_blas_backward(&cpu_prims, c, kind, og, in, out, ig, req);                 \
  }                                                                                         \
  size_t lmx_cpu_ws_##id(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) {  \
    (void)out;                                                                              \
    return lmx_la_blas_ws(c, kind, in);                                                     \
  }
BLAS_GLUE(_linalg_potrf, LMX_LA_POTRF)
BLAS_GLUE(_linalg_potri, LMX_LA_POTRI)
BLAS_GLUE(_linalg_trmm, LMX_LA_TRMM)
BLAS_GLUE(_linalg_trsm, LMX_LA_TRSM)
BLAS_GLUE(_linalg_syrk, LMX_LA_SYRK)
