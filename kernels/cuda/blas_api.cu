/* blas_api.cu — executes derived GEMM calls (blas_api.h).
 *
 * Both builds keep one BLAS state per device in the device runtime's library slot
 * (lmx_cuda_lib_handle(dev, LMX_LIB_CUBLAS, ...), src/device/cuda_state.h), made on the
 * first GEMM on that device (the current device at the call), and run a call under a
 * per-device lock, since executors on several threads may share a device. A failure to
 * set up returns LMX_CU_GEMM_ELIB and lmx_cu_blas_error() gives the runtime's message
 * (the calling thread's copy).
 *
 * Real build: cuBLAS comes from the runtime's loader (lmx_cuda_lib_sym(LMX_LIB_CUBLAS,
 * ...), src/device/cuda_libs.c: one dlopen, one message style for a missing library),
 * its symbols looked up once. The state is a cublasHandle in CUBLAS_DEFAULT_MATH (no
 * TF32: float32 products stay IEEE float32); its stream is set before each call. cuBLAS
 * keeps its own workspace per handle/stream.
 *
 * Simulator build (LUAMX_CUDA_SIM): device pointers are host pointers and launches run
 * synchronously, so the call goes to OpenBLAS's cblas_?gemm(CblasColMajor, ...) with
 * exactly the derived arguments, batch by batch. float16 has no OpenBLAS routine: the
 * operands are widened to float32 (lmx_f16_to_f32, exact), multiplied with sgemm, and the
 * result rounded back to float16 — cuBLAS's float32-compute semantics up to summation
 * order. The float32 copies live in the device's scratch (the simulator's BLAS state),
 * which only grows, so a training loop reaches a state with no host allocation per step.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "blas_api.h"
#include "cuda_common.cuh"

extern "C" {
#include "../../src/core/alloc.h"
#include "../../src/core/status.h"
#include "../../src/device/cuda_state.h"
#include "../../src/luamx.h"
}

static pthread_mutex_t dev_lock[LMX_CUDA_MAX_DEVICES];
/* the devices' states once made: read without the runtime's device lock, which a
 * device-to-host copy holds while it waits */
static void *dev_state[LMX_CUDA_MAX_DEVICES];
static pthread_once_t locks_once = PTHREAD_ONCE_INIT;
static thread_local char t_err[512];

static void init_locks(void) {
  for (int i = 0; i < LMX_CUDA_MAX_DEVICES; i++) pthread_mutex_init(&dev_lock[i], NULL);
}

const char *lmx_cu_blas_error(void) { return t_err; }

/* keeps the runtime's message for lmx_cu_blas_error; returns LMX_CU_GEMM_ELIB */
static int lib_error(void) {
  snprintf(t_err, sizeof t_err, "%s", lmx_errmsg());
  lmx_clear_error();
  return LMX_CU_GEMM_ELIB;
}

static int make_state(int dev_id, void *stream, void **h);

/* The current device's BLAS state and its lock (locked on success). */
static int state_lock(int *dev, void **h) {
  pthread_once(&locks_once, init_locks);
  cudaError_t e = cudaGetDevice(dev);
  if (e != cudaSuccess) return (int)e;
  if (*dev < 0 || *dev >= LMX_CUDA_MAX_DEVICES) return (int)cudaErrorInvalidDevice;
  *h = __atomic_load_n(&dev_state[*dev], __ATOMIC_ACQUIRE);
  if (!*h) {
    if (lmx_cuda_lib_handle(*dev, LMX_LIB_CUBLAS, make_state, h) != LMX_OK) return lib_error();
    __atomic_store_n(&dev_state[*dev], *h, __ATOMIC_RELEASE);
  }
  pthread_mutex_lock(&dev_lock[*dev]);
  return 0;
}

#ifdef LUAMX_CUDA_SIM
#include <cblas.h>

extern "C" {
#include "../../src/tensor/dtype.h"
}

/* the simulator's per-device BLAS state: float32 scratch for float16 products */
typedef struct sim_blas {
  float *buf;
  size_t cap; /* floats */
} sim_blas;

static int make_state(int dev_id, void *stream, void **h) {
  (void)dev_id, (void)stream;
  sim_blas *b = (sim_blas *)lmx_calloc(1, sizeof *b);
  if (!b) return lmx_fail_nomem("simulated BLAS state", sizeof *b);
  *h = b;
  return LMX_OK;
}

/* elements of a column-major rows x cols matrix with leading dimension ld */
static size_t span(int rows, int cols, int ld) {
  return rows == 0 || cols == 0 ? 0 : (size_t)ld * (size_t)(cols - 1) + (size_t)rows;
}

static void widen(float *f, const void *p, size_t n) {
  const uint16_t *h = (const uint16_t *)p;
  for (size_t i = 0; i < n; i++) f[i] = lmx_f16_to_f32(h[i]);
}

/* at least n floats of scratch in b (grows, never shrinks) */
static int reserve(sim_blas *b, size_t n) {
  if (n <= b->cap) return 0;
  float *f = (float *)lmx_alloc(n * sizeof(float));
  if (!f) return 2; /* cudaErrorMemoryAllocation */
  lmx_free(b->buf);
  b->buf = f, b->cap = n;
  return 0;
}

static int run_f16(sim_blas *sb, const lmx_cu_gemm_call *c, CBLAS_TRANSPOSE ta,
                   CBLAS_TRANSPOSE tb) {
  size_t na = span(c->transa ? c->k : c->m, c->transa ? c->m : c->k, c->lda);
  size_t nb = span(c->transb ? c->n : c->k, c->transb ? c->k : c->n, c->ldb);
  size_t nc = span(c->m, c->n, c->ldc);
  if (reserve(sb, na + nb + nc + 1)) return 2;
  float *fa = sb->buf, *fb = fa + na, *fc = fb + nb;
  for (int b = 0; b < c->batch; b++) {
    const uint16_t *A = (const uint16_t *)c->A + (size_t)c->sa * b;
    const uint16_t *B = (const uint16_t *)c->B + (size_t)c->sb * b;
    uint16_t *C = (uint16_t *)c->C + (size_t)c->sc * b;
    widen(fa, A, na), widen(fb, B, nb);
    if (c->beta == 0) memset(fc, 0, nc * sizeof(float)); /* BLAS: beta 0 ignores C */
    else widen(fc, C, nc);
    cblas_sgemm(CblasColMajor, ta, tb, c->m, c->n, c->k, (float)c->alpha, fa, c->lda, fb,
                c->ldb, (float)c->beta, fc, c->ldc);
    for (int j = 0; j < c->n; j++)
      for (int i = 0; i < c->m; i++) {
        size_t q = (size_t)j * c->ldc + i;
        C[q] = lmx_f32_to_f16(fc[q]);
      }
  }
  return 0;
}

/* the call with the device's state (its lock held) */
static int run_locked(lmx_cu_stream s, void *state, const lmx_cu_gemm_call *c) {
  (void)s;
  CBLAS_TRANSPOSE ta = c->transa ? CblasTrans : CblasNoTrans;
  CBLAS_TRANSPOSE tb = c->transb ? CblasTrans : CblasNoTrans;
  if (c->dt == LMX_FLOAT16) return run_f16((sim_blas *)state, c, ta, tb);
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

#else /* real cuBLAS, opened by the runtime's loader */
#include <cublas_api.h>

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
static int syms_ok; /* under sym_lock; a failure is retried (a library installed meanwhile) */
static pthread_mutex_t sym_lock = PTHREAD_MUTEX_INITIALIZER;

/* Looks cuBLAS's entry points up once: LMX_OK or the loader's error. */
static int load_syms(void) {
  pthread_mutex_lock(&sym_lock);
  int rc = LMX_OK;
  if (!syms_ok) {
#define SYM(field, name)                                                                   \
  if (rc == LMX_OK) {                                                                      \
    void *p_ = NULL;                                                                       \
    rc = lmx_cuda_lib_sym(LMX_LIB_CUBLAS, name, &p_);                                      \
    memcpy(&B.field, &p_, sizeof p_);                                                      \
  }
    SYM(create, "cublasCreate_v2") SYM(set_stream, "cublasSetStream_v2")
    SYM(set_math, "cublasSetMathMode") SYM(sgemm, "cublasSgemm_v2")
    SYM(dgemm, "cublasDgemm_v2") SYM(sgemm_sb, "cublasSgemmStridedBatched")
    SYM(dgemm_sb, "cublasDgemmStridedBatched") SYM(gemm_ex, "cublasGemmEx")
    SYM(gemm_sb_ex, "cublasGemmStridedBatchedEx")
#undef SYM
    syms_ok = rc == LMX_OK;
  }
  pthread_mutex_unlock(&sym_lock);
  return rc;
}

static int make_state(int dev_id, void *stream, void **h) {
  (void)dev_id, (void)stream;
  LMX_TRY(load_syms());
  cublasHandle_t hh = NULL;
  cublasStatus_t st = B.create(&hh);
  if (st != CUBLAS_STATUS_SUCCESS)
    return lmx_fail(LMX_ERR_DEVICE, "cublasCreate_v2 failed: cuBLAS status %d", (int)st);
  st = B.set_math(hh, CUBLAS_DEFAULT_MATH);
  if (st != CUBLAS_STATUS_SUCCESS) /* the handle is kept out of use, not destroyed */
    return lmx_fail(LMX_ERR_DEVICE, "cublasSetMathMode failed: cuBLAS status %d", (int)st);
  *h = hh;
  return LMX_OK;
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

/* the call with the device's handle (its lock held) */
static int run_locked(lmx_cu_stream s, void *state, const lmx_cu_gemm_call *c) {
  cublasHandle_t h = (cublasHandle_t)state;
  cublasStatus_t st = B.set_stream(h, (cudaStream_t)s);
  return st == CUBLAS_STATUS_SUCCESS ? call(c, h) : LMX_CU_GEMM_EBLAS + (int)st;
}
#endif

int lmx_cu_blas_run(lmx_cu_stream s, const lmx_cu_gemm_call *c) {
  int dev;
  void *h;
  int rc = state_lock(&dev, &h);
  if (rc) return rc;
  rc = run_locked(s, h, c);
  pthread_mutex_unlock(&dev_lock[dev]);
  return rc;
}
