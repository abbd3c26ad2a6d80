/* cuda_table.c — the CUDA kernel table: one row per operator with CUDA kernels.
 *
 * Indexed by operator id (kernel.h): [LMX_OPID_<id>] = {FWD(id), BWD(id), WS(id)}, naming
 * lmx_cuda_fwd_<id> / lmx_cuda_bwd_<id> / lmx_cuda_ws_<id> of src/ops/cuda/<family>.c
 * (declared in cuda_ops.h). Rows left out mean "no kernel for <Op> on gpu(n)", which
 * bind and the imperative path report by name. Kernel owners add their rows under
 * their family's comment, in ops.def order.
 */
#include "cuda_ops.h"

#define FWD(id) lmx_cuda_fwd_##id
#define BWD(id) lmx_cuda_bwd_##id
#define WS(id) lmx_cuda_ws_##id

const lmx_kernel lmx_cuda_kernels[LMX_NUM_OPS] = {
    /* elementwise, scalar, unary, broadcast, reduce, Cast, copies, optimizer (K1) */
    /* activations, softmax, losses, indexing, Dropout (K2) */
    /* FullyConnected, dot, Convolution, Pooling, norms, RNN (K3) */
    [LMX_OPID_FullyConnected] = {FWD(FullyConnected), BWD(FullyConnected)},
    [LMX_OPID_Convolution] = {FWD(Convolution), BWD(Convolution), WS(Convolution)},
    [LMX_OPID_Deconvolution] = {FWD(Deconvolution), BWD(Deconvolution), WS(Deconvolution)},
    [LMX_OPID_Pooling] = {FWD(Pooling), BWD(Pooling)},
    [LMX_OPID_BatchNorm] = {FWD(BatchNorm), BWD(BatchNorm)},
    [LMX_OPID_LayerNorm] = {FWD(LayerNorm), BWD(LayerNorm)},
    [LMX_OPID_dot] = {FWD(dot), BWD(dot)},
    [LMX_OPID_batch_dot] = {FWD(batch_dot), BWD(batch_dot)},
    [LMX_OPID_RNN] = {FWD(RNN), BWD(RNN), WS(RNN)},
};
