/* sim_nccl.cc — the simulator's NCCL: the entry points the `nccl` kvstore uses
 * (ncclCommInitAll, ncclCommDestroy, ncclGroupStart/End, ncclAllReduce with ncclSum,
 * ncclGetErrorString), over simulated device memory, with NCCL's names, argument types
 * and result codes. In the SIM build cuda_libs hands these out for LMX_LIB_NCCL
 * (lmx_sim_nccl_symbol) instead of opening libnccl.so.2, so src/device/cuda_nccl.c and
 * the kvstore run unchanged in CI.
 *
 * What it checks as NCCL would refuse: device ids (ncclInvalidArgument), a device twice
 * in one communicator (ncclInvalidUsage, "Duplicate GPU detected"), a live communicator,
 * the reduction (sum only here: ncclInvalidArgument otherwise), the data type, a stream
 * of the communicator's device, buffers that lie in live device memory of that device,
 * and that every rank of a collective gives the same count and type. A collective runs
 * once every rank has posted it: inside ncclGroupStart/End from one thread (as the
 * kvstore does), or, outside a group, a call that leaves ranks missing is
 * ncclInvalidUsage (real NCCL would block that thread forever). So is a group that ends
 * with ranks missing. Sums run in rank order: floats accumulate in float (float64 in
 * double; float16 and bfloat16 widened to float and rounded once, as the engine's CPU
 * sum does), integers wrap (unsigned arithmetic, like the GPU's).
 * Fault injection for tests: environment LUAMX_SIM_NCCL_FAIL=<ncclResult_t> makes every
 * ncclAllReduce return that code without running. Thread-safe: one mutex; the group
 * depth is per thread, as NCCL's.
 */
#include <stdlib.h>
#include <string.h>

#include <mutex>
#include <set>
#include <vector>

#include "../../../src/device/nccl_types.h"
#include "include/cuda_fp16.h"
#include "include/cuda_runtime_api.h"
#include "include/lmx_sim.h"
#include "sim_internal.h"

namespace {

struct clique;
struct comm {
  clique *q;
  int rank, dev;
};
struct clique {
  int n = 0, live = 0, posted = 0;
  std::vector<const void *> send;
  std::vector<void *> recv;
  std::vector<char> has;
  size_t count = 0;
  int dt = -1;
};

std::mutex mu;
std::set<comm *> comms;
thread_local int depth;
thread_local std::vector<clique *> touched;

size_t elem_size(int dt) {
  switch (dt) {
    case LMX_NCCL_INT8: case LMX_NCCL_UINT8: return 1;
    case LMX_NCCL_FLOAT16: case LMX_NCCL_BFLOAT16: return 2;
    case LMX_NCCL_INT32: case LMX_NCCL_UINT32: case LMX_NCCL_FLOAT32: return 4;
    case LMX_NCCL_INT64: case LMX_NCCL_UINT64: case LMX_NCCL_FLOAT64: return 8;
    default: return 0;
  }
}

float bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
uint16_t f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* NaN */
  u += 0x7fffu + ((u >> 16) & 1); /* round to nearest even */
  return (uint16_t)(u >> 16);
}

template <typename T, typename U> void sum_wrap(clique *q, std::vector<char> &tmp) {
  T *t = (T *)tmp.data();
  for (size_t j = 0; j < q->count; j++) {
    U s = 0;
    for (int r = 0; r < q->n; r++) s = (U)(s + (U)((const T *)q->send[(size_t)r])[j]);
    t[j] = (T)s;
  }
}

template <typename T> void sum_float(clique *q, std::vector<char> &tmp) {
  T *t = (T *)tmp.data();
  for (size_t j = 0; j < q->count; j++) {
    T s = 0;
    for (int r = 0; r < q->n; r++) s += ((const T *)q->send[(size_t)r])[j];
    t[j] = s;
  }
}

template <float (*Wide)(uint16_t), uint16_t (*Narrow)(float)>
void sum_half(clique *q, std::vector<char> &tmp) {
  uint16_t *t = (uint16_t *)tmp.data();
  for (size_t j = 0; j < q->count; j++) {
    float s = 0;
    for (int r = 0; r < q->n; r++) s += Wide(((const uint16_t *)q->send[(size_t)r])[j]);
    t[j] = Narrow(s);
  }
}

float h2f(uint16_t h) { return __half2float(__ushort_as_half(h)); }
uint16_t f2h(float f) { return __half_as_ushort(__float2half(f)); }

/* Every rank has posted: the sum into a temporary (recv may alias any send), then out. */
void run_locked(clique *q) {
  size_t bytes = q->count * elem_size(q->dt);
  std::vector<char> tmp(bytes ? bytes : 1);
  switch (q->dt) {
    case LMX_NCCL_INT8: sum_wrap<int8_t, uint8_t>(q, tmp); break;
    case LMX_NCCL_UINT8: sum_wrap<uint8_t, uint8_t>(q, tmp); break;
    case LMX_NCCL_INT32: sum_wrap<int32_t, uint32_t>(q, tmp); break;
    case LMX_NCCL_UINT32: sum_wrap<uint32_t, uint32_t>(q, tmp); break;
    case LMX_NCCL_INT64: sum_wrap<int64_t, uint64_t>(q, tmp); break;
    case LMX_NCCL_UINT64: sum_wrap<uint64_t, uint64_t>(q, tmp); break;
    case LMX_NCCL_FLOAT32: sum_float<float>(q, tmp); break;
    case LMX_NCCL_FLOAT64: sum_float<double>(q, tmp); break;
    case LMX_NCCL_FLOAT16: sum_half<h2f, f2h>(q, tmp); break;
    case LMX_NCCL_BFLOAT16: sum_half<bf16_to_f32, f32_to_bf16>(q, tmp); break;
  }
  for (int r = 0; r < q->n; r++) memcpy(q->recv[(size_t)r], tmp.data(), bytes);
}

void reset_locked(clique *q) {
  q->posted = 0;
  q->dt = -1;
  q->count = 0;
  for (char &h : q->has) h = 0;
}

/* ranks still missing: drop the collective */
int finish_locked(clique *q) {
  if (q->posted == 0) return LMX_NCCL_SUCCESS;
  reset_locked(q);
  return LMX_NCCL_INVALID_USAGE;
}

}  // namespace

extern "C" {

static const char *sim_nccl_error_string(int r) {
  switch (r) {
    case LMX_NCCL_SUCCESS: return "no error";
    case LMX_NCCL_UNHANDLED_CUDA_ERROR: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case LMX_NCCL_SYSTEM_ERROR: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case LMX_NCCL_INTERNAL_ERROR: return "internal error - please report this issue to the NCCL developers";
    case LMX_NCCL_INVALID_ARGUMENT: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case LMX_NCCL_INVALID_USAGE: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    default: return "unknown result code";
  }
}

static int sim_comm_init_all(void **out, int ndev, const int *devlist) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) cudaGetLastError();
  if (!out || ndev < 1) return LMX_NCCL_INVALID_ARGUMENT;
  std::vector<int> devs((size_t)ndev);
  for (int i = 0; i < ndev; i++) {
    devs[(size_t)i] = devlist ? devlist[i] : i;
    if (devs[(size_t)i] < 0 || devs[(size_t)i] >= count) return LMX_NCCL_INVALID_ARGUMENT;
    for (int j = 0; j < i; j++)
      if (devs[(size_t)j] == devs[(size_t)i]) return LMX_NCCL_INVALID_USAGE; /* duplicate GPU */
  }
  std::lock_guard<std::mutex> lk(mu);
  clique *q = new clique;
  q->n = q->live = ndev;
  q->send.resize((size_t)ndev);
  q->recv.resize((size_t)ndev);
  q->has.assign((size_t)ndev, 0);
  for (int i = 0; i < ndev; i++) {
    comm *c = new comm{q, i, devs[(size_t)i]};
    comms.insert(c);
    out[i] = c;
  }
  return LMX_NCCL_SUCCESS;
}

static int sim_comm_destroy(void *p) {
  std::lock_guard<std::mutex> lk(mu);
  comm *c = (comm *)p;
  if (!comms.count(c)) return LMX_NCCL_INVALID_ARGUMENT;
  comms.erase(c);
  clique *q = c->q;
  delete c;
  if (--q->live == 0) {
    for (auto it = touched.begin(); it != touched.end();)
      it = *it == q ? touched.erase(it) : it + 1;
    delete q;
  }
  return LMX_NCCL_SUCCESS;
}

static int sim_group_start(void) {
  depth++;
  return LMX_NCCL_SUCCESS;
}

static int sim_group_end(void) {
  if (depth == 0) return LMX_NCCL_INVALID_USAGE;
  if (--depth > 0) return LMX_NCCL_SUCCESS;
  std::lock_guard<std::mutex> lk(mu);
  int r = LMX_NCCL_SUCCESS;
  for (clique *q : touched) {
    int f = finish_locked(q);
    if (r == LMX_NCCL_SUCCESS) r = f;
  }
  touched.clear();
  return r;
}

static int sim_all_reduce(const void *send, void *recv, size_t count, int dt, int op, void *p,
                          cudaStream_t stream) {
  const char *fail = getenv("LUAMX_SIM_NCCL_FAIL");
  if (fail && *fail) return (int)strtol(fail, nullptr, 10);
  size_t es = elem_size(dt);
  if (op != LMX_NCCL_SUM || es == 0) return LMX_NCCL_INVALID_ARGUMENT;
  int sdev = lmx_sim::rt_stream_device(stream);
  std::lock_guard<std::mutex> lk(mu);
  comm *c = (comm *)p;
  if (!comms.count(c)) return LMX_NCCL_INVALID_ARGUMENT;
  if (sdev != c->dev) return LMX_NCCL_INVALID_ARGUMENT;
  int d1 = -1, d2 = -1;
  if (count && (!lmx_sim::rt_device_range(send, count * es, &d1) ||
                !lmx_sim::rt_device_range(recv, count * es, &d2) || d1 != c->dev ||
                d2 != c->dev))
    return LMX_NCCL_INVALID_ARGUMENT;
  clique *q = c->q;
  if (q->has[(size_t)c->rank]) return LMX_NCCL_INVALID_USAGE; /* posted twice */
  if (q->posted && (q->count != count || q->dt != dt)) return LMX_NCCL_INVALID_USAGE;
  q->count = count, q->dt = dt;
  q->send[(size_t)c->rank] = send, q->recv[(size_t)c->rank] = recv;
  q->has[(size_t)c->rank] = 1;
  if (++q->posted == q->n) {
    run_locked(q);
    reset_locked(q);
    return LMX_NCCL_SUCCESS;
  }
  if (depth == 0) return finish_locked(q);
  bool seen = false;
  for (clique *t : touched) seen |= t == q;
  if (!seen) touched.push_back(q);
  return LMX_NCCL_SUCCESS;
}

void *lmx_sim_nccl_symbol(const char *name) {
  static const struct {
    const char *name;
    void *fn;
  } table[] = {
      {"ncclCommInitAll", (void *)sim_comm_init_all},
      {"ncclCommDestroy", (void *)sim_comm_destroy},
      {"ncclGroupStart", (void *)sim_group_start},
      {"ncclGroupEnd", (void *)sim_group_end},
      {"ncclAllReduce", (void *)sim_all_reduce},
      {"ncclGetErrorString", (void *)sim_nccl_error_string},
  };
  for (const auto &t : table)
    if (strcmp(t.name, name) == 0) return t.fn;
  return nullptr;
}

}  // extern "C"
