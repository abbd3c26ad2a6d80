/* test_fc_smo.c — the fused FullyConnected + SoftmaxOutput backward kernel
 * (kernels/cpu/fc_smo.c) against the two-kernel path it replaces: G from
 * lmx_cpu_softmax_output_grad, then the FC gradients from lmx_cpu_fc_bwd_data /
 * _weight and lmx_cpu_sum_rows. Shapes below, at and past one block of columns
 * (partial last block), label smoothing, use_ignore with ignored rows, labels outside
 * [0, n), write and add requests, absent gradients. Prints "N passed, N failed". */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/cpu/cpu_kernels.h"
#include "luamx.h"

#include "check.h"

static float frand(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (float)((*s >> 8) & 0xffff) / 65536.0f - 0.5f;
}

static double max_rel(const float *a, const float *b, int64_t n) {
  double worst = 0;
  for (int64_t i = 0; i < n; i++) {
    double d = fabs((double)a[i] - b[i]) / (1.0 + fabs((double)b[i]));
    if (d > worst || d != d) worst = d != d ? INFINITY : d;
  }
  return worst;
}

/* one case: m rows, k inputs, n classes; acc: add into the (random) initial gradients */
static void run_case(int64_t m, int64_t k, int64_t n, double alpha, int use_ignore, int acc,
                     int no_db) {
  unsigned s = (unsigned)(m * 131 + k * 17 + n);
  size_t mn = (size_t)(m * n), mk = (size_t)(m * k), nk = (size_t)(n * k);
  float *p = malloc(mn * 4), *lab = malloc((size_t)m * 4), *x = malloc(mk * 4);
  float *w = malloc(nk * 4), *g = malloc(mn * 4), *scratch = malloc(mn * 4);
  float *dx[2] = {malloc(mk * 4), malloc(mk * 4)}, *dw[2] = {malloc(nk * 4), malloc(nk * 4)};
  float *db[2] = {malloc((size_t)n * 4), malloc((size_t)n * 4)};
  for (size_t i = 0; i < mn; i++) p[i] = frand(&s) + 0.5f;
  for (size_t i = 0; i < mk; i++) x[i] = frand(&s);
  for (size_t i = 0; i < nk; i++) w[i] = frand(&s);
  for (int64_t r = 0; r < m; r++) /* every 5th row ignored, every 7th out of range */
    lab[r] = r % 5 == 4 ? 3.0f : r % 7 == 6 ? (float)(n + 2) : (float)((r * 37) % n);
  for (int v = 0; v < 2; v++) {
    for (size_t i = 0; i < mk; i++) dx[v][i] = acc ? (float)i * 1e-3f : NAN;
    for (size_t i = 0; i < nk; i++) dw[v][i] = acc ? (float)i * 1e-3f : NAN;
    for (int64_t i = 0; i < n; i++) db[v][i] = acc ? (float)i * 1e-3f : NAN;
  }
  double scale = 0.37;
  /* the two-kernel path */
  lmx_cpu_softmax_output_grad(LMX_FLOAT32, m, n, 1, g, p, lab, NULL, alpha, use_ignore, 3.0,
                              scale, 0);
  lmx_cpu_fc_bwd_data(LMX_FLOAT32, m, k, n, dx[0], g, w, acc);
  lmx_cpu_fc_bwd_weight(LMX_FLOAT32, m, k, n, dw[0], g, x, acc);
  if (!no_db) lmx_cpu_sum_rows(LMX_FLOAT32, m, n, db[0], g, acc);
  /* fused */
  lmx_cpu_fc_smo a = {.m = m, .k = k, .n = n, .p = p, .label = lab, .x = x, .w = w,
                      .scratch = scratch, .dx = dx[1], .dw = dw[1], .db = no_db ? NULL : db[1],
                      .acc_dx = acc, .acc_dw = acc, .acc_db = acc, .alpha = alpha,
                      .ignore = 3.0, .use_ignore = use_ignore, .scale = scale};
  lmx_cpu_fc_smo_bwd(&a);
  double ex = max_rel(dx[1], dx[0], (int64_t)mk), ew = max_rel(dw[1], dw[0], (int64_t)nk);
  CHECK(ex < 1e-5, "m %lld k %lld n %lld: dx differs by %g", (long long)m, (long long)k,
        (long long)n, ex);
  CHECK(ew < 1e-5, "m %lld k %lld n %lld: dW differs by %g", (long long)m, (long long)k,
        (long long)n, ew);
  if (!no_db) { /* the same additions in the same order: equal */
    CHECK(memcmp(db[0], db[1], (size_t)n * 4) == 0, "n %lld: db differs by %g", (long long)n,
          max_rel(db[1], db[0], n));
  } else {
    CHECK(isnan(db[1][0]) || acc, "db written although not asked for");
  }
  free(p), free(lab), free(x), free(w), free(g), free(scratch);
  for (int v = 0; v < 2; v++) free(dx[v]), free(dw[v]), free(db[v]);
}

int main(void) {
  run_case(1, 1, 1, 0, 0, 0, 0);
  run_case(5, 3, 7, 0, 0, 0, 0);
  run_case(37, 13, 256, 0, 0, 0, 0);
  run_case(37, 13, 600, 0, 0, 0, 0);     /* two blocks and a partial one */
  run_case(64, 20, 1000, 0.1, 1, 0, 0);  /* smoothing, ignored rows */
  run_case(40, 9, 513, 0, 1, 1, 0);      /* add requests */
  run_case(40, 9, 300, 0.05, 0, 0, 1);   /* no bias gradient */
  run_case(1100, 16, 300, 0, 0, 0, 0);   /* rows past the parallel threshold */
  return check_summary();
}
