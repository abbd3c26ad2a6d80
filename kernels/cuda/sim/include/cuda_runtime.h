/* cuda_runtime.h — the CUDA simulator's stand-in for kernel code (host C++17).
 *
 * Included (through kernels/cuda/cuda_common.cuh) by every kernels/cuda/<family>.cu when the
 * -DLUAMX_CUDA=SIM build compiles them as host C++. It supplies the execution model that
 * kernel code sees: the qualifiers (no-ops), dim3 and the builtins blockIdx/threadIdx/
 * blockDim/gridDim (macros reading the running simulated thread), __shared__ (storage
 * that all threads of a block see: blocks run one after another on the launching host
 * thread, so thread-local statics serve), __syncthreads and the warp operations (the
 * threads of a block are fibers that really stop there and wait for the others: see
 * kernels/cuda/sim/sim_exec.cc), atomics, and the device math functions.
 *
 * Not modelled: memory ordering beyond program order between barriers, timing, warp-
 * synchronous code without __syncwarp/_sync operations, cooperative groups, textures.
 */
#ifndef LMX_SIM_CUDA_RUNTIME_H
#define LMX_SIM_CUDA_RUNTIME_H

#include "cuda_runtime_api.h"

#ifdef __cplusplus
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <type_traits>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __shared__ static thread_local
#define __align__(n) alignas(n)

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
typedef dim3 uint3;

namespace lmx_sim {

/* The simulated thread that is running on this host thread. */
struct thread_state {
  dim3 tid;
  unsigned lane, warp, linear;
};
struct block_state {
  dim3 grid, block, bid;
  unsigned char *dyn_shared;
};
extern thread_local thread_state *cur;
extern thread_local block_state *cur_block;

/* Runs fn(arg) once per simulated thread of the grid (see sim_exec.cc). A bad
 * configuration sets cudaErrorInvalidConfiguration as the last error and runs nothing. */
void launch_impl(const char *name, dim3 grid, dim3 block, size_t shmem, cudaStream_t s,
                 void (*fn)(void *), void *arg);
template <class F>
static void trampoline(void *f) {
  (*static_cast<F *>(f))();
}
template <class F>
static void launch(const char *name, dim3 grid, dim3 block, size_t shmem, cudaStream_t s, F f) {
  launch_impl(name, grid, block, shmem, s, &trampoline<F>, &f);
}

unsigned char *dyn_shared();
void syncthreads();
void syncwarp(unsigned mask);
/* Warp exchange: every active lane of the warp offers 8 bytes; returns what lane `src`
 * (by the rule of `op`) offered. op: 0 idx, 1 up, 2 down, 3 xor. */
uint64_t shfl(uint64_t v, int op, int arg, int width);
/* Votes: 0 ballot, 1 any, 2 all. */
unsigned vote(int op, int pred);

template <class T>
static inline T shfl_t(T v, int op, int arg, int width) {
  static_assert(sizeof(T) <= 8, "shuffle of a type wider than 8 bytes");
  uint64_t b = 0;
  memcpy(&b, &v, sizeof(T));
  b = shfl(b, op, arg, width);
  T r;
  memcpy(&r, &b, sizeof(T));
  return r;
}

}  // namespace lmx_sim

#define threadIdx (::lmx_sim::cur->tid)
#define blockIdx (::lmx_sim::cur_block->bid)
#define blockDim (::lmx_sim::cur_block->block)
#define gridDim (::lmx_sim::cur_block->grid)
static const int warpSize = 32;

static inline void __syncthreads() { ::lmx_sim::syncthreads(); }
static inline void __syncwarp(unsigned mask = 0xffffffffu) { ::lmx_sim::syncwarp(mask); }
template <class T>
static inline T __shfl_sync(unsigned, T v, int src, int width = 32) {
  return ::lmx_sim::shfl_t(v, 0, src, width);
}
template <class T>
static inline T __shfl_up_sync(unsigned, T v, unsigned d, int width = 32) {
  return ::lmx_sim::shfl_t(v, 1, (int)d, width);
}
template <class T>
static inline T __shfl_down_sync(unsigned, T v, unsigned d, int width = 32) {
  return ::lmx_sim::shfl_t(v, 2, (int)d, width);
}
template <class T>
static inline T __shfl_xor_sync(unsigned, T v, int m, int width = 32) {
  return ::lmx_sim::shfl_t(v, 3, m, width);
}
static inline unsigned __ballot_sync(unsigned, int p) { return ::lmx_sim::vote(0, p); }
static inline int __any_sync(unsigned, int p) { return (int)::lmx_sim::vote(1, p); }
static inline int __all_sync(unsigned, int p) { return (int)::lmx_sim::vote(2, p); }
static inline unsigned __activemask() { return ::lmx_sim::vote(0, 1); }

/* Atomics: the simulated threads of a launch run on one host thread and switch only at
 * barriers and warp operations, so a read-modify-write is indivisible; the __atomic
 * builtins keep that true should blocks ever run on several host threads. */
template <class T>
static inline T lmx_sim_atomic_add(T *p, T v) {
  if constexpr (std::is_integral<T>::value) {
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
  } else {
    T old, nv;
    __atomic_load(p, &old, __ATOMIC_RELAXED);
    do {
      nv = old + v;
    } while (!__atomic_compare_exchange(p, &old, &nv, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return old;
  }
}
static inline int atomicAdd(int *p, int v) { return lmx_sim_atomic_add(p, v); }
static inline unsigned atomicAdd(unsigned *p, unsigned v) { return lmx_sim_atomic_add(p, v); }
static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) {
  return lmx_sim_atomic_add(p, v);
}
static inline float atomicAdd(float *p, float v) { return lmx_sim_atomic_add(p, v); }
static inline double atomicAdd(double *p, double v) { return lmx_sim_atomic_add(p, v); }
static inline int atomicSub(int *p, int v) { return lmx_sim_atomic_add(p, -v); }
template <class T>
static inline T lmx_sim_atomic_minmax(T *p, T v, bool max) {
  T old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while ((max ? v > old : v < old) &&
         !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}
static inline int atomicMax(int *p, int v) { return lmx_sim_atomic_minmax(p, v, true); }
static inline unsigned atomicMax(unsigned *p, unsigned v) { return lmx_sim_atomic_minmax(p, v, true); }
static inline int atomicMin(int *p, int v) { return lmx_sim_atomic_minmax(p, v, false); }
static inline unsigned atomicMin(unsigned *p, unsigned v) { return lmx_sim_atomic_minmax(p, v, false); }
template <class T>
static inline T lmx_sim_atomic_cas(T *p, T cmp, T v) {
  __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return cmp;
}
static inline int atomicCAS(int *p, int c, int v) { return lmx_sim_atomic_cas(p, c, v); }
static inline unsigned atomicCAS(unsigned *p, unsigned c, unsigned v) { return lmx_sim_atomic_cas(p, c, v); }
static inline unsigned long long atomicCAS(unsigned long long *p, unsigned long long c,
                                           unsigned long long v) {
  return lmx_sim_atomic_cas(p, c, v);
}
static inline int atomicExch(int *p, int v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); }
static inline unsigned atomicExch(unsigned *p, unsigned v) {
  return __atomic_exchange_n(p, v, __ATOMIC_RELAXED);
}
static inline float atomicExch(float *p, float v) {
  float old;
  __atomic_exchange(p, &v, &old, __ATOMIC_RELAXED);
  return old;
}

/* Device math that has no host name (glibc itself declares __expf, __logf, __sinf,
 * __cosf and __powf, the fast forms kernels use). */
static inline float __fdividef(float x, float y) { return x / y; }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float __saturatef(float x) { return x < 0.f ? 0.f : x > 1.f ? 1.f : x; }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned i; memcpy(&i, &f, 4); return i; }
static inline float __uint_as_float(unsigned i) { float f; memcpy(&f, &i, 4); return f; }
static inline long long __double_as_longlong(double d) { long long i; memcpy(&i, &d, 8); return i; }
static inline double __longlong_as_double(long long i) { double d; memcpy(&d, &i, 8); return d; }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
template <class T>
static inline T __ldg(const T *p) { return *p; }
static inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

#endif /* __cplusplus */

#endif
