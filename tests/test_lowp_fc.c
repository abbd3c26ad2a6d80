/* test_lowp_fc.c — bfloat16 FullyConnected on the CPU, both paths:
 * the AVX512_BF16 kernel (kernels/cpu/lowp_bf16.c, where the CPU has it) and the
 * float32 fallback (widen, float32 GEMM, round once), each against a float64 reference
 * computed from the same bfloat16 values. Shapes cover the kernel's edges: k below,
 * at and past a multiple of 32 (masked tails), rows and columns not multiples of the
 * 4 x 4 block, one that runs in parallel, with and without bias, and accumulation
 * (req add). Backward (data, weight and bias gradients, fresh and accumulated) on the
 * fast path against float64 as well. The fast path's switch: forced off it refuses and writes
 * nothing. Tolerance: bfloat16 rounding of the result (half an ulp: up to 2^-8 relative) plus twice
 * the float32 summation bound ((k + 2) * 2^-24 of the sum of |products|). Prints "N passed, N
 * failed" and exits non-zero on failure. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/cpu/cpu_kernels.h"
#include "luamx.h"
#include "tensor/dtype.h"

#include "check.h"

static uint32_t g_seed = 12345;

/* a bfloat16 in [-2, 2) (some exact zeros and tiny values too) */
static uint16_t rnd_bf16(void) {
  g_seed = g_seed * 1664525u + 1013904223u;
  uint32_t r = g_seed >> 8;
  if (r % 97 == 0) return 0;
  float f = (float)((double)r / (double)(1u << 24) * 4.0 - 2.0);
  if (r % 89 == 0) f *= 1e-3f;
  return lmx_f32_to_bf16(f);
}

typedef struct {
  int64_t m, k, n;
} dims;

/* max over outputs of |y - ref| / tolerance; > 1 fails */
static double worst(const dims *d, const uint16_t *y, const uint16_t *x, const uint16_t *w,
                    const uint16_t *b, const uint16_t *y0) {
  double bad = 0;
  for (int64_t i = 0; i < d->m; i++)
    for (int64_t j = 0; j < d->n; j++) {
      double ref = 0, mag = 0;
      for (int64_t p = 0; p < d->k; p++) {
        double t = (double)lmx_bf16_to_f32(x[i * d->k + p]) * lmx_bf16_to_f32(w[j * d->k + p]);
        ref += t, mag += fabs(t);
      }
      if (b) ref += lmx_bf16_to_f32(b[j]), mag += fabs(lmx_bf16_to_f32(b[j]));
      if (y0)
        ref += lmx_bf16_to_f32(y0[i * d->n + j]), mag += fabs(lmx_bf16_to_f32(y0[i * d->n + j]));
      double tol = fabs(ref) * 0x1p-8 + 2 * (double)(d->k + 2) * 0x1p-24 * mag + 0x1p-126;
      double err = fabs((double)lmx_bf16_to_f32(y[i * d->n + j]) - ref) / tol;
      if (err > bad) bad = err;
    }
  return bad;
}

/* The fallback's arithmetic: widen, float32 FC, round once. */
static void fallback(const dims *d, uint16_t *y, const uint16_t *x, const uint16_t *w,
                     const uint16_t *b, int acc) {
  float *x32 = malloc((size_t)(d->m * d->k) * 4), *w32 = malloc((size_t)(d->n * d->k) * 4);
  float *b32 = malloc((size_t)d->n * 4), *y32 = malloc((size_t)(d->m * d->n) * 4);
  lmx_cpu_convert(x32, LMX_FLOAT32, x, LMX_BFLOAT16, d->m * d->k);
  lmx_cpu_convert(w32, LMX_FLOAT32, w, LMX_BFLOAT16, d->n * d->k);
  if (b) lmx_cpu_convert(b32, LMX_FLOAT32, b, LMX_BFLOAT16, d->n);
  lmx_cpu_convert(y32, LMX_FLOAT32, y, LMX_BFLOAT16, d->m * d->n);
  lmx_cpu_fc_fwd(LMX_FLOAT32, d->m, d->k, d->n, y32, x32, w32, b ? b32 : NULL, acc);
  lmx_cpu_convert(y, LMX_BFLOAT16, y32, LMX_FLOAT32, d->m * d->n);
  free(x32), free(w32), free(b32), free(y32);
}

static void one_shape(const dims *d, int fast) {
  size_t nx = (size_t)(d->m * d->k), nw = (size_t)(d->n * d->k), ny = (size_t)(d->m * d->n);
  uint16_t *x = malloc(nx * 2), *w = malloc(nw * 2), *b = malloc((size_t)d->n * 2);
  uint16_t *y = malloc(ny * 2), *yf = malloc(ny * 2), *y0 = malloc(ny * 2);
  for (size_t i = 0; i < nx; i++) x[i] = rnd_bf16();
  for (size_t i = 0; i < nw; i++) w[i] = rnd_bf16();
  for (int64_t i = 0; i < d->n; i++) b[i] = rnd_bf16();
  for (size_t i = 0; i < ny; i++) y0[i] = rnd_bf16();
  for (int bias = 0; bias < 2; bias++) {
    const uint16_t *bb = bias ? b : NULL;
    memset(yf, 0, ny * 2);
    fallback(d, yf, x, w, bb, 0);
    double e = worst(d, yf, x, w, bb, NULL);
    CHECK(e <= 1, "fallback m=%lld k=%lld n=%lld bias=%d: error %.3g x tolerance", (long long)d->m,
          (long long)d->k, (long long)d->n, bias, e);
    if (!fast) continue;
    memset(y, 0xff, ny * 2); /* NaN bits: every output must be written */
    CHECK(lmx_cpu_bf16_fc(d->m, d->k, d->n, y, x, w, bb, 0) == 0);
    e = worst(d, y, x, w, bb, NULL);
    CHECK(e <= 1, "avx512_bf16 m=%lld k=%lld n=%lld bias=%d: error %.3g x tolerance",
          (long long)d->m, (long long)d->k, (long long)d->n, bias, e);
    memcpy(y, y0, ny * 2); /* req add: y0 + x wᵀ + b, one rounding */
    CHECK(lmx_cpu_bf16_fc(d->m, d->k, d->n, y, x, w, bb, 1) == 0);
    e = worst(d, y, x, w, bb, y0);
    CHECK(e <= 1, "avx512_bf16 add m=%lld k=%lld n=%lld bias=%d: error %.3g x tolerance",
          (long long)d->m, (long long)d->k, (long long)d->n, bias, e);
  }
  free(x), free(w), free(b), free(y), free(yf), free(y0);
}

/* |got - ref| against the same tolerance as `worst`, for one value summed over kk terms */
static double ratio(uint16_t got, double ref, double mag, int64_t kk) {
  double tol = fabs(ref) * 0x1p-8 + 2 * (double)(kk + 2) * 0x1p-24 * mag + 0x1p-126;
  return fabs((double)lmx_bf16_to_f32(got) - ref) / tol;
}

static double bf(const uint16_t *p, int64_t i) {
  return lmx_bf16_to_f32(p[i]);
}

/* Backward: gx = g·w, gw = gᵀ·x, gb = column sums of g, fresh and accumulated. */
static void one_backward(const dims *d) {
  int64_t m = d->m, k = d->k, n = d->n;
  uint16_t *g = malloc((size_t)(m * n) * 2), *x = malloc((size_t)(m * k) * 2);
  uint16_t *w = malloc((size_t)(n * k) * 2), *gx = malloc((size_t)(m * k) * 2);
  uint16_t *gw = malloc((size_t)(n * k) * 2), *gb = malloc((size_t)n * 2);
  uint16_t *ox = malloc((size_t)(m * k) * 2), *ow = malloc((size_t)(n * k) * 2);
  uint16_t *ob = malloc((size_t)n * 2);
  int64_t t1 = n * k, t2 = m * n + m * k;
  uint16_t *tmp = malloc((size_t)(t1 > t2 ? t1 : t2) * 2);
  for (int64_t i = 0; i < m * n; i++) g[i] = rnd_bf16();
  for (int64_t i = 0; i < m * k; i++) x[i] = rnd_bf16(), ox[i] = rnd_bf16();
  for (int64_t i = 0; i < n * k; i++) w[i] = rnd_bf16(), ow[i] = rnd_bf16();
  for (int64_t i = 0; i < n; i++) ob[i] = rnd_bf16();
  for (int acc = 0; acc < 2; acc++) {
    memcpy(gx, ox, (size_t)(m * k) * 2), memcpy(gw, ow, (size_t)(n * k) * 2);
    memcpy(gb, ob, (size_t)n * 2);
    CHECK(lmx_cpu_bf16_fc_bwd(m, k, n, g, x, w, gx, acc, gw, acc, gb, acc, tmp) == 0);
    double ex = 0, ew = 0, eb = 0;
    for (int64_t i = 0; i < m; i++)
      for (int64_t p = 0; p < k; p++) {
        double r = acc ? bf(ox, i * k + p) : 0, mag = fabs(r);
        for (int64_t j = 0; j < n; j++)
          r += bf(g, i * n + j) * bf(w, j * k + p),
              mag += fabs(bf(g, i * n + j) * bf(w, j * k + p));
        double e = ratio(gx[i * k + p], r, mag, n);
        if (e > ex) ex = e;
      }
    for (int64_t j = 0; j < n; j++) {
      for (int64_t p = 0; p < k; p++) {
        double r = acc ? bf(ow, j * k + p) : 0, mag = fabs(r);
        for (int64_t i = 0; i < m; i++)
          r += bf(g, i * n + j) * bf(x, i * k + p),
              mag += fabs(bf(g, i * n + j) * bf(x, i * k + p));
        double e = ratio(gw[j * k + p], r, mag, m);
        if (e > ew) ew = e;
      }
      double r = acc ? bf(ob, j) : 0, mag = fabs(r);
      for (int64_t i = 0; i < m; i++) r += bf(g, i * n + j), mag += fabs(bf(g, i * n + j));
      double e = ratio(gb[j], r, mag, m);
      if (e > eb) eb = e;
    }
    CHECK(ex <= 1 && ew <= 1 && eb <= 1,
          "backward m=%lld k=%lld n=%lld acc=%d: errors gx %.3g gw %.3g gb %.3g x tolerance",
          (long long)m, (long long)k, (long long)n, acc, ex, ew, eb);
  }
  /* only the data gradient wanted: the others untouched */
  memcpy(gw, ow, (size_t)(n * k) * 2), memcpy(gb, ob, (size_t)n * 2);
  CHECK(lmx_cpu_bf16_fc_bwd(m, k, n, g, x, w, gx, 0, NULL, 0, NULL, 0, tmp) == 0);
  CHECK(!memcmp(gw, ow, (size_t)(n * k) * 2) && !memcmp(gb, ob, (size_t)n * 2));
  free(g), free(x), free(w), free(gx), free(gw), free(gb), free(ox), free(ow), free(ob);
  free(tmp);
}

/* Exact cases: small integers and halves, whose sums float32 and bfloat16 hold. */
static void exact(int fast) {
  if (!fast) return;
  enum { M = 3, K = 40, N = 5 };
  uint16_t x[M * K], w[N * K], b[N], y[M * N];
  for (int i = 0; i < M * K; i++) x[i] = lmx_f32_to_bf16((float)(i % 3) - 1.0f);
  for (int i = 0; i < N * K; i++) w[i] = lmx_f32_to_bf16((float)(i % 5) * 0.5f - 1.0f);
  for (int j = 0; j < N; j++) b[j] = lmx_f32_to_bf16((float)j);
  CHECK(lmx_cpu_bf16_fc(M, K, N, y, x, w, b, 0) == 0);
  int same = 1;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      float s = (float)j;
      for (int p = 0; p < K; p++)
        s += lmx_bf16_to_f32(x[i * K + p]) * lmx_bf16_to_f32(w[j * K + p]);
      if (lmx_bf16_to_f32(y[i * N + j]) != s) same = 0;
    }
  CHECK(same, "small-integer products must be exact");
}

int main(void) {
  uint64_t f = 0;
  lmx_cpu_features(&f);
  uint64_t need =
      (1ull << LMX_CPU_AVX512F) | (1ull << LMX_CPU_AVX512BW) | (1ull << LMX_CPU_AVX512_BF16);
  int fast = (f & need) == need;
  CHECK(lmx_cpu_bf16_dot_available() == fast);
  CHECK(strcmp(lmx_cpu_bf16_fc_path(), fast ? "avx512_bf16" : "float32") == 0);
  if (!fast) printf("no AVX512_BF16 here: the fast path's checks are skipped\n");
  static const dims shapes[] = {{1, 1, 1},   {3, 31, 5}, {4, 32, 4},    {7, 77, 13},
                                {9, 300, 6}, {2, 64, 9}, {64, 256, 70}, {130, 784, 33}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    one_shape(&shapes[i], fast);
    if (fast) one_backward(&shapes[i]);
  }
  exact(fast);

  /* the switch: forced off the kernel refuses and writes nothing; the report follows */
  uint16_t x[2] = {0x3f80, 0x3f80}, w[2] = {0x3f80, 0x3f80}, y[1] = {0x1234};
  CHECK(lmx_cpu_bf16_force_fallback(1) == LMX_OK);
  CHECK(strcmp(lmx_cpu_bf16_fc_path(), "float32") == 0);
  CHECK(lmx_cpu_bf16_fc(1, 2, 1, y, x, w, NULL, 0) == -1);
  CHECK(y[0] == 0x1234);
  uint16_t gx[2] = {7, 7}, tmp[4];
  CHECK(lmx_cpu_bf16_fc_bwd(1, 2, 1, y, x, w, gx, 0, NULL, 0, NULL, 0, tmp) == -1);
  CHECK(gx[0] == 7 && gx[1] == 7);
  CHECK(lmx_cpu_bf16_force_fallback(0) == LMX_OK);
  CHECK(strcmp(lmx_cpu_bf16_fc_path(), fast ? "avx512_bf16" : "float32") == 0);
  if (fast) {
    CHECK(lmx_cpu_bf16_fc(1, 2, 1, y, x, w, NULL, 0) == 0);
    CHECK(y[0] == 0x4000); /* 1*1 + 1*1 = 2 */
  }
  return check_summary();
}
