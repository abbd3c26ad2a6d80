/* cuda_copy.c — copies of a GPU: host<->device through a ring of pinned staging
 * buffers, device<->device on the stream, across devices with peer copies.
 *
 * Why staging: cudaMemcpyAsync from pageable host memory is not asynchronous (the
 * driver copies it to its own pinned buffer first, synchronously), and the caller's
 * host buffer may be reused as soon as the call returns. So a host->device copy is cut
 * into chunks of LMX_CUDA_STAGING_BYTES; each chunk is memcpy'd into the next pinned
 * buffer of the ring and queued on the stream with an event after it. A buffer is
 * reused only when its event has fired, so a copy of k chunks waits only when it wraps
 * the ring (k > LMX_CUDA_STAGING_SLOTS), and a small copy does not wait at all.
 * Device->host chunks are queued the same way into pinned buffers; each is memcpy'd to
 * its destination when its event has fired, and the copy returns when all are there:
 * the one copy that waits, because the host is about to read the data.
 *
 * The ring (pinned memory allocated on first use, LMX_CUDA_STAGING_SLOTS x
 * LMX_CUDA_STAGING_BYTES) is guarded by the device's mutex for the whole copy, so one
 * copy's chunks stay in order when several threads use one device.
 */
#include <string.h>

#include "../core/status.h"
#include "cuda_state.h"
#include "device.h"

static void stage_teardown(lmx_cuda_dev *d) {
  for (int i = 0; i < LMX_CUDA_STAGING_SLOTS; i++) {
    lmx_cuda_stage *s = &d->stage[i];
    if (s->buf) cudaFreeHost(s->buf);
    if (s->done) cudaEventDestroy(s->done);
    memset(s, 0, sizeof *s);
  }
  cudaGetLastError();
}

static int stage_setup(lmx_cuda_dev *d) {
  if (d->stage[0].buf) return LMX_OK;
  for (int i = 0; i < LMX_CUDA_STAGING_SLOTS; i++) {
    lmx_cuda_stage *s = &d->stage[i];
    int rc = lmx_cuda_check(d, cudaMallocHost(&s->buf, LMX_CUDA_STAGING_BYTES),
                            "cudaMallocHost (pinned staging buffer)");
    if (rc == LMX_OK)
      rc = lmx_cuda_check(d, cudaEventCreateWithFlags(&s->done, cudaEventDisableTiming),
                          "cudaEventCreateWithFlags");
    if (rc != LMX_OK) {
      stage_teardown(d);
      return lmx_fail_prefix(rc, "%s: staging buffers for host copies: ", d->name);
    }
  }
  d->next_stage = 0;
  return LMX_OK;
}

/* Waits for slot s's copy; delivers a pending device->host chunk. */
static int stage_finish(lmx_cuda_dev *d, lmx_cuda_stage *s) {
  if (!s->busy) return LMX_OK;
  cudaError_t e = cudaEventSynchronize(s->done);
  s->busy = 0;
  void *out = s->out;
  s->out = NULL;
  if (e != cudaSuccess) return lmx_cuda_fault(d, e, "a copy through the staging buffers");
  if (out) memcpy(out, s->buf, s->out_n);
  return LMX_OK;
}

int lmx_cuda_stage_drain(lmx_cuda_dev *d) {
  int rc = LMX_OK;
  for (int k = 0; k < LMX_CUDA_STAGING_SLOTS; k++) { /* oldest first */
    lmx_cuda_stage *s = &d->stage[(d->next_stage + k) % LMX_CUDA_STAGING_SLOTS];
    if (rc == LMX_OK) rc = stage_finish(d, s);
    else s->busy = 0, s->out = NULL; /* one fault, reported once */
  }
  return rc;
}

static int stage_next(lmx_cuda_dev *d, lmx_cuda_stage **out) {
  LMX_TRY(stage_setup(d));
  lmx_cuda_stage *s = &d->stage[d->next_stage];
  d->next_stage = (d->next_stage + 1) % LMX_CUDA_STAGING_SLOTS;
  LMX_TRY(stage_finish(d, s));
  *out = s;
  return LMX_OK;
}

/* Queues one chunk through a staging buffer. to_host: device src -> buffer -> host dst
 * (delivered when finished); otherwise host src -> buffer -> device dst. */
static int stage_chunk(lmx_cuda_dev *d, char *dst, const char *src, size_t n, int to_host) {
  lmx_cuda_stage *s;
  LMX_TRY(stage_next(d, &s));
  cudaError_t e;
  if (to_host) {
    e = cudaMemcpyAsync(s->buf, src, n, cudaMemcpyDeviceToHost, d->stream);
  } else {
    memcpy(s->buf, src, n);
    e = cudaMemcpyAsync(dst, s->buf, n, cudaMemcpyHostToDevice, d->stream);
  }
  LMX_TRY(lmx_cuda_check(d, e, to_host ? "cudaMemcpyAsync (device to host)"
                                       : "cudaMemcpyAsync (host to device)"));
  LMX_TRY(lmx_cuda_check(d, cudaEventRecord(s->done, d->stream), "cudaEventRecord"));
  s->busy = 1;
  s->out = to_host ? dst : NULL;
  s->out_n = n;
  return LMX_OK;
}

static int staged(lmx_cuda_dev *d, char *dst, const char *src, size_t bytes, int to_host) {
  pthread_mutex_lock(&d->mu);
  /* a copy to the host is a synchronisation: it reports what checking kernels found */
  int rc = to_host ? lmx_cuda_raise_fetch(d) : LMX_OK;
  for (size_t off = 0; rc == LMX_OK && off < bytes; off += LMX_CUDA_STAGING_BYTES) {
    size_t n = bytes - off < LMX_CUDA_STAGING_BYTES ? bytes - off : LMX_CUDA_STAGING_BYTES;
    rc = stage_chunk(d, dst + off, src + off, n, to_host);
  }
  /* Device->host: the caller reads dst next, so every chunk must have arrived. After a
   * failure, the chunks already queued are waited for, so none writes into dst later. */
  if (to_host || rc != LMX_OK) {
    int rd = lmx_cuda_stage_drain(d);
    if (rc == LMX_OK) rc = rd;
  }
  if (to_host && rc == LMX_OK) rc = lmx_cuda_raise_report(d, "a copy to host memory");
  pthread_mutex_unlock(&d->mu);
  return rc;
}

int lmx_cuda_copy(lmx_cuda_dev *d, void *dst, const void *src, size_t bytes, int dir) {
  if (bytes == 0 || dst == src) return LMX_OK;
  if (dir == LMX_COPY_H2D) return staged(d, dst, src, bytes, 0);
  if (dir == LMX_COPY_D2H) return staged(d, dst, src, bytes, 1);
  return lmx_cuda_check(d, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, d->stream),
                        "cudaMemcpyAsync (device to device)");
}

int lmx_cuda_copy_peer(lmx_cuda_dev *dd, void *dst, lmx_cuda_dev *sd, const void *src,
                       size_t bytes) {
  if (bytes == 0) return LMX_OK;
  if (dd == sd) return lmx_cuda_copy(dd, dst, src, bytes, LMX_COPY_D2D);
  /* The copy runs on dst's stream after the work queued on src's stream so far (the
   * data is written there), and src's later work waits for the copy (the source block
   * may be freed and handed out again on src's device). */
  LMX_TRY(lmx_cuda_check(sd, cudaEventRecord(sd->order, sd->stream), "cudaEventRecord"));
  LMX_TRY(lmx_cuda_check(dd, cudaStreamWaitEvent(dd->stream, sd->order, 0),
                         "cudaStreamWaitEvent"));
  LMX_TRY(lmx_cuda_check(dd, cudaMemcpyPeerAsync(dst, dd->id, src, sd->id, bytes, dd->stream),
                         "cudaMemcpyPeerAsync"));
  LMX_TRY(lmx_cuda_check(dd, cudaEventRecord(dd->order, dd->stream), "cudaEventRecord"));
  return lmx_cuda_check(sd, cudaStreamWaitEvent(sd->stream, dd->order, 0),
                        "cudaStreamWaitEvent");
}
