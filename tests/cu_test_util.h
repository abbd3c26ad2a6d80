/* cu_test_util.h — what the tests of the CUDA kernel launchers (tests/test_cu_*.c) share:
 * the check macro (tests/check.h), a small deterministic generator, float16 copies and
 * comparisons. */
#ifndef LMX_TESTS_CU_TEST_UTIL_H
#define LMX_TESTS_CU_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tensor/dtype.h"

static inline double frand(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (double)((*s >> 8) & 0xffff) / 32768.0 - 1.0;
}
static inline float *rnd(int64_t n, unsigned *s) {
  float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
  for (int64_t i = 0; i < n; i++) p[i] = (float)frand(s);
  return p;
}
static inline float *dup(const float *x, int64_t n) {
  float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
  memcpy(p, x, (size_t)n * sizeof(float));
  return p;
}
static inline uint16_t *to16(const float *x, int64_t n) {
  uint16_t *h = malloc((size_t)(n > 0 ? n : 1) * 2);
  for (int64_t i = 0; i < n; i++) h[i] = lmx_f32_to_f16(x[i]);
  return h;
}
/* x rounded to float16 and back, in place (so CPU float32 references see the same data) */
static inline void round16(float *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) x[i] = lmx_f16_to_f32(lmx_f32_to_f16(x[i]));
}
/* max |a - b| relative to max(1, |b|) */
static inline double reldiff(const float *a, const float *b, int64_t n) {
  double w = 0;
  for (int64_t i = 0; i < n; i++) {
    if (a[i] == b[i]) continue; /* also equal infinities */
    double d = fabs((double)a[i] - b[i]) / fmax(1.0, fabs((double)b[i]));
    if (d > w || d != d) w = d != d ? INFINITY : d;
  }
  return w;
}
static inline double reldiff16(const uint16_t *a, const float *b, int64_t n) {
  double w = 0;
  for (int64_t i = 0; i < n; i++) {
    double v = lmx_f16_to_f32(a[i]);
    if (v == b[i]) continue;
    double d = fabs(v - b[i]) / fmax(1.0, fabs((double)b[i]));
    if (d > w || d != d) w = d != d ? INFINITY : d;
  }
  return w;
}

#endif
