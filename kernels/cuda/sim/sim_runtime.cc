/* sim_runtime.cc — the CUDA simulator's fake runtime: devices, memory, copies, streams,
 * events and errors over host memory (the API subset declared in
 * include/cuda_runtime_api.h), so that the engine's real device runtime
 * (src/device/cuda*.c) runs unchanged in the -DLUAMX_CUDA=SIM build.
 *
 * What it checks as hardware would refuse: the device id, memory capacity per device
 * (LUAMX_SIM_GPU_MEM bytes, default 2 GiB), that a pointer passed as device memory lies
 * inside a live cudaMalloc block (with the whole range) and that a host pointer is not
 * one, stream and event handles. Work on a stream executes when it is enqueued; events
 * record the time. Asynchronous faults (a kernel the simulator found deadlocked, or one
 * injected with lmx_sim_inject_fault) are sticky per device until the next synchronising
 * call (stream/event/device synchronise or query, a synchronous copy), which returns the
 * fault once and clears it (hardware keeps the context broken; the simulator lets tests
 * go on). Thread-safe: one mutex; the current device and the last error are per thread.
 */
#include <stdlib.h>
#include <string.h>

#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "include/cuda_runtime_api.h"
#include "include/lmx_sim.h"
#include "sim_internal.h"

struct CUstream_st {
  int dev;
};
struct CUevent_st {
  int dev;
  bool recorded;
  double t_ms;
};

namespace {

struct block_info {
  size_t bytes;   /* the addressable range (at least 1) */
  size_t counted; /* bytes charged to the device's capacity */
  int dev;        /* -1: pinned host memory */
};

struct device {
  size_t capacity = 0, used = 0;
  int sticky = 0, injected = 0;
};

std::mutex mu;
bool inited;
std::vector<device> devs;
std::map<uintptr_t, block_info> blocks; /* start address -> block */
std::set<CUstream_st *> streams;
std::set<CUevent_st *> events;
thread_local int cur_dev;
thread_local cudaError_t last_err;

void init_locked() {
  if (inited) return;
  inited = true;
  const char *n = getenv("LUAMX_SIM_GPUS"), *m = getenv("LUAMX_SIM_GPU_MEM");
  long count = n ? strtol(n, nullptr, 10) : 2;
  if (count < 0) count = 0;
  if (count > 16) count = 16;
  unsigned long long cap = m ? strtoull(m, nullptr, 10) : (2ull << 30);
  devs.resize((size_t)count);
  for (device &d : devs) d.capacity = (size_t)cap;
}

cudaError_t ret(cudaError_t e) {
  if (e != cudaSuccess) last_err = e;
  return e;
}

/* The live block holding [p, p + bytes), or nullptr. */
const block_info *find_locked(const void *p, size_t bytes) {
  uintptr_t a = (uintptr_t)p;
  auto it = blocks.upper_bound(a);
  if (it == blocks.begin()) return nullptr;
  --it;
  if (a < it->first || a + bytes > it->first + it->second.bytes) return nullptr;
  return &it->second;
}
bool is_device_locked(const void *p, size_t bytes, int *dev) {
  const block_info *b = find_locked(p, bytes ? bytes : 1);
  if (!b || b->dev < 0) return false;
  if (dev) *dev = b->dev;
  return true;
}
/* a host pointer: not inside any device block */
bool is_host_locked(const void *p) {
  const block_info *b = find_locked(p, 1);
  return !b || b->dev < 0;
}

cudaError_t take_sticky_locked(int dev) {
  if (dev < 0 || (size_t)dev >= devs.size()) return cudaSuccess;
  int s = devs[(size_t)dev].sticky;
  devs[(size_t)dev].sticky = 0;
  return (cudaError_t)s;
}

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

cudaError_t copy_locked(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind) {
  if (bytes == 0) return cudaSuccess;
  if (!dst || !src) return cudaErrorInvalidValue;
  bool dd = is_device_locked(dst, bytes, nullptr), sd = is_device_locked(src, bytes, nullptr);
  bool dh = is_host_locked(dst), sh = is_host_locked(src);
  bool ok = kind == cudaMemcpyHostToDevice   ? dd && sh
            : kind == cudaMemcpyDeviceToHost ? dh && sd
            : kind == cudaMemcpyDeviceToDevice ? dd && sd
            : kind == cudaMemcpyHostToHost     ? dh && sh
            : kind == cudaMemcpyDefault        ? (dd || dh) && (sd || sh)
                                               : false;
  if (!ok) return cudaErrorInvalidValue;
  memmove(dst, src, bytes);
  return cudaSuccess;
}

}  // namespace

namespace lmx_sim {
int rt_stream_device(cudaStream_t s) {
  std::lock_guard<std::mutex> lk(mu);
  init_locked();
  if (!s) return (size_t)cur_dev < devs.size() ? cur_dev : -1;
  return streams.count(s) ? s->dev : -1;
}
void rt_set_last(cudaError_t e) { last_err = e; }
void rt_set_sticky(int dev, cudaError_t e) {
  std::lock_guard<std::mutex> lk(mu);
  if (dev >= 0 && (size_t)dev < devs.size() && !devs[(size_t)dev].sticky)
    devs[(size_t)dev].sticky = e;
}
int rt_take_injected(int dev) {
  std::lock_guard<std::mutex> lk(mu);
  if (dev < 0 || (size_t)dev >= devs.size()) return 0;
  int v = devs[(size_t)dev].injected;
  devs[(size_t)dev].injected = 0;
  return v;
}
bool rt_device_range(const void *p, size_t bytes, int *dev) {
  std::lock_guard<std::mutex> lk(mu);
  return is_device_locked(p, bytes, dev);
}
}  // namespace lmx_sim

extern "C" {

void lmx_sim_inject_fault(int dev, int code) {
  std::lock_guard<std::mutex> lk(mu);
  init_locked();
  if (dev >= 0 && (size_t)dev < devs.size()) devs[(size_t)dev].injected = code;
}

const char *cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInitializationError: return "cudaErrorInitializationError";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    default: return "cudaErrorUnknown";
  }
}

const char *cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    default: return "unknown error";
  }
}

cudaError_t cudaGetLastError(void) {
  cudaError_t e = last_err;
  last_err = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError(void) { return last_err; }

cudaError_t cudaGetDeviceCount(int *count) {
  std::lock_guard<std::mutex> lk(mu);
  init_locked();
  if (!count) return ret(cudaErrorInvalidValue);
  *count = (int)devs.size();
  return devs.empty() ? ret(cudaErrorNoDevice) : cudaSuccess;
}

cudaError_t cudaSetDevice(int dev) {
  std::lock_guard<std::mutex> lk(mu);
  init_locked();
  if (dev < 0 || (size_t)dev >= devs.size()) return ret(cudaErrorInvalidDevice);
  cur_dev = dev;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int *dev) {
  if (!dev) return ret(cudaErrorInvalidValue);
  *dev = cur_dev;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int dev) {
  std::lock_guard<std::mutex> lk(mu);
  init_locked();
  if (!value) return ret(cudaErrorInvalidValue);
  if (dev < 0 || (size_t)dev >= devs.size()) return ret(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = 1024; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = 48 * 1024; break;
    case cudaDevAttrWarpSize: *value = 32; break;
    case cudaDevAttrMultiProcessorCount: *value = 132; break;
    case cudaDevAttrComputeCapabilityMajor: *value = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; break;
    default: return ret(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
  std::lock_guard<std::mutex> lk(mu);
  return ret(take_sticky_locked(cur_dev));
}

cudaError_t cudaDeviceCanAccessPeer(int *can, int dev, int peer) {
  std::lock_guard<std::mutex> lk(mu);
  init_locked();
  if (!can) return ret(cudaErrorInvalidValue);
  if (dev < 0 || peer < 0 || (size_t)dev >= devs.size() || (size_t)peer >= devs.size())
    return ret(cudaErrorInvalidDevice);
  *can = dev != peer;
  return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t bytes) {
  std::lock_guard<std::mutex> lk(mu);
  init_locked();
  if (!p) return ret(cudaErrorInvalidValue);
  *p = nullptr;
  if ((size_t)cur_dev >= devs.size()) return ret(cudaErrorInvalidDevice);
  device &d = devs[(size_t)cur_dev];
  if (bytes > d.capacity - d.used) return ret(cudaErrorMemoryAllocation);
  size_t rounded = (bytes + 255) / 256 * 256;
  void *m = aligned_alloc(256, rounded ? rounded : 256);
  if (!m) return ret(cudaErrorMemoryAllocation);
  /* device memory is not zeroed: poison it (the ends only of a large block, so a big
   * allocation does not cost its whole size in host pages) */
  size_t total = rounded ? rounded : 256, ends = (size_t)1 << 20;
  if (total <= 64 * ends) {
    memset(m, 0xa5, total);
  } else {
    memset(m, 0xa5, ends);
    memset((char *)m + total - ends, 0xa5, ends);
  }
  blocks[(uintptr_t)m] = block_info{bytes ? bytes : 1, bytes, cur_dev};
  d.used += bytes;
  *p = m;
  return cudaSuccess;
}

cudaError_t cudaFree(void *p) {
  if (!p) return cudaSuccess;
  std::lock_guard<std::mutex> lk(mu);
  auto it = blocks.find((uintptr_t)p);
  if (it == blocks.end() || it->second.dev < 0) return ret(cudaErrorInvalidValue);
  devs[(size_t)it->second.dev].used -= it->second.counted;
  blocks.erase(it);
  free(p);
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
  std::lock_guard<std::mutex> lk(mu);
  init_locked();
  if (!free_bytes || !total_bytes) return ret(cudaErrorInvalidValue);
  if ((size_t)cur_dev >= devs.size()) return ret(cudaErrorInvalidDevice);
  const device &d = devs[(size_t)cur_dev];
  *free_bytes = d.capacity - d.used;
  *total_bytes = d.capacity;
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned flags) {
  (void)flags;
  std::lock_guard<std::mutex> lk(mu);
  if (!p) return ret(cudaErrorInvalidValue);
  size_t rounded = (bytes + 63) / 64 * 64;
  void *m = aligned_alloc(64, rounded ? rounded : 64);
  if (!m) return ret(cudaErrorMemoryAllocation);
  blocks[(uintptr_t)m] = block_info{bytes ? bytes : 1, 0, -1};
  *p = m;
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void **p, size_t bytes) { return cudaHostAlloc(p, bytes, 0); }

cudaError_t cudaFreeHost(void *p) {
  if (!p) return cudaSuccess;
  std::lock_guard<std::mutex> lk(mu);
  auto it = blocks.find((uintptr_t)p);
  if (it == blocks.end() || it->second.dev >= 0) return ret(cudaErrorInvalidValue);
  blocks.erase(it);
  free(p);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t s) {
  if (lmx_sim::rt_stream_device(s) < 0) return ret(cudaErrorInvalidResourceHandle);
  std::lock_guard<std::mutex> lk(mu);
  if (bytes == 0) return cudaSuccess;
  if (!is_device_locked(p, bytes, nullptr)) return ret(cudaErrorInvalidValue);
  memset(p, value, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemset(void *p, int value, size_t bytes) {
  return cudaMemsetAsync(p, value, bytes, nullptr);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t s) {
  if (lmx_sim::rt_stream_device(s) < 0) return ret(cudaErrorInvalidResourceHandle);
  std::lock_guard<std::mutex> lk(mu);
  return ret(copy_locked(dst, src, bytes, kind));
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind) {
  std::lock_guard<std::mutex> lk(mu);
  cudaError_t e = take_sticky_locked(cur_dev); /* a synchronous copy synchronises */
  if (e != cudaSuccess) return ret(e);
  return ret(copy_locked(dst, src, bytes, kind));
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dst_dev, const void *src, int src_dev,
                                size_t bytes, cudaStream_t s) {
  if (lmx_sim::rt_stream_device(s) < 0) return ret(cudaErrorInvalidResourceHandle);
  std::lock_guard<std::mutex> lk(mu);
  int dd = -1, sd = -1;
  if (bytes == 0) return cudaSuccess;
  if (!is_device_locked(dst, bytes, &dd) || !is_device_locked(src, bytes, &sd) ||
      dd != dst_dev || sd != src_dev)
    return ret(cudaErrorInvalidValue);
  memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags) {
  (void)flags;
  std::lock_guard<std::mutex> lk(mu);
  init_locked();
  if (!s) return ret(cudaErrorInvalidValue);
  if ((size_t)cur_dev >= devs.size()) return ret(cudaErrorInvalidDevice);
  CUstream_st *st = new CUstream_st{cur_dev};
  streams.insert(st);
  *s = st;
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t *s) { return cudaStreamCreateWithFlags(s, 0); }

cudaError_t cudaStreamDestroy(cudaStream_t s) {
  std::lock_guard<std::mutex> lk(mu);
  if (!streams.erase(s)) return ret(cudaErrorInvalidResourceHandle);
  delete s;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  int dev = lmx_sim::rt_stream_device(s);
  if (dev < 0) return ret(cudaErrorInvalidResourceHandle);
  std::lock_guard<std::mutex> lk(mu);
  return ret(take_sticky_locked(dev));
}
cudaError_t cudaStreamQuery(cudaStream_t s) { return cudaStreamSynchronize(s); }

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags) {
  (void)flags;
  if (lmx_sim::rt_stream_device(s) < 0) return ret(cudaErrorInvalidResourceHandle);
  std::lock_guard<std::mutex> lk(mu);
  return events.count(e) ? cudaSuccess : ret(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags) {
  (void)flags;
  std::lock_guard<std::mutex> lk(mu);
  if (!e) return ret(cudaErrorInvalidValue);
  CUevent_st *ev = new CUevent_st{cur_dev, false, 0};
  events.insert(ev);
  *e = ev;
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t *e) { return cudaEventCreateWithFlags(e, 0); }

cudaError_t cudaEventDestroy(cudaEvent_t e) {
  std::lock_guard<std::mutex> lk(mu);
  if (!events.erase(e)) return ret(cudaErrorInvalidResourceHandle);
  delete e;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  int dev = lmx_sim::rt_stream_device(s);
  if (dev < 0) return ret(cudaErrorInvalidResourceHandle);
  std::lock_guard<std::mutex> lk(mu);
  if (!events.count(e)) return ret(cudaErrorInvalidResourceHandle);
  e->dev = dev;
  e->recorded = true;
  e->t_ms = now_ms();
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  std::lock_guard<std::mutex> lk(mu);
  if (!events.count(e)) return ret(cudaErrorInvalidResourceHandle);
  return ret(take_sticky_locked(e->dev));
}
cudaError_t cudaEventQuery(cudaEvent_t e) { return cudaEventSynchronize(e); }

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
  std::lock_guard<std::mutex> lk(mu);
  if (!ms || !events.count(a) || !events.count(b)) return ret(cudaErrorInvalidResourceHandle);
  if (!a->recorded || !b->recorded) return ret(cudaErrorInvalidResourceHandle);
  *ms = (float)(b->t_ms - a->t_ms);
  return cudaSuccess;
}

}  // extern "C"
