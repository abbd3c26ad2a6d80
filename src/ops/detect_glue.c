/* detect_glue.c — checks and calls of the detection operators for any backend
 * (detect_glue.h). Inputs and outputs are float32 or float64, all of one dtype; every
 * output of a forward is written (req 'add' is refused, as for MXNet's kernels). */
#include "detect_glue.h"

#include "glue.h"
#include "op_impl.h"

size_t lmx_det_workspace(const lmx_op_ctx *c, const lmx_shape *in) {
  return lmx_det_ws_bytes(c, in);
}

static int check_float(const lmx_det_backend *be, const lmx_op_ctx *c, const lmx_tensor *t,
                       const char *what) {
  if (t->dtype != LMX_FLOAT32 && t->dtype != LMX_FLOAT64)
    return lmx_op_fail(c, LMX_ERR_DTYPE, "%s: expected float32 or float64 on the %s, got %s", what,
                       be->device, lmx_dtype_str(t->dtype));
  return LMX_OK;
}

int lmx_det_forward(const lmx_det_backend *be, const lmx_op_ctx *c, const lmx_tensor *in,
                    const lmx_tensor *out, const int *req) {
  const lmx_op *op = c->op;
  int nout = lmx_op_num_outputs(op, c->param), nin = lmx_op_num_inputs(op, c->param);
  char nm[64], what[80];
  snprintf(what, sizeof what, "input '%s'", lmx_op_in_name(c, 0, nm, sizeof nm));
  LMX_TRY(check_float(be, c, &in[0], what));
  (void)nin;
  for (int i = 0; i < nout; i++)
    if (req[i] == LMX_REQ_ADD)
      return lmx_op_fail(c, LMX_ERR_UNSUPPORTED,
                         "output %d: req 'add' is not supported for "
                         "this forward output on the %s",
                         i, be->device);
  LMX_TRY(lmx_det_check_outs(c, in, out, nout, "output"));
  lmx_shape is[3];
  for (int i = 0; i < nin && i < 3; i++) is[i] = in[i].shape;
  LMX_TRY(lmx_glue_check_ws(c, lmx_det_ws_bytes(c, is)));
  int dt = in[0].dtype;
  void *s = c->stream, *ws = c->workspace;
  if (op == &lmx_op__contrib_MultiBoxPrior) {
    lmx_det_prior p;
    lmx_det_plan_prior(c, &in[0].shape, &p);
    return be->fail(c, be->prior(s, dt, &p, out[0].data), "det_prior");
  }
  if (op == &lmx_op__contrib_box_iou) {
    const lmx_boxiou_param *q = c->param;
    int64_t nl = lmx_shape_size(&in[0].shape) / 4, nr = lmx_shape_size(&in[1].shape) / 4;
    return be->fail(c, be->iou(s, dt, nl, nr, q->format, in[0].data, in[1].data, out[0].data),
                    "det_iou");
  }
  if (op == &lmx_op__contrib_box_nms) {
    lmx_det_nms p;
    lmx_det_plan_nms(c, &in[0].shape, &p);
    return be->fail(c, be->nms(s, dt, &p, in[0].data, out[0].data, out[1].data, ws), "det_nms");
  }
  if (op == &lmx_op__contrib_bipartite_matching) {
    lmx_det_match p;
    lmx_det_plan_match(c, &in[0].shape, &p);
    if (p.n * p.m > INT32_MAX)
      return lmx_op_fail(c, LMX_ERR_SHAPE,
                         "input 'data': expected at most %d scores per "
                         "matrix, got %lld",
                         INT32_MAX, (long long)(p.n * p.m));
    return be->fail(c, be->match(s, dt, &p, in[0].data, out[0].data, out[1].data, ws), "det_match");
  }
  if (op == &lmx_op__contrib_MultiBoxTarget) {
    lmx_det_target p;
    lmx_det_plan_target(c, is, &p);
    return be->fail(c,
                    be->target(s, dt, &p, in[0].data, in[1].data, in[2].data, out[0].data,
                               out[1].data, out[2].data, ws),
                    "det_target");
  }
  lmx_det_detect p;
  lmx_det_plan_detect(c, is, &p);
  return be->fail(c, be->detect(s, dt, &p, in[0].data, in[1].data, in[2].data, out[0].data, ws),
                  "det_detect");
}

int lmx_det_backward(const lmx_det_backend *be, const lmx_op_ctx *c, const lmx_tensor *og,
                     const lmx_tensor *in, const lmx_tensor *out, const lmx_tensor *ig,
                     const int *req) {
  const lmx_op *op = c->op;
  int nin = lmx_op_num_inputs(op, c->param);
  for (int i = 0; i < nin; i++) {
    if (req[i] == LMX_REQ_NULL) continue;
    char nm[64], what[96];
    snprintf(what, sizeof what, "gradient of input '%s'", lmx_op_in_name(c, i, nm, sizeof nm));
    LMX_TRY(check_float(be, c, &ig[i], what));
    if (op == &lmx_op__contrib_box_nms) break;
    if (!ig[i].data && lmx_glue_size(&ig[i]) > 0)
      return lmx_op_fail(c, LMX_ERR_ARG, "%s has no data", what);
    LMX_TRY(be->zero(c, &ig[i], req[i]));
  }
  if (op != &lmx_op__contrib_box_nms || req[0] == LMX_REQ_NULL) return LMX_OK;
  /* box_nms: the kept rows' head gradient back to their input rows */
  const lmx_shape *s = &ig[0].shape;
  if (s->ndim < 2)
    return lmx_op_fail(c, LMX_ERR_SHAPE,
                       "gradient of input 'data': expected at least 2-D, "
                       "got %d-D",
                       s->ndim);
  lmx_shape rs = *s;
  rs.dim[s->ndim - 1] = 1;
  LMX_TRY(lmx_glue_check_like(c, &og[0], s, ig[0].dtype, "output gradient"));
  LMX_TRY(lmx_glue_check_like(c, &out[1], &rs, ig[0].dtype, "output 'output1' (the record)"));
  LMX_TRY(lmx_glue_check_like(c, &ig[0], s, ig[0].dtype, "gradient of input 'data'"));
  (void)in;
  int64_t w = s->dim[s->ndim - 1], rows = lmx_shape_size(s) / (w > 0 ? w : 1);
  return be->fail(c,
                  be->nms_bwd(c->stream, ig[0].dtype, rows, w, og[0].data, out[1].data, ig[0].data,
                              req[0] == LMX_REQ_ADD),
                  "det_nms_bwd");
}
