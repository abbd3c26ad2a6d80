/* test_winograd.c — the Winograd F(2x2, 3x3) and F(4x4, 3x3) transforms
 * (kernels/cpu/winograd*.c) composed with plain products into a convolution, its data
 * gradient and its weight gradient, each against a direct float64 loop of the same float32
 * values. F(4x4) rounds more (points ±2): the weight gradient of a 32x32 plane is within
 * 3e-5 relative, so its tolerance is 1e-4 (2e-5 elsewhere). Every buffer is allocated at
 * exactly the size the kernels are documented to use (lmx_cpu_wino_buf_floats scratch, V
 * and M with the row stride ld > the tiles used), so the sanitizer build catches a write
 * past any of them; outputs are NaN-filled first, so an element left unwritten fails.
 * Geometries: even and odd output sizes, padding 0, 1 and 2 (rows and columns apart),
 * one-pixel outputs, several images (groups of images transformed together, and planes
 * larger than a group), channel ranges split in two calls, accumulation.
 * Also: lmx_cpu_wino_geom refuses strides, dilation, other kernels and 3-D.
 * Prints "N passed, N failed" and exits non-zero on failure. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/cpu/cpu_kernels.h"

#include "check.h"

static uint32_t g_seed = 777;

static float rnd(void) {
  g_seed = g_seed * 1664525u + 1013904223u;
  return (float)((g_seed >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static float *alloc_f(int64_t n, int nan_fill) {
  float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
  for (int64_t i = 0; i < n; i++) p[i] = nan_fill ? NAN : rnd();
  return p;
}

typedef struct {
  int64_t N, C, F, H, W, ph, pw;
} geo;

static lmx_cpu_geom geom_of(const geo *g) {
  lmx_cpu_geom q = {3, {1, g->H, g->W}, {1, g->H + 2 * g->ph - 2, g->W + 2 * g->pw - 2},
                    {1, 3, 3}, {1, 1, 1}, {0, g->ph, g->pw}, {1, 1, 1}};
  return q;
}

/* largest |a - b| relative to max(1, |b|) */
static double max_err(const float *a, const double *b, int64_t n) {
  double e = 0;
  for (int64_t i = 0; i < n; i++) {
    double d = fabs((double)a[i] - b[i]) / fmax(1.0, fabs(b[i]));
    if (!(d <= e)) e = isnan(d) ? INFINITY : d;
  }
  return e;
}

/* C[P][m][n] (row stride ldc) = op(A)[P][m][k] · op(B)[P][k][n], plain loops */
static void prodP(int P, int ta, int tb, int64_t m, int64_t n, int64_t k, const float *A, int64_t lda,
                   int64_t sa, const float *B, int64_t ldb, int64_t sb, float *Cm, int64_t ldc,
                   int64_t sc, int acc) {
  for (int x = 0; x < P; x++)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double s = 0;
        for (int64_t l = 0; l < k; l++) {
          float a = ta ? A[x * sa + l * lda + i] : A[x * sa + i * lda + l];
          float b = tb ? B[x * sb + j * ldb + l] : B[x * sb + l * ldb + j];
          s += (double)a * b;
        }
        float *c = &Cm[x * sc + i * ldc + j];
        *c = acc ? *c + (float)s : (float)s;
      }
}

static void run_case(const geo *g, int tile, int acc) {
  lmx_cpu_geom cg = geom_of(g);
  lmx_cpu_wino q;
  CHECK(lmx_cpu_wino_geom(&cg, tile, &q) == 1);
  int P = (tile + 2) * (tile + 2);
  double tol_w = tile == 4 ? 1e-4 : 2e-5;
  int64_t N = g->N, C = g->C, F = g->F, HW = g->H * g->W, OH = q.OH, OW = q.OW;
  int64_t T = N * q.th * q.tw, ld = T + 3; /* a row stride past the tiles used */
  float *x = alloc_f(N * C * HW, 0), *w = alloc_f(F * C * 9, 0), *bias = alloc_f(F, 0);
  float *dy = alloc_f(N * F * OH * OW, 0);
  float *U = alloc_f(P * F * C, 1), *V = alloc_f(P * C * ld, 1), *M = alloc_f(P * F * ld, 1);
  float *buf = alloc_f(lmx_cpu_wino_buf_floats(&q), 1);
  float *y = alloc_f(N * F * OH * OW, acc ? 0 : 1), *gx = alloc_f(N * C * HW, acc ? 0 : 1);
  float *gw = alloc_f(F * C * 9, acc ? 0 : 1), *dU = alloc_f(P * F * C, 1);
  double *ry = calloc((size_t)(N * F * OH * OW), sizeof(double));
  double *rgx = calloc((size_t)(N * C * HW), sizeof(double));
  double *rgw = calloc((size_t)(F * C * 9), sizeof(double));
  for (int64_t i = 0; i < N * F * OH * OW; i++) ry[i] = acc ? y[i] : 0;
  for (int64_t i = 0; i < N * C * HW; i++) rgx[i] = acc ? gx[i] : 0;
  for (int64_t i = 0; i < F * C * 9; i++) rgw[i] = acc ? gw[i] : 0;
  /* the direct convolution and both gradients */
  for (int64_t n = 0; n < N; n++)
    for (int64_t f = 0; f < F; f++)
      for (int64_t oy = 0; oy < OH; oy++)
        for (int64_t ox = 0; ox < OW; ox++) {
          int64_t yi = ((n * F + f) * OH + oy) * OW + ox;
          double s = bias[f];
          for (int64_t c = 0; c < C; c++)
            for (int ky = 0; ky < 3; ky++)
              for (int kx = 0; kx < 3; kx++) {
                int64_t iy = oy + ky - g->ph, ix = ox + kx - g->pw;
                if (iy < 0 || iy >= g->H || ix < 0 || ix >= g->W) continue;
                int64_t xi = (n * C + c) * HW + iy * g->W + ix, wi = ((f * C + c) * 3 + ky) * 3 + kx;
                s += (double)x[xi] * w[wi];
                rgx[xi] += (double)dy[yi] * w[wi];
                rgw[wi] += (double)dy[yi] * x[xi];
              }
          ry[yi] += s;
        }
  /* forward: U, V (channels in two calls), M = U V, out (filters in two calls) */
  lmx_cpu_wino_wt(&q, F * C, w, U);
  lmx_cpu_wino_in(&q, C, 0, C / 2, N, x, V, ld, buf);
  lmx_cpu_wino_in(&q, C, C / 2, C, N, x, V, ld, buf);
  prodP(P, 0, 0, F, T, C, U, C, F * C, V, ld, C * ld, M, ld, F * ld, 0);
  lmx_cpu_wino_out(&q, F, 0, F / 2, N, M, ld, bias, y, acc, buf);
  lmx_cpu_wino_out(&q, F, F / 2, F, N, M, ld, bias, y, acc, buf);
  double ey = max_err(y, ry, N * F * OH * OW);
  CHECK(ey < 2e-5, "F(%d) forward N=%lld C=%lld F=%lld %lldx%lld pad %lld,%lld acc %d: error %g",
        tile, (long long)N, (long long)C, (long long)F, (long long)g->H, (long long)g->W,
        (long long)g->ph, (long long)g->pw, acc, ey);
  /* data gradient: dM = A dy Aᵀ, dV = Uᵀ dM, dx (+)= B dV Bᵀ */
  lmx_cpu_wino_out_adj(&q, F, 0, F, N, dy, M, ld, buf);
  prodP(P, 0, 1, F, C, T, M, ld, F * ld, V, ld, C * ld, dU, C, F * C, 0); /* V: x's tiles */
  prodP(P, 1, 0, C, T, F, U, C, F * C, M, ld, F * ld, V, ld, C * ld, 0);
  lmx_cpu_wino_in_adj(&q, C, 0, C / 2, N, V, ld, gx, acc, buf);
  lmx_cpu_wino_in_adj(&q, C, C / 2, C, N, V, ld, gx, acc, buf);
  double ex = max_err(gx, rgx, N * C * HW);
  CHECK(ex < 2e-5, "F(%d) data gradient N=%lld C=%lld F=%lld %lldx%lld pad %lld,%lld: error %g",
        tile, (long long)N, (long long)C, (long long)F, (long long)g->H, (long long)g->W,
        (long long)g->ph, (long long)g->pw, ex);
  /* weight gradient: dU = dM Vᵀ (above, before V was overwritten), dg = Gᵀ dU G */
  lmx_cpu_wino_wt_adj(&q, F * C, dU, gw, acc);
  double ew = max_err(gw, rgw, F * C * 9);
  CHECK(ew < tol_w, "F(%d) weight gradient N=%lld C=%lld F=%lld %lldx%lld pad %lld,%lld: error %g",
        tile, (long long)N, (long long)C, (long long)F, (long long)g->H, (long long)g->W,
        (long long)g->ph, (long long)g->pw, ew);
  free(x), free(w), free(bias), free(dy), free(U), free(V), free(M), free(buf);
  free(y), free(gx), free(gw), free(dU), free(ry), free(rgx), free(rgw);
}

int main(void) {
  static const geo cases[] = {
      {2, 3, 4, 7, 6, 1, 1},  {1, 2, 5, 5, 9, 0, 0},  {3, 4, 2, 6, 5, 2, 1},
      {2, 5, 3, 8, 8, 1, 1},  {1, 1, 1, 3, 3, 0, 0},  {2, 3, 3, 4, 40, 1, 1},
      {1, 2, 2, 1, 1, 1, 1},  {2, 2, 3, 9, 4, 1, 2},  {1, 3, 2, 2, 7, 2, 0},
      {2, 4, 3, 32, 32, 1, 1}, {1, 3, 5, 13, 11, 1, 1}, {3, 2, 2, 34, 20, 1, 0},
      {40, 2, 3, 2, 2, 1, 1},  {20, 2, 2, 16, 16, 1, 1}, {2, 1, 2, 40, 40, 1, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int tile = 2; tile <= 4; tile += 2) {
      run_case(&cases[i], tile, 0);
      run_case(&cases[i], tile, 1);
    }
  /* what the path does not take */
  geo g = {1, 1, 1, 6, 6, 1, 1};
  lmx_cpu_geom cg = geom_of(&g);
  lmx_cpu_wino q;
  lmx_cpu_geom s = cg;
  s.stride[2] = 2;
  CHECK(lmx_cpu_wino_geom(&s, 2, &q) == 0);
  s = cg, s.dilate[1] = 2;
  CHECK(lmx_cpu_wino_geom(&s, 2, &q) == 0);
  s = cg, s.kernel[1] = 5;
  CHECK(lmx_cpu_wino_geom(&s, 2, &q) == 0);
  s = cg, s.in[0] = 4, s.kernel[0] = 3; /* 3-D */
  CHECK(lmx_cpu_wino_geom(&s, 2, &q) == 0);
  s = cg, s.out[1] = 0;
  CHECK(lmx_cpu_wino_geom(&s, 2, &q) == 0);
  CHECK(lmx_cpu_wino_geom(&cg, 3, &q) == 0); /* no F(3x3, 3x3) */
  CHECK(lmx_cpu_wino_geom(&cg, 4, &q) == 1 && q.th == 2 && q.tw == 2 && q.m == 4);
  return check_summary();
}
