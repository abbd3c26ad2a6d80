/* indexing.c — CUDA glue of take, Embedding, one_hot and where (src/ops/cpu/indexing.c's
 * twin, calling kernels/cuda/indexing.cu on the call's stream).
 *
 * Dims come from src/ops/index_plan.c, shared with the CPU glue; indices, conditions of
 * any dtype. Modes clip and wrap are the CPU's. Mode raise cannot fail the call on the
 * GPU without waiting for the device (the indices live there), so the kernel clamps
 * (never reads out of bounds, results equal clip's) and records the first bad index in
 * the device's raise word (lmx_cuda_raise_for), which the runtime reports as the CPU's
 * error at the next synchronisation (wait_to_read, a copy to the host, waitall), as
 * MXNet's GPU take does. Embedding's and take's gradients
 * are the deterministic scatter of lmx_cu_take_bwd (same sums as the CPU, bit for bit).
 * Data dtypes float32, float64 and float16 (take's forward copies any dtype).
 */
#include "../../tensor/dtype.h"
#include "../index_plan.h"
#include "../op_impl.h"
#include "k1_glue.h"

static int cu_mode(int mode) {
  return mode == LMX_TAKE_WRAP ? LMX_CU_TAKE_WRAP
         : mode == LMX_TAKE_RAISE ? LMX_CU_TAKE_RAISE : LMX_CU_TAKE_CLIP;
}

static int take_fwd(const lmx_op_ctx *c, const lmx_tensor *a, const lmx_tensor *idx,
                    const lmx_tensor *out, int req, int embedding) {
  if (req == LMX_REQ_NULL) return LMX_OK;
  if (req == LMX_REQ_ADD) return lmx_cuda_fail_req_add(c, "output");
  lmx_take_plan t;
  LMX_TRY(lmx_plan_take(c, a, idx, embedding, &t));
  LMX_TRY(lmx_glue_check_size(c, out, t.outer * t.K * t.inner, "output"));
  if (out->dtype != a->dtype) return lmx_cuda_fail_dtype(c, out, "output");
  lmx_cu_raise bad = {NULL, 0};
  if (t.mode == LMX_TAKE_RAISE && t.K * t.outer * t.inner > 0)
    LMX_TRY(lmx_cuda_raise_for(c, lmx_take_bad_index_text, t.A, &bad));
  return lmx_cuda_fail(c, lmx_cu_take(LMX_CU_S(c), a->dtype, idx->dtype, t.outer, t.A, t.inner,
                                      t.K, out->data, a->data, idx->data, cu_mode(t.mode), bad),
                       "lmx_cu_take");
}

static int take_bwd(const lmx_op_ctx *c, const lmx_tensor *g, const lmx_tensor *a,
                    const lmx_tensor *idx, const lmx_tensor *ga, int req, int embedding) {
  if (req == LMX_REQ_NULL) return LMX_OK;
  lmx_take_plan t;
  LMX_TRY(lmx_plan_take(c, a, idx, embedding, &t));
  LMX_TRY(lmx_cuda_check_float(c, ga, "input gradient"));
  LMX_TRY(lmx_glue_check_like(c, ga, &a->shape, a->dtype, "input gradient"));
  LMX_TRY(lmx_glue_check_like(c, g, &g->shape, a->dtype, "output gradient"));
  LMX_TRY(lmx_glue_check_size(c, g, t.outer * t.K * t.inner, "output gradient"));
  if (t.K == 0 || t.A == 0) return lmx_cuda_zero_grad(c, ga, req);
  return lmx_cuda_fail(c, lmx_cu_take_bwd(LMX_CU_S(c), ga->dtype, idx->dtype, t.outer, t.A,
                                          t.inner, t.K, ga->data, g->data, idx->data,
                                          cu_mode(t.mode), req == LMX_REQ_ADD),
                       "lmx_cu_take_bwd");
}

int lmx_cuda_fwd_take(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                      const int *req, const lmx_tensor *aux) {
  (void)aux;
  return take_fwd(c, &in[0], &in[1], &out[0], req[0], 0);
}

int lmx_cuda_bwd_take(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                      const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                      const lmx_tensor *aux) {
  (void)out, (void)aux;
  LMX_TRY(lmx_cuda_zero_grad(c, &ig[1], req[1]));
  return take_bwd(c, &og[0], &in[0], &in[1], &ig[0], req[0], 0);
}

static int embedding_weight(const lmx_op_ctx *c, const lmx_tensor *w) {
  if (w->shape.ndim != 2) return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'weight': expected 2-D");
  return LMX_OK;
}

int lmx_cuda_fwd_Embedding(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                           const int *req, const lmx_tensor *aux) {
  (void)aux;
  LMX_TRY(embedding_weight(c, &in[1]));
  return take_fwd(c, &in[1], &in[0], &out[0], req[0], 1);
}

int lmx_cuda_bwd_Embedding(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                           const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                           const lmx_tensor *aux) {
  (void)out, (void)aux;
  LMX_TRY(embedding_weight(c, &in[1]));
  LMX_TRY(lmx_cuda_zero_grad(c, &ig[0], req[0]));
  return take_bwd(c, &og[0], &in[1], &in[0], &ig[1], req[1], 1);
}

/* ---- one_hot ------------------------------------------------------------------------ */

int lmx_cuda_fwd_one_hot(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                         const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  if (req[0] == LMX_REQ_ADD) return lmx_cuda_fail_req_add(c, "output");
  const lmx_onehot_param *p = c->param;
  int64_t depth = p->depth, K = lmx_glue_size(&in[0]);
  LMX_TRY(lmx_glue_check_size(c, &in[0], K, "input 'indices'"));
  LMX_TRY(lmx_glue_check_size(c, &out[0], K * depth, "output"));
  if (!lmx_dtype_valid(out[0].dtype)) return lmx_cuda_fail_dtype(c, &out[0], "output");
  return lmx_cuda_fail(c, lmx_cu_one_hot(LMX_CU_S(c), out[0].dtype, in[0].dtype, K, depth,
                                         out[0].data, in[0].data, p->on_value, p->off_value),
                       "lmx_cu_one_hot");
}

/* ---- where -------------------------------------------------------------------------- */

static int where_check(const lmx_op_ctx *c, const lmx_tensor *in, int64_t *n, int64_t *row) {
  LMX_TRY(lmx_cuda_check_float(c, &in[1], "input 'x'"));
  return lmx_plan_where(c, in, n, row);
}

int lmx_cuda_fwd_where(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                       const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  int64_t n, row;
  LMX_TRY(where_check(c, in, &n, &row));
  LMX_TRY(lmx_glue_check_like(c, &out[0], &in[1].shape, in[1].dtype, "output"));
  return lmx_cuda_fail(c, lmx_cu_where(LMX_CU_S(c), in[1].dtype, in[0].dtype, n, row,
                                       out[0].data, in[0].data, in[1].data, in[2].data,
                                       req[0] == LMX_REQ_ADD),
                       "lmx_cu_where");
}

int lmx_cuda_bwd_where(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                       const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                       const lmx_tensor *aux) {
  (void)out, (void)aux;
  int64_t n, row;
  LMX_TRY(where_check(c, in, &n, &row));
  LMX_TRY(lmx_glue_check_like(c, &og[0], &in[1].shape, in[1].dtype, "output gradient"));
  LMX_TRY(lmx_cuda_zero_grad(c, &ig[0], req[0]));
  for (int s = 1; s <= 2; s++) {
    if (req[s] == LMX_REQ_NULL) continue;
    LMX_TRY(lmx_glue_check_like(c, &ig[s], &in[1].shape, in[1].dtype, "input gradient"));
    LMX_TRY(lmx_cuda_fail(c, lmx_cu_where_bwd(LMX_CU_S(c), in[1].dtype, in[0].dtype, n, row, s,
                                              ig[s].data, og[0].data, in[0].data,
                                              req[s] == LMX_REQ_ADD),
                          "lmx_cu_where_bwd"));
  }
  return LMX_OK;
}
