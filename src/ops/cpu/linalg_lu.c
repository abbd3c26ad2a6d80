/* linalg_lu.c — CPU glue of _linalg_inverse, _linalg_det and _linalg_slogdet (descriptors
 * in src/ops/linalg_lu.c, kernels in kernels/cpu/la_lu.c on LAPACK's getrf / getri and
 * the strided batched GEMM). float32 and float64. The workspace: one matrix batch for
 * an inverse or a product, then the LU scratch. */
#include "../../../kernels/cpu/cpu_kernels.h"
#include "../../../kernels/cpu/la_lu.h"
#include "../linalg_tri_plan.h"
#include "../op_impl.h"
#include "cpu_ops.h"

enum { LU_INVERSE, LU_DET, LU_SLOGDET };

static size_t lu_ws(const lmx_op_ctx *c, const lmx_shape *in) {
  lmx_la_tri_plan p;
  if (!lmx_shape_known(&in[0]) || lmx_la_tri_plan_make(c, LMX_LA_SUMLOGDIAG, &in[0], &p))
    return 0;
  int64_t n = p.t.n;
  return (size_t)(3 * p.batch * n * n + n * n + 2 * n + 1) * sizeof(double);
}

static int plan(const lmx_op_ctx *c, const lmx_tensor *a, lmx_la_tri_plan *p) {
  LMX_TRY(lmx_cpu_check_float(c, a, "input 'A'"));
  LMX_TRY(lmx_la_tri_plan_make(c, LMX_LA_SUMLOGDIAG, &a->shape, p));
  return lmx_glue_check_ws(c, lu_ws(c, &a->shape));
}

static double *lu_scratch(const lmx_op_ctx *c, const lmx_la_tri_plan *p) {
  return (double *)c->workspace + 3 * p->batch * p->t.n * p->t.n;
}

static int lu_fwd(const lmx_op_ctx *c, int kind, const lmx_tensor *in, const lmx_tensor *out,
                  const int *req) {
  int nout = kind == LU_SLOGDET ? 2 : 1;
  if (req[0] == LMX_REQ_NULL && (nout == 1 || req[1] == LMX_REQ_NULL)) return LMX_OK;
  if (req[0] == LMX_REQ_ADD || (nout == 2 && req[1] == LMX_REQ_ADD))
    return lmx_cpu_fail_req_add(c, "output");
  lmx_la_tri_plan p;
  LMX_TRY(plan(c, &in[0], &p));
  int dt = in[0].dtype;
  LMX_TRY(lmx_glue_check_like(c, &in[0], &in[0].shape, dt, "input 'A'"));
  const lmx_shape *os = kind == LU_INVERSE ? &in[0].shape : &p.out;
  for (int i = 0; i < nout; i++)
    LMX_TRY(lmx_glue_check_like(c, &out[i], os, dt, i ? "output 'logabsdet'" : "output"));
  int64_t bad = 0;
  int rc = lmx_cpu_la_lu(dt, p.batch, p.t.n, in[0].data,
                         kind == LU_INVERSE ? out[0].data : NULL,
                         kind == LU_DET ? out[0].data : NULL,
                         kind == LU_SLOGDET ? out[0].data : NULL,
                         kind == LU_SLOGDET ? out[1].data : NULL, lu_scratch(c, &p), 1, &bad);
  if (rc == 1)
    return lmx_op_fail(c, LMX_ERR_ARG, "input 'A': expected invertible matrices, got matrix "
                       "%lld that is singular", (long long)bad);
  return LMX_OK;
}

static int lu_bwd(const lmx_op_ctx *c, int kind, const lmx_tensor *og, const lmx_tensor *in,
                  const lmx_tensor *out, const lmx_tensor *ig, const int *req) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  lmx_la_tri_plan p;
  LMX_TRY(plan(c, &ig[0], &p));
  int dt = ig[0].dtype, acc = req[0] == LMX_REQ_ADD;
  int64_t n = p.t.n, nn = n * n, B = p.batch;
  const lmx_shape *s = &ig[0].shape;
  LMX_TRY(lmx_glue_check_like(c, &ig[0], s, dt, "gradient of 'A'"));
  void *W = c->workspace;
  if (kind == LU_INVERSE) { /* dA = -Yᵀ (G Yᵀ) */
    LMX_TRY(lmx_glue_check_like(c, &og[0], s, dt, "output gradient"));
    LMX_TRY(lmx_glue_check_like(c, &out[0], s, dt, "output"));
    lmx_cpu_gemm_sbatch(dt, B, 0, 1, n, n, n, 1.0, og[0].data, n, nn, out[0].data, n, nn, 0.0,
                        W, n, nn);
    lmx_cpu_gemm_sbatch(dt, B, 1, 0, n, n, n, -1.0, out[0].data, n, nn, W, n, nn,
                        acc ? 1.0 : 0.0, ig[0].data, n, nn);
    return LMX_OK;
  }
  int g = kind == LU_SLOGDET ? 1 : 0;
  LMX_TRY(lmx_glue_check_like(c, &in[0], s, dt, "input 'A'"));
  LMX_TRY(lmx_glue_check_like(c, &og[g], &p.out, dt, "output gradient"));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &p.out, dt, "output"));
  int64_t bad = 0;
  lmx_cpu_la_lu(dt, B, n, in[0].data, W, NULL, NULL, NULL, lu_scratch(c, &p), 0, &bad);
  lmx_cpu_la_scale_t(dt, B, n, og[g].data, kind == LU_DET ? out[0].data : NULL, out[0].data,
                     W, ig[0].data, acc);
  return LMX_OK;
}

#define LU_GLUE(id, kind)                                                                   \
  int lmx_cpu_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,    \
                       const int *req, const lmx_tensor *aux) {                             \
    (void)aux;                                                                              \
    return lu_fwd(c, kind, in, out, req);                                                   \
  }                                                                                         \
  int lmx_cpu_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,     \
                       const lmx_tensor *out, const lmx_tensor *ig, const int *req,         \
                       const lmx_tensor *aux) {                                             \
    (void)aux;                                                                              \
    return lu_bwd(c, kind, og, in, out, ig, req);                                           \
  }                                                                                         \
  size_t lmx_cpu_ws_##id(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) {  \
    (void)out;                                                                              \
    return lu_ws(c, in);                                                                    \
  }
LU_GLUE(_linalg_inverse, LU_INVERSE)
LU_GLUE(_linalg_det, LU_DET)
LU_GLUE(_linalg_slogdet, LU_SLOGDET)
