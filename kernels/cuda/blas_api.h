/* blas_api.h — private to kernels/cuda: the one place a derived column-major GEMM call
 * (cu_gemm.h) meets a BLAS library. The real build gets cuBLAS from the device runtime's
 * loader (src/device/cuda_libs, LMX_LIB_CUBLAS) and keeps one handle per device
 * (lmx_cuda_lib_handle); the simulator build calls OpenBLAS (blas_api.cu). */
#ifndef LMX_KERNELS_CUDA_BLAS_API_H
#define LMX_KERNELS_CUDA_BLAS_API_H

#include "cu_gemm.h"

LMX_CU_BEGIN
/* Runs c (already derived and checked, c->nop == 0) on stream s: 0, LMX_CU_GEMM_ELIB,
 * LMX_CU_GEMM_EBLAS + status, or a cudaError_t code. */
int lmx_cu_blas_run(lmx_cu_stream s, const lmx_cu_gemm_call *c);
LMX_CU_END

#endif
