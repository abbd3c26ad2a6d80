/* rnn.c — CUDA glue of the fused RNN operator (src/ops/cpu/rnn.c with device launchers;
 * the description from nn_plan.c, the packed layout, reserve and workspace sizes from
 * the CPU kernel's functions, which the device kernels share). Training with p > 0 and
 * L > 1 draws the inter-layer dropout masks on the device with the counter-based
 * generator (kernels/cuda/random.cu) from lmx_rng_device_key, so a seed gives the same
 * masks on every run (not the CPU's masks); inference sets them to 1. Refused like on
 * the CPU (named): projection_size, use_sequence_length and lstm state clipping.
 * float32 and float64. Real builds with cuDNN first offer the configuration to cuDNN's
 * RNN (dnn_rnn.c: float32, no inter-layer dropout (p = 0 or one layer, in training
 * and inference alike), unless LUAMX_CUDNN=0);
 * what it refuses or declines runs the cell kernels here. The planned workspace is the
 * larger of the two paths' needs.
 */
#include <math.h>

#include "dnn.h"
#include "nn_util.h"
#include "../../tensor/random.h"
#include "../nn_plan.h"

static int rnn_check(const lmx_op_ctx *c, const lmx_tensor *in, lmx_cpu_rnn *r) {
  const lmx_rnn_param *p = c->param;
  const char *what = NULL;
  if (p->projection_size != LMX_PARAM_NONE_INT) what = "projection_size";
  else if (p->use_sequence_length) what = "use_sequence_length";
  else if (!isnan(p->lstm_state_clip_min) || !isnan(p->lstm_state_clip_max))
    what = "lstm_state_clip_min/max";
  if (what)
    return lmx_op_fail(c, LMX_ERR_UNSUPPORTED, "parameter '%s' is not supported on gpu(%d)",
                       what, c->dev_id);
  LMX_TRY(lmx_cunn_check_float(c, &in[0], 0, "input 'data'"));
  LMX_TRY(lmx_rnn_plan(c, &in[0].shape, in[0].dtype, r));
  LMX_TRY(lmx_glue_check_like(c, &in[0], &in[0].shape, r->dt, "input 'data'"));
  lmx_shape ps = {1, {lmx_cpu_rnn_param_size(r)}}, hs = {3, {r->L * r->D, r->N, r->H}};
  LMX_TRY(lmx_glue_check_like(c, &in[1], &ps, r->dt, "input 'parameters'"));
  LMX_TRY(lmx_glue_check_like(c, &in[2], &hs, r->dt, "input 'state'"));
  if (r->mode == LMX_RNN_LSTM) LMX_TRY(lmx_glue_check_like(c, &in[3], &hs, r->dt, "input 'state_cell'"));
  return lmx_glue_check_ws(c, lmx_cpu_rnn_ws(r) * (size_t)lmx_dtype_size(r->dt));
}

size_t lmx_cuda_ws_RNN(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) {
  (void)out;
  lmx_cpu_rnn r;
  if (in[0].ndim != 3 || lmx_rnn_plan(c, &in[0], LMX_FLOAT64, &r) != LMX_OK) return 0;
  size_t own = lmx_cpu_rnn_ws(&r) * sizeof(double), dnn = lmx_cudnn_rnn_ws(&r);
  return own > dnn ? own : dnn; /* one path runs: the larger need */
}

static int num_visible(const lmx_cpu_rnn *r, int states) {
  return states ? (r->mode == LMX_RNN_LSTM ? 3 : 2) : 1;
}

static int check_reserve(const lmx_op_ctx *c, const lmx_tensor *t, const lmx_cpu_rnn *r) {
  lmx_shape rs = {1, {lmx_cpu_rnn_reserve(r)}};
  if (!t->data)
    return lmx_op_fail(c, LMX_ERR_ARG, "output 'reserve': expected an array of %lld elements, "
                       "got none", (long long)rs.dim[0]);
  return lmx_glue_check_like(c, t, &rs, r->dt, "output 'reserve'");
}

int lmx_cuda_fwd_RNN(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                     const int *req, const lmx_tensor *aux) {
  (void)aux;
  lmx_cpu_rnn r;
  LMX_TRY(rnn_check(c, in, &r));
  const lmx_rnn_param *p = c->param;
  int states = p->state_outputs, nv = num_visible(&r, states);
  lmx_shape ys = {3, {r.T, r.N, r.D * r.H}}, hs = {3, {r.L * r.D, r.N, r.H}};
  for (int i = 0; i < nv; i++) {
    if (req[i] == LMX_REQ_ADD)
      return lmx_op_fail(c, LMX_ERR_UNSUPPORTED, "output: req 'add' is not supported on gpu(%d)",
                         c->dev_id);
    if (req[i]) LMX_TRY(lmx_glue_check_like(c, &out[i], i ? &hs : &ys, r.dt, "output"));
  }
  LMX_TRY(check_reserve(c, &out[nv], &r));
  int rc = lmx_cudnn_rnn_fwd(c, &r, in, out, req, nv);
  if (rc != LMX_CUDNN_OWN) return rc;
  lmx_cu_stream s = LMX_CU_S(c);
  if (r.drop) { /* the masks open the reserve: (L-1, T, N, D·H) */
    int64_t n = (r.L - 1) * r.T * r.N * r.D * r.H;
    if (c->is_train) {
      uint64_t seed, offset;
      lmx_rng_device_key(lmx_philox_blocks(r.dt == LMX_FLOAT64, n), &seed, &offset);
      LMX_CU_TRY(c, lmx_cu_dropout_mask(s, r.dt, n, out[nv].data, p->p, seed, offset),
                 "lmx_cu_dropout_mask");
    } else {
      LMX_CU_TRY(c, lmx_cu_fill(s, out[nv].data, r.dt, n, 1.0), "lmx_cu_fill");
    }
  }
  LMX_CU_TRY(c, lmx_cu_rnn_fwd(s, &r, in[0].data, in[1].data, in[2].data,
                               r.mode == LMX_RNN_LSTM ? in[3].data : NULL,
                               req[0] ? out[0].data : NULL, states && req[1] ? out[1].data : NULL,
                               states && r.mode == LMX_RNN_LSTM && req[2] ? out[2].data : NULL,
                               out[nv].data, c->workspace), "lmx_cu_rnn_fwd");
  return LMX_OK;
}

/* the destination of a gradient (zeroed first for req WRITE: the kernel accumulates) */
static int grad_dst(const lmx_op_ctx *c, const lmx_tensor *t, int req, void **dst) {
  *dst = NULL;
  if (req == LMX_REQ_NULL || !t->data) return LMX_OK;
  if (req != LMX_REQ_ADD)
    LMX_CU_TRY(c, lmx_cu_fill(LMX_CU_S(c), t->data, t->dtype, lmx_glue_size(t), 0.0),
               "lmx_cu_fill");
  *dst = t->data;
  return LMX_OK;
}

int lmx_cuda_bwd_RNN(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
                     const lmx_tensor *out, const lmx_tensor *ig, const int *req,
                     const lmx_tensor *aux) {
  (void)aux;
  lmx_cpu_rnn r;
  LMX_TRY(rnn_check(c, in, &r));
  int states = ((const lmx_rnn_param *)c->param)->state_outputs, lstm = r.mode == LMX_RNN_LSTM;
  LMX_TRY(check_reserve(c, &out[num_visible(&r, states)], &r));
  lmx_shape ys = {3, {r.T, r.N, r.D * r.H}}, hs = {3, {r.L * r.D, r.N, r.H}};
  LMX_TRY(lmx_glue_check_like(c, &og[0], &ys, r.dt, "output gradient"));
  for (int i = 1; states && i < (lstm ? 3 : 2); i++)
    if (og[i].data) LMX_TRY(lmx_glue_check_like(c, &og[i], &hs, r.dt, "state gradient"));
  for (int i = 0; i < (lstm ? 4 : 3); i++)
    if (req[i]) LMX_TRY(lmx_glue_check_like(c, &ig[i], &in[i].shape, r.dt, "input gradient"));
  int rc = lmx_cudnn_rnn_bwd(c, &r, og, in, out, ig, req, num_visible(&r, states));
  if (rc != LMX_CUDNN_OWN) return rc;
  lmx_cpu_rnn_grad g = {
      .dy = og[0].data,
      .dhy = states ? og[1].data : NULL,
      .dcy = states && lstm ? og[2].data : NULL,
  };
  LMX_TRY(grad_dst(c, &ig[0], req[0], &g.dx));
  LMX_TRY(grad_dst(c, &ig[1], req[1], &g.dw));
  LMX_TRY(grad_dst(c, &ig[2], req[2], &g.dh0));
  if (lstm) LMX_TRY(grad_dst(c, &ig[3], req[3], &g.dc0));
  LMX_CU_TRY(c, lmx_cu_rnn_bwd(LMX_CU_S(c), &r, in[0].data, in[1].data, in[2].data,
                               lstm ? in[3].data : NULL, out[num_visible(&r, states)].data, &g,
                               c->workspace), "lmx_cu_rnn_bwd");
  return LMX_OK;
}
