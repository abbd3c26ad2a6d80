/* cu_elementwise.h — CUDA launchers for unary math, scalar ops, equal-shape binary ops
 * (forward and backward), scaling / copy-add / sum of n arrays, and the arithmetic
 * scalar op of the array layer. Mirrors kernels/cpu/cpu_kernels.h (elementwise.c,
 * binary.c's lmx_cpu_scalar) with the same op codes, argument order and meaning, and a
 * stream first. Every pointer is device memory; n elements each unless said otherwise;
 * the destination may alias an input (in place); acc = 1 adds into it (req ADD).
 * Return 0, a cudaError_t code from the launch, or -1 for an unsupported dtype / op.
 * dtypes: float32, float64, float16 (float math) unless said otherwise. */
#ifndef LMX_KERNELS_CU_ELEMENTWISE_H
#define LMX_KERNELS_CU_ELEMENTWISE_H

#include "cu_base.h"

LMX_CU_BEGIN

/* y[n] (+)= f(x[n]), op = LMX_UN_* */
int lmx_cu_unary(lmx_cu_stream s, int op, int dt, int64_t n, void *y, const void *x, int acc);
/* gx[n] (+)= g[n] * f'(x[n], y[n]); x or y may be NULL when the op's gradient does not
 * read it (as lmx_cpu_unary_bwd) */
int lmx_cu_unary_bwd(lmx_cu_stream s, int op, int dt, int64_t n, void *gx, const void *g,
                     const void *x, const void *y, int acc);
/* y[n] (+)= x[n] op sc, op = LMX_SC_* */
int lmx_cu_scalar_op(lmx_cu_stream s, int op, int dt, int64_t n, void *y, const void *x,
                     double sc, int acc);
/* gx[n] (+)= g[n] * d(x op sc)/dx from x[n] / y[n] (may be NULL when unused) */
int lmx_cu_scalar_bwd(lmx_cu_stream s, int op, int dt, int64_t n, void *gx, const void *g,
                      const void *x, const void *y, double sc, int acc);
/* out[n] (+)= a[n] op b[n], op = LMX_BIN_* */
int lmx_cu_ew_binary(lmx_cu_stream s, int op, int dt, int64_t n, void *out, const void *a,
                     const void *b, int acc);
/* gout[n] (+)= the gradient of side 0 (a) or 1 (b) from g[n], a[n], b[n] */
int lmx_cu_ew_binary_bwd(lmx_cu_stream s, int op, int side, int dt, int64_t n, void *gout,
                         const void *g, const void *a, const void *b, int acc);
/* out[n] (+)= alpha * x[n]. Any of the 7 dtypes for a plain copy (alpha 1, acc 0); with
 * alpha 1, acc 1 it is copy-add (y += x). */
int lmx_cu_scale(lmx_cu_stream s, int dt, int64_t n, void *out, const void *x, double alpha,
                 int acc);
/* dst[n] (+)= Σ_k srcs[k][n] for k < nsrc, added in order k = 0, 1, ... (the CPU's
 * add_n order). srcs is a HOST array of nsrc device pointers; dst may alias one. */
int lmx_cu_sum_n(lmx_cu_stream s, int dt, int64_t n, void *dst, const void *const *srcs,
                 int nsrc, int acc);
/* gx[n] (+)= lo <= x[n] <= hi ? g[n] : 0 (compared in double, as the CPU glue does);
 * clip's forward is lmx_cu_scalar_op MAX lo then MIN hi */
int lmx_cu_clip_bwd(lmx_cu_stream s, int dt, int64_t n, void *gx, const void *g, const void *x,
                    double lo, double hi, int acc);
/* out[n] = a[n] op sc, or sc op a[n] when reverse; op = LMX_BIN_*; all 7 dtypes (integers
 * compute in double and store as lmx_store_f64 does) — lmx_cpu_scalar */
int lmx_cu_scalar(lmx_cu_stream s, int op, int dt, int64_t n, void *out, const void *a,
                  double sc, int reverse);

LMX_CU_END

#endif
