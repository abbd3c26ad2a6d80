/* ctc_plan.h — CTCLoss's parameters and what its CPU and CUDA glue derive from the input
 * shapes (issue 14, ops14g). Shapes only, never data; messages from lmx_op_fail.
 *
 * data (T, N, C): unnormalised activations of T frames, N sequences, C classes (one of
 * them the blank: class 0 for blank_label 'first', C - 1 for 'last'); label (N, L);
 * optional data_lengths (N) and label_lengths (N), in that order. Without label_lengths
 * a label ends at its first padding value: 0 with the blank first, -1 with it last
 * (MXNet 1.9 ctc_loss-inl.h). Outputs: the loss (N) and, hidden, the gradient of the
 * loss with respect to data (T, N, C), made in the forward pass as MXNet does.
 */
#ifndef LMX_OPS_CTC_PLAN_H
#define LMX_OPS_CTC_PLAN_H

#include <stdint.h>

#include "op.h"

typedef struct {
  int use_data_lengths, use_label_lengths;
  int blank_label; /* 0: first, 1: last */
} lmx_ctc_param;

typedef struct {
  int64_t T, N, C, L;
  int data_len_in, label_len_in; /* input index of data_lengths / label_lengths, -1 none */
} lmx_ctc_plan;

/* The plan of the known input shapes in[nin] under c->param. */
int lmx_ctc_plan_make(const lmx_op_ctx *c, const lmx_shape *in, int nin, lmx_ctc_plan *p);

#endif
