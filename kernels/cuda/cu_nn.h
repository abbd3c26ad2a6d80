/* cu_nn.h — CUDA launchers of the softmax family, the loss-output gradients and the
 * LeakyReLU family (kernels/cuda/nn.cu), mirroring the nn.c part of
 * kernels/cpu/cpu_kernels.h: same arguments, meaning and op codes (LMX_LEAKY_*), the
 * stream first. Every pointer is device memory. dtypes: float32, float64 and float16
 * (float arithmetic); another returns -1. Launch failures return the cudaError_t.
 * Nothing here synchronises or allocates: the normalisations that depend on data
 * (SoftmaxOutput's and MakeLoss's 'valid') count on the device into a float in the
 * caller's workspace (lmx_cu_count), which the next kernel divides by.
 */
#ifndef LMX_KERNELS_CU_NN_H
#define LMX_KERNELS_CU_NN_H

#include "cu_base.h"

LMX_CU_BEGIN

/* y[outer,len,inner] (+)= softmax (log_softmax when logm) of x/temperature along len.
 * inner == 1: one block per row (block max and sum through warp shuffles and shared
 * memory, any row length); otherwise one thread per (outer, inner) column. */
int lmx_cu_softmax(lmx_cu_stream s, int dt, int64_t outer, int64_t len, int64_t inner, void *y,
                   const void *x, double temperature, int logm, int acc);
/* gx (+)= the gradient from g and the forward output y (same layout as y) */
int lmx_cu_softmax_bwd(lmx_cu_stream s, int dt, int64_t outer, int64_t len, int64_t inner,
                       void *gx, const void *g, const void *y, double temperature, int logm,
                       int acc);
/* the same over the first lens[r] positions of row r = o*inner + i (lens int32, int64
 * when l64); later positions get 0. A length outside [0, len] is clamped into it and
 * reported to bad.word when not NULL (position r, the length; see lmx_cu_raise_word). */
int lmx_cu_softmax_len(lmx_cu_stream s, int dt, int64_t outer, int64_t len, int64_t inner,
                       void *y, const void *x, const void *lens, int l64, double temperature,
                       int logm, int acc, lmx_cu_raise bad);
int lmx_cu_softmax_len_bwd(lmx_cu_stream s, int dt, int64_t outer, int64_t len, int64_t inner,
                           void *gx, const void *g, const void *y, const void *lens, int l64,
                           double temperature, int logm, int acc, lmx_cu_raise bad);
/* *count (a device float) <- max(1, the number of x[n] with (int)x != (int)thr (mode 0,
 * SoftmaxOutput's valid labels) or x > thr (mode 1, MakeLoss)); one block, fixed order */
int lmx_cu_count(lmx_cu_stream s, int dt, int64_t n, const void *x, int mode, double thr,
                 float *count);
/* gx[outer,k,inner] (+)= (y - smoothed onehot(label[outer,inner])) * scale (* g when g is
 * not NULL) (/ *count when count is not NULL); rows labelled `ignore` get 0 when
 * use_ignore; labels outside [0, k) match no position (never an out-of-bounds write) */
int lmx_cu_softmax_output_grad(lmx_cu_stream s, int dt, int64_t outer, int64_t k,
                               int64_t inner, void *gx, const void *y, const void *label,
                               const void *g, double alpha, int use_ignore, double ignore,
                               double scale, const float *count, int acc);
/* gx[n] (+)= (y - label) * scale, or its sign * scale when mae */
int lmx_cu_regression_grad(lmx_cu_stream s, int dt, int64_t n, void *gx, const void *y,
                           const void *label, int mae, double scale, int acc);
/* y[n] (+)= v (/ *count when count is not NULL) — MakeLoss's gradient */
int lmx_cu_fill_div(lmx_cu_stream s, int dt, int64_t n, void *y, double v, const float *count,
                    int acc);
/* y[n] (+)= the LeakyReLU kind (LMX_LEAKY_*) of x[n] with slope */
int lmx_cu_leaky(lmx_cu_stream s, int kind, int dt, int64_t n, void *y, const void *x,
                 double slope, int acc);
/* gx[n] (+)= g[n] * its derivative at (x[n], y[n] = the forward output) */
int lmx_cu_leaky_bwd(lmx_cu_stream s, int kind, int dt, int64_t n, void *gx, const void *g,
                     const void *x, const void *y, double slope, int acc);
/* y[outer,C,inner] (+)= x > 0 ? x : gamma[c] x; gamma[ngamma], ngamma = C or 1 */
int lmx_cu_prelu(lmx_cu_stream s, int dt, int64_t outer, int64_t C, int64_t inner, void *y,
                 const void *x, const void *gamma, int64_t ngamma, int acc);
/* gx (may be NULL) and ggamma[ngamma] (may be NULL: one block per gamma element sums
 * g*x over x <= 0 in a fixed order) from g, x, gamma */
int lmx_cu_prelu_bwd(lmx_cu_stream s, int dt, int64_t outer, int64_t C, int64_t inner,
                     void *gx, void *ggamma, const void *g, const void *x, const void *gamma,
                     int64_t ngamma, int acc_x, int acc_g);
/* rrelu with a slope per element: y (+)= x > 0 ? x : slope x; gx (+)= y > 0 ? g : slope g */
int lmx_cu_rrelu(lmx_cu_stream s, int dt, int64_t n, void *y, const void *x, const void *slope,
                 int acc);
int lmx_cu_rrelu_bwd(lmx_cu_stream s, int dt, int64_t n, void *gx, const void *g, const void *y,
                     const void *slope, int acc);

LMX_CU_END

#endif
