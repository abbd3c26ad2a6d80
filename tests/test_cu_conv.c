/* test_cu_conv.c — the CUDA convolution lowering and pooling launchers
 * (kernels/cuda/conv.cu, pool.cu) against the CPU kernels, in the simulator build:
 * im2col exactly and col2im within rounding on 1-D / 2-D / 3-D geometries with odd sizes,
 * strides, dilation and padding; a grouped convolution forward and its data / weight
 * gradients as im2col + GEMM on both sides; pooling max / avg / sum / lp with the valid,
 * full and same geometries, count_include_pad on and off, accumulation, exact equality
 * for float32 (ties included: max pooling of data with repeated values must send each
 * gradient to the CPU's element) and float16 within tolerance. Other builds only say the
 * launchers were not run. Prints "N passed, N failed"; exits non-zero on failure. */
#include "../kernels/cpu/cpu_kernels.h"
#include "cu_test_util.h"
#include "luamx.h"

#ifdef LUAMX_CUDA_SIM
#include "../kernels/cuda/cu_conv.h"
#include "../kernels/cuda/cu_gemm.h"

static lmx_cpu_geom geom(int k, const int64_t *in, const int64_t *ker, const int64_t *st,
                         const int64_t *pad, const int64_t *dil, int ceil_mode) {
  lmx_cpu_geom g;
  memset(&g, 0, sizeof g);
  g.k = k;
  for (int i = 0; i < k; i++) {
    g.in[i] = in[i], g.kernel[i] = ker[i], g.stride[i] = st[i], g.pad[i] = pad[i];
    g.dilate[i] = dil ? dil[i] : 1;
    int64_t span = (ker[i] - 1) * g.dilate[i] + 1, num = in[i] + 2 * pad[i] - span;
    g.out[i] = (ceil_mode ? (num + st[i] - 1) / st[i] : num / st[i]) + 1;
  }
  return g;
}

static int64_t vol(const int64_t *v, int k) {
  int64_t p = 1;
  for (int i = 0; i < k; i++) p *= v[i];
  return p;
}

static void test_im2col(void) {
  static const struct {
    int k;
    int64_t in[3], ker[3], st[3], pad[3], dil[3];
  } cs[] = {
      {1, {13}, {3}, {2}, {1}, {2}},
      {2, {7, 9}, {3, 2}, {1, 2}, {1, 0}, {1, 1}},
      {2, {5, 6}, {3, 3}, {2, 1}, {2, 1}, {2, 1}},
      {2, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {1, 1}},
      {3, {4, 5, 3}, {2, 3, 2}, {1, 2, 1}, {1, 0, 1}, {1, 1, 2}},
  };
  unsigned s = 3;
  for (size_t t = 0; t < sizeof cs / sizeof cs[0]; t++) {
    lmx_cpu_geom g = geom(cs[t].k, cs[t].in, cs[t].ker, cs[t].st, cs[t].pad, cs[t].dil, 0);
    int64_t C = 3, nimg = 2, K = vol(g.kernel, g.k), O = vol(g.out, g.k), I = vol(g.in, g.k);
    int64_t ld = nimg * O + 3, ncol = C * K * ld, nx = nimg * C * I;
    float *x = rnd(nx, &s), *c1 = rnd(ncol, &s), *c2 = dup(c1, ncol);
    lmx_cpu_geom gn = g;
    lmx_cpu_geom_norm(&gn);
    int rc = lmx_cu_im2col(NULL, LMX_FLOAT32, &g, C, nimg, x, c1, ld);
    lmx_cpu_im2col(LMX_FLOAT32, &gn, C, nimg, x, c2, ld);
    CHECK(rc == 0 && memcmp(c1, c2, (size_t)ncol * 4) == 0, "im2col case %zu differs", t);
    float *x1 = rnd(nx, &s), *x2 = dup(x1, nx);
    rc = lmx_cu_col2im(NULL, LMX_FLOAT32, &g, C, nimg, c2, x1, ld);
    lmx_cpu_col2im(LMX_FLOAT32, &gn, C, nimg, c2, x2, ld);
    CHECK(rc == 0 && reldiff(x1, x2, nx) < 1e-6, "col2im case %zu diff %g", t, reldiff(x1, x2, nx));
    /* float16 */
    uint16_t *x16 = to16(x, nx), *c16 = to16(c1, ncol);
    round16(x, nx);
    lmx_cpu_im2col(LMX_FLOAT32, &gn, C, nimg, x, c2, ld);
    rc = lmx_cu_im2col(NULL, LMX_FLOAT16, &g, C, nimg, x16, c16, ld);
    int same = rc == 0;
    for (int64_t r = 0; r < C * K; r++)
      for (int64_t j = 0; j < nimg * O; j++)
        same &= lmx_f16_to_f32(c16[r * ld + j]) == c2[r * ld + j];
    CHECK(same, "float16 im2col case %zu", t);
    free(x), free(c1), free(c2), free(x1), free(x2), free(x16), free(c16);
  }
  float d;
  lmx_cpu_geom g = geom(1, (int64_t[]){4}, (int64_t[]){2}, (int64_t[]){1}, (int64_t[]){0}, NULL, 0);
  CHECK(lmx_cu_im2col(NULL, LMX_INT32, &g, 1, 1, &d, &d, 3) == -1, "int32 im2col accepted");
}

/* y[N, F, O] = W[F, C/G·K] · im2col(x) per group, then gx and gw, both sides the same way */
static void conv_groups(int dev, int dt, const lmx_cpu_geom *g, int64_t N, int64_t C, int64_t F,
                        int64_t G, const void *x, const void *w, const void *gy, void *y,
                        void *gx, void *gw, void *col) {
  int64_t K = vol(g->kernel, 3), O = vol(g->out, 3), I = vol(g->in, 3);
  int64_t Cg = C / G, Fg = F / G, CK = Cg * K, es = dt == LMX_FLOAT16 ? 2 : 4;
  char *cb = col;
#define E(p, off) ((char *)(p) + (size_t)(off) * (size_t)es)
  for (int64_t n = 0; n < N; n++) {
    if (dev) lmx_cu_im2col(NULL, dt, g, C, 1, E(x, n * C * I), col, O);
    else lmx_cpu_im2col(dt, g, C, 1, E(x, n * C * I), col, O);
    for (int64_t q = 0; q < G; q++) {
      const void *wq = E(w, q * Fg * CK), *cq = cb + (size_t)(q * CK * O * es);
      if (dev) {
        lmx_cu_gemm_ld(NULL, dt, 0, 0, Fg, O, CK, 1, wq, CK, cq, O, 0, E(y, (n * F + q * Fg) * O), O);
        lmx_cu_gemm_ld(NULL, dt, 0, 1, Fg, CK, O, 1, E(gy, (n * F + q * Fg) * O), O, cq, O,
                       n ? 1 : 0, E(gw, q * Fg * CK), CK);
      } else {
        lmx_cpu_gemm_ld(dt, 0, 0, Fg, O, CK, 1, wq, CK, cq, O, 0, E(y, (n * F + q * Fg) * O), O);
        lmx_cpu_gemm_ld(dt, 0, 1, Fg, CK, O, 1, E(gy, (n * F + q * Fg) * O), O, cq, O,
                        n ? 1 : 0, E(gw, q * Fg * CK), CK);
      }
    }
    for (int64_t q = 0; q < G; q++) {
      void *cq = cb + (size_t)(q * CK * O * es);
      if (dev)
        lmx_cu_gemm_ld(NULL, dt, 1, 0, CK, O, Fg, 1, E(w, q * Fg * CK), CK,
                       E(gy, (n * F + q * Fg) * O), O, 0, cq, O);
      else
        lmx_cpu_gemm_ld(dt, 1, 0, CK, O, Fg, 1, E(w, q * Fg * CK), CK,
                        E(gy, (n * F + q * Fg) * O), O, 0, cq, O);
    }
    if (dev) lmx_cu_col2im(NULL, dt, g, C, 1, col, E(gx, n * C * I), O);
    else lmx_cpu_col2im(dt, g, C, 1, col, E(gx, n * C * I), O);
  }
#undef E
}

static void test_conv(void) {
  unsigned s = 5;
  lmx_cpu_geom g = geom(2, (int64_t[]){9, 7}, (int64_t[]){3, 2}, (int64_t[]){2, 1},
                        (int64_t[]){1, 1}, (int64_t[]){1, 2}, 0);
  lmx_cpu_geom_norm(&g);
  int64_t N = 3, C = 4, F = 6, G = 2, K = vol(g.kernel, 3), O = vol(g.out, 3), I = vol(g.in, 3);
  int64_t nx = N * C * I, nw = F * C / G * K, ny = N * F * O, ncol = C * K * O;
  float *x = rnd(nx, &s), *w = rnd(nw, &s), *gy = rnd(ny, &s);
  round16(x, nx), round16(w, nw), round16(gy, ny);
  float *y[2], *gx[2], *gw[2], *col = malloc((size_t)ncol * 4);
  for (int d = 0; d < 2; d++) {
    y[d] = malloc((size_t)ny * 4), gx[d] = calloc((size_t)nx, 4), gw[d] = malloc((size_t)nw * 4);
    conv_groups(d, LMX_FLOAT32, &g, N, C, F, G, x, w, gy, y[d], gx[d], gw[d], col);
  }
  CHECK(reldiff(y[1], y[0], ny) < 1e-5, "grouped conv forward diff %g", reldiff(y[1], y[0], ny));
  CHECK(reldiff(gx[1], gx[0], nx) < 1e-5, "grouped conv data gradient");
  CHECK(reldiff(gw[1], gw[0], nw) < 1e-5, "grouped conv weight gradient");
  uint16_t *x16 = to16(x, nx), *w16 = to16(w, nw), *gy16 = to16(gy, ny);
  uint16_t *y16 = malloc((size_t)ny * 2), *gx16 = calloc((size_t)nx, 2), *gw16 = malloc((size_t)nw * 2);
  uint16_t *col16 = malloc((size_t)ncol * 2);
  conv_groups(1, LMX_FLOAT16, &g, N, C, F, G, x16, w16, gy16, y16, gx16, gw16, col16);
  CHECK(reldiff16(y16, y[0], ny) < 1e-2, "float16 conv forward diff %g", reldiff16(y16, y[0], ny));
  CHECK(reldiff16(gx16, gx[0], nx) < 1e-2, "float16 conv data gradient %g", reldiff16(gx16, gx[0], nx));
  CHECK(reldiff16(gw16, gw[0], nw) < 2e-2, "float16 conv weight gradient %g", reldiff16(gw16, gw[0], nw));
  for (int d = 0; d < 2; d++) free(y[d]), free(gx[d]), free(gw[d]);
  free(x), free(w), free(gy), free(col), free(x16), free(w16), free(gy16), free(y16), free(gx16),
      free(gw16), free(col16);
}

/* per-channel bias and its gradient (the conv glue's) against plain loops */
static void test_channel_bias(void) {
  unsigned s = 13;
  int64_t N = 3, C = 5, I = 301;
  float *y = rnd(N * C * I, &s), *b = rnd(C, &s), *y0 = dup(y, N * C * I);
  int rc = lmx_cu_bias_channels(NULL, LMX_FLOAT32, N, C, I, y, b);
  int same = rc == 0;
  for (int64_t i = 0; i < N * C * I; i++) same &= y[i] == y0[i] + b[i / I % C];
  CHECK(same, "bias_channels");
  for (int acc = 0; acc < 2; acc++) {
    float gb[5] = {1, 2, 3, 4, 5};
    double ref[5];
    for (int64_t c = 0; c < C; c++) {
      ref[c] = acc ? gb[c] : 0;
      for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < I; i++) ref[c] += y[(n * C + c) * I + i];
    }
    rc = lmx_cu_sum_channels(NULL, LMX_FLOAT32, N, C, I, gb, y, acc);
    double worst = 0;
    for (int64_t c = 0; c < C; c++) worst = fmax(worst, fabs(gb[c] - ref[c]));
    CHECK(rc == 0 && worst < 1e-4, "sum_channels acc %d: diff %g", acc, worst);
  }
  CHECK(lmx_cu_sum_channels(NULL, LMX_INT8, N, C, I, y, y, 0) == -1, "int8 accepted");
  free(y), free(b), free(y0);
}

static void test_pool(void) {
  static const struct {
    int k;
    int64_t in[3], ker[3], st[3], pad[3];
    int conv; /* 0 valid, 1 full, 2 same */
  } cs[] = {
      {2, {7, 9}, {3, 3}, {2, 2}, {1, 1}, 0},  {2, {8, 8}, {2, 2}, {2, 2}, {0, 0}, 0},
      {2, {7, 7}, {2, 2}, {2, 2}, {0, 0}, 1},  {2, {6, 7}, {3, 2}, {2, 3}, {1, 0}, 1},
      {2, {7, 5}, {3, 3}, {2, 2}, {0, 0}, 2},  {1, {11}, {4}, {3}, {2}, 0},
      {3, {5, 4, 6}, {2, 3, 2}, {2, 1, 2}, {1, 1, 0}, 1}, {2, {5, 5}, {5, 5}, {1, 1}, {0, 0}, 0},
  };
  unsigned s = 9;
  for (size_t t = 0; t < sizeof cs / sizeof cs[0]; t++) {
    lmx_cpu_geom g = geom(cs[t].k, cs[t].in, cs[t].ker, cs[t].st, cs[t].pad, NULL, cs[t].conv == 1);
    if (cs[t].conv == 2)
      for (int i = 0; i < g.k; i++) g.pad[i] = 0, g.out[i] = (g.in[i] + g.stride[i] - 1) / g.stride[i];
    lmx_cpu_geom_norm(&g);
    int64_t P = 5, I = vol(g.in, 3), O = vol(g.out, 3), nx = P * I, ny = P * O;
    float *x = rnd(nx, &s);
    for (int64_t i = 0; i < nx; i++) x[i] = roundf(x[i] * 3) / 4; /* many ties */
    if (t == 0) x[3] = NAN;
    for (int type = LMX_POOL_MAX; type <= LMX_POOL_LP; type++)
      for (int inc = 0; inc < 2; inc++)
        for (int acc = 0; acc < 2; acc++) {
          int pv = acc ? 1 : 2;
          float *y1 = rnd(ny, &s), *y2 = dup(y1, ny), *gy = rnd(ny, &s);
          int rc = lmx_cu_pool(NULL, type, pv, LMX_FLOAT32, &g, inc, P, x, y1, acc);
          lmx_cpu_pool(type, pv, LMX_FLOAT32, &g, inc, P, x, y2, acc);
          CHECK(rc == 0 && memcmp(y1, y2, (size_t)ny * 4) == 0,
                "pool case %zu type %d inc %d acc %d forward differs", t, type, inc, acc);
          float *yf = malloc((size_t)ny * 4);
          lmx_cpu_pool(type, pv, LMX_FLOAT32, &g, inc, P, x, yf, 0);
          float *g1 = rnd(nx, &s), *g2 = dup(g1, nx);
          rc = lmx_cu_pool_bwd(NULL, type, pv, LMX_FLOAT32, &g, inc, P, g1, gy, x, yf, acc);
          lmx_cpu_pool_bwd(type, pv, LMX_FLOAT32, &g, inc, P, g2, gy, x, yf, acc);
          int same = rc == 0;
          for (int64_t i = 0; i < nx; i++) same &= g1[i] == g2[i] || (g1[i] != g1[i] && g2[i] != g2[i]);
          CHECK(same, "pool case %zu type %d inc %d acc %d backward differs", t, type, inc, acc);
          free(y1), free(y2), free(gy), free(yf), free(g1), free(g2);
        }
    /* float16 against float32 on the same (float16-exact) data */
    float *xr = dup(x, nx);
    xr[3] = 0.25f;
    uint16_t *x16 = to16(xr, nx);
    for (int type = LMX_POOL_MAX; type <= LMX_POOL_SUM; type++) {
      float *y2 = malloc((size_t)ny * 4), *gy = rnd(ny, &s), *g2 = malloc((size_t)nx * 4);
      round16(gy, ny);
      uint16_t *y16 = malloc((size_t)ny * 2), *gy16 = to16(gy, ny), *g16 = malloc((size_t)nx * 2);
      int rc = lmx_cu_pool(NULL, type, 2, LMX_FLOAT16, &g, 1, P, x16, y16, 0);
      lmx_cpu_pool(type, 2, LMX_FLOAT32, &g, 1, P, xr, y2, 0);
      CHECK(rc == 0 && reldiff16(y16, y2, ny) < 2e-3, "float16 pool case %zu type %d", t, type);
      rc = lmx_cu_pool_bwd(NULL, type, 2, LMX_FLOAT16, &g, 1, P, g16, gy16, x16, NULL, 0);
      lmx_cpu_pool_bwd(type, 2, LMX_FLOAT32, &g, 1, P, g2, gy, xr, NULL, 0);
      CHECK(rc == 0 && reldiff16(g16, g2, nx) < 2e-3, "float16 pool bwd case %zu type %d", t, type);
      free(y2), free(gy), free(g2), free(y16), free(gy16), free(g16);
    }
    free(x), free(xr), free(x16);
  }
  float d;
  lmx_cpu_geom g = geom(1, (int64_t[]){4}, (int64_t[]){2}, (int64_t[]){1}, (int64_t[]){0}, NULL, 0);
  CHECK(lmx_cu_pool(NULL, 9, 2, LMX_FLOAT32, &g, 1, 1, &d, &d, 0) == -1, "pool type 9 accepted");
  CHECK(lmx_cu_pool_bwd(NULL, 0, 2, LMX_INT64, &g, 1, 1, &d, &d, &d, NULL, 0) == -1,
        "int64 pool accepted");
}
#endif

int main(void) {
#ifdef LUAMX_CUDA_SIM
  test_im2col();
  test_conv();
  test_channel_bias();
  test_pool();
#else
  printf("CUDA conv/pool launchers not run (no simulator in this build)\n");
#endif
  return check_summary();
}
