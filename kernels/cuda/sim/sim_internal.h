/* sim_internal.h — what the simulator's execution model (sim_exec.cc) and its fake
 * runtime (sim_runtime.cc) share. Not seen by kernels or the engine. */
#ifndef LMX_SIM_INTERNAL_H
#define LMX_SIM_INTERNAL_H

#include "include/cuda_runtime_api.h"

namespace lmx_sim {

/* The device a stream belongs to (NULL: the calling thread's current device), or -1
 * when the stream is not a live one. */
int rt_stream_device(cudaStream_t s);
/* Sets the calling thread's last error (what cudaGetLastError returns next). */
void rt_set_last(cudaError_t e);
/* Records an asynchronous fault on device dev: returned by its next synchronisation. */
void rt_set_sticky(int dev, cudaError_t e);
/* A fault injected with lmx_sim_inject_fault for dev's next launch (cleared), or 0. */
int rt_take_injected(int dev);
/* Whether [p, p + bytes) lies inside one live cudaMalloc block; its device into *dev. */
bool rt_device_range(const void *p, size_t bytes, int *dev);

}  // namespace lmx_sim

#endif
