/* test_cu_gemm.c — the row-major → column-major GEMM derivation of kernels/cuda
 * (lmx_cu_gemm_derive), checked on the CPU in every build: for every transpose pair,
 * padded leading dimensions, batches with shared (stride 0) and strided operands, the
 * derived call run through a plain column-major reference GEMM must equal
 * lmx_cpu_gemm_ld on each batch; bad arguments give LMX_CU_GEMM_EARG and a message
 * naming the argument. In the simulator build (LUAMX_CUDA_SIM) the device launchers
 * (gemm, gemm_ld, batch_gemm, fc forward/backward, bias rows, sum_rows) run through the
 * simulator and OpenBLAS and are compared with the CPU kernels, float16 within tolerance.
 * Prints "N passed, N failed"; exits non-zero on failure. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/cpu/cpu_kernels.h"
#include "../kernels/cuda/cu_gemm.h"
#include "luamx.h"
#include "tensor/dtype.h"

#include "check.h"

static double frand(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (double)((*s >> 8) & 0xffff) / 32768.0 - 1.0;
}

/* Column-major BLAS semantics, straight from the definition:
 * C[i + j*ldc] = alpha Σ_p opA(i,p) opB(p,j) + beta C (beta 0 ignores C). */
static void ref_colmajor(const lmx_cu_gemm_call *c, int b) {
  const double *A = (const double *)c->A + c->sa * b, *B = (const double *)c->B + c->sb * b;
  double *C = (double *)c->C + c->sc * b;
  for (int j = 0; j < c->n; j++)
    for (int i = 0; i < c->m; i++) {
      double s = 0;
      for (int p = 0; p < c->k; p++) {
        double a = c->transa ? A[p + (int64_t)i * c->lda] : A[i + (int64_t)p * c->lda];
        double v = c->transb ? B[j + (int64_t)p * c->ldb] : B[p + (int64_t)j * c->ldb];
        s += a * v;
      }
      double *d = &C[i + (int64_t)j * c->ldc];
      *d = c->alpha * s + (c->beta == 0 ? 0 : c->beta * *d);
    }
}

static void test_derivation(void) {
  static const int64_t dims[][3] = {{3, 5, 7}, {1, 4, 1}, {6, 1, 3}, {2, 3, 0}};
  unsigned seed = 7;
  for (int d = 0; d < 4; d++)
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++)
        for (int pad = 0; pad < 3; pad += 2)
          for (int64_t batch = 1; batch <= 3; batch += 2)
            for (int shared = 0; shared < 2; shared++) {
              int64_t m = dims[d][0], n = dims[d][1], k = dims[d][2];
              int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
              int64_t lda = (ac < 1 ? 1 : ac) + pad, ldb = (bc < 1 ? 1 : bc) + pad, ldc = n + pad;
              int64_t sa = shared ? 0 : ar * lda + 1, sb = ar * 0 + br * ldb + pad;
              int64_t sc = m * ldc + pad;
              size_t na = (size_t)(sa * batch + ar * lda + 1), nb = (size_t)(sb * batch + br * ldb + 1);
              size_t nc = (size_t)(sc * batch + 1);
              double *A = malloc(na * 8), *B = malloc(nb * 8), *C1 = malloc(nc * 8), *C2 = malloc(nc * 8);
              for (size_t i = 0; i < na; i++) A[i] = frand(&seed);
              for (size_t i = 0; i < nb; i++) B[i] = frand(&seed);
              for (size_t i = 0; i < nc; i++) C1[i] = C2[i] = frand(&seed);
              double beta = pad ? 0.25 : 0.0;
              lmx_cu_gemm_req r = {LMX_FLOAT64, ta, tb, m, n, k, batch, 0.5, beta,
                                   A, lda, sa, B, ldb, sb, C1, ldc, sc};
              lmx_cu_gemm_call c;
              char msg[200];
              int rc = lmx_cu_gemm_derive(&r, &c, msg, sizeof msg);
              CHECK(rc == 0 && !c.nop, "derive failed (%d): %s", rc, msg);
              if (rc == 0) {
                for (int b = 0; b < c.batch; b++) ref_colmajor(&c, b);
                for (int64_t b = 0; b < batch; b++)
                  lmx_cpu_gemm_ld(LMX_FLOAT64, ta, tb, m, n, k, 0.5, A + sa * b, lda,
                                  B + sb * b, ldb, beta, C2 + sc * b, ldc);
                double worst = 0;
                for (size_t i = 0; i < nc; i++) worst = fmax(worst, fabs(C1[i] - C2[i]));
                CHECK(worst < 1e-12, "m%lld n%lld k%lld ta%d tb%d pad%d batch%lld shared%d: "
                      "max diff %g", (long long)m, (long long)n, (long long)k, ta, tb, pad,
                      (long long)batch, shared, worst);
              }
              free(A), free(B), free(C1), free(C2);
            }
}

/* batches of C side by side in one row stride (the conv glue's col layout) */
static void test_side_by_side(void) {
  unsigned seed = 3;
  int64_t m = 4, n = 3, k = 5, batch = 3, ldc = batch * n + 1;
  double A[4 * 5], B[3 * 5 * 3], C1[4 * 10], C2[4 * 10];
  for (int i = 0; i < 20; i++) A[i] = frand(&seed);
  for (int i = 0; i < 45; i++) B[i] = frand(&seed);
  for (int i = 0; i < 40; i++) C1[i] = C2[i] = frand(&seed);
  lmx_cu_gemm_req r = {LMX_FLOAT64, 0, 1, m, n, k, batch, 1.0, 0.5, A, k, 0, B, k, n * k,
                       C1, ldc, n};
  lmx_cu_gemm_call c;
  int rc = lmx_cu_gemm_derive(&r, &c, NULL, 0);
  CHECK(rc == 0, "side-by-side derive rc %d", rc);
  for (int b = 0; rc == 0 && b < c.batch; b++) ref_colmajor(&c, b);
  for (int64_t b = 0; b < batch; b++)
    lmx_cpu_gemm_ld(LMX_FLOAT64, 0, 1, m, n, k, 1.0, A, k, B + b * n * k, k, 0.5, C2 + b * n, ldc);
  double worst = 0;
  for (int i = 0; i < 40; i++) worst = fmax(worst, fabs(C1[i] - C2[i]));
  CHECK(worst < 1e-12, "side-by-side batches differ by %g", worst);
}

static void expect_err(lmx_cu_gemm_req r, int want, const char *needle) {
  lmx_cu_gemm_call c;
  char msg[200];
  int rc = lmx_cu_gemm_derive(&r, &c, msg, sizeof msg);
  CHECK(rc == want && strstr(msg, needle), "rc %d (want %d), message '%s' lacks '%s'", rc,
        want, msg, needle);
}

static void test_errors(void) {
  float a[64], b[64], c[64];
  lmx_cu_gemm_req ok = {LMX_FLOAT32, 0, 0, 2, 3, 4, 1, 1, 0, a, 4, 0, b, 3, 0, c, 3, 0};
  lmx_cu_gemm_call call;
  CHECK(lmx_cu_gemm_derive(&ok, &call, NULL, 0) == 0, "valid request refused");
  lmx_cu_gemm_req r = ok;
  r.lda = 3;
  expect_err(r, LMX_CU_GEMM_EARG, "lda must be >= max(1, k) = 4");
  r = ok, r.ta = 1, r.lda = 1;
  expect_err(r, LMX_CU_GEMM_EARG, "lda must be >= max(1, m (A transposed)) = 2");
  r = ok, r.ldb = 2;
  expect_err(r, LMX_CU_GEMM_EARG, "ldb must be >= max(1, n) = 3 and fit an int, got 2");
  r = ok, r.ldc = 0;
  expect_err(r, LMX_CU_GEMM_EARG, "ldc must be >= max(1, n) = 3");
  r = ok, r.m = -1;
  expect_err(r, LMX_CU_GEMM_EARG, "dims must be >= 0");
  r = ok, r.k = (int64_t)1 << 33, r.lda = r.k;
  expect_err(r, LMX_CU_GEMM_EARG, "fit cuBLAS's int");
  r = ok, r.batch = 2, r.sc = 5;
  expect_err(r, LMX_CU_GEMM_EARG, "batches of C overlap: sc must be >= (m-1)*ldc + n = 6 "
             "(stacked) or in [n, (ldc-n)/(batch-1)] = [3, 0] (side by side), got 5");
  r = ok, r.batch = 2, r.ldc = 6, r.sc = 3; /* side by side: columns 0-2 and 3-5 */
  CHECK(lmx_cu_gemm_derive(&r, &call, NULL, 0) == 0, "side-by-side batches refused");
  r.sc = 2;
  expect_err(r, LMX_CU_GEMM_EARG, "side by side), got 2");
  r = ok, r.sa = -1;
  expect_err(r, LMX_CU_GEMM_EARG, "batch strides must be >= 0");
  r = ok, r.C = NULL;
  expect_err(r, LMX_CU_GEMM_EARG, "C is NULL");
  r = ok, r.B = NULL;
  expect_err(r, LMX_CU_GEMM_EARG, "B is NULL with k=4");
  r = ok, r.dt = LMX_INT32;
  expect_err(r, -1, "is not float32, float64 or float16");
  r = ok, r.n = 0, r.C = NULL;
  CHECK(lmx_cu_gemm_derive(&r, &call, NULL, 0) == 0 && call.nop, "empty product not a no-op");
  /* the swap itself, field by field */
  r = ok, r.ta = 1, r.lda = 2, r.sa = 8, r.sb = 12, r.sc = 6, r.batch = 2;
  CHECK(lmx_cu_gemm_derive(&r, &call, NULL, 0) == 0 && call.m == 3 && call.n == 2 &&
            call.k == 4 && call.A == (const void *)b && call.B == (const void *)a &&
            call.transa == 0 && call.transb == 1 && call.lda == 3 && call.ldb == 2 &&
            call.ldc == 3 && call.sa == 12 && call.sb == 8 && call.sc == 6 && call.batch == 2,
        "swap: m%d n%d k%d ta%d tb%d lda%d ldb%d", call.m, call.n, call.k, call.transa,
        call.transb, call.lda, call.ldb);
}

#ifdef LUAMX_CUDA_SIM
static float *rnd(int64_t n, unsigned *s) {
  float *p = malloc((size_t)(n ? n : 1) * sizeof(float));
  for (int64_t i = 0; i < n; i++) p[i] = (float)frand(s);
  return p;
}
static uint16_t *to16(const float *x, int64_t n) {
  uint16_t *h = malloc((size_t)(n ? n : 1) * 2);
  for (int64_t i = 0; i < n; i++) h[i] = lmx_f32_to_f16(x[i]);
  return h;
}
static float maxdiff(const float *a, const float *b, int64_t n) {
  float w = 0;
  for (int64_t i = 0; i < n; i++) w = fmaxf(w, fabsf(a[i] - b[i]));
  return w;
}
static float maxdiff16(const uint16_t *a, const float *b, int64_t n) {
  float w = 0;
  for (int64_t i = 0; i < n; i++) w = fmaxf(w, fabsf(lmx_f16_to_f32(a[i]) - b[i]));
  return w;
}

int lmx_cuda_prim_gemm(int dev_id, int dt, int ta, int tb, int64_t m, int64_t n, int64_t k,
                       double alpha, const void *A, const void *B, double beta, void *C);

/* the device table's gemm primitive (src/device/cuda_gemm.c) */
static void test_primitive(void) {
  float A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {1, 0, 0, 1, 1, 1}, C[4] = {9, 9, 9, 9};
  int rc = lmx_cuda_prim_gemm(0, LMX_FLOAT32, 0, 0, 2, 2, 3, 1.0, A, B, 0.0, C);
  CHECK(rc == LMX_OK && C[0] == 4 && C[1] == 5 && C[2] == 10 && C[3] == 11,
        "primitive gemm: rc %d, C = %g %g %g %g", rc, C[0], C[1], C[2], C[3]);
  int I[4] = {0};
  rc = lmx_cuda_prim_gemm(0, LMX_INT32, 0, 0, 2, 2, 2, 1.0, I, I, 0.0, I);
  CHECK(rc == LMX_ERR_DTYPE && strstr(lmx_last_error(), "gemm: dtype int32 is not float32"),
        "primitive int32 gemm: rc %d '%s'", rc, lmx_last_error());
}

static void test_device(void) {
  test_primitive();
  unsigned s = 11;
  lmx_cu_stream st = NULL;
  for (int ta = 0; ta < 2; ta++)
    for (int tb = 0; tb < 2; tb++) {
      int64_t m = 37, n = 29, k = 19, lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 1, ldc = n + 2;
      float *A = rnd(lda * (ta ? k : m), &s), *B = rnd(ldb * (tb ? n : k), &s);
      float *C1 = rnd(ldc * m, &s), *C2 = malloc((size_t)(ldc * m) * 4);
      memcpy(C2, C1, (size_t)(ldc * m) * 4);
      int rc = lmx_cu_gemm_ld(st, LMX_FLOAT32, ta, tb, m, n, k, 1.5, A, lda, B, ldb, 0.5, C1, ldc);
      lmx_cpu_gemm_ld(LMX_FLOAT32, ta, tb, m, n, k, 1.5, A, lda, B, ldb, 0.5, C2, ldc);
      CHECK(rc == 0 && maxdiff(C1, C2, ldc * m) < 1e-5f, "sim sgemm ta%d tb%d rc %d diff %g",
            ta, tb, rc, maxdiff(C1, C2, ldc * m));
      uint16_t *A16 = to16(A, lda * (ta ? k : m)), *B16 = to16(B, ldb * (tb ? n : k));
      uint16_t *C16 = to16(C2, ldc * m);
      rc = lmx_cu_gemm_ld(st, LMX_FLOAT16, ta, tb, m, n, k, 1.0, A16, lda, B16, ldb, 0.0, C16, ldc);
      lmx_cpu_gemm_ld(LMX_FLOAT32, ta, tb, m, n, k, 1.0, A, lda, B, ldb, 0.0, C2, ldc);
      CHECK(rc == 0 && maxdiff16(C16, C2, ldc * m) < 2e-2f, "sim hgemm ta%d tb%d diff %g", ta,
            tb, maxdiff16(C16, C2, ldc * m));
      free(A), free(B), free(C1), free(C2), free(A16), free(B16), free(C16);
    }
  /* FullyConnected forward (bias, acc), backward data / weight, sum_rows, batch_gemm */
  int64_t m = 33, k = 17, n = 65;
  float *x = rnd(m * k, &s), *w = rnd(n * k, &s), *b = rnd(n, &s), *g = rnd(m * n, &s);
  float *o1 = rnd(m * n, &s), *o2 = malloc((size_t)(m * n) * 4);
  for (int acc = 0; acc < 2; acc++) {
    memcpy(o2, o1, (size_t)(m * n) * 4);
    int rc = lmx_cu_fc_fwd(st, LMX_FLOAT32, m, k, n, o1, x, w, b, acc);
    lmx_cpu_fc_fwd(LMX_FLOAT32, m, k, n, o2, x, w, b, acc);
    CHECK(rc == 0 && maxdiff(o1, o2, m * n) < 1e-5f, "fc_fwd acc%d", acc);
    float *gx1 = rnd(m * k, &s), *gx2 = malloc((size_t)(m * k) * 4);
    memcpy(gx2, gx1, (size_t)(m * k) * 4);
    rc = lmx_cu_fc_bwd_data(st, LMX_FLOAT32, m, k, n, gx1, g, w, acc);
    lmx_cpu_fc_bwd_data(LMX_FLOAT32, m, k, n, gx2, g, w, acc);
    CHECK(rc == 0 && maxdiff(gx1, gx2, m * k) < 1e-5f, "fc_bwd_data acc%d", acc);
    float *gw1 = rnd(n * k, &s), *gw2 = malloc((size_t)(n * k) * 4);
    memcpy(gw2, gw1, (size_t)(n * k) * 4);
    rc = lmx_cu_fc_bwd_weight(st, LMX_FLOAT32, m, k, n, gw1, g, x, acc);
    lmx_cpu_fc_bwd_weight(LMX_FLOAT32, m, k, n, gw2, g, x, acc);
    CHECK(rc == 0 && maxdiff(gw1, gw2, n * k) < 1e-5f, "fc_bwd_weight acc%d", acc);
    float gb1[65], gb2[65];
    for (int i = 0; i < n; i++) gb1[i] = gb2[i] = (float)i;
    rc = lmx_cu_sum_rows(st, LMX_FLOAT32, m, n, gb1, g, acc);
    lmx_cpu_sum_rows(LMX_FLOAT32, m, n, gb2, g, acc);
    CHECK(rc == 0 && memcmp(gb1, gb2, sizeof gb1) == 0, "sum_rows acc%d not bit-equal", acc);
    free(gx1), free(gx2), free(gw1), free(gw2);
  }
  /* k = 0: the output is the bias (or zeros) like the CPU's */
  int rc = lmx_cu_fc_fwd(st, LMX_FLOAT32, m, 0, n, o1, x, w, b, 0);
  CHECK(rc == 0 && o1[n + 3] == b[3], "fc_fwd k=0 gives the bias");
  /* float16 FullyConnected against float32 */
  uint16_t *x16 = to16(x, m * k), *w16 = to16(w, n * k), *b16 = to16(b, n), *o16 = to16(o1, m * n);
  rc = lmx_cu_fc_fwd(st, LMX_FLOAT16, m, k, n, o16, x16, w16, b16, 0);
  lmx_cpu_fc_fwd(LMX_FLOAT32, m, k, n, o2, x, w, b, 0);
  CHECK(rc == 0 && maxdiff16(o16, o2, m * n) < 2e-2f, "fc_fwd float16 diff %g",
        maxdiff16(o16, o2, m * n));
  /* batch_gemm, all transposes, acc */
  for (int t = 0; t < 4; t++) {
    int ta = t & 1, tb = t >> 1;
    int64_t bt = 3, bm = 5, bn = 7, bk = 9;
    float *A = rnd(bt * bm * bk, &s), *B = rnd(bt * bk * bn, &s), *C1 = rnd(bt * bm * bn, &s);
    float *C2 = malloc((size_t)(bt * bm * bn) * 4);
    memcpy(C2, C1, (size_t)(bt * bm * bn) * 4);
    rc = lmx_cu_batch_gemm(st, LMX_FLOAT32, bt, ta, tb, bm, bn, bk, A, B, C1, t == 3);
    lmx_cpu_batch_gemm(LMX_FLOAT32, bt, ta, tb, bm, bn, bk, A, B, C2, t == 3);
    CHECK(rc == 0 && maxdiff(C1, C2, bt * bm * bn) < 1e-5f, "batch_gemm ta%d tb%d", ta, tb);
    free(A), free(B), free(C1), free(C2);
  }
  CHECK(lmx_cu_gemm(st, LMX_INT32, 0, 0, 2, 2, 2, 1, x, w, 0, o1) == -1, "int32 gemm accepted");
  CHECK(lmx_cu_gemm_ld(st, LMX_FLOAT32, 0, 0, 2, 2, 2, 1, x, 1, w, 2, 0, o1, 2) ==
            LMX_CU_GEMM_EARG, "bad lda accepted");
  free(x), free(w), free(b), free(g), free(o1), free(o2), free(x16), free(w16), free(b16), free(o16);
}
#endif

int main(void) {
  test_derivation();
  test_errors();
  test_side_by_side();
#ifdef LUAMX_CUDA_SIM
  test_device();
#else
  printf("device launchers not run (no simulator in this build)\n");
#endif
  return check_summary();
}
