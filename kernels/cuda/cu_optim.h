/* cu_optim.h — CUDA launchers of the fused optimizer updates (kernels/cpu/optim.c; the
 * rules, lmx_cpu_upd and LMX_UPD_* come from kernels/cpu/cpu_kernels.h). Device pointers;
 * stream first; return 0, a cudaError_t code, or -1 for a bad dtype / rule. */
#ifndef LMX_KERNELS_CU_OPTIM_H
#define LMX_KERNELS_CU_OPTIM_H

#include "../cpu/cpu_kernels.h"
#include "cu_base.h"

LMX_CU_BEGIN

/* out[n] (+)= updated w[n] from grad[n]; states s0[n] / s1[n] (NULL when the rule has
 * none) updated in place; out may alias w. float32/float64, and float16 (float math,
 * states float16 like the weight). u is host memory. */
int lmx_cu_update(lmx_cu_stream s, int dt, const lmx_cpu_upd *u, int64_t n, void *out,
                  const void *w, const void *grad, void *s0, void *s1, int acc);

/* multi_precision (MXNet's mp_sgd_update, mp_sgd_mom_update, mp_nag_mom_update, and the
 * same for the other rules): the rule runs in float32 on the master weights w32[n]
 * (updated in place) with float32 states s0/s1, the gradient read from float16
 * grad[n]; out[n] (float16, normally the float16 weight) (+)= the new master weight
 * rounded to nearest even. */
int lmx_cu_update_mp(lmx_cu_stream s, const lmx_cpu_upd *u, int64_t n, void *out16,
                     const void *grad16, void *s0, void *s1, void *w32, int acc);

LMX_CU_END

#endif
