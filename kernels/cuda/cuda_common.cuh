/* cuda_common.cuh — what every kernels/cuda/<family>.cu includes first: the CUDA headers (the
 * real ones under nvcc, the simulator's stand-ins in kernels/cuda/sim/include otherwise),
 * the one launch macro, dynamic shared memory, and the launch status.
 *
 * The same .cu source is compiled two ways (docs/cuda-simulator.md):
 *  - by nvcc for the GPU (`__CUDACC__` defined): LMX_LAUNCH is `<<<...>>>`;
 *  - as host C++17 in the -DLUAMX_CUDA=SIM build: LMX_LAUNCH hands a closure over the
 *    kernel call to the simulator, which runs every thread of every block as a fiber that
 *    interleaves with the others at __syncthreads and at warp operations.
 * Kernels therefore use only what the simulator models: the builtins, __shared__ arrays,
 * LMX_DYN_SHARED, barriers, warp shuffles and votes, atomics, the float math functions
 * and __half conversions (kernels/cuda/sim/include/cuda_runtime.h lists them).
 *
 *   LMX_LAUNCH(kernel, grid, block, shmem_bytes, stream, args...);
 *   return lmx_cu_last_error();   // 0, or the cudaError_t of the launch
 *
 * The kernel name must be a plain identifier (no template argument list: a comma would
 * split the macro arguments); wrap a template instance in a named __global__ function.
 */
#ifndef LMX_KERNELS_CUDA_COMMON_CUH
#define LMX_KERNELS_CUDA_COMMON_CUH

#include <cuda_fp16.h>
#include <cuda_runtime.h>

/* launchers take the stream as this type (cudaStream_t is the same type in both builds) */
typedef struct CUstream_st *lmx_cu_stream;

#ifdef __CUDACC__
#define LMX_LAUNCH(kernel, grid, block, shmem, stream, ...) \
  kernel<<<(grid), (block), (shmem), (stream)>>>(__VA_ARGS__)
/* one byte array per kernel, typed by the caller (16-byte aligned as every use needs) */
#define LMX_DYN_SHARED(T, name)                         \
  extern __shared__ __align__(16) unsigned char lmx_dyn_smem_[]; \
  T *name = reinterpret_cast<T *>(lmx_dyn_smem_)
#else
#define LMX_LAUNCH(kernel, grid, block, shmem, stream, ...)                           \
  ::lmx_sim::launch(#kernel, dim3(grid), dim3(block), (size_t)(shmem), (stream), \
                    [=]() { kernel(__VA_ARGS__); })
#define LMX_DYN_SHARED(T, name) T *name = reinterpret_cast<T *>(::lmx_sim::dyn_shared())
#endif

/* The status of the last launch on this host thread (clears it, as cudaGetLastError). */
static inline int lmx_cu_last_error(void) { return (int)cudaGetLastError(); }

#endif
