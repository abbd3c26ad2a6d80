/* blas_api.cu — executes derived GEMM calls (blas_api.h).
 *
 * Real build: cuBLAS is opened with dlopen on first use (libcublas.so.13, then
 * libcublas.so), so libluamx loads on machines without it; a failure is remembered and
 * every later call returns LMX_CU_GEMM_ELIB with lmx_cu_blas_error() saying why. One
 * cublasHandle per device (the current device at the call), created on first use in
 * CUBLAS_DEFAULT_MATH (no TF32: float32 products stay IEEE float32). A handle's stream is
 * set before each call under a per-device lock, since executors on several threads may
 * share a device. cuBLAS keeps its own workspace per handle/stream.
 *
 * Simulator build (LUAMX_CUDA_SIM): device pointers are host pointers and launches run
 * synchronously, so the call goes to OpenBLAS's cblas_?gemm(CblasColMajor, ...) with
 * exactly the derived arguments, batch by batch. float16 has no OpenBLAS routine: the
 * operands are widened to float32 (lmx_f16_to_f32, exact), multiplied with sgemm, and the
 * result rounded back to float16 — cuBLAS's float32-compute semantics up to summation
 * order.
 */
#include <string.h>

#include "blas_api.h"
#include "cuda_common.cuh"

extern "C" {
#include "../../src/luamx.h"
}

#ifdef LUAMX_CUDA_SIM
#include <cblas.h>

extern "C" {
#include "../../src/core/alloc.h"
#include "../../src/tensor/dtype.h"
}

const char *lmx_cu_blas_error(void) { return ""; }

/* elements of a column-major rows x cols matrix with leading dimension ld */
static size_t span(int rows, int cols, int ld) {
  return rows == 0 || cols == 0 ? 0 : (size_t)ld * (size_t)(cols - 1) + (size_t)rows;
}

static float *widen(const void *p, size_t n) {
  float *f = (float *)lmx_alloc(n ? n * sizeof(float) : 1);
  const uint16_t *h = (const uint16_t *)p;
  for (size_t i = 0; f && i < n; i++) f[i] = lmx_f16_to_f32(h[i]);
  return f;
}

static int run_f16(const lmx_cu_gemm_call *c, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb) {
  size_t na = span(c->transa ? c->k : c->m, c->transa ? c->m : c->k, c->lda);
  size_t nb = span(c->transb ? c->n : c->k, c->transb ? c->k : c->n, c->ldb);
  size_t nc = span(c->m, c->n, c->ldc);
  for (int b = 0; b < c->batch; b++) {
    const uint16_t *A = (const uint16_t *)c->A + (size_t)c->sa * b;
    const uint16_t *B = (const uint16_t *)c->B + (size_t)c->sb * b;
    uint16_t *C = (uint16_t *)c->C + (size_t)c->sc * b;
    float *fa = widen(A, na), *fb = widen(B, nb), *fc = widen(C, nc);
    if (!fa || !fb || !fc) {
      lmx_free(fa), lmx_free(fb), lmx_free(fc);
      return 2; /* cudaErrorMemoryAllocation */
    }
    if (c->beta == 0) memset(fc, 0, nc * sizeof(float)); /* BLAS: beta 0 ignores C */
    cblas_sgemm(CblasColMajor, ta, tb, c->m, c->n, c->k, (float)c->alpha, fa, c->lda, fb,
                c->ldb, (float)c->beta, fc, c->ldc);
    for (int j = 0; j < c->n; j++)
      for (int i = 0; i < c->m; i++) {
        size_t q = (size_t)j * c->ldc + i;
        C[q] = lmx_f32_to_f16(fc[q]);
      }
    lmx_free(fa), lmx_free(fb), lmx_free(fc);
  }
  return 0;
}

int lmx_cu_blas_run(lmx_cu_stream s, const lmx_cu_gemm_call *c) {
  (void)s;
  CBLAS_TRANSPOSE ta = c->transa ? CblasTrans : CblasNoTrans;
  CBLAS_TRANSPOSE tb = c->transb ? CblasTrans : CblasNoTrans;
  if (c->dt == LMX_FLOAT16) return run_f16(c, ta, tb);
  for (int b = 0; b < c->batch; b++) {
    if (c->dt == LMX_FLOAT32)
      cblas_sgemm(CblasColMajor, ta, tb, c->m, c->n, c->k, (float)c->alpha,
                  (const float *)c->A + c->sa * b, c->lda, (const float *)c->B + c->sb * b,
                  c->ldb, (float)c->beta, (float *)c->C + c->sc * b, c->ldc);
    else
      cblas_dgemm(CblasColMajor, ta, tb, c->m, c->n, c->k, c->alpha,
                  (const double *)c->A + c->sa * b, c->lda, (const double *)c->B + c->sb * b,
                  c->ldb, c->beta, (double *)c->C + c->sc * b, c->ldc);
  }
  return 0;
}

#else /* real cuBLAS through dlopen */
#include <cublas_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

enum { MAX_DEV = 64 };

static struct {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSetMathMode) set_math;
  decltype(&cublasSgemm_v2) sgemm;
  decltype(&cublasDgemm_v2) dgemm;
  decltype(&cublasSgemmStridedBatched) sgemm_sb;
  decltype(&cublasDgemmStridedBatched) dgemm_sb;
  /* spelled out: C++ overloads these two names */
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                            int, const void *, const void *, cudaDataType, int, const void *,
                            cudaDataType, int, const void *, void *, cudaDataType, int,
                            cublasComputeType_t, cublasGemmAlgo_t);
  cublasStatus_t (*gemm_sb_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                               int, const void *, const void *, cudaDataType, int, long long,
                               const void *, cudaDataType, int, long long, const void *,
                               void *, cudaDataType, int, long long, int, cublasComputeType_t,
                               cublasGemmAlgo_t);
} B;
static int opened; /* 0 not tried, 1 ok, -1 failed (under lock) */
static char open_err[256];
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t dev_lock[MAX_DEV];
static cublasHandle_t handles[MAX_DEV];
static pthread_once_t locks_once = PTHREAD_ONCE_INIT;

static void init_locks(void) {
  for (int i = 0; i < MAX_DEV; i++) pthread_mutex_init(&dev_lock[i], NULL);
}

const char *lmx_cu_blas_error(void) { return open_err; }

static int open_cublas(void) {
  pthread_mutex_lock(&open_lock);
  if (!opened) {
    void *h = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!h) h = dlopen("libcublas.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      snprintf(open_err, sizeof open_err, "cannot open cuBLAS (libcublas.so.13): %s", dlerror());
      opened = -1;
    } else {
#define SYM(field, name)                                                                   \
  if (opened == 0 && !(*(void **)&B.field = dlsym(h, name))) {                             \
    snprintf(open_err, sizeof open_err, "cuBLAS lacks %s", name);                          \
    opened = -1;                                                                           \
  }
      SYM(create, "cublasCreate_v2") SYM(set_stream, "cublasSetStream_v2")
      SYM(set_math, "cublasSetMathMode") SYM(sgemm, "cublasSgemm_v2")
      SYM(dgemm, "cublasDgemm_v2") SYM(sgemm_sb, "cublasSgemmStridedBatched")
      SYM(dgemm_sb, "cublasDgemmStridedBatched") SYM(gemm_ex, "cublasGemmEx")
      SYM(gemm_sb_ex, "cublasGemmStridedBatchedEx")
#undef SYM
      if (opened == 0) opened = 1;
    }
  }
  int ok = opened == 1;
  pthread_mutex_unlock(&open_lock);
  return ok;
}

static int call(const lmx_cu_gemm_call *c, cublasHandle_t h) {
  cublasOperation_t ta = c->transa ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t tb = c->transb ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasStatus_t st;
  if (c->dt == LMX_FLOAT32) {
    float al = (float)c->alpha, be = (float)c->beta;
    const float *A = (const float *)c->A, *Bm = (const float *)c->B;
    st = c->batch == 1
             ? B.sgemm(h, ta, tb, c->m, c->n, c->k, &al, A, c->lda, Bm, c->ldb, &be,
                       (float *)c->C, c->ldc)
             : B.sgemm_sb(h, ta, tb, c->m, c->n, c->k, &al, A, c->lda, c->sa, Bm, c->ldb,
                          c->sb, &be, (float *)c->C, c->ldc, c->sc, c->batch);
  } else if (c->dt == LMX_FLOAT64) {
    double al = c->alpha, be = c->beta;
    const double *A = (const double *)c->A, *Bm = (const double *)c->B;
    st = c->batch == 1
             ? B.dgemm(h, ta, tb, c->m, c->n, c->k, &al, A, c->lda, Bm, c->ldb, &be,
                       (double *)c->C, c->ldc)
             : B.dgemm_sb(h, ta, tb, c->m, c->n, c->k, &al, A, c->lda, c->sa, Bm, c->ldb,
                          c->sb, &be, (double *)c->C, c->ldc, c->sc, c->batch);
  } else {
    float al = (float)c->alpha, be = (float)c->beta;
    st = c->batch == 1
             ? B.gemm_ex(h, ta, tb, c->m, c->n, c->k, &al, c->A, CUDA_R_16F, c->lda, c->B,
                         CUDA_R_16F, c->ldb, &be, c->C, CUDA_R_16F, c->ldc,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)
             : B.gemm_sb_ex(h, ta, tb, c->m, c->n, c->k, &al, c->A, CUDA_R_16F, c->lda, c->sa,
                            c->B, CUDA_R_16F, c->ldb, c->sb, &be, c->C, CUDA_R_16F, c->ldc,
                            c->sc, c->batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  }
  return st == CUBLAS_STATUS_SUCCESS ? 0 : LMX_CU_GEMM_EBLAS + (int)st;
}

int lmx_cu_blas_run(lmx_cu_stream s, const lmx_cu_gemm_call *c) {
  if (!open_cublas()) return LMX_CU_GEMM_ELIB;
  pthread_once(&locks_once, init_locks);
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return (int)e;
  if (dev < 0 || dev >= MAX_DEV) return (int)cudaErrorInvalidDevice;
  pthread_mutex_lock(&dev_lock[dev]);
  int rc = 0;
  if (!handles[dev]) {
    cublasStatus_t st = B.create(&handles[dev]);
    if (st == CUBLAS_STATUS_SUCCESS) st = B.set_math(handles[dev], CUBLAS_DEFAULT_MATH);
    if (st != CUBLAS_STATUS_SUCCESS) rc = LMX_CU_GEMM_EBLAS + (int)st, handles[dev] = NULL;
  }
  if (!rc) {
    cublasStatus_t st = B.set_stream(handles[dev], (cudaStream_t)s);
    rc = st == CUBLAS_STATUS_SUCCESS ? call(c, handles[dev]) : LMX_CU_GEMM_EBLAS + (int)st;
  }
  pthread_mutex_unlock(&dev_lock[dev]);
  return rc;
}
#endif
