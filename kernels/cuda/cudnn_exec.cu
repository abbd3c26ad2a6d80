/* cudnn_exec.cu — runs derived Convolution / Pooling / BatchNorm calls through cuDNN
 * (cu_dnn.h). Built only in real CUDA builds that found cudnn.h; never in the simulator.
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
#include "cuda_common.cuh"

extern "C" {
#include "../../src/core/status.h"
#include "../../src/device/cuda_libs.h"
}

enum { MAX_DEV = 16, CACHE_N = 128, NPERF = 16 };

#define FN(name) decltype(&cudnn##name) name
static struct {
  FN(Create);
  FN(SetStream);
  FN(GetErrorString);
  FN(CreateTensorDescriptor);
  FN(SetTensorNdDescriptor);
  FN(DestroyTensorDescriptor);
  FN(CreateFilterDescriptor);
  FN(SetFilterNdDescriptor);
  FN(DestroyFilterDescriptor);
  FN(CreateConvolutionDescriptor);
  FN(SetConvolutionNdDescriptor);
  FN(SetConvolutionGroupCount);
  FN(SetConvolutionMathType);
  FN(DestroyConvolutionDescriptor);
  FN(GetConvolutionForwardAlgorithm_v7);
  FN(GetConvolutionBackwardDataAlgorithm_v7);
  FN(GetConvolutionBackwardFilterAlgorithm_v7);
  FN(ConvolutionForward);
  FN(ConvolutionBackwardData);
  FN(ConvolutionBackwardFilter);
  FN(ConvolutionBackwardBias);
  FN(AddTensor);
  FN(CreatePoolingDescriptor);
  FN(SetPoolingNdDescriptor);
  FN(DestroyPoolingDescriptor);
  FN(PoolingForward);
  FN(PoolingBackward);
  FN(BatchNormalizationForwardTraining);
  FN(BatchNormalizationForwardInference);
  FN(BatchNormalizationBackward);
  FN(CreateDropoutDescriptor);
  FN(SetDropoutDescriptor);
  FN(DestroyDropoutDescriptor);
  FN(CreateRNNDescriptor);
  FN(SetRNNDescriptor_v8);
  FN(DestroyRNNDescriptor);
  FN(CreateRNNDataDescriptor);
  FN(SetRNNDataDescriptor);
  FN(DestroyRNNDataDescriptor);
  FN(GetRNNTempSpaceSizes);
  FN(GetRNNWeightSpaceSize);
  FN(GetRNNWeightParams);
  FN(RNNForward);
  FN(RNNBackwardData_v8);
  FN(RNNBackwardWeights_v8);
} D;
#undef FN

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

static int st_rc(cudnnStatus_t st) {
  return st == CUDNN_STATUS_SUCCESS ? 0 : LMX_CU_DNN_ESTATUS + (int)st;
}

static int not_supported(cudnnStatus_t st) {
  return st / 1000 == CUDNN_STATUS_NOT_SUPPORTED / 1000;
}

/* ---- the device's handle, locked for one operation ------------------------------- */

typedef struct {
  int dev;
  cudnnHandle_t h;
} session;

/* 0 with the device locked and the handle on stream s; LMX_CU_DNN_SKIP (not locked) */
static int begin(lmx_cu_stream s, session *ss) {
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

static void end(session *ss) {
  pthread_mutex_unlock(&g_dev_lock[ss->dev]);
}

static cudnnDataType_t dtype(int t) {
  return t == LMX_DNN_HALF ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
}

/* a tensor descriptor (NULL on failure) */
static cudnnTensorDescriptor_t tdesc(const lmx_dnn_tensor *t, int data_type) {
  cudnnTensorDescriptor_t d = NULL;
  if (D.CreateTensorDescriptor(&d) != CUDNN_STATUS_SUCCESS) return NULL;
  if (D.SetTensorNdDescriptor(d, dtype(data_type), t->nd, t->dim, t->stride) !=
      CUDNN_STATUS_SUCCESS) {
    D.DestroyTensorDescriptor(d);
    return NULL;
  }
  return d;
}

static void tfree(cudnnTensorDescriptor_t d) {
  if (d) D.DestroyTensorDescriptor(d);
}

/* ---- the descriptor cache's entries -------------------------------------------------
 * Keys are the derived arguments (zero-padded: the derive functions memset them);
 * entries hold the descriptors in this order. */
enum { K_CONV, K_POOL, K_BN, K_RNN };
enum { P_X, P_Y, P_B, P_W, P_C };           /* conv: tensors x, y, bias; filter; conv */
enum { P_PX = 0, P_PY = 1, P_POOL = 2 };    /* pool: tensors x, y; pooling */
enum { P_BX = 0, P_BPARAM = 1 };            /* BatchNorm: x and the [1, C, 1, 1] params */
/* RNN: descriptors, and sizes in the integers */
enum { P_RNN, P_DROP, P_RX, P_RY, P_RH, P_RM, P_RB };
enum { I_WS, I_RESERVE, I_WSPACE, I_SAME /* -1 unknown, 0, 1 */, I_DECLINED };

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
    tfree((cudnnTensorDescriptor_t)d->p[P_X]), tfree((cudnnTensorDescriptor_t)d->p[P_Y]);
    tfree((cudnnTensorDescriptor_t)d->p[P_B]);
    if (d->p[P_W]) D.DestroyFilterDescriptor((cudnnFilterDescriptor_t)d->p[P_W]);
    if (d->p[P_C]) D.DestroyConvolutionDescriptor((cudnnConvolutionDescriptor_t)d->p[P_C]);
  } else if (kind == K_POOL) {
    tfree((cudnnTensorDescriptor_t)d->p[P_PX]), tfree((cudnnTensorDescriptor_t)d->p[P_PY]);
    if (d->p[P_POOL]) D.DestroyPoolingDescriptor((cudnnPoolingDescriptor_t)d->p[P_POOL]);
  } else if (kind == K_BN) {
    tfree((cudnnTensorDescriptor_t)d->p[P_BX]), tfree((cudnnTensorDescriptor_t)d->p[P_BPARAM]);
  } else if (kind == K_RNN) {
    if (d->p[P_RNN]) D.DestroyRNNDescriptor((cudnnRNNDescriptor_t)d->p[P_RNN]);
    if (d->p[P_DROP]) D.DestroyDropoutDescriptor((cudnnDropoutDescriptor_t)d->p[P_DROP]);
    if (d->p[P_RX]) D.DestroyRNNDataDescriptor((cudnnRNNDataDescriptor_t)d->p[P_RX]);
    if (d->p[P_RY]) D.DestroyRNNDataDescriptor((cudnnRNNDataDescriptor_t)d->p[P_RY]);
    tfree((cudnnTensorDescriptor_t)d->p[P_RH]), tfree((cudnnTensorDescriptor_t)d->p[P_RM]);
    tfree((cudnnTensorDescriptor_t)d->p[P_RB]);
  }
  memset(d, 0, sizeof *d);
}

static int conv_create(const lmx_dnn_conv_args *a, lmx_dnn_descs *e) {
  cudnnFilterDescriptor_t w = NULL;
  cudnnConvolutionDescriptor_t c = NULL;
  e->p[P_X] = tdesc(&a->x, a->data_type), e->p[P_Y] = tdesc(&a->y, a->data_type);
  e->p[P_B] = a->bias ? tdesc(&a->b, a->data_type) : NULL;
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
  e->p[P_PX] = tdesc(&a->x, a->data_type), e->p[P_PY] = tdesc(&a->y, a->data_type);
  if (!e->p[P_PX] || !e->p[P_PY]) return -1;
  if (D.CreatePoolingDescriptor(&p) != CUDNN_STATUS_SUCCESS) return -1;
  e->p[P_POOL] = p;
  return D.SetPoolingNdDescriptor(p, pool_mode(a->mode), CUDNN_PROPAGATE_NAN, a->sp, a->window,
                                  a->pad, a->stride) == CUDNN_STATUS_SUCCESS ? 0 : -1;
}

static int rnn_create(cudnnHandle_t h, const lmx_dnn_rnn_args *a, lmx_dnn_descs *e);

static int descs_create(void *user, int kind, const void *key, lmx_dnn_descs *d) {
  int rc = -1;
  if (kind == K_RNN) rc = rnn_create(*(cudnnHandle_t *)user, (const lmx_dnn_rnn_args *)key, d);
  else if (kind == K_CONV) rc = conv_create((const lmx_dnn_conv_args *)key, d);
  else if (kind == K_POOL) rc = pool_create((const lmx_dnn_pool_args *)key, d);
  else if (kind == K_BN) {
    const bn_key *k = (const bn_key *)key;
    d->p[P_BX] = tdesc(&k->x, k->data_type), d->p[P_BPARAM] = tdesc(&k->param, LMX_DNN_FLOAT);
    rc = d->p[P_BX] && d->p[P_BPARAM] ? 0 : -1;
  }
  if (rc) descs_destroy(user, kind, d); /* the cache keeps nothing of a failed create */
  return rc;
}

/* The cached descriptors of (kind, key) on the session's device, or NULL. */
static lmx_dnn_descs *descs(const session *ss, int kind, const void *key, size_t len) {
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
static int conv_get(const session *ss, const lmx_dnn_conv_args *a, conv_descs *d) {
  lmx_dnn_descs *e = descs(ss, K_CONV, a, sizeof *a);
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
static int choose(const session *ss, int dir, const lmx_dnn_conv_args *a, conv_descs *d, size_t ws,
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
  session ss;
  if (begin(s, &ss)) return LMX_CU_DNN_SKIP;
  conv_descs d;
  int algo = 0, math = 0, rc = LMX_CU_DNN_SKIP;
  if (!conv_get(&ss, a, &d) && !choose(&ss, DIR_FWD, a, &d, ws_bytes, &algo, &math) &&
      set_math(&d, math) == CUDNN_STATUS_SUCCESS) {
    float one = 1.f, beta = acc ? 1.f : 0.f;
    cudnnStatus_t st =
        D.ConvolutionForward(ss.h, &one, d.x, x, d.w, w, d.c, (cudnnConvolutionFwdAlgo_t)algo, ws,
                             ws_bytes, &beta, d.y, y);
    if (not_supported(st))
      rc = LMX_CU_DNN_SKIP;
    else
      rc = st_rc(st);
    if (!rc && a->bias) rc = st_rc(D.AddTensor(ss.h, &one, d.b, b, &one, d.y, y));
  }
  end(&ss);
  return rc;
}

extern "C" int lmx_cu_dnn_conv_bwd(lmx_cu_stream s, const lmx_dnn_conv_args *a, const void *x,
                                   const void *w, const void *dy, void *dx, void *dw, void *db,
                                   const int *acc, void *ws, size_t ws_bytes) {
  session ss;
  if (begin(s, &ss)) return LMX_CU_DNN_SKIP;
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
      rc = not_supported(st) ? LMX_CU_DNN_SKIP : st_rc(st);
      wrote = !rc;
    }
    if (!rc && dx) {
      cudnnStatus_t st = set_math(&d, md);
      if (st == CUDNN_STATUS_SUCCESS)
        st = D.ConvolutionBackwardData(ss.h, &one, d.w, w, d.y, dy, d.c,
                                       (cudnnConvolutionBwdDataAlgo_t)ad, ws, ws_bytes, &b0, d.x,
                                       dx);
      rc = not_supported(st) && !wrote ? LMX_CU_DNN_SKIP : st_rc(st);
    }
    if (!rc && db && a->bias)
      rc = st_rc(D.ConvolutionBackwardBias(ss.h, &one, d.y, dy, &b2, d.b, db));
  }
  end(&ss);
  return rc;
}

/* ---- Pooling ---------------------------------------------------------------------- */

static int pool_run(lmx_cu_stream s, const lmx_dnn_pool_args *a, const void *x, const void *y,
                    const void *dy, void *out, int acc) {
  session ss;
  if (begin(s, &ss)) return LMX_CU_DNN_SKIP;
  lmx_dnn_descs *e = descs(&ss, K_POOL, a, sizeof *a);
  int rc = LMX_CU_DNN_SKIP;
  if (e) {
    cudnnTensorDescriptor_t dx = (cudnnTensorDescriptor_t)e->p[P_PX];
    cudnnTensorDescriptor_t dyd = (cudnnTensorDescriptor_t)e->p[P_PY];
    cudnnPoolingDescriptor_t p = (cudnnPoolingDescriptor_t)e->p[P_POOL];
    float one = 1.f, beta = acc ? 1.f : 0.f;
    cudnnStatus_t st = dy ? D.PoolingBackward(ss.h, p, &one, dyd, y, dyd, dy, dx, x, &beta, dx, out)
                          : D.PoolingForward(ss.h, p, &one, dx, x, &beta, dyd, out);
    rc = not_supported(st) ? LMX_CU_DNN_SKIP : st_rc(st);
  }
  end(&ss);
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
static int bn_get(const session *ss, const lmx_dnn_bn_args *a, cudnnTensorDescriptor_t *x,
                  cudnnTensorDescriptor_t *param) {
  bn_key k;
  memset(&k, 0, sizeof k);
  k.x = a->x, k.param = a->param, k.data_type = a->data_type;
  lmx_dnn_descs *e = descs(ss, K_BN, &k, sizeof k);
  if (!e) return -1;
  *x = (cudnnTensorDescriptor_t)e->p[P_BX], *param = (cudnnTensorDescriptor_t)e->p[P_BPARAM];
  return 0;
}

extern "C" int lmx_cu_dnn_bn_fwd(lmx_cu_stream s, const lmx_dnn_bn_args *a, const void *x, void *y,
                                 const void *gamma, const void *beta, void *mean, void *invstd,
                                 void *mmean, void *mvar, void *ws) {
  session ss;
  if (begin(s, &ss)) return LMX_CU_DNN_SKIP;
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
    rc = not_supported(st) ? LMX_CU_DNN_SKIP : st_rc(st);
    if (rc) break;
    if (a->call == LMX_DNN_BN_INFERENCE)
      rc = lmx_cu_bn_inf_stats(s, C, a->eps, mmean, mvar, mean, invstd);
    else if (a->fold_moving)
      rc = lmx_cu_bn_fold_moving(s, C, a->exp_avg_factor, a->count, bm, bv, mmean, mvar);
    else
      rc = lmx_cu_last_error();
    break;
  }
  end(&ss);
  return rc;
}

extern "C" int lmx_cu_dnn_bn_bwd(lmx_cu_stream s, const lmx_dnn_bn_args *a, const void *x,
                                 const void *dy, const void *gamma, const void *mean,
                                 const void *invstd, void *dx, void *dgamma, void *dbeta,
                                 void *ws) {
  session ss;
  if (begin(s, &ss)) return LMX_CU_DNN_SKIP;
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
    rc = not_supported(st) ? LMX_CU_DNN_SKIP : st_rc(st);
    if (!rc && a->zero_dscale && dgamma)
      rc = (int)cudaMemsetAsync(dgamma, 0, (size_t)C * sizeof(float), (cudaStream_t)s);
    break;
  }
  end(&ss);
  return rc;
}

/* ---- RNN -------------------------------------------------------------------------- */

/* a packed 3-D descriptor (hx / cx [L·D, N, H]; empty ones for weight queries) */
static cudnnTensorDescriptor_t tdesc3(const int *dim, const int *stride) {
  cudnnTensorDescriptor_t d = NULL;
  if (D.CreateTensorDescriptor(&d) != CUDNN_STATUS_SUCCESS) return NULL;
  if (dim && D.SetTensorNdDescriptor(d, CUDNN_DATA_FLOAT, 3, dim, stride) != CUDNN_STATUS_SUCCESS) {
    D.DestroyTensorDescriptor(d);
    return NULL;
  }
  return d;
}

static cudnnRNNDataDescriptor_t rnn_data(const lmx_dnn_rnn_args *a, int vec, const int *lens) {
  cudnnRNNDataDescriptor_t d = NULL;
  if (D.CreateRNNDataDescriptor(&d) != CUDNN_STATUS_SUCCESS) return NULL;
  if (D.SetRNNDataDescriptor(d, CUDNN_DATA_FLOAT, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, a->seq,
                             a->batch, vec, lens, NULL) != CUDNN_STATUS_SUCCESS) {
    D.DestroyRNNDataDescriptor(d);
    return NULL;
  }
  return d;
}

/* The descriptors of one RNN configuration, and cuDNN's sizes for it (made once: the
 * sequence-length array on the host is the only other allocation). */
static int rnn_create(cudnnHandle_t h, const lmx_dnn_rnn_args *a, lmx_dnn_descs *e) {
  cudnnDropoutDescriptor_t drop = NULL;
  cudnnRNNDescriptor_t rnn = NULL;
  if (!h || D.CreateDropoutDescriptor(&drop) != CUDNN_STATUS_SUCCESS) return -1;
  e->p[P_DROP] = drop;
  if (D.SetDropoutDescriptor(drop, h, 0.f, NULL, 0, 0) != CUDNN_STATUS_SUCCESS) return -1;
  if (D.CreateRNNDescriptor(&rnn) != CUDNN_STATUS_SUCCESS) return -1;
  e->p[P_RNN] = rnn;
  static const cudnnRNNMode_t cell[] = {CUDNN_RNN_RELU, CUDNN_RNN_TANH, CUDNN_LSTM, CUDNN_GRU};
  if (D.SetRNNDescriptor_v8(rnn, CUDNN_RNN_ALGO_STANDARD, cell[a->cell], CUDNN_RNN_DOUBLE_BIAS,
                            a->bidirectional ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL,
                            CUDNN_LINEAR_INPUT, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH,
                            a->input, a->hidden, a->hidden, a->layers, drop,
                            CUDNN_RNN_PADDED_IO_DISABLED) != CUDNN_STATUS_SUCCESS)
    return -1;
  int *lens = (int *)malloc((size_t)a->batch * sizeof(int));
  if (!lens) return -1;
  for (int i = 0; i < a->batch; i++) lens[i] = a->seq;
  e->p[P_RX] = rnn_data(a, a->x_vec, lens);
  e->p[P_RY] = rnn_data(a, a->y_vec, lens);
  free(lens);
  e->p[P_RH] = tdesc3(a->h_dim, a->h_stride);
  e->p[P_RM] = tdesc3(NULL, NULL), e->p[P_RB] = tdesc3(NULL, NULL);
  if (!e->p[P_RX] || !e->p[P_RY] || !e->p[P_RH] || !e->p[P_RM] || !e->p[P_RB]) return -1;
  size_t ws = 0, rs = 0, wsp = 0;
  cudnnRNNDataDescriptor_t xd = (cudnnRNNDataDescriptor_t)e->p[P_RX];
  if (D.GetRNNTempSpaceSizes(h, rnn, CUDNN_FWD_MODE_TRAINING, xd, &ws, &rs) !=
          CUDNN_STATUS_SUCCESS ||
      D.GetRNNWeightSpaceSize(h, rnn, &wsp) != CUDNN_STATUS_SUCCESS)
    return -1;
  e->i[I_WS] = (long long)ws, e->i[I_RESERVE] = (long long)rs, e->i[I_WSPACE] = (long long)wsp;
  e->i[I_SAME] = -1;
  return 0;
}

/* cuDNN's address of block k (lmx_dnn_rnn_block_at) in the weight space at base, or NULL */
static char *rnn_block_addr(cudnnHandle_t h, const lmx_dnn_descs *e, const lmx_dnn_rnn_args *a,
                            int k, const void *base) {
  int pl, lin, bias;
  lmx_dnn_rnn_block_at(a, k, &pl, &lin, &bias);
  void *m = NULL, *b = NULL;
  if (D.GetRNNWeightParams(h, (cudnnRNNDescriptor_t)e->p[P_RNN], pl, (size_t)e->i[I_WSPACE], base,
                           lin, (cudnnTensorDescriptor_t)e->p[P_RM], &m,
                           (cudnnTensorDescriptor_t)e->p[P_RB], &b) != CUDNN_STATUS_SUCCESS)
    return NULL;
  return (char *)(bias ? b : m);
}

/* Whether cuDNN's weight space is MXNet's layout (asked once per entry, with the
 * parameter array as the base address: cuDNN only computes addresses). */
static int rnn_same(cudnnHandle_t h, lmx_dnn_descs *e, const lmx_dnn_rnn_args *a, const void *w) {
  if (e->i[I_SAME] >= 0) return (int)e->i[I_SAME];
  int n = 2 * a->nblocks, same = 1;
  for (int k = 0; k < n && same; k++) {
    int pl, lin, bias;
    int64_t off, rows, cols;
    lmx_dnn_rnn_block_at(a, k, &pl, &lin, &bias);
    lmx_dnn_rnn_block(a, pl, lin, bias, &off, &rows, &cols);
    char *p = rnn_block_addr(h, e, a, k, w);
    same = p && p - (const char *)w == (ptrdiff_t)(off * (int64_t)sizeof(float));
  }
  e->i[I_SAME] = same && (size_t)e->i[I_WSPACE] == (size_t)a->nparams * sizeof(float);
  return (int)e->i[I_SAME];
}

/* Copies every block between MXNet's vector mx and cuDNN's weight space cu: to cuDNN
 * (to_cudnn), or back into mx (adding when acc). 0 or an error code. */
static int rnn_blocks(lmx_cu_stream s, cudnnHandle_t h, const lmx_dnn_descs *e,
                      const lmx_dnn_rnn_args *a, void *mx, void *cu, int to_cudnn, int acc) {
  for (int k = 0; k < 2 * a->nblocks; k++) {
    int pl, lin, bias;
    int64_t off, rows, cols;
    lmx_dnn_rnn_block_at(a, k, &pl, &lin, &bias);
    lmx_dnn_rnn_block(a, pl, lin, bias, &off, &rows, &cols);
    char *c = rnn_block_addr(h, e, a, k, cu), *m = (char *)mx + off * (int64_t)sizeof(float);
    if (!c) return LMX_CU_DNN_SKIP;
    int rc = to_cudnn ? (int)cudaMemcpyAsync(c, m, (size_t)(rows * cols) * sizeof(float),
                                             cudaMemcpyDeviceToDevice, (cudaStream_t)s)
                      : lmx_cu_scale(s, LMX_FLOAT32, rows * cols, m, c, 1.0, acc);
    if (rc) return rc;
  }
  return 0;
}

static int say(char *why, size_t len, const char *text) {
  if (why && len) snprintf(why, len, "%s", text);
  return LMX_CU_DNN_SKIP;
}

typedef struct {
  session ss;
  lmx_dnn_descs *e;
  lmx_dnn_rnn_ws w;
  int same;
  size_t y_at; /* byte offset of y in the op's reserve */
} rnn_call;

/* Locks the device, finds the configuration's descriptors and plans the workspace; 0,
 * or LMX_CU_DNN_SKIP (unlocked) with why. */
static int rnn_begin(lmx_cu_stream s, const lmx_dnn_rnn_args *a, const void *w, size_t ws_bytes,
                     size_t reserve_bytes, rnn_call *rc, char *why, size_t len) {
  if (begin(s, &rc->ss)) return say(why, len, "cuDNN is not usable on this device");
  rc->e = descs(&rc->ss, K_RNN, a, sizeof *a);
  if (!rc->e) {
    end(&rc->ss);
    return say(why, len, "cuDNN refused the RNN descriptors of this configuration");
  }
  if (rc->e->i[I_DECLINED]) { /* its forward got NOT_SUPPORTED: the own path, both ways */
    end(&rc->ss);
    return say(why, len, "cuDNN answered NOT_SUPPORTED for this configuration");
  }
  rc->same = rnn_same(rc->ss.h, rc->e, a, w);
  size_t y_bytes = (size_t)a->seq * (size_t)a->batch * (size_t)a->y_vec * sizeof(float);
  rc->y_at = ((size_t)rc->e->i[I_RESERVE] + 255) / 256 * 256;
  /* cuDNN's reserve, then y, must fit the op's reserve */
  if (lmx_dnn_rnn_fit(a, ws_bytes, reserve_bytes, (size_t)rc->e->i[I_WS], rc->y_at + y_bytes,
                      (size_t)rc->e->i[I_WSPACE], rc->same, &rc->w, why, len) != LMX_DNN_USE) {
    end(&rc->ss);
    return LMX_CU_DNN_SKIP;
  }
  return 0;
}

static int rnn_status(cudnnStatus_t st, int wrote, char *why, size_t len) {
  if (st == CUDNN_STATUS_SUCCESS) return 0;
  if (not_supported(st) && !wrote) return say(why, len, "cuDNN answered NOT_SUPPORTED");
  return st_rc(st);
}

extern "C" int lmx_cu_dnn_rnn_fwd(lmx_cu_stream s, const lmx_dnn_rnn_args *a,
                                  const lmx_cu_dnn_rnn_fwd_io *io, char *why, size_t len) {
  rnn_call c;
  int rc = rnn_begin(s, a, io->w, io->ws_bytes, io->reserve_bytes, &c, why, len);
  if (rc) return rc;
  char *ws = (char *)io->ws, *res = (char *)io->reserve;
  int32_t *lens = (int32_t *)(ws + c.w.seq);
  const void *wspace = io->w;
  void *y = res + c.y_at;
  rc = lmx_cu_fill(s, lens, LMX_INT32, a->batch, (double)a->seq);
  if (!rc && !c.same) {
    wspace = ws + c.w.wspace;
    rc = rnn_blocks(s, c.ss.h, c.e, a, (void *)io->w, ws + c.w.wspace, 1, 0);
  }
  if (!rc) {
    cudnnStatus_t st = D.RNNForward(
        c.ss.h, (cudnnRNNDescriptor_t)c.e->p[P_RNN],
        io->train ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE, lens,
        (cudnnRNNDataDescriptor_t)c.e->p[P_RX], io->x, (cudnnRNNDataDescriptor_t)c.e->p[P_RY], y,
        (cudnnTensorDescriptor_t)c.e->p[P_RH], io->hx, io->hy,
        (cudnnTensorDescriptor_t)c.e->p[P_RH], io->cx, io->cy, (size_t)c.e->i[I_WSPACE], wspace,
        (size_t)c.e->i[I_WS], ws + c.w.work, io->train ? (size_t)c.e->i[I_RESERVE] : 0,
        io->train ? (void *)res : NULL);
    rc = rnn_status(st, 0, why, len);
    if (rc == LMX_CU_DNN_SKIP) c.e->i[I_DECLINED] = 1; /* so its backward declines too */
  }
  if (!rc && io->y)
    rc = (int)cudaMemcpyAsync(io->y, y, (size_t)a->seq * a->batch * a->y_vec * sizeof(float),
                              cudaMemcpyDeviceToDevice, (cudaStream_t)s);
  end(&c.ss);
  return rc;
}

extern "C" int lmx_cu_dnn_rnn_bwd(lmx_cu_stream s, const lmx_dnn_rnn_args *a,
                                  const lmx_cu_dnn_rnn_bwd_io *io, char *why, size_t len) {
  rnn_call c;
  int rc = rnn_begin(s, a, io->w, io->ws_bytes, io->reserve_bytes, &c, why, len);
  if (rc) return rc;
  char *ws = (char *)io->ws, *res = (char *)io->reserve;
  int32_t *lens = (int32_t *)(ws + c.w.seq);
  const void *wspace = io->w;
  const void *y = res + c.y_at;
  size_t hn = (size_t)a->h_dim[0] * a->batch * a->hidden;
  /* targets cuDNN writes directly, or scratch that is added (or dropped) afterwards */
  void *dx = io->dx && !io->acc_dx ? io->dx : (void *)(ws + c.w.dx);
  void *dhx = io->dhx && io->acc_dhx ? (void *)(ws + c.w.dhx) : io->dhx;
  void *dcx = io->dcx && io->acc_dcx ? (void *)(ws + c.w.dcx) : io->dcx;
  rc = lmx_cu_fill(s, lens, LMX_INT32, a->batch, (double)a->seq);
  if (!rc && !c.same) {
    wspace = ws + c.w.wspace;
    rc = rnn_blocks(s, c.ss.h, c.e, a, (void *)io->w, ws + c.w.wspace, 1, 0);
  }
  if (!rc) {
    cudnnStatus_t st = D.RNNBackwardData_v8(
        c.ss.h, (cudnnRNNDescriptor_t)c.e->p[P_RNN], lens, (cudnnRNNDataDescriptor_t)c.e->p[P_RY],
        y, io->dy, (cudnnRNNDataDescriptor_t)c.e->p[P_RX], dx,
        (cudnnTensorDescriptor_t)c.e->p[P_RH], io->hx, io->dhy, dhx,
        (cudnnTensorDescriptor_t)c.e->p[P_RH], io->cx, io->dcy, dcx, (size_t)c.e->i[I_WSPACE],
        wspace, (size_t)c.e->i[I_WS], ws + c.w.work, (size_t)c.e->i[I_RESERVE], res);
    rc = rnn_status(st, 1, why, len); /* the reserve is cuDNN's: no own fallback now */
  }
  /* the weight gradient: cuDNN 9 adds (CUDNN_WGRAD_MODE_ADD) into the target, which the
   * glue zeroed for req 'write' where it is MXNet's own array */
  if (!rc && io->dw) {
    void *dwspace = c.same ? io->dw : (void *)(ws + c.w.dwspace);
    if (!c.same)
      rc = (int)cudaMemsetAsync(dwspace, 0, (size_t)c.e->i[I_WSPACE], (cudaStream_t)s);
    if (!rc) {
      cudnnStatus_t st = D.RNNBackwardWeights_v8(
          c.ss.h, (cudnnRNNDescriptor_t)c.e->p[P_RNN], CUDNN_WGRAD_MODE_ADD, lens,
          (cudnnRNNDataDescriptor_t)c.e->p[P_RX], io->x, (cudnnTensorDescriptor_t)c.e->p[P_RH],
          io->hx, (cudnnRNNDataDescriptor_t)c.e->p[P_RY], y, (size_t)c.e->i[I_WSPACE], dwspace,
          (size_t)c.e->i[I_WS], ws + c.w.work, (size_t)c.e->i[I_RESERVE], res);
      rc = rnn_status(st, 1, why, len);
    }
    if (!rc && !c.same) rc = rnn_blocks(s, c.ss.h, c.e, a, io->dw, dwspace, 0, 1);
  }
  size_t xn = (size_t)a->seq * a->batch * a->input;
  if (!rc && io->dx && io->acc_dx)
    rc = lmx_cu_scale(s, LMX_FLOAT32, (int64_t)xn, io->dx, dx, 1.0, 1);
  if (!rc && io->dhx && io->acc_dhx)
    rc = lmx_cu_scale(s, LMX_FLOAT32, (int64_t)hn, io->dhx, dhx, 1.0, 1);
  if (!rc && io->dcx && io->acc_dcx)
    rc = lmx_cu_scale(s, LMX_FLOAT32, (int64_t)hn, io->dcx, dcx, 1.0, 1);
  end(&c.ss);
  return rc;
}
