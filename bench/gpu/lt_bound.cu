// bench/gpu/lt_bound.cu — cuBLAS against cuBLASLt at the FullyConnected shapes of W1, W2,
// W3 and ResNet-50 (bench/gpu's batches), to settle the `auto` rule of
// kernels/cuda/blaslt_args.c (lmx_lt_choose), which no GPU has measured yet.
//
// Both sides compute what luamx's FullyConnected computes, from the same row-major
// requests luamx derives (kernels/cuda/blaslt_args.c is compiled in):
//   fwd      out[m,n] = x[m,k]·w[n,k]ᵀ + b[n]: cuBLAS GEMM then a bias kernel, against one
//            cublasLtMatmul with the BIAS epilogue;
//   fwd_nob  the same without a bias: cuBLAS GEMM against cublasLtMatmul (no epilogue);
//   bwd_w    gw[n,k] = g[m,n]ᵀ·x[m,k] and gb[n] = Σ_rows g: cuBLAS GEMM then a column-sum
//            kernel, against one cublasLtMatmul with BGRADB.
// float32 (no TF32) and float16 with float32 accumulation. cuBLASLt gets a 4 MiB
// workspace (luamx's LMX_LT_WS_BYTES) and the heuristic's first algorithm; each case is
// timed with CUDA events after a warm-up, median of 15 timings.
//
//   nvcc -O2 -Isrc -o lt_bound bench/gpu/lt_bound.cu kernels/cuda/blaslt_args.c
//        -lcublas -lcublasLt && ./lt_bound          (one command line)
//
// Prints `RESULT LT <shape>_<dtype>_<case>_cublas <us>` and `..._lt <us>` lines
// (bench/gpu/report.lua tabulates them), or `..._lt none` where cuBLASLt offers no
// algorithm. Not a test.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "../../kernels/cuda/blaslt_args.h"
#include "luamx.h"

#define CK(x)                                                                           \
  do {                                                                                  \
    cudaError_t e_ = (x);                                                               \
    if (e_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));  \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)
#define CB(x)                                                                           \
  do {                                                                                  \
    cublasStatus_t s_ = (x);                                                            \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                  \
      std::fprintf(stderr, "%s:%d: cuBLAS status %d\n", __FILE__, __LINE__, (int)s_);   \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

__global__ void fill(float *f, __half *h, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    unsigned x = (unsigned)i * 2654435761u ^ seed;
    x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
    f[i] = (x & 0xffff) / 65536.0f - 0.5f;
    h[i] = __float2half(f[i]);
  }
}

template <typename T> __device__ float ld(const T *p, size_t i) { return (float)p[i]; }
template <> __device__ float ld<__half>(const __half *p, size_t i) { return __half2float(p[i]); }
template <typename T> __device__ void st(T *p, size_t i, float v) { p[i] = v; }
template <> __device__ void st<__half>(__half *p, size_t i, float v) { p[i] = __float2half(v); }

// luamx's kernels of the cuBLAS path (kernels/cuda/gemm.cu): bias rows, column sums
template <typename T> __global__ void bias_rows(int m, int n, T *out, const T *b) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (size_t)m * n;
       i += (size_t)gridDim.x * blockDim.x)
    st(out, i, ld(out, i) + ld(b, i % n));
}
template <typename T> __global__ void sum_rows(int m, int n, T *out, const T *x) {
  for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < (size_t)n;
       j += (size_t)gridDim.x * blockDim.x) {
    float v = 0;
    for (int r = 0; r < m; r++) v += ld(x, (size_t)r * n + j);
    st(out, j, v);
  }
}

static double time_us(const std::function<void()> &run) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  for (int i = 0; i < 3; i++) run();
  std::vector<float> ms;
  for (int t = 0; t < 15; t++) {
    CK(cudaEventRecord(e0));
    for (int r = 0; r < 10; r++) run();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float x; CK(cudaEventElapsedTime(&x, e0, e1));
    ms.push_back(x * 100.0f);  // µs per run (10 runs)
  }
  CK(cudaEventDestroy(e0)); CK(cudaEventDestroy(e1));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// the derived call as luamx's blaslt.cu makes it: descriptor, layouts, first heuristic algo
struct LtPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo;
  bool ok = false;
};

static LtPlan lt_plan(cublasLtHandle_t h, const lmx_lt_key &k) {
  LtPlan p;
  CB(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t ta = k.transa ? CUBLAS_OP_T : CUBLAS_OP_N, tb = k.transb ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasLtEpilogue_t epi = (cublasLtEpilogue_t)k.epilogue;
  cudaDataType_t bt = (cudaDataType_t)k.type;
  CB(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  CB(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  CB(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
  if (epi != CUBLASLT_EPILOGUE_DEFAULT)
    CB(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
  const lmx_lt_layout *ls[3] = {&k.a, &k.b, &k.c};
  cublasLtMatrixLayout_t *out[3] = {&p.a, &p.b, &p.c};
  for (int i = 0; i < 3; i++)
    CB(cublasLtMatrixLayoutCreate(out[i], (cudaDataType_t)ls[i]->type, (uint64_t)ls[i]->rows,
                                  (uint64_t)ls[i]->cols, ls[i]->ld));
  cublasLtMatmulPreference_t pref;
  CB(cublasLtMatmulPreferenceCreate(&pref));
  uint64_t ws = k.ws_bytes;
  CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  cublasLtMatmulHeuristicResult_t res;
  int found = 0;
  cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(h, p.desc, p.a, p.b, p.c, p.c, pref, 1, &res, &found);
  CB(cublasLtMatmulPreferenceDestroy(pref));
  p.ok = s == CUBLAS_STATUS_SUCCESS && found > 0;
  if (p.ok) p.algo = res.algo;
  return p;
}

struct Fc { const char *name; int m, k, n; };

int main() {
  const Fc shapes[] = {
      {"w1_fc1", 1024, 784, 512}, {"w1_fc2", 1024, 512, 512}, {"w1_fc3", 1024, 512, 10},
      {"w2_fc1", 512, 800, 500},  {"w2_fc2", 512, 500, 10},
      {"w3_pred", 128 * 35, 200, 10000},  // batch 128 x the mean bucket length
      {"r50_fc", 64, 2048, 1000},
  };
  size_t maxe = 0;
  for (const Fc &s : shapes)
    maxe = std::max({maxe, (size_t)s.m * s.k, (size_t)s.n * s.k, (size_t)s.m * s.n});
  float *f[6];
  __half *hh[6];
  for (int i = 0; i < 6; i++) {
    CK(cudaMalloc(&f[i], maxe * sizeof(float)));
    CK(cudaMalloc(&hh[i], maxe * sizeof(__half)));
    fill<<<1024, 256>>>(f[i], hh[i], maxe, 31u + i);
  }
  void *ws;
  CK(cudaMalloc(&ws, LMX_LT_WS_BYTES));
  CK(cudaDeviceSynchronize());
  cublasHandle_t hb;
  CB(cublasCreate(&hb));
  CB(cublasSetMathMode(hb, CUBLAS_DEFAULT_MATH));
  cublasLtHandle_t hl;
  CB(cublasLtCreate(&hl));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# %s, %d SMs: cuBLAS vs cuBLASLt at FullyConnected shapes\n", prop.name,
              prop.multiProcessorCount);
  for (const Fc &s : shapes)
    for (int half = 0; half < 2; half++) {
      void *X = half ? (void *)hh[0] : (void *)f[0], *W = half ? (void *)hh[1] : (void *)f[1];
      void *O = half ? (void *)hh[2] : (void *)f[2], *B = half ? (void *)hh[3] : (void *)f[3];
      void *Gb = half ? (void *)hh[4] : (void *)f[4], *Gw = half ? (void *)hh[5] : (void *)f[5];
      int dt = half ? LMX_FLOAT16 : LMX_FLOAT32;
      cudaDataType_t ct = half ? CUDA_R_16F : CUDA_R_32F;
      float one = 1.f, zero = 0.f;
      // the three cases as luamx's requests (kernels/cuda/gemm.cu's lmx_cu_fc_*_lt)
      struct Case { const char *what; lmx_lt_req r; } cases[3] = {
          {"fwd", {dt, 0, 1, LMX_LT_EPI_BIAS, s.m, s.n, s.k, 1.0, 0.0, X, s.k, W, s.k, O, s.n, B}},
          {"fwd_nob", {dt, 0, 1, LMX_LT_EPI_NONE, s.m, s.n, s.k, 1.0, 0.0, X, s.k, W, s.k, O, s.n, nullptr}},
          {"bwd_w", {dt, 1, 0, LMX_LT_EPI_BGRADB, s.n, s.k, s.m, 1.0, 0.0, O, s.n, X, s.k, Gw, s.k, Gb}},
      };
      for (const Case &cs : cases) {
        lmx_lt_call c;
        char msg[200];
        if (lmx_lt_derive(&cs.r, LMX_LT_WS_BYTES, &c, msg, sizeof msg)) {
          std::fprintf(stderr, "%s: %s\n", s.name, msg);
          return 1;
        }
        const lmx_lt_key &k = c.key;
        cublasOperation_t ta = k.transa ? CUBLAS_OP_T : CUBLAS_OP_N;
        cublasOperation_t tb = k.transb ? CUBLAS_OP_T : CUBLAS_OP_N;
        auto gemm = [&]() {
          CB(cublasGemmEx(hb, ta, tb, k.m, k.n, k.k, &one, c.A, ct, (int)k.a.ld, c.B, ct,
                          (int)k.b.ld, &zero, c.C, ct, (int)k.c.ld, CUBLAS_COMPUTE_32F,
                          CUBLAS_GEMM_DEFAULT));
        };
        std::function<void()> cub = [&]() {
          gemm();
          if (cs.r.epi == LMX_LT_EPI_BIAS) {
            if (half) bias_rows<<<1024, 256>>>(s.m, s.n, (__half *)O, (const __half *)B);
            else bias_rows<<<1024, 256>>>(s.m, s.n, (float *)O, (const float *)B);
          } else if (cs.r.epi == LMX_LT_EPI_BGRADB) {
            int blocks = (s.n + 255) / 256;
            if (half) sum_rows<<<blocks, 256>>>(s.m, s.n, (__half *)Gb, (const __half *)O);
            else sum_rows<<<blocks, 256>>>(s.m, s.n, (float *)Gb, (const float *)O);
          }
        };
        char id[96];
        std::snprintf(id, sizeof id, "%s_%s_%s", s.name, half ? "float16" : "float32", cs.what);
        std::printf("RESULT LT %s_cublas %.2f\n", id, time_us(cub));
        LtPlan p = lt_plan(hl, k);
        if (!p.ok) {
          std::printf("RESULT LT %s_lt none\n", id);
          continue;
        }
        if (c.bias)
          CB(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &c.bias,
                                            sizeof c.bias));
        std::function<void()> lt = [&]() {
          CB(cublasLtMatmul(hl, p.desc, &c.alpha, c.A, p.a, c.B, p.b, &c.beta, c.C, p.c, c.C,
                            p.c, &p.algo, ws, LMX_LT_WS_BYTES, 0));
        };
        std::printf("RESULT LT %s_lt %.2f\n", id, time_us(lt));
        cublasLtMatmulDescDestroy(p.desc);
        cublasLtMatrixLayoutDestroy(p.a), cublasLtMatrixLayoutDestroy(p.b);
        cublasLtMatrixLayoutDestroy(p.c);
      }
    }
  CK(cudaGetLastError());
  cublasLtDestroy(hl);
  CB(cublasDestroy(hb));
  return 0;
}
