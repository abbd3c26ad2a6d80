/* gemm_route.c — which library runs each float32 matrix product: OpenBLAS or oneDNN.
 *
 * The auto rule follows bench/gemm_libs.c's table (bench/README.md; AMD EPYC Zen 5, one
 * thread, process CPU time): oneDNN's matmul primitive ran 5-50% faster than OpenBLAS
 * 0.3.21's Cooperlake kernels at the workloads' products with small m (batch 32-128),
 * the tall-skinny weight gradients and LeNet's im2col products, and slower at
 *   - a tiny inner dimension (k <= 16: 128x512x10, 64x500x10; 5%),
 *   - a tiny output side (m <= 16: the 10-class layer's weight gradient, 5-10%; or
 *     n <= 16 with m <= 64: 64x10x500, 25%),
 *   - the largest products (m·n·k >= 2^30: the 10000-word decoder 1120x10000x200 and its
 *     weight gradient, 5%), where OpenBLAS's blocking for large matrices wins.
 * On a CPU without AVX-512 (AMD EPYC Zen 3, AVX2; the same table, bench/README.md) oneDNN's
 * AVX2 sgemm loses 30-40% to OpenBLAS's Haswell kernels when B is not transposed and its
 * rows are a multiple of 256 floats long: the (0,0) products 128x512x512 (66 against 47
 * GFLOP/s), 50x4096x500, 20x36864x25 and the Winograd convolutions' F x 512 x C, and the
 * (1,0) weight gradient 512x512x128 (68 against 40; with k >= 64: at 500x4096x50 oneDNN
 * still wins), on one thread. Those go to OpenBLAS there when the product runs on one
 * thread (inside a parallel region, or below LMX_GEMM_SERIAL); the rest keeps the rule
 * above. Split over 2 threads (wall time, same machine) oneDNN wins those shapes too:
 * 128x512x512 92 against 73 GFLOP/s, 512x512x128 74 against 63, 20x36864x25 60 against 29,
 * and ResNet-18's batch-1 im2col products F x 256 x 9C 131 against 84 (128x256x64: 102
 * against 4); 50x4096x500 is the one where OpenBLAS is ahead (67 against 63).
 * float64 always runs on OpenBLAS. LUAMX_GEMM=openblas|dnnl|auto overrides (dnnl
 * still falls back to OpenBLAS when libdnnl.so.2 cannot be loaded).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/luamx.h"
#include "gemm_route.h"

int lmx_gemm_choose(int dt, int ta, int tb, int64_t m, int64_t n, int64_t k, int threads,
                    int mode, int have_dnnl, int avx512) {
  if (dt != LMX_FLOAT32 || !have_dnnl || mode == LMX_GEMM_OPENBLAS) return LMX_GEMM_LIB_OPENBLAS;
  if (mode == LMX_GEMM_DNNL) return LMX_GEMM_LIB_DNNL;
  if (k <= 16 || m <= 16 || (n <= 16 && m <= 64)) return LMX_GEMM_LIB_OPENBLAS;
  if ((double)m * (double)n * (double)k >= 1073741824.0) return LMX_GEMM_LIB_OPENBLAS;
  if (!avx512 && threads <= 1 && !tb && n % 256 == 0 && (!ta || k >= 64))
    return LMX_GEMM_LIB_OPENBLAS;
  return LMX_GEMM_LIB_DNNL;
}

static const char *const g_modes[] = {"auto", "openblas", "dnnl"};

int lmx_gemm_mode_parse(const char *name) {
  for (int i = 0; name && i < 3; i++)
    if (!strcmp(name, g_modes[i])) return i;
  return -1;
}

const char *lmx_gemm_mode_name(int mode) {
  return mode >= 0 && mode < 3 ? g_modes[mode] : "?";
}

/* Under AddressSanitizer the default is OpenBLAS alone: LeakSanitizer's check at exit
 * crashes ("Tracer caught signal 11") in a process where oneDNN's products ran on
 * several threads, so a sanitizer build runs oneDNN only when asked (LUAMX_GEMM=dnnl or
 * auto, or gemm_mode), as ctest's *_gemm_dnnl entries do, without the leak check. */
#if defined(__SANITIZE_ADDRESS__) /* gcc */
#define LMX_GEMM_ASAN 1
#elif defined(__has_feature) /* clang */
#if __has_feature(address_sanitizer)
#define LMX_GEMM_ASAN 1
#endif
#endif

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
#ifdef LMX_GEMM_ASAN
static int g_mode = LMX_GEMM_OPENBLAS;
static const char *g_source = "default under AddressSanitizer (LUAMX_GEMM unset)";
#else
static int g_mode;
static const char *g_source = "default (LUAMX_GEMM unset)";
#endif

static void init(void) {
  const char *e = getenv("LUAMX_GEMM");
  if (!e || !*e) return;
  int m = lmx_gemm_mode_parse(e);
  if (m < 0) {
#ifdef LMX_GEMM_ASAN
    g_source = "LUAMX_GEMM not understood (expected auto, openblas or dnnl): the default";
#else
    g_source = "LUAMX_GEMM not understood (expected auto, openblas or dnnl): auto";
#endif
    return;
  }
  __atomic_store_n(&g_mode, m, __ATOMIC_RELAXED);
  g_source = "LUAMX_GEMM";
}

int lmx_gemm_mode(void) {
  pthread_once(&g_once, init);
  return __atomic_load_n(&g_mode, __ATOMIC_RELAXED);
}

void lmx_gemm_set_mode(int mode) {
  pthread_once(&g_once, init);
  __atomic_store_n(&g_mode, mode, __ATOMIC_RELAXED);
  __atomic_store_n(&g_source, "set by mx.runtime.gemm_mode", __ATOMIC_RELAXED);
}

const char *lmx_gemm_mode_source(void) {
  pthread_once(&g_once, init);
  return __atomic_load_n(&g_source, __ATOMIC_RELAXED);
}

int lmx_gemm_route(int dt, int ta, int tb, int64_t m, int64_t n, int64_t k, int threads) {
  int mode = lmx_gemm_mode();
  if (dt != LMX_FLOAT32 || mode == LMX_GEMM_OPENBLAS) return LMX_GEMM_LIB_OPENBLAS;
  return lmx_gemm_choose(dt, ta, tb, m, n, k, threads, mode, lmx_gemm_dnnl_available(),
                         lmx_gemm_cpu_avx512());
}

int lmx_gemm_cpu_avx512(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") != 0;
#else
  return 0;
#endif
}
