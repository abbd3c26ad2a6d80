// test_cuda_sim.cu — the CUDA simulator itself (built and run in the -DLUAMX_CUDA=SIM
// build only): racy kernels must give wrong results, their corrected versions right ones
// under every thread order; warp shuffles and votes, atomics, dynamic shared memory,
// launch limits, barrier deadlocks, and the fake runtime's memory, copies, streams,
// events and asynchronous faults. Exit status 0 when every check passes.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

#include "cuda_sim_kernels.cuh"
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

// ---- races -----------------------------------------------------------------------------

struct schedule {
  int order;
  unsigned seed;
};
// shuffle with seed 0 is the simulator's default (LUAMX_SIM_ORDER unset)
static const schedule k_schedules[] = {{LMX_SIM_SHUFFLE, 0}, {LMX_SIM_SHUFFLE, 1},
                                       {LMX_SIM_SHUFFLE, 2}, {LMX_SIM_SHUFFLE, 77},
                                       {LMX_SIM_FORWARD, 0}, {LMX_SIM_REVERSE, 0}};
enum { N_SCHEDULES = sizeof k_schedules / sizeof k_schedules[0] };

// The racy kernels must be wrong under the default schedule and under every shuffle, the
// tree sum and the read-ahead also under forward order, the read-behind under reverse;
// the corrected kernels right under every schedule.
static void test_races(void) {
  float hx[512];
  for (int i = 0; i < 512; i++) hx[i] = (float)(i % 7) + 0.25f;
  float want[2] = {0, 0};
  for (int i = 0; i < 512; i++) want[i / 256] += hx[i];
  float *x = dev_copy(hx, 512), *out = dev_copy<float>(nullptr, 2);
  int *in = dev_copy<int>(nullptr, 128), *on = dev_copy<int>(nullptr, 128);
  for (int k = 0; k < N_SCHEDULES; k++) {
    const schedule sc = k_schedules[k];
    lmx_sim_set_order(sc.order, sc.seed);
    const char *on_name = order_name(sc.order);
    float got[2];
    CHECK(launch_tree_sum(0, 2, x, out, 0) == 0, "tree_sum launch");
    to_host(got, out, 2);
    CHECK(got[0] == want[0] && got[1] == want[1], "correct tree sum under %s:%u: %g %g, want %g %g",
          on_name, sc.seed, got[0], got[1], want[0], want[1]);
    CHECK(launch_tree_sum(0, 2, x, out, 1) == 0, "racy tree_sum launch");
    to_host(got, out, 2);
    if (sc.order != LMX_SIM_REVERSE)  // reverse happens to run every level in dependency order
      CHECK(got[0] != want[0] && got[1] != want[1],
            "racy tree sum right under %s:%u: %g %g", on_name, sc.seed, got[0], got[1]);
    // fresh input for every run, so a racy run cannot read what the run before it left
    int hin[128], wl[128], wr[128], gl[128], gr[128];
    for (int i = 0; i < 128; i++) hin[i] = i * 5 + k * 3 + 2;
    for (int i = 0; i < 128; i++) {
      wl[i] = hin[i] + (i ? hin[i - 1] : 0);
      wr[i] = hin[i] - (i + 1 < 128 ? hin[i + 1] : 0);
    }
    cudaMemcpy(in, hin, sizeof hin, cudaMemcpyHostToDevice);
    CHECK(launch_left_neighbour(0, in, on, 128, 0) == 0, "left_neighbour launch");
    to_host(gl, on, 128);
    CHECK(!memcmp(gl, wl, sizeof wl), "correct left neighbour under %s:%u", on_name, sc.seed);
    CHECK(launch_right_neighbour(0, in, on, 128, 0) == 0, "right_neighbour launch");
    to_host(gr, on, 128);
    CHECK(!memcmp(gr, wr, sizeof wr), "correct right neighbour under %s:%u", on_name, sc.seed);
    for (int i = 0; i < 128; i++) hin[i] += 1000;
    for (int i = 0; i < 128; i++) {
      wl[i] = hin[i] + (i ? hin[i - 1] : 0);
      wr[i] = hin[i] - (i + 1 < 128 ? hin[i + 1] : 0);
    }
    cudaMemcpy(in, hin, sizeof hin, cudaMemcpyHostToDevice);
    launch_left_neighbour(0, in, on, 128, 1);
    to_host(gl, on, 128);
    launch_right_neighbour(0, in, on, 128, 1);
    to_host(gr, on, 128);
    int bad_l = memcmp(gl, wl, sizeof wl) != 0, bad_r = memcmp(gr, wr, sizeof wr) != 0;
    if (sc.order != LMX_SIM_FORWARD)
      CHECK(bad_l, "racy read-behind right under %s:%u", on_name, sc.seed);
    if (sc.order != LMX_SIM_REVERSE)
      CHECK(bad_r, "racy read-ahead right under %s:%u", on_name, sc.seed);
  }
  lmx_sim_set_order(-1, 0);
  cudaFree(x), cudaFree(out), cudaFree(in), cudaFree(on);
}

// ---- warps -----------------------------------------------------------------------------

static void test_warps(void) {
  enum { N = 96 };  // three warps
  float hx[N];
  for (int i = 0; i < N; i++) hx[i] = (float)((i * 37) % 11) - (i == 40 ? 200.f : 3.f);
  float *x = dev_copy(hx, N), *down = dev_copy<float>(nullptr, 3), *xr = dev_copy<float>(nullptr, N),
        *up = dev_copy<float>(nullptr, N), *idx = dev_copy<float>(nullptr, N);
  unsigned *ballot = dev_copy<unsigned>(nullptr, 3);
  int *any = dev_copy<int>(nullptr, 3), *all = dev_copy<int>(nullptr, 3);
  double *dsum = dev_copy<double>(nullptr, 3);
  for (int k = 0; k < N_SCHEDULES; k++) {
    const schedule sc = k_schedules[k];
    lmx_sim_set_order(sc.order, sc.seed);
    CHECK(launch_warp_ops(0, N, x, down, xr, up, ballot, any, all, idx, dsum) == 0, "warp_ops launch");
    float hd[3], hxr[N], hu[N], hi[N];
    unsigned hb[3];
    int ha[3], hl[3];
    double hds[3];
    to_host(hd, down, 3), to_host(hxr, xr, N), to_host(hu, up, N), to_host(hi, idx, N);
    to_host(hb, ballot, 3), to_host(ha, any, 3), to_host(hl, all, 3), to_host(hds, dsum, 3);
    for (int w = 0; w < 3; w++) {
      // the reference sums in the butterfly order of the kernel, so float sums agree exactly
      float lanes[32];
      for (int i = 0; i < 32; i++) lanes[i] = hx[w * 32 + i];
      for (int o = 16; o > 0; o >>= 1)
        for (int i = 0; i < 32; i++)
          if (i + o < 32) lanes[i] += lanes[i + o];
      float s = lanes[0];
      unsigned b = 0;
      int a = 0, l = 1;
      double sd = 0;
      for (int i = 0; i < 32; i++) {
        float v = hx[w * 32 + i];
        b |= (v > 0.f ? 1u : 0u) << i;
        a |= v > 100.f;
        l &= v > -100.f;
        sd += v;
      }
      CHECK(hd[w] == s, "shfl_down sum warp %d (%s): %g want %g", w, order_name(sc.order), hd[w], s);
      CHECK(hds[w] == sd, "double shfl_xor sum warp %d: %g want %g", w, hds[w], sd);
      CHECK(hb[w] == b, "ballot warp %d: %08x want %08x", w, hb[w], b);
      CHECK(ha[w] == a && hl[w] == l, "any/all warp %d", w);
      CHECK(a == 0 && l == (w != 1), "the data has one lane < -100, in warp 1");
      for (int i = 0; i < 32; i++) {
        int t = w * 32 + i;
        CHECK(fabsf(hxr[t] - s) < 1e-4f, "shfl_xor sum lane %d: %g want %g", t, hxr[t], s);
        CHECK(hu[t] == (i ? hx[t - 1] : hx[t]), "shfl_up lane %d", t);
        CHECK(hi[t] == hx[w * 32 + 7], "shfl idx lane %d", t);
      }
    }
  }
  lmx_sim_set_order(-1, 0);
  // a block of 40 threads: the second warp has 8 lanes; shuffles past them keep the own value
  CHECK(launch_warp_ops(0, 40, x, down, xr, up, ballot, any, all, idx, dsum) == 0, "40 threads");
  float hd[2];
  to_host(hd, down, 2);
  float s1 = 0;
  for (int i = 32; i < 40; i++) s1 += hx[i];
  CHECK(fabsf(hd[1] - s1) > 1e-3f, "an 8-lane warp's shfl_down sum doubles the unmatched lanes");

  // part of a warp: a 16-lane mask while the other lanes wait at the block barrier
  int hp[64], *p = dev_copy<int>(nullptr, 64), *half = dev_copy<int>(nullptr, 1),
      *seg = dev_copy<int>(nullptr, 64);
  for (int i = 0; i < 64; i++) hp[i] = i * i % 13;
  cudaMemcpy(p, hp, sizeof hp, cudaMemcpyHostToDevice);
  CHECK(launch_partial_warp(0, p, half, seg) == 0, "partial_warp launch");
  CHECK(cudaDeviceSynchronize() == cudaSuccess, "a 16-lane shuffle beside a barrier is no deadlock");
  int hh, hs[64], want_half = 0;
  to_host(&hh, half, 1), to_host(hs, seg, 64);
  for (int i = 0; i < 16; i++) want_half += hp[i];
  CHECK(hh == want_half, "16-lane masked sum: %d want %d", hh, want_half);
  int ok = 1;
  for (int i = 0; i < 64; i++) {
    int ws = 0;
    for (int j = i / 8 * 8; j < i / 8 * 8 + 8; j++) ws += hp[j];
    ok &= hs[i] == ws;
  }
  CHECK(ok, "width-8 xor sums stay within their segments");

  unsigned *act = dev_copy<unsigned>(nullptr, 1), *bal = dev_copy<unsigned>(nullptr, 1), ha, hb;
  CHECK(launch_early_exit(0, 5, act, bal) == 0, "early_exit launch");
  CHECK(cudaDeviceSynchronize() == cudaSuccess, "votes after exits complete");
  to_host(&ha, act, 1), to_host(&hb, bal, 1);
  CHECK(ha == 0x1fu && hb == 0x15u, "activemask %08x (want 1f), ballot %08x (want 15)", ha, hb);
  cudaFree(x), cudaFree(down), cudaFree(xr), cudaFree(up), cudaFree(idx), cudaFree(dsum);
  cudaFree(ballot), cudaFree(any), cudaFree(all), cudaFree(p), cudaFree(half), cudaFree(seg);
  cudaFree(act), cudaFree(bal);
}

// ---- atomics, shared memory, indices, math ---------------------------------------------

static void test_atomics_and_shared(void) {
  float zf = 0, ze = -1;
  int zi = 0, zm = 1 << 30, zc = -1;
  unsigned zu = 0;
  double zd = 0;
  unsigned long long zl = 0;
  float *f = dev_copy(&zf, 1), *e = dev_copy(&ze, 1);
  int *i = dev_copy(&zi, 1), *mn = dev_copy(&zm, 1), *c = dev_copy(&zc, 1);
  unsigned *m = dev_copy(&zu, 1);
  double *d = dev_copy(&zd, 1);
  unsigned long long *l = dev_copy(&zl, 1);
  CHECK(launch_atomics(0, 40, 100, f, i, m, d, mn, l, c, e) == 0, "atomics launch");
  to_host(&zf, f, 1), to_host(&zi, i, 1), to_host(&zu, m, 1), to_host(&zd, d, 1);
  to_host(&zm, mn, 1), to_host(&zl, l, 1), to_host(&zc, c, 1), to_host(&ze, e, 1);
  CHECK(zf == 2000.f && zi == 4000 && zu == 3999 && zd == 1000.0,
        "atomics: %g %d %u %g", zf, zi, zu, zd);
  CHECK(zm == 1000 - 3999 && zl == 12000ull, "atomicMin %d, 64-bit atomicAdd %llu", zm, zl);
  CHECK(zc >= 0 && zc < 4000 && ze >= 0.f && ze < 4000.f, "atomicCAS winner %d, atomicExch %g", zc, ze);

  float hx[200], hy[200];
  for (int k = 0; k < 200; k++) hx[k] = (float)k;
  float *x = dev_copy(hx, 200), *y = dev_copy<float>(nullptr, 200);
  CHECK(launch_dyn_reverse(0, 200, 200 * sizeof(float), x, y, 200) == 0, "dyn_reverse launch");
  to_host(hy, y, 200);
  int ok = 1;
  for (int k = 0; k < 200; k++) ok &= hy[k] == (float)(199 - k);
  CHECK(ok, "dynamic shared memory reverse");
  CHECK(launch_dyn_reverse(0, 32, 48 * 1024, x, y, 32) == 0, "48 KiB of shared memory accepted");

  enum { W = 64, H = 12, D = 4 };
  int *g = dev_copy<int>(nullptr, W * H * D), hg[W * H * D];
  CHECK(launch_grid3d(0, dim3(4, 3, 2), dim3(16, 4, 2), g, W, H) == 0, "grid3d launch");
  to_host(hg, g, W * H * D);
  ok = 1;
  for (int zz = 0; zz < D; zz++)
    for (int yy = 0; yy < H; yy++)
      for (int xx = 0; xx < W; xx++) ok &= hg[(zz * H + yy) * W + xx] == zz * 1000000 + yy * 1000 + xx;
  CHECK(ok, "3-D grid and block indices");

  enum { NM = 100 };
  float hm[NM], hr[NM * 8];
  unsigned short hh[NM];
  for (int k = 0; k < NM; k++) hm[k] = (float)(k - 50) * 0.37f;
  float *mx_ = dev_copy(hm, NM), *my = dev_copy<float>(nullptr, NM * 8);
  unsigned short *mh = dev_copy<unsigned short>(nullptr, NM);
  CHECK(launch_math_fns(0, mx_, my, mh, NM) == 0, "math_fns launch");
  to_host(hr, my, NM * 8), to_host(hh, mh, NM);
  ok = 1;
  for (int k = 0; k < NM; k++) {
    float v = hm[k], *r = hr + k * 8;
    ok &= fabsf(r[0] - expf(v)) <= 1e-5f * expf(v) && fabsf(r[1] - logf(fabsf(v) + 1.f)) < 1e-6f;
    ok &= fabsf(r[2] - v / 3.f) < 1e-6f && fabsf(r[3] - 1.f / sqrtf(fabsf(v) + 1.f)) < 1e-6f;
    ok &= r[4] == (v < 0 ? 0.f : v > 1 ? 1.f : v) && r[5] == 2 * v;
    ok &= r[6] == fminf(v, 0.5f) + fmaxf(v, -0.5f);
    ok &= fabsf(r[7] - v) <= fabsf(v) * (1.f / 1024);
  }
  CHECK(ok, "device math functions");
  cudaFree(f), cudaFree(e), cudaFree(i), cudaFree(mn), cudaFree(c), cudaFree(m), cudaFree(d);
  cudaFree(l), cudaFree(x), cudaFree(y), cudaFree(g), cudaFree(mx_), cudaFree(my), cudaFree(mh);
}

// __half conversions round to nearest even, as the GPU's cvt.rn.f16.f32
static void test_half(void) {
  struct {
    float f;
    unsigned short h;
  } cases[] = {
      {0.f, 0x0000},          {-0.f, 0x8000},         {1.f, 0x3c00},
      {-2.f, 0xc000},         {65504.f, 0x7bff},      {65519.f, 0x7bff},
      {65520.f, 0x7c00},      {1e9f, 0x7c00},         {-1e9f, 0xfc00},
      {1.f + 1.f / 2048, 0x3c00},                     // tie: to even (down)
      {1.f + 3.f / 2048, 0x3c02},                     // tie: to even (up)
      {1.f + 1.f / 2048 + 1.f / 65536, 0x3c01},       // just above the tie: up
      {5.9604645e-8f, 0x0001},                        // smallest subnormal
      {2.9802322e-8f, 0x0000},                        // half of it: tie to even (zero)
      {2.9802326e-8f, 0x0001},                        // just above: up
      {6.1035156e-5f, 0x0400},                        // smallest normal
      {6.0975552e-5f, 0x03ff},                        // largest subnormal
      {INFINITY, 0x7c00},     {-INFINITY, 0xfc00},
  };
  for (const auto &k : cases) {
    unsigned short got = __half_as_ushort(__float2half_rn(k.f));
    CHECK(got == k.h, "__float2half_rn(%.9g) = %04x, want %04x", k.f, got, k.h);
    CHECK(__half_as_ushort(__float2half(k.f)) == k.h, "__float2half(%.9g)", k.f);
  }
  CHECK(isnan(__half2float(__float2half(NAN))), "NaN stays NaN");
  // every finite half converts to float and back to itself
  int ok = 1;
  for (unsigned b = 0; b < 0x10000u; b++) {
    if ((b & 0x7c00u) == 0x7c00u && (b & 0x3ffu)) continue;
    ok &= __half_as_ushort(__float2half_rn(__half2float(__ushort_as_half((unsigned short)b)))) == b;
  }
  CHECK(ok, "half -> float -> half round trip");
  CHECK(__half2float(__ushort_as_half(0x0001)) == 5.9604645e-8f, "subnormal half to float");
}

// ---- launch errors and faults ----------------------------------------------------------

static void test_errors(void) {
  int *o = dev_copy<int>(nullptr, 2048);
  CHECK(launch_divergent_barrier(0, 1, 2048, o) == cudaErrorInvalidConfiguration,
        "2048 threads per block refused");
  CHECK(launch_divergent_barrier(0, 1, dim3(1, 1, 65), o) == cudaErrorInvalidConfiguration,
        "block.z 65 refused");
  CHECK(launch_divergent_barrier(0, dim3(1, 70000), 32, o) == cudaErrorInvalidConfiguration,
        "grid.y 70000 refused");
  CHECK(launch_divergent_barrier(0, dim3(1, 1, 70000), 32, o) == cudaErrorInvalidConfiguration,
        "grid.z 70000 refused");
  CHECK(launch_divergent_barrier(0, 0, 32, o) == cudaErrorInvalidConfiguration, "empty grid refused");
  CHECK(launch_dyn_reverse(0, 32, 48 * 1024 + 1, nullptr, nullptr, 0) == cudaErrorInvalidConfiguration,
        "more than 48 KiB of shared memory refused");
  CHECK(cudaGetLastError() == cudaSuccess, "the launch error was cleared by lmx_cu_last_error");
  CHECK(cudaDeviceSynchronize() == cudaSuccess, "a refused launch leaves no fault");
  CHECK(launch_tree_sum((cudaStream_t)o, 1, nullptr, nullptr, 0) == cudaErrorInvalidResourceHandle,
        "a launch on something that is not a stream refused");

  CHECK(launch_divergent_barrier(0, 1, 32, o) == 0,
        "a deadlocking launch itself succeeds (asynchronous fault)");
  CHECK(cudaDeviceSynchronize() == cudaErrorLaunchFailure, "deadlock reported at the next sync");
  CHECK(strstr(lmx_sim_last_failure(), "divergent_barrier") != nullptr &&
            strstr(lmx_sim_last_failure(), "block (0,0,0)") != nullptr,
        "failure names the kernel and block: %s", lmx_sim_last_failure());
  CHECK(cudaDeviceSynchronize() == cudaSuccess, "the fault is reported once");
  CHECK(cudaGetLastError() == cudaErrorLaunchFailure, "and it was the last error");
  CHECK(launch_deadlock_block1(0, o) == 0, "deadlock_block1 launch");
  CHECK(cudaDeviceSynchronize() == cudaErrorLaunchFailure, "deadlock in the second block");
  CHECK(strstr(lmx_sim_last_failure(), "deadlock_block1, block (1,0,0)") != nullptr, "%s",
        lmx_sim_last_failure());
  cudaGetLastError();  // as on CUDA, a failed call leaves its error for cudaGetLastError

  // an injected fault: the launch succeeds, the kernel does not run, and the next
  // synchronising call of that device returns the code once
  lmx_sim_inject_fault(0, cudaErrorIllegalAddress);
  int hg[1] = {-5};
  cudaMemcpy(o, hg, 4, cudaMemcpyHostToDevice);
  CHECK(launch_grid3d(0, 1, 1, o, 1, 1) == 0, "launch with an injected fault succeeds");
  CHECK(cudaMemcpy(hg, o, 4, cudaMemcpyDeviceToHost) == cudaErrorIllegalAddress,
        "injected fault reported by a synchronous copy");
  CHECK(hg[0] == -5, "the faulting kernel did not run, the failed copy copied nothing");
  CHECK(cudaMemcpy(hg, o, 4, cudaMemcpyDeviceToHost) == cudaSuccess, "then cleared");
  CHECK(cudaGetLastError() == cudaErrorIllegalAddress, "the fault was the last error");
  cudaStream_t s;
  cudaStreamCreate(&s);
  lmx_sim_inject_fault(0, cudaErrorLaunchFailure);
  CHECK(launch_grid3d(s, 1, 1, o, 1, 1) == 0, "stream launch with an injected fault");
  CHECK(cudaMemcpyAsync(hg, o, 4, cudaMemcpyDeviceToHost, s) == cudaSuccess,
        "an asynchronous copy does not synchronise: no fault yet");
  CHECK(cudaStreamSynchronize(s) == cudaErrorLaunchFailure, "stream synchronise reports it");
  CHECK(cudaStreamSynchronize(s) == cudaSuccess, "once");
  cudaGetLastError();
  if (lmx_sim_inject_fault(1, cudaErrorIllegalAddress), cudaSetDevice(1) == cudaSuccess) {
    int *o1 = dev_copy<int>(nullptr, 1);
    CHECK(launch_grid3d(0, 1, 1, o1, 1, 1) == 0, "launch on device 1");
    cudaSetDevice(0);
    CHECK(cudaDeviceSynchronize() == cudaSuccess, "device 1's fault is not device 0's");
    cudaSetDevice(1);
    CHECK(cudaDeviceSynchronize() == cudaErrorIllegalAddress, "device 1 reports its fault");
    cudaFree(o1);
    cudaSetDevice(0);
  }
  cudaStreamDestroy(s);
  cudaFree(o);
}

// ---- the fake runtime ------------------------------------------------------------------

static void test_runtime(void) {
  int n = 0;
  CHECK(cudaGetDeviceCount(&n) == cudaSuccess && n >= 1, "devices: %d", n);
  const char *env = getenv("LUAMX_SIM_GPUS");
  CHECK(n == (env ? atoi(env) : 2), "LUAMX_SIM_GPUS devices (default 2): %d", n);
  CHECK(cudaSetDevice(n) == cudaErrorInvalidDevice, "device %d refused", n);
  CHECK(cudaGetLastError() == cudaErrorInvalidDevice, "last error set");
  CHECK(cudaGetLastError() == cudaSuccess, "last error cleared");
  CHECK(!strcmp(cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation") &&
            !strcmp(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory"),
        "error names and strings");
  int v = 0;
  CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrComputeCapabilityMajor, 0) == cudaSuccess && v == 9,
        "sm_90");
  CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxThreadsPerBlock, 0) == cudaSuccess && v == 1024,
        "1024 threads");
  CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, n) == cudaErrorInvalidDevice, "bad device");
  size_t fr, tot;
  cudaSetDevice(0);
  cudaMemGetInfo(&fr, &tot);
  const char *mem = getenv("LUAMX_SIM_GPU_MEM");
  CHECK(tot == (mem ? (size_t)strtoull(mem, nullptr, 10) : (size_t)2 << 30), "capacity %zu", tot);
  void *p = nullptr, *q = nullptr;
  CHECK(cudaMalloc(&p, tot + 1) == cudaErrorMemoryAllocation && !p, "over capacity refused");
  CHECK(cudaGetLastError() == cudaErrorMemoryAllocation, "out of memory is the last error");
  CHECK(cudaMalloc(&p, 1 << 20) == cudaSuccess, "1 MiB allocated");
  size_t fr2;
  cudaMemGetInfo(&fr2, &tot);
  CHECK(fr - fr2 == (1u << 20), "free memory drops by the allocation");
  CHECK(cudaMalloc(&q, fr2 - 100) == cudaSuccess, "the rest allocated");
  void *r = nullptr;
  CHECK(cudaMalloc(&r, 101) == cudaErrorMemoryAllocation, "101 bytes more refused");
  if (n > 1) {  // capacity is per device
    cudaSetDevice(1);
    CHECK(cudaMalloc(&r, 1 << 20) == cudaSuccess, "device 1 still has memory");
    CHECK(cudaMemcpy(r, p, 64, cudaMemcpyDeviceToDevice) == cudaSuccess, "copy across devices");
    cudaFree(r);
    cudaSetDevice(0);
  }
  cudaFree(q);
  cudaGetLastError();
  char host[64] = {0};
  CHECK(cudaMemcpy(host, p, 64, cudaMemcpyHostToDevice) == cudaErrorInvalidValue,
        "wrong copy direction refused");
  CHECK(cudaMemcpy(host, p, 64, cudaMemcpyDeviceToDevice) == cudaErrorInvalidValue,
        "host memory as a device-to-device destination refused");
  CHECK(cudaMemcpy(p, host, (1 << 20) + 1, cudaMemcpyHostToDevice) == cudaErrorInvalidValue,
        "copy past the end of the block refused");
  CHECK(cudaMemset(host, 0, 8) == cudaErrorInvalidValue, "memset of host memory refused");
  CHECK(cudaFree(host) == cudaErrorInvalidValue, "freeing host memory refused");
  CHECK(cudaMemcpy(p, host, 64, cudaMemcpyDefault) == cudaSuccess &&
            cudaMemcpy(host, p, 64, cudaMemcpyDefault) == cudaSuccess,
        "cudaMemcpyDefault infers the direction");
  void *pinned = nullptr;
  CHECK(cudaMallocHost(&pinned, 256) == cudaSuccess, "pinned memory");
  CHECK(cudaMemcpy(p, pinned, 256, cudaMemcpyHostToDevice) == cudaSuccess, "from pinned memory");
  CHECK(cudaMemcpy(pinned, p, 256, cudaMemcpyHostToDevice) == cudaErrorInvalidValue,
        "pinned memory is host memory");
  CHECK(cudaFree(pinned) == cudaErrorInvalidValue && cudaFreeHost(p) == cudaErrorInvalidValue,
        "each free takes only its own kind");
  CHECK(cudaFreeHost(pinned) == cudaSuccess, "free pinned");
  cudaStream_t s;
  cudaEvent_t a, b;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess, "stream");
  cudaEventCreate(&a), cudaEventCreateWithFlags(&b, cudaEventDefault);
  CHECK(cudaEventRecord(a, s) == cudaSuccess && cudaMemsetAsync(p, 7, 64, s) == cudaSuccess &&
            cudaEventRecord(b, s) == cudaSuccess && cudaStreamWaitEvent(s, b, 0) == cudaSuccess,
        "events and memset on a stream");
  CHECK(cudaEventQuery(b) == cudaSuccess && cudaEventSynchronize(b) == cudaSuccess &&
            cudaStreamQuery(s) == cudaSuccess,
        "work is done when enqueued");
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
  cudaGetLastError();
}

// ---- cost ------------------------------------------------------------------------------

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// The cost per simulated thread (one store, no barrier) and per thread per barrier.
static void bench(void) {
  enum { N = 1 << 20, B = 64, BAR = 100 };
  float *y = dev_copy<float>(nullptr, N);
  int *o = dev_copy<int>(nullptr, B * 256);
  launch_plain_store(0, y, N);  // stacks and pages touched once
  double t0 = now_s();
  launch_plain_store(0, y, N);
  double t1 = now_s();
  launch_barrier_loop(0, B, 256, o, 0);
  double t2 = now_s();
  launch_barrier_loop(0, B, 256, o, BAR);
  double t3 = now_s();
  int h[256];
  to_host(h, o, 256);
  CHECK(h[5] == 5 + BAR, "barrier loop");
  printf("cost (order %s): %.1f ns per simulated thread without barriers, "
         "%.1f ns per thread per __syncthreads\n",
         order_name(lmx_sim_get_order()), (t1 - t0) * 1e9 / N,
         ((t3 - t2) - (t2 - t1)) * 1e9 / ((double)B * 256 * BAR));
  cudaFree(y), cudaFree(o);
}

int main(int argc, char **argv) {
  test_races();
  test_warps();
  test_atomics_and_shared();
  test_half();
  test_errors();
  test_runtime();
  if (argc > 1 && !strcmp(argv[1], "--bench")) bench();
  long long launches, threads, barriers;
  lmx_sim_stats(&launches, &threads, &barriers);
  printf("%d checks, %d failed (%lld launches, %lld simulated threads, %lld barriers)\n",
         g_checks, g_fail, launches, threads, barriers);
  return g_fail ? 1 : 0;
}
