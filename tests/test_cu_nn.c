/* test_cu_nn.c — the CUDA nn kernels (kernels/cuda/nn.cu) on the simulator against the
 * CPU kernels of kernels/cpu/nn.c: softmax / log_softmax over the last axis (rows longer
 * than a block included) and over inner axes, temperature, req ADD, with lengths per row;
 * the SoftmaxOutput gradient with ignored and out-of-range labels, smoothing, a head
 * gradient and the device count of valid labels; regression gradients; MakeLoss's fill;
 * every LeakyReLU kind, PReLU (one gamma or one per channel, gamma gradient only) and
 * rrelu. float32 and float64 against the CPU in the same dtype; float16 against the CPU
 * in float32 on the same (float16-exact) values. Prints "N passed, N failed". */
#ifndef LUAMX_CUDA_SIM
#include <stdio.h>

int main(void) {
  printf("skipped: needs the CUDA simulator build (-DLUAMX_CUDA=SIM)\n");
  return 0;
}
#else
#include "cu_check.h"
#include "../kernels/cpu/cpu_kernels.h"
#include "../kernels/cuda/cuda_kernels.h"

static const int FLOATS[3] = {LMX_FLOAT32, LMX_FLOAT64, LMX_FLOAT16};

/* the CPU's dtype for a device dtype: float16 runs on the CPU in float32 */
static int cpu_dt(int dt) { return dt == LMX_FLOAT16 ? LMX_FLOAT32 : dt; }

/* g: n random values of dt in [lo, hi); *c: the same values in cpu_dt(dt) */
static void *pair(int dt, int64_t n, double lo, double hi, void **c) {
  void *g = rand_buf(dt, n, lo, hi);
  *c = calloc((size_t)(n + 2), 8);
  for (int64_t i = 0; i < n; i++) lmx_store_f64(*c, cpu_dt(dt), i, lmx_load_f64(g, dt, i));
  return g;
}

/* largest |gpu - cpu| / max(1, |cpu|) */
static double err_of(int dt, int64_t n, const void *g, const void *c) {
  double worst = 0;
  for (int64_t i = 0; i < n; i++) {
    double x = lmx_load_f64(g, dt, i), y = lmx_load_f64(c, cpu_dt(dt), i);
    if (isnan(x) != isnan(y)) return INFINITY;
    if (isnan(x)) continue;
    double e = fabs(x - y) / (fabs(y) > 1 ? fabs(y) : 1);
    if (e > worst) worst = e;
  }
  return worst;
}

static double tol(int dt) { return dt == LMX_FLOAT64 ? 1e-12 : dt == LMX_FLOAT16 ? 4e-3 : 2e-5; }

static void test_softmax(void) {
  for (int it = 0; it < 90; it++) {
    int dt = FLOATS[it % 3], logm = (it / 3) % 2, acc = (int)irand(2);
    int64_t outer = 1 + irand(5), inner = it % 4 == 0 ? 1 + irand(9) : 1;
    int64_t len = 1 + irand(it % 5 == 1 ? 700 : 40);
    double temp = it % 7 == 0 ? 0.5 + urand(0, 2) : 1.0;
    int64_t n = outer * len * inner;
    void *cx, *cy, *cg, *cgx;
    void *x = pair(dt, n, -4, 4, &cx), *y = pair(dt, n, -1, 1, &cy);
    void *g = pair(dt, n, -1, 1, &cg), *gx = pair(dt, n, -1, 1, &cgx);
    CHECK(lmx_cu_softmax(NULL, dt, outer, len, inner, y, x, temp, logm, acc) == 0, "rc");
    lmx_cpu_softmax(cpu_dt(dt), outer, len, inner, cy, cx, temp, logm, acc);
    CHECK(err_of(dt, n, y, cy) <= tol(dt), "softmax dt %d logm %d acc %d %lldx%lldx%lld: %g", dt,
          logm, acc, (long long)outer, (long long)len, (long long)inner, err_of(dt, n, y, cy));
    /* backward from the forward output of a plain (acc 0) forward */
    lmx_cu_softmax(NULL, dt, outer, len, inner, y, x, temp, logm, 0);
    for (int64_t i = 0; i < n; i++) lmx_store_f64(cy, cpu_dt(dt), i, lmx_load_f64(y, dt, i));
    CHECK(lmx_cu_softmax_bwd(NULL, dt, outer, len, inner, gx, g, y, temp, logm, acc) == 0, "rc");
    lmx_cpu_softmax_bwd(cpu_dt(dt), outer, len, inner, cgx, cg, cy, temp, logm, acc);
    CHECK(err_of(dt, n, gx, cgx) <= tol(dt), "softmax_bwd dt %d logm %d acc %d len %lld: %g", dt,
          logm, acc, (long long)len, err_of(dt, n, gx, cgx));
    free(x), free(cx), free(y), free(cy), free(g), free(cg), free(gx), free(cgx);
  }
  CHECK(lmx_cu_softmax(NULL, LMX_INT32, 1, 4, 1, NULL, NULL, 1, 0, 0) == -1, "int32 refused");
}

/* a length outside [0, len] is clamped and reported to the raise word with its row */
static void test_softmax_len_bad(void) {
  float x[12] = {0}, y[12], g[12] = {0}, gx[12];
  for (int l64 = 0; l64 < 2; l64++) {
    int32_t l32[3] = {4, 5, 2};
    int64_t l6[3] = {2, -1, 4};
    lmx_cu_raise_word w = {0, 0, 0};
    lmx_cu_raise r = {&w, 9};
    CHECK(lmx_cu_softmax_len(NULL, LMX_FLOAT32, 3, 4, 1, y, x, l64 ? (void *)l6 : (void *)l32,
                             l64, 1, 0, 0, r) == 0, "rc");
    CHECK(w.tag == 9 && w.pos == 1 && w.value == (l64 ? -1 : 5),
          "bad length: tag %llu row %lld value %lld", w.tag, w.pos, w.value);
    for (int i = 4; i < 8; i++) CHECK(l64 ? y[i] == 0 : y[i] == 0.25f, "clamped row %d: %g", i, y[i]);
    lmx_cu_raise_word w2 = {0, 0, 0};
    lmx_cu_raise r2 = {&w2, 3};
    CHECK(lmx_cu_softmax_len_bwd(NULL, LMX_FLOAT32, 3, 4, 1, gx, g, y,
                                 l64 ? (void *)l6 : (void *)l32, l64, 1, 0, 0, r2) == 0, "rc");
    CHECK(w2.tag == 3 && w2.pos == 1, "bad length in the gradient: tag %llu row %lld", w2.tag,
          w2.pos);
  }
}

static void test_softmax_len(void) {
  for (int it = 0; it < 40; it++) {
    int dt = FLOATS[it % 3], logm = (it / 3) % 2, acc = (int)irand(2), l64 = it % 2;
    int64_t outer = 1 + irand(4), len = 1 + irand(30), inner = 1 + irand(3), rows = outer * inner;
    int64_t n = outer * len * inner;
    void *lens = calloc((size_t)rows + 1, 8);
    for (int64_t r = 0; r < rows; r++) {
      int64_t v = irand(len + 1);
      if (l64) ((int64_t *)lens)[r] = v;
      else ((int32_t *)lens)[r] = (int32_t)v;
    }
    void *cx, *cy, *cg, *cgx;
    void *x = pair(dt, n, -3, 3, &cx), *y = pair(dt, n, -1, 1, &cy);
    void *g = pair(dt, n, -1, 1, &cg), *gx = pair(dt, n, -1, 1, &cgx);
    lmx_cu_raise_word w = {0, 0, 0};
    lmx_cu_raise r = {&w, 5};
    CHECK(lmx_cu_softmax_len(NULL, dt, outer, len, inner, y, x, lens, l64, 1.5, logm, acc, r) == 0,
          "rc");
    CHECK(w.tag == 0, "valid lengths reported as bad (row %lld)", w.pos);
    lmx_cpu_softmax_len(cpu_dt(dt), outer, len, inner, cy, cx, lens, l64, 1.5, logm, acc);
    CHECK(err_of(dt, n, y, cy) <= tol(dt), "softmax_len dt %d logm %d: %g", dt, logm,
          err_of(dt, n, y, cy));
    for (int64_t i = 0; i < n; i++) lmx_store_f64(cy, cpu_dt(dt), i, lmx_load_f64(y, dt, i));
    CHECK(lmx_cu_softmax_len_bwd(NULL, dt, outer, len, inner, gx, g, y, lens, l64, 1.5, logm,
                                 acc, r) == 0, "rc");
    CHECK(w.tag == 0, "valid lengths reported as bad by the gradient (row %lld)", w.pos);
    lmx_cpu_softmax_len_bwd(cpu_dt(dt), outer, len, inner, cgx, cg, cy, lens, l64, 1.5, logm, acc);
    CHECK(err_of(dt, n, gx, cgx) <= tol(dt), "softmax_len_bwd dt %d logm %d: %g", dt, logm,
          err_of(dt, n, gx, cgx));
    free(lens), free(x), free(cx), free(y), free(cy), free(g), free(cg), free(gx), free(cgx);
    if (it == 0) test_softmax_len_bad();
  }
}

static void test_softmax_output(void) {
  for (int it = 0; it < 60; it++) {
    int dt = FLOATS[it % 3], acc = (int)irand(2), use_ignore = (int)irand(2);
    int64_t outer = 1 + irand(6), k = 1 + irand(it % 9 == 0 ? 300 : 12), inner = 1 + irand(3);
    int64_t n = outer * k * inner, nl = outer * inner;
    double alpha = it % 4 == 0 ? 0.1 : 0.0, ignore = (double)irand(k), scale = urand(0.5, 2);
    void *cy, *cl, *cg, *cgx;
    void *y = pair(dt, n, 0, 1, &cy), *g = pair(dt, n, -1, 1, &cg), *gx = pair(dt, n, -1, 1, &cgx);
    void *label = pair(dt, nl, 0, 1, &cl);
    for (int64_t r = 0; r < nl; r++) {
      double u = urand(0, 1);
      double v = u < 0.2 ? ignore : u < 0.3 ? (double)(k + irand(3)) : u < 0.35 ? -1.0
                 : (double)irand(k);
      lmx_store_f64(label, dt, r, v), lmx_store_f64(cl, cpu_dt(dt), r, v);
    }
    const void *head = it % 3 == 1 ? g : NULL;
    /* 'valid' normalisation: the device count against the host's */
    float *count = calloc(1, sizeof(float));
    int64_t valid = 0;
    for (int64_t r = 0; r < nl; r++) valid += (int)lmx_load_f64(cl, cpu_dt(dt), r) != (int)ignore;
    CHECK(lmx_cu_count(NULL, dt, nl, label, 0, ignore, count) == 0, "count rc");
    CHECK(*count == (float)(valid > 0 ? valid : 1), "count %g, expected %lld", (double)*count,
          (long long)valid);
    int with_count = it % 2;
    double cscale = with_count ? scale / (double)(valid > 0 ? valid : 1) : scale;
    CHECK(lmx_cu_softmax_output_grad(NULL, dt, outer, k, inner, gx, y, label, head, alpha,
                                     use_ignore, ignore, scale, with_count ? count : NULL,
                                     acc) == 0, "rc");
    lmx_cpu_softmax_output_grad(cpu_dt(dt), outer, k, inner, cgx, cy, cl, head ? cg : NULL, alpha,
                                use_ignore, ignore, cscale, acc);
    CHECK(err_of(dt, n, gx, cgx) <= tol(dt), "smo_grad dt %d ign %d acc %d k %lld: %g", dt,
          use_ignore, acc, (long long)k, err_of(dt, n, gx, cgx));
    /* MakeLoss: count of x > thr (at least 1), then the filled gradient */
    CHECK(lmx_cu_count(NULL, dt, n, y, 1, 0.5, count) == 0, "count rc");
    int64_t above = 0;
    for (int64_t i = 0; i < n; i++) above += lmx_load_f64(cy, cpu_dt(dt), i) > 0.5;
    CHECK(*count == (float)(above > 1 ? above : 1), "count above %g vs %lld", (double)*count,
          (long long)above);
    CHECK(lmx_cu_fill_div(NULL, dt, n, gx, 3.0, count, acc) == 0, "rc");
    for (int64_t i = 0; i < n; i++) {
      double v = 3.0 / (double)(above > 1 ? above : 1);
      lmx_store_f64(cgx, cpu_dt(dt), i, acc ? lmx_load_f64(cgx, cpu_dt(dt), i) + v : v);
    }
    CHECK(err_of(dt, n, gx, cgx) <= tol(dt), "fill_div dt %d: %g", dt, err_of(dt, n, gx, cgx));
    /* regression gradients on the same data */
    for (int mae = 0; mae <= 1; mae++) {
      CHECK(lmx_cu_regression_grad(NULL, dt, n, gx, y, g, mae, scale, acc) == 0, "rc");
      lmx_cpu_regression_grad(cpu_dt(dt), n, cgx, cy, cg, mae, scale, acc);
      CHECK(err_of(dt, n, gx, cgx) <= tol(dt), "regression mae %d dt %d: %g", mae, dt,
            err_of(dt, n, gx, cgx));
    }
    free(count), free(y), free(cy), free(g), free(cg), free(gx), free(cgx), free(label), free(cl);
  }
}

static void test_leaky(void) {
  for (int it = 0; it < 48; it++) {
    int dt = FLOATS[it % 3], kind = (it / 3) % 4, acc = (int)irand(2);
    int64_t n = 1 + irand(it % 5 == 0 ? 3000 : 300);
    double slope = urand(0.05, 0.5);
    void *cx, *cy, *cg, *cgx;
    void *x = pair(dt, n, -3, 3, &cx), *y = pair(dt, n, -1, 1, &cy);
    void *g = pair(dt, n, -1, 1, &cg), *gx = pair(dt, n, -1, 1, &cgx);
    CHECK(lmx_cu_leaky(NULL, kind, dt, n, y, x, slope, acc) == 0, "rc");
    lmx_cpu_leaky(kind, cpu_dt(dt), n, cy, cx, slope, acc);
    CHECK(err_of(dt, n, y, cy) <= tol(dt), "leaky kind %d dt %d: %g", kind, dt, err_of(dt, n, y, cy));
    lmx_cu_leaky(NULL, kind, dt, n, y, x, slope, 0);
    for (int64_t i = 0; i < n; i++) lmx_store_f64(cy, cpu_dt(dt), i, lmx_load_f64(y, dt, i));
    CHECK(lmx_cu_leaky_bwd(NULL, kind, dt, n, gx, g, x, y, slope, acc) == 0, "rc");
    lmx_cpu_leaky_bwd(kind, cpu_dt(dt), n, cgx, cg, cx, cy, slope, acc);
    CHECK(err_of(dt, n, gx, cgx) <= tol(dt), "leaky_bwd kind %d dt %d: %g", kind, dt,
          err_of(dt, n, gx, cgx));
    /* rrelu with a slope per element */
    void *ca, *a = pair(dt, n, 0.1, 0.3, &ca);
    CHECK(lmx_cu_rrelu(NULL, dt, n, y, x, a, acc) == 0, "rc");
    lmx_cpu_rrelu(cpu_dt(dt), n, cy, cx, ca, acc);
    CHECK(err_of(dt, n, y, cy) <= tol(dt), "rrelu dt %d", dt);
    CHECK(lmx_cu_rrelu_bwd(NULL, dt, n, gx, g, x, a, acc) == 0, "rc");
    lmx_cpu_rrelu_bwd(cpu_dt(dt), n, cgx, cg, cx, ca, acc);
    CHECK(err_of(dt, n, gx, cgx) <= tol(dt), "rrelu_bwd dt %d", dt);
    free(a), free(ca), free(x), free(cx), free(y), free(cy), free(g), free(cg), free(gx), free(cgx);
  }
  CHECK(lmx_cu_leaky(NULL, 9, LMX_FLOAT32, 1, NULL, NULL, 0, 0) == -1, "unknown kind refused");
}

static void test_prelu(void) {
  for (int it = 0; it < 40; it++) {
    int dt = FLOATS[it % 3], acc_x = (int)irand(2), acc_g = (int)irand(2);
    int64_t outer = 1 + irand(4), C = 1 + irand(6), inner = 1 + irand(it % 6 == 0 ? 400 : 9);
    int64_t ng = it % 2 ? C : 1, n = outer * C * inner;
    void *cx, *cy, *cg, *cgx, *cgam, *cgg;
    void *x = pair(dt, n, -2, 2, &cx), *y = pair(dt, n, -1, 1, &cy), *g = pair(dt, n, -1, 1, &cg);
    void *gx = pair(dt, n, -1, 1, &cgx), *gam = pair(dt, ng, 0, 0.5, &cgam);
    void *gg = pair(dt, ng, -1, 1, &cgg);
    CHECK(lmx_cu_prelu(NULL, dt, outer, C, inner, y, x, gam, ng, acc_x) == 0, "rc");
    lmx_cpu_prelu(cpu_dt(dt), outer, C, inner, cy, cx, cgam, ng, acc_x);
    CHECK(err_of(dt, n, y, cy) <= tol(dt), "prelu dt %d", dt);
    int no_gx = it % 5 == 3;
    CHECK(lmx_cu_prelu_bwd(NULL, dt, outer, C, inner, no_gx ? NULL : gx, gg, g, x, gam, ng, acc_x,
                           acc_g) == 0, "rc");
    lmx_cpu_prelu_bwd(cpu_dt(dt), outer, C, inner, no_gx ? NULL : cgx, cgg, cg, cx, cgam, ng, acc_x,
                      acc_g);
    CHECK(err_of(dt, n, gx, cgx) <= tol(dt), "prelu gx dt %d", dt);
    /* a sum of up to outer*inner products: float16 inputs, float sums */
    double t = dt == LMX_FLOAT64 ? 1e-11 : dt == LMX_FLOAT16 ? 4e-3 : 1e-4;
    CHECK(err_of(dt, ng, gg, cgg) <= t, "prelu ggamma dt %d ng %lld: %g", dt, (long long)ng,
          err_of(dt, ng, gg, cgg));
    free(x), free(cx), free(y), free(cy), free(g), free(cg), free(gx), free(cgx), free(gam),
        free(cgam), free(gg), free(cgg);
  }
}

CU_TEST_MAIN_BEGIN
  test_softmax();
  test_softmax_len();
  test_softmax_output();
  test_leaky();
  test_prelu();
CU_TEST_MAIN_END
#endif
