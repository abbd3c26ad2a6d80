/* linalg_more.c — CUDA glue of _linalg_gemm, _linalg_gemm2 and khatri_rao
 * (src/ops/cpu/linalg_more.c's
 * twin, on the call's stream): each outer index of the plan (linalg_more_plan.h) is one
 * strided-batched cuBLAS request over its `mid` matrices (one request for the whole batch
 * with the default axis), through kernels/cuda/cu_gemm.h, so nothing is copied or
 * transposed. float32, float64 and float16 (float32 compute). The GEMM error codes
 * become messages through nn_util.h, as for the other GEMM-shaped ops. khatri_rao runs
 * kernels/cuda/khatri_rao.cu (float32, float64, float16).
 */
#include "../linalg_more_plan.h"
#include "nn_util.h"

typedef struct {
  void *p;
  int64_t r, c; /* stored rows and cols of each matrix */
} mat;

static int64_t max1(int64_t v) { return v > 0 ? v : 1; }

static void *at(const mat *x, int dt, int64_t e) {
  return (char *)x->p + (size_t)e * (size_t)lmx_dtype_size(dt);
}

/* Z[o,q] = alpha · op(X[o,q]) · op(Y[o,q]) + beta · Z[o,q] for the plan's batch */
static int batch_gemm(const lmx_op_ctx *c, int dt, const lmx_la_gemm_plan *pl, int tx, int ty,
                      int64_t M, int64_t N, int64_t K, double alpha, mat X, mat Y, double beta,
                      mat Z) {
  int64_t mid = pl->mid, lx = mid * X.c, ly = mid * Y.c, lz = mid * Z.c;
  int one = mid == 1; /* matrices stacked: one request for every outer index */
  for (int64_t o = 0; o < (one ? 1 : pl->outer); o++) {
    lmx_cu_gemm_req r = {dt, tx, ty, M, N, K, one ? pl->outer : mid, alpha, beta,
                         at(&X, dt, o * X.r * lx), max1(lx), one ? X.r * X.c : X.c,
                         at(&Y, dt, o * Y.r * ly), max1(ly), one ? Y.r * Y.c : Y.c,
                         at(&Z, dt, o * Z.r * lz), max1(lz), one ? Z.r * Z.c : Z.c};
    LMX_CU_TRY(c, lmx_cu_gemm_req_run(LMX_CU_S(c), &r), "lmx_cu_gemm_req_run");
  }
  return LMX_OK;
}

static int gemm_check(const lmx_op_ctx *c, const lmx_tensor *in, int nin,
                      lmx_la_gemm_plan *pl, lmx_shape *os) {
  LMX_TRY(lmx_cunn_check_float(c, &in[0], 1, "input 'A'"));
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
      LMX_CU_TRY(c, lmx_cu_scale(LMX_CU_S(c), dt, lmx_glue_size(&out[0]), out[0].data,
                                 in[2].data, req == LMX_REQ_ADD ? p->beta : 1.0,
                                 req == LMX_REQ_ADD), "lmx_cu_scale");
    beta = req == LMX_REQ_ADD ? 1.0 : p->beta;
  }
  return batch_gemm(c, dt, &pl, p->transpose_a, p->transpose_b, pl.m, pl.n, pl.k, p->alpha,
                    (mat){in[0].data, pl.ar, pl.ac}, (mat){in[1].data, pl.br, pl.bc}, beta,
                    (mat){out[0].data, pl.m, pl.n});
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
    if (!ta) LMX_TRY(batch_gemm(c, dt, &pl, 0, !tb, pl.m, pl.k, pl.n, p->alpha, G, B, b0, dA));
    else LMX_TRY(batch_gemm(c, dt, &pl, tb, 1, pl.k, pl.m, pl.n, p->alpha, B, G, b0, dA));
  }
  if (req[1] != LMX_REQ_NULL) {
    LMX_TRY(lmx_glue_check_like(c, &ig[1], &in[1].shape, dt, "gradient of 'B'"));
    double b1 = req[1] == LMX_REQ_ADD ? 1.0 : 0.0;
    mat dB = {ig[1].data, pl.br, pl.bc};
    if (!tb) LMX_TRY(batch_gemm(c, dt, &pl, !ta, 0, pl.k, pl.n, pl.m, p->alpha, A, G, b1, dB));
    else LMX_TRY(batch_gemm(c, dt, &pl, 1, ta, pl.n, pl.k, pl.m, p->alpha, G, A, b1, dB));
  }
  if (nin == 3 && req[2] != LMX_REQ_NULL) {
    LMX_TRY(lmx_glue_check_like(c, &ig[2], &os, dt, "gradient of 'C'"));
    LMX_CU_TRY(c, lmx_cu_scale(LMX_CU_S(c), dt, lmx_glue_size(&ig[2]), ig[2].data,
                               og[0].data, p->beta, req[2] == LMX_REQ_ADD), "lmx_cu_scale");
  }
  return LMX_OK;
}

int lmx_cuda_fwd__linalg_gemm(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                              const int *req, const lmx_tensor *aux) {
  (void)aux;
  return gemm_fwd(c, in, 3, out, req[0]);
}

int lmx_cuda_bwd__linalg_gemm(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                              const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                              const lmx_tensor *aux) {
  (void)out, (void)aux;
  return gemm_bwd(c, og, in, 3, ig, req);
}

int lmx_cuda_fwd__linalg_gemm2(const lmx_op_ctx *c, const lmx_tensor *in,
                               const lmx_tensor *out, const int *req, const lmx_tensor *aux) {
  (void)aux;
  return gemm_fwd(c, in, 2, out, req[0]);
}

int lmx_cuda_bwd__linalg_gemm2(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                               const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                               const lmx_tensor *aux) {
  (void)out, (void)aux;
  return gemm_bwd(c, og, in, 2, ig, req);
}

/* ---- khatri_rao ------------------------------------------------------------------------- */

int lmx_cuda_fwd_khatri_rao(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                            const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  const lmx_kr_param *p = c->param;
  lmx_kr_args a;
  lmx_shape os;
  LMX_TRY(lmx_cunn_check_float(c, &in[0], 1, "input 'arg0'"));
  LMX_TRY(lmx_kr_setup(c, in, (int)p->num_args, &a, &os));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &os, in[0].dtype, "output"));
  LMX_CU_TRY(c, lmx_cu_khatri_rao(LMX_CU_S(c), in[0].dtype, &a, out[0].data,
                                  req[0] == LMX_REQ_ADD), "lmx_cu_khatri_rao");
  return LMX_OK;
}

int lmx_cuda_bwd_khatri_rao(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                            const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                            const lmx_tensor *aux) {
  (void)out, (void)aux;
  const lmx_kr_param *p = c->param;
  lmx_kr_args a;
  lmx_shape os;
  LMX_TRY(lmx_cunn_check_float(c, &in[0], 1, "input 'arg0'"));
  LMX_TRY(lmx_kr_setup(c, in, (int)p->num_args, &a, &os));
  LMX_TRY(lmx_glue_check_like(c, &og[0], &os, in[0].dtype, "output gradient"));
  for (int i = 0; i < a.n; i++) {
    if (req[i] == LMX_REQ_NULL) continue;
    LMX_TRY(lmx_glue_check_like(c, &ig[i], &in[i].shape, in[0].dtype, "input gradient"));
    LMX_CU_TRY(c, lmx_cu_khatri_rao_bwd(LMX_CU_S(c), in[0].dtype, &a, i, og[0].data,
                                        ig[i].data, req[i] == LMX_REQ_ADD),
               "lmx_cu_khatri_rao_bwd");
  }
  return LMX_OK;
}
