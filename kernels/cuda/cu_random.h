/* cu_random.h — CUDA launchers of counter-based random draws (Philox4x32-10, see
 * lmx_philox.h for the exact stream). Device pointers; stream first. (seed, offset)
 * select the stream: the glue takes seed from the engine's global seed (mx.random.seed)
 * and advances offset by lmx_philox_blocks(dt == float64, n) after each call. Return 0,
 * a cudaError_t code, or -1 for a dtype other than float32 / float64 / float16. */
#ifndef LMX_KERNELS_CU_RANDOM_H
#define LMX_KERNELS_CU_RANDOM_H

#include "cu_base.h"
#include "lmx_philox.h"

LMX_CU_BEGIN

/* p[n] <- lo + (hi - lo) U, U the uniform [0, 1) stream */
int lmx_cu_random_uniform(lmx_cu_stream s, int dt, int64_t n, void *p, double lo, double hi,
                          uint64_t seed, uint64_t offset);
/* p[n] <- mean + std Z, Z the standard normal stream */
int lmx_cu_random_normal(lmx_cu_stream s, int dt, int64_t n, void *p, double mean, double std,
                         uint64_t seed, uint64_t offset);
/* mask[n] <- U < prob ? 0 : 1 / (1 - prob) (lmx_cpu_dropout_mask's rule on the uniform
 * stream); prob in [0, 1) */
int lmx_cu_dropout_mask(lmx_cu_stream s, int dt, int64_t n, void *mask, double prob,
                        uint64_t seed, uint64_t offset);

LMX_CU_END

#endif
