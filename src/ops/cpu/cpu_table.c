/* cpu_table.c — the CPU kernel table: one row per operator the CPU runs.
 *
 * Indexed by operator id (kernel.h): [LMX_OPID_<id>] = {forward, backward, workspace}.
 * FWD(id) / BWD(id) / WS(id) name the glue functions lmx_cpu_fwd_<id>, lmx_cpu_bwd_<id>,
 * lmx_cpu_ws_<id> of src/ops/cpu/<family>.c (declared for every op in cpu_ops.h).
 * A row left out means "no kernel for <Op> on cpu"; a row without BWD means the op has
 * no gradient on the CPU. Grouped by descriptor file, in ops.def order.
 */
#include "cpu_ops.h"

#define FWD(id) lmx_cpu_fwd_##id
#define BWD(id) lmx_cpu_bwd_##id
#define WS(id) lmx_cpu_ws_##id

const lmx_kernel lmx_cpu_kernels[LMX_NUM_OPS] = {
    /* nn_fc.c */
    [LMX_OPID_FullyConnected] = {FWD(FullyConnected), BWD(FullyConnected)},
    /* init_op.c */
    [LMX_OPID__zeros] = {FWD(_zeros)},
    [LMX_OPID__ones] = {FWD(_ones)},
    [LMX_OPID__full] = {FWD(_full)},
    /* nn_act.c */
    [LMX_OPID_Activation] = {FWD(Activation), BWD(Activation)},
    /* loss.c */
    [LMX_OPID_SoftmaxOutput] = {FWD(SoftmaxOutput), BWD(SoftmaxOutput)},
    /* elemwise_binary.c */
    [LMX_OPID_elemwise_add] = {FWD(elemwise_add), BWD(elemwise_add)},
    [LMX_OPID_elemwise_sub] = {FWD(elemwise_sub), BWD(elemwise_sub)},
    [LMX_OPID_elemwise_mul] = {FWD(elemwise_mul), BWD(elemwise_mul)},
    [LMX_OPID_elemwise_div] = {FWD(elemwise_div), BWD(elemwise_div)},
    [LMX_OPID__power] = {FWD(_power), BWD(_power)},
    [LMX_OPID__maximum] = {FWD(_maximum), BWD(_maximum)},
    [LMX_OPID__minimum] = {FWD(_minimum), BWD(_minimum)},
    [LMX_OPID_add_n] = {FWD(add_n), BWD(add_n)},
    /* elemwise_scalar.c */
    [LMX_OPID__plus_scalar] = {FWD(_plus_scalar), BWD(_plus_scalar)},
    [LMX_OPID__minus_scalar] = {FWD(_minus_scalar), BWD(_minus_scalar)},
    [LMX_OPID__rminus_scalar] = {FWD(_rminus_scalar), BWD(_rminus_scalar)},
    [LMX_OPID__mul_scalar] = {FWD(_mul_scalar), BWD(_mul_scalar)},
    [LMX_OPID__div_scalar] = {FWD(_div_scalar), BWD(_div_scalar)},
    [LMX_OPID__rdiv_scalar] = {FWD(_rdiv_scalar), BWD(_rdiv_scalar)},
    [LMX_OPID__power_scalar] = {FWD(_power_scalar), BWD(_power_scalar)},
    [LMX_OPID__rpower_scalar] = {FWD(_rpower_scalar), BWD(_rpower_scalar)},
    [LMX_OPID__maximum_scalar] = {FWD(_maximum_scalar), BWD(_maximum_scalar)},
    [LMX_OPID__minimum_scalar] = {FWD(_minimum_scalar), BWD(_minimum_scalar)},
    [LMX_OPID__equal_scalar] = {FWD(_equal_scalar), BWD(_equal_scalar)},
    [LMX_OPID__not_equal_scalar] = {FWD(_not_equal_scalar), BWD(_not_equal_scalar)},
    [LMX_OPID__greater_scalar] = {FWD(_greater_scalar), BWD(_greater_scalar)},
    [LMX_OPID__greater_equal_scalar] = {FWD(_greater_equal_scalar), BWD(_greater_equal_scalar)},
    [LMX_OPID__lesser_scalar] = {FWD(_lesser_scalar), BWD(_lesser_scalar)},
    [LMX_OPID__lesser_equal_scalar] = {FWD(_lesser_equal_scalar), BWD(_lesser_equal_scalar)},
    /* elemwise_unary.c */
    [LMX_OPID_exp] = {FWD(exp), BWD(exp)},
    [LMX_OPID_log] = {FWD(log), BWD(log)},
    [LMX_OPID_sqrt] = {FWD(sqrt), BWD(sqrt)},
    [LMX_OPID_rsqrt] = {FWD(rsqrt), BWD(rsqrt)},
    [LMX_OPID_square] = {FWD(square), BWD(square)},
    [LMX_OPID_abs] = {FWD(abs), BWD(abs)},
    [LMX_OPID_sign] = {FWD(sign), BWD(sign)},
    [LMX_OPID_sin] = {FWD(sin), BWD(sin)},
    [LMX_OPID_cos] = {FWD(cos), BWD(cos)},
    [LMX_OPID_tanh] = {FWD(tanh), BWD(tanh)},
    [LMX_OPID_sigmoid] = {FWD(sigmoid), BWD(sigmoid)},
    [LMX_OPID_relu] = {FWD(relu), BWD(relu)},
    [LMX_OPID_negative] = {FWD(negative), BWD(negative)},
    [LMX_OPID_reciprocal] = {FWD(reciprocal), BWD(reciprocal)},
    [LMX_OPID_floor] = {FWD(floor), BWD(floor)},
    [LMX_OPID_ceil] = {FWD(ceil), BWD(ceil)},
    [LMX_OPID_round] = {FWD(round), BWD(round)},
    /* broadcast.c */
    [LMX_OPID_broadcast_add] = {FWD(broadcast_add), BWD(broadcast_add)},
    [LMX_OPID_broadcast_sub] = {FWD(broadcast_sub), BWD(broadcast_sub)},
    [LMX_OPID_broadcast_mul] = {FWD(broadcast_mul), BWD(broadcast_mul)},
    [LMX_OPID_broadcast_div] = {FWD(broadcast_div), BWD(broadcast_div)},
    [LMX_OPID_broadcast_maximum] = {FWD(broadcast_maximum), BWD(broadcast_maximum)},
    [LMX_OPID_broadcast_minimum] = {FWD(broadcast_minimum), BWD(broadcast_minimum)},
    [LMX_OPID_broadcast_power] = {FWD(broadcast_power), BWD(broadcast_power)},
    [LMX_OPID_broadcast_equal] = {FWD(broadcast_equal), BWD(broadcast_equal)},
    [LMX_OPID_broadcast_not_equal] = {FWD(broadcast_not_equal), BWD(broadcast_not_equal)},
    [LMX_OPID_broadcast_greater] = {FWD(broadcast_greater), BWD(broadcast_greater)},
    [LMX_OPID_broadcast_lesser] = {FWD(broadcast_lesser), BWD(broadcast_lesser)},
    /* reduce.c */
    [LMX_OPID_sum] = {FWD(sum), BWD(sum)},
    [LMX_OPID_mean] = {FWD(mean), BWD(mean)},
    [LMX_OPID_max] = {FWD(max), BWD(max)},
    [LMX_OPID_min] = {FWD(min), BWD(min)},
    [LMX_OPID_prod] = {FWD(prod), BWD(prod)},
    [LMX_OPID_norm] = {FWD(norm), BWD(norm)},
    [LMX_OPID_argmax] = {FWD(argmax)},
    [LMX_OPID_argmin] = {FWD(argmin)},
    /* nn_act.c (rest) */
    [LMX_OPID_LeakyReLU] = {FWD(LeakyReLU), BWD(LeakyReLU)},
    [LMX_OPID_softmax] = {FWD(softmax), BWD(softmax)},
    [LMX_OPID_log_softmax] = {FWD(log_softmax), BWD(log_softmax)},
    [LMX_OPID_SoftmaxActivation] = {FWD(SoftmaxActivation), BWD(SoftmaxActivation)},
    /* loss.c (rest) */
    [LMX_OPID_LinearRegressionOutput] = {FWD(LinearRegressionOutput), BWD(LinearRegressionOutput)},
    [LMX_OPID_LogisticRegressionOutput] = {FWD(LogisticRegressionOutput),
                                           BWD(LogisticRegressionOutput)},
    [LMX_OPID_MAERegressionOutput] = {FWD(MAERegressionOutput), BWD(MAERegressionOutput)},
    [LMX_OPID_MakeLoss] = {FWD(MakeLoss), BWD(MakeLoss)},
    [LMX_OPID_BlockGrad] = {FWD(BlockGrad), BWD(BlockGrad)},
    /* nn_conv.c, nn_pool.c, nn_norm.c, dropout.c */
    [LMX_OPID_Convolution] = {FWD(Convolution), BWD(Convolution), WS(Convolution)},
    [LMX_OPID_Deconvolution] = {FWD(Deconvolution), BWD(Deconvolution), WS(Deconvolution)},
    [LMX_OPID_Pooling] = {FWD(Pooling), BWD(Pooling)},
    [LMX_OPID_BatchNorm] = {FWD(BatchNorm), BWD(BatchNorm)},
    [LMX_OPID_LayerNorm] = {FWD(LayerNorm), BWD(LayerNorm)},
    [LMX_OPID_Dropout] = {FWD(Dropout), BWD(Dropout)},
    /* matrix.c */
    [LMX_OPID_Reshape] = {FWD(Reshape), BWD(Reshape)},
    [LMX_OPID_Flatten] = {FWD(Flatten), BWD(Flatten)},
    [LMX_OPID_transpose] = {FWD(transpose), BWD(transpose)},
    [LMX_OPID_SwapAxis] = {FWD(SwapAxis), BWD(SwapAxis)},
    [LMX_OPID_expand_dims] = {FWD(expand_dims), BWD(expand_dims)},
    [LMX_OPID_squeeze] = {FWD(squeeze), BWD(squeeze)},
    [LMX_OPID_slice] = {FWD(slice), BWD(slice)},
    [LMX_OPID_slice_axis] = {FWD(slice_axis), BWD(slice_axis)},
    [LMX_OPID_reverse] = {FWD(reverse), BWD(reverse)},
    [LMX_OPID_Concat] = {FWD(Concat), BWD(Concat)},
    [LMX_OPID_SliceChannel] = {FWD(SliceChannel), BWD(SliceChannel)},
    /* indexing.c */
    [LMX_OPID_take] = {FWD(take), BWD(take)},
    [LMX_OPID_one_hot] = {FWD(one_hot)},
    [LMX_OPID_where] = {FWD(where), BWD(where)},
    [LMX_OPID_clip] = {FWD(clip), BWD(clip)},
    [LMX_OPID_Cast] = {FWD(Cast), BWD(Cast)},
    [LMX_OPID_Embedding] = {FWD(Embedding), BWD(Embedding)},
    [LMX_OPID_dot] = {FWD(dot), BWD(dot)},
    [LMX_OPID_batch_dot] = {FWD(batch_dot), BWD(batch_dot)},
    [LMX_OPID_zeros_like] = {FWD(zeros_like)},
    [LMX_OPID_ones_like] = {FWD(ones_like)},
    [LMX_OPID__copy] = {FWD(_copy), BWD(_copy)},
    /* rnn.c */
    [LMX_OPID_RNN] = {FWD(RNN), BWD(RNN), WS(RNN)},
    [LMX_OPID_SequenceMask] = {FWD(SequenceMask), BWD(SequenceMask)},
    [LMX_OPID_SequenceLast] = {FWD(SequenceLast), BWD(SequenceLast)},
    [LMX_OPID_SequenceReverse] = {FWD(SequenceReverse), BWD(SequenceReverse)},
    /* optimizer.c */
    [LMX_OPID_sgd_update] = {FWD(sgd_update)},
    [LMX_OPID_sgd_mom_update] = {FWD(sgd_mom_update)},
    [LMX_OPID_nag_mom_update] = {FWD(nag_mom_update)},
    [LMX_OPID_adam_update] = {FWD(adam_update)},
    [LMX_OPID_rmsprop_update] = {FWD(rmsprop_update)},
    [LMX_OPID_adagrad_update] = {FWD(adagrad_update)},
    [LMX_OPID_ftrl_update] = {FWD(ftrl_update)},
    [LMX_OPID_signum_update] = {FWD(signum_update)},
    [LMX_OPID_signsgd_update] = {FWD(signsgd_update)},
    [LMX_OPID_ftml_update] = {FWD(ftml_update)},
    [LMX_OPID_mp_sgd_update] = {FWD(mp_sgd_update), NULL, WS(mp_sgd_update)},
    [LMX_OPID_mp_sgd_mom_update] = {FWD(mp_sgd_mom_update), NULL, WS(mp_sgd_mom_update)},
    [LMX_OPID_mp_nag_mom_update] = {FWD(mp_nag_mom_update), NULL, WS(mp_nag_mom_update)},
    /* custom.c */
    [LMX_OPID_Custom] = {FWD(Custom), BWD(Custom)},
    /* loss_more.c, linalg_more.c (issue 14: losses and small linear algebra, ops14d) */
    [LMX_OPID_softmax_cross_entropy] = {FWD(softmax_cross_entropy), BWD(softmax_cross_entropy)},
    [LMX_OPID__contrib_div_sqrt_dim] = {FWD(_contrib_div_sqrt_dim), BWD(_contrib_div_sqrt_dim)},
    [LMX_OPID_SVMOutput] = {FWD(SVMOutput), BWD(SVMOutput)},
    [LMX_OPID_IdentityAttachKLSparseReg] = {FWD(IdentityAttachKLSparseReg),
                                            BWD(IdentityAttachKLSparseReg)},
    [LMX_OPID__linalg_gemm] = {FWD(_linalg_gemm), BWD(_linalg_gemm)},
    [LMX_OPID__linalg_gemm2] = {FWD(_linalg_gemm2), BWD(_linalg_gemm2)},
    [LMX_OPID_khatri_rao] = {FWD(khatri_rao), BWD(khatri_rao)},
};
