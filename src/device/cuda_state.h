/* cuda_state.h — the per-GPU runtime state behind lmx_cuda_device (CUDA builds only).
 *
 * One lmx_cuda_dev per device id, created on first use of gpu(n) and kept for the life
 * of the process: its stream (non-blocking, so the legacy default stream never
 * serialises it), the caching allocator over cudaMalloc/cudaFree, the pinned staging
 * ring for host copies (cuda_copy.c), per-device handles of the optional libraries
 * (cuBLAS, cuDNN, ...), and the fault record.
 *
 * One stream per device. Every kernel and every copy of gpu(n) is queued on
 * lmx_cuda_stream(n), so work on one device runs in the order it was issued and memory
 * freed to the cache can be handed out again at once (caching_alloc.h). The host waits
 * only in lmx_cuda_sync (sync(), wait_to_read, waitall) and in copies to host memory.
 *
 * Errors. Every runtime call is checked (lmx_cuda_check); a cudaError never aborts.
 * Kernels fault asynchronously: the fault surfaces at the next synchronisation, long
 * after the launch returned. So the executor tells the device which operator it is
 * about to run (lmx_cuda_note_op, a copy of two short strings), and a fault reported at
 * a synchronisation names the last one: "gpu(0): asynchronous CUDA fault: an illegal
 * memory access was encountered (last operator: FullyConnected 'fc1')". After a fault
 * the device is probed: if the CUDA context still answers, the device goes on (the
 * error was reported once); if it does not (a sticky error: the context is lost, as
 * after an illegal address on real hardware), the device is marked broken and every
 * later call on it fails at once with the original fault and "restart the process".
 *
 * Threads. The CUDA current device is per thread: every entry point makes its device
 * current (a thread-local cache avoids redundant cudaSetDevice calls). Executor groups
 * may drive one GPU from several threads (several contexts on one GPU): the allocator
 * has its own mutex, the staging ring and the library handles are guarded by the
 * device's mutex, and the fault record by a second one (errors are reported while the
 * first is held). Streams themselves are thread-safe.
 */
#ifndef LMX_DEVICE_CUDA_STATE_H
#define LMX_DEVICE_CUDA_STATE_H

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "../../kernels/cuda/cu_base.h"
#include "caching_alloc.h"
#include "cuda_libs.h"

#ifdef __cplusplus /* also included by kernels/cuda (C++) */
extern "C" {
#endif

enum {
  LMX_CUDA_MAX_DEVICES = 16,
  LMX_CUDA_STAGING_SLOTS = 4,           /* pinned buffers in the ring */
  LMX_CUDA_STAGING_BYTES = 4 << 20,     /* bytes per buffer (a copy is cut in chunks) */
  LMX_CUDA_NAME_CAP = 64,               /* bytes kept of a node name */
  LMX_CUDA_RAISE_RING = 64,             /* checking launches remembered between syncs */
  LMX_CUDA_SCRATCH_BYTES = 64 << 10     /* lmx_cuda_scratch: kernels' cross-block partials */
};

/* Words a checking launch's bad value (position pos, value, the valid range's bound) as
 * the CPU does, e.g. lmx_take_bad_index_text (src/ops): the runtime knows no operator. */
typedef void (*lmx_cuda_raise_text)(char *buf, size_t cap, long long pos, long long value,
                                    int64_t range);

typedef struct lmx_cuda_raise_rec {
  unsigned long long tag; /* the launch's tag (0: unused) */
  const char *op;         /* static: the descriptor's name */
  char node[LMX_CUDA_NAME_CAP];
  lmx_cuda_raise_text text;
  int64_t range;
} lmx_cuda_raise_rec;

typedef struct lmx_cuda_stage {
  void *buf;        /* pinned host memory, LMX_CUDA_STAGING_BYTES */
  cudaEvent_t done; /* recorded after the copy that uses buf */
  int busy;         /* a copy using buf was queued and not yet waited for */
  void *out;        /* device->host: where buf goes once done (NULL for host->device) */
  size_t out_n;
} lmx_cuda_stage;

typedef struct lmx_cuda_dev {
  int id;
  char name[16]; /* "gpu(0)" */
  cudaStream_t stream;
  lmx_cache *cache;
  pthread_mutex_t mu;  /* staging ring, library handles */
  pthread_mutex_t fmu; /* fault record (taken inside mu, never the other way) */
  lmx_cuda_stage stage[LMX_CUDA_STAGING_SLOTS];
  int next_stage;
  cudaEvent_t order; /* cross-device ordering (peer copies) */
  void *lib[LMX_NUM_CUDA_LIBS];
  /* fault record */
  const char *last_op;
  char last_node[LMX_CUDA_NAME_CAP];
  int broken;
  char fault[512];
  /* the raise word of checking kernels (lmx_cuda_raise_slot): made on first use (under
   * rmu, then published), fetched into raise_host before every wait and reported after
   * it (under mu). rmu guards the records and the tag; it is taken inside mu, never the
   * other way, so a launch never waits for a copy that holds mu. */
  pthread_mutex_t rmu;
  lmx_cu_raise_word *raise_dev, *raise_host;
  unsigned long long raise_next;
  lmx_cuda_raise_rec raise_rec[LMX_CUDA_RAISE_RING];
  void *scratch; /* lmx_cuda_scratch (under mu when made) */
} lmx_cuda_dev;

/* Number of devices the runtime reports (0 without a driver or a GPU). Never fails. */
int lmx_cuda_count(void);

/* Why lmx_cuda_count() is 0: the runtime's message, or "" when devices were found. */
const char *lmx_cuda_count_reason(void);

/* The state of gpu(dev_id), created on first use, made current for the calling thread:
 * LMX_OK, LMX_ERR_DEVICE (no such device, creation failed, or the device is broken
 * after a fault: the message names the fault). */
int lmx_cuda_dev_get(int dev_id, lmx_cuda_dev **out);

/* The state of gpu(dev_id) if it was created (NULL otherwise); no checks, no creation. */
lmx_cuda_dev *lmx_cuda_dev_peek(int dev_id);

/* Makes d the calling thread's current device (cudaSetDevice when it changed). */
int lmx_cuda_make_current(lmx_cuda_dev *d);

/* Checks a runtime result: LMX_OK for cudaSuccess; otherwise LMX_ERR_NOMEM for
 * cudaErrorMemoryAllocation, else LMX_ERR_DEVICE "gpu(0): <what> failed: <error>",
 * marking the device broken when its context no longer answers. */
int lmx_cuda_check(lmx_cuda_dev *d, cudaError_t e, const char *what);

/* A failed wait (stream or event synchronisation): "gpu(0): asynchronous CUDA fault:
 * <error> (last operator: <op> '<node>')" [plus "; gpu(0) is unusable ..." when the
 * context is lost]. Returns LMX_ERR_DEVICE. */
int lmx_cuda_fault(lmx_cuda_dev *d, cudaError_t e, const char *what);

/* Waits until everything queued on d's stream has run (and finishes host copies in
 * the staging ring). Reports asynchronous faults as lmx_cuda_fault. */
int lmx_cuda_sync_dev(lmx_cuda_dev *d);

/* ---- entry points for the executor and the kernel glue --------------------------------- */

/* The stream of gpu(dev_id) (a cudaStream_t), creating the device state on first use;
 * NULL when the device does not exist or cannot be set up (the next allocation or copy
 * on it reports why). */
void *lmx_cuda_stream(int dev_id);

/* Records that op_name (static, e.g. the descriptor's name) on node node_name (copied,
 * at most 63 bytes kept; NULL for imperative calls) is the next work queued on gpu(dev_id),
 * and makes dev_id current on the calling thread. Cheap: no runtime call unless the
 * current device changes. Unknown ids are ignored. */
void lmx_cuda_note_op(int dev_id, const char *op_name, const char *node_name);

/* Per-device handle of an optional library (a cublasHandle_t, cudnnHandle_t, ...):
 * made once by create(dev_id, stream, &h) — called with the device current and its
 * lock held — then kept for the process's life and returned in *out. create returns a
 * status and sets a message on failure (it may use lmx_cuda_lib_sym). */
int lmx_cuda_lib_handle(int dev_id, int lib, int (*create)(int dev_id, void *stream, void **h),
                        void **out);

/* For a launch that checks its input on the device where the CPU raises (take mode raise,
 * softmax lengths): *out gets gpu(dev_id)'s raise word and a fresh tag; the launch's
 * operator (op static, node copied) and how to word a bad value (text, range) are
 * remembered under that tag. The word is made on the device's first checking launch
 * (one cudaMalloc and one pinned host word for the process's life), so steps allocate
 * nothing. The next synchronisation (lmx_cuda_sync_dev, a device-to-host copy) reports
 * the first bad value found since the last report as LMX_ERR_ARG:
 *   "take 'emb': input 'indices': index 7 at position 2 is out of range [0, 5) (found on
 *   gpu(0) by the kernel, reported by cudaStreamSynchronize)"
 * and clears the word. No runtime call but the first time; never waits. */
int lmx_cuda_raise_slot(int dev_id, const char *op, const char *node, lmx_cuda_raise_text text,
                        int64_t range, lmx_cu_raise *out);

/* LMX_CUDA_SCRATCH_BYTES of device memory of the current device for launchers whose
 * kernels pass partial results between launches (a reduction's two passes): made once
 * (cudaMalloc on first use), then shared by every such launch on the device. Launches on
 * the device's one stream run in order, so one launcher's passes finish before the next
 * launcher's begin; launchers must use it only on that stream. LMX_OK, or the runtime's
 * error (callers fall back to a path without it). */
int lmx_cuda_scratch(void **out);

/* Queues the copy of d's raise word to its host copy (nothing when d has none). Called
 * with d->mu held, before the wait that lmx_cuda_raise_report follows. */
int lmx_cuda_raise_fetch(lmx_cuda_dev *d);

/* After the wait: the error of a bad value found by a checking kernel (see
 * lmx_cuda_raise_slot; `what` names the waiting call), clearing the word, or LMX_OK.
 * Called with d->mu held. */
int lmx_cuda_raise_report(lmx_cuda_dev *d, const char *what);

/* ---- copies (cuda_copy.c) ---------------------------------------------------------------- */

/* dir: LMX_COPY_H2D (host src, reusable when the call returns), LMX_COPY_D2H (host dst,
 * filled when the call returns), LMX_COPY_D2D (same device). Queued on the stream. */
int lmx_cuda_copy(lmx_cuda_dev *d, void *dst, const void *src, size_t bytes, int dir);

/* Device to device across GPUs: ordered after the work queued on both streams so far,
 * and before later work on both (events), with cudaMemcpyPeerAsync on dst's stream. */
int lmx_cuda_copy_peer(lmx_cuda_dev *dst_dev, void *dst, lmx_cuda_dev *src_dev, const void *src,
                       size_t bytes);

/* Finishes the staging ring: waits for every queued staging copy and delivers pending
 * device->host chunks. Called with d->mu held. */
int lmx_cuda_stage_drain(lmx_cuda_dev *d);

#ifdef __cplusplus
}
#endif

#endif
