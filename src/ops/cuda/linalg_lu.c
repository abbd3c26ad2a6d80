/* linalg_lu.c — CUDA glue of _linalg_inverse, _linalg_det and _linalg_slogdet
 * (src/ops/cpu/linalg_lu.c's twin, on the call's stream): Gauss-Jordan elimination in
 * kernels/cuda/la_lu.cu, products on cuBLAS (cu_gemm.h). A singular matrix given to
 * inverse is found on the device and reported, in the CPU's words, at the next
 * synchronisation. float32 and float64. The workspace: one matrix batch for an inverse
 * or a product, then two for the elimination. */
#include "../../../kernels/cuda/cu_la_lu.h"
#include "../linalg_tri_plan.h"
#include "k1_glue.h"
#include "nn_util.h"

enum { LU_INVERSE, LU_DET, LU_SLOGDET };

static size_t lu_ws(const lmx_op_ctx *c, const lmx_shape *in) {
  lmx_la_tri_plan p;
  if (!lmx_shape_known(&in[0]) || lmx_la_tri_plan_make(c, LMX_LA_SUMLOGDIAG, &in[0], &p))
    return 0;
  return (size_t)(3 * p.batch * p.t.n * p.t.n) * sizeof(double);
}

static void singular_text(char *buf, size_t cap, long long pos, long long value,
                          int64_t range) {
  (void)value, (void)range;
  snprintf(buf, cap, "input 'A': expected invertible matrices, got matrix %lld that is "
           "singular", pos);
}

static int plan(const lmx_op_ctx *c, const lmx_tensor *a, lmx_la_tri_plan *p) {
  LMX_TRY(lmx_cunn_check_float(c, a, 0, "input 'A'"));
  LMX_TRY(lmx_la_tri_plan_make(c, LMX_LA_SUMLOGDIAG, &a->shape, p));
  return lmx_glue_check_ws(c, lu_ws(c, &a->shape));
}

static double *scratch(const lmx_op_ctx *c, const lmx_la_tri_plan *p) {
  return (double *)c->workspace + p->batch * p->t.n * p->t.n;
}

static int gemm(const lmx_op_ctx *c, int dt, int64_t B, int ta, int tb, int64_t n,
                double alpha, const void *X, const void *Y, double beta, void *Z) {
  if (B == 0 || n == 0) return LMX_OK;
  lmx_cu_gemm_req r = {dt, ta, tb, n, n, n, B, alpha, beta, X, n, n * n, Y, n, n * n, Z, n,
                       n * n};
  LMX_CU_TRY(c, lmx_cu_gemm_req_run(LMX_CU_S(c), &r), "lmx_cu_gemm_req_run");
  return LMX_OK;
}

static int lu_fwd(const lmx_op_ctx *c, int kind, const lmx_tensor *in, const lmx_tensor *out,
                  const int *req) {
  int nout = kind == LU_SLOGDET ? 2 : 1;
  if (req[0] == LMX_REQ_NULL && (nout == 1 || req[1] == LMX_REQ_NULL)) return LMX_OK;
  if (req[0] == LMX_REQ_ADD || (nout == 2 && req[1] == LMX_REQ_ADD))
    return lmx_cuda_fail_req_add(c, "output");
  lmx_la_tri_plan p;
  LMX_TRY(plan(c, &in[0], &p));
  int dt = in[0].dtype;
  LMX_TRY(lmx_glue_check_like(c, &in[0], &in[0].shape, dt, "input 'A'"));
  const lmx_shape *os = kind == LU_INVERSE ? &in[0].shape : &p.out;
  for (int i = 0; i < nout; i++)
    LMX_TRY(lmx_glue_check_like(c, &out[i], os, dt, i ? "output 'logabsdet'" : "output"));
  lmx_cu_raise bad;
  LMX_TRY(lmx_cuda_raise_for(c, singular_text, p.batch, &bad));
  LMX_CU_TRY(c, lmx_cu_la_lu(LMX_CU_S(c), dt, p.batch, p.t.n, in[0].data,
                             kind == LU_INVERSE ? out[0].data : NULL,
                             kind == LU_DET ? out[0].data : NULL,
                             kind == LU_SLOGDET ? out[0].data : NULL,
                             kind == LU_SLOGDET ? out[1].data : NULL, scratch(c, &p), 1, bad),
             "lmx_cu_la_lu");
  return LMX_OK;
}

static int lu_bwd(const lmx_op_ctx *c, int kind, const lmx_tensor *og, const lmx_tensor *in,
                  const lmx_tensor *out, const lmx_tensor *ig, const int *req) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  lmx_la_tri_plan p;
  LMX_TRY(plan(c, &ig[0], &p));
  int dt = ig[0].dtype, acc = req[0] == LMX_REQ_ADD;
  int64_t n = p.t.n, B = p.batch;
  const lmx_shape *s = &ig[0].shape;
  LMX_TRY(lmx_glue_check_like(c, &ig[0], s, dt, "gradient of 'A'"));
  void *W = c->workspace;
  if (kind == LU_INVERSE) { /* dA = -Yᵀ (G Yᵀ) */
    LMX_TRY(lmx_glue_check_like(c, &og[0], s, dt, "output gradient"));
    LMX_TRY(lmx_glue_check_like(c, &out[0], s, dt, "output"));
    LMX_TRY(gemm(c, dt, B, 0, 1, n, 1.0, og[0].data, out[0].data, 0.0, W));
    return gemm(c, dt, B, 1, 0, n, -1.0, out[0].data, W, acc ? 1.0 : 0.0, ig[0].data);
  }
  int g = kind == LU_SLOGDET ? 1 : 0;
  LMX_TRY(lmx_glue_check_like(c, &in[0], s, dt, "input 'A'"));
  LMX_TRY(lmx_glue_check_like(c, &og[g], &p.out, dt, "output gradient"));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &p.out, dt, "output"));
  lmx_cu_raise none = {NULL, 0};
  LMX_CU_TRY(c, lmx_cu_la_lu(LMX_CU_S(c), dt, B, n, in[0].data, W, NULL, NULL, NULL,
                             scratch(c, &p), 0, none), "lmx_cu_la_lu");
  LMX_CU_TRY(c, lmx_cu_la_scale_t(LMX_CU_S(c), dt, B, n, og[g].data,
                                  kind == LU_DET ? out[0].data : NULL, out[0].data, W,
                                  ig[0].data, acc), "lmx_cu_la_scale_t");
  return LMX_OK;
}

#define LU_GLUE(id, kind)                                                                   \
  int lmx_cuda_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,   \
                        const int *req, const lmx_tensor *aux) {                            \
    (void)aux;                                                                              \
    return lu_fwd(c, kind, in, out, req);                                                   \
  }                                                                                         \
  int lmx_cuda_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,    \
                        const lmx_tensor *out, const lmx_tensor *ig, const int *req,        \
                        const lmx_tensor *aux) {                                            \
    (void)aux;                                                                              \
    return lu_bwd(c, kind, og, in, out, ig, req);                                           \
  }                                                                                         \
  size_t lmx_cuda_ws_##id(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) { \
    (void)out;                                                                              \
    return lu_ws(c, in);                                                                    \
  }
LU_GLUE(_linalg_inverse, LU_INVERSE)
LU_GLUE(_linalg_det, LU_DET)
LU_GLUE(_linalg_slogdet, LU_SLOGDET)
