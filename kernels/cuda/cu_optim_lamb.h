/* cu_optim_lamb.h — CUDA launchers of LAMB's two phases (issue 17; kernels/cpu/optim_lamb.c
 * has the rules, lmx_cpu_lamb1 / lmx_cpu_lamb2 come from kernels/cpu/cpu_kernels.h).
 * Device pointers; stream first; return 0, a cudaError_t code, or -1 for a bad dtype. */
#ifndef LMX_KERNELS_CU_OPTIM_LAMB_H
#define LMX_KERNELS_CU_OPTIM_LAMB_H

#include "../cpu/cpu_kernels.h"
#include "cu_base.h"

LMX_CU_BEGIN

/* Phase one: g[n] (+)= the direction, mean[n] / var[n] in place; float32/float64/float16
 * (float16 in float math, every array float16). u is host memory. */
int lmx_cu_lamb_phase1(lmx_cu_stream s, int dt, const lmx_cpu_lamb1 *u, int64_t n, void *g,
                       const void *w, const void *grad, void *mean, void *var, int acc);
/* Phase two: out[n] (+)= w[n] - rate*g[n], the rate from the one-element r1, r2 (device
 * memory, dtype dt); out may alias w. */
int lmx_cu_lamb_phase2(lmx_cu_stream s, int dt, const lmx_cpu_lamb2 *u, int64_t n, void *out,
                       const void *w, const void *g, const void *r1, const void *r2, int acc);
/* Multi-precision phase one: float16 grad16, float32 w32 (read for wd), mean, var, g. */
int lmx_cu_lamb_phase1_mp(lmx_cu_stream s, const lmx_cpu_lamb1 *u, int64_t n, void *g,
                          const void *w32, const void *grad16, void *mean, void *var, int acc);
/* Multi-precision phase two: w32[n] -= rate*g[n] in place (float32 g, r1, r2), then the
 * float16 out16[n] (+)= w32 rounded to nearest even. */
int lmx_cu_lamb_phase2_mp(lmx_cu_stream s, const lmx_cpu_lamb2 *u, int64_t n, void *out16,
                          void *w32, const void *g, const void *r1, const void *r2, int acc);

LMX_CU_END

#endif
