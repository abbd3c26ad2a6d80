/* attn_more.c — CPU glue of the interleaved attention matmuls (descriptors in
 * src/ops/attn_more.c, products in attn_more_plan.h): each product of the plan is one
 * strided batched OpenBLAS loop (lmx_cpu_gemm_sbatch) on the tensors in place.
 * float32 and float64.
 */
#include "../../../kernels/cpu/cpu_kernels.h"
#include "../../tensor/dtype.h"
#include "../attn_more_plan.h"
#include "../op_impl.h"
#include "cpu_ops.h"

static const char *const in_what[4][2] = {
    {"input 'queries_keys_values'", NULL},
    {"input 'queries_keys_values'", "input 'attention'"},
    {"input 'queries'", "input 'keys_values'"},
    {"input 'keys_values'", "input 'attention'"},
};

static int nin_of(int kind) { return kind == LMX_IMM_SELF_QK ? 1 : 2; }

/* dtype and sizes of the inputs, then the plan */
static int check(const lmx_op_ctx *c, int kind, const lmx_tensor *in, lmx_imm_plan *p) {
  LMX_TRY(lmx_cpu_check_float(c, &in[0], in_what[kind][0]));
  lmx_shape s[2] = {in[0].shape, nin_of(kind) == 2 ? in[1].shape : in[0].shape};
  LMX_TRY(lmx_imm_plan_make(c, kind, s, p));
  for (int i = 0; i < nin_of(kind); i++)
    LMX_TRY(lmx_glue_check_like(c, &in[i], &in[i].shape, in[0].dtype, in_what[kind][i]));
  return LMX_OK;
}

static void run(int dt, const lmx_imm_plan *p, const lmx_imm_gemm *g, void *const *t,
                double beta) {
  size_t es = (size_t)lmx_dtype_size(dt);
  lmx_cpu_gemm_sbatch(dt, p->batch, g->ta, g->tb, g->m, g->n, g->k, g->alpha,
                      (char *)t[g->a.t] + (size_t)g->a.off * es, g->a.ld, g->a.stride,
                      (char *)t[g->b.t] + (size_t)g->b.off * es, g->b.ld, g->b.stride, beta,
                      (char *)t[g->c.t] + (size_t)g->c.off * es, g->c.ld, g->c.stride);
}

static int imm_fwd(const lmx_op_ctx *c, int kind, const lmx_tensor *in, const lmx_tensor *out,
                   int req) {
  if (req == LMX_REQ_NULL) return LMX_OK;
  lmx_imm_plan p;
  LMX_TRY(check(c, kind, in, &p));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &p.out, in[0].dtype, "output"));
  void *t[6] = {in[0].data, nin_of(kind) == 2 ? in[1].data : NULL, out[0].data};
  run(in[0].dtype, &p, &p.fwd, t, req == LMX_REQ_ADD ? 1.0 : 0.0);
  return LMX_OK;
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
    if (p.partial[j] && req[j] != LMX_REQ_ADD)
      lmx_cpu_fill(ig[j].data, dt, lmx_glue_size(&ig[j]), 0.0);
  }
  for (int b = 0; b < 2; b++) {
    int j = p.bwd[b].c.t - LMX_IMM_IG0;
    if (req[j] == LMX_REQ_NULL) continue;
    run(dt, &p, &p.bwd[b], t, req[j] == LMX_REQ_ADD ? 1.0 : 0.0);
  }
  return LMX_OK;
}

#define IMM_GLUE(id, kind)                                                                  \
  int lmx_cpu_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,    \
                       const int *req, const lmx_tensor *aux) {                             \
    (void)aux;                                                                              \
    return imm_fwd(c, kind, in, out, req[0]);                                               \
  }                                                                                         \
  int lmx_cpu_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,     \
                       const lmx_tensor *out, const lmx_tensor *ig, const int *req,         \
                       const lmx_tensor *aux) {                                             \
    (void)out, (void)aux;                                                                   \
    return imm_bwd(c, kind, og, in, ig, req);                                               \
  }
IMM_GLUE(_contrib_interleaved_matmul_selfatt_qk, LMX_IMM_SELF_QK)
IMM_GLUE(_contrib_interleaved_matmul_selfatt_valatt, LMX_IMM_SELF_VALATT)
IMM_GLUE(_contrib_interleaved_matmul_encdec_qk, LMX_IMM_ENCDEC_QK)
IMM_GLUE(_contrib_interleaved_matmul_encdec_valatt, LMX_IMM_ENCDEC_VALATT)
