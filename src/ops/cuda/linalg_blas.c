/* linalg_blas.c — CUDA glue of _linalg_potrf, _linalg_potri, _linalg_trmm, _linalg_trsm
 * and _linalg_syrk (src/ops/cpu/linalg_blas.c's twin, on the call's stream): the GPU's
 * primitives for src/ops/linalg_blas_run.c. The products go to cuBLAS as strided-batched
 * requests (cu_gemm.h); the triangular products and solves, syrk and the Cholesky
 * factorization run own small kernels (kernels/cuda/la_blas.cu), which the simulator
 * runs too; potri is two triangular solves on identity matrices. A matrix that is not
 * positive definite (potrf) or a factor with a zero diagonal (potri) is found on the
 * device and reported, in the CPU's words, at the next synchronisation. float32 and
 * float64.
 */
#include "../linalg_blas_run.h"
#include "k1_glue.h"
#include "nn_util.h"

static void potrf_text(char *buf, size_t cap, long long pos, long long value, int64_t range) {
  (void)range;
  snprintf(buf, cap, "input 'A': expected symmetric positive-definite matrices, got matrix "
           "%lld that is not (its leading minor of order %lld)", pos, value);
}

static void potri_text(char *buf, size_t cap, long long pos, long long value, int64_t range) {
  (void)range;
  snprintf(buf, cap, "input 'A': expected Cholesky factors with a non-zero diagonal, got "
           "factor %lld with a zero (row %lld)", pos, value);
}

static int check_dtype(const lmx_op_ctx *c, const lmx_tensor *t, const char *what) {
  return lmx_cunn_check_float(c, t, 0, what);
}

static int gemm(const lmx_op_ctx *c, int dt, int64_t batch, int ta, int tb, int64_t m,
                int64_t n, int64_t k, double alpha, const void *A, int64_t lda, int64_t sa,
                const void *B, int64_t ldb, int64_t sb, double beta, void *C, int64_t ldc,
                int64_t sc) {
  if (batch == 0 || m == 0 || n == 0) return LMX_OK;
  lmx_cu_gemm_req r = {dt, ta, tb, m, n, k, batch, alpha, beta, A, lda < 1 ? 1 : lda, sa,
                       B, ldb < 1 ? 1 : ldb, sb, C, ldc < 1 ? 1 : ldc, sc};
  LMX_CU_TRY(c, lmx_cu_gemm_req_run(LMX_CU_S(c), &r), "lmx_cu_gemm_req_run");
  return LMX_OK;
}

static int tri(const lmx_op_ctx *c, int dt, int64_t batch, int64_t m, int64_t k, const void *A,
               void *B, int lower, int trans, int right, double alpha, int solve) {
  LMX_CU_TRY(c, lmx_cu_la_trxm(LMX_CU_S(c), dt, batch, m, k, A, B, lower, trans, right,
                               alpha, solve), "lmx_cu_la_trxm");
  return LMX_OK;
}

static int syrk(const lmx_op_ctx *c, int dt, int64_t batch, int64_t m, int64_t k, const void *A,
                void *C, int trans, double alpha) {
  LMX_CU_TRY(c, lmx_cu_la_syrk(LMX_CU_S(c), dt, batch, m, k, A, C, trans, alpha),
             "lmx_cu_la_syrk");
  return LMX_OK;
}

static int tri_fix(const lmx_op_ctx *c, int dt, int64_t batch, int64_t n, void *A, int lower,
                   int copy) {
  LMX_CU_TRY(c, lmx_cu_la_tri_fix(LMX_CU_S(c), dt, batch, n, A, lower, copy),
             "lmx_cu_la_tri_fix");
  return LMX_OK;
}

static int copy(const lmx_op_ctx *c, int dt, int64_t n, void *out, const void *x, int acc) {
  if (n == 0) return LMX_OK;
  LMX_CU_TRY(c, lmx_cu_scale(LMX_CU_S(c), dt, n, out, x, 1.0, acc), "lmx_cu_scale");
  return LMX_OK;
}

static int chol(const lmx_op_ctx *c, int dt, int64_t batch, int64_t n, const void *src,
                void *dst, int lower, int inv) {
  lmx_cu_raise bad;
  LMX_TRY(lmx_cuda_raise_for(c, inv ? potri_text : potrf_text, n, &bad));
  if (!inv) {
    LMX_TRY(copy(c, dt, batch * n * n, dst, src, 0));
    LMX_CU_TRY(c, lmx_cu_la_potrf(LMX_CU_S(c), dt, batch, n, dst, lower, bad), "lmx_cu_la_potrf");
    return LMX_OK;
  }
  /* (L Lᵀ)⁻¹ = L⁻ᵀ L⁻¹ and (Uᵀ U)⁻¹ = U⁻¹ U⁻ᵀ: two solves on the identity */
  LMX_CU_TRY(c, lmx_cu_la_check_diag(LMX_CU_S(c), dt, batch, n, src, bad),
             "lmx_cu_la_check_diag");
  LMX_CU_TRY(c, lmx_cu_la_eye(LMX_CU_S(c), dt, batch, n, dst), "lmx_cu_la_eye");
  LMX_TRY(tri(c, dt, batch, n, n, src, dst, lower, !lower, 0, 1.0, 1));
  LMX_TRY(tri(c, dt, batch, n, n, src, dst, lower, lower, 0, 1.0, 1));
  return tri_fix(c, dt, batch, n, dst, lower, 1);
}

static const lmx_la_prims cuda_prims = {
    .check_dtype = check_dtype,
    .gemm = gemm,
    .tri = tri,
    .syrk = syrk,
    .tri_fix = tri_fix,
    .copy = copy,
    .chol = chol,
};

#define BLAS_GLUE(id, kind)                                                                 \
  int lmx_cuda_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,   \
                        const int *req, const lmx_tensor *aux) {                            \
    (void)aux;                                                                              \
    return lmx_la_blas_forward(&cuda_prims, c, kind, in, out, req[0]);                      \
  }                                                                                         \
  int lmx_cuda_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,    \
                        const lmx_tensor *out, const lmx_tensor *ig, const int *req,        \
                        const lmx_tensor *aux) {                                            \
    (void)aux;                                                                              \
    return lmx_la_blas_backward(&cuda_prims, c, kind, og, in, out, ig, req);                \
  }                                                                                         \
  size_t lmx_cuda_ws_##id(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) { \
    (void)out;                                                                              \
    return lmx_la_blas_ws(c, kind, in);                                                     \
  }
BLAS_GLUE(_linalg_potrf, LMX_LA_POTRF)
BLAS_GLUE(_linalg_potri, LMX_LA_POTRI)
BLAS_GLUE(_linalg_trmm, LMX_LA_TRMM)
BLAS_GLUE(_linalg_trsm, LMX_LA_TRSM)
BLAS_GLUE(_linalg_syrk, LMX_LA_SYRK)
