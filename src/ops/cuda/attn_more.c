/* attn_more.c — CUDA glue of the interleaved attention matmuls (src/ops/cpu/attn_more.c's
 * twin, on the call's stream): each product of the plan (attn_more_plan.h) is one
 * strided-batched cuBLAS request (kernels/cuda/cu_gemm.h) over every attention batch,
 * the operands strided in place in the interleaved tensors; a partly written input
 * gradient is zeroed first with lmx_cu_fill. float32, float64 and float16 (float32
 * compute, as _linalg_gemm on the GPU).
 */
#include "../attn_more_plan.h"
#include "nn_util.h"

static const char *const in_what[4][2] = {
    {"input 'queries_keys_values'", NULL},
    {"input 'queries_keys_values'", "input 'attention'"},
    {"input 'queries'", "input 'keys_values'"},
    {"input 'keys_values'", "input 'attention'"},
};

static int nin_of(int kind) { return kind == LMX_IMM_SELF_QK ? 1 : 2; }

static int check(const lmx_op_ctx *c, int kind, const lmx_tensor *in, lmx_imm_plan *p) {
  LMX_TRY(lmx_cunn_check_float(c, &in[0], 1, in_what[kind][0]));
  lmx_shape s[2] = {in[0].shape, nin_of(kind) == 2 ? in[1].shape : in[0].shape};
  LMX_TRY(lmx_imm_plan_make(c, kind, s, p));
  for (int i = 0; i < nin_of(kind); i++)
    LMX_TRY(lmx_glue_check_like(c, &in[i], &in[i].shape, in[0].dtype, in_what[kind][i]));
  return LMX_OK;
}

static void *at(void *const *t, const lmx_imm_mat *x, int dt) {
  return (char *)t[x->t] + (size_t)x->off * (size_t)lmx_dtype_size(dt);
}

static int run(const lmx_op_ctx *c, int dt, const lmx_imm_plan *p, const lmx_imm_gemm *g,
               void *const *t, double beta) {
  if (p->batch == 0 || g->m == 0 || g->n == 0) return LMX_OK;
  lmx_cu_gemm_req r = {dt, g->ta, g->tb, g->m, g->n, g->k, p->batch, g->alpha, beta,
                       at(t, &g->a, dt), g->a.ld, g->a.stride,
                       at(t, &g->b, dt), g->b.ld, g->b.stride,
                       at(t, &g->c, dt), g->c.ld, g->c.stride};
  LMX_CU_TRY(c, lmx_cu_gemm_req_run(LMX_CU_S(c), &r), "lmx_cu_gemm_req_run");
  return LMX_OK;
}

static int imm_fwd(const lmx_op_ctx *c, int kind, const lmx_tensor *in, const lmx_tensor *out,
                   int req) {
  if (req == LMX_REQ_NULL) return LMX_OK;
  lmx_imm_plan p;
  LMX_TRY(check(c, kind, in, &p));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &p.out, in[0].dtype, "output"));
  void *t[6] = {in[0].data, nin_of(kind) == 2 ? in[1].data : NULL, out[0].data};
  return run(c, in[0].dtype, &p, &p.fwd, t, req == LMX_REQ_ADD ? 1.0 : 0.0);
}

static int imm_bwd(const lmx_op_ctx *c, int kind, const lmx_tensor *og, const lmx_tensor *in,
                   const lmx_tensor *ig, const int *req) {
  lmx_imm_plan p;
  LMX_TRY(check(c, kind, in, &p));
  int dt = in[0].dtype, nin = nin_of(kind);
  LMX_TRY(lmx_glue_check_like(c, &og[0], &p.out, dt, "output gradient"));
  void *t[6] = {in[0].data, nin == 2 ? in[1].data : NULL, NULL, og[0].data, NULL, NULL};
  for (int j = 0; j < nin; j++) {
    if (req[j] == LMX_REQ_NULL) continue;
    char what[64];
    snprintf(what, sizeof what, "gradient of %s", in_what[kind][j] + 6);
    LMX_TRY(lmx_glue_check_like(c, &ig[j], &in[j].shape, dt, what));
    t[LMX_IMM_IG0 + j] = ig[j].data;
    if (p.partial[j] && req[j] != LMX_REQ_ADD && lmx_glue_size(&ig[j]) > 0)
      LMX_CU_TRY(c, lmx_cu_fill(LMX_CU_S(c), ig[j].data, dt, lmx_glue_size(&ig[j]), 0.0),
                 "lmx_cu_fill");
  }
  for (int b = 0; b < 2; b++) {
    int j = p.bwd[b].c.t - LMX_IMM_IG0;
    if (req[j] == LMX_REQ_NULL) continue;
    LMX_TRY(run(c, dt, &p, &p.bwd[b], t, req[j] == LMX_REQ_ADD ? 1.0 : 0.0));
  }
  return LMX_OK;
}

#define IMM_GLUE(id, kind)                                                                  \
  int lmx_cuda_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,   \
                        const int *req, const lmx_tensor *aux) {                            \
    (void)aux;                                                                              \
    return imm_fwd(c, kind, in, out, req[0]);                                               \
  }                                                                                         \
  int lmx_cuda_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,    \
                        const lmx_tensor *out, const lmx_tensor *ig, const int *req,        \
                        const lmx_tensor *aux) {                                            \
    (void)out, (void)aux;                                                                   \
    return imm_bwd(c, kind, og, in, ig, req);                                               \
  }
IMM_GLUE(_contrib_interleaved_matmul_selfatt_qk, LMX_IMM_SELF_QK)
IMM_GLUE(_contrib_interleaved_matmul_selfatt_valatt, LMX_IMM_SELF_VALATT)
IMM_GLUE(_contrib_interleaved_matmul_encdec_qk, LMX_IMM_ENCDEC_QK)
IMM_GLUE(_contrib_interleaved_matmul_encdec_valatt, LMX_IMM_ENCDEC_VALATT)
