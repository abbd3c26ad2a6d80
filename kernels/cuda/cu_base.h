/* cu_base.h — what every CUDA kernel family header shares: the stream type and the
 * extern "C" guards. Launchers take `lmx_cu_stream s` first; cudaStream_t is this type
 * under nvcc and in the simulator, so the C glue passes its stream without a cast. */
#ifndef LMX_KERNELS_CU_BASE_H
#define LMX_KERNELS_CU_BASE_H

#include <stdint.h>

typedef struct CUstream_st *lmx_cu_stream;

#ifdef __cplusplus
#define LMX_CU_BEGIN extern "C" {
#define LMX_CU_END }
#else
#define LMX_CU_BEGIN
#define LMX_CU_END
#endif

#endif
