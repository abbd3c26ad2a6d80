/* cuda_state.c — per-GPU state: lazy creation, current device, error and fault
 * reporting, synchronisation, the executor's note of the last operator, library
 * handles (see cuda_state.h).
 *
 * Kernels that check their input where the CPU raises (take mode raise, softmax lengths)
 * cannot fail their launch: they clamp, and record the first bad value in the device's
 * raise word, which every wait fetches (an asynchronous copy queued before it) and
 * reports after it, naming the operator remembered under the launch's tag.
 *
 * Device states are created once under a global mutex and never destroyed (the CUDA
 * runtime tears its contexts down at process exit; destroying streams from an atexit
 * handler would race with that). A state pointer, once published, is read without a
 * lock.
 */
#include "cuda_state.h"

#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "../luamx.h"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static lmx_cuda_dev *g_dev[LMX_CUDA_MAX_DEVICES];
static int g_count = -1;
static char g_count_reason[200];
static _Thread_local int t_current = -1;

int lmx_cuda_count(void) {
  int known = __atomic_load_n(&g_count, __ATOMIC_ACQUIRE);
  if (known >= 0) return known; /* every lookup asks: no lock once known */
  pthread_mutex_lock(&g_mu);
  if (g_count < 0) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      snprintf(g_count_reason, sizeof g_count_reason, "%s", cudaGetErrorString(e));
      cudaGetLastError(); /* not sticky: clear it */
      n = 0;
    } else if (n == 0) {
      snprintf(g_count_reason, sizeof g_count_reason, "the CUDA runtime reports no device");
    }
    __atomic_store_n(&g_count, n > LMX_CUDA_MAX_DEVICES ? LMX_CUDA_MAX_DEVICES : n,
                     __ATOMIC_RELEASE);
  }
  int n = g_count;
  pthread_mutex_unlock(&g_mu);
  return n;
}

const char *lmx_cuda_count_reason(void) {
  lmx_cuda_count();
  return g_count_reason;
}

int lmx_cuda_make_current(lmx_cuda_dev *d) {
  if (t_current == d->id) return LMX_OK;
  cudaError_t e = cudaSetDevice(d->id);
  if (e != cudaSuccess)
    return lmx_fail(LMX_ERR_DEVICE, "%s: cudaSetDevice failed: %s", d->name,
                    cudaGetErrorString(e));
  t_current = d->id;
  return LMX_OK;
}

/* ---- errors ---------------------------------------------------------------------------- */

static int broken_error(const lmx_cuda_dev *d) {
  return lmx_fail(LMX_ERR_DEVICE, "%s is unusable after an earlier fault (%s): its CUDA "
                  "context is lost; restart the process to use it again", d->name, d->fault);
}

/* After an error: clear it if it is not sticky, then ask the context a trivial question.
 * If that fails too, the context is lost and the device is marked broken. */
static void probe(lmx_cuda_dev *d) {
  cudaGetLastError();
  size_t fr, tot;
  t_current = -1; /* the probe makes d current (the failing call may have been another's) */
  if (cudaSetDevice(d->id) != cudaSuccess || cudaMemGetInfo(&fr, &tot) != cudaSuccess) {
    __atomic_store_n(&d->broken, 1, __ATOMIC_RELEASE);
    cudaGetLastError();
    return;
  }
  t_current = d->id;
}

static void record_fault(lmx_cuda_dev *d, const char *text) {
  pthread_mutex_lock(&d->fmu);
  if (!d->broken) snprintf(d->fault, sizeof d->fault, "%s", text);
  probe(d);
  pthread_mutex_unlock(&d->fmu);
}

int lmx_cuda_check(lmx_cuda_dev *d, cudaError_t e, const char *what) {
  if (e == cudaSuccess) return LMX_OK;
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    return lmx_fail(LMX_ERR_NOMEM, "%s: %s failed: %s", d->name, what, cudaGetErrorString(e));
  }
  char text[400];
  snprintf(text, sizeof text, "%s failed: %s", what, cudaGetErrorString(e));
  record_fault(d, text);
  if (d->broken)
    return lmx_fail(LMX_ERR_DEVICE, "%s: %s; %s is unusable now: its CUDA context is lost, "
                    "restart the process to use it again", d->name, text, d->name);
  return lmx_fail(LMX_ERR_DEVICE, "%s: %s", d->name, text);
}

int lmx_cuda_fault(lmx_cuda_dev *d, cudaError_t e, const char *what) {
  char last[LMX_CUDA_NAME_CAP + 96], text[400];
  pthread_mutex_lock(&d->fmu);
  if (d->last_op && d->last_node[0])
    snprintf(last, sizeof last, "last operator: %s '%s'", d->last_op, d->last_node);
  else if (d->last_op)
    snprintf(last, sizeof last, "last operator: %s (imperative call)", d->last_op);
  else
    snprintf(last, sizeof last, "no operator has run on %s yet", d->name);
  pthread_mutex_unlock(&d->fmu);
  snprintf(text, sizeof text, "asynchronous CUDA fault: %s (%s; reported by %s)",
           cudaGetErrorString(e), last, what);
  record_fault(d, text);
  if (d->broken)
    return lmx_fail(LMX_ERR_DEVICE, "%s: %s; %s is unusable now: its CUDA context is lost, "
                    "restart the process to use it again", d->name, text, d->name);
  return lmx_fail(LMX_ERR_DEVICE, "%s: %s", d->name, text);
}

/* ---- creation -------------------------------------------------------------------------- */

static int raw_alloc(void *ctx, size_t bytes, void **out) {
  lmx_cuda_dev *d = ctx;
  LMX_TRY(lmx_cuda_make_current(d));
  cudaError_t e = cudaMalloc(out, bytes);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError(); /* not sticky */
    return LMX_ERR_NOMEM;
  }
  return lmx_cuda_check(d, e, "cudaMalloc");
}

static void raw_free(void *ctx, void *p) {
  lmx_cuda_dev *d = ctx;
  if (lmx_cuda_make_current(d) != LMX_OK || cudaFree(p) != cudaSuccess) cudaGetLastError();
}

static int mem_info(void *ctx, size_t *fr, size_t *tot) {
  lmx_cuda_dev *d = ctx;
  LMX_TRY(lmx_cuda_make_current(d));
  return lmx_cuda_check(d, cudaMemGetInfo(fr, tot), "cudaMemGetInfo");
}

static int create(int dev_id, lmx_cuda_dev **out) {
  lmx_cuda_dev *d = lmx_calloc(1, sizeof *d);
  if (!d) return lmx_fail_nomem("gpu device state", sizeof *d);
  d->id = dev_id;
  snprintf(d->name, sizeof d->name, "gpu(%d)", dev_id);
  if (pthread_mutex_init(&d->mu, NULL) != 0) {
    lmx_free(d);
    return lmx_fail(LMX_ERR_INTERNAL, "gpu(%d): cannot create a mutex", dev_id);
  }
  if (pthread_mutex_init(&d->fmu, NULL) != 0) {
    pthread_mutex_destroy(&d->mu);
    lmx_free(d);
    return lmx_fail(LMX_ERR_INTERNAL, "gpu(%d): cannot create a mutex", dev_id);
  }
  if (pthread_mutex_init(&d->rmu, NULL) != 0) {
    pthread_mutex_destroy(&d->fmu);
    pthread_mutex_destroy(&d->mu);
    lmx_free(d);
    return lmx_fail(LMX_ERR_INTERNAL, "gpu(%d): cannot create a mutex", dev_id);
  }
  int rc;
  rc = lmx_cuda_make_current(d);
  if (rc == LMX_OK)
    rc = lmx_cuda_check(d, cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking),
                        "cudaStreamCreateWithFlags");
  if (rc == LMX_OK)
    rc = lmx_cuda_check(d, cudaEventCreateWithFlags(&d->order, cudaEventDisableTiming),
                        "cudaEventCreateWithFlags");
  lmx_cache_backend be = {d, raw_alloc, raw_free, mem_info};
  if (rc == LMX_OK) rc = lmx_cache_new(&be, d->name, &d->cache);
  if (rc != LMX_OK) {
    if (d->order) cudaEventDestroy(d->order);
    if (d->stream) cudaStreamDestroy(d->stream);
    cudaGetLastError();
    pthread_mutex_destroy(&d->rmu);
    pthread_mutex_destroy(&d->fmu);
    pthread_mutex_destroy(&d->mu);
    lmx_free(d);
    return lmx_fail_prefix(rc, "setting up gpu(%d): ", dev_id);
  }
  *out = d;
  return LMX_OK;
}

lmx_cuda_dev *lmx_cuda_dev_peek(int dev_id) {
  if (dev_id < 0 || dev_id >= LMX_CUDA_MAX_DEVICES) return NULL;
  return __atomic_load_n(&g_dev[dev_id], __ATOMIC_ACQUIRE);
}

int lmx_cuda_dev_get(int dev_id, lmx_cuda_dev **out) {
  int n = lmx_cuda_count();
  if (dev_id < 0 || dev_id >= n)
    return lmx_fail(LMX_ERR_DEVICE, "context gpu(%d) requested but %d GPU%s present%s%s%s",
                    dev_id, n, n == 1 ? " is" : "s are", n ? "" : " (",
                    n ? "" : lmx_cuda_count_reason(), n ? "" : ")");
  lmx_cuda_dev *d = __atomic_load_n(&g_dev[dev_id], __ATOMIC_ACQUIRE);
  if (!d) {
    pthread_mutex_lock(&g_mu);
    d = g_dev[dev_id];
    int rc = d ? LMX_OK : create(dev_id, &d);
    if (rc == LMX_OK) __atomic_store_n(&g_dev[dev_id], d, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g_mu);
    LMX_TRY(rc);
  }
  if (__atomic_load_n(&d->broken, __ATOMIC_ACQUIRE)) return broken_error(d);
  LMX_TRY(lmx_cuda_make_current(d));
  *out = d;
  return LMX_OK;
}

/* ---- synchronisation and the operator note -------------------------------------------- */

int lmx_cuda_sync_dev(lmx_cuda_dev *d) {
  pthread_mutex_lock(&d->mu);
  int rc = lmx_cuda_stage_drain(d);
  if (rc == LMX_OK) rc = lmx_cuda_raise_fetch(d);
  pthread_mutex_unlock(&d->mu);
  LMX_TRY(rc);
  cudaError_t e = cudaStreamSynchronize(d->stream);
  if (e != cudaSuccess) return lmx_cuda_fault(d, e, "cudaStreamSynchronize");
  pthread_mutex_lock(&d->mu);
  rc = lmx_cuda_raise_report(d, "cudaStreamSynchronize");
  pthread_mutex_unlock(&d->mu);
  return rc;
}

void *lmx_cuda_stream(int dev_id) {
  lmx_cuda_dev *d;
  if (lmx_cuda_dev_get(dev_id, &d) != LMX_OK) {
    lmx_clear_error();
    return NULL;
  }
  return d->stream;
}

void lmx_cuda_note_op(int dev_id, const char *op_name, const char *node_name) {
  lmx_cuda_dev *d = lmx_cuda_dev_peek(dev_id);
  if (!d) return; /* nothing was ever queued there: bind made no array on it */
  if (t_current != dev_id && lmx_cuda_make_current(d) != LMX_OK) lmx_clear_error();
  pthread_mutex_lock(&d->fmu);
  d->last_op = op_name;
  size_t n = 0;
  if (node_name)
    while (n < LMX_CUDA_NAME_CAP - 1 && node_name[n]) n++;
  if (n) memcpy(d->last_node, node_name, n);
  d->last_node[n] = 0;
  pthread_mutex_unlock(&d->fmu);
}

int lmx_cuda_lib_handle(int dev_id, int lib, int (*make)(int dev_id, void *stream, void **h),
                        void **out) {
  if (lib < 0 || lib >= LMX_NUM_CUDA_LIBS)
    return lmx_fail(LMX_ERR_ARG, "optional CUDA library id %d is unknown", lib);
  lmx_cuda_dev *d;
  LMX_TRY(lmx_cuda_dev_get(dev_id, &d));
  pthread_mutex_lock(&d->mu);
  int rc = LMX_OK;
  if (!d->lib[lib]) {
    void *h = NULL;
    rc = make(dev_id, d->stream, &h);
    if (rc == LMX_OK) d->lib[lib] = h;
    else lmx_fail_prefix(rc, "%s: creating the %s handle: ", d->name, lmx_cuda_lib_name(lib));
  }
  if (rc == LMX_OK) *out = d->lib[lib];
  pthread_mutex_unlock(&d->mu);
  return rc;
}

/* ---- the raise word of checking kernels ------------------------------------------------ */

static int raise_make(lmx_cuda_dev *d) {
  if (d->raise_dev) return LMX_OK;
  void *dev = NULL, *host = NULL;
  LMX_TRY(lmx_cuda_make_current(d));
  int rc = lmx_cuda_check(d, cudaMalloc(&dev, sizeof(lmx_cu_raise_word)), "cudaMalloc (raise word)");
  if (rc == LMX_OK)
    rc = lmx_cuda_check(d, cudaMallocHost(&host, sizeof(lmx_cu_raise_word)),
                        "cudaMallocHost (raise word)");
  if (rc == LMX_OK)
    rc = lmx_cuda_check(d, cudaMemsetAsync(dev, 0, sizeof(lmx_cu_raise_word), d->stream),
                        "cudaMemsetAsync (raise word)");
  if (rc != LMX_OK) {
    if (dev) cudaFree(dev);
    if (host) cudaFreeHost(host);
    cudaGetLastError();
    return rc;
  }
  memset(host, 0, sizeof(lmx_cu_raise_word));
  d->raise_host = host;
  __atomic_store_n(&d->raise_dev, (lmx_cu_raise_word *)dev, __ATOMIC_RELEASE);
  return LMX_OK;
}

int lmx_cuda_raise_slot(int dev_id, const char *op, const char *node, lmx_cuda_raise_text text,
                        int64_t range, lmx_cu_raise *out) {
  lmx_cuda_dev *d;
  LMX_TRY(lmx_cuda_dev_get(dev_id, &d));
  pthread_mutex_lock(&d->rmu);
  int rc = raise_make(d);
  if (rc == LMX_OK) {
    unsigned long long tag = ++d->raise_next;
    lmx_cuda_raise_rec *r = &d->raise_rec[tag % LMX_CUDA_RAISE_RING];
    r->tag = tag;
    r->op = op;
    r->text = text;
    r->range = range;
    snprintf(r->node, sizeof r->node, "%s", node ? node : "");
    out->word = d->raise_dev;
    out->tag = tag;
  }
  pthread_mutex_unlock(&d->rmu);
  return rc;
}

int lmx_cuda_raise_fetch(lmx_cuda_dev *d) {
  lmx_cu_raise_word *w = __atomic_load_n(&d->raise_dev, __ATOMIC_ACQUIRE);
  if (!w) return LMX_OK;
  return lmx_cuda_check(d, cudaMemcpyAsync(d->raise_host, w, sizeof *w, cudaMemcpyDeviceToHost,
                                           d->stream),
                        "cudaMemcpyAsync (raise word)");
}

int lmx_cuda_raise_report(lmx_cuda_dev *d, const char *what) {
  if (!__atomic_load_n(&d->raise_dev, __ATOMIC_ACQUIRE) || d->raise_host->tag == 0)
    return LMX_OK;
  lmx_cu_raise_word w = *d->raise_host;
  memset(d->raise_host, 0, sizeof w);
  LMX_TRY(lmx_cuda_check(d, cudaMemsetAsync(d->raise_dev, 0, sizeof w, d->stream),
                         "cudaMemsetAsync (raise word)"));
  pthread_mutex_lock(&d->rmu);
  lmx_cuda_raise_rec rec = d->raise_rec[w.tag % LMX_CUDA_RAISE_RING];
  pthread_mutex_unlock(&d->rmu);
  const lmx_cuda_raise_rec *r = &rec;
  if (r->tag != w.tag)
    return lmx_fail(LMX_ERR_ARG, "%s: a kernel found an out-of-range index or length at "
                    "position %lld (value %lld); its operator is no longer known (more than "
                    "%d checking launches since; reported by %s)", d->name, w.pos, w.value,
                    LMX_CUDA_RAISE_RING, what);
  char label[LMX_CUDA_NAME_CAP + 64], text[256];
  if (r->node[0]) snprintf(label, sizeof label, "%s '%s'", r->op, r->node);
  else snprintf(label, sizeof label, "%s", r->op);
  r->text(text, sizeof text, w.pos, w.value, r->range);
  return lmx_fail(LMX_ERR_ARG, "%s: %s (found on %s by the kernel, reported by %s)", label,
                  text, d->name, what);
}

int lmx_cuda_scratch(void **out) {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();
    return lmx_fail(LMX_ERR_DEVICE, "no current CUDA device for the kernels' scratch");
  }
  lmx_cuda_dev *d;
  LMX_TRY(lmx_cuda_dev_get(dev, &d));
  void *p = __atomic_load_n(&d->scratch, __ATOMIC_ACQUIRE);
  if (p) {
    *out = p;
    return LMX_OK;
  }
  pthread_mutex_lock(&d->mu);
  int rc = LMX_OK;
  if (!d->scratch) {
    rc = lmx_cuda_check(d, cudaMalloc(&p, LMX_CUDA_SCRATCH_BYTES), "cudaMalloc (kernel scratch)");
    if (rc == LMX_OK) __atomic_store_n(&d->scratch, p, __ATOMIC_RELEASE);
  }
  if (rc == LMX_OK) *out = d->scratch;
  pthread_mutex_unlock(&d->mu);
  return rc;
}
