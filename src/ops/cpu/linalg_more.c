/* linalg_more.c — CPU glue of _linalg_gemm and _linalg_gemm2 (descriptors in
 * src/ops/linalg_more.c): every matrix of the batch is one OpenBLAS product through
 * lmx_cpu_gemm_ld, with the row stride of linalg_more_plan.h (rows on `axis`), so no
 * operand is copied or transposed. float32 and float64 (MXNet's dtypes).
 *
 * Gradients of C = alpha · op(A) · op(B) (+ beta · C_in) with head gradient G:
 *   A: alpha · G · op(B)ᵀ (ta = 0) or alpha · op(B) · Gᵀ (ta = 1)
 *   B: alpha · op(A)ᵀ · G (tb = 0) or alpha · Gᵀ · op(A) (tb = 1)
 *   C_in: beta · G.
 */
#include "../../../kernels/cpu/cpu_kernels.h"
#include "../../tensor/dtype.h"
#include "../linalg_more_plan.h"
#include "../op_impl.h"
#include "cpu_ops.h"

typedef struct {
  void *p;
  int64_t r, c; /* stored rows and cols of each matrix */
} mat;

/* Z[o,q] = alpha · op(X[o,q]) · op(Y[o,q]) + beta · Z[o,q] for the plan's batch */
static void batch_gemm(int dt, const lmx_la_gemm_plan *pl, int tx, int ty, int64_t M,
                       int64_t N, int64_t K, double alpha, mat X, mat Y, double beta, mat Z) {
  size_t es = lmx_dtype_size(dt);
  int64_t mid = pl->mid;
  int64_t lx = mid * X.c, ly = mid * Y.c, lz = mid * Z.c;
  for (int64_t o = 0; o < pl->outer; o++)
    for (int64_t q = 0; q < mid; q++) {
      const char *x = (char *)X.p + (size_t)(o * X.r * lx + q * X.c) * es;
      const char *y = (char *)Y.p + (size_t)(o * Y.r * ly + q * Y.c) * es;
      char *z = (char *)Z.p + (size_t)(o * Z.r * lz + q * Z.c) * es;
      lmx_cpu_gemm_ld(dt, tx, ty, M, N, K, alpha, x, lx < 1 ? 1 : lx, y, ly < 1 ? 1 : ly, beta,
                      z, lz < 1 ? 1 : lz);
    }
}

static int gemm_check(const lmx_op_ctx *c, const lmx_tensor *in, int nin,
                      lmx_la_gemm_plan *pl, lmx_shape *os) {
  LMX_TRY(lmx_cpu_check_float(c, &in[0], "input 'A'"));
  LMX_TRY(lmx_plan_la_gemm(c, &in[0].shape, &in[1].shape, pl));
  *os = lmx_plan_la_gemm_out(&in[0].shape, pl);
  LMX_TRY(lmx_glue_check_size(c, &in[0], lmx_glue_size(&in[0]), "input 'A'"));
  LMX_TRY(lmx_glue_check_like(c, &in[1], &in[1].shape, in[0].dtype, "input 'B'"));
  if (nin == 3) LMX_TRY(lmx_glue_check_like(c, &in[2], os, in[0].dtype, "input 'C'"));
  return LMX_OK;
}

static int gemm_fwd(const lmx_op_ctx *c, const lmx_tensor *in, int nin, const lmx_tensor *out,
                    int req) {
  if (req == LMX_REQ_NULL) return LMX_OK;
  const lmx_la_gemm_param *p = c->param;
  lmx_la_gemm_plan pl;
  lmx_shape os;
  LMX_TRY(gemm_check(c, in, nin, &pl, &os));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &os, in[0].dtype, "output"));
  int dt = in[0].dtype;
  double beta = req == LMX_REQ_ADD ? 1.0 : 0.0;
  if (nin == 3) { /* out (+)= beta · C first, then the product accumulates */
    if (req == LMX_REQ_ADD || out[0].data != in[2].data)
      lmx_cpu_scale(dt, lmx_glue_size(&out[0]), out[0].data, in[2].data,
                    req == LMX_REQ_ADD ? p->beta : 1.0, req == LMX_REQ_ADD);
    beta = req == LMX_REQ_ADD ? 1.0 : p->beta;
  }
  batch_gemm(dt, &pl, p->transpose_a, p->transpose_b, pl.m, pl.n, pl.k, p->alpha,
             (mat){in[0].data, pl.ar, pl.ac}, (mat){in[1].data, pl.br, pl.bc}, beta,
             (mat){out[0].data, pl.m, pl.n});
  return LMX_OK;
}

static int gemm_bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in, int nin,
                    const lmx_tensor *ig, const int *req) {
  const lmx_la_gemm_param *p = c->param;
  lmx_la_gemm_plan pl;
  lmx_shape os;
  LMX_TRY(gemm_check(c, in, nin, &pl, &os));
  LMX_TRY(lmx_glue_check_like(c, &og[0], &os, in[0].dtype, "output gradient"));
  int dt = in[0].dtype, ta = p->transpose_a, tb = p->transpose_b;
  mat A = {in[0].data, pl.ar, pl.ac}, B = {in[1].data, pl.br, pl.bc};
  mat G = {og[0].data, pl.m, pl.n};
  if (req[0] != LMX_REQ_NULL) {
    LMX_TRY(lmx_glue_check_like(c, &ig[0], &in[0].shape, dt, "gradient of 'A'"));
    double b0 = req[0] == LMX_REQ_ADD ? 1.0 : 0.0;
    mat dA = {ig[0].data, pl.ar, pl.ac};
    if (!ta) batch_gemm(dt, &pl, 0, !tb, pl.m, pl.k, pl.n, p->alpha, G, B, b0, dA);
    else batch_gemm(dt, &pl, tb, 1, pl.k, pl.m, pl.n, p->alpha, B, G, b0, dA);
  }
  if (req[1] != LMX_REQ_NULL) {
    LMX_TRY(lmx_glue_check_like(c, &ig[1], &in[1].shape, dt, "gradient of 'B'"));
    double b1 = req[1] == LMX_REQ_ADD ? 1.0 : 0.0;
    mat dB = {ig[1].data, pl.br, pl.bc};
    if (!tb) batch_gemm(dt, &pl, !ta, 0, pl.k, pl.n, pl.m, p->alpha, A, G, b1, dB);
    else batch_gemm(dt, &pl, 1, ta, pl.n, pl.k, pl.m, p->alpha, G, A, b1, dB);
  }
  if (nin == 3 && req[2] != LMX_REQ_NULL) {
    LMX_TRY(lmx_glue_check_like(c, &ig[2], &os, dt, "gradient of 'C'"));
    lmx_cpu_scale(dt, lmx_glue_size(&ig[2]), ig[2].data, og[0].data, p->beta,
                  req[2] == LMX_REQ_ADD);
  }
  return LMX_OK;
}

int lmx_cpu_fwd__linalg_gemm(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                             const int *req, const lmx_tensor *aux) {
  (void)aux;
  return gemm_fwd(c, in, 3, out, req[0]);
}

int lmx_cpu_bwd__linalg_gemm(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                             const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                             const lmx_tensor *aux) {
  (void)out, (void)aux;
  return gemm_bwd(c, og, in, 3, ig, req);
}

int lmx_cpu_fwd__linalg_gemm2(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                              const int *req, const lmx_tensor *aux) {
  (void)aux;
  return gemm_fwd(c, in, 2, out, req[0]);
}

int lmx_cpu_bwd__linalg_gemm2(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                              const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                              const lmx_tensor *aux) {
  (void)out, (void)aux;
  return gemm_bwd(c, og, in, 2, ig, req);
}

/* ---- khatri_rao ------------------------------------------------------------------------- */

int lmx_cpu_fwd_khatri_rao(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                           const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  const lmx_kr_param *p = c->param;
  lmx_kr_args a;
  lmx_shape os;
  LMX_TRY(lmx_cpu_check_float(c, &in[0], "input 'arg0'"));
  LMX_TRY(lmx_kr_setup(c, in, (int)p->num_args, &a, &os));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &os, in[0].dtype, "output"));
  lmx_cpu_khatri_rao(in[0].dtype, &a, out[0].data, req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

int lmx_cpu_bwd_khatri_rao(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                           const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                           const lmx_tensor *aux) {
  (void)out, (void)aux;
  const lmx_kr_param *p = c->param;
  lmx_kr_args a;
  lmx_shape os;
  LMX_TRY(lmx_cpu_check_float(c, &in[0], "input 'arg0'"));
  LMX_TRY(lmx_kr_setup(c, in, (int)p->num_args, &a, &os));
  LMX_TRY(lmx_glue_check_like(c, &og[0], &os, in[0].dtype, "output gradient"));
  for (int i = 0; i < a.n; i++) {
    if (req[i] == LMX_REQ_NULL) continue;
    LMX_TRY(lmx_glue_check_like(c, &ig[i], &in[i].shape, in[0].dtype, "input gradient"));
    lmx_cpu_khatri_rao_bwd(in[0].dtype, &a, i, og[0].data, ig[i].data, req[i] == LMX_REQ_ADD);
  }
  return LMX_OK;
}
