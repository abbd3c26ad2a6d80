/* nn_fc_lowp.c — FullyConnected in float16 and bfloat16 on the CPU.
 *
 * bfloat16 runs the AVX512_BF16 dot-product kernel (kernels/cpu/lowp_bf16.c) on CPUs that
 * have it: forward reads the bfloat16 data in place, backward dots transposed bfloat16
 * copies kept in the workspace. Everything else — float16, and bfloat16 on other CPUs or
 * with the fast path forced off — widens to float32 twins in the workspace and runs the
 * float32 GEMMs (lowp_stage.c), rounding each result once. Both give the float32 sums of exact
 * products rounded once, in different orders: they agree within bfloat16 rounding. MXNet 1.9 runs
 * bfloat16 FullyConnected through oneDNN on the CPU; float16 there computes in float32 too.
 */
#include "../../../kernels/cpu/cpu_kernels.h"
#include "../../tensor/dtype.h"
#include "../nn_plan.h"
#include "../op_impl.h"
#include "cpu_ops.h"

int lmx_cpu_fc_lowp_fwd(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                        const int *req, const lmx_tensor *aux) {
  lmx_fc_dims d = {0};
  LMX_TRY(lmx_fc_plan(c, in, &d)); /* shapes, and weight/bias dtypes like the data's */
  LMX_TRY(lmx_glue_check_size(c, &out[0], d.m * d.n, "output"));
  if (out[0].dtype != in[0].dtype)
    return lmx_op_fail(c, LMX_ERR_DTYPE, "output: expected %s like 'data', got %s",
                       lmx_dtype_str(in[0].dtype), lmx_dtype_str(out[0].dtype));
  if (in[0].dtype == LMX_BFLOAT16 &&
      lmx_cpu_bf16_fc(d.m, d.k, d.n, out[0].data, in[0].data, in[1].data,
                      d.bias ? in[2].data : NULL, req[0] == LMX_REQ_ADD) == 0)
    return LMX_OK;
  return lmx_cpu_lowp_fwd(c, lmx_cpu_fwd_FullyConnected, NULL, in, out, req, aux);
}

/* bfloat16 backward on AVX512_BF16: transposed bfloat16 copies in the workspace (the
 * staged layout would need more), then the forward kernel; else staging. */
static int bf16_bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                    const lmx_tensor *ig, const int *req, int *done) {
  *done = 0;
  if (in[0].dtype != LMX_BFLOAT16 || !lmx_cpu_bf16_dot_available()) return LMX_OK;
  lmx_fc_dims d = {0};
  LMX_TRY(lmx_fc_plan(c, in, &d));
  LMX_TRY(lmx_glue_check_like(c, &og[0], &og[0].shape, LMX_BFLOAT16, "output gradient"));
  LMX_TRY(lmx_glue_check_size(c, &og[0], d.m * d.n, "output gradient"));
  for (int i = 0; i < (d.bias ? 3 : 2); i++)
    if (req[i] != LMX_REQ_NULL)
      LMX_TRY(lmx_glue_check_like(c, &ig[i], &in[i].shape, LMX_BFLOAT16, "input gradient"));
  int64_t a = d.n * d.k, b = d.m * d.n + d.m * d.k;
  LMX_TRY(lmx_glue_check_ws(c, (size_t)(a > b ? a : b) * 2));
  *done = lmx_cpu_bf16_fc_bwd(d.m, d.k, d.n, og[0].data, in[0].data, in[1].data,
                              req[0] ? ig[0].data : NULL, req[0] == LMX_REQ_ADD,
                              req[1] ? ig[1].data : NULL, req[1] == LMX_REQ_ADD,
                              d.bias && req[2] ? ig[2].data : NULL, d.bias && req[2] == LMX_REQ_ADD,
                              c->workspace) == 0;
  return LMX_OK;
}

int lmx_cpu_fc_lowp_bwd(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                        const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                        const lmx_tensor *aux) {
  int done = 0;
  LMX_TRY(bf16_bwd(c, og, in, ig, req, &done));
  if (done) return LMX_OK;
  return lmx_cpu_lowp_bwd(c, lmx_cpu_bwd_FullyConnected, NULL, og, in, out, ig, req, aux);
}

const char *lmx_cpu_fc_bf16_path(void) {
  return lmx_cpu_bf16_dot_available() ? "avx512_bf16" : "float32";
}

void lmx_cpu_fc_bf16_force_fallback(int on) {
  lmx_cpu_bf16_dot_force_off(on);
}
