/* nn_fc.c — CPU glue of the GEMM operators: FullyConnected, dot, batch_dot.
 *
 * FullyConnected reads data as a matrix [m, k] (flatten: m = dim 0; otherwise every dim
 * but the last), weight [n, k], bias [n], output [m, n]; one sgemm per product, bias
 * added by rows, the bias gradient as a column sum. dot / batch_dot map MXNet's
 * transpose_a / transpose_b onto the GEMM flags: a (..., k) is [m, k] (transposed: a is
 * [k, m] with k = a.shape[0]); b (k, ...) is [k, n] (transposed: [n, k], k = last dim).
 * Gradients are again GEMMs with the flags swapped; req ADD becomes beta = 1.
 * MXNet 1.9: src/operator/nn/fully_connected-inl.h, tensor/dot-inl.h.
 */
#include "../../../kernels/cpu/cpu_kernels.h"
#include "../../tensor/dtype.h"
#include "../nn_plan.h"
#include "../op_impl.h"
#include "cpu_ops.h"

/* ---- FullyConnected ------------------------------------------------------------------- */

typedef lmx_fc_dims fc_dims;

/* dims are shared with the CUDA glue (nn_plan.c); the dtypes are the CPU's (float16 and
 * bfloat16 calls are staged in float32 before they get here) */
static int fc_check(const lmx_op_ctx *c, const lmx_tensor *in, fc_dims *d) {
  LMX_TRY(lmx_cpu_check_float_lowp(c, &in[0], "input 'data'"));
  return lmx_fc_plan(c, in, d);
}

int lmx_cpu_fwd_FullyConnected(const lmx_op_ctx *c, const lmx_tensor *in,
                               const lmx_tensor *out, const int *req, const lmx_tensor *aux) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  if (lmx_cpu_is_lowp(in[0].dtype))
    return lmx_cpu_fc_lowp_fwd(c, in, out, req, aux); /* nn_fc_lowp.c */
  fc_dims d = {0};
  LMX_TRY(fc_check(c, in, &d));
  LMX_TRY(lmx_glue_check_size(c, &out[0], d.m * d.n, "output"));
  if (out[0].dtype != in[0].dtype) return lmx_cpu_fail_dtype(c, &out[0], "output");
  lmx_cpu_fc_fwd(in[0].dtype, d.m, d.k, d.n, out[0].data, in[0].data, in[1].data,
                 d.bias ? in[2].data : NULL, req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

int lmx_cpu_bwd_FullyConnected(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                               const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                               const lmx_tensor *aux) {
  if (lmx_cpu_is_lowp(in[0].dtype))
    return lmx_cpu_fc_lowp_bwd(c, og, in, out, ig, req, aux); /* nn_fc_lowp.c */
  fc_dims d = {0};
  LMX_TRY(fc_check(c, in, &d));
  LMX_TRY(lmx_glue_check_size(c, &og[0], d.m * d.n, "output gradient"));
  int dt = in[0].dtype, nin = d.bias ? 3 : 2;
  for (int i = 0; i < nin; i++)
    if (req[i] != LMX_REQ_NULL)
      LMX_TRY(lmx_glue_check_like(c, &ig[i], &in[i].shape, dt, "input gradient"));
  if (req[0]) lmx_cpu_fc_bwd_data(dt, d.m, d.k, d.n, ig[0].data, og[0].data, in[1].data,
                                  req[0] == LMX_REQ_ADD);
  if (req[1]) lmx_cpu_fc_bwd_weight(dt, d.m, d.k, d.n, ig[1].data, og[0].data, in[0].data,
                                    req[1] == LMX_REQ_ADD);
  if (d.bias && req[2])
    lmx_cpu_sum_rows(dt, d.m, d.n, ig[2].data, og[0].data, req[2] == LMX_REQ_ADD);
  return LMX_OK;
}

int lmx_cpu_fc_act_forward(const lmx_op_ctx *fc, const lmx_tensor *f_in, const int *f_req,
                           const lmx_op_ctx *ac, const lmx_tensor *a_out, const int *a_req) {
  int dt = f_in[0].dtype, act = lmx_cpu_act_code(ac);
  fc_dims d = {0};
  if ((dt != LMX_FLOAT32 && dt != LMX_FLOAT64) || act < 0 || f_req[0] == LMX_REQ_NULL ||
      f_req[0] == LMX_REQ_ADD || a_req[0] == LMX_REQ_NULL || a_req[0] == LMX_REQ_ADD ||
      lmx_fc_plan(fc, f_in, &d) != LMX_OK || a_out->dtype != dt ||
      lmx_glue_size(a_out) != d.m * d.n) /* lmx_fc_plan checked the inputs' dtypes */
    return 0;
  for (int i = 0; i < (d.bias ? 3 : 2); i++)
    if (lmx_cpu_tensors_overlap(a_out, &f_in[i])) return 0;
  return lmx_cpu_fc_act_fwd(dt, d.m, d.k, d.n, a_out->data, f_in[0].data, f_in[1].data,
                            d.bias ? f_in[2].data : NULL, act)
             ? 1
             : 2;
}

/* Float16/bfloat16 calls are staged in float32 (lowp_stage.c); float32 ones need none. */
size_t lmx_cpu_ws_FullyConnected(const lmx_op_ctx *c, const lmx_shape *in,
                                 const lmx_shape *out) {
  return lmx_cpu_lowp_ws(c, in, out, NULL);
}

/* ---- dot / batch_dot ------------------------------------------------------------------ */

typedef lmx_mm_dims mm_dims;

static int mm_check(const lmx_op_ctx *c, const lmx_tensor *in, int batched, mm_dims *d) {
  LMX_TRY(lmx_cpu_check_float(c, &in[0], "input 'lhs'"));
  if (in[1].dtype != in[0].dtype) return lmx_cpu_fail_dtype(c, &in[1], "input 'rhs'");
  return lmx_mm_plan(c, in, batched, d);
}

static int mm_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                  const int *req, int batched) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  mm_dims d = {0};
  LMX_TRY(mm_check(c, in, batched, &d));
  LMX_TRY(lmx_glue_check_size(c, &out[0], d.batch * d.m * d.n, "output"));
  if (out[0].dtype != in[0].dtype) return lmx_cpu_fail_dtype(c, &out[0], "output");
  lmx_cpu_batch_gemm(in[0].dtype, d.batch, d.ta, d.tb, d.m, d.n, d.k, in[0].data, in[1].data,
                     out[0].data, req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

static int mm_bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                  const lmx_tensor *ig, const int *req, int batched) {
  mm_dims d = {0};
  LMX_TRY(mm_check(c, in, batched, &d));
  LMX_TRY(lmx_glue_check_size(c, &og[0], d.batch * d.m * d.n, "output gradient"));
  int dt = in[0].dtype;
  for (int i = 0; i < 2; i++)
    if (req[i] != LMX_REQ_NULL)
      LMX_TRY(lmx_glue_check_like(c, &ig[i], &in[i].shape, dt, "input gradient"));
  const void *A = in[0].data, *B = in[1].data, *G = og[0].data;
  if (req[0]) { /* dA = G op(B)ᵀ, stored as A is */
    if (!d.ta) lmx_cpu_batch_gemm(dt, d.batch, 0, !d.tb, d.m, d.k, d.n, G, B, ig[0].data,
                                  req[0] == LMX_REQ_ADD);
    else lmx_cpu_batch_gemm(dt, d.batch, d.tb, 1, d.k, d.m, d.n, B, G, ig[0].data,
                            req[0] == LMX_REQ_ADD);
  }
  if (req[1]) { /* dB = op(A)ᵀ G, stored as B is */
    if (!d.tb) lmx_cpu_batch_gemm(dt, d.batch, !d.ta, 0, d.k, d.n, d.m, A, G, ig[1].data,
                                  req[1] == LMX_REQ_ADD);
    else lmx_cpu_batch_gemm(dt, d.batch, 1, d.ta, d.n, d.k, d.m, G, A, ig[1].data,
                            req[1] == LMX_REQ_ADD);
  }
  return LMX_OK;
}

int lmx_cpu_fwd_dot(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                    const int *req, const lmx_tensor *aux) {
  (void)aux;
  return mm_fwd(c, in, out, req, 0);
}

int lmx_cpu_bwd_dot(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                    const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                    const lmx_tensor *aux) {
  (void)out, (void)aux;
  return mm_bwd(c, og, in, ig, req, 0);
}

int lmx_cpu_fwd_batch_dot(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                          const int *req, const lmx_tensor *aux) {
  (void)aux;
  return mm_fwd(c, in, out, req, 1);
}

int lmx_cpu_bwd_batch_dot(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                          const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                          const lmx_tensor *aux) {
  (void)out, (void)aux;
  return mm_bwd(c, og, in, ig, req, 1);
}
