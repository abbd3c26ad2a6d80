/* dnn.h — private to the CUDA glue: the cuDNN branch of Convolution, Pooling and
 * BatchNorm (dnn.c) and of the fused RNN (dnn_rnn.c). cuDNN runs only in real CUDA
 * builds with cudnn.h (LUAMX_HAVE_CUDNN); elsewhere (the simulator, builds without the header) every call answers LMX_CUDNN_OWN.
 * Each returns LMX_OK (done through cuDNN), LMX_CUDNN_OWN (nothing written: run the own
 * kernels) or an error status naming the op, the node, the call and the device, and
 * writes the executor step's note (lmx_op_ctx.note, shown by debug_str): "cuDNN", or
 * "own kernels (<why>)" — cudnn_off, cuDNN not in this build, LUAMX_CUDNN=0, the library
 * missing, the reason lmx_dnn_*_derive refused the configuration, or cuDNN's
 * NOT_SUPPORTED. They take the caller's already-checked plan and tensors. */
#ifndef LMX_OPS_CUDA_DNN_H
#define LMX_OPS_CUDA_DNN_H

#include "../../../kernels/cuda/cudnn_args.h"
#include "../../../kernels/cuda/cudnn_rnn_args.h"
#include "../nn_plan.h"
#include "nn_util.h"

enum { LMX_CUDNN_OWN = -1 };

/* Writes the step's note (printf format; nothing outside executors); returns
 * LMX_CUDNN_OWN. */
int lmx_cudnn_note(const lmx_op_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* LMX_CUDNN_OWN, with the note, where cuDNN cannot run at all (cudnn_off, not in this
 * build, LUAMX_CUDNN=0, no library); LMX_OK otherwise. */
int lmx_cudnn_unavailable(const lmx_op_ctx *c, int cudnn_off);

/* The fused RNN (dnn_rnn.c): r from the glue's checks, nv the visible outputs (the
 * reserve is out[nv]). The gradients with req 'write' must be zeroed by the caller only
 * on the own path: these write or add as req says. */
int lmx_cudnn_rnn_fwd(const lmx_op_ctx *c, const lmx_cpu_rnn *r, const lmx_tensor *in,
                      const lmx_tensor *out, const int *req, int nv);
int lmx_cudnn_rnn_bwd(const lmx_op_ctx *c, const lmx_cpu_rnn *r, const lmx_tensor *og,
                      const lmx_tensor *in, const lmx_tensor *out, const lmx_tensor *ig,
                      const int *req, int nv);
/* Bytes the cuDNN RNN path adds to the op's planned workspace (0 without cuDNN). */
size_t lmx_cudnn_rnn_ws(const lmx_cpu_rnn *r);

/* Convolution: y (+)= conv(x, w) + b; gradients where req. Deconvolution (d->deconv) is
 * refused, with its note. */
int lmx_cudnn_conv_fwd(const lmx_op_ctx *c, const lmx_conv_dims *d, const lmx_tensor *in,
                       const lmx_tensor *out, int acc);
int lmx_cudnn_conv_bwd(const lmx_op_ctx *c, const lmx_conv_dims *d, const lmx_tensor *og,
                       const lmx_tensor *in, const lmx_tensor *ig, const int *req);
/* Pooling on the plan's normalized geometry g (type LMX_POOL_*, incl count_include_pad) */
int lmx_cudnn_pool_fwd(const lmx_op_ctx *c, const lmx_cpu_geom *g, int type, int incl,
                       const lmx_tensor *x, const lmx_tensor *y, int acc);
int lmx_cudnn_pool_bwd(const lmx_op_ctx *c, const lmx_cpu_geom *g, int type, int incl,
                       const lmx_tensor *x, const lmx_tensor *y, const lmx_tensor *dy,
                       const lmx_tensor *dx, int acc);
/* BatchNorm with norm.c's setup b (the op's arrays as its glue passes them) */
int lmx_cudnn_bn_fwd(const lmx_op_ctx *c, const lmx_cpu_bn *b, const lmx_tensor *in,
                     const lmx_tensor *out, const int *req, const lmx_tensor *aux);
int lmx_cudnn_bn_bwd(const lmx_op_ctx *c, const lmx_cpu_bn *b, const lmx_tensor *og,
                     const lmx_tensor *in, const lmx_tensor *out, const lmx_tensor *ig,
                     const int *req);

#endif
