/* cuda_nccl.c — NCCL communicators and grouped all-reduces (see cuda_nccl.h).
 *
 * The five entry points are looked up once, under a mutex, the first time a communicator
 * is made; a failed lookup is not remembered (a library installed meanwhile is found).
 * Types: NCCL's enums are passed as int (same size and ABI as a C enum) with the values
 * of nccl_types.h; where the real nccl.h is on the include path (real CUDA builds with
 * libnccl-dev or the toolkit's copy) static assertions pin those values to it.
 * Compiled to nothing without LUAMX_WITH_CUDA.
 */
#ifdef LUAMX_WITH_CUDA
#include "cuda_nccl.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "cuda_state.h"
#include "nccl_types.h"

#if !defined(LUAMX_CUDA_SIM) && defined(__has_include)
#if __has_include(<nccl.h>)
#pragma GCC diagnostic push /* nccl.h declares f() for f(void) */
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop
#define SAME(a, b) ((int)(a) == (int)(b))
_Static_assert(SAME(LMX_NCCL_INT8, ncclInt8) && SAME(LMX_NCCL_UINT8, ncclUint8) &&
                   SAME(LMX_NCCL_INT32, ncclInt32) && SAME(LMX_NCCL_INT64, ncclInt64) &&
                   SAME(LMX_NCCL_FLOAT16, ncclFloat16) && SAME(LMX_NCCL_FLOAT32, ncclFloat32) &&
                   SAME(LMX_NCCL_FLOAT64, ncclFloat64) && SAME(LMX_NCCL_BFLOAT16, ncclBfloat16),
               "nccl_types.h disagrees with nccl.h (ncclDataType_t)");
_Static_assert(SAME(LMX_NCCL_SUM, ncclSum) && SAME(LMX_NCCL_SUCCESS, ncclSuccess) &&
                   SAME(LMX_NCCL_SYSTEM_ERROR, ncclSystemError) &&
                   SAME(LMX_NCCL_INVALID_ARGUMENT, ncclInvalidArgument) &&
                   SAME(LMX_NCCL_INVALID_USAGE, ncclInvalidUsage),
               "nccl_types.h disagrees with nccl.h (ncclRedOp_t, ncclResult_t)");
_Static_assert(sizeof(ncclDataType_t) == sizeof(int) && sizeof(ncclResult_t) == sizeof(int),
               "NCCL's enums are not int-sized");
#undef SAME
#endif
#endif

typedef int (*init_all_fn)(void **comms, int ndev, const int *devlist);
typedef int (*destroy_fn)(void *comm);
typedef int (*group_fn)(void);
typedef int (*allreduce_fn)(const void *send, void *recv, size_t count, int dt, int op,
                            void *comm, cudaStream_t stream);
typedef const char *(*error_string_fn)(int result);

static struct {
  init_all_fn init_all;
  destroy_fn destroy;
  group_fn group_start, group_end;
  allreduce_fn allreduce;
  error_string_fn error_string;
} N;
static int g_loaded;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static int load(void) {
  pthread_mutex_lock(&g_mu);
  int rc = LMX_OK;
  if (!g_loaded) {
    static const char *const names[] = {"ncclCommInitAll", "ncclCommDestroy", "ncclGroupStart",
                                        "ncclGroupEnd", "ncclAllReduce", "ncclGetErrorString"};
    void *p[6];
    for (int i = 0; i < 6 && rc == LMX_OK; i++) rc = lmx_cuda_lib_sym(LMX_LIB_NCCL, names[i], &p[i]);
    if (rc == LMX_OK) {
      N.init_all = (init_all_fn)p[0], N.destroy = (destroy_fn)p[1];
      N.group_start = (group_fn)p[2], N.group_end = (group_fn)p[3];
      N.allreduce = (allreduce_fn)p[4], N.error_string = (error_string_fn)p[5];
      g_loaded = 1;
    }
  }
  pthread_mutex_unlock(&g_mu);
  return rc;
}

struct lmx_nccl_comm {
  int n;
  int dev[LMX_CUDA_MAX_DEVICES];
  void *comm[LMX_CUDA_MAX_DEVICES];
};

/* "gpu(0),gpu(1)" into buf */
static const char *dev_list(const int *devs, int n, char *buf, size_t cap) {
  size_t at = 0;
  buf[0] = 0;
  for (int i = 0; i < n && at < cap; i++)
    at += (size_t)snprintf(buf + at, cap - at, "%sgpu(%d)", i ? "," : "", devs[i]);
  return buf;
}

static int nccl_error(int r, const char *call, const int *devs, int n) {
  char list[LMX_CUDA_MAX_DEVICES * 10];
  return lmx_fail(r == LMX_NCCL_INVALID_ARGUMENT || r == LMX_NCCL_INVALID_USAGE ? LMX_ERR_ARG
                                                                               : LMX_ERR_DEVICE,
                  "NCCL: %s on %s failed: %s (ncclResult %d)", call,
                  dev_list(devs, n, list, sizeof list), N.error_string(r), r);
}

int lmx_nccl_comm_new(int n, const int *devs, lmx_nccl_comm **out) {
  if (n < 1 || n > LMX_CUDA_MAX_DEVICES)
    return lmx_fail(LMX_ERR_ARG, "NCCL: a communicator needs 1 to %d devices, got %d",
                    LMX_CUDA_MAX_DEVICES, n);
  for (int i = 0; i < n; i++) {
    lmx_cuda_dev *d;
    LMX_TRY(lmx_cuda_dev_get(devs[i], &d)); /* exists, and its state and stream are made */
    for (int j = 0; j < i; j++)
      if (devs[j] == devs[i])
        return lmx_fail(LMX_ERR_ARG, "NCCL: gpu(%d) appears twice in one communicator",
                        devs[i]);
  }
  LMX_TRY(load());
  lmx_nccl_comm *c = lmx_calloc(1, sizeof *c);
  if (!c) return lmx_fail_nomem("an NCCL communicator", sizeof *c);
  c->n = n;
  memcpy(c->dev, devs, (size_t)n * sizeof *devs);
  int r = N.init_all(c->comm, n, devs);
  if (r != LMX_NCCL_SUCCESS) {
    int rc = nccl_error(r, "ncclCommInitAll", devs, n);
    lmx_free(c);
    return rc;
  }
  *out = c;
  return LMX_OK;
}

void lmx_nccl_comm_free(lmx_nccl_comm *c) {
  if (!c) return;
  for (int i = 0; i < c->n; i++)
    if (c->comm[i]) N.destroy(c->comm[i]);
  lmx_free(c);
}

int lmx_nccl_allreduce(lmx_nccl_comm *c, const void *const *send, void *const *recv,
                       size_t count, int dt) {
  cudaStream_t stream[LMX_CUDA_MAX_DEVICES];
  for (int i = 0; i < c->n; i++) {
    lmx_cuda_dev *d;
    LMX_TRY(lmx_cuda_dev_get(c->dev[i], &d));
    stream[i] = d->stream;
  }
  int r = N.group_start();
  if (r != LMX_NCCL_SUCCESS) return nccl_error(r, "ncclGroupStart", c->dev, c->n);
  int first = LMX_NCCL_SUCCESS;
  for (int i = 0; i < c->n && first == LMX_NCCL_SUCCESS; i++)
    first = N.allreduce(send[i], recv[i], count, dt, LMX_NCCL_SUM, c->comm[i], stream[i]);
  r = N.group_end(); /* always closes the group, even after a failed call */
  if (first != LMX_NCCL_SUCCESS) return nccl_error(first, "ncclAllReduce", c->dev, c->n);
  if (r != LMX_NCCL_SUCCESS) return nccl_error(r, "ncclGroupEnd (all-reduce)", c->dev, c->n);
  return LMX_OK;
}
#else
typedef int lmx_cuda_nccl_unused; /* keeps the translation unit non-empty */
#endif
