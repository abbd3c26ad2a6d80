/* ctc.c — CPU glue of CTCLoss (descriptor in src/ops/ctc_loss.c, shared checks in
 * ctc_glue.c, kernels in kernels/cpu/ctc.c). data float32 or float64; labels and lengths
 * float32, float64, int32 or int64. */
#include "../../../kernels/cpu/cpu_kernels.h"
#include "../ctc_glue.h"
#include "../op_impl.h"
#include "cpu_ops.h"

int lmx_cpu_fwd_CTCLoss(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                        const int *req, const lmx_tensor *aux) {
  (void)aux;
  if (req[0] == LMX_REQ_NULL && req[1] == LMX_REQ_NULL) return LMX_OK;
  if (req[0] == LMX_REQ_ADD || req[1] == LMX_REQ_ADD) return lmx_cpu_fail_req_add(c, "output");
  LMX_TRY(lmx_cpu_check_float(c, &in[0], "input 'data'"));
  const lmx_ctc_param *q = c->param;
  int nin = 2 + (q->use_data_lengths != 0) + (q->use_label_lengths != 0);
  lmx_ctc_args a;
  lmx_ctc_plan p;
  LMX_TRY(lmx_ctc_setup(c, in, nin, &out[0], req[1] != LMX_REQ_NULL ? &out[1] : NULL, &a, &p));
  int64_t pos = 0;
  double val = 0;
  int rc = lmx_cpu_ctc(&a, &pos, &val);
  return rc ? lmx_ctc_fail_bad(c, &p, rc, (long long)pos, val) : LMX_OK;
}

int lmx_cpu_bwd_CTCLoss(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                        const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                        const lmx_tensor *aux) {
  (void)in, (void)aux;
  const lmx_ctc_param *q = c->param;
  int nin = 2 + (q->use_data_lengths != 0) + (q->use_label_lengths != 0);
  for (int i = 1; i < nin; i++) lmx_cpu_zero_grad(&ig[i], req[i]); /* labels, lengths */
  if (req[0] == LMX_REQ_NULL) return LMX_OK;
  LMX_TRY(lmx_cpu_check_float(c, &ig[0], "gradient of 'data'"));
  int dt = ig[0].dtype;
  const lmx_shape *s = &ig[0].shape;
  if (s->ndim != 3)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "gradient of 'data': expected 3-D, got %d-D", s->ndim);
  lmx_shape ls = LMX_SHP(s->dim[1]);
  LMX_TRY(lmx_glue_check_like(c, &og[0], &ls, dt, "output gradient"));
  LMX_TRY(lmx_glue_check_like(c, &out[1], s, dt, "output 'grad'"));
  LMX_TRY(lmx_glue_check_like(c, &ig[0], s, dt, "gradient of 'data'"));
  lmx_cpu_ctc_bwd(dt, s->dim[0], s->dim[1], s->dim[2], og[0].data, out[1].data, ig[0].data,
                  req[0] == LMX_REQ_ADD);
  return LMX_OK;
}

size_t lmx_cpu_ws_CTCLoss(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) {
  (void)out;
  const lmx_ctc_param *q = c->param;
  return lmx_ctc_ws_bytes(c, in, 2 + (q->use_data_lengths != 0) + (q->use_label_lengths != 0));
}
