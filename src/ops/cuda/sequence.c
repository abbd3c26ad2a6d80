/* sequence.c — CUDA glue of SequenceMask, SequenceLast and SequenceReverse
 * (src/ops/cpu/sequence.c's twin, calling kernels/cuda/indexing.cu on the call's stream).
 *
 * The [T, N, R] / [N, T, R] view comes from src/ops/index_plan.c, shared with the CPU
 * glue; lengths of any dtype are truncated and clamped on the device exactly as the CPU
 * does ([0, T], [1, T] for SequenceLast), so no length can index outside the data.
 * Gradients route the head gradient through the same positions; sequence_length gets a
 * zero gradient. float32, float64 and float16.
 */
#include "../index_plan.h"
#include "../op_impl.h"
#include "k1_glue.h"

/* the plan plus the float check of the data */
static int plan(const lmx_op_ctx *c, const lmx_tensor *in, lmx_seq_plan *g) {
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data'"));
  return lmx_plan_seq(c, in, g);
}

#define LEN(g, in) ((g).nin > 1 ? (in)[1].data : NULL)
#define LDT(g, in) ((g).nin > 1 ? (in)[1].dtype : LMX_FLOAT32)

/* Shared start of the backwards: sequence_length's zero gradient, the plan, the checks
 * of the head gradient (of `og_shape`) and the data gradient; *run 0: nothing wanted. */
static int bwd_start(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                     const lmx_tensor *ig, const int *req, lmx_seq_plan *g, int same_shape,
                     int *run) {
  *run = 0;
  if (((const lmx_seq_param *)c->param)->use_sequence_length)
    LMX_TRY(lmx_cuda_zero_grad(c, &ig[1], req[1]));
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(plan(c, in, g));
  int dt = in[0].dtype;
  if (same_shape) LMX_TRY(lmx_glue_check_like(c, &og[0], &in[0].shape, dt, "output gradient"));
  else {
    LMX_TRY(lmx_glue_check_size(c, &og[0], g->N * g->R, "output gradient"));
    if (og[0].dtype != dt) return lmx_cuda_fail_dtype(c, &og[0], "output gradient");
  }
  LMX_TRY(lmx_glue_check_like(c, &ig[0], &in[0].shape, dt, "gradient of 'data'"));
  *run = 1;
  return LMX_OK;
}

/* ---- SequenceMask ------------------------------------------------------------------ */

int lmx_cuda_fwd_SequenceMask(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                              const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  lmx_seq_plan g;
  LMX_TRY(plan(c, in, &g));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, in[0].dtype, "output"));
  return lmx_cuda_fail(c, lmx_cu_seq_mask(LMX_CU_S(c), in[0].dtype, LDT(g, in), g.axis, g.T,
                                          g.N, g.R, out[0].data, in[0].data, LEN(g, in),
                                          ((const lmx_seq_param *)c->param)->value,
                                          req[0] == LMX_REQ_ADD),
                       "lmx_cu_seq_mask");
}

int lmx_cuda_bwd_SequenceMask(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                              const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                              const lmx_tensor *aux) {
  (void)out, (void)aux;
  lmx_seq_plan g;
  int run;
  LMX_TRY(bwd_start(c, og, in, ig, req, &g, 1, &run));
  if (!run) return LMX_OK;
  return lmx_cuda_fail(c, lmx_cu_seq_mask(LMX_CU_S(c), in[0].dtype, LDT(g, in), g.axis, g.T,
                                          g.N, g.R, ig[0].data, og[0].data, LEN(g, in), 0.0,
                                          req[0] == LMX_REQ_ADD),
                       "lmx_cu_seq_mask");
}

/* ---- SequenceLast ------------------------------------------------------------------ */

int lmx_cuda_fwd_SequenceLast(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                              const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  lmx_seq_plan g;
  LMX_TRY(plan(c, in, &g));
  LMX_TRY(lmx_glue_check_size(c, &out[0], g.N * g.R, "output"));
  if (out[0].dtype != in[0].dtype) return lmx_cuda_fail_dtype(c, &out[0], "output");
  if (g.T == 0) return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': empty sequence axis");
  return lmx_cuda_fail(c, lmx_cu_seq_last(LMX_CU_S(c), in[0].dtype, LDT(g, in), g.axis, g.T,
                                          g.N, g.R, out[0].data, in[0].data, LEN(g, in),
                                          req[0] == LMX_REQ_ADD),
                       "lmx_cu_seq_last");
}

int lmx_cuda_bwd_SequenceLast(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                              const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                              const lmx_tensor *aux) {
  (void)out, (void)aux;
  lmx_seq_plan g;
  int run;
  LMX_TRY(bwd_start(c, og, in, ig, req, &g, 0, &run));
  if (!run) return LMX_OK;
  if (g.T == 0) return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': empty sequence axis");
  return lmx_cuda_fail(c, lmx_cu_seq_last_bwd(LMX_CU_S(c), in[0].dtype, LDT(g, in), g.axis, g.T,
                                              g.N, g.R, ig[0].data, og[0].data, LEN(g, in),
                                              req[0] == LMX_REQ_ADD),
                       "lmx_cu_seq_last_bwd");
}

/* ---- SequenceReverse ----------------------------------------------------------------- */

static int reverse(const lmx_op_ctx *c, const lmx_seq_plan *g, const lmx_tensor *in, void *dst,
                   const void *src, int req) {
  if (dst == src) return lmx_op_fail(c, LMX_ERR_ARG, "output: cannot reverse in place");
  return lmx_cuda_fail(c, lmx_cu_seq_reverse(LMX_CU_S(c), in[0].dtype, LDT(*g, in), g->axis,
                                             g->T, g->N, g->R, dst, src, LEN(*g, in),
                                             req == LMX_REQ_ADD),
                       "lmx_cu_seq_reverse");
}

int lmx_cuda_fwd_SequenceReverse(const lmx_op_ctx *c, const lmx_tensor *in,
                                 const lmx_tensor *out, const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  lmx_seq_plan g;
  LMX_TRY(plan(c, in, &g));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[0].shape, in[0].dtype, "output"));
  return reverse(c, &g, in, out[0].data, in[0].data, req[0]);
}

int lmx_cuda_bwd_SequenceReverse(const lmx_op_ctx *c, const lmx_tensor *og,
                                 const lmx_tensor *in, const lmx_tensor *out,
                                 const lmx_tensor *ig, const int *req, const lmx_tensor *aux) {
  (void)out, (void)aux;
  lmx_seq_plan g;
  int run;
  LMX_TRY(bwd_start(c, og, in, ig, req, &g, 1, &run));
  if (!run) return LMX_OK;
  return reverse(c, &g, in, ig[0].data, og[0].data, req[0]);
}
