/* cu_check.h — shared by the CUDA kernel tests (tests/test_cu_*.c): check counters,
 * random data, and the comparison of a kernel's output with the CPU primitive's, by
 * dtype. The kernels run on the CUDA simulator (-DLUAMX_CUDA=SIM), where device pointers
 * are host pointers; in any other build the tests report themselves skipped. */
#ifndef LMX_TESTS_CU_CHECK_H
#define LMX_TESTS_CU_CHECK_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "luamx.h"
#include "tensor/dtype.h"

static int g_pass, g_fail;
#define CHECK(cond, ...)                                                                  \
  do {                                                                                   \
    if (cond) g_pass++;                                                                  \
    else {                                                                               \
      if (g_fail++ < 40) {                                                               \
        fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);         \
        fprintf(stderr, __VA_ARGS__);                                                    \
        fputc('\n', stderr);                                                             \
      }                                                                                  \
    }                                                                                    \
  } while (0)

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static inline double urand(double lo, double hi) {
  g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
  return lo + (hi - lo) * (double)(g_rng >> 11) * (1.0 / 9007199254740992.0);
}
static inline int64_t irand(int64_t n) { return (int64_t)urand(0, (double)n) % (n > 0 ? n : 1); }

/* n elements of dtype dt, uniform in [lo, hi), plus room for one element of offset */
static inline void *rand_buf(int dt, int64_t n, double lo, double hi) {
  void *p = calloc((size_t)(n + 2), 8);
  for (int64_t i = 0; i < n; i++) lmx_store_f64(p, dt, i, urand(lo, hi));
  return p;
}

/* Largest |a - b| / max(1, |b|) over n elements, NaN matching NaN; counts mismatched NaNs
 * as infinite. */
static inline double max_err(int dt, int64_t n, const void *a, const void *b) {
  double worst = 0;
  for (int64_t i = 0; i < n; i++) {
    double x = lmx_load_f64(a, dt, i), y = lmx_load_f64(b, dt, i);
    if (isnan(x) || isnan(y)) {
      if (!(isnan(x) && isnan(y))) return INFINITY;
      continue;
    }
    if (isinf(x) || isinf(y)) {
      if (x != y) return INFINITY;
      continue;
    }
    double e = fabs(x - y) / (fabs(y) > 1 ? fabs(y) : 1);
    if (e > worst) worst = e;
  }
  return worst;
}

/* tolerance of a kernel-vs-CPU comparison by dtype */
static inline double tol_of(int dt) {
  return dt == LMX_FLOAT64 ? 1e-12 : dt == LMX_FLOAT16 ? 2e-3 : 2e-5;
}

#ifdef LUAMX_CUDA_SIM
#define CU_TEST_MAIN_BEGIN int main(void) {
#define CU_TEST_MAIN_END                                                                  \
  printf("%d passed, %d failed\n", g_pass, g_fail);                                      \
  return g_fail ? 1 : 0;                                                                  \
  }
#endif

#endif
