/* rnn.c — CPU glue of the fused RNN operator (modes rnn_relu, rnn_tanh, lstm, gru;
 * num_layers, bidirectional, state_outputs).
 *
 * Inputs data (T, N, I), parameters (packed, MXNet's layout: kernels/cpu/rnn.c), state
 * (L·D, N, H) and for lstm state_cell. Outputs (T, N, D·H) and, with state_outputs, the
 * final states, then the hidden 'reserve' (src/ops/rnn.c): forward stores there every
 * intermediate backward needs (backward reads it, never recomputes), and with p > 0 and
 * L > 1 the inter-layer dropout masks. In training forward draws them from the global
 * generator (uniform, then 0 below p and 1/(1-p) above, as Dropout does: same seed, same
 * masks); in inference it sets them to 1, so dropout is the identity and a backward after
 * an inference forward is that of the undropped network. The workspace
 * (.workspace = lmx_cpu_ws_RNN) is scratch of one call. Refused on the CPU
 * (LMX_ERR_UNSUPPORTED, named): projection_size, use_sequence_length and lstm state
 * clipping, which MXNet 1.9 only implements with cuDNN.
 * MXNet 1.9: src/operator/rnn-inl.h, rnn_impl.h.
 */
#include <math.h>
#include <string.h>

#include "../../../kernels/cpu/cpu_kernels.h"
#include "../../tensor/dtype.h"
#include "../../tensor/random.h"
#include "../nn_plan.h"
#include "../op_impl.h"
#include "cpu_ops.h"

static int rnn_desc(const lmx_op_ctx *c, const lmx_shape *x, int dt, lmx_cpu_rnn *r) {
  return lmx_rnn_plan(c, x, dt, r); /* shared with the CUDA glue */
}

/* MXNet 1.9 (rnn-inl.h) runs these through cuDNN only; its CPU RNN has the projection for
 * inference alone and ignores clipping. */
static int rnn_supported(const lmx_op_ctx *c) {
  const lmx_rnn_param *p = c->param;
  const char *what = NULL, *also = "";
  if (p->projection_size != LMX_PARAM_NONE_INT)
    what = "projection_size", also = " (and by its CPU RNN in inference)";
  else if (p->use_sequence_length) what = "use_sequence_length";
  else if (!isnan(p->lstm_state_clip_min) || !isnan(p->lstm_state_clip_max))
    what = "lstm_state_clip_min/max";
  if (what)
    return lmx_op_fail(c, LMX_ERR_UNSUPPORTED, "parameter '%s' is only supported by MXNet "
                       "with cuDNN%s; not on the CPU", what, also);
  return LMX_OK;
}

static int rnn_check(const lmx_op_ctx *c, const lmx_tensor *in, lmx_cpu_rnn *r) {
  LMX_TRY(rnn_supported(c));
  LMX_TRY(lmx_cpu_check_float(c, &in[0], "input 'data'"));
  LMX_TRY(rnn_desc(c, &in[0].shape, in[0].dtype, r));
  LMX_TRY(lmx_glue_check_like(c, &in[0], &in[0].shape, r->dt, "input 'data'"));
  lmx_shape ps = {1, {lmx_cpu_rnn_param_size(r)}}, hs = {3, {r->L * r->D, r->N, r->H}};
  LMX_TRY(lmx_glue_check_like(c, &in[1], &ps, r->dt, "input 'parameters'"));
  LMX_TRY(lmx_glue_check_like(c, &in[2], &hs, r->dt, "input 'state'"));
  if (r->mode == LMX_RNN_LSTM)
    LMX_TRY(lmx_glue_check_like(c, &in[3], &hs, r->dt, "input 'state_cell'"));
  return lmx_glue_check_ws(c, lmx_cpu_rnn_ws(r) * (size_t)lmx_dtype_size(r->dt));
}

size_t lmx_cpu_ws_RNN(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out) {
  (void)out;
  lmx_cpu_rnn r;
  if (in[0].ndim != 3 || rnn_desc(c, &in[0], LMX_FLOAT64, &r) != LMX_OK) return 0;
  return lmx_cpu_rnn_ws(&r) * sizeof(double);
}

static int num_visible(const lmx_cpu_rnn *r, int states) {
  return states ? (r->mode == LMX_RNN_LSTM ? 3 : 2) : 1;
}

/* The hidden output after the visible ones: (lmx_cpu_rnn_reserve,) of data's dtype. */
static int check_reserve(const lmx_op_ctx *c, const lmx_tensor *t, const lmx_cpu_rnn *r) {
  lmx_shape rs = {1, {lmx_cpu_rnn_reserve(r)}};
  if (!t->data)
    return lmx_op_fail(c, LMX_ERR_ARG, "output 'reserve': expected an array of %lld elements, "
                       "got none", (long long)rs.dim[0]);
  return lmx_glue_check_like(c, t, &rs, r->dt, "output 'reserve'");
}

int lmx_cpu_fwd_RNN(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,
                    const int *req, const lmx_tensor *aux) {
  (void)aux;
  lmx_cpu_rnn r;
  LMX_TRY(rnn_check(c, in, &r));
  const lmx_rnn_param *p = c->param;
  int states = p->state_outputs, nv = num_visible(&r, states);
  lmx_shape ys = {3, {r.T, r.N, r.D * r.H}}, hs = {3, {r.L * r.D, r.N, r.H}};
  for (int i = 0; i < nv; i++) {
    if (req[i] == LMX_REQ_ADD) return lmx_cpu_fail_req_add(c, "output");
    if (req[i]) LMX_TRY(lmx_glue_check_like(c, &out[i], i ? &hs : &ys, r.dt, "output"));
  }
  if (req[nv] == LMX_REQ_ADD) return lmx_cpu_fail_req_add(c, "reserve");
  LMX_TRY(check_reserve(c, &out[nv], &r));
  if (r.drop) { /* the masks open the reserve: (L-1, T, N, D·H) */
    int64_t n = (r.L - 1) * r.T * r.N * r.D * r.H;
    if (c->is_train) {
      lmx_rng_fill_uniform(out[nv].data, r.dt, n, 0.0, 1.0);
      lmx_cpu_dropout_mask(r.dt, n, out[nv].data, p->p);
    } else {
      lmx_cpu_fill(out[nv].data, r.dt, n, 1.0);
    }
  }
  lmx_cpu_rnn_fwd(&r, in[0].data, in[1].data, in[2].data,
                  r.mode == LMX_RNN_LSTM ? in[3].data : NULL, req[0] ? out[0].data : NULL,
                  states && req[1] ? out[1].data : NULL,
                  states && r.mode == LMX_RNN_LSTM && req[2] ? out[2].data : NULL, out[nv].data,
                  c->workspace);
  return LMX_OK;
}

static void *grad_dst(const lmx_tensor *t, int req) {
  if (req == LMX_REQ_NULL || !t->data) return NULL;
  if (req != LMX_REQ_ADD)
    memset(t->data, 0, (size_t)lmx_glue_size(t) * (size_t)lmx_dtype_size(t->dtype));
  return t->data;
}

int lmx_cpu_bwd_RNN(const lmx_op_ctx *c, const lmx_tensor *og, const lmx_tensor *in,
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
  lmx_cpu_rnn_grad g = {
      .dy = og[0].data,
      .dhy = states ? og[1].data : NULL,
      .dcy = states && lstm ? og[2].data : NULL,
      .dx = grad_dst(&ig[0], req[0]),
      .dw = grad_dst(&ig[1], req[1]),
      .dh0 = grad_dst(&ig[2], req[2]),
      .dc0 = lstm ? grad_dst(&ig[3], req[3]) : NULL,
  };
  lmx_cpu_rnn_bwd(&r, in[0].data, in[1].data, in[2].data, lstm ? in[3].data : NULL,
                  out[num_visible(&r, states)].data, &g, c->workspace);
  return LMX_OK;
}
