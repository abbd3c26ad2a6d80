/* test_cu_norm.c — the CUDA BatchNorm / LayerNorm launchers (kernels/cuda/norm.cu)
 * against the CPU kernels in the simulator build: BatchNorm training (batch statistics,
 * moving-statistics update), global statistics, fix_gamma, statistics-only calls,
 * accumulation, backward with each gradient's own accumulate flag, float16 data with
 * float32 parameters; LayerNorm forward/backward with inner > 1 and C not a multiple of
 * the block. Channel counts larger than one block's threads and odd sizes throughout.
 * Prints "N passed, N failed"; exits non-zero on failure. */
#include "../kernels/cpu/cpu_kernels.h"
#include "cu_test_util.h"
#include "luamx.h"

#ifdef LUAMX_CUDA_SIM
#include "../kernels/cuda/cu_norm.h"

static void test_bn(void) {
  unsigned s = 21;
  static const int64_t shapes[][3] = {{3, 5, 37}, {300, 3, 1}, {2, 7, 1}, {1, 4, 3}};
  for (int t = 0; t < 4; t++)
    for (int mode = 0; mode < 4; mode++) {
      lmx_cpu_bn b = {shapes[t][0], shapes[t][1], shapes[t][2], 1e-3, 0.9, mode == 2,
                      mode != 1, mode != 1 && mode != 3, NULL};
      int64_t n = b.outer * b.C * b.inner, C = b.C;
      int acc = mode == 3;
      float *x = rnd(n, &s), *gam = rnd(C, &s), *bet = rnd(C, &s), *g = rnd(n, &s);
      for (int64_t i = 0; i < n; i++) x[i] = x[i] * 2 + 0.5f;
      float *mm1 = rnd(C, &s), *mv1 = rnd(C, &s);
      for (int64_t c = 0; c < C; c++) mv1[c] = fabsf(mv1[c]) + 0.1f;
      float *mm2 = dup(mm1, C), *mv2 = dup(mv1, C);
      float *y1 = rnd(n, &s), *y2 = dup(y1, n), *m1 = malloc(C * 4), *m2 = malloc(C * 4);
      float *i1 = malloc(C * 4), *i2 = malloc(C * 4);
      int rc = lmx_cu_bn_fwd(NULL, LMX_FLOAT32, &b, x, y1, gam, bet, m1, i1, mm1, mv1, acc);
      lmx_cpu_bn_fwd(LMX_FLOAT32, &b, x, y2, gam, bet, m2, i2, mm2, mv2, acc);
      CHECK(rc == 0 && reldiff(y1, y2, n) < 1e-5 && reldiff(m1, m2, C) < 1e-5 &&
                reldiff(i1, i2, C) < 1e-5 && reldiff(mm1, mm2, C) < 1e-6 &&
                reldiff(mv1, mv2, C) < 1e-5,
            "bn fwd shape %d mode %d: y %g mean %g invstd %g", t, mode, reldiff(y1, y2, n),
            reldiff(m1, m2, C), reldiff(i1, i2, C));
      int accs[3] = {mode & 1, mode >> 1, mode == 3};
      float *gx1 = rnd(n, &s), *gx2 = dup(gx1, n), *gg1 = rnd(C, &s), *gg2 = dup(gg1, C);
      float *gb1 = rnd(C, &s), *gb2 = dup(gb1, C);
      rc = lmx_cu_bn_bwd(NULL, LMX_FLOAT32, &b, x, g, gam, m2, i2, gx1, gg1, gb1, accs);
      lmx_cpu_bn_bwd(LMX_FLOAT32, &b, x, g, gam, m2, i2, gx2, gg2, gb2, accs);
      CHECK(rc == 0 && reldiff(gx1, gx2, n) < 1e-4 && reldiff(gg1, gg2, C) < 1e-4 &&
                reldiff(gb1, gb2, C) < 1e-4,
            "bn bwd shape %d mode %d: gx %g gg %g gb %g", t, mode, reldiff(gx1, gx2, n),
            reldiff(gg1, gg2, C), reldiff(gb1, gb2, C));
      /* statistics only, gradient of x only */
      rc = lmx_cu_bn_fwd(NULL, LMX_FLOAT32, &b, x, NULL, gam, bet, m1, NULL, mm1, mv1, 0);
      CHECK(rc == 0, "statistics-only call");
      rc = lmx_cu_bn_bwd(NULL, LMX_FLOAT32, &b, x, g, gam, m2, i2, gx1, NULL, NULL, accs);
      CHECK(rc == 0, "gx-only call");
      /* float16 data, float32 parameters and statistics */
      round16(x, n), round16(g, n);
      uint16_t *x16 = to16(x, n), *y16 = malloc(n * 2), *g16 = to16(g, n), *gx16 = malloc(n * 2);
      lmx_cpu_bn b0 = b;
      b0.update_moving = 0;
      rc = lmx_cu_bn_fwd(NULL, LMX_FLOAT16, &b0, x16, y16, gam, bet, m1, i1, mm1, mv1, 0);
      lmx_cpu_bn_fwd(LMX_FLOAT32, &b0, x, y2, gam, bet, m2, i2, mm1, mv1, 0);
      CHECK(rc == 0 && reldiff16(y16, y2, n) < 1e-2 && reldiff(m1, m2, C) < 1e-5,
            "float16 bn fwd shape %d mode %d: %g", t, mode, reldiff16(y16, y2, n));
      int zero[3] = {0, 0, 0};
      rc = lmx_cu_bn_bwd(NULL, LMX_FLOAT16, &b0, x16, g16, gam, m2, i2, gx16, gg1, gb1, zero);
      lmx_cpu_bn_bwd(LMX_FLOAT32, &b0, x, g, gam, m2, i2, gx2, gg2, gb2, zero);
      CHECK(rc == 0 && reldiff16(gx16, gx2, n) < 2e-2 && reldiff(gg1, gg2, C) < 1e-4 &&
                reldiff(gb1, gb2, C) < 1e-4,
            "float16 bn bwd shape %d mode %d: %g", t, mode, reldiff16(gx16, gx2, n));
      free(x), free(gam), free(bet), free(g), free(mm1), free(mv1), free(mm2), free(mv2);
      free(y1), free(y2), free(m1), free(m2), free(i1), free(i2), free(gx1), free(gx2);
      free(gg1), free(gg2), free(gb1), free(gb2), free(x16), free(y16), free(g16), free(gx16);
    }
  lmx_cpu_bn b = {1, 1, 1, 1e-3, 0.9, 0, 1, 1, NULL};
  float d[4];
  CHECK(lmx_cu_bn_fwd(NULL, LMX_INT32, &b, d, d, d, d, d, d, d, d, 0) == -1, "int32 bn accepted");
}

/* cuDNN BatchNorm's helpers (run by cudnn_exec.cu after cuDNN's calls) against the CPU
 * kernel: the moving statistics folded from the batch mean and UNBIASED variance equal
 * the CPU's update from the batch's own statistics; the inference mean / invstd equal
 * what the CPU writes with the moving statistics. C over one block. */
static void test_bn_cudnn_helpers(void) {
  unsigned s = 5;
  int64_t outer = 3, C = 300, inner = 5, n = outer * C * inner, count = outer * inner;
  float *x = rnd(n, &s), *gam = rnd(C, &s), *bm = malloc(C * 4), *bv = malloc(C * 4);
  for (int64_t c = 0; c < C; c++) {
    double sum = 0, sq = 0;
    for (int64_t o = 0; o < outer; o++)
      for (int64_t i = 0; i < inner; i++) sum += x[(o * C + c) * inner + i];
    double mu = sum / count;
    for (int64_t o = 0; o < outer; o++)
      for (int64_t i = 0; i < inner; i++) {
        double d = x[(o * C + c) * inner + i] - mu;
        sq += d * d;
      }
    bm[c] = (float)mu, bv[c] = (float)(sq / (count - 1));
  }
  float *mm1 = rnd(C, &s), *mv1 = rnd(C, &s);
  for (int64_t c = 0; c < C; c++) mv1[c] = fabsf(mv1[c]) + 0.1f;
  float *mm2 = dup(mm1, C), *mv2 = dup(mv1, C);
  lmx_cpu_bn b = {outer, C, inner, 1e-3, 0.9, 0, 1, 1, NULL};
  lmx_cpu_bn_fwd(LMX_FLOAT32, &b, x, NULL, gam, gam, NULL, NULL, mm2, mv2, 0);
  int rc = lmx_cu_bn_fold_moving(NULL, C, 1 - b.momentum, count, bm, bv, mm1, mv1);
  CHECK(rc == 0 && reldiff(mm1, mm2, C) < 1e-5 && reldiff(mv1, mv2, C) < 1e-5,
        "cudnn bn fold: moving mean %g var %g", reldiff(mm1, mm2, C), reldiff(mv1, mv2, C));
  float *m1 = malloc(C * 4), *m2 = malloc(C * 4), *i1 = malloc(C * 4), *i2 = malloc(C * 4);
  lmx_cpu_bn bi = {outer, C, inner, 1e-3, 0.9, 0, 0, 0, NULL};
  lmx_cpu_bn_fwd(LMX_FLOAT32, &bi, x, NULL, gam, gam, m2, i2, mm2, mv2, 0);
  rc = lmx_cu_bn_inf_stats(NULL, C, bi.eps, mm2, mv2, m1, i1);
  CHECK(rc == 0 && reldiff(m1, m2, C) < 1e-6 && reldiff(i1, i2, C) < 1e-6,
        "cudnn bn inference stats: mean %g invstd %g", reldiff(m1, m2, C), reldiff(i1, i2, C));
  CHECK(lmx_cu_bn_fold_moving(NULL, 0, 0.1, 2, bm, bv, mm1, mv1) == 0 &&
            lmx_cu_bn_inf_stats(NULL, 0, 1e-3, mm2, mv2, m1, i1) == 0,
        "cudnn bn helpers with C = 0");
  free(x), free(gam), free(bm), free(bv), free(mm1), free(mv1), free(mm2), free(mv2);
  free(m1), free(m2), free(i1), free(i2);
}

static void test_ln(void) {
  unsigned s = 33;
  static const int64_t shapes[][3] = {{4, 300, 1}, {3, 7, 5}, {1, 1, 1}};
  for (int t = 0; t < 3; t++)
    for (int acc = 0; acc < 2; acc++) {
      int64_t O = shapes[t][0], C = shapes[t][1], In = shapes[t][2], n = O * C * In, R = O * In;
      float *x = rnd(n, &s), *gam = rnd(C, &s), *bet = rnd(C, &s), *g = rnd(n, &s);
      float *y1 = rnd(n, &s), *y2 = dup(y1, n), *m1 = malloc(R * 4), *m2 = malloc(R * 4);
      float *s1 = malloc(R * 4), *s2 = malloc(R * 4);
      int rc = lmx_cu_ln_fwd(NULL, LMX_FLOAT32, O, C, In, 1e-5, x, y1, gam, bet, m1, s1, acc);
      lmx_cpu_ln_fwd(LMX_FLOAT32, O, C, In, 1e-5, x, y2, gam, bet, m2, s2, acc);
      CHECK(rc == 0 && reldiff(y1, y2, n) < 1e-4 && reldiff(m1, m2, R) < 1e-5 &&
                reldiff(s1, s2, R) < 1e-5,
            "ln fwd shape %d acc %d: %g", t, acc, reldiff(y1, y2, n));
      int accs[3] = {acc, !acc, acc};
      float *gx1 = rnd(n, &s), *gx2 = dup(gx1, n), *gg1 = rnd(C, &s), *gg2 = dup(gg1, C);
      float *gb1 = rnd(C, &s), *gb2 = dup(gb1, C);
      rc = lmx_cu_ln_bwd(NULL, LMX_FLOAT32, O, C, In, x, g, gam, m2, s2, gx1, gg1, gb1, accs);
      lmx_cpu_ln_bwd(LMX_FLOAT32, O, C, In, x, g, gam, m2, s2, gx2, gg2, gb2, accs);
      CHECK(rc == 0 && reldiff(gx1, gx2, n) < 1e-4 && reldiff(gg1, gg2, C) < 1e-4 &&
                reldiff(gb1, gb2, C) < 1e-4,
            "ln bwd shape %d acc %d: gx %g gg %g gb %g", t, acc, reldiff(gx1, gx2, n),
            reldiff(gg1, gg2, C), reldiff(gb1, gb2, C));
      round16(x, n), round16(gam, C), round16(bet, C);
      uint16_t *x16 = to16(x, n), *gm16 = to16(gam, C), *bt16 = to16(bet, C), *y16 = malloc(n * 2);
      rc = lmx_cu_ln_fwd(NULL, LMX_FLOAT16, O, C, In, 1e-5, x16, y16, gm16, bt16, NULL, NULL, 0);
      lmx_cpu_ln_fwd(LMX_FLOAT32, O, C, In, 1e-5, x, y2, gam, bet, NULL, NULL, 0);
      CHECK(rc == 0 && reldiff16(y16, y2, n) < 1e-2, "float16 ln fwd shape %d: %g", t,
            reldiff16(y16, y2, n));
      free(x), free(gam), free(bet), free(g), free(y1), free(y2), free(m1), free(m2), free(s1);
      free(s2), free(gx1), free(gx2), free(gg1), free(gg2), free(gb1), free(gb2), free(x16);
      free(gm16), free(bt16), free(y16);
    }
}
#endif

int main(void) {
#ifdef LUAMX_CUDA_SIM
  test_bn();
  test_bn_cudnn_helpers();
  test_ln();
#else
  printf("CUDA norm launchers not run (no simulator in this build)\n");
#endif
  return check_summary();
}
