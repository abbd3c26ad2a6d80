/* blaslt.cu — runs derived cublasLtMatmul calls (blaslt_args.h) for the FullyConnected
 * products (gemm.cu's lmx_cu_fc_*_lt). Answers 0 (done), LMX_CU_GEMM_SKIP (nothing
 * written: take the cuBLAS path, with a static string saying why), LMX_CU_GEMM_EBLAS + a
 * cublasStatus_t, or a cudaError_t.
 *
 * Real build: cuBLASLt (libcublasLt.so.13) is opened on first use through the runtime's
 * loader (src/device/cuda_libs.c; libluamx does not link it) and its entry points are
 * looked up once per process; a missing library or symbol leaves the Lt path off for the
 * process (every call answers SKIP, and cuBLAS runs). Per device (the current one at the
 * call): one cublasLtHandle and a table of plans, each made once per derived key (dtype,
 * transposes, epilogue, dims, layouts, pointer alignments, workspace size): the matmul
 * descriptor, the three matrix layouts (D shares C's) and the algorithm that
 * cublasLtMatmulAlgoGetHeuristic ranks first under those alignments and that workspace.
 * A steady loop reuses its plans and allocates nothing on the host; the per-call work is
 * setting the bias pointer on the plan's descriptor and one cublasLtMatmul on the
 * caller's stream with the caller's workspace (the op's planned workspace). A key for
 * which the heuristic offers nothing (or whose bias is under 16 bytes' alignment, or that
 * cublasLtMatmul refuses as NOT_SUPPORTED) is remembered as such and answers SKIP. The table
 * holds PLANS keys per device and then replaces the oldest (its objects destroyed). The
 * device's lock is held for the whole call (a descriptor is shared by the threads that
 * run one shape).
 *
 * Simulator build (LUAMX_CUDA_SIM): there is no cuBLASLt, so the derived call is carried
 * out in the order the cuBLAS path uses — BIAS with beta 0: D = bias rows, then the GEMM
 * with beta 1; with beta != 0: the GEMM, then D += bias rows; BGRADB: the GEMM, then the
 * column sum of the call's B (the request's A) — through the same OpenBLAS GEMM and the
 * same bias / column-sum kernels, so the simulated results equal the cuBLAS path's and
 * the derivation (operand swap, layouts, epilogue vectors) is exercised end to end by
 * every FullyConnected on a simulated GPU. Layouts the emulation does not cover (a
 * strided D with a bias, BGRADB on an untransposed request) answer SKIP.
 */
#include <pthread.h>
#include <string.h>

#include "../../src/luamx.h"
#include "blaslt_args.h"
#include "blas_api.h"
#include "cu_gemm.h"
#include "cuda_common.cuh"

#ifdef LUAMX_CUDA_SIM

int lmx_cu_lt_run(lmx_cu_stream s, const lmx_lt_call *c, void *ws, const char **why) {
  (void)ws;
  const char *skip = "a layout the simulator's cuBLASLt emulation does not cover";
  const struct lmx_lt_key *k = &c->key;
  int dt = k->type == LMX_LT_R_16F ? LMX_FLOAT16 : LMX_FLOAT32;
  lmx_cu_gemm_call g;
  memset(&g, 0, sizeof g);
  g.dt = dt, g.transa = k->transa, g.transb = k->transb;
  g.m = k->m, g.n = k->n, g.k = k->k;
  g.lda = (int)k->a.ld, g.ldb = (int)k->b.ld, g.ldc = (int)k->c.ld;
  g.batch = 1, g.alpha = c->alpha, g.beta = c->beta;
  g.A = c->A, g.B = c->B, g.C = c->C;
  int epi = k->epilogue;
  /* column-major D (m x n, ld ldc) is the row-major [n, m] the bias kernels take */
  if ((epi == LMX_LT_CU_EPI_BIAS && k->c.ld != k->m) ||
      (epi == LMX_LT_CU_EPI_BGRADB && (!k->transb || k->b.ld != k->n))) {
    if (why) *why = skip;
    return LMX_CU_GEMM_SKIP;
  }
  int rc = 0;
  if (epi == LMX_LT_CU_EPI_BIAS && c->beta == 0) {
    rc = lmx_cu_bias_rows(s, dt, k->n, k->m, c->C, c->bias, 0);
    g.beta = 1;
  }
  if (!rc) rc = lmx_cu_blas_run(s, &g);
  if (!rc && epi == LMX_LT_CU_EPI_BIAS && c->beta != 0)
    rc = lmx_cu_bias_rows(s, dt, k->n, k->m, c->C, c->bias, 1);
  /* the call's B, transposed, is stored as k rows of n: its column sums */
  if (!rc && epi == LMX_LT_CU_EPI_BGRADB)
    rc = lmx_cu_sum_rows(s, dt, k->k, k->n, c->bias, c->B, 0);
  return rc;
}

#else /* real cuBLASLt, opened by the runtime's loader */
#include <cublasLt.h>

extern "C" {
#include "../../src/core/alloc.h"
#include "../../src/core/status.h"
#include "../../src/device/cuda_libs.h"
}

static_assert((int)CUDA_R_32F == LMX_LT_R_32F && (int)CUDA_R_16F == LMX_LT_R_16F,
              "blaslt_args.h's data types are cudaDataType_t's");
static_assert((int)CUBLASLT_EPILOGUE_DEFAULT == LMX_LT_CU_EPI_DEFAULT &&
                  (int)CUBLASLT_EPILOGUE_BIAS == LMX_LT_CU_EPI_BIAS &&
                  (int)CUBLASLT_EPILOGUE_BGRADB == LMX_LT_CU_EPI_BGRADB,
              "blaslt_args.h's epilogues are cublasLtEpilogue_t's");

enum { MAX_DEV = 16, PLANS = 64 };

#define FN(name) decltype(&cublasLt##name) name
static struct {
  FN(Create);
  FN(MatmulDescCreate);
  FN(MatmulDescDestroy);
  FN(MatmulDescSetAttribute);
  FN(MatrixLayoutCreate);
  FN(MatrixLayoutDestroy);
  FN(MatmulPreferenceCreate);
  FN(MatmulPreferenceDestroy);
  FN(MatmulPreferenceSetAttribute);
  FN(MatmulAlgoGetHeuristic);
  FN(Matmul);
} L;
#undef FN

typedef struct plan {
  int used, has_algo;
  const char *why; /* when !has_algo: why the cuBLAS path runs */
  struct lmx_lt_key key;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t a, b, c;
  cublasLtMatmulAlgo_t algo;
} plan;

typedef struct dev_state {
  cublasLtHandle_t h;
  plan plans[PLANS];
  int next; /* the slot replaced next when the table is full */
} dev_state;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_ready; /* every symbol found */
static pthread_mutex_t g_lock[MAX_DEV];
static dev_state *g_dev[MAX_DEV];

static void load(void) {
  for (int i = 0; i < MAX_DEV; i++) pthread_mutex_init(&g_lock[i], NULL);
  int ok = 1;
#define SYM(field)                                                                         \
  if (ok) {                                                                                \
    void *p_ = NULL;                                                                       \
    ok = lmx_cuda_lib_sym(LMX_LIB_CUBLASLT, "cublasLt" #field, &p_) == 0;                  \
    memcpy(&L.field, &p_, sizeof p_);                                                      \
  }
  SYM(Create) SYM(MatmulDescCreate) SYM(MatmulDescDestroy) SYM(MatmulDescSetAttribute)
  SYM(MatrixLayoutCreate) SYM(MatrixLayoutDestroy) SYM(MatmulPreferenceCreate)
  SYM(MatmulPreferenceDestroy) SYM(MatmulPreferenceSetAttribute) SYM(MatmulAlgoGetHeuristic)
  SYM(Matmul)
#undef SYM
  g_ready = ok;
  if (!ok) lmx_clear_error(); /* no cuBLASLt is no error: cuBLAS runs instead */
}

static int st_rc(cublasStatus_t st) {
  return st == CUBLAS_STATUS_SUCCESS ? 0 : LMX_CU_GEMM_EBLAS + (int)st;
}

static void plan_free(plan *p) {
  if (p->desc) L.MatmulDescDestroy(p->desc);
  if (p->a) L.MatrixLayoutDestroy(p->a);
  if (p->b) L.MatrixLayoutDestroy(p->b);
  if (p->c) L.MatrixLayoutDestroy(p->c);
  memset(p, 0, sizeof *p);
}

static cublasStatus_t make_layout(const lmx_lt_layout *l, cublasLtMatrixLayout_t *out) {
  return L.MatrixLayoutCreate(out, (cudaDataType_t)l->type, (uint64_t)l->rows,
                              (uint64_t)l->cols, l->ld);
}

#define ATTR(call, obj, attr, v) call(obj, attr, &(v), sizeof(v))

/* Descriptors, layouts and the heuristic's choice for key k into p. 0 also when the
 * heuristic offered nothing (p->has_algo 0); a cuBLASLt error otherwise. */
static int plan_make(cublasLtHandle_t h, const struct lmx_lt_key *k, plan *p) {
  memset(p, 0, sizeof *p);
  memcpy(&p->key, k, sizeof *k);
  cublasStatus_t st = L.MatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasOperation_t ta = k->transa ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t tb = k->transb ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasLtEpilogue_t epi = (cublasLtEpilogue_t)k->epilogue;
  cudaDataType_t bias_type = (cudaDataType_t)k->type;
  if (!st) st = ATTR(L.MatmulDescSetAttribute, p->desc, CUBLASLT_MATMUL_DESC_TRANSA, ta);
  if (!st) st = ATTR(L.MatmulDescSetAttribute, p->desc, CUBLASLT_MATMUL_DESC_TRANSB, tb);
  if (!st) st = ATTR(L.MatmulDescSetAttribute, p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epi);
  if (!st && epi != CUBLASLT_EPILOGUE_DEFAULT)
    st = ATTR(L.MatmulDescSetAttribute, p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bias_type);
  if (!st) st = make_layout(&k->a, &p->a);
  if (!st) st = make_layout(&k->b, &p->b);
  if (!st) st = make_layout(&k->c, &p->c);
  cublasLtMatmulPreference_t pref = NULL;
  if (!st) st = L.MatmulPreferenceCreate(&pref);
  uint64_t ws = k->ws_bytes;
  uint32_t al[4] = {(uint32_t)k->align_a, (uint32_t)k->align_b, (uint32_t)k->align_c,
                    (uint32_t)k->align_c};
  if (!st)
    st = ATTR(L.MatmulPreferenceSetAttribute, pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, ws);
  if (!st)
    st = ATTR(L.MatmulPreferenceSetAttribute, pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, al[0]);
  if (!st)
    st = ATTR(L.MatmulPreferenceSetAttribute, pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, al[1]);
  if (!st)
    st = ATTR(L.MatmulPreferenceSetAttribute, pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, al[2]);
  if (!st)
    st = ATTR(L.MatmulPreferenceSetAttribute, pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, al[3]);
  cublasLtMatmulHeuristicResult_t res;
  int found = 0;
  if (!st)
    st = L.MatmulAlgoGetHeuristic(h, p->desc, p->a, p->b, p->c, p->c, pref, 1, &res, &found);
  if (pref) L.MatmulPreferenceDestroy(pref);
  int refused = st == CUBLAS_STATUS_NOT_SUPPORTED;
  if (refused) st = CUBLAS_STATUS_SUCCESS, found = 0;
  if (st) {
    plan_free(p);
    return st_rc(st);
  }
  p->used = 1;
  /* a bias vector under 16 bytes' alignment is left to the cuBLAS path: the heuristic is
   * not told of it, and cuBLASLt's epilogues read it in vectors */
  p->has_algo = found > 0 && res.state == CUBLAS_STATUS_SUCCESS &&
                (k->epilogue == LMX_LT_CU_EPI_DEFAULT || k->align_bias >= 16);
  if (p->has_algo) p->algo = res.algo;
  p->why = p->has_algo ? NULL
           : refused   ? "the cuBLASLt heuristic answered NOT_SUPPORTED"
           : found > 0 && res.state == CUBLAS_STATUS_SUCCESS
               ? "bias under 16 bytes' alignment"
               : "the cuBLASLt heuristic found no algorithm";
  return 0;
}

/* The current device's state (made on first use), its lock held on success. */
static int state_lock(int *dev, dev_state **out) {
  cudaError_t e = cudaGetDevice(dev);
  if (e != cudaSuccess) return (int)e;
  if (*dev < 0 || *dev >= MAX_DEV) return (int)cudaErrorInvalidDevice;
  pthread_mutex_lock(&g_lock[*dev]);
  if (!g_dev[*dev]) {
    dev_state *d = (dev_state *)lmx_calloc(1, sizeof *d);
    if (!d || L.Create(&d->h) != CUBLAS_STATUS_SUCCESS) {
      lmx_free(d);
      pthread_mutex_unlock(&g_lock[*dev]);
      return LMX_CU_GEMM_SKIP; /* no handle: the cuBLAS path */
    }
    g_dev[*dev] = d;
  }
  *out = g_dev[*dev];
  return 0;
}

static plan *find(dev_state *d, const struct lmx_lt_key *k) {
  for (int i = 0; i < PLANS; i++)
    if (d->plans[i].used && memcmp(&d->plans[i].key, k, sizeof *k) == 0) return &d->plans[i];
  return NULL;
}

int lmx_cu_lt_run(lmx_cu_stream s, const lmx_lt_call *c, void *ws, const char **why) {
  const char *skip = NULL;
  if (!why) why = &skip;
  pthread_once(&g_once, load);
  if (!g_ready) {
    *why = "cuBLASLt not loaded (libcublasLt.so.13 or a symbol missing)";
    return LMX_CU_GEMM_SKIP;
  }
  int dev;
  dev_state *d;
  int rc = state_lock(&dev, &d);
  if (rc == LMX_CU_GEMM_SKIP) *why = "no cuBLASLt handle (cublasLtCreate failed)";
  if (rc) return rc;
  plan *p = find(d, &c->key);
  if (!p) {
    p = &d->plans[d->next];
    d->next = (d->next + 1) % PLANS;
    if (p->used) plan_free(p);
    rc = plan_make(d->h, &c->key, p);
  }
  if (!rc && !p->has_algo) rc = LMX_CU_GEMM_SKIP, *why = p->why;
  if (!rc && c->bias)
    rc = st_rc(ATTR(L.MatmulDescSetAttribute, p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                    c->bias));
  if (!rc) {
    cublasStatus_t st =
        L.Matmul(d->h, p->desc, &c->alpha, c->A, p->a, c->B, p->b, &c->beta, c->C, p->c, c->C,
                 p->c, &p->algo, c->key.ws_bytes ? ws : NULL, (size_t)c->key.ws_bytes,
                 (cudaStream_t)s);
    /* refused before anything ran: the cuBLAS path, and not this plan again */
    if (st == CUBLAS_STATUS_NOT_SUPPORTED) {
      p->has_algo = 0, rc = LMX_CU_GEMM_SKIP;
      *why = p->why = "cublasLtMatmul answered NOT_SUPPORTED";
    } else {
      rc = st_rc(st);
    }
  }
  pthread_mutex_unlock(&g_lock[dev]);
  return rc;
}
#endif
