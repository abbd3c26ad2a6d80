/* cudnn_exec.cu — runs derived Convolution / Pooling / BatchNorm calls through cuDNN
 * (cu_dnn.h), and holds what the RNN's file (cudnn_rnn_exec.cu) shares through
 * cudnn_exec.cuh: the function table, the handles and locks, the descriptor cache.
 * Built only in real CUDA builds that found cudnn.h; never in the simulator.
 *
 * Loading: libluamx does not link cuDNN. On first use the environment is read
 * (LUAMX_CUDNN=0 disables cuDNN for the process) and every function below is resolved
 * with lmx_cuda_lib_sym(LMX_LIB_CUDNN, ...) into one table, once per process; a missing
 * library or symbol leaves cuDNN off and every call answers LMX_CU_DNN_SKIP, so the
 * caller's own kernels run. Handles: one cudnnHandle per device (the current device at
 * the call), created on first use; its stream is set to the caller's (luamx's stream of
 * that device) under the device's lock, which is held for the whole operation.
 * Descriptors are made once per configuration and kept in a per-device cache keyed by
 * the derived arguments (cudnn_cache.h: least recently used entries are destroyed when
 * its slots run out), so a steady training step creates none; the
 * convolution algorithms are chosen by cudnnGetConvolution*Algorithm_v7 — the fastest
 * whose workspace fits the op's workspace (the im2col buffer the own path would use) and,
 * for float32, that runs in FMA math (no TF32, like the own cuBLAS path) — and cached
 * per (device, direction, arguments, workspace size). A setup failure or NOT_SUPPORTED
 * before anything is written gives LMX_CU_DNN_SKIP.
 * BatchNorm: the moving statistics follow luamx's rule (biased variance), not cuDNN's
 * (unbiased): the training call writes the batch mean and unbiased variance into
 * workspace scratch (factor 1) and k_bn_fold folds them (cudnn_args.h). fix_gamma's
 * scale is a vector of ones in the workspace; the inference call's mean / invstd outputs
 * come from k_bn_inf_stats (1/sqrt(moving var + eps), as norm.cu).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cudnn.h>

#include "../../src/luamx.h"
#include "cu_convert.h"
#include "cu_dnn.h"
#include "cu_elementwise.h"
#include "cu_norm.h"
#include "cudnn_cache.h"
#include "cudnn_exec.cuh"
#include "cuda_common.cuh"

extern "C" {
#include "../../src/core/status.h"
#include "../../src/device/cuda_libs.h"
}

enum { MAX_DEV = 16, CACHE_N = 128, NPERF = 16 };

lmx_cudnn_fns lmx_cudnn_fn;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_ready;
static pthread_mutex_t g_dev_lock[MAX_DEV];
static cudnnHandle_t g_handle[MAX_DEV];
static lmx_dnn_cache g_descs[MAX_DEV]; /* per device, under its lock */
static char g_off_why[200];            /* why cuDNN is off (lmx_cu_dnn_why_off) */

static void descs_destroy(void *user, int kind, lmx_dnn_descs *d);
static int descs_create(void *user, int kind, const void *key, lmx_dnn_descs *d);

static void load(void) {
  for (int i = 0; i < MAX_DEV; i++) {
    pthread_mutex_init(&g_dev_lock[i], NULL);
    lmx_dnn_cache_init(&g_descs[i], descs_create, descs_destroy, &g_handle[i]);
  }
  const char *env = getenv("LUAMX_CUDNN");
  if (env && strcmp(env, "0") == 0) {
    snprintf(g_off_why, sizeof g_off_why, "LUAMX_CUDNN=0 in the environment");
    return;
  }
  void *lib = NULL;
  if (lmx_cuda_lib_open(LMX_LIB_CUDNN, &lib) != LMX_OK) {
    snprintf(g_off_why, sizeof g_off_why, "%s", lmx_last_error());
    lmx_clear_error();
    return;
  }
  int ok = 1;
#define SYM(name) ok = ok && lmx_cuda_lib_sym(LMX_LIB_CUDNN, "cudnn" #name, (void **)&D.name) == 0;
  SYM(Create) SYM(SetStream) SYM(GetErrorString)
  SYM(CreateTensorDescriptor) SYM(SetTensorNdDescriptor)
  SYM(DestroyTensorDescriptor) SYM(CreateFilterDescriptor)
  SYM(SetFilterNdDescriptor) SYM(DestroyFilterDescriptor)
  SYM(CreateConvolutionDescriptor) SYM(SetConvolutionNdDescriptor)
  SYM(SetConvolutionGroupCount) SYM(SetConvolutionMathType)
  SYM(DestroyConvolutionDescriptor) SYM(GetConvolutionForwardAlgorithm_v7)
  SYM(GetConvolutionBackwardDataAlgorithm_v7)
  SYM(GetConvolutionBackwardFilterAlgorithm_v7) SYM(ConvolutionForward)
  SYM(ConvolutionBackwardData) SYM(ConvolutionBackwardFilter)
  SYM(ConvolutionBackwardBias) SYM(AddTensor) SYM(CreatePoolingDescriptor)
  SYM(SetPoolingNdDescriptor) SYM(DestroyPoolingDescriptor) SYM(PoolingForward)
  SYM(PoolingBackward) SYM(BatchNormalizationForwardTraining)
  SYM(BatchNormalizationForwardInference) SYM(BatchNormalizationBackward)
  SYM(CreateDropoutDescriptor) SYM(SetDropoutDescriptor) SYM(DestroyDropoutDescriptor)
  SYM(CreateRNNDescriptor) SYM(SetRNNDescriptor_v8) SYM(DestroyRNNDescriptor)
  SYM(CreateRNNDataDescriptor) SYM(SetRNNDataDescriptor) SYM(DestroyRNNDataDescriptor)
  SYM(GetRNNTempSpaceSizes) SYM(GetRNNWeightSpaceSize) SYM(GetRNNWeightParams)
  SYM(RNNForward) SYM(RNNBackwardData_v8) SYM(RNNBackwardWeights_v8)
#undef SYM
  if (!ok) {
    snprintf(g_off_why, sizeof g_off_why, "%s", lmx_last_error());
    lmx_clear_error();
  }
  g_ready = ok;
}

extern "C" const char *lmx_cu_dnn_why_off(void) {
  pthread_once(&g_once, load);
  return g_ready ? "" : g_off_why;
}

extern "C" void lmx_cu_dnn_release(void) {
  pthread_once(&g_once, load);
  for (int i = 0; i < MAX_DEV; i++) {
    pthread_mutex_lock(&g_dev_lock[i]);
    lmx_dnn_cache_clear(&g_descs[i]);
    pthread_mutex_unlock(&g_dev_lock[i]);
  }
}

extern "C" int lmx_cu_dnn_ready(void) {
  pthread_once(&g_once, load);
  return g_ready;
}

extern "C" const char *lmx_cu_dnn_status_str(int rc) {
  if (!lmx_cu_dnn_ready() || rc < LMX_CU_DNN_ESTATUS) return "";
  return D.GetErrorString((cudnnStatus_t)(rc - LMX_CU_DNN_ESTATUS));
}

extern "C" double lmx_cu_dnn_bn_min_eps(void) {
  return CUDNN_BN_MIN_EPSILON;
}

int lmx_dnn_st_rc(cudnnStatus_t st) {
  return st == CUDNN_STATUS_SUCCESS ? 0 : LMX_CU_DNN_ESTATUS + (int)st;
}

int lmx_dnn_not_supported(cudnnStatus_t st) {
  return st / 1000 == CUDNN_STATUS_NOT_SUPPORTED / 1000;
}

/* ---- the device's handle, locked for one operation ------------------------------- */

/* 0 with the device locked and the handle on stream s; LMX_CU_DNN_SKIP (not locked) */
int lmx_dnn_begin(lmx_cu_stream s, lmx_dnn_session *ss) {
  if (!lmx_cu_dnn_ready()) return LMX_CU_DNN_SKIP;
  if (cudaGetDevice(&ss->dev) != cudaSuccess || ss->dev < 0 || ss->dev >= MAX_DEV)
    return LMX_CU_DNN_SKIP;
  pthread_mutex_lock(&g_dev_lock[ss->dev]);
  if (!g_handle[ss->dev] && D.Create(&g_handle[ss->dev]) != CUDNN_STATUS_SUCCESS)
    g_handle[ss->dev] = NULL;
  ss->h = g_handle[ss->dev];
  if (!ss->h || D.SetStream(ss->h, (cudaStream_t)s) != CUDNN_STATUS_SUCCESS) {
    pthread_mutex_unlock(&g_dev_lock[ss->dev]);
    return LMX_CU_DNN_SKIP;
  }
  return 0;
}

void lmx_dnn_end(lmx_dnn_session *ss) {
  pthread_mutex_unlock(&g_dev_lock[ss->dev]);
}

static cudnnDataType_t dtype(int t) {
  return t == LMX_DNN_HALF ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
}

/* a tensor descriptor (NULL on failure) */
cudnnTensorDescriptor_t lmx_dnn_tdesc(const lmx_dnn_tensor *t, int data_type) {
  cudnnTensorDescriptor_t d = NULL;
  if (D.CreateTensorDescriptor(&d) != CUDNN_STATUS_SUCCESS) return NULL;
  if (D.SetTensorNdDescriptor(d, dtype(data_type), t->nd, t->dim, t->stride) !=
      CUDNN_STATUS_SUCCESS) {
    D.DestroyTensorDescriptor(d);
    return NULL;
  }
  return d;
}

void lmx_dnn_tfree(cudnnTensorDescriptor_t d) {
  if (d) D.DestroyTensorDescriptor(d);
}

/* ---- the descriptor cache's entries -------------------------------------------------
 * Keys are the derived arguments (zero-padded: the derive functions memset them);
 * entries hold the descriptors in this order. */
enum { P_X, P_Y, P_B, P_W, P_C };           /* conv: tensors x, y, bias; filter; conv */
enum { P_PX = 0, P_PY = 1, P_POOL = 2 };    /* pool: tensors x, y; pooling */
enum { P_BX = 0, P_BPARAM = 1 };            /* BatchNorm: x and the [1, C, 1, 1] params */

typedef struct { /* a BatchNorm entry's key */
  lmx_dnn_tensor x, param;
  int data_type;
} bn_key;

static cudnnPoolingMode_t pool_mode(int mode) {
  return mode == LMX_DNN_POOL_MAX            ? CUDNN_POOLING_MAX_DETERMINISTIC
         : mode == LMX_DNN_POOL_AVG_INCL_PAD ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                             : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
}

static void descs_destroy(void *user, int kind, lmx_dnn_descs *d) {
  (void)user;
  if (kind == K_CONV) {
    lmx_dnn_tfree((cudnnTensorDescriptor_t)d->p[P_X]), lmx_dnn_tfree((cudnnTensorDescriptor_t)d->p[P_Y]);
    lmx_dnn_tfree((cudnnTensorDescriptor_t)d->p[P_B]);
    if (d->p[P_W]) D.DestroyFilterDescriptor((cudnnFilterDescriptor_t)d->p[P_W]);
    if (d->p[P_C]) D.DestroyConvolutionDescriptor((cudnnConvolutionDescriptor_t)d->p[P_C]);
  } else if (kind == K_POOL) {
    lmx_dnn_tfree((cudnnTensorDescriptor_t)d->p[P_PX]), lmx_dnn_tfree((cudnnTensorDescriptor_t)d->p[P_PY]);
    if (d->p[P_POOL]) D.DestroyPoolingDescriptor((cudnnPoolingDescriptor_t)d->p[P_POOL]);
  } else if (kind == K_BN) {
    lmx_dnn_tfree((cudnnTensorDescriptor_t)d->p[P_BX]), lmx_dnn_tfree((cudnnTensorDescriptor_t)d->p[P_BPARAM]);
  } else if (kind == K_RNN) {
    lmx_dnn_rnn_destroy(d);
  }
  memset(d, 0, sizeof *d);
}

static int conv_create(const lmx_dnn_conv_args *a, lmx_dnn_descs *e) {
  cudnnFilterDescriptor_t w = NULL;
  cudnnConvolutionDescriptor_t c = NULL;
  e->p[P_X] = lmx_dnn_tdesc(&a->x, a->data_type), e->p[P_Y] = lmx_dnn_tdesc(&a->y, a->data_type);
  e->p[P_B] = a->bias ? lmx_dnn_tdesc(&a->b, a->data_type) : NULL;
  if (!e->p[P_X] || !e->p[P_Y] || (a->bias && !e->p[P_B])) return -1;
  if (D.CreateFilterDescriptor(&w) != CUDNN_STATUS_SUCCESS) return -1;
  e->p[P_W] = w;
  if (D.SetFilterNdDescriptor(w, dtype(a->data_type), CUDNN_TENSOR_NCHW, a->w_nd, a->w_dim) !=
      CUDNN_STATUS_SUCCESS)
    return -1;
  if (D.CreateConvolutionDescriptor(&c) != CUDNN_STATUS_SUCCESS) return -1;
  e->p[P_C] = c;
  if (D.SetConvolutionNdDescriptor(c, a->sp, a->pad, a->stride, a->dilate,
                                   CUDNN_CROSS_CORRELATION,
                                   dtype(a->compute_type)) != CUDNN_STATUS_SUCCESS ||
      D.SetConvolutionGroupCount(c, a->groups) != CUDNN_STATUS_SUCCESS ||
      D.SetConvolutionMathType(
          c, a->math == LMX_DNN_MATH_TENSOR_OP ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH) !=
          CUDNN_STATUS_SUCCESS)
    return -1;
  return 0;
}

static int pool_create(const lmx_dnn_pool_args *a, lmx_dnn_descs *e) {
  cudnnPoolingDescriptor_t p = NULL;
  e->p[P_PX] = lmx_dnn_tdesc(&a->x, a->data_type), e->p[P_PY] = lmx_dnn_tdesc(&a->y, a->data_type);
  if (!e->p[P_PX] || !e->p[P_PY]) return -1;
  if (D.CreatePoolingDescriptor(&p) != CUDNN_STATUS_SUCCESS) return -1;
  e->p[P_POOL] = p;
  return D.SetPoolingNdDescriptor(p, pool_mode(a->mode), CUDNN_PROPAGATE_NAN, a->sp, a->window,
                                  a->pad, a->stride) == CUDNN_STATUS_SUCCESS ? 0 : -1;
}

static int descs_create(void *user, int kind, const void *key, lmx_dnn_descs *d) {
  int rc = -1;
  if (kind == K_RNN) rc = lmx_dnn_rnn_create(*(cudnnHandle_t *)user, (const lmx_dnn_rnn_args *)key, d);
  else if (kind == K_CONV) rc = conv_create((const lmx_dnn_conv_args *)key, d);
  else if (kind == K_POOL) rc = pool_create((const lmx_dnn_pool_args *)key, d);
  else if (kind == K_BN) {
    const bn_key *k = (const bn_key *)key;
    d->p[P_BX] = lmx_dnn_tdesc(&k->x, k->data_type), d->p[P_BPARAM] = lmx_dnn_tdesc(&k->param, LMX_DNN_FLOAT);
    rc = d->p[P_BX] && d->p[P_BPARAM] ? 0 : -1;
  }
  if (rc) descs_destroy(user, kind, d); /* the cache keeps nothing of a failed create */
  return rc;
}

/* The cached descriptors of (kind, key) on the lmx_dnn_session's device, or NULL. */
lmx_dnn_descs *lmx_dnn_descs_of(const lmx_dnn_session *ss, int kind, const void *key,
                                size_t len) {
  lmx_dnn_descs *d = NULL;
  return lmx_dnn_cache_get(&g_descs[ss->dev], kind, key, len, &d) == 0 ? d : NULL;
}

/* ---- Convolution ------------------------------------------------------------------ */

typedef struct { /* one call's view of a cached conv entry */
  cudnnTensorDescriptor_t x, y, b;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t c;
} conv_descs;

/* 0 with d filled from the cache (made on the first call with these arguments) */
static int conv_get(const lmx_dnn_session *ss, const lmx_dnn_conv_args *a, conv_descs *d) {
  lmx_dnn_descs *e = lmx_dnn_descs_of(ss, K_CONV, a, sizeof *a);
  if (!e) return -1;
  d->x = (cudnnTensorDescriptor_t)e->p[P_X], d->y = (cudnnTensorDescriptor_t)e->p[P_Y];
  d->b = (cudnnTensorDescriptor_t)e->p[P_B], d->w = (cudnnFilterDescriptor_t)e->p[P_W];
  d->c = (cudnnConvolutionDescriptor_t)e->p[P_C];
  return 0;
}

/* algorithm cache: (device, direction, arguments, workspace) -> (algo, math) */
enum { DIR_FWD, DIR_BWD_DATA, DIR_BWD_FILTER };
typedef struct {
  int used, dev, dir;
  size_t ws;
  lmx_dnn_conv_args a;
  int algo, math;
} algo_entry;
static algo_entry g_cache[CACHE_N];
static int g_cache_next;
static pthread_mutex_t g_cache_lock = PTHREAD_MUTEX_INITIALIZER;

static int cache_get(int dev, int dir, size_t ws, const lmx_dnn_conv_args *a, int *algo,
                     int *math) {
  int hit = 0;
  pthread_mutex_lock(&g_cache_lock);
  for (int i = 0; i < CACHE_N && !hit; i++) {
    const algo_entry *e = &g_cache[i];
    if (e->used && e->dev == dev && e->dir == dir && e->ws == ws && !memcmp(&e->a, a, sizeof *a))
      *algo = e->algo, *math = e->math, hit = 1;
  }
  pthread_mutex_unlock(&g_cache_lock);
  return hit;
}

static void cache_put(int dev, int dir, size_t ws, const lmx_dnn_conv_args *a, int algo, int math) {
  pthread_mutex_lock(&g_cache_lock);
  algo_entry *e = &g_cache[g_cache_next];
  g_cache_next = (g_cache_next + 1) % CACHE_N;
  memset(e, 0, sizeof *e);
  e->used = 1, e->dev = dev, e->dir = dir, e->ws = ws, e->a = *a, e->algo = algo, e->math = math;
  pthread_mutex_unlock(&g_cache_lock);
}

/* the first (fastest) usable result of a _v7 query: success, fits ws, FMA for float32 */
template <typename P>
static int pick(const P *perf, int n, size_t ws, int data_type, int *algo, int *math) {
  for (int i = 0; i < n; i++) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > ws) continue;
    if (data_type == LMX_DNN_FLOAT && perf[i].mathType != CUDNN_FMA_MATH) continue;
    *algo = (int)perf[i].algo, *math = (int)perf[i].mathType;
    return 0;
  }
  return -1;
}

/* chooses (or recalls) the algorithm of one direction and its math mode */
static int choose(const lmx_dnn_session *ss, int dir, const lmx_dnn_conv_args *a, conv_descs *d, size_t ws,
                  int *algo, int *math) {
  if (cache_get(ss->dev, dir, ws, a, algo, math)) return 0;
  int n = 0, rc = -1;
  cudnnStatus_t st;
  if (dir == DIR_FWD) {
    cudnnConvolutionFwdAlgoPerf_t p[NPERF];
    st = D.GetConvolutionForwardAlgorithm_v7(ss->h, d->x, d->w, d->c, d->y, NPERF, &n, p);
    if (st == CUDNN_STATUS_SUCCESS) rc = pick(p, n, ws, a->data_type, algo, math);
  } else if (dir == DIR_BWD_DATA) {
    cudnnConvolutionBwdDataAlgoPerf_t p[NPERF];
    st = D.GetConvolutionBackwardDataAlgorithm_v7(ss->h, d->w, d->y, d->c, d->x, NPERF, &n, p);
    if (st == CUDNN_STATUS_SUCCESS) rc = pick(p, n, ws, a->data_type, algo, math);
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t p[NPERF];
    st = D.GetConvolutionBackwardFilterAlgorithm_v7(ss->h, d->x, d->y, d->c, d->w, NPERF, &n, p);
    if (st == CUDNN_STATUS_SUCCESS) rc = pick(p, n, ws, a->data_type, algo, math);
  }
  if (!rc) cache_put(ss->dev, dir, ws, a, *algo, *math);
  return rc;
}

static cudnnStatus_t set_math(conv_descs *d, int math) {
  return D.SetConvolutionMathType(d->c, (cudnnMathType_t)math);
}

extern "C" int lmx_cu_dnn_conv_fwd(lmx_cu_stream s, const lmx_dnn_conv_args *a, const void *x,
                                   const void *w, const void *b, void *y, int acc, void *ws,
                                   size_t ws_bytes) {
  lmx_dnn_session ss;
  if (lmx_dnn_begin(s, &ss)) return LMX_CU_DNN_SKIP;
  conv_descs d;
  int algo = 0, math = 0, rc = LMX_CU_DNN_SKIP;
  if (!conv_get(&ss, a, &d) && !choose(&ss, DIR_FWD, a, &d, ws_bytes, &algo, &math) &&
      set_math(&d, math) == CUDNN_STATUS_SUCCESS) {
    float one = 1.f, beta = acc ? 1.f : 0.f;
    cudnnStatus_t st =
        D.ConvolutionForward(ss.h, &one, d.x, x, d.w, w, d.c, (cudnnConvolutionFwdAlgo_t)algo, ws,
                             ws_bytes, &beta, d.y, y);
    if (lmx_dnn_not_supported(st))
      rc = LMX_CU_DNN_SKIP;
    else
      rc = lmx_dnn_st_rc(st);
    if (!rc && a->bias) rc = lmx_dnn_st_rc(D.AddTensor(ss.h, &one, d.b, b, &one, d.y, y));
  }
  lmx_dnn_end(&ss);
  return rc;
}

extern "C" int lmx_cu_dnn_conv_bwd(lmx_cu_stream s, const lmx_dnn_conv_args *a, const void *x,
                                   const void *w, const void *dy, void *dx, void *dw, void *db,
                                   const int *acc, void *ws, size_t ws_bytes) {
  lmx_dnn_session ss;
  if (lmx_dnn_begin(s, &ss)) return LMX_CU_DNN_SKIP;
  conv_descs d;
  int ad = 0, af = 0, md = 0, mf = 0, rc = LMX_CU_DNN_SKIP;
  /* every algorithm first: a refusal then leaves all gradients untouched */
  if (!conv_get(&ss, a, &d) && (!dw || !choose(&ss, DIR_BWD_FILTER, a, &d, ws_bytes, &af, &mf)) &&
      (!dx || !choose(&ss, DIR_BWD_DATA, a, &d, ws_bytes, &ad, &md))) {
    float one = 1.f, b0 = acc[0] ? 1.f : 0.f, b1 = acc[1] ? 1.f : 0.f, b2 = acc[2] ? 1.f : 0.f;
    int wrote = 0;
    rc = 0;
    if (dw) {
      cudnnStatus_t st = set_math(&d, mf);
      if (st == CUDNN_STATUS_SUCCESS)
        st = D.ConvolutionBackwardFilter(ss.h, &one, d.x, x, d.y, dy, d.c,
                                         (cudnnConvolutionBwdFilterAlgo_t)af, ws, ws_bytes, &b1,
                                         d.w, dw);
      rc = lmx_dnn_not_supported(st) ? LMX_CU_DNN_SKIP : lmx_dnn_st_rc(st);
      wrote = !rc;
    }
    if (!rc && dx) {
      cudnnStatus_t st = set_math(&d, md);
      if (st == CUDNN_STATUS_SUCCESS)
        st = D.ConvolutionBackwardData(ss.h, &one, d.w, w, d.y, dy, d.c,
                                       (cudnnConvolutionBwdDataAlgo_t)ad, ws, ws_bytes, &b0, d.x,
                                       dx);
      rc = lmx_dnn_not_supported(st) && !wrote ? LMX_CU_DNN_SKIP : lmx_dnn_st_rc(st);
    }
    if (!rc && db && a->bias)
      rc = lmx_dnn_st_rc(D.ConvolutionBackwardBias(ss.h, &one, d.y, dy, &b2, d.b, db));
  }
  lmx_dnn_end(&ss);
  return rc;
}

/* ---- Pooling ---------------------------------------------------------------------- */

static int pool_run(lmx_cu_stream s, const lmx_dnn_pool_args *a, const void *x, const void *y,
                    const void *dy, void *out, int acc) {
  lmx_dnn_session ss;
  if (lmx_dnn_begin(s, &ss)) return LMX_CU_DNN_SKIP;
  lmx_dnn_descs *e = lmx_dnn_descs_of(&ss, K_POOL, a, sizeof *a);
  int rc = LMX_CU_DNN_SKIP;
  if (e) {
    cudnnTensorDescriptor_t dx = (cudnnTensorDescriptor_t)e->p[P_PX];
    cudnnTensorDescriptor_t dyd = (cudnnTensorDescriptor_t)e->p[P_PY];
    cudnnPoolingDescriptor_t p = (cudnnPoolingDescriptor_t)e->p[P_POOL];
    float one = 1.f, beta = acc ? 1.f : 0.f;
    cudnnStatus_t st = dy ? D.PoolingBackward(ss.h, p, &one, dyd, y, dyd, dy, dx, x, &beta, dx, out)
                          : D.PoolingForward(ss.h, p, &one, dx, x, &beta, dyd, out);
    rc = lmx_dnn_not_supported(st) ? LMX_CU_DNN_SKIP : lmx_dnn_st_rc(st);
  }
  lmx_dnn_end(&ss);
  return rc;
}

extern "C" int lmx_cu_dnn_pool_fwd(lmx_cu_stream s, const lmx_dnn_pool_args *a, const void *x,
                                   void *y, int acc) {
  return pool_run(s, a, x, NULL, NULL, y, acc);
}

extern "C" int lmx_cu_dnn_pool_bwd(lmx_cu_stream s, const lmx_dnn_pool_args *a, const void *x,
                                   const void *y, const void *dy, void *dx, int acc) {
  return pool_run(s, a, x, y, dy, dx, acc);
}

/* ---- BatchNorm -------------------------------------------------------------------- */

static char *at(void *ws, size_t off) {
  return (char *)ws + off;
}

/* the cached x and param descriptors of a BatchNorm call (0), or -1 */
static int bn_get(const lmx_dnn_session *ss, const lmx_dnn_bn_args *a, cudnnTensorDescriptor_t *x,
                  cudnnTensorDescriptor_t *param) {
  bn_key k;
  memset(&k, 0, sizeof k);
  k.x = a->x, k.param = a->param, k.data_type = a->data_type;
  lmx_dnn_descs *e = lmx_dnn_descs_of(ss, K_BN, &k, sizeof k);
  if (!e) return -1;
  *x = (cudnnTensorDescriptor_t)e->p[P_BX], *param = (cudnnTensorDescriptor_t)e->p[P_BPARAM];
  return 0;
}

extern "C" int lmx_cu_dnn_bn_fwd(lmx_cu_stream s, const lmx_dnn_bn_args *a, const void *x, void *y,
                                 const void *gamma, const void *beta, void *mean, void *invstd,
                                 void *mmean, void *mvar, void *ws) {
  lmx_dnn_session ss;
  if (lmx_dnn_begin(s, &ss)) return LMX_CU_DNN_SKIP;
  cudnnTensorDescriptor_t dx = NULL, dp = NULL;
  if (bn_get(&ss, a, &dx, &dp)) dx = dp = NULL;
  int C = a->param.dim[1], rc = LMX_CU_DNN_SKIP;
  float al = (float)a->alpha_data, be = (float)a->beta_data;
  float *ones = (float *)at(ws, a->ws_ones);
  float *bm = (float *)at(ws, a->ws_dscale), *bv = (float *)at(ws, a->ws_dbias);
  const void *scale = a->ones_scale ? (const void *)ones : gamma;
  while (dx && dp) {
    if (a->ones_scale && (rc = lmx_cu_fill(s, ones, LMX_FLOAT32, C, 1.0))) break;
    cudnnStatus_t st;
    if (a->call == LMX_DNN_BN_INFERENCE) {
      st = D.BatchNormalizationForwardInference(ss.h, CUDNN_BATCHNORM_SPATIAL, &al, &be, dx, x, dx,
                                                y, dp, scale, beta, mmean, mvar, a->eps);
    } else {
      /* batch mean and unbiased variance into scratch: factor 1 over zeros */
      cudaError_t e = cudaMemsetAsync(bm, 0, (size_t)C * sizeof(float), (cudaStream_t)s);
      if (e == cudaSuccess) e = cudaMemsetAsync(bv, 0, (size_t)C * sizeof(float), (cudaStream_t)s);
      if (e != cudaSuccess) {
        rc = (int)e;
        break;
      }
      st =
          D.BatchNormalizationForwardTraining(ss.h, CUDNN_BATCHNORM_SPATIAL, &al, &be, dx, x, dx, y,
                                              dp, scale, beta, 1.0, bm, bv, a->eps, mean, invstd);
    }
    rc = lmx_dnn_not_supported(st) ? LMX_CU_DNN_SKIP : lmx_dnn_st_rc(st);
    if (rc) break;
    if (a->call == LMX_DNN_BN_INFERENCE)
      rc = lmx_cu_bn_inf_stats(s, C, a->eps, mmean, mvar, mean, invstd);
    else if (a->fold_moving)
      rc = lmx_cu_bn_fold_moving(s, C, a->exp_avg_factor, a->count, bm, bv, mmean, mvar);
    else
      rc = lmx_cu_last_error();
    break;
  }
  lmx_dnn_end(&ss);
  return rc;
}

extern "C" int lmx_cu_dnn_bn_bwd(lmx_cu_stream s, const lmx_dnn_bn_args *a, const void *x,
                                 const void *dy, const void *gamma, const void *mean,
                                 const void *invstd, void *dx, void *dgamma, void *dbeta,
                                 void *ws) {
  lmx_dnn_session ss;
  if (lmx_dnn_begin(s, &ss)) return LMX_CU_DNN_SKIP;
  cudnnTensorDescriptor_t dxd = NULL, dp = NULL;
  if (bn_get(&ss, a, &dxd, &dp)) dxd = dp = NULL;
  int C = a->param.dim[1], rc = LMX_CU_DNN_SKIP;
  float ad = (float)a->alpha_data, bd = (float)a->beta_data;
  float ap = (float)a->alpha_param, bp = (float)a->beta_param;
  float *ones = (float *)at(ws, a->ws_ones);
  void *ds = a->dscale_scratch ? (void *)at(ws, a->ws_dscale) : dgamma;
  void *db = a->dbias_scratch ? (void *)at(ws, a->ws_dbias) : dbeta;
  const void *scale = a->ones_scale ? (const void *)ones : gamma;
  while (dxd && dp) {
    if (a->ones_scale && (rc = lmx_cu_fill(s, ones, LMX_FLOAT32, C, 1.0))) break;
    cudnnStatus_t st =
        D.BatchNormalizationBackward(ss.h, CUDNN_BATCHNORM_SPATIAL, &ad, &bd, &ap, &bp, dxd, x, dxd,
                                     dy, dxd, dx, dp, scale, ds, db, a->eps, mean, invstd);
    rc = lmx_dnn_not_supported(st) ? LMX_CU_DNN_SKIP : lmx_dnn_st_rc(st);
    if (!rc && a->zero_dscale && dgamma)
      rc = (int)cudaMemsetAsync(dgamma, 0, (size_t)C * sizeof(float), (cudaStream_t)s);
    break;
  }
  lmx_dnn_end(&ss);
  return rc;
}
