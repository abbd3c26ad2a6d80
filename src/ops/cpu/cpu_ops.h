/* cpu_ops.h — the CPU kernel slots of the operator descriptors, and the helpers the
 * glue files share.
 *
 * Every operator `id` with CPU kernels has `lmx_cpu_fwd_<id>` (an lmx_forward_fn) and,
 * when it has a gradient, `lmx_cpu_bwd_<id>` (an lmx_backward_fn); the descriptor in
 * src/ops/<family>.c points its `.forward[LMX_DEV_SLOT_CPU]` / `.backward[...]` at them.
 * The glue (src/ops/cpu/<family>.c) reads the op's parameters, checks everything a
 * kernel could crash on (dtypes, sizes, index ranges) and calls kernels/cpu.
 *
 * Calling convention (what the executor and the imperative path pass):
 *  - forward: in[num_inputs], out[num_outputs] (hidden outputs included), req[num_outputs],
 *    aux[num_aux]. Tensors are dense and contiguous in C order.
 *  - backward: out_grad[num_outputs] (hidden outputs get a tensor with data NULL), in and
 *    out as in forward, in_grad[num_inputs], req[num_inputs] (one per input gradient).
 *    Tensors that backward_needs does not ask for may have data NULL; the glue never
 *    reads them. A loss op (LMX_OPF_LOSS) may get out_grad data NULL.
 *  - req: LMX_REQ_NULL leaves the buffer untouched, WRITE/INPLACE overwrite (an output
 *    may share memory with the input named in the descriptor's inplace pairs), ADD
 *    accumulates into the existing values. Forward outputs with ADD are supported by the
 *    elementwise families; elsewhere ADD on a forward output fails with
 *    LMX_ERR_UNSUPPORTED (the executor never asks for it).
 *  - Kernels never allocate: temporaries come from c->workspace, sized by the
 *    descriptor's .workspace function (lmx_cpu_ws_<id>), which the glue checks.
 *  - Errors: LMX_ERR_DTYPE / LMX_ERR_SHAPE / LMX_ERR_ARG with "<Op> '<node>': ..." naming
 *    the argument, the expected and the actual value. Never abort.
 *
 * Parameters are read by name through the op's field table (lmx_cpu_p*), so the glue
 * does not depend on the layout of the param structs private to the descriptor files.
 */
#ifndef LMX_OPS_CPU_OPS_H
#define LMX_OPS_CPU_OPS_H

#include "../op.h"

/* ---- the kernel slots --------------------------------------------------------------- */

#define LMX_CPU_DECL(id)                                                                   \
  int lmx_cpu_fwd_##id(const lmx_op_ctx *c, const lmx_tensor *in, const lmx_tensor *out,   \
                       const int *req, const lmx_tensor *aux);                             \
  int lmx_cpu_bwd_##id(const lmx_op_ctx *c, const lmx_tensor *out_grad, const lmx_tensor *in, \
                       const lmx_tensor *out, const lmx_tensor *in_grad, const int *req,   \
                       const lmx_tensor *aux);

#define LMX_CPU_OP_LIST(X)                                                                 \
  /* nn_fc.c */ X(FullyConnected) X(dot) X(batch_dot)                                      \
  /* activation.c */ X(Activation) X(LeakyReLU) X(softmax) X(log_softmax)                 \
  X(SoftmaxActivation)                                                                     \
  /* loss.c */ X(SoftmaxOutput) X(LinearRegressionOutput) X(LogisticRegressionOutput)      \
  X(MAERegressionOutput) X(MakeLoss) X(BlockGrad)                                          \
  /* elemwise.c */ X(elemwise_add) X(elemwise_sub) X(elemwise_mul) X(elemwise_div)         \
  X(_power) X(_maximum) X(_minimum) X(add_n) X(_copy) X(zeros_like) X(ones_like)           \
  X(_plus_scalar) X(_minus_scalar) X(_rminus_scalar) X(_mul_scalar) X(_div_scalar)         \
  X(_rdiv_scalar) X(_power_scalar) X(_rpower_scalar) X(_maximum_scalar)                    \
  X(_minimum_scalar) X(_equal_scalar) X(_not_equal_scalar) X(_greater_scalar)              \
  X(_greater_equal_scalar) X(_lesser_scalar) X(_lesser_equal_scalar)                       \
  X(exp) X(log) X(sqrt) X(rsqrt) X(square) X(abs) X(sign) X(sin) X(cos) X(tanh)            \
  X(sigmoid) X(relu) X(negative) X(reciprocal) X(floor) X(ceil) X(round) X(clip) X(Cast)   \
  /* matrix.c */ X(Concat) X(SliceChannel) X(Flatten) X(Reshape) X(expand_dims) X(squeeze) \
  X(transpose) X(SwapAxis) X(slice_axis) X(slice) X(take) X(one_hot) X(where)              \
  X(Embedding)                                                                             \
  /* broadcast.c */ X(broadcast_add) X(broadcast_sub) X(broadcast_mul) X(broadcast_div)    \
  X(broadcast_maximum) X(broadcast_minimum) X(broadcast_power) X(broadcast_equal)          \
  X(broadcast_not_equal) X(broadcast_greater) X(broadcast_lesser)                          \
  /* reduce.c */ X(sum) X(mean) X(max) X(min) X(prod) X(norm) X(argmax) X(argmin)          \
  /* conv.c */ X(Convolution) X(Deconvolution) X(Pooling)                                 \
  /* norm.c */ X(BatchNorm) X(LayerNorm) X(Dropout)                                        \
  /* optimizer.c */ X(sgd_update) X(sgd_mom_update) X(nag_mom_update) X(adam_update)       \
  X(rmsprop_update) X(adagrad_update)                                                      \
  /* rnn.c */ X(RNN) X(SequenceMask) X(SequenceLast) X(SequenceReverse)

LMX_CPU_OP_LIST(LMX_CPU_DECL)

/* Workspace sizes (descriptor .workspace) of the ops that need scratch memory. */
size_t lmx_cpu_ws_Convolution(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out);
size_t lmx_cpu_ws_Deconvolution(const lmx_op_ctx *c, const lmx_shape *in,
                                const lmx_shape *out);
size_t lmx_cpu_ws_RNN(const lmx_op_ctx *c, const lmx_shape *in, const lmx_shape *out);

/* ---- helpers for the glue files (cpu_common.c) --------------------------------------- */

/* Parameter `name` of the op as a number (INT, FLOAT, BOOL, ENUM index, DTYPE, OPT_*);
 * `def` when the op has no such parameter or it is None. */
double lmx_cpu_pnum(const lmx_op_ctx *c, const char *name, double def);
int64_t lmx_cpu_pint(const lmx_op_ctx *c, const char *name, int64_t def);
/* 1 when enum parameter `name` is set to `choice` (compared by name). */
int lmx_cpu_penum(const lmx_op_ctx *c, const char *name, const char *choice);
/* Tuple parameter (SHAPE / OPT_INTS); ndim -1 when absent or None. */
lmx_shape lmx_cpu_pshape(const lmx_op_ctx *c, const char *name);
/* Float tuple parameter; n = -1 when absent or None. */
lmx_ftuple lmx_cpu_pfloats(const lmx_op_ctx *c, const char *name);

int64_t lmx_cpu_size(const lmx_tensor *t);
/* Fails unless t is float32/float64 (the kernels' dtypes); `what` names the argument. */
int lmx_cpu_check_float(const lmx_op_ctx *c, const lmx_tensor *t, const char *what);
/* Fails unless t has data and n elements. */
int lmx_cpu_check_size(const lmx_op_ctx *c, const lmx_tensor *t, int64_t n, const char *what);
/* Fails unless t has data, the given dtype, and shape s. */
int lmx_cpu_check_like(const lmx_op_ctx *c, const lmx_tensor *t, const lmx_shape *s, int dtype,
                       const char *what);
/* Standard failures. */
int lmx_cpu_fail_dtype(const lmx_op_ctx *c, const lmx_tensor *t, const char *what);
int lmx_cpu_fail_req_add(const lmx_op_ctx *c, const char *what);
/* Fails unless the workspace holds `bytes`. */
int lmx_cpu_check_ws(const lmx_op_ctx *c, size_t bytes);
/* Writes zeros into t unless req is NULL (ADD: nothing to add). */
void lmx_cpu_zero_grad(const lmx_tensor *t, int req);
/* dims [0, axis) product, dims (axis, ndim) product */
int64_t lmx_cpu_outer(const lmx_shape *s, int axis);
int64_t lmx_cpu_inner(const lmx_shape *s, int axis);

#endif
