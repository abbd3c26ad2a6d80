/* rnn.c — the fused RNN operator and the Sequence{Mask,Last,Reverse} helpers.
 *
 * RNN (layout TNC): data (T, N, I); parameters is one packed 1-D vector whose length is
 * MXNet's GetRnnParamSize (rnn-inl.h): with G gates (rnn 1, gru 3, lstm 4), H the state
 * size, D directions, L layers, P the projection size (lstm only):
 *   size = G*H*D; first = (I + H + 2) * size; other = (D*H + H + 2) * size;
 *   with P: first = (I + P + 2) * size; other = (D*P + P + 2) * size;
 *   total = first + (L-1) * other  (+ P*H*L*D with P).
 * state (L*D, N, H or P); state_cell (L*D, N, H) for lstm; sequence_length (N,) when
 * use_sequence_length. Outputs output (T, N, D*(P or H)), state_output, statecell_output
 * (lstm): 1, or 2/3 with state_outputs, visible; then one hidden output 'reserve' (1-D,
 * data's dtype), MXNet's reserve space: what forward keeps for backward (every layer's
 * outputs, gates and cells; with dropout p > 0 and L > 1 also the inter-layer masks drawn
 * from the global generator, LMX_OPF_RANDOM). Its size (rnn_reserve_size) is
 * lmx_cpu_rnn_reserve's (kernels/cpu/rnn.c); the CPU glue checks that they agree.
 * Sequence ops: data (T, N, ...) with axis 0 (SequenceMask/Last also accept axis 1:
 * (N, T, ...)); sequence_length (N,) when use_sequence_length. SequenceLast drops axis.
 * MXNet 1.9: src/operator/rnn.cc, rnn-inl.h, sequence_{mask,last,reverse}-inl.h.
 */
#include "op_impl.h"

enum { RNN_RELU, RNN_TANH, RNN_LSTM, RNN_GRU };

static const lmx_param_field rnn_fields[] = {
    LMX_PF(lmx_rnn_param, state_size, LMX_PT_INT, NULL, NULL, 1, 1e9, "size of the state for each layer"),
    LMX_PF(lmx_rnn_param, num_layers, LMX_PT_INT, NULL, NULL, 1, 1e9, "number of stacked layers"),
    LMX_PF(lmx_rnn_param, bidirectional, LMX_PT_BOOL, "False", NULL, 0, 0,
           "whether to use bidirectional recurrent layers"),
    LMX_PF(lmx_rnn_param, mode, LMX_PT_ENUM, NULL, LMX_RNNM_CHOICES, 0, 0,
           "the type of RNN to compute"),
    LMX_PF(lmx_rnn_param, p, LMX_PT_FLOAT, "0.0", NULL, 0, 1,
           "drop rate of the dropout on the outputs of each RNN layer, except the last layer."),
    LMX_PF(lmx_rnn_param, state_outputs, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Whether to have the states as symbol outputs."),
    LMX_PF(lmx_rnn_param, projection_size, LMX_PT_OPT_INT, "None", NULL, 0, 0, "size of project size"),
    LMX_PF(lmx_rnn_param, lstm_state_clip_min, LMX_PT_OPT_FLOAT, "None", NULL, 0, 0,
           "Minimum clip value of LSTM states."),
    LMX_PF(lmx_rnn_param, lstm_state_clip_max, LMX_PT_OPT_FLOAT, "None", NULL, 0, 0,
           "Maximum clip value of LSTM states."),
    LMX_PF(lmx_rnn_param, lstm_state_clip_nan, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Whether to stop NaN from propagating in state by clipping it to min/max."),
    LMX_PF(lmx_rnn_param, use_sequence_length, LMX_PT_BOOL, "False", NULL, 0, 0,
           "If set to true, this layer takes in an extra input parameter `sequence_length`."),
};

static int rnn_check(const lmx_op_ctx *c, void *param) {
  const lmx_rnn_param *p = param;
  if (p->p >= 1) /* MXNet checks 0 <= p < 1 in forward and backward */
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'p': expected 0 <= p < 1, got %g", p->p);
  if (p->projection_size != LMX_PARAM_NONE_INT && p->mode != RNN_LSTM)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'projection_size': only lstm supports a "
                       "projection");
  if (p->projection_size != LMX_PARAM_NONE_INT && p->projection_size < 1)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'projection_size': must be >= 1, got %lld",
                       (long long)p->projection_size);
  return LMX_OK;
}

static int rnn_num_inputs(const void *vp) {
  const lmx_rnn_param *p = vp;
  return 3 + (p->mode == RNN_LSTM) + (p->use_sequence_length != 0);
}

static void rnn_input_name(const void *vp, int i, char *buf, size_t cap) {
  const lmx_rnn_param *p = vp;
  const char *nm = i == 0 ? "data" : i == 1 ? "parameters" : i == 2 ? "state" : "?";
  if (i == 3) nm = p->mode == RNN_LSTM ? "state_cell" : "sequence_length";
  if (i == 4 && p->mode == RNN_LSTM) nm = "sequence_length";
  snprintf(buf, cap, "%s", nm);
}

static int rnn_num_visible(const void *vp) {
  const lmx_rnn_param *p = vp;
  return p->state_outputs ? (p->mode == RNN_LSTM ? 3 : 2) : 1;
}

static int rnn_num_outputs(const void *vp) { return rnn_num_visible(vp) + 1; }

static const char *const rnn_outputs[] = {"output", "state_output", "statecell_output", NULL};

static void rnn_output_name(const void *vp, int i, char *buf, size_t cap) {
  int nv = rnn_num_visible(vp);
  snprintf(buf, cap, "%s", i == nv ? "reserve" : i >= 0 && i < nv ? rnn_outputs[i] : "?");
}

/* Elements of the hidden 'reserve' output: masks and dropped outputs of the L-1 lower
 * layers when p > 0, every layer's output, and per (layer, direction) the G gate
 * activations and one more state sequence (T, N, H). */
static int64_t rnn_reserve_size(const lmx_rnn_param *p, int64_t t, int64_t n) {
  int64_t gates = p->mode == RNN_LSTM ? 4 : p->mode == RNN_GRU ? 3 : 1;
  int64_t h = p->state_size, d = p->bidirectional ? 2 : 1, l = p->num_layers;
  int64_t lm = p->p > 0 && l > 1 ? l - 1 : 0;
  return t * n * d * h * (2 * lm + l + l * (gates + 1));
}

/* MXNet's GetRnnParamSize. */
static int64_t rnn_param_size(const lmx_rnn_param *p, int64_t input) {
  int64_t gates = p->mode == RNN_LSTM ? 4 : p->mode == RNN_GRU ? 3 : 1;
  int64_t h = p->state_size, d = p->bidirectional ? 2 : 1, l = p->num_layers;
  int proj = p->projection_size != LMX_PARAM_NONE_INT;
  int64_t r = proj ? p->projection_size : h, size = gates * h * d;
  int64_t total = (input + r + 2) * size + (l - 1) * ((d * r + r + 2) * size);
  if (proj) total += r * h * l * d;
  return total;
}

static int rnn_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                           int nout, lmx_shape *aux, int naux) {
  (void)aux, (void)naux;
  const lmx_rnn_param *p = LMX_PRM(c, lmx_rnn_param);
  const lmx_shape *d = &in[0];
  char s[LMX_SHAPE_STRCAP];
  if (d->ndim <= 0) return LMX_OK;
  if (d->ndim != 3)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': expected 3-D (sequence length, batch "
                       "size, input size), got %s", lmx_shape_str(d, s));
  int64_t t = d->dim[0], n = d->dim[1], dirs = p->bidirectional ? 2 : 1;
  int64_t r = p->projection_size != LMX_PARAM_NONE_INT ? p->projection_size : p->state_size;
  int64_t ld = p->num_layers * dirs;
  lmx_shape ps = LMX_SHP(d->dim[2] ? rnn_param_size(p, d->dim[2]) : 0);
  lmx_shape hs = LMX_SHP(ld, n, r), cs = LMX_SHP(ld, n, p->state_size);
  LMX_TRY(lmx_in_assign(c, in, 1, &ps));
  LMX_TRY(lmx_in_assign(c, in, 2, &hs));
  if (p->mode == RNN_LSTM) LMX_TRY(lmx_in_assign(c, in, 3, &cs));
  if (p->use_sequence_length) {
    lmx_shape sl = LMX_SHP(n);
    LMX_TRY(lmx_in_assign(c, in, nin - 1, &sl));
  }
  lmx_shape o = LMX_SHP(t, n, dirs * r);
  LMX_TRY(lmx_out_assign(c, out, 0, &o));
  int nv = rnn_num_visible(p);
  if (nv > 1) LMX_TRY(lmx_out_assign(c, out, 1, &hs));
  if (nv > 2) LMX_TRY(lmx_out_assign(c, out, 2, &cs));
  lmx_shape rs = LMX_SHP(rnn_reserve_size(p, t, n));
  if (nout > nv) LMX_TRY(lmx_out_assign(c, out, nv, &rs));
  return LMX_OK;
}

/* All inputs but sequence_length share data's dtype, and so do the outputs. */
static int rnn_infer_type(const lmx_op_ctx *c, int *in, int nin, int *out, int nout, int *aux,
                          int naux) {
  (void)aux, (void)naux;
  const lmx_rnn_param *p = LMX_PRM(c, lmx_rnn_param);
  int nsame = nin - (p->use_sequence_length ? 1 : 0);
  int dt = in[0] >= 0 ? in[0] : out[0];
  char nm[32], what[64];
  for (int i = 0; i < nsame; i++) {
    snprintf(what, sizeof what, "input '%s'", lmx_op_in_name(c, i, nm, sizeof nm));
    LMX_TRY(lmx_dtype_assign(c, &in[i], dt, what));
  }
  for (int i = 0; i < nout; i++) {
    rnn_output_name(p, i, nm, sizeof nm);
    snprintf(what, sizeof what, "output '%s'", nm);
    LMX_TRY(lmx_dtype_assign(c, &out[i], dt, what));
  }
  return LMX_OK;
}

const lmx_op lmx_op_RNN = {
    .name = "RNN",
    .doc = "Applies recurrent layers to input data (rnn_relu, rnn_tanh, lstm, gru).",
    LMX_PARAMS(rnn_fields, lmx_rnn_param),
    .param_check = rnn_check,
    .num_inputs = rnn_num_inputs,
    .input_name = rnn_input_name,
    .num_outputs = rnn_num_outputs,
    .output_name = rnn_output_name,
    .num_visible_outputs = rnn_num_visible,
    .infer_shape = rnn_infer_shape,
    .infer_type = rnn_infer_type,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS,
    .flags = LMX_OPF_RANDOM,
};

/* ---- SequenceMask / SequenceLast / SequenceReverse ------------------------------------ */

static const lmx_param_field seqmask_fields[] = {
    LMX_PF(lmx_seq_param, use_sequence_length, LMX_PT_BOOL, "False", NULL, 0, 0,
           "If set to true, this layer takes in an extra input parameter `sequence_length`."),
    LMX_PF(lmx_seq_param, value, LMX_PT_FLOAT, "0.0", NULL, 0, 0, "The value to be used as a mask."),
    LMX_PF(lmx_seq_param, axis, LMX_PT_INT, "0", NULL, 0, 1,
           "The sequence axis. Only values of 0 and 1 are currently supported."),
};

static const lmx_param_field seqlast_fields[] = {
    LMX_PF(lmx_seq_param, use_sequence_length, LMX_PT_BOOL, "False", NULL, 0, 0,
           "If set to true, this layer takes in an extra input parameter `sequence_length`."),
    LMX_PF(lmx_seq_param, axis, LMX_PT_INT, "0", NULL, 0, 1,
           "The sequence axis. Only values of 0 and 1 are currently supported."),
};

static const lmx_param_field seqrev_fields[] = {
    LMX_PF(lmx_seq_param, use_sequence_length, LMX_PT_BOOL, "False", NULL, 0, 0,
           "If set to true, this layer takes in an extra input parameter `sequence_length`."),
    LMX_PF(lmx_seq_param, axis, LMX_PT_INT, "0", NULL, 0, 0,
           "The sequence axis. Only 0 is currently supported."),
};

static int seq_num_inputs(const void *p) {
  return ((const lmx_seq_param *)p)->use_sequence_length ? 2 : 1;
}
static void seq_input_name(const void *p, int i, char *buf, size_t cap) {
  (void)p;
  snprintf(buf, cap, "%s", i == 0 ? "data" : i == 1 ? "sequence_length" : "?");
}

static int seq_common(const lmx_op_ctx *c, lmx_shape *in, int nin) {
  const lmx_seq_param *p = LMX_PRM(c, lmx_seq_param);
  char s[LMX_SHAPE_STRCAP];
  if (in[0].ndim < 2)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': expected at least 2-D (sequence, "
                       "batch, ...), got %s", lmx_shape_str(&in[0], s));
  if (c->op->params == seqrev_fields && p->axis != 0)
    return lmx_op_fail(c, LMX_ERR_ARG, "parameter 'axis': only 0 is supported, got %lld",
                       (long long)p->axis);
  if (nin > 1) {
    lmx_shape sl = LMX_SHP(in[0].dim[p->axis == 0 ? 1 : 0]);
    LMX_TRY(lmx_in_assign(c, in, 1, &sl));
  }
  return LMX_OK;
}

static int seq_same_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                                int nout, lmx_shape *aux, int naux) {
  (void)aux, (void)naux;
  LMX_TRY(lmx_infer_same_shape(c, in, 1, out, nout));
  return in[0].ndim > 0 ? seq_common(c, in, nin) : LMX_OK;
}

static int seq_last_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                                int nout, lmx_shape *aux, int naux) {
  (void)nout, (void)aux, (void)naux;
  const lmx_seq_param *p = LMX_PRM(c, lmx_seq_param);
  if (in[0].ndim <= 0) return LMX_OK;
  LMX_TRY(seq_common(c, in, nin));
  lmx_shape o = in[0];
  for (int i = (int)p->axis; i + 1 < o.ndim; i++) o.dim[i] = o.dim[i + 1];
  o.ndim--;
  return lmx_out_assign(c, out, 0, &o);
}

static int seq_infer_type(const lmx_op_ctx *c, int *in, int nin, int *out, int nout, int *aux,
                          int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  LMX_TRY(lmx_dtype_assign(c, &out[0], in[0], "output 'output'"));
  return lmx_dtype_assign(c, &in[0], out[0], "input 'data'");
}

#define SEQ_OP(id, fields, shape_fn, docstr)                   \
  const lmx_op lmx_op_##id = {                                 \
      .name = #id,                                             \
      .doc = docstr,                                           \
      LMX_PARAMS(fields, lmx_seq_param),                           \
      .num_inputs = seq_num_inputs,                            \
      .input_name = seq_input_name,                            \
      .infer_shape = shape_fn,                                 \
      .infer_type = seq_infer_type,                            \
      .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUT_GRADS, \
  }

SEQ_OP(SequenceMask, seqmask_fields, seq_same_infer_shape,
       "Sets all elements outside the sequence to a constant value.");
SEQ_OP(SequenceLast, seqlast_fields, seq_last_infer_shape,
       "Takes the last element of a sequence.");
SEQ_OP(SequenceReverse, seqrev_fields, seq_same_infer_shape,
       "Reverses the elements of each sequence.");
