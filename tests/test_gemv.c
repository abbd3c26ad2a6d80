/* test_gemv.c — float32 FullyConnected forward with few rows of x (kernels/cpu/gemv.c):
 * the AVX-512 and the AVX2 kernels (each where the CPU has it) and the forced sgemm path,
 * each against a float64 reference of the same float32 values. Shapes cover the kernels'
 * edges: k below, at and past a multiple of 16 and 8 (masked tails), n not a multiple of
 * the 8- or 4-row blocks (the last block repeats a row), odd m (the last pair repeats a
 * row of x), m from 1 to LMX_FC_SMALL_M where m·n·k >= 2^20 lets m > 1 in, weights large
 * enough for the rows to be split over threads, with and without bias, and accumulation
 * (req add). Every output must be written (NaN-filled before). Also: the kernel gives the
 * same bits with 1 and 2 threads and at m = 1 and m = 2; shapes it does not take and the
 * forced switch leave y untouched and return -1; the path it reports.
 * Tolerance: twice the float32 summation bound, (k + 2) * 2^-24 of the sum of |terms|.
 * Prints "N passed, N failed" and exits non-zero on failure. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/cpu/cpu_kernels.h"
#include "luamx.h"
#include "tensor/dtype.h"

#include "check.h"

static uint32_t g_seed = 4242;

/* a float in [-1, 1) (some exact zeros and tiny values too) */
static float rnd(void) {
  g_seed = g_seed * 1664525u + 1013904223u;
  uint32_t r = g_seed >> 8;
  if (r % 97 == 0) return 0.0f;
  float f = (float)((double)r / (double)(1u << 24) * 2.0 - 1.0);
  return r % 89 == 0 ? f * 1e-3f : f;
}

typedef struct {
  int64_t m, k, n;
} dims;

/* max over outputs of |y - ref| / tolerance; > 1 fails (NaN counts as a failure) */
static double worst(const dims *d, const float *y, const float *x, const float *w, const float *b,
                    const float *y0) {
  double bad = 0;
  for (int64_t i = 0; i < d->m; i++)
    for (int64_t j = 0; j < d->n; j++) {
      double ref = 0, mag = 0;
      for (int64_t p = 0; p < d->k; p++) {
        double t = (double)x[i * d->k + p] * w[j * d->k + p];
        ref += t, mag += fabs(t);
      }
      if (b) ref += b[j], mag += fabs(b[j]);
      if (y0) ref += y0[i * d->n + j], mag += fabs(y0[i * d->n + j]);
      double tol = 2 * (double)(d->k + 2) * 0x1p-24 * mag + 0x1p-126;
      double err = fabs((double)y[i * d->n + j] - ref) / tol;
      if (!(err <= bad)) bad = isnan(err) ? INFINITY : err;
    }
  return bad;
}

static float *fresh(size_t n) {
  float *p = malloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++) p[i] = rnd();
  return p;
}

/* Does the small path take this shape (as gemv.c decides)? */
static int taken(const dims *d) {
  return d->m == 1 || (d->m <= LMX_FC_SMALL_M && d->m * d->n * d->k >= (1 << 20));
}

/* every path on one shape: `level` caps the kernel's ISA (2 AVX-512, 1 AVX2, 0 the sgemm) */
static void one_shape(const dims *d, int level, const char *name) {
  size_t nx = (size_t)(d->m * d->k), nw = (size_t)(d->n * d->k), ny = (size_t)(d->m * d->n);
  float *x = fresh(nx), *w = fresh(nw), *b = fresh((size_t)d->n), *y0 = fresh(ny);
  float *y = malloc(ny * sizeof(float));
  lmx_cpu_fc_small_cap_isa(level);
  for (int bias = 0; bias < 2; bias++)
    for (int acc = 0; acc < 2; acc++) {
      const float *bb = bias ? b : NULL;
      if (acc)
        memcpy(y, y0, ny * sizeof(float));
      else
        memset(y, 0xff, ny * sizeof(float)); /* NaN: every output must be written */
      int rc = lmx_cpu_fc_small_f32(d->m, d->k, d->n, y, x, w, bb, acc);
      CHECK(rc == (level > 0 && taken(d) ? 0 : -1), "%s m=%lld k=%lld n=%lld: returned %d", name,
            (long long)d->m, (long long)d->k, (long long)d->n, rc);
      if (rc != 0) lmx_cpu_fc_fwd(LMX_FLOAT32, d->m, d->k, d->n, y, x, w, bb, acc);
      double e = worst(d, y, x, w, bb, acc ? y0 : NULL);
      CHECK(e <= 1, "%s m=%lld k=%lld n=%lld bias=%d acc=%d: error %.3g x tolerance", name,
            (long long)d->m, (long long)d->k, (long long)d->n, bias, acc, e);
    }
  lmx_cpu_fc_small_cap_isa(2);
  free(x), free(w), free(b), free(y0), free(y);
}

/* 1 and 2 threads, and m = 1 against the first row of m = 2: the same bits */
static void deterministic(int level, const char *name) {
  enum { K = 784, N = 1001 }; /* 3 MB of weights: split over threads; N odd */
  float *x = fresh(2 * K), *w = fresh((size_t)N * K), *b = fresh(N);
  float *y1 = malloc(2 * N * sizeof(float)), *y2 = malloc(2 * N * sizeof(float));
  lmx_cpu_fc_small_cap_isa(level);
  int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  CHECK(lmx_cpu_fc_small_f32(1, K, N, y1, x, w, b, 0) == 0);
  omp_set_num_threads(2);
  CHECK(lmx_cpu_fc_small_f32(1, K, N, y2, x, w, b, 0) == 0);
  CHECK(!memcmp(y1, y2, N * sizeof(float)), "%s: 1 and 2 threads differ", name);
  CHECK(lmx_cpu_fc_small_f32(2, K, N, y2, x, w, b, 0) == 0);
  CHECK(!memcmp(y1, y2, N * sizeof(float)), "%s: m = 1 and the first row of m = 2 differ", name);
  omp_set_num_threads(threads);
  lmx_cpu_fc_small_cap_isa(2);
  free(x), free(w), free(b), free(y1), free(y2);
}

/* Small integers and halves: every order of summation gives the exact float32 result. */
static void exact(int level) {
  enum { K = 37, N = 11 };
  float x[K], w[N * K], b[N], y[N];
  for (int p = 0; p < K; p++) x[p] = (float)(p % 3) - 1.0f;
  for (int i = 0; i < N * K; i++) w[i] = (float)(i % 5) * 0.5f - 1.0f;
  for (int j = 0; j < N; j++) b[j] = (float)j;
  lmx_cpu_fc_small_cap_isa(level);
  CHECK(lmx_cpu_fc_small_f32(1, K, N, y, x, w, b, 0) == 0);
  int same = 1;
  for (int j = 0; j < N; j++) {
    float s = (float)j;
    for (int p = 0; p < K; p++) s += x[p] * w[j * K + p];
    if (y[j] != s) same = 0;
  }
  CHECK(same, "level %d: small-integer products must be exact", level);
  lmx_cpu_fc_small_cap_isa(2);
}

int main(void) {
  uint64_t f = 0;
  lmx_cpu_features(&f);
  uint64_t avx2 = (1ull << LMX_CPU_AVX2) | (1ull << LMX_CPU_FMA);
  int has512 = (f >> LMX_CPU_AVX512F) & 1, has2 = (f & avx2) == avx2;
  const char *best = has512 ? "avx512f" : has2 ? "avx2" : "blas";
  CHECK(strcmp(lmx_cpu_fc_small_path(), best) == 0, "path %s, expected %s", lmx_cpu_fc_small_path(),
        best);
  if (!has512) printf("no AVX-512F here: its checks are skipped\n");
  if (!has2) printf("no AVX2+FMA here: its checks are skipped\n");

  static const dims shapes[] = {
      {1, 1, 1},     {1, 15, 7},    {1, 16, 8},     {1, 17, 9},    {1, 33, 23},    {1, 784, 512},
      {1, 512, 10},  {1, 500, 800}, {1, 1000, 333}, {2, 784, 512}, {3, 784, 512},  {5, 523, 401},
      {8, 300, 450}, {9, 784, 512}, {2, 64, 9},     {4, 100, 100}, {1, 2049, 130}, {7, 1025, 147},
  };
  for (int level = 0; level <= 2; level++) {
    if ((level == 2 && !has512) || (level == 1 && !has2)) continue;
    const char *name = level == 2 ? "avx512f" : level == 1 ? "avx2" : "sgemm";
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
      one_shape(&shapes[i], level, name);
    if (level > 0) deterministic(level, name), exact(level);
  }

  /* forced to the sgemm: the kernel refuses and writes nothing; the report follows */
  float x[3] = {1, 2, 3}, w[3] = {1, 1, 1}, y[1] = {-7};
  CHECK(lmx_cpu_fc_force_blas(1) == LMX_OK);
  CHECK(strcmp(lmx_cpu_fc_small_path(), "blas") == 0);
  CHECK(lmx_cpu_fc_small_f32(1, 3, 1, y, x, w, NULL, 0) == -1);
  CHECK(y[0] == -7.0f);
  lmx_cpu_fc_fwd(LMX_FLOAT32, 1, 3, 1, y, x, w, NULL, 0); /* the sgemm still runs */
  CHECK(y[0] == 6.0f);
  CHECK(lmx_cpu_fc_force_blas(0) == LMX_OK);
  CHECK(strcmp(lmx_cpu_fc_small_path(), best) == 0);
  /* shapes it does not take: empty dimensions, m past the limit, small m·n·k at m > 1 */
  y[0] = -7;
  CHECK(lmx_cpu_fc_small_f32(1, 0, 1, y, x, w, NULL, 0) == -1 && y[0] == -7.0f);
  CHECK(lmx_cpu_fc_small_f32(LMX_FC_SMALL_M + 1, 1 << 12, 1 << 12, y, x, w, NULL, 0) == -1);
  CHECK(lmx_cpu_fc_small_f32(2, 3, 1, y, x, w, NULL, 0) == -1 && y[0] == -7.0f);
  if (has2) {
    CHECK(lmx_cpu_fc_small_f32(1, 3, 1, y, x, w, NULL, 1) == 0);
    CHECK(y[0] == -1.0f); /* -7 + 6 */
  }
  return check_summary();
}
