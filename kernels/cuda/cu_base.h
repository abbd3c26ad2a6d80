/* cu_base.h — what every CUDA kernel family header shares: the stream type and the
 * extern "C" guards. Launchers take `lmx_cu_stream s` first; cudaStream_t is this type
 * under nvcc and in the simulator, so the C glue passes its stream without a cast. */
#ifndef LMX_KERNELS_CU_BASE_H
#define LMX_KERNELS_CU_BASE_H

#include <stdint.h>

typedef struct CUstream_st *lmx_cu_stream;

/* The per-device error word of kernels that check their inputs where the CPU raises
 * (take mode raise, softmax lengths): device memory owned by the device runtime
 * (src/device/cuda_state.c), cleared on creation and after each report. The first
 * launch that finds a bad value claims it (atomicCAS of tag from 0) and stores where
 * and what; the host reads it at the next synchronisation and names the operator from
 * the tag. */
typedef struct lmx_cu_raise_word {
  unsigned long long tag; /* 0: nothing found; else the claiming launch's tag */
  long long pos, value;   /* the element's flat position and its value */
} lmx_cu_raise_word;

/* What a checking launcher receives: the word (NULL: do not report, only clamp) and the
 * tag of this launch (lmx_cuda_raise_slot). Passed by value. */
typedef struct lmx_cu_raise {
  lmx_cu_raise_word *word;
  unsigned long long tag;
} lmx_cu_raise;

#ifdef __cplusplus
#define LMX_CU_BEGIN extern "C" {
#define LMX_CU_END }
#else
#define LMX_CU_BEGIN
#define LMX_CU_END
#endif

#endif
