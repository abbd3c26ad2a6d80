/* loss_more.c — more losses and transformer helpers (issue 14, loss and small linear
 * algebra): softmax_cross_entropy, _contrib_div_sqrt_dim.
 *
 * softmax_cross_entropy(data (N, K), label (N,)) is one number, shape (1,): the sum over
 * the batch of -log(softmax(data[i])[label[i]]); its data gradient is
 * (softmax(data) - onehot(label)) * head gradient, the label gets a zero gradient.
 * _contrib_div_sqrt_dim(data) = data / sqrt(data.shape[-1]).
 * SVMOutput(data, label) is the identity forward; its backward ignores the head gradient
 * (a loss layer) and gives MXNet's L2-SVM (or L1-SVM with use_linear) hinge gradient of
 * the output viewed as (prod(shape[:-1]), shape[-1]) rows, the label (data's shape
 * without the last axis) selecting each row's class.
 * IdentityAttachKLSparseReg(data) is the identity forward; its backward (which MXNet runs
 * in training) first moves the aux state moving_avg (units,) towards the batch mean of
 * each unit, moving_avg = momentum * moving_avg + (1 - momentum) * mean, then adds the KL
 * sparseness penalty penalty * (-target / moving_avg + (1 - target) / (1 - moving_avg))
 * to the head gradient (meant to follow a sigmoid: moving_avg in (0, 1)).
 * MXNet 1.9 sources: src/operator/loss_binary_op.cc, loss_binary_op-inl.h,
 * contrib/transformer.cc, svm_output-inl.h, identity_attach_KL_sparse_reg-inl.h.
 */
#include "loss_more_plan.h"
#include "op_impl.h"

static const char *const in_data_label[] = {"data", "label", NULL};
static const int inplace_00[][2] = {{0, 0}};

/* ---- softmax_cross_entropy ---------------------------------------------------------- */

/* MXNet's SoftmaxCrossEntropyShape: data 2-D, label 1-D of data.shape[0], output (1,). */
static int sce_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                           int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  lmx_shape one = LMX_SHP(1);
  LMX_TRY(lmx_out_assign(c, out, 0, &one));
  if (in[0].ndim > 0 && in[0].ndim != 2)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': expected 2-D (batch, classes), got "
                       "%d-D", in[0].ndim);
  if (in[1].ndim > 0 && in[1].ndim != 1)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'label': expected 1-D (batch,), got %d-D",
                       in[1].ndim);
  if (in[0].ndim == 2) {
    lmx_shape l = LMX_SHP(in[0].dim[0]);
    LMX_TRY(lmx_in_assign(c, in, 1, &l));
  }
  if (in[1].ndim == 1 && in[0].ndim == 0) {
    lmx_shape d = LMX_SHP(in[1].dim[0], 0);
    LMX_TRY(lmx_in_assign(c, in, 0, &d));
  }
  return LMX_OK;
}

const lmx_op lmx_op_softmax_cross_entropy = {
    .name = "softmax_cross_entropy",
    .doc = "Calculate cross entropy of softmax output and one-hot label: the softmax of each "
           "row of data (batch, classes), then the sum over the batch of -log(softmax[label]). "
           "The output has shape (1,); label (batch,) holds class indices as floats. Example: "
           "data [[1, 2, 3], [11, 7, 5]], label [2, 0] give -log(0.66524094) - "
           "log(0.97962922) = 0.4281871.",
    .inputs = in_data_label,
    .infer_shape = sce_infer_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUT_GRADS,
};

/* ---- _contrib_div_sqrt_dim ------------------------------------------------------------ */

static int dsd_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                           int nout, lmx_shape *aux, int naux) {
  (void)aux, (void)naux;
  return lmx_infer_same_shape(c, in, nin, out, nout);
}

const lmx_op lmx_op__contrib_div_sqrt_dim = {
    .name = "_contrib_div_sqrt_dim",
    .doc = "Rescale the input by the square root of the channel dimension: "
           "out = data / sqrt(data.shape[-1]).",
    .infer_shape = dsd_infer_shape,
    .backward_needs = LMX_NEEDS_OUT_GRADS,
    .inplace = inplace_00,
    .num_inplace = 1,
    .backward_inplace = inplace_00,
    .num_backward_inplace = 1,
};

/* ---- SVMOutput ------------------------------------------------------------------------- */

static const lmx_param_field svm_fields[] = {
    LMX_PF(lmx_svm_param, margin, LMX_PT_FLOAT, "1", NULL, 0, 0,
           "The loss function penalizes outputs that lie outside this margin."),
    LMX_PF(lmx_svm_param, regularization_coefficient, LMX_PT_FLOAT, "1", NULL, 0, 0,
           "Regularization parameter for the SVM: balances coefficient size and error."),
    LMX_PF(lmx_svm_param, use_linear, LMX_PT_BOOL, "False", NULL, 0, 0,
           "Whether to use the L1-SVM objective (L2-SVM by default)."),
};

/* MXNet's SVMOutputProp::InferShape: label = data.shape[:-1], output = data's shape. */
static int svm_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                           int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)aux, (void)naux;
  LMX_TRY(lmx_in_assign(c, in, 0, &out[0]));
  if (in[0].ndim <= 0) return LMX_OK;
  lmx_shape l = in[0];
  l.ndim = in[0].ndim - 1;
  LMX_TRY(lmx_in_assign(c, in, 1, &l));
  return lmx_out_assign(c, out, 0, &in[0]);
}

const lmx_op lmx_op_SVMOutput = {
    .name = "SVMOutput",
    .doc = "Computes support vector machine based transformation of the input: the forward "
           "is the identity; the backward (a loss layer, no head gradient) gives the L2-SVM "
           "hinge gradient (L1-SVM with use_linear) of the output rows against label.",
    LMX_PARAMS(svm_fields, lmx_svm_param),
    .inputs = in_data_label,
    .infer_shape = svm_infer_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS,
    .inplace = inplace_00,
    .num_inplace = 1,
    .flags = LMX_OPF_LOSS,
};

/* ---- IdentityAttachKLSparseReg -------------------------------------------------------- */

static const lmx_param_field klreg_fields[] = {
    LMX_PF(lmx_klreg_param, sparseness_target, LMX_PT_FLOAT, "0.1", NULL, 0, 1,
           "The sparseness target."),
    LMX_PF(lmx_klreg_param, penalty, LMX_PT_FLOAT, "0.001", NULL, 0, 0,
           "The tradeoff parameter for the sparseness penalty."),
    LMX_PF(lmx_klreg_param, momentum, LMX_PT_FLOAT, "0.9", NULL, 0, 1,
           "The momentum for running average."),
};

static const char *const aux_moving_avg[] = {"moving_avg", NULL};

/* MXNet's InferShape: output = data's shape, moving_avg = (data.shape[1],). */
static int klreg_infer_shape(const lmx_op_ctx *c, lmx_shape *in, int nin, lmx_shape *out,
                             int nout, lmx_shape *aux, int naux) {
  (void)nin, (void)nout, (void)naux;
  LMX_TRY(lmx_in_assign(c, in, 0, &out[0]));
  if (in[0].ndim <= 0) return LMX_OK;
  if (in[0].ndim < 2)
    return lmx_op_fail(c, LMX_ERR_SHAPE, "input 'data': expected at least 2-D (batch, "
                       "units), got %d-D", in[0].ndim);
  lmx_shape a = LMX_SHP(in[0].dim[1]);
  LMX_TRY(lmx_aux_assign(c, aux, 0, &a));
  return lmx_out_assign(c, out, 0, &in[0]);
}

const lmx_op lmx_op_IdentityAttachKLSparseReg = {
    .name = "IdentityAttachKLSparseReg",
    .doc = "Apply a sparse regularization to the output of a sigmoid activation function: the "
           "forward is the identity; the backward updates the aux state moving_avg = momentum "
           "* moving_avg + (1 - momentum) * batch mean of each unit and adds penalty * "
           "(-sparseness_target / moving_avg + (1 - sparseness_target) / (1 - moving_avg)) "
           "to the gradient.",
    LMX_PARAMS(klreg_fields, lmx_klreg_param),
    .aux = aux_moving_avg,
    .infer_shape = klreg_infer_shape,
    .backward_needs = LMX_NEEDS_INPUTS | LMX_NEEDS_OUT_GRADS,
    .inplace = inplace_00,
    .num_inplace = 1,
    .backward_inplace = inplace_00,
    .num_backward_inplace = 1,
    .flags = LMX_OPF_MUTATES_AUX,
};
