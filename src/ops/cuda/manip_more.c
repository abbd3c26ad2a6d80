/* manip_more.c — CUDA glue of src/ops/manip_more.c (src/ops/cpu/manip_more.c's twin):
 * _split_v2 as strided copies both ways, argmax_channel on the argmax launcher, _eye as
 * a fill and one strided copy of its first one along the diagonal, and the ranges
 * (_arange, _contrib_arange_like) by doubling: the first `repeat` values are filled,
 * then each launch writes y[len, 2·len) = y[0, len) + (len / repeat)·step (computed in
 * double, one rounding per launch), about log2(n / repeat) launches and no kernel of
 * its own. Values may differ from the CPU's (one rounding from double) in the last bit.
 */
#include "../../tensor/dtype.h"
#include "../manip_params.h"
#include "../manip_plan.h"
#include "../op_impl.h"
#include "k1_glue.h"

static char *at(const lmx_tensor *t, int64_t elems) {
  return (char *)t->data + (size_t)elems * (size_t)lmx_dtype_size(t->dtype);
}

static int fail_rc(const lmx_op_ctx *c, int rc, const lmx_tensor *t, const char *what,
                   const char *kernel) {
  if (rc == -1)
    return lmx_op_fail(c, LMX_ERR_DTYPE, "%s: req 'add' and gradients need float32, float64 "
                       "or float16 on the GPU, got %s", what, lmx_dtype_str(t->dtype));
  return lmx_cuda_fail(c, rc, kernel);
}

/* ---- _split_v2 ----------------------------------------------------------------------------- */

int lmx_cuda_fwd__split_v2(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                           const int *req, const lmx_tensor *aux) {
  (void)aux;
  int n = lmx_op_num_outputs(c->op, c->param);
  for (int i = 0; i < n; i++) {
    if (req[i] == LMX_REQ_NULL) continue;
    lmx_mplan_copy p;
    LMX_TRY(lmx_mplan_copy_of(c, i, &in[0], &out[i], 0, &p));
    LMX_TRY(fail_rc(c, lmx_cu_strided_copy(LMX_CU_S(c), out[i].dtype, p.nd, p.shape,
                                           at(&out[i], p.yoff), p.ystr, at(&in[0], p.xoff),
                                           p.xstr, req[i] == LMX_REQ_ADD),
                    &out[i], "output", "lmx_cu_strided_copy"));
  }
  return LMX_OK;
}

int lmx_cuda_bwd__split_v2(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                           const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                           const lmx_tensor *aux) {
  (void)in, (void)out, (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_cuda_check_float(c, &ig[0], "input gradient"));
  LMX_TRY(lmx_glue_check_size(c, &ig[0], lmx_glue_size(&ig[0]), "input gradient"));
  LMX_TRY(lmx_cuda_zero_grad(c, &ig[0], req[0]));
  int n = lmx_op_num_outputs(c->op, c->param);
  for (int i = 0; i < n; i++) {
    if (!og[i].data) continue; /* no head gradient: zeros */
    lmx_mplan_copy p;
    LMX_TRY(lmx_mplan_copy_of(c, i, &ig[0], &og[i], 1, &p));
    LMX_TRY(fail_rc(c, lmx_cu_strided_copy(LMX_CU_S(c), ig[0].dtype, p.nd, p.shape,
                                           at(&ig[0], p.xoff), p.xstr, at(&og[i], p.yoff),
                                           p.ystr, req[0] == LMX_REQ_ADD),
                    &ig[0], "input gradient", "lmx_cu_strided_copy"));
  }
  return LMX_OK;
}

/* ---- argmax_channel -------------------------------------------------------------------------- */

int lmx_cuda_fwd_argmax_channel(const lmx_op_ctx *c, const lmx_tensor *in,
                                const lmx_tensor *out, const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  if (req[0] == LMX_REQ_ADD) return lmx_cuda_fail_req_add(c, "output");
  LMX_TRY(lmx_cuda_check_float(c, &in[0], "input 'data'"));
  int64_t outer, len;
  LMX_TRY(lmx_mplan_argmax_channel(c, &in[0], &out[0], &outer, &len));
  return lmx_cuda_fail(c, lmx_cu_argmax(LMX_CU_S(c), 0, in[0].dtype, outer, len, 1, in[0].data,
                                        out[0].data),
                       "lmx_cu_argmax");
}

/* ---- generators ------------------------------------------------------------------------------ */

static int range_fwd(const lmx_op_ctx *c, const lmx_tensor *out, const int *req) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  if (req[0] == LMX_REQ_ADD) return lmx_cuda_fail_req_add(c, "output");
  lmx_mplan_range r;
  LMX_TRY(lmx_mplan_range_of(c, &out[0], &r));
  int dt = out[0].dtype;
  int64_t first = r.repeat < r.n ? r.repeat : r.n;
  LMX_TRY(lmx_cuda_fail(c, lmx_cu_fill(LMX_CU_S(c), out[0].data, dt, first, r.start),
                        "lmx_cu_fill"));
  for (int64_t len = first; len < r.n; len *= 2) {
    int64_t m = r.n - len < len ? r.n - len : len;
    double add = (double)(len / r.repeat) * r.step;
    LMX_TRY(lmx_cuda_fail(c, lmx_cu_scalar(LMX_CU_S(c), LMX_BIN_ADD, dt, m, at(&out[0], len),
                                           out[0].data, add, 0),
                          "lmx_cu_scalar"));
  }
  return LMX_OK;
}

int lmx_cuda_fwd__arange(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                         const int *req, const lmx_tensor *aux) {
  (void)in, (void)aux;
  return range_fwd(c, out, req);
}

int lmx_cuda_fwd__contrib_arange_like(const lmx_op_ctx *c, const lmx_tensor *in,
                                      const lmx_tensor *out, const int *req,
                                      const lmx_tensor *aux) {
  (void)in, (void)aux;
  return range_fwd(c, out, req);
}

int lmx_cuda_bwd__contrib_arange_like(const lmx_op_ctx *c, const lmx_tensor *og,
                                      const lmx_tensor *in, const lmx_tensor *out,
                                      const lmx_tensor *ig, const int *req,
                                      const lmx_tensor *aux) {
  (void)og, (void)in, (void)out, (void)aux;
  LMX_TRY(lmx_glue_check_size(c, &ig[0], lmx_glue_size(&ig[0]), "input gradient"));
  return lmx_cuda_zero_grad(c, &ig[0], req[0]);
}

int lmx_cuda_fwd__eye(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                      const int *req, const lmx_tensor *aux) {
  (void)in, (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  if (req[0] == LMX_REQ_ADD) return lmx_cuda_fail_req_add(c, "output");
  int64_t off, len, stride;
  LMX_TRY(lmx_mplan_eye(c, &out[0], &off, &len, &stride));
  int dt = out[0].dtype;
  LMX_TRY(lmx_cuda_fail(c, lmx_cu_fill(LMX_CU_S(c), out[0].data, dt, lmx_glue_size(&out[0]), 0.0),
                        "lmx_cu_fill"));
  if (len == 0) return LMX_OK;
  LMX_TRY(lmx_cuda_fail(c, lmx_cu_fill(LMX_CU_S(c), at(&out[0], off), dt, 1, 1.0), "lmx_cu_fill"));
  if (len == 1) return LMX_OK;
  int64_t shape[1] = {len - 1}, dstr[1] = {stride}, sstr[1] = {0};
  return lmx_cuda_fail(c, lmx_cu_strided_copy(LMX_CU_S(c), dt, 1, shape, at(&out[0], off + stride),
                                              dstr, at(&out[0], off), sstr, 0),
                       "lmx_cu_strided_copy");
}
