/* ctc_plan.c — CTCLoss's shape checks (ctc_plan.h); MXNet 1.9 CTCLossOpShape. */
#include "ctc_plan.h"

#include "op_impl.h"

int lmx_ctc_plan_make(const lmx_op_ctx *c, const lmx_shape *in, int nin, lmx_ctc_plan *p) {
  const lmx_ctc_param *q = c->param;
  memset(p, 0, sizeof *p);
  p->data_len_in = q->use_data_lengths ? 2 : -1;
  p->label_len_in = q->use_label_lengths ? 2 + (q->use_data_lengths != 0) : -1;
  if (nin != 2 + (p->data_len_in >= 0) + (p->label_len_in >= 0))
    return lmx_op_fail(c, LMX_ERR_ARG, "expected %d inputs, got %d",
                       2 + (p->data_len_in >= 0) + (p->label_len_in >= 0), nin);
  if (in[0].ndim != 3)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': expected 3-D (sequence_length, "
                       "batch_size, alphabet_size), got %d-D", in[0].ndim);
  if (in[1].ndim != 2)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'label': expected 2-D (batch_size, "
                       "label_sequence_length), got %d-D", in[1].ndim);
  p->T = in[0].dim[0], p->N = in[0].dim[1], p->C = in[0].dim[2], p->L = in[1].dim[1];
  if (in[1].dim[0] != p->N)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'label': expected %lld sequences like "
                       "'data', got %lld", (long long)p->N, (long long)in[1].dim[0]);
  if (p->L > p->T)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'label': expected at most %lld labels (the "
                       "sequence length of 'data'), got %lld", (long long)p->T,
                       (long long)p->L);
  if (p->C < 1)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': expected at least one class, got 0");
  int idx[2] = {p->data_len_in, p->label_len_in};
  const char *nm[2] = {"data_lengths", "label_lengths"};
  for (int j = 0; j < 2; j++) {
    if (idx[j] < 0) continue;
    const lmx_shape *s = &in[idx[j]];
    if (s->ndim != 1 || s->dim[0] != p->N)
      return lmx_op_fail(c, LMX_ERR_SHAPE, "input '%s': expected shape (%lld), got a %d-D "
                         "shape with %lld first", nm[j], (long long)p->N, s->ndim,
                         (long long)(s->ndim ? s->dim[0] : 0));
  }
  return LMX_OK;
}
