/* cu_norm.h — CUDA launchers for BatchNorm and LayerNorm on x[outer, C, inner]
 * (kernels/cpu/norm.c), same arguments after the stream; device pointers; the CPU's
 * lmx_cpu_bn describes a BatchNorm call. dtypes: float32, float64, float16. For float16
 * BatchNorm data (x, y, g, gx) is float16 while gamma, beta, mean, invstd, the moving
 * statistics and their gradients are float32 (MXNet's mixed-precision layout); LayerNorm
 * keeps every array in the data dtype. Statistics are reduced in float (double for
 * float64) with a fixed tree per block, so results do not depend on timing.
 * Return 0, a cudaError_t code, or -1 for an unsupported dtype. */
#ifndef LMX_KERNELS_CU_NORM_H
#define LMX_KERNELS_CU_NORM_H

#include "cu_base.h"

LMX_CU_BEGIN
#include "../cpu/cpu_kernels.h" /* lmx_cpu_bn */

/* y (+)= (x - mean) * invstd * gamma + beta per channel (y NULL: statistics only);
 * mean/invstd[C] (may be NULL) receive the statistics used; mmean/mvar[C] the moving
 * ones (updated with momentum when b->update_moving). One block per channel. */
int lmx_cu_bn_fwd(lmx_cu_stream s, int dt, const lmx_cpu_bn *b, const void *x, void *y,
                  const void *gamma, const void *beta, void *mean, void *invstd, void *mmean,
                  void *mvar, int acc);
/* gx, ggamma[C], gbeta[C] (each may be NULL; acc[3] per gradient) from x, g, gamma, mean,
 * invstd of the forward pass. One block per channel. */
int lmx_cu_bn_bwd(lmx_cu_stream s, int dt, const lmx_cpu_bn *b, const void *x, const void *g,
                  const void *gamma, const void *mean, const void *invstd, void *gx,
                  void *ggamma, void *gbeta, const int *acc);
/* y (+)= (x - mean) / std * gamma[c] + beta[c] over C; mean/std[outer*inner] (may be
 * NULL). One block per (outer, inner) row. */
int lmx_cu_ln_fwd(lmx_cu_stream s, int dt, int64_t outer, int64_t C, int64_t inner, double eps,
                  const void *x, void *y, const void *gamma, const void *beta, void *mean,
                  void *std, int acc);
/* gx (one block per row), ggamma[C], gbeta[C] (one block per channel); each may be NULL;
 * acc[3] */
int lmx_cu_ln_bwd(lmx_cu_stream s, int dt, int64_t outer, int64_t C, int64_t inner,
                  const void *x, const void *g, const void *gamma, const void *mean,
                  const void *std, void *gx, void *ggamma, void *gbeta, const int *acc);
/* cuDNN BatchNorm's float32 helpers (kernels/cuda/cudnn_exec.cu), here so that the
 * simulator builds and tests them. mmean/mvar[C] <- lmx_dnn_bn_fold of each with the batch
 * mean bmean[C] and the biased form (lmx_dnn_bn_biased over count samples) of the unbiased
 * batch variance bvar[C], factor f. */
int lmx_cu_bn_fold_moving(lmx_cu_stream s, int64_t C, double f, int64_t count, const void *bmean,
                          const void *bvar, void *mmean, void *mvar);
/* mean[C] <- mmean, invstd[C] <- 1 / sqrt(mvar + eps): the inference outputs as
 * lmx_cu_bn_fwd writes them. */
int lmx_cu_bn_inf_stats(lmx_cu_stream s, int64_t C, double eps, const void *mmean,
                        const void *mvar, void *mean, void *invstd);

LMX_CU_END

#endif
