/* cu_la_tri.h — CUDA launchers of the diagonal / triangle copies and sumlogdiag (issue
 * 14, ops14g; kernels/cuda/la_tri.cu), the arguments and meaning of kernels/cpu/la_tri.c's
 * (cpu_kernels.h) with the stream first, device pointers. float32 and float64; -1 for
 * another dtype, else 0 or the launch's cudaError_t. One thread per matrix element (per
 * matrix for sumlogdiag's sum): no atomics, deterministic. */
#ifndef LMX_KERNELS_CU_LA_TRI_H
#define LMX_KERNELS_CU_LA_TRI_H

#include "../cpu/la_tri.h"
#include "cu_base.h"

LMX_CU_BEGIN

int lmx_cu_la_tri(lmx_cu_stream s, int dt, int64_t batch, const lmx_la_tri *t, void *P,
                  void *F, int make, int acc);
int lmx_cu_sumlogdiag(lmx_cu_stream s, int dt, int64_t batch, int64_t n, const void *A,
                      void *out, int acc);
int lmx_cu_sumlogdiag_bwd(lmx_cu_stream s, int dt, int64_t batch, int64_t n, const void *A,
                          const void *g, void *gA, int acc);

LMX_CU_END

#endif
