/* test_vmath.c — accuracy and edge cases of the float32 exp, sigmoid and tanh kernels
 * (the AVX-512 loops of kernels/cpu/vmath_x86.c where the CPU has them, the portable
 * loops of elementwise.c elsewhere), against double-precision libm over a strided sweep
 * of every float32 bit pattern, plus the special values, the masked tails and the
 * accumulate / in-place modes. Prints "N passed, N failed"; exits non-zero on failure. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/cpu/cpu_kernels.h"
#include "luamx.h"

#include "check.h"

static double ref_sigmoid(double x) { return 1 / (1 + exp(-x)); }

static float from_bits(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

/* Largest relative error of op over float32 inputs taken every `stride` bit patterns
 * (both signs, all exponents), skipping NaNs and references below `floor` in
 * magnitude (where the kernels saturate to a tiny finite value by design). */
static double sweep(int op, double (*ref)(double), uint32_t stride, double floor,
                    float *worst_x) {
  enum { N = 1 << 16 };
  static float x[N], y[N];
  double worst = 0;
  uint64_t b = 0;
  while (b < 0x100000000ull) {
    int n = 0;
    for (; n < N && b < 0x100000000ull; b += stride) {
      float v = from_bits((uint32_t)b);
      if (v == v) x[n++] = v;
    }
    lmx_cpu_unary(op, LMX_FLOAT32, n, y, x, 0);
    for (int i = 0; i < n; i++) {
      double t = ref(x[i]);
      if (fabs(t) < floor) continue;
      double e = fabs(y[i] - t) / fabs(t);
      if (e > worst) worst = e, *worst_x = x[i];
    }
  }
  return worst;
}

static void test_accuracy(void) {
  float wx = 0;
  double e = sweep(LMX_UN_SIGMOID, ref_sigmoid, 251, 1e-37, &wx);
  CHECK(e <= 3e-7, "sigmoid max relative error %.3g at x = %.9g", e, wx);
  printf("sigmoid: max relative error %.3g at x = %.9g\n", e, wx);
  e = sweep(LMX_UN_TANH, tanh, 251, 1e-37, &wx);
  printf("tanh: max relative error %.3g at x = %.9g\n", e, wx);
  CHECK(e <= 3e-7, "tanh max relative error %.3g at x = %.9g", e, wx);
  /* exp over its finite range (beyond it the kernel clamps; specs check saturation) */
  float x[4096], y[4096];
  double worst = 0;
  for (int i = 0; i < 4096; i++) x[i] = -87.0f + 175.0f * (float)i / 4095.0f;
  lmx_cpu_unary(LMX_UN_EXP, LMX_FLOAT32, 4096, y, x, 0);
  for (int i = 0; i < 4096; i++) {
    double t = exp((double)x[i]), r = fabs(y[i] - t) / t;
    if (r > worst) worst = r, wx = x[i];
  }
  CHECK(worst <= 3e-7, "exp max relative error %.3g at x = %.9g", worst, wx);
}

static void test_special_values(void) {
  float x[8] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e30f, -1e30f, 9.5f}, y[8];
  lmx_cpu_unary(LMX_UN_SIGMOID, LMX_FLOAT32, 8, y, x, 0);
  CHECK(y[0] != y[0], "sigmoid(NaN) = %g", y[0]);
  CHECK(y[1] == 1.0f && y[5] == 1.0f, "sigmoid(+big) = %g, %g", y[1], y[5]);
  CHECK(y[2] >= 0.0f && y[2] < 1e-37f && y[6] >= 0.0f && y[6] < 1e-37f,
        "sigmoid(-big) = %g, %g", y[2], y[6]);
  CHECK(y[3] == 0.5f && y[4] == 0.5f, "sigmoid(+-0) = %g, %g", y[3], y[4]);
  lmx_cpu_unary(LMX_UN_TANH, LMX_FLOAT32, 8, y, x, 0);
  CHECK(y[0] != y[0], "tanh(NaN) = %g", y[0]);
  CHECK(y[1] == 1.0f && y[2] == -1.0f && y[5] == 1.0f && y[6] == -1.0f && y[7] == 1.0f,
        "tanh saturation: %g %g %g %g %g", y[1], y[2], y[5], y[6], y[7]);
  CHECK(y[3] == 0.0f && !signbit(y[3]) && y[4] == 0.0f && signbit(y[4]),
        "tanh keeps the sign of zero: %g %g", y[3], y[4]);
}

/* Every length up to 70 (the vector loop's 32- and 16-wide steps and the masked tail),
 * in-place, and accumulating: each element equals the one computed alone. */
static void test_lengths_and_modes(void) {
  int ops[2] = {LMX_UN_SIGMOID, LMX_UN_TANH};
  for (int k = 0; k < 2; k++) {
    int bad = 0;
    for (int n = 1; n <= 70 && !bad; n++) {
      float x[70], y[71], z[70], one;
      y[n] = 12345.0f; /* sentinel past the end */
      for (int i = 0; i < n; i++) x[i] = (float)(i - 35) * 0.37f;
      lmx_cpu_unary(ops[k], LMX_FLOAT32, n, y, x, 0);
      for (int i = 0; i < n; i++) {
        lmx_cpu_unary(ops[k], LMX_FLOAT32, 1, &one, &x[i], 0);
        if (one != y[i]) bad = 1;
        z[i] = 1.0f;
      }
      if (y[n] != 12345.0f) bad = 2;
      lmx_cpu_unary(ops[k], LMX_FLOAT32, n, z, x, 1);
      for (int i = 0; i < n; i++)
        if (z[i] != 1.0f + y[i]) bad = 3;
      memcpy(z, x, sizeof(float) * (size_t)n);
      lmx_cpu_unary(ops[k], LMX_FLOAT32, n, z, z, 0);
      if (memcmp(z, y, sizeof(float) * (size_t)n) != 0) bad = 4;
      CHECK(!bad, "op %d, n = %d: failure kind %d", ops[k], n, bad);
    }
  }
}

/* Past the OpenMP threshold the array is split into blocks; the result must not depend
 * on the split. */
static void test_parallel_blocks(void) {
  int64_t n = 300001;
  float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n);
  if (!x || !y) {
    free(x), free(y);
    CHECK(0, "out of memory");
    return;
  }
  for (int64_t i = 0; i < n; i++) x[i] = (float)((i * 7919) % 20001 - 10000) * 1e-3f;
  lmx_cpu_unary(LMX_UN_TANH, LMX_FLOAT32, n, y, x, 0);
  int bad = 0;
  for (int64_t i = 0; i < n; i += 997) {
    float one;
    lmx_cpu_unary(LMX_UN_TANH, LMX_FLOAT32, 1, &one, &x[i], 0);
    if (one != y[i]) bad++;
  }
  float last;
  lmx_cpu_unary(LMX_UN_TANH, LMX_FLOAT32, 1, &last, &x[n - 1], 0);
  CHECK(!bad && last == y[n - 1], "%d blocked results differ", bad);
  free(x), free(y);
}

int main(void) {
  float probe = 0, out;
  printf("vector path: %s\n",
         lmx_cpu_vmath_f32(LMX_UN_SIGMOID, 1, &out, &probe, 0) ? "AVX-512" : "portable");
  test_accuracy();
  test_special_values();
  test_lengths_and_modes();
  test_parallel_blocks();
  return check_summary();
}
