// cuda_sim_kernels.cuh — the CUDA simulator's test kernels and their launchers, written
// once for both compilers: tests/test_cuda_sim.cu runs them on the simulator (the
// -DLUAMX_CUDA=SIM build) and tests/cuda_nvcc_check.cu compiles them with nvcc in the real
// CUDA build, proving that what the simulator accepts is CUDA (sm_80/sm_90) as well.
// Every launcher returns lmx_cu_last_error() as the project's kernels do.
#ifndef LMX_TESTS_CUDA_SIM_KERNELS_CUH
#define LMX_TESTS_CUDA_SIM_KERNELS_CUH

#include "../kernels/cuda/cuda_common.cuh"

// Tree sum of 256 values per block in shared memory; `racy` leaves out the barrier
// between levels.
__global__ void tree_sum(const float *x, float *out, int racy) {
  __shared__ float s[256];
  unsigned t = threadIdx.x;
  s[t] = x[blockIdx.x * 256 + t];
  __syncthreads();
  for (unsigned h = 128; h > 0; h >>= 1) {
    if (t < h) s[t] += s[t + h];
    if (!racy) __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

// out[i] = in[i] + in[i-1]: each thread stores its value, then reads its left neighbour's;
// `racy` leaves out the barrier between the store and the read.
__global__ void left_neighbour(const int *in, int *out, int n, int racy) {
  __shared__ int s[128];
  unsigned t = threadIdx.x;
  s[t] = in[t];
  if (!racy) __syncthreads();
  if ((int)t < n) out[t] = s[t] + (t ? s[t - 1] : 0);
}

// out[i] = in[i] - in[i+1] (last: in[i]): the read-ahead twin of left_neighbour.
__global__ void right_neighbour(const int *in, int *out, int n, int racy) {
  __shared__ int s[128];
  unsigned t = threadIdx.x;
  s[t] = in[t];
  if (!racy) __syncthreads();
  if ((int)t < n) out[t] = s[t] - ((int)t + 1 < n ? s[t + 1] : 0);
}

// Per warp of the block: shfl_down and shfl_xor sums, shfl_up by 1, shfl from lane 7,
// ballot/any/all; the double shuffle sums in double.
__global__ void warp_ops(const float *x, float *down, float *xr, float *up, unsigned *ballot,
                         int *any, int *all, float *idx, double *dsum) {
  unsigned t = threadIdx.x, w = t / 32;
  float v = x[t], d = v, r = v;
  double dd = (double)v;
  for (int o = 16; o > 0; o >>= 1) d += __shfl_down_sync(0xffffffffu, d, o);
  for (int o = 16; o > 0; o >>= 1) r += __shfl_xor_sync(0xffffffffu, r, o);
  for (int o = 1; o < 32; o <<= 1) dd += __shfl_xor_sync(0xffffffffu, dd, o);
  float u = __shfl_up_sync(0xffffffffu, v, 1);
  unsigned b = __ballot_sync(0xffffffffu, v > 0.f);
  int a = __any_sync(0xffffffffu, v > 100.f), al = __all_sync(0xffffffffu, v > -100.f);
  float i7 = __shfl_sync(0xffffffffu, v, 7);
  if (t % 32 == 0) {
    down[w] = d;
    ballot[w] = b;
    any[w] = a;
    all[w] = al;
    dsum[w] = dd;
  }
  xr[t] = r;
  up[t] = u;
  idx[t] = i7;
}

// Shuffles over part of a warp: lanes 0..15 sum their 16 values with a 0x0000ffff mask
// while lanes 16..31 go straight on to the block barrier; segments of width 8 shuffle
// within themselves. Then one thread reads the sums after the barrier.
__global__ void partial_warp(const int *x, int *half_sum, int *seg_sum) {
  unsigned t = threadIdx.x;
  int v = x[t];
  if (t < 16) {
    for (int o = 8; o > 0; o >>= 1) v += __shfl_down_sync(0x0000ffffu, v, o, 16);
    if (t == 0) *half_sum = v;
  }
  __syncthreads();
  int s = x[t];
  for (int o = 4; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o, 8);
  seg_sum[t] = s;
}

// Lanes >= k exit at once; the others see them gone in __activemask and vote among
// themselves.
__global__ void early_exit(int k, unsigned *active, unsigned *ballot) {
  unsigned t = threadIdx.x;
  if ((int)t >= k) return;
  unsigned m = __activemask();
  unsigned b = __ballot_sync(m, t % 2 == 0);
  if (t == 0) {
    *active = m;
    *ballot = b;
  }
}

__global__ void atomics(float *f, int *i, unsigned *mx, double *d, int *mn, unsigned long long *u,
                        int *cas_winner, float *exch) {
  unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(f, 0.5f);
  atomicAdd(i, 1);
  atomicMax(mx, g);
  atomicAdd(d, 0.25);
  atomicMin(mn, 1000 - (int)g);
  atomicAdd(u, 3ull);
  atomicCAS(cas_winner, -1, (int)g);  // exactly one thread wins
  atomicExch(exch, (float)g);
}

// reverse n floats within a block through dynamic shared memory
__global__ void dyn_reverse(const float *x, float *y, int n) {
  LMX_DYN_SHARED(float, s);
  unsigned t = threadIdx.x;
  s[t] = x[t];
  __syncthreads();
  if ((int)t < n) y[t] = s[n - 1 - t];
}

// half of a warp waits at the block barrier, the other half at a shuffle: neither can
// complete (threads that have exited count as arrived, as on Volta and later GPUs, so a
// barrier that only exited threads miss is not a deadlock)
__global__ void divergent_barrier(int *out) {
  int v = (int)threadIdx.x;
  if (threadIdx.x < 16)
    __syncthreads();
  else
    v = __shfl_down_sync(0xffffffffu, v, 1);
  out[threadIdx.x] = v;
}

// only block 1 deadlocks (as divergent_barrier): the failure names that block
__global__ void deadlock_block1(int *out) {
  int v = (int)threadIdx.x;
  if (blockIdx.x == 1 && threadIdx.x >= 8)
    __syncthreads();
  else
    v = __shfl_xor_sync(0xffffffffu, v, 1);
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

__global__ void grid3d(int *out, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y,
      z = blockIdx.z * blockDim.z + threadIdx.z;
  out[(z * h + y) * w + x] = z * 1000000 + y * 1000 + x + (int)(gridDim.z * 0);
}

// the device math functions and __half conversions the simulator supplies
__global__ void math_fns(const float *x, float *y, unsigned short *h, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = __ldg(x + i);
  y[i * 8 + 0] = __expf(v);
  y[i * 8 + 1] = __logf(fabsf(v) + 1.f);
  y[i * 8 + 2] = __fdividef(v, 3.f);
  y[i * 8 + 3] = rsqrtf(fabsf(v) + 1.f);
  y[i * 8 + 4] = __saturatef(v);
  y[i * 8 + 5] = __int_as_float(__float_as_int(v)) + __uint_as_float(__float_as_uint(v));
  y[i * 8 + 6] = fminf(v, 0.5f) + fmaxf(v, -0.5f);
  y[i * 8 + 7] = __half2float(__float2half(v));
  __half hv = __float2half_rn(v);
  h[i] = __half_as_ushort(hv);
}

// a loop of n barriers, for the cost per barrier
__global__ void barrier_loop(int *out, int n) {
  __shared__ int s[1024];
  unsigned t = threadIdx.x;
  s[t] = (int)t;
  for (int k = 0; k < n; k++) {
    __syncthreads();
    s[t] += 1;
  }
  out[blockIdx.x * blockDim.x + t] = s[t];
}

// one store per thread, no barrier: the cost per simulated thread
__global__ void plain_store(float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = (float)i * 2.f;
}

static inline int launch_tree_sum(cudaStream_t s, int blocks, const float *x, float *out, int racy) {
  LMX_LAUNCH(tree_sum, blocks, 256, 0, s, x, out, racy);
  return lmx_cu_last_error();
}
static inline int launch_left_neighbour(cudaStream_t s, const int *in, int *out, int n, int racy) {
  LMX_LAUNCH(left_neighbour, 1, 128, 0, s, in, out, n, racy);
  return lmx_cu_last_error();
}
static inline int launch_right_neighbour(cudaStream_t s, const int *in, int *out, int n, int racy) {
  LMX_LAUNCH(right_neighbour, 1, 128, 0, s, in, out, n, racy);
  return lmx_cu_last_error();
}
static inline int launch_warp_ops(cudaStream_t s, int threads, const float *x, float *down,
                                  float *xr, float *up, unsigned *ballot, int *any, int *all,
                                  float *idx, double *dsum) {
  LMX_LAUNCH(warp_ops, 1, threads, 0, s, x, down, xr, up, ballot, any, all, idx, dsum);
  return lmx_cu_last_error();
}
static inline int launch_partial_warp(cudaStream_t s, const int *x, int *half_sum, int *seg_sum) {
  LMX_LAUNCH(partial_warp, 1, 64, 0, s, x, half_sum, seg_sum);
  return lmx_cu_last_error();
}
static inline int launch_early_exit(cudaStream_t s, int k, unsigned *active, unsigned *ballot) {
  LMX_LAUNCH(early_exit, 1, 32, 0, s, k, active, ballot);
  return lmx_cu_last_error();
}
static inline int launch_atomics(cudaStream_t s, int blocks, int threads, float *f, int *i,
                                 unsigned *mx, double *d, int *mn, unsigned long long *u,
                                 int *cas_winner, float *exch) {
  LMX_LAUNCH(atomics, blocks, threads, 0, s, f, i, mx, d, mn, u, cas_winner, exch);
  return lmx_cu_last_error();
}
static inline int launch_dyn_reverse(cudaStream_t s, int threads, size_t shmem, const float *x,
                                     float *y, int n) {
  LMX_LAUNCH(dyn_reverse, 1, threads, shmem, s, x, y, n);
  return lmx_cu_last_error();
}
static inline int launch_divergent_barrier(cudaStream_t s, dim3 grid, dim3 block, int *out) {
  LMX_LAUNCH(divergent_barrier, grid, block, 0, s, out);
  return lmx_cu_last_error();
}
static inline int launch_deadlock_block1(cudaStream_t s, int *out) {
  LMX_LAUNCH(deadlock_block1, 3, 32, 0, s, out);
  return lmx_cu_last_error();
}
static inline int launch_grid3d(cudaStream_t s, dim3 grid, dim3 block, int *out, int w, int h) {
  LMX_LAUNCH(grid3d, grid, block, 0, s, out, w, h);
  return lmx_cu_last_error();
}
static inline int launch_math_fns(cudaStream_t s, const float *x, float *y, unsigned short *h,
                                  int n) {
  LMX_LAUNCH(math_fns, (n + 63) / 64, 64, 0, s, x, y, h, n);
  return lmx_cu_last_error();
}
static inline int launch_barrier_loop(cudaStream_t s, int blocks, int threads, int *out, int n) {
  LMX_LAUNCH(barrier_loop, blocks, threads, 0, s, out, n);
  return lmx_cu_last_error();
}
static inline int launch_plain_store(cudaStream_t s, float *y, int n) {
  LMX_LAUNCH(plain_store, (n + 255) / 256, 256, 0, s, y, n);
  return lmx_cu_last_error();
}

#endif
