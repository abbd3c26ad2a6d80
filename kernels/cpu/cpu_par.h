/* cpu_par.h — private helpers of the CPU kernels: parallel loops with a size threshold.
 *
 * LMX_PAR_FOR runs a loop body with OpenMP only when the trip count reaches a threshold,
 * so small arrays pay no thread start-up (the serial branch is a plain loop the compiler
 * vectorises). The threshold is in elements of simple work, measured with bench/ops.lua
 * on the 2-core machines: a fork/join costs a few µs on an idle machine and up to a
 * scheduler slice when the other core is busy, while a second core adds at most ~1.5x
 * to a memory-bound loop, so only arrays past the L2 size (256k floats) go parallel.
 * Parallel regions here never call BLAS, so they never nest with OpenBLAS's own pool.
 */
#ifndef LMX_KERNELS_CPU_PAR_H
#define LMX_KERNELS_CPU_PAR_H

#include <omp.h>
#include <stdint.h>

enum { LMX_OMP_MIN = 262144 };

/* Compute-bound float loops (exp, tanh, sigmoid, ...) get one clone per x86-64 vector
 * width, chosen at load time by the CPU (ifunc), so AVX-512 machines use 16 lanes while
 * the library still runs on any x86-64. Elsewhere it expands to nothing. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LMX_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define LMX_SIMD_CLONES
#endif

/* The dtype code of a float32 / float64 loop's element type T (the kernels' macros). */
#define LMX_CPU_DT_OF(T) (sizeof(T) == sizeof(float) ? LMX_FLOAT32 : LMX_FLOAT64)

#define LMX_PAR_FOR(n, i, ...)                                            \
  do {                                                                     \
    int64_t lmx_pn_ = (n);                                                 \
    if (lmx_pn_ >= LMX_OMP_MIN) {                                          \
      _Pragma("omp parallel for schedule(static)")                         \
      for (int64_t i = 0; i < lmx_pn_; i++) { __VA_ARGS__ }                \
    } else {                                                               \
      for (int64_t i = 0; i < lmx_pn_; i++) { __VA_ARGS__ }                \
    }                                                                      \
  } while (0)

/* Subnormal numbers flushed to zero (FTZ) and read as zero (DAZ) on x86 while a thread
 * runs the loop, the thread's previous mode restored after. For the optimizers' updates
 * (optim.c, optim_lamb.c): a momentum or moment whose gradient stays 0 (a dead ReLU unit)
 * decays by a constant factor each step through the subnormal range, where x86 arithmetic
 * takes a microcode assist per operation. Measured on the Intel Xeon (family 6 model 207),
 * W1 trained for 1500 / 3000 steps: the updates grew from 10 % to 44 % / 42 % of the step
 * (perf: the SGD momentum loop), 74k -> 58k / 53k samples/s; flushed, 72k / 71k. Only
 * values below 2^-126 (float32; 2^-1022 float64) change, to 0. */
#if defined(__x86_64__) && defined(__SSE__)
#include <xmmintrin.h>
static inline unsigned lmx_ftz_on(void) {
  unsigned old = _mm_getcsr();
  _mm_setcsr(old | 0x8040u); /* FTZ (bit 15) | DAZ (bit 6) */
  return old;
}
static inline void lmx_ftz_off(unsigned old) { _mm_setcsr(old); }
#else
static inline unsigned lmx_ftz_on(void) { return 0; }
static inline void lmx_ftz_off(unsigned old) { (void)old; }
#endif

#define LMX_PAR_FOR_FTZ(n, i, ...)                                        \
  do {                                                                     \
    int64_t lmx_pn_ = (n);                                                 \
    if (lmx_pn_ >= LMX_OMP_MIN) {                                          \
      _Pragma("omp parallel") {                                            \
        unsigned lmx_csr_ = lmx_ftz_on();                                  \
        _Pragma("omp for schedule(static)")                                \
        for (int64_t i = 0; i < lmx_pn_; i++) { __VA_ARGS__ }              \
        lmx_ftz_off(lmx_csr_);                                             \
      }                                                                    \
    } else {                                                               \
      unsigned lmx_csr_ = lmx_ftz_on();                                    \
      for (int64_t i = 0; i < lmx_pn_; i++) { __VA_ARGS__ }                \
      lmx_ftz_off(lmx_csr_);                                               \
    }                                                                      \
  } while (0)

/* Same, with a work estimate `w` per iteration (rows of length w count as w elements). */
#define LMX_PAR_FOR_W(n, w, i, ...) LMX_PAR_FOR_WM(n, w, LMX_OMP_MIN, i, __VA_ARGS__)

/* Same, from `min` elements. */
#define LMX_PAR_FOR_WM(n, w, min, i, ...)                                  \
  do {                                                                     \
    int64_t lmx_pn_ = (n);                                                 \
    if (lmx_pn_ > 1 && lmx_pn_ * (int64_t)(w) >= (min)) {                  \
      _Pragma("omp parallel for schedule(static)")                         \
      for (int64_t i = 0; i < lmx_pn_; i++) { __VA_ARGS__ }                \
    } else {                                                               \
      for (int64_t i = 0; i < lmx_pn_; i++) { __VA_ARGS__ }                \
    }                                                                      \
  } while (0)

/* The threshold of the copy-like steps that feed a product run on every thread (at batch
 * 1: im2col and the Winograd transforms) when no region is open (else the general one,
 * which then means one thread): the other threads are still spinning from the last
 * product, so a fork costs little, and these steps had run on one core while the others
 * waited (ResNet-18 at batch 1 measured faster split from here; bench/README.md).
 * BatchNorm's forward split from here measured level on MobileNet v2 at batch 1, so it
 * keeps LMX_OMP_MIN. */
enum { LMX_OMP_MIN_STREAM = 32768 };
/* LMX_OMP_MIN_STREAM outside a region, LMX_OMP_MIN inside (the `min` of LMX_PAR_FOR_WM). */
#define LMX_OMP_MIN_FREE \
  (omp_get_level() == 0 ? (int64_t)LMX_OMP_MIN_STREAM : (int64_t)LMX_OMP_MIN)

#endif
