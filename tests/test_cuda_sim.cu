// test_cuda_sim.cu — the CUDA simulator itself (built and run in the -DLUAMX_CUDA=SIM
// build only): racy kernels must give wrong results, their corrected versions right ones
// under every thread order; warp shuffles and votes, atomics, dynamic shared memory,
// launch limits, barrier deadlocks, and the fake runtime's memory, copies, streams,
// events and asynchronous faults. Exit status 0 when every check passes.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/cuda/cuda_common.cuh"
#include "lmx_sim.h"

static int g_fail, g_checks;
#define CHECK(cond, ...)                                        \
  do {                                                          \
    g_checks++;                                                 \
    if (!(cond)) {                                              \
      g_fail++;                                                 \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);               \
      printf(__VA_ARGS__);                                      \
      printf("\n");                                             \
    }                                                           \
  } while (0)

// ---- kernels -------------------------------------------------------------------------

// Tree sum of 256 values in shared memory; `racy` leaves out the barrier between levels.
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

__global__ void warp_ops(const float *x, float *down, float *xr, float *up, unsigned *ballot,
                         int *any, int *all, float *idx) {
  unsigned t = threadIdx.x, w = t / 32;
  float v = x[t], d = v, r = v;
  for (int o = 16; o > 0; o >>= 1) d += __shfl_down_sync(0xffffffffu, d, o);
  for (int o = 16; o > 0; o >>= 1) r += __shfl_xor_sync(0xffffffffu, r, o);
  float u = __shfl_up_sync(0xffffffffu, v, 1);
  unsigned b = __ballot_sync(0xffffffffu, v > 0.f);
  int a = __any_sync(0xffffffffu, v > 100.f), al = __all_sync(0xffffffffu, v > -100.f);
  float i7 = __shfl_sync(0xffffffffu, v, 7);
  if (t % 32 == 0) {
    down[w] = d;
    ballot[w] = b;
    any[w] = a;
    all[w] = al;
  }
  xr[t] = r;
  up[t] = u;
  idx[t] = i7;
}

__global__ void atomics(float *f, int *i, unsigned *mx, double *d) {
  atomicAdd(f, 0.5f);
  atomicAdd(i, 1);
  atomicMax(mx, blockIdx.x * blockDim.x + threadIdx.x);
  atomicAdd(d, 0.25);
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
  if (threadIdx.x < 16) __syncthreads();
  else v = __shfl_down_sync(0xffffffffu, v, 1);
  out[threadIdx.x] = v;
}

__global__ void grid2d(int *out, int w) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  out[y * w + x] = y * 1000 + x + (int)(blockDim.z * 0);
}

// ---- helpers ---------------------------------------------------------------------------

template <class T>
static T *dev_copy(const T *h, size_t n) {
  T *d = nullptr;
  if (cudaMalloc((void **)&d, n * sizeof(T)) != cudaSuccess) return nullptr;
  if (h) cudaMemcpy(d, h, n * sizeof(T), cudaMemcpyHostToDevice);
  return d;
}
template <class T>
static void to_host(T *h, const T *d, size_t n) {
  cudaMemcpy(h, d, n * sizeof(T), cudaMemcpyDeviceToHost);
}

static const char *order_name(int o) {
  return o == LMX_SIM_FORWARD ? "forward" : o == LMX_SIM_REVERSE ? "reverse" : "shuffle";
}

// ---- tests -----------------------------------------------------------------------------

static void test_races(void) {
  float hx[512];
  for (int i = 0; i < 512; i++) hx[i] = (float)(i % 7) + 0.25f;
  float want[2] = {0, 0};
  for (int i = 0; i < 512; i++) want[i / 256] += hx[i];
  int hin[128], wantn[128];
  for (int i = 0; i < 128; i++) hin[i] = i * 3 + 1;
  for (int i = 0; i < 128; i++) wantn[i] = hin[i] + (i ? hin[i - 1] : 0);
  float *x = dev_copy(hx, 512), *out = dev_copy<float>(nullptr, 2);
  int *in = dev_copy(hin, 128), *on = dev_copy<int>(nullptr, 128);
  int wrong_sum_orders = 0, wrong_neighbour_orders = 0;
  for (int o = 0; o < 3; o++) {
    lmx_sim_set_order(o, 12345);
    float got[2];
    int gotn[128];
    LMX_LAUNCH(tree_sum, 2, 256, 0, 0, x, out, 0);
    CHECK(lmx_cu_last_error() == 0, "tree_sum launch");
    to_host(got, out, 2);
    CHECK(got[0] == want[0] && got[1] == want[1], "correct tree sum under %s: %g %g, want %g %g",
          order_name(o), got[0], got[1], want[0], want[1]);
    LMX_LAUNCH(tree_sum, 2, 256, 0, 0, x, out, 1);
    to_host(got, out, 2);
    wrong_sum_orders += got[0] != want[0] || got[1] != want[1];
    if (o == LMX_SIM_FORWARD)
      CHECK(got[0] != want[0], "racy tree sum gives the right result under forward order");
    LMX_LAUNCH(left_neighbour, 1, 128, 0, 0, in, on, 128, 0);
    to_host(gotn, on, 128);
    CHECK(!memcmp(gotn, wantn, sizeof wantn), "correct neighbour read under %s", order_name(o));
    // the racy run sees other data than the run before it left in shared memory
    int hin2[128], want2[128];
    for (int i = 0; i < 128; i++) hin2[i] = i * 5 + o + 2;
    for (int i = 0; i < 128; i++) want2[i] = hin2[i] + (i ? hin2[i - 1] : 0);
    cudaMemcpy(in, hin2, sizeof hin2, cudaMemcpyHostToDevice);
    LMX_LAUNCH(left_neighbour, 1, 128, 0, 0, in, on, 128, 1);
    to_host(gotn, on, 128);
    cudaMemcpy(in, hin, sizeof hin, cudaMemcpyHostToDevice);
    memcpy(wantn, want2, sizeof wantn);
    int bad = memcmp(gotn, wantn, sizeof wantn) != 0;
    wrong_neighbour_orders += bad;
    if (o == LMX_SIM_REVERSE)
      CHECK(bad, "racy neighbour read gives the right result under reverse order");
    for (int i = 0; i < 128; i++) wantn[i] = hin[i] + (i ? hin[i - 1] : 0);
  }
  CHECK(wrong_sum_orders >= 1 && wrong_neighbour_orders >= 1, "races caught: %d, %d orders",
        wrong_sum_orders, wrong_neighbour_orders);
  lmx_sim_set_order(LMX_SIM_FORWARD, 1);
  cudaFree(x), cudaFree(out), cudaFree(in), cudaFree(on);
}

static void test_warps(void) {
  enum { N = 96 };  // three warps
  float hx[N];
  for (int i = 0; i < N; i++) hx[i] = (float)((i * 37) % 11) - (i == 40 ? 200.f : 3.f);
  float *x = dev_copy(hx, N), *down = dev_copy<float>(nullptr, 3), *xr = dev_copy<float>(nullptr, N),
        *up = dev_copy<float>(nullptr, N), *idx = dev_copy<float>(nullptr, N);
  unsigned *ballot = dev_copy<unsigned>(nullptr, 3);
  int *any = dev_copy<int>(nullptr, 3), *all = dev_copy<int>(nullptr, 3);
  for (int o = 0; o < 3; o++) {
    lmx_sim_set_order(o, 7);
    LMX_LAUNCH(warp_ops, 1, N, 0, 0, x, down, xr, up, ballot, any, all, idx);
    CHECK(lmx_cu_last_error() == 0, "warp_ops launch");
    float hd[3], hxr[N], hu[N], hi[N];
    unsigned hb[3];
    int ha[3], hl[3];
    to_host(hd, down, 3), to_host(hxr, xr, N), to_host(hu, up, N), to_host(hi, idx, N);
    to_host(hb, ballot, 3), to_host(ha, any, 3), to_host(hl, all, 3);
    for (int w = 0; w < 3; w++) {
      float s = 0;
      unsigned b = 0;
      int a = 0, l = 1;
      for (int i = 0; i < 32; i++) {
        float v = hx[w * 32 + i];
        s += v;
        b |= (v > 0.f ? 1u : 0u) << i;
        a |= v > 100.f;
        l &= v > -100.f;
      }
      CHECK(hd[w] == s, "shfl_down sum warp %d (%s): %g want %g", w, order_name(o), hd[w], s);
      CHECK(hb[w] == b, "ballot warp %d: %08x want %08x", w, hb[w], b);
      CHECK(ha[w] == a && hl[w] == l, "any/all warp %d", w);
      for (int i = 0; i < 32; i++) {
        int t = w * 32 + i;
        CHECK(hxr[t] == s, "shfl_xor sum lane %d: %g want %g", t, hxr[t], s);
        CHECK(hu[t] == (i ? hx[t - 1] : hx[t]), "shfl_up lane %d", t);
        CHECK(hi[t] == hx[w * 32 + 7], "shfl idx lane %d", t);
      }
    }
  }
  lmx_sim_set_order(LMX_SIM_FORWARD, 1);
  cudaFree(x), cudaFree(down), cudaFree(xr), cudaFree(up), cudaFree(idx);
  cudaFree(ballot), cudaFree(any), cudaFree(all);
}

static void test_atomics_and_shared(void) {
  float zf = 0;
  int zi = 0;
  unsigned zu = 0;
  double zd = 0;
  float *f = dev_copy(&zf, 1);
  int *i = dev_copy(&zi, 1);
  unsigned *m = dev_copy(&zu, 1);
  double *d = dev_copy(&zd, 1);
  LMX_LAUNCH(atomics, 40, 100, 0, 0, f, i, m, d);
  CHECK(lmx_cu_last_error() == 0, "atomics launch");
  to_host(&zf, f, 1), to_host(&zi, i, 1), to_host(&zu, m, 1), to_host(&zd, d, 1);
  CHECK(zf == 2000.f && zi == 4000 && zu == 3999 && zd == 1000.0,
        "atomics: %g %d %u %g", zf, zi, zu, zd);
  float hx[200], hy[200];
  for (int k = 0; k < 200; k++) hx[k] = (float)k;
  float *x = dev_copy(hx, 200), *y = dev_copy<float>(nullptr, 200);
  LMX_LAUNCH(dyn_reverse, 1, 200, 200 * sizeof(float), 0, x, y, 200);
  CHECK(lmx_cu_last_error() == 0, "dyn_reverse launch");
  to_host(hy, y, 200);
  int ok = 1;
  for (int k = 0; k < 200; k++) ok &= hy[k] == (float)(199 - k);
  CHECK(ok, "dynamic shared memory reverse");
  int *g = dev_copy<int>(nullptr, 64 * 48);
  LMX_LAUNCH(grid2d, dim3(4, 3), dim3(16, 16), 0, 0, g, 64);
  int hg[64 * 48];
  to_host(hg, g, 64 * 48);
  ok = 1;
  for (int yy = 0; yy < 48; yy++)
    for (int xx = 0; xx < 64; xx++) ok &= hg[yy * 64 + xx] == yy * 1000 + xx;
  CHECK(ok, "2-D grid and block indices");
  cudaFree(f), cudaFree(i), cudaFree(m), cudaFree(d), cudaFree(x), cudaFree(y), cudaFree(g);
}

static void test_errors(void) {
  int *o = dev_copy<int>(nullptr, 2048);
  LMX_LAUNCH(divergent_barrier, 1, 2048, 0, 0, o);
  CHECK(lmx_cu_last_error() == cudaErrorInvalidConfiguration, "2048 threads per block refused");
  LMX_LAUNCH(divergent_barrier, dim3(1, 70000), 32, 0, 0, o);
  CHECK(lmx_cu_last_error() == cudaErrorInvalidConfiguration, "grid.y 70000 refused");
  LMX_LAUNCH(dyn_reverse, 1, 32, 64 * 1024, 0, (const float *)nullptr, (float *)nullptr, 0);
  CHECK(lmx_cu_last_error() == cudaErrorInvalidConfiguration, "64 KiB shared memory refused");
  LMX_LAUNCH(divergent_barrier, 1, 32, 0, 0, o);
  CHECK(lmx_cu_last_error() == 0, "a deadlocking launch itself succeeds (asynchronous fault)");
  CHECK(cudaDeviceSynchronize() == cudaErrorLaunchFailure, "deadlock reported at the next sync");
  CHECK(strstr(lmx_sim_last_failure(), "divergent_barrier") != nullptr, "failure names the kernel: %s",
        lmx_sim_last_failure());
  CHECK(cudaDeviceSynchronize() == cudaSuccess, "the fault is reported once");
  CHECK(cudaGetLastError() == cudaErrorLaunchFailure, "and it was the last error");
  lmx_sim_inject_fault(0, cudaErrorIllegalAddress);
  LMX_LAUNCH(grid2d, 1, 1, 0, 0, o, 1);
  CHECK(lmx_cu_last_error() == 0, "launch with an injected fault succeeds");
  int h;
  CHECK(cudaMemcpy(&h, o, 4, cudaMemcpyDeviceToHost) == cudaErrorIllegalAddress,
        "injected fault reported by a synchronous copy");
  cudaFree(o);
}

static void test_runtime(void) {
  int n = 0;
  CHECK(cudaGetDeviceCount(&n) == cudaSuccess && n >= 1, "devices: %d", n);
  CHECK(cudaSetDevice(n) == cudaErrorInvalidDevice, "device %d refused", n);
  CHECK(cudaGetLastError() == cudaErrorInvalidDevice, "last error set");
  CHECK(cudaGetLastError() == cudaSuccess, "last error cleared");
  size_t fr, tot;
  cudaSetDevice(0);
  cudaMemGetInfo(&fr, &tot);
  void *p = nullptr;
  CHECK(cudaMalloc(&p, tot + 1) == cudaErrorMemoryAllocation && !p, "over capacity refused");
  cudaGetLastError();
  CHECK(cudaMalloc(&p, 1 << 20) == cudaSuccess, "1 MiB allocated");
  size_t fr2;
  cudaMemGetInfo(&fr2, &tot);
  CHECK(fr - fr2 == (1u << 20), "free memory drops by the allocation");
  char host[64] = {0};
  CHECK(cudaMemcpy(host, p, 64, cudaMemcpyHostToDevice) == cudaErrorInvalidValue,
        "wrong copy direction refused");
  CHECK(cudaMemcpy(p, host, (1 << 20) + 1, cudaMemcpyHostToDevice) == cudaErrorInvalidValue,
        "copy past the end of the block refused");
  CHECK(cudaFree(host) == cudaErrorInvalidValue, "freeing host memory refused");
  cudaStream_t s;
  cudaEvent_t a, b;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess, "stream");
  cudaEventCreate(&a), cudaEventCreate(&b);
  CHECK(cudaEventRecord(a, s) == cudaSuccess && cudaMemsetAsync(p, 7, 64, s) == cudaSuccess &&
            cudaEventRecord(b, s) == cudaSuccess && cudaStreamWaitEvent(s, b, 0) == cudaSuccess,
        "events and memset on a stream");
  float ms = -1;
  CHECK(cudaEventElapsedTime(&ms, a, b) == cudaSuccess && ms >= 0, "elapsed time");
  CHECK(cudaMemcpyAsync(host, p, 64, cudaMemcpyDeviceToHost, s) == cudaSuccess &&
            cudaStreamSynchronize(s) == cudaSuccess && host[63] == 7,
        "async copy back");
  cudaStreamDestroy(s);
  CHECK(cudaStreamSynchronize(s) == cudaErrorInvalidResourceHandle, "destroyed stream refused");
  cudaEventDestroy(a), cudaEventDestroy(b);
  CHECK(cudaFree(p) == cudaSuccess, "free");
  cudaMemGetInfo(&fr2, &tot);
  CHECK(fr2 == fr, "memory returned");
}

int main(void) {
  test_races();
  test_warps();
  test_atomics_and_shared();
  test_errors();
  test_runtime();
  long long launches, threads, barriers;
  lmx_sim_stats(&launches, &threads, &barriers);
  printf("%d checks, %d failed (%lld launches, %lld simulated threads, %lld barriers)\n",
         g_checks, g_fail, launches, threads, barriers);
  return g_fail ? 1 : 0;
}
