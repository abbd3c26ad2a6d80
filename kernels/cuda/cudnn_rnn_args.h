/* cudnn_rnn_args.h — what luamx's fused RNN operator asks of cuDNN's RNN (cuDNN 9's
 * cudnnRNNForward / cudnnRNNBackwardData_v8 / cudnnRNNBackwardWeights_v8), derived in
 * plain C and tested on the CPU (tests/test_cudnn_args.c), like cudnn_args.h.
 *
 * The parameter vector. MXNet's packed layout (kernels/cpu/rnn.c): per layer l and
 * direction d (pseudo-layer pl = l·D + d, cuDNN's numbering), Wx [G·H, in] then
 * Wh [G·H, H]; after all weights, per pseudo-layer, bx [G·H] then bh [G·H]. cuDNN names
 * each gate's matrix and bias by linLayerID: 0 .. G-1 the input (W) gates, G .. 2G-1 the
 * recurrent (R) gates, in cuDNN's gate order — lstm i, f, g (cuDNN's "c'"), o; gru r, z,
 * n (cuDNN's "h'", with the recurrent bias inside the reset product, as MXNet's
 * n = tanh(Wn x + bWn + r ⊙ (Rn h + bRn))) — which is MXNet's order, so no gate is
 * permuted: block (pl, lin) is rows [g·H, (g+1)·H) of Wx (lin < G) or of Wh, and the
 * matching H values of bx or bh. Matrices are row-major [H, in] in both. Where cuDNN's
 * weight space puts every block at MXNet's offset (cudnnGetRNNWeightParams tells, at the
 * first call of a configuration), the parameter array and its gradient are cuDNN's
 * weight spaces; otherwise the blocks are copied into a weight space in the workspace
 * (and the gradient's blocks back).
 *
 * Refused (the own cell kernels run): dtypes other than float32; inter-layer dropout
 * (p > 0 with L > 1: cuDNN would draw its own masks, not luamx's counter-based ones; the
 * rule does not look at the pass, so a forward and its backward, whatever their is_train,
 * take the same path and read one reserve format); dims beyond int. The run-time sizes (workspace, reserve) are checked by lmx_dnn_rnn_fit.
 * Pure functions, thread-safe.
 */
#ifndef LMX_KERNELS_CUDA_CUDNN_RNN_ARGS_H
#define LMX_KERNELS_CUDA_CUDNN_RNN_ARGS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* cell modes, in cuDNN's cudnnRNNMode_t order (and LMX_RNN_*'s) */
enum { LMX_DNN_RNN_RELU, LMX_DNN_RNN_TANH, LMX_DNN_RNN_LSTM, LMX_DNN_RNN_GRU };

typedef struct {
  int dt;       /* LMX_FLOAT32 accepted */
  int mode;     /* LMX_RNN_* (= LMX_DNN_RNN_*) */
  int64_t L, D, T, N, In, H;
  double p;     /* inter-layer dropout */
} lmx_dnn_rnn_req;

typedef struct {
  int cell, bidirectional, data_type;   /* LMX_DNN_RNN_*, 0/1, LMX_DNN_FLOAT */
  int layers, input, hidden, seq, batch;
  int gates;                            /* G: 1, 4 (lstm), 3 (gru) */
  int x_vec, y_vec;                     /* In, D·H: the RNN data descriptors' vector sizes */
  int h_dim[3], h_stride[3];            /* [L·D, N, H] packed: hx, hy, cx, cy */
  int nblocks;                          /* L·D · 2G matrices (and as many biases) */
  int64_t nparams;                      /* MXNet's parameter count */
} lmx_dnn_rnn_args;

int lmx_dnn_rnn_derive(const lmx_dnn_rnn_req *r, lmx_dnn_rnn_args *a, char *why, size_t len);

/* MXNet's place of the matrix (bias 0) or bias (bias 1) of pseudo-layer pl and cuDNN's
 * linLayerID lin: element offset *off into the parameter vector and its shape *rows ×
 * *cols (a bias: H × 1). 0, or -1 for pl / lin out of range. */
int lmx_dnn_rnn_block(const lmx_dnn_rnn_args *a, int pl, int lin, int bias, int64_t *off,
                      int64_t *rows, int64_t *cols);

/* Block k of 0 .. 2·nblocks - 1 in a fixed order (matrices, then biases; pseudo-layer,
 * then lin): its pl, lin and bias. */
void lmx_dnn_rnn_block_at(const lmx_dnn_rnn_args *a, int k, int *pl, int *lin, int *bias);

/* 1 when cuDNN's weight space is MXNet's layout: wspace_bytes is nparams float32s and
 * got_off[k] (the element offset cuDNN gave block k of lmx_dnn_rnn_block_at, -1 for a
 * block it does not have) is MXNet's offset for every k. */
int lmx_dnn_rnn_same_layout(const lmx_dnn_rnn_args *a, const int64_t *got_off,
                            size_t wspace_bytes);

/* The op's workspace as the cuDNN path uses it (byte offsets, 256-aligned): the N int32
 * sequence lengths cuDNN reads on the device; cuDNN's own workspace; with a layout that
 * is not MXNet's, a weight space and a weight-gradient space; scratch for a data
 * gradient (T·N·In), and for hidden / cell gradients (L·D·N·H each) that are added
 * (req 'add') or not wanted. Forward and backward use the same plan, so they decide
 * alike. */
typedef struct {
  size_t seq, work, wspace, dwspace, dx, dhx, dcx, need;
} lmx_dnn_rnn_ws;

/* Plans the workspace for cuDNN's workspace / reserve / weight-space sizes and whether
 * the layout is MXNet's; LMX_DNN_USE when it fits ws_bytes and cuDNN's reserve fits the
 * op's reserve (reserve_bytes), else LMX_DNN_REFUSE with the reason. */
int lmx_dnn_rnn_fit(const lmx_dnn_rnn_args *a, size_t ws_bytes, size_t reserve_bytes,
                    size_t cudnn_ws, size_t cudnn_reserve, size_t wspace_bytes, int same,
                    lmx_dnn_rnn_ws *w, char *why, size_t len);

/* Bytes the cuDNN path may need beyond cuDNN's own workspace for a configuration: the
 * sequence lengths, two weight spaces, and the gradient scratch (alignment included).
 * The glue adds it, and a margin for cuDNN's workspace, to the op's planned workspace. */
size_t lmx_dnn_rnn_ws_extra(const lmx_dnn_rnn_args *a);

#ifdef __cplusplus
}
#endif

#endif
