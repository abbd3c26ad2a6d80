/* cu_dnn.h — Convolution, Pooling, BatchNorm and the fused RNN through cuDNN (cudnn_exec.cu), for the
 * configurations lmx_dnn_*_derive (cudnn_args.h) accepted. Declared and defined only in
 * real CUDA builds that found cudnn.h (LUAMX_HAVE_CUDNN); the simulator build and
 * builds without the header use the own kernels only.
 *
 * Every function enqueues on stream s (the current device's luamx stream), never
 * synchronises and never allocates device memory: temporaries come from the op's
 * workspace `ws` of `ws_bytes`. Pointers are device pointers of the current device;
 * NULL gradient targets are skipped. acc: 1 adds into the target (req 'add': beta 1),
 * 0 overwrites it (beta 0).
 * The RNN calls also write, on LMX_CU_DNN_SKIP, why into `why` (the workspace or reserve
 * does not fit, NOT_SUPPORTED, a descriptor cuDNN refuses).
 * Returns 0; LMX_CU_DNN_SKIP when cuDNN is not usable (built without it, LUAMX_CUDNN=0
 * in the environment, libcudnn.so.9 or a symbol missing, a descriptor or algorithm
 * cuDNN refuses, or NOT_SUPPORTED from the first call that writes) — nothing has been
 * written then and the caller runs its own kernels; LMX_CU_DNN_ESTATUS + the
 * cudnnStatus_t of any later failure; or a cudaError_t code of an own launch.
 * Thread safety: any thread; calls on one device are serialised by a per-device lock
 * (the device's cudnnHandle is shared and its stream set per call).
 */
#ifndef LMX_KERNELS_CU_DNN_H
#define LMX_KERNELS_CU_DNN_H

#include <stddef.h>

#include "cu_base.h"
#include "cudnn_args.h"
#include "cudnn_rnn_args.h"

LMX_CU_BEGIN

enum { LMX_CU_DNN_SKIP = -4, LMX_CU_DNN_ESTATUS = 20000 };

/* 1 when cuDNN is enabled and loaded (LUAMX_CUDNN is read, and the library and its
 * symbols resolved, once per process); 0 otherwise. */
int lmx_cu_dnn_ready(void);
/* Why lmx_cu_dnn_ready() is 0: "LUAMX_CUDNN=0 in the environment", or the loader's
 * message naming libcudnn.so.9 or the missing symbol; "" when cuDNN is ready. */
const char *lmx_cu_dnn_why_off(void);
/* Destroys every cached descriptor of every device (cudnn_cache.h); later calls make
 * them again. For teardown and tests; no call may run on another thread meanwhile. */
void lmx_cu_dnn_release(void);
/* cudnnGetErrorString of an LMX_CU_DNN_ESTATUS code ("" when cuDNN is not loaded). */
const char *lmx_cu_dnn_status_str(int rc);
/* CUDNN_BN_MIN_EPSILON of the headers this file was built with. */
double lmx_cu_dnn_bn_min_eps(void);

/* y[N, F, sp] (+)= conv(x[N, C, sp], w[F, C/G, k]) (+ b[F], when a->bias) */
int lmx_cu_dnn_conv_fwd(lmx_cu_stream s, const lmx_dnn_conv_args *a, const void *x,
                        const void *w, const void *b, void *y, int acc, void *ws,
                        size_t ws_bytes);
/* dx (+)= ∂/∂x, dw (+)= ∂/∂w, db (+)= Σ dy per filter (each when not NULL; acc[3]) */
int lmx_cu_dnn_conv_bwd(lmx_cu_stream s, const lmx_dnn_conv_args *a, const void *x,
                        const void *w, const void *dy, void *dx, void *dw, void *db,
                        const int *acc, void *ws, size_t ws_bytes);

/* y (+)= pool(x); dx (+)= pooling gradient from dy, x and the forward's y */
int lmx_cu_dnn_pool_fwd(lmx_cu_stream s, const lmx_dnn_pool_args *a, const void *x, void *y,
                        int acc);
int lmx_cu_dnn_pool_bwd(lmx_cu_stream s, const lmx_dnn_pool_args *a, const void *x,
                        const void *y, const void *dy, void *dx, int acc);

/* BatchNorm forward (a->call TRAINING or INFERENCE): y (+)= (x - mean)·invstd·gamma +
 * beta; mean / invstd [C] receive the statistics used (batch, or the moving ones);
 * training with a->fold_moving folds the batch statistics into mmean / mvar with the
 * momentum (biased variance). gamma .. mvar are float32 [C]. */
int lmx_cu_dnn_bn_fwd(lmx_cu_stream s, const lmx_dnn_bn_args *a, const void *x, void *y,
                      const void *gamma, const void *beta, void *mean, void *invstd,
                      void *mmean, void *mvar, void *ws);
/* BatchNorm backward from the forward's saved mean / invstd: dx (alpha/beta_data), and
 * dgamma / dbeta (alpha/beta_param; scratch or zeroed as a says). */
int lmx_cu_dnn_bn_bwd(lmx_cu_stream s, const lmx_dnn_bn_args *a, const void *x, const void *dy,
                      const void *gamma, const void *mean, const void *invstd, void *dx,
                      void *dgamma, void *dbeta, void *ws);

/* ---- the fused RNN (cudnn_rnn_args.h) -----------------------------------------------
 * The op's workspace (ws, ws_bytes) holds what lmx_dnn_rnn_fit plans; the op's reserve
 * output (reserve, reserve_bytes) holds cuDNN's reserve space followed by the last
 * layer's output y (T·N·D·H float32s, which cuDNN's backward reads): both are checked at
 * every call, in the same way forward and backward, so a configuration takes the same
 * path in both. */
typedef struct {
  const void *x, *w, *hx, *cx; /* cx: lstm only (else NULL) */
  void *y, *hy, *cy;           /* NULL: not wanted */
  void *reserve, *ws;
  size_t reserve_bytes, ws_bytes;
} lmx_cu_dnn_rnn_fwd_io;

typedef struct {
  const void *x, *w, *hx, *cx, *reserve;
  const void *dy, *dhy, *dcy; /* head gradients; dhy / dcy NULL: zeros */
  void *dx, *dw, *dhx, *dcx;  /* NULL: not wanted */
  int acc_dx, acc_dw, acc_dhx, acc_dcx; /* 1: add into the target (req 'add') */
  void *ws;
  size_t reserve_bytes, ws_bytes;
} lmx_cu_dnn_rnn_bwd_io;

/* y / hy / cy from x, h0, c0 and MXNet's packed parameters, through cudnnRNNForward in
 * training mode in every pass (the reserve is filled, so a backward may follow any
 * forward, as on the own path). */
int lmx_cu_dnn_rnn_fwd(lmx_cu_stream s, const lmx_dnn_rnn_args *a,
                       const lmx_cu_dnn_rnn_fwd_io *io, char *why, size_t why_len);
/* The gradients from the reserve a training forward left (cudnnRNNBackwardData_v8, then
 * cudnnRNNBackwardWeights_v8 when dw is wanted). */
int lmx_cu_dnn_rnn_bwd(lmx_cu_stream s, const lmx_dnn_rnn_args *a,
                       const lmx_cu_dnn_rnn_bwd_io *io, char *why, size_t why_len);

LMX_CU_END

#endif
