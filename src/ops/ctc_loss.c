/* ctc_loss.c — CTCLoss (aliases ctc_loss, _contrib_CTCLoss, _contrib_ctc_loss), the
 * connectionist temporal classification loss of MXNet 1.9 (src/operator/nn/ctc_loss.cc,
 * ctc_loss-inl.h), issue 14 (ops14g). Layouts and padding: ctc_plan.h.
 *
 * For each sequence n the loss is -log p(label_n | data_n), p summed over every frame
 * alignment (blanks between and around the labels, repeats merged) of the softmax over
 * classes of each frame. The forward pass also makes the gradient with respect to the
 * activations (softmax - posterior of each class at each frame; zero past a sequence's
 * data length), stored in a hidden output as MXNet does; the backward scales it by the
 * loss's head gradient. Labels and lengths get no gradient.
 */
#include "ctc_plan.h"
#include "op_impl.h"

static const lmx_param_field ctc_fields[] = {
    LMX_PF(lmx_ctc_param, use_data_lengths, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Whether the data lenghts are decided by `data_lengths`. If false, the lengths "
           "are equal to the max sequence length."),
    LMX_PF(lmx_ctc_param, use_label_lengths, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Whether the label lenghts are decided by `label_lengths`, or derived from "
           "`padding_mask`. If false, the lengths are derived from the first occurrence of "
           "the value of `padding_mask`: 0 when the first label is the blank, -1 when the "
           "last one is."),
    LMX_PF(lmx_ctc_param, blank_label, LMX_PT_ENUM, "first", "first|last", 0, 0,
           "Set the label that is reserved for blank label. If \"first\", 0-th label is "
           "reserved, and label values for tokens in the vocabulary are between 1 and "
           "alphabet_size-1. If \"last\", last label value alphabet_size-1 is reserved for "
           "blank label instead, and label values for tokens in the vocabulary are between "
           "0 and alphabet_size-2."),
};

static const char *const ctc_outputs[] = {"output", "grad", NULL};

static int ctc_num_inputs(const void *p) {
  const lmx_ctc_param *q = p;
  return 2 + (q->use_data_lengths != 0) + (q->use_label_lengths != 0);
}

static void ctc_input_name(const void *p, int i, char *buf, size_t cap) {
  const lmx_ctc_param *q = p;
  const char *nm = i == 0 ? "data" : i == 1 ? "label" : NULL;
  if (!nm) nm = i == 2 && q->use_data_lengths ? "data_lengths" : "label_lengths";
  snprintf(buf, cap, "%s", nm);
}

static int ctc_visible(const void *p) {
  (void)p;
  return 1;
}

static int ctc_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                           int nout, lmx_shape *aux, int naux) {
  (void)aux, (void)naux;
  if (in[0].ndim == 3 && lmx_shape_known(&in[0])) {
    lmx_shape o = LMX_SHP(in[0].dim[1]);
    LMX_TRY(lmx_out_assign(c, out, 0, &o));
    if (nout > 1) LMX_TRY(lmx_out_assign(c, out, 1, &in[0]));
  }
  for (int i = 0; i < nin; i++)
    if (!lmx_shape_known(&in[i])) return LMX_OK;
  lmx_ctc_plan p;
  return lmx_ctc_plan_make(c, in, nin, &p);
}

/* both outputs take data's dtype; labels and lengths keep their own, data's when unknown
 * (as take's indices) */
static int ctc_infer_type(const lmx_op_ctx *c, int *in, int nin, int *out, int nout, int *aux,
                          int naux) {
  (void)aux, (void)naux;
  LMX_TRY(lmx_dtype_assign(c, &out[0], in[0], "output 'output'"));
  if (nout > 1) LMX_TRY(lmx_dtype_assign(c, &out[1], in[0], "output 'grad'"));
  LMX_TRY(lmx_dtype_assign(c, &in[0], out[0], "input 'data'"));
  for (int i = 1; i < nin; i++)
    if (in[i] < 0 && in[0] >= 0) in[i] = in[0];
  return LMX_OK;
}

const lmx_op lmx_op_CTCLoss = {
    .name = "CTCLoss",
    .doc = "Connectionist Temporal Classification Loss. The shapes of the inputs and outputs: "
           "data (sequence_length, batch_size, alphabet_size) of unnormalised activations "
           "(a softmax over the last axis is applied inside), label (batch_size, "
           "label_sequence_length), optional data_lengths (batch_size) and label_lengths "
           "(batch_size); out (batch_size), the negative log-likelihood of each label "
           "sequence. With blank_label 'first' the blank is class 0 and labels are padded "
           "with 0; with 'last' it is class alphabet_size-1 and labels are padded with -1. "
           "Example: data = zeros (2, 1, 3) (uniform over 3 classes) and label [[1]] give "
           "out = [log(3)] = [1.0986]: the alignments 1-1, 1-b and b-1, 1/9 each.",
    LMX_PARAMS(ctc_fields, lmx_ctc_param),
    .num_inputs = ctc_num_inputs,
    .input_name = ctc_input_name,
    .outputs = ctc_outputs,
    .num_visible_outputs = ctc_visible,
    .infer_shape = ctc_infer_shape,
    .infer_type = ctc_infer_type,
    .backward_needs = LMX_NEEDS_OUTPUTS | LMX_NEEDS_OUT_GRADS,
};
