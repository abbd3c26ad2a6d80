/* manip_more.c — CPU glue of src/ops/manip_more.c: _split_v2 (strided copies of column
 * blocks, and back for the gradient into a zeroed input gradient; a missing output
 * gradient counts as zeros), argmax_channel (the argmax kernel over the last axis),
 * _arange / _contrib_arange_like (lmx_cpu_range; arange_like's input gradient is zero)
 * and _eye (zeros, then ones along the diagonal). Plans: src/ops/manip_plan.c.
 */
#include <string.h>

#include "../../../kernels/cpu/cpu_kernels.h"
#include "../../tensor/dtype.h"
#include "../manip_params.h"
#include "../manip_plan.h"
#include "../op_impl.h"
#include "cpu_ops.h"

static char *at(const lmx_tensor *t, int64_t elems) {
  return (char *)t->data + (size_t)elems * (size_t)lmx_dtype_size(t->dtype);
}

static int fail_rc(const lmx_op_ctx *c, int rc, const lmx_tensor *t, const char *what) {
  return rc < 0 ? lmx_op_fail(c, LMX_ERR_DTYPE, "%s: req 'add' and gradients need float32 or "
                              "float64, got %s", what, lmx_dtype_str(t->dtype))
                : LMX_OK;
}

/* ---- _split_v2 ----------------------------------------------------------------------------- */

int lmx_cpu_fwd__split_v2(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                          const int *req, const lmx_tensor *aux) {
  (void)aux;
  int n = lmx_op_num_outputs(c->op, c->param);
  for (int i = 0; i < n; i++) {
    if (req[i] == LMX_REQ_NULL) continue;
    lmx_mplan_copy p;
    LMX_TRY(lmx_mplan_copy_of(c, i, &in[0], &out[i], 0, &p));
    LMX_TRY(fail_rc(c, lmx_cpu_strided_copy(out[i].dtype, p.nd, p.shape, at(&out[i], p.yoff),
                                            p.ystr, at(&in[0], p.xoff), p.xstr,
                                            req[i] == LMX_REQ_ADD),
                    &out[i], "output"));
  }
  return LMX_OK;
}

int lmx_cpu_bwd__split_v2(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                          const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                          const lmx_tensor *aux) {
  (void)in, (void)out, (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_cpu_check_float(c, &ig[0], "input gradient"));
  LMX_TRY(lmx_glue_check_size(c, &ig[0], lmx_glue_size(&ig[0]), "input gradient"));
  if (req[0] != LMX_REQ_ADD) lmx_cpu_zero_grad(&ig[0], LMX_REQ_WRITE);
  int n = lmx_op_num_outputs(c->op, c->param);
  for (int i = 0; i < n; i++) {
    if (!og[i].data) continue; /* no head gradient: zeros */
    lmx_mplan_copy p;
    LMX_TRY(lmx_mplan_copy_of(c, i, &ig[0], &og[i], 1, &p));
    LMX_TRY(fail_rc(c, lmx_cpu_strided_copy(ig[0].dtype, p.nd, p.shape, at(&ig[0], p.xoff),
                                            p.xstr, at(&og[i], p.yoff), p.ystr,
                                            req[0] == LMX_REQ_ADD),
                    &ig[0], "input gradient"));
  }
  return LMX_OK;
}

/* ---- argmax_channel -------------------------------------------------------------------------- */

int lmx_cpu_fwd_argmax_channel(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                               const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  if (req[0] == LMX_REQ_ADD) return lmx_cpu_fail_req_add(c, "output");
  LMX_TRY(lmx_cpu_check_float(c, &in[0], "input 'data'"));
  int64_t outer, len;
  LMX_TRY(lmx_mplan_argmax_channel(c, &in[0], &out[0], &outer, &len));
  lmx_cpu_argmax(0, in[0].dtype, outer, len, 1, in[0].data, out[0].data);
  return LMX_OK;
}

/* ---- generators ------------------------------------------------------------------------------ */

static int range_fwd(const lmx_op_ctx *c, const lmx_tensor *out, const int *req) {
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  if (req[0] == LMX_REQ_ADD) return lmx_cpu_fail_req_add(c, "output");
  lmx_mplan_range r;
  LMX_TRY(lmx_mplan_range_of(c, &out[0], &r));
  lmx_cpu_range(out[0].dtype, r.n, out[0].data, r.start, r.step, r.repeat);
  return LMX_OK;
}

int lmx_cpu_fwd__arange(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                        const int *req, const lmx_tensor *aux) {
  (void)in, (void)aux;
  return range_fwd(c, out, req);
}

int lmx_cpu_fwd__contrib_arange_like(const lmx_op_ctx *c, const lmx_tensor *in,
                                     const lmx_tensor *out, const int *req,
                                     const lmx_tensor *aux) {
  (void)in, (void)aux;
  return range_fwd(c, out, req);
}

int lmx_cpu_bwd__contrib_arange_like(const lmx_op_ctx *c, const lmx_tensor *og,
                                     const lmx_tensor *in, const lmx_tensor *out,
                                     const lmx_tensor *ig, const int *req,
                                     const lmx_tensor *aux) {
  (void)og, (void)in, (void)out, (void)aux;
  LMX_TRY(lmx_glue_check_size(c, &ig[0], lmx_glue_size(&ig[0]), "input gradient"));
  lmx_cpu_zero_grad(&ig[0], req[0]);
  return LMX_OK;
}

int lmx_cpu_fwd__eye(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                     const int *req, const lmx_tensor *aux) {
  (void)in, (void)aux;
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  if (req[0] == LMX_REQ_ADD) return lmx_cpu_fail_req_add(c, "output");
  int64_t off, len, stride;
  LMX_TRY(lmx_mplan_eye(c, &out[0], &off, &len, &stride));
  lmx_cpu_fill(out[0].data, out[0].dtype, lmx_glue_size(&out[0]), 0.0);
  if (len == 0) return LMX_OK;
  lmx_cpu_fill(at(&out[0], off), out[0].dtype, 1, 1.0);
  if (len == 1) return LMX_OK;
  int64_t shape[1] = {len - 1}, dstr[1] = {stride}, sstr[1] = {0};
  lmx_cpu_strided_copy(out[0].dtype, 1, shape, at(&out[0], off + stride), dstr,
                       at(&out[0], off), sstr, 0);
  return LMX_OK;
}
