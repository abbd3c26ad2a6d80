/* cu_loss_more.h — CUDA launchers of softmax_cross_entropy, SVMOutput and
 * IdentityAttachKLSparseReg (issue 14's losses,
 * kernels/cuda/loss_more.cu), mirroring kernels/cpu/loss_more.c with the stream first.
 * Every pointer is device memory. dtypes: float32, float64 and float16 (rows accumulate
 * in double); another returns -1. Launch failures return the cudaError_t. Nothing
 * synchronises: a label outside [0, k) cannot fail the call, so it makes that row's loss
 * and gradient NaN (the CPU glue refuses such a label before computing anything).
 */
#ifndef LMX_KERNELS_CU_LOSS_MORE_H
#define LMX_KERNELS_CU_LOSS_MORE_H

#include "cu_base.h"

LMX_CU_BEGIN

/* loss[0] (+)= Σ_i logsumexp(x[i,:]) - x[i,label[i]] over n rows of k: one block, one
 * thread per row, then a fixed-order block sum (deterministic). */
int lmx_cu_sce_fwd(lmx_cu_stream s, int dt, int64_t n, int64_t k, void *loss, const void *x,
                   const void *label, int acc);
/* gx[i,j] (+)= (softmax(x[i])[j] - (j == label[i])) * g[0]; g is the device head gradient
 * (one element); one thread per row */
int lmx_cu_sce_bwd(lmx_cu_stream s, int dt, int64_t n, int64_t k, void *gx, const void *x,
                   const void *label, const void *g, int acc);

/* SVMOutput: gx[i,j] (+)= MXNet's L2-SVM (L1 when linear) gradient of y[i,j] for class
 * label[i] (truncated; outside [0, k): no class), as lmx_cpu_svm_grad */
int lmx_cu_svm_grad(lmx_cu_stream s, int dt, int64_t n, int64_t k, void *gx, const void *y,
                    const void *label, double margin, double reg, int linear, int acc);

/* IdentityAttachKLSparseReg's backward over x (n, k), as lmx_cpu_klreg_bwd: avg (device,
 * k) moves to momentum * avg + (1 - momentum) * column means, then gx (+)= g + penalty *
 * (-target / avg + (1 - target) / (1 - avg)); gx may alias g */
int lmx_cu_klreg_bwd(lmx_cu_stream s, int dt, int64_t n, int64_t k, void *gx, const void *g,
                     const void *x, void *avg, double target, double penalty, double momentum,
                     int acc);

LMX_CU_END

#endif
