/* bench/fma_peak.c — the machine's float32 FMA peak, measured: the physical limit that
 * bench/report.lua sets every workload against ("% of FMA peak").
 *
 *   cc -O2 -fopenmp -o fma_peak bench/fma_peak.c && ./fma_peak [seconds per test]
 *
 * Each thread runs independent chains of vfmadd (acc = acc * a + b) with enough
 * accumulators to cover the FMA latency times the FMA units (latency 4 x 2 units = 8 in
 * flight on Skylake-SP, Sapphire Rapids and Zen 4/5; 12 ymm / 16 zmm chains here), in
 * AVX-512 (16 lanes) and AVX2 (8 lanes), on 1 and 2 threads (OpenMP). One FMA is 2 FLOPs.
 * Each thread times itself in its own CPU time (CLOCK_THREAD_CPUTIME_ID), and the rate is
 * the sum over the threads: the figure is what the cores do while they run, so it stays
 * the machine's limit when other processes share the cores (wall-clock figures on these
 * shared machines dropped to half of it). The best of 5 timings counts. Prints
 *   RESULT PEAK <avx512|avx2>_<n>t_gflops <GFLOP/s>
 *   RESULT PEAK best_<n>t_gflops <the best ISA's figure>
 * An ISA the CPU (or OS) lacks is skipped. Not a test: nothing asserts.
 */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static volatile float g_sink;

#define CHAIN16(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
#define CHAIN12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

/* iters x 16 chains x 16 lanes FMAs */
__attribute__((target("avx512f"))) static void loop512(long iters) {
  __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
#define DECL(i) __m512 c##i = _mm512_set1_ps((float)(i));
  CHAIN16(DECL)
#undef DECL
  for (long n = 0; n < iters; n++) {
#define STEP(i) c##i = _mm512_fmadd_ps(c##i, a, b);
    CHAIN16(STEP)
#undef STEP
    __asm__ volatile("" ::: "memory");
  }
  __m512 s = _mm512_setzero_ps();
#define SUM(i) s = _mm512_add_ps(s, c##i);
  CHAIN16(SUM)
#undef SUM
  g_sink = _mm512_reduce_add_ps(s);
}

/* iters x 12 chains x 8 lanes FMAs */
__attribute__((target("avx2,fma"))) static void loop256(long iters) {
  __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
#define DECL(i) __m256 c##i = _mm256_set1_ps((float)(i));
  CHAIN12(DECL)
#undef DECL
  for (long n = 0; n < iters; n++) {
#define STEP(i) c##i = _mm256_fmadd_ps(c##i, a, b);
    CHAIN12(STEP)
#undef STEP
    __asm__ volatile("" ::: "memory");
  }
  __m256 s = _mm256_setzero_ps();
#define SUM(i) s = _mm256_add_ps(s, c##i);
  CHAIN12(SUM)
#undef SUM
  float t[8];
  _mm256_storeu_ps(t, s);
  g_sink = t[0] + t[7];
}

/* GFLOP/s of `loop` on `threads` threads: each thread runs iters iterations, timed in its
 * own CPU time; the rate is the sum of the threads' best rates over 5 timings */
static double rate(void (*loop)(long), double flops_per_iter, int threads, double seconds) {
  long iters = 1000;
  for (;;) { /* calibrate on one thread to about seconds / 5 */
    double t0 = now();
    loop(iters);
    if (now() - t0 > seconds / 5 || iters > (1L << 40)) break;
    iters *= 2;
  }
  double total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
  {
    double best = 1e300;
    for (int rep = 0; rep < 5; rep++) {
      double t0 = now();
      loop(iters);
      double t = now() - t0;
      if (t < best) best = t;
    }
    total += flops_per_iter * (double)iters / best / 1e9;
  }
  return total;
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 0.5;
  __builtin_cpu_init();
  int has512 = __builtin_cpu_supports("avx512f"); /* checks the OS's zmm state as well */
  int has256 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  for (int threads = 1; threads <= 2; threads++) {
    double best = 0;
    if (has512) {
      double r = rate(loop512, 16.0 * 16 * 2, threads, seconds);
      printf("RESULT PEAK avx512_%dt_gflops %.1f\n", threads, r);
      if (r > best) best = r;
    }
    if (has256) {
      double r = rate(loop256, 12.0 * 8 * 2, threads, seconds);
      printf("RESULT PEAK avx2_%dt_gflops %.1f\n", threads, r);
      if (r > best) best = r;
    }
    if (best > 0) printf("RESULT PEAK best_%dt_gflops %.1f\n", threads, best);
    fflush(stdout);
  }
  return 0;
}
