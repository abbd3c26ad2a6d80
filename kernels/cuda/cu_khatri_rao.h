/* cu_khatri_rao.h — CUDA launchers of khatri_rao (issue 14, kernels/cuda/khatri_rao.cu),
 * the arguments and meaning of kernels/cpu/khatri_rao.c's with the stream first; the
 * matrices' pointers in lmx_kr_args are device memory (the struct itself goes to the
 * kernel by value). float32, float64, float16 (double products); -1 for another dtype,
 * else 0 or the launch's cudaError_t. Deterministic: one thread per output element. */
#ifndef LMX_KERNELS_CU_KHATRI_RAO_H
#define LMX_KERNELS_CU_KHATRI_RAO_H

#include "../cpu/khatri_rao.h"
#include "cu_base.h"

LMX_CU_BEGIN

int lmx_cu_khatri_rao(lmx_cu_stream s, int dt, const lmx_kr_args *a, void *out, int acc);
int lmx_cu_khatri_rao_bwd(lmx_cu_stream s, int dt, const lmx_kr_args *a, int which,
                          const void *g, void *ga, int acc);

LMX_CU_END

#endif
