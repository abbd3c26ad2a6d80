/* test_blaslt_args.c — the cuBLASLt path of the FullyConnected products on the CPU
 * (kernels/cuda/blaslt_args.c): the LUAMX_CUBLASLT modes, which epilogue a product can
 * fuse, which path runs, pointer alignments, and the row-major request → cublasLtMatmul
 * derivation (operand swap, transposes, layouts, epilogue, workspace, the plan key) for
 * the three FullyConnected products in float32 and float16, with every refusal and its
 * message. In the simulator build it also runs derived calls through lmx_cu_lt_run
 * (blaslt.cu's emulation) and the lmx_cu_fc_*_lt launchers against sums worked out here.
 * Prints "N passed, N failed"; exits non-zero on failure. */
#include <stdio.h>
#include <string.h>

#include "../kernels/cuda/blaslt_args.h"
#include "luamx.h"

#include "check.h"

static void test_mode(void) {
  int m = -1;
  CHECK(lmx_lt_parse_mode(NULL, &m) == 0 && m == LMX_LT_AUTO);
  CHECK(lmx_lt_parse_mode("", &m) == 0 && m == LMX_LT_AUTO);
  CHECK(lmx_lt_parse_mode("auto", &m) == 0 && m == LMX_LT_AUTO);
  CHECK(lmx_lt_parse_mode("0", &m) == 0 && m == LMX_LT_OFF);
  CHECK(lmx_lt_parse_mode("1", &m) == 0 && m == LMX_LT_ON);
  m = LMX_LT_ON;
  CHECK(lmx_lt_parse_mode("yes", &m) == -1 && m == LMX_LT_OFF);
  CHECK(lmx_lt_parse_mode("10", &m) == -1 && lmx_lt_parse_mode("AUTO", &m) == -1);
}

static void test_choice(void) {
  /* epilogues: forward with and without a bias; backward by what the bias gradient asks */
  CHECK(lmx_lt_epilogue(1, 1, 0, 0) == LMX_LT_EPI_BIAS);
  CHECK(lmx_lt_epilogue(1, 0, 0, 0) == LMX_LT_EPI_NONE);
  CHECK(lmx_lt_epilogue(0, 1, 1, 0) == LMX_LT_EPI_BGRADB);
  CHECK(lmx_lt_epilogue(0, 1, 1, 1) == LMX_LT_EPI_NONE); /* req add: BGRADB overwrites */
  CHECK(lmx_lt_epilogue(0, 1, 0, 0) == LMX_LT_EPI_NONE);
  CHECK(lmx_lt_epilogue(0, 0, 1, 0) == LMX_LT_EPI_NONE);
  /* the path */
  CHECK(lmx_lt_choose(LMX_LT_AUTO, LMX_FLOAT32, LMX_LT_EPI_BIAS, 64, 32, 16, 1) == 1);
  CHECK(lmx_lt_choose(LMX_LT_AUTO, LMX_FLOAT16, LMX_LT_EPI_BGRADB, 64, 32, 16, 1) == 1);
  CHECK(lmx_lt_choose(LMX_LT_AUTO, LMX_FLOAT32, LMX_LT_EPI_NONE, 64, 32, 16, 1) == 0);
  CHECK(lmx_lt_choose(LMX_LT_ON, LMX_FLOAT32, LMX_LT_EPI_NONE, 64, 32, 16, 1) == 1);
  /* a float32 forward with a long reduction: cuBLAS in auto (ResNet-50's classifier on an
   * H100), just under the limit cuBLASLt; float16 and the BGRADB products keep cuBLASLt */
  CHECK(lmx_lt_choose(LMX_LT_AUTO, LMX_FLOAT32, LMX_LT_EPI_BIAS, 64, 1000, 2048, 1) == 0);
  CHECK(lmx_lt_choose(LMX_LT_AUTO, LMX_FLOAT32, LMX_LT_EPI_BIAS, 64, 1000, 1024, 1) == 0);
  CHECK(lmx_lt_choose(LMX_LT_AUTO, LMX_FLOAT32, LMX_LT_EPI_BIAS, 64, 1000, 1023, 1) == 1);
  CHECK(lmx_lt_choose(LMX_LT_AUTO, LMX_FLOAT16, LMX_LT_EPI_BIAS, 64, 1000, 2048, 1) == 1);
  CHECK(lmx_lt_choose(LMX_LT_AUTO, LMX_FLOAT32, LMX_LT_EPI_BGRADB, 10, 512, 1024, 1) == 1);
  CHECK(lmx_lt_choose(LMX_LT_ON, LMX_FLOAT32, LMX_LT_EPI_BIAS, 64, 1000, 2048, 1) == 1);
  CHECK(lmx_lt_choose(LMX_LT_OFF, LMX_FLOAT32, LMX_LT_EPI_BIAS, 64, 32, 16, 1) == 0);
  CHECK(lmx_lt_choose(LMX_LT_ON, LMX_FLOAT64, LMX_LT_EPI_BIAS, 64, 32, 16, 1) == 0);
  CHECK(lmx_lt_choose(LMX_LT_ON, LMX_INT32, LMX_LT_EPI_NONE, 64, 32, 16, 1) == 0);
  CHECK(lmx_lt_choose(LMX_LT_ON, LMX_FLOAT32, LMX_LT_EPI_NONE, 64, 32, 16, 4) == 0);
  CHECK(lmx_lt_choose(LMX_LT_ON, LMX_FLOAT32, LMX_LT_EPI_BIAS, 0, 32, 16, 1) == 0);
  CHECK(lmx_lt_choose(LMX_LT_ON, LMX_FLOAT32, LMX_LT_EPI_BIAS, 64, 32, 0, 1) == 0);
  /* the reason given for the cuBLAS path (the executor's note) */
  CHECK(lmx_lt_choose_why(LMX_LT_ON, LMX_FLOAT32, LMX_LT_EPI_NONE, 64, 32, 16, 1) == NULL);
  CHECK(lmx_lt_choose_why(LMX_LT_AUTO, LMX_FLOAT32, LMX_LT_EPI_BIAS, 64, 32, 16, 1) == NULL);
  CHECK(strcmp(lmx_lt_choose_why(LMX_LT_OFF, LMX_FLOAT32, LMX_LT_EPI_BIAS, 64, 32, 16, 1),
               "LUAMX_CUBLASLT=0") == 0);
  CHECK(strcmp(lmx_lt_choose_why(LMX_LT_AUTO, LMX_FLOAT32, LMX_LT_EPI_NONE, 64, 32, 16, 1),
               "auto: no epilogue to fuse") == 0);
  CHECK(strcmp(lmx_lt_choose_why(LMX_LT_AUTO, LMX_FLOAT32, LMX_LT_EPI_BIAS, 64, 1000, 2048, 1),
               "auto: a float32 forward with a long reduction (k >= 16 m), faster through "
               "cuBLAS") == 0);
  CHECK(strcmp(lmx_lt_choose_why(LMX_LT_ON, LMX_FLOAT64, LMX_LT_EPI_NONE, 64, 32, 16, 1),
               "dtype is not float32 or float16") == 0);
  CHECK(strcmp(lmx_lt_choose_why(LMX_LT_ON, LMX_FLOAT32, LMX_LT_EPI_NONE, 64, 32, 16, 4),
               "an empty or batched product") == 0);
  /* alignments */
  CHECK(lmx_lt_align(NULL) == 256);
  CHECK(lmx_lt_align((void *)(uintptr_t)0x1000) == 256);
  CHECK(lmx_lt_align((void *)(uintptr_t)0x1010) == 16);
  CHECK(lmx_lt_align((void *)(uintptr_t)0x1002) == 2);
  CHECK(lmx_lt_align((void *)(uintptr_t)0x1001) == 1);
}

static int layout_is(const lmx_lt_layout *l, int type, int64_t rows, int64_t cols, int64_t ld) {
  return l->type == type && l->rows == rows && l->cols == cols && l->ld == ld;
}

/* fake device addresses: only compared and their alignment taken */
#define PTR(a) ((void *)(uintptr_t)(a))

static void test_derive(void) {
  char msg[256];
  lmx_lt_call c;
  /* forward: out[8,5] = x[8,3] · w[5,3]ᵀ + b[5]; column-major D is 5 x 8 (one bias entry
   * per row), A' = w stored 3 x 5 transposed, B' = x stored 3 x 8 */
  lmx_lt_req f = {LMX_FLOAT32, 0, 1, LMX_LT_EPI_BIAS, 8, 5, 3, 1.0, 0.0,
                  PTR(0x1000), 3, PTR(0x2010), 3, PTR(0x3000), 5, PTR(0x4004)};
  CHECK(lmx_lt_derive(&f, 4096, &c, msg, sizeof msg) == 0 && msg[0] == 0);
  CHECK(c.key.type == LMX_LT_R_32F && c.key.compute == 32 && c.key.scale_type == LMX_LT_R_32F);
  CHECK(c.key.transa == 1 && c.key.transb == 0 && c.key.epilogue == LMX_LT_CU_EPI_BIAS);
  CHECK(c.key.m == 5 && c.key.n == 8 && c.key.k == 3);
  CHECK(layout_is(&c.key.a, LMX_LT_R_32F, 3, 5, 3));
  CHECK(layout_is(&c.key.b, LMX_LT_R_32F, 3, 8, 3));
  CHECK(layout_is(&c.key.c, LMX_LT_R_32F, 5, 8, 5));
  CHECK(c.A == PTR(0x2010) && c.B == PTR(0x1000) && c.C == PTR(0x3000) && c.bias == PTR(0x4004));
  CHECK(c.key.align_a == 16 && c.key.align_b == 256 && c.key.align_c == 256);
  CHECK(c.key.align_bias == 4 && c.key.ws_bytes == 4096);
  CHECK(c.alpha == 1.0f && c.beta == 0.0f && c.key.reserved == 0);

  /* backward data: gx[8,3] = g[8,5] · w[5,3]: D 3 x 8, A' = w (3 x 5, ld 3), B' = g (5 x 8) */
  lmx_lt_req d = {LMX_FLOAT16, 0, 0, LMX_LT_EPI_NONE, 8, 3, 5, 1.0, 1.0,
                  PTR(0x1000), 5, PTR(0x2000), 3, PTR(0x3000), 3, NULL};
  CHECK(lmx_lt_derive(&d, 0, &c, msg, sizeof msg) == 0);
  CHECK(c.key.type == LMX_LT_R_16F && c.key.scale_type == LMX_LT_R_32F && c.key.compute == 32);
  CHECK(c.key.transa == 0 && c.key.transb == 0 && c.key.epilogue == LMX_LT_CU_EPI_DEFAULT);
  CHECK(c.key.m == 3 && c.key.n == 8 && c.key.k == 5);
  CHECK(layout_is(&c.key.a, LMX_LT_R_16F, 3, 5, 3) && layout_is(&c.key.b, LMX_LT_R_16F, 5, 8, 5));
  CHECK(layout_is(&c.key.c, LMX_LT_R_16F, 3, 8, 3) && c.beta == 1.0f && c.bias == NULL);
  CHECK(c.key.align_bias == 256 && c.key.ws_bytes == 0);

  /* backward weight with the bias gradient: gw[5,3] = gᵀ · x; g is the request's A
   * (transposed, stored 8 x 5), so the call's B: stored 5 x 8, transposed (op = 8 x 5);
   * BGRADB gives one entry per column of D (5) summed over k (8, the batch) */
  lmx_lt_req w = {LMX_FLOAT32, 1, 0, LMX_LT_EPI_BGRADB, 5, 3, 8, 1.0, 0.0,
                  PTR(0x1000), 5, PTR(0x2000), 3, PTR(0x3000), 3, PTR(0x5000)};
  CHECK(lmx_lt_derive(&w, 1 << 20, &c, msg, sizeof msg) == 0);
  CHECK(c.key.transa == 0 && c.key.transb == 1 && c.key.epilogue == LMX_LT_CU_EPI_BGRADB);
  CHECK(c.key.m == 3 && c.key.n == 5 && c.key.k == 8);
  CHECK(layout_is(&c.key.a, LMX_LT_R_32F, 3, 8, 3)); /* x: op(A') = 3 x 8 */
  CHECK(layout_is(&c.key.b, LMX_LT_R_32F, 5, 8, 5)); /* g: stored 5 x 8, op 8 x 5 */
  CHECK(layout_is(&c.key.c, LMX_LT_R_32F, 3, 5, 3));
  CHECK(c.A == PTR(0x2000) && c.B == PTR(0x1000) && c.bias == PTR(0x5000));

  /* the key names a plan: equal requests give equal keys, bytewise; any change differs */
  lmx_lt_call c2;
  CHECK(lmx_lt_derive(&w, 1 << 20, &c2, NULL, 0) == 0 && memcmp(&c.key, &c2.key, sizeof c.key) == 0);
  lmx_lt_req w2 = w;
  w2.C = PTR(0x7000); /* another address of the same alignment: the same plan */
  CHECK(lmx_lt_derive(&w2, 1 << 20, &c2, NULL, 0) == 0 && memcmp(&c.key, &c2.key, sizeof c.key) == 0);
  w2.C = PTR(0x7008); /* less aligned: another plan */
  CHECK(lmx_lt_derive(&w2, 1 << 20, &c2, NULL, 0) == 0 && memcmp(&c.key, &c2.key, sizeof c.key) != 0);
  CHECK(lmx_lt_derive(&w, 1 << 21, &c2, NULL, 0) == 0 && memcmp(&c.key, &c2.key, sizeof c.key) != 0);

  /* refusals, each naming the argument */
  lmx_lt_req r = f;
  r.dt = LMX_FLOAT64;
  CHECK(lmx_lt_derive(&r, 0, &c, msg, sizeof msg) == -1 && strstr(msg, "not float32"));
  r = f, r.epi = 7;
  CHECK(lmx_lt_derive(&r, 0, &c, msg, sizeof msg) == -1 && strstr(msg, "epilogue 7"));
  r = f, r.k = 0;
  CHECK(lmx_lt_derive(&r, 0, &c, msg, sizeof msg) == -1 && strstr(msg, "k=0"));
  r = f, r.m = (int64_t)1 << 31;
  CHECK(lmx_lt_derive(&r, 0, &c, msg, sizeof msg) == -1 && strstr(msg, "m=2147483648"));
  r = f, r.lda = 2;
  CHECK(lmx_lt_derive(&r, 0, &c, msg, sizeof msg) == -1 && strstr(msg, "lda must be >= k = 3 and fit an int, got 2"));
  r = f, r.ldb = 1;
  CHECK(lmx_lt_derive(&r, 0, &c, msg, sizeof msg) == -1 &&
        strstr(msg, "ldb must be >= k (B transposed) = 3 and fit an int, got 1"));
  r = f, r.ldc = 4;
  CHECK(lmx_lt_derive(&r, 0, &c, msg, sizeof msg) == -1 && strstr(msg, "ldc must be >= n = 5 and fit an int, got 4"));
  r = f, r.B = NULL;
  CHECK(lmx_lt_derive(&r, 0, &c, msg, sizeof msg) == -1 && strstr(msg, "B is NULL"));
  r = f, r.bias = NULL;
  CHECK(lmx_lt_derive(&r, 0, &c, msg, sizeof msg) == -1 &&
        strstr(msg, "epilogue bias needs a bias pointer, got NULL"));
  r = d, r.bias = PTR(0x100);
  CHECK(lmx_lt_derive(&r, 0, &c, msg, sizeof msg) == -1 &&
        strstr(msg, "epilogue none takes no bias pointer, got one"));
  r = w, r.bias = NULL;
  CHECK(lmx_lt_derive(&r, 0, &c, msg, sizeof msg) == -1 &&
        strstr(msg, "epilogue bgradb needs a bias pointer, got NULL"));
  CHECK(lmx_lt_derive(&r, 0, &c, NULL, 0) == -1); /* no message buffer */
}

#ifdef LUAMX_CUDA_SIM
#include <cuda_runtime_api.h>

#include "../kernels/cuda/cu_gemm.h"

static void *dev_copy(const float *h, size_t n) {
  void *p = NULL;
  cudaMalloc(&p, n * sizeof(float));
  if (p && h) cudaMemcpy(p, h, n * sizeof(float), cudaMemcpyHostToDevice);
  return p;
}

static void host_copy(float *h, const void *p, size_t n) {
  cudaMemcpy(h, p, n * sizeof(float), cudaMemcpyDeviceToHost);
}

/* derived calls through the simulator's emulation, and the FullyConnected launchers in
 * every mode, against sums worked out here (small integers: exact in float32) */
static void test_sim_run(void) {
  enum { M = 4, K = 3, N = 2 };
  float x[M * K], w[N * K], b[N] = {10, -20}, g[M * N];
  for (int i = 0; i < M * K; i++) x[i] = (float)(i % 5 - 2);
  for (int i = 0; i < N * K; i++) w[i] = (float)(i + 1);
  for (int i = 0; i < M * N; i++) g[i] = (float)(i % 3 + 1);
  float want[M * N], wgw[N * K], wgb[N] = {0, 0}, wgx[M * K];
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      float s = b[j];
      for (int q = 0; q < K; q++) s += x[i * K + q] * w[j * K + q];
      want[i * N + j] = s;
      wgb[j] += g[i * N + j];
    }
  for (int j = 0; j < N; j++)
    for (int q = 0; q < K; q++) {
      float s = 0;
      for (int i = 0; i < M; i++) s += g[i * N + j] * x[i * K + q];
      wgw[j * K + q] = s;
    }
  for (int i = 0; i < M; i++)
    for (int q = 0; q < K; q++) {
      float s = 0;
      for (int j = 0; j < N; j++) s += g[i * N + j] * w[j * K + q];
      wgx[i * K + q] = s;
    }
  void *dx = dev_copy(x, M * K), *dw = dev_copy(w, N * K), *db = dev_copy(b, N);
  void *dg = dev_copy(g, M * N), *dout = dev_copy(NULL, M * N), *dgw = dev_copy(NULL, N * K);
  void *dgb = dev_copy(NULL, N), *dgx = dev_copy(NULL, M * K);
  float out[M * N], gw[N * K], gb[N], gx[M * K];
  /* one derived call: the forward with the bias epilogue */
  lmx_lt_req f = {LMX_FLOAT32, 0, 1, LMX_LT_EPI_BIAS, M, N, K, 1.0, 0.0, dx, K, dw, K, dout, N, db};
  lmx_lt_call c;
  CHECK(lmx_lt_derive(&f, 0, &c, NULL, 0) == 0 && lmx_cu_lt_run(NULL, &c, NULL, NULL) == 0);
  host_copy(out, dout, M * N);
  CHECK(memcmp(out, want, sizeof out) == 0);
  /* accumulating: out += x·wᵀ + b (beta 1) */
  f.beta = 1.0;
  CHECK(lmx_lt_derive(&f, 0, &c, NULL, 0) == 0 && lmx_cu_lt_run(NULL, &c, NULL, NULL) == 0);
  host_copy(out, dout, M * N);
  int ok = 1;
  for (int i = 0; i < M * N; i++) ok &= out[i] == 2 * want[i];
  CHECK(ok);
  /* the launchers in each mode: cuBLAS (0), cuBLASLt (1), auto */
  for (int mode = LMX_LT_OFF; mode <= LMX_LT_AUTO; mode++) {
    lmx_cu_lt_ran ran = {-1, -1, NULL};
    lmx_cu_lt_opts o = {mode, NULL, 0, &ran};
    CHECK(lmx_cu_fc_fwd_lt(NULL, &o, LMX_FLOAT32, M, K, N, dout, dx, dw, db, 0) == 0);
    /* the path reported: cuBLASLt with the bias epilogue unless the mode is 0 */
    CHECK(ran.lt == (mode != LMX_LT_OFF));
    CHECK(mode == LMX_LT_OFF ? strcmp(ran.why, "LUAMX_CUBLASLT=0") == 0
                             : ran.epi == LMX_LT_EPI_BIAS && ran.why == NULL);
    host_copy(out, dout, M * N);
    CHECK(memcmp(out, want, sizeof out) == 0);
    cudaMemset(dgb, 0, sizeof gb);
    CHECK(lmx_cu_fc_bwd_weight_lt(NULL, &o, LMX_FLOAT32, M, K, N, dgw, dg, dx, 0, dgb, 0) == 0);
    CHECK(ran.lt == (mode != LMX_LT_OFF) && ran.epi == (ran.lt ? LMX_LT_EPI_BGRADB : 0));
    host_copy(gw, dgw, N * K), host_copy(gb, dgb, N);
    CHECK(memcmp(gw, wgw, sizeof gw) == 0 && memcmp(gb, wgb, sizeof gb) == 0);
    /* the bias gradient accumulated (no BGRADB) and alone (no weight gradient) */
    CHECK(lmx_cu_fc_bwd_weight_lt(NULL, &o, LMX_FLOAT32, M, K, N, dgw, dg, dx, 0, dgb, 1) == 0);
    host_copy(gb, dgb, N);
    CHECK(gb[0] == 2 * wgb[0] && gb[1] == 2 * wgb[1]);
    CHECK(lmx_cu_fc_bwd_weight_lt(NULL, &o, LMX_FLOAT32, M, K, N, NULL, dg, dx, 0, dgb, 0) == 0);
    host_copy(gb, dgb, N);
    CHECK(memcmp(gb, wgb, sizeof gb) == 0);
    CHECK(lmx_cu_fc_bwd_data_lt(NULL, &o, LMX_FLOAT32, M, K, N, dgx, dg, dw, 0) == 0);
    CHECK(ran.lt == (mode == LMX_LT_ON) && ran.epi == LMX_LT_EPI_NONE);
    CHECK(mode != LMX_LT_AUTO || strcmp(ran.why, "auto: no epilogue to fuse") == 0);
    host_copy(gx, dgx, M * K);
    CHECK(memcmp(gx, wgx, sizeof gx) == 0);
  }
  cudaFree(dx), cudaFree(dw), cudaFree(db), cudaFree(dg), cudaFree(dout), cudaFree(dgw);
  cudaFree(dgb), cudaFree(dgx);
}
#endif

int main(void) {
  test_mode();
  test_choice();
  test_derive();
#ifdef LUAMX_CUDA_SIM
  test_sim_run();
#endif
  return check_summary();
}
