/* fake_cudart.c — the host fake of the CUDA runtime subset (see cuda_runtime_api.h in
 * this folder). Streams are queues of operations run in order when someone waits:
 * cudaStreamSynchronize runs a stream to its end, cudaEventSynchronize runs the
 * recording stream up to the event's mark, a cudaStreamWaitEvent entry runs the other
 * stream up to the mark before its own stream goes on. */
#include "cuda_runtime_api.h"

#include <stdlib.h>
#include <string.h>

enum { MAXDEV = 4, MAXBLK = 4096 };
enum { OP_COPY, OP_SET, OP_MARK, OP_WAIT };

typedef struct op {
  int kind;
  void *dst;
  const void *src;
  size_t n;
  int value;
  struct CUstream_st *other; /* OP_WAIT: run other up to pos */
  size_t pos;
} op;

struct CUstream_st {
  int dev;
  op *q;
  size_t n, cap, done; /* ops [0, done) have run */
};

struct CUevent_st {
  struct CUstream_st *s; /* last recorded on (NULL: never) */
  size_t pos;            /* index of its mark op */
};

static struct {
  int ndev, cur, last_err;
  size_t capacity, used[MAXDEV];
  int mallocs[MAXDEV];
  int fault[MAXDEV], sticky[MAXDEV], broken[MAXDEV];
  void *blk[MAXBLK];
  size_t blk_n[MAXBLK];
  int blk_dev[MAXBLK];
  struct CUstream_st *streams[64];
  int nstreams;
} F = {2, 0, 0, (size_t)256 << 20, {0}, {0}, {0}, {0}, {0}, {0}, {0}, {0}, {0}, 0};

void fake_cuda_setup(int ndev, size_t capacity) {
  F.ndev = ndev;
  F.capacity = capacity;
}

void fake_cuda_inject_fault(int dev, cudaError_t e, int sticky) {
  F.fault[dev] = e;
  F.sticky[dev] = sticky;
}

int fake_cuda_mallocs(int dev) { return F.mallocs[dev]; }

int fake_cuda_pending(int dev) {
  int n = 0;
  for (int i = 0; i < F.nstreams; i++)
    if (F.streams[i] && F.streams[i]->dev == dev) n += (int)(F.streams[i]->n - F.streams[i]->done);
  return n;
}

static cudaError_t ret(cudaError_t e) {
  if (e != cudaSuccess) F.last_err = e;
  return e;
}

#define DEV_OK(d)                                                                          \
  do {                                                                                     \
    if (F.broken[d]) return ret((cudaError_t)F.fault[d]);                                  \
  } while (0)

cudaError_t cudaGetDeviceCount(int *n) {
  if (F.ndev == 0) return ret(cudaErrorNoDevice);
  *n = F.ndev;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int dev) {
  if (dev < 0 || dev >= F.ndev) return ret(cudaErrorInvalidDevice);
  F.cur = dev;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int *dev) {
  if (F.ndev == 0) return ret(cudaErrorNoDevice);
  *dev = F.cur;
  return cudaSuccess;
}

const char *cudaGetErrorString(cudaError_t e) {
  switch (e) {
  case cudaSuccess: return "no error";
  case cudaErrorInvalidValue: return "invalid argument";
  case cudaErrorMemoryAllocation: return "out of memory";
  case cudaErrorNoDevice: return "no CUDA-capable device is detected";
  case cudaErrorInvalidDevice: return "invalid device ordinal";
  case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
  default: return "unknown error";
  }
}

cudaError_t cudaGetLastError(void) {
  cudaError_t e = (cudaError_t)F.last_err;
  F.last_err = 0;
  if (F.broken[F.cur]) return (cudaError_t)F.fault[F.cur];
  return e;
}

static void push(struct CUstream_st *s, op o) {
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 64;
    s->q = realloc(s->q, s->cap * sizeof *s->q);
  }
  s->q[s->n++] = o;
}

static void run_until(struct CUstream_st *s, size_t end) {
  while (s->done < end && s->done < s->n) {
    op *o = &s->q[s->done++];
    if (o->kind == OP_COPY) memmove(o->dst, o->src, o->n);
    else if (o->kind == OP_SET) memset(o->dst, o->value, o->n);
    else if (o->kind == OP_WAIT) run_until(o->other, o->pos + 1);
  }
}

/* A synchronisation on dev: an injected fault is reported here. */
static cudaError_t sync_fault(int dev) {
  DEV_OK(dev);
  if (F.fault[dev]) {
    cudaError_t e = (cudaError_t)F.fault[dev];
    if (F.sticky[dev]) F.broken[dev] = 1;
    else F.fault[dev] = 0;
    return ret(e);
  }
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags) {
  (void)flags;
  DEV_OK(F.cur);
  struct CUstream_st *st = calloc(1, sizeof *st);
  st->dev = F.cur;
  F.streams[F.nstreams++] = st;
  *s = st;
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
  for (int i = 0; i < F.nstreams; i++)
    if (F.streams[i] == s) F.streams[i] = NULL;
  free(s->q);
  free(s);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  run_until(s, s->n);
  return sync_fault(s->dev);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags) {
  (void)flags;
  DEV_OK(s->dev);
  if (e->s) push(s, (op){.kind = OP_WAIT, .other = e->s, .pos = e->pos});
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags) {
  (void)flags;
  DEV_OK(F.cur);
  *e = calloc(1, sizeof **e);
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e) {
  free(e);
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  DEV_OK(s->dev);
  e->s = s;
  e->pos = s->n;
  push(s, (op){.kind = OP_MARK});
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  if (!e->s) return cudaSuccess;
  run_until(e->s, e->pos + 1);
  return sync_fault(e->s->dev);
}

cudaError_t cudaMalloc(void **p, size_t bytes) {
  int d = F.cur;
  DEV_OK(d);
  if (bytes > F.capacity - F.used[d]) return ret(cudaErrorMemoryAllocation);
  for (int i = 0; i < MAXBLK; i++)
    if (!F.blk[i]) {
      F.blk[i] = malloc(bytes);
      if (!F.blk[i]) return ret(cudaErrorMemoryAllocation);
      memset(F.blk[i], 0xEE, bytes); /* garbage, as fresh device memory */
      F.blk_n[i] = bytes;
      F.blk_dev[i] = d;
      F.used[d] += bytes;
      F.mallocs[d]++;
      *p = F.blk[i];
      return cudaSuccess;
    }
  return ret(cudaErrorMemoryAllocation);
}

cudaError_t cudaFree(void *p) {
  for (int i = 0; p && i < MAXBLK; i++)
    if (F.blk[i] == p) {
      for (int k = 0; k < F.nstreams; k++) /* cudaFree waits for the device */
        if (F.streams[k] && F.streams[k]->dev == F.blk_dev[i]) run_until(F.streams[k], F.streams[k]->n);
      F.used[F.blk_dev[i]] -= F.blk_n[i];
      free(p);
      F.blk[i] = NULL;
      return cudaSuccess;
    }
  return p ? ret(cudaErrorInvalidValue) : cudaSuccess;
}

cudaError_t cudaMallocHost(void **p, size_t bytes) {
  *p = malloc(bytes);
  return *p ? cudaSuccess : ret(cudaErrorMemoryAllocation);
}

cudaError_t cudaFreeHost(void *p) {
  free(p);
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
  DEV_OK(F.cur);
  *free_bytes = F.capacity - F.used[F.cur];
  *total_bytes = F.capacity;
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind k,
                            cudaStream_t s) {
  (void)k;
  DEV_OK(s->dev);
  push(s, (op){.kind = OP_COPY, .dst = dst, .src = src, .n = n});
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s) {
  DEV_OK(s->dev);
  push(s, (op){.kind = OP_SET, .dst = p, .n = n, .value = v});
  return cudaSuccess;
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dst_dev, const void *src, int src_dev, size_t n,
                                cudaStream_t s) {
  (void)dst_dev;
  (void)src_dev;
  DEV_OK(s->dev);
  push(s, (op){.kind = OP_COPY, .dst = dst, .src = src, .n = n});
  return cudaSuccess;
}
