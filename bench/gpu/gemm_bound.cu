// bench/gpu/gemm_bound.cu — the GEMM bound for bench/gpu: cuBLAS sgemm (float32, TF32 off)
// and hgemm (float16 in/out, float32 accumulate, tensor cores) rates on the GPU it runs on,
// measured in the same run as the luamx workloads. Large square products give the
// machine's sustained GEMM rate; the workload rows give the rate at shapes the workloads
// actually multiply. Device memory is filled with random values (never zeros) and every
// product is timed with CUDA events after a warm-up; the median of 20 timings is printed.
//
//   nvcc -O2 -o gemm_bound bench/gpu/gemm_bound.cu -lcublas && ./gemm_bound
//
// Prints `RESULT GEMM <name> <TFLOP/s>` lines (bench/gpu/run.sh reads them).
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                      \
  do {                                                                             \
    cudaError_t e_ = (x);                                                          \
    if (e_ != cudaSuccess) {                                                       \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)
#define CB(x)                                                                      \
  do {                                                                             \
    cublasStatus_t s_ = (x);                                                       \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                             \
      std::fprintf(stderr, "%s:%d: cuBLAS status %d\n", __FILE__, __LINE__, (int)s_); \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

__global__ void fill_f32(float *p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    unsigned x = (unsigned)i * 2654435761u ^ seed;
    x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
    p[i] = (x & 0xffff) / 65536.0f - 0.5f;
  }
}
__global__ void to_half(__half *h, const float *f, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    h[i] = __float2half(f[i]);
}

struct Shape { const char *name; int m, n, k; };

static double time_gemm(cublasHandle_t h, bool half, const Shape &s, void *A, void *B, void *C) {
  float alpha = 1.f, beta = 0.f;
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  auto run = [&]() {
    if (half)
      CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, s.m, s.n, s.k, &alpha, A, CUDA_R_16F, s.m, B,
                      CUDA_R_16F, s.k, &beta, C, CUDA_R_16F, s.m, CUBLAS_COMPUTE_32F,
                      CUBLAS_GEMM_DEFAULT));
    else
      CB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, s.m, s.n, s.k, &alpha, (const float *)A, s.m,
                     (const float *)B, s.k, &beta, (float *)C, s.m));
  };
  for (int i = 0; i < 3; i++) run();
  std::vector<float> ms;
  int reps = std::max(1, (int)(2e10 / (2.0 * s.m * s.n * s.k)));  // ~20 GFLOP per timing
  for (int t = 0; t < 20; t++) {
    CK(cudaEventRecord(e0));
    for (int r = 0; r < reps; r++) run();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float x; CK(cudaEventElapsedTime(&x, e0, e1));
    ms.push_back(x / reps);
  }
  std::sort(ms.begin(), ms.end());
  CK(cudaEventDestroy(e0)); CK(cudaEventDestroy(e1));
  return 2.0 * s.m * s.n * s.k / (ms[ms.size() / 2] * 1e-3) / 1e12;
}

int main() {
  const Shape shapes[] = {
      {"square8192", 8192, 8192, 8192},
      {"w1_fc1", 512, 1024, 784},       // W1 at batch 1024: weight 512x784, batch columns
      {"w3_decoder", 10000, 4096, 200},  // W3 at batch 128 x 32 steps: FC 200 -> 10000
      {"r50_conv3x3", 256, 3136 * 8, 2304},  // ResNet-50 stage-2 3x3 conv as im2col GEMM
  };
  size_t maxe = 0;
  for (const Shape &s : shapes)
    maxe = std::max({maxe, (size_t)s.m * s.k, (size_t)s.k * s.n, (size_t)s.m * s.n});
  float *f[3];
  __half *h[3];
  for (int i = 0; i < 3; i++) {
    CK(cudaMalloc(&f[i], maxe * sizeof(float)));
    CK(cudaMalloc(&h[i], maxe * sizeof(__half)));
    fill_f32<<<1024, 256>>>(f[i], maxe, 17u + i);
    to_half<<<1024, 256>>>(h[i], f[i], maxe);
  }
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  cublasHandle_t hd;
  CB(cublasCreate(&hd));
  CB(cublasSetMathMode(hd, CUBLAS_DEFAULT_MATH));  // float32 stays float32 (no TF32)
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  std::printf("# %s, %d SMs\n", p.name, p.multiProcessorCount);
  for (const Shape &s : shapes) {
    std::printf("RESULT GEMM sgemm_%s %.2f\n", s.name, time_gemm(hd, false, s, f[0], f[1], f[2]));
    std::printf("RESULT GEMM hgemm_%s %.2f\n", s.name, time_gemm(hd, true, s, h[0], h[1], h[2]));
  }
  CB(cublasDestroy(hd));
  return 0;
}
