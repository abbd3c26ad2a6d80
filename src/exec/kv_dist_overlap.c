/* kv_dist_overlap.c — the dist kvstore's overlapped push: all-reduces started during
 * backward as gradients become final (the scheme below; kv_dist.c has the rest of the
 * backend, kv_dist_impl.h what they share). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "../tensor/dtype.h"
#include "kv_dist_impl.h"

/* One push whose all-reduces start during backward (lmx_kv_overlap_*, driven by the
 * data-parallel group through the executor's gradient hook).
 * begin(keys in push order, their gradient arrays, the order in which backward makes
 * them final) lays the keys out in buckets along the finality order (reverse layer
 * order): consecutive small keys of one dtype share a fusion bucket of up to
 * LUAMX_DIST_FUSION_BYTES, a large key is a bucket of its own, reduced from the
 * gradient into the merge buffer in chunks (on one node: through the shared segment, at
 * once, as the plain push does). It starts the control all-reduce (kind
 * K_OPUSH: a rank that pushes without overlap disagrees with a message) and returns.
 * ready(positions) counts keys down; the first call finishes the control (deadline and
 * disagreement as every verb), then every bucket whose keys are all final is started,
 * in bucket order (the same on every rank: the plan orders them), with non-blocking
 * all-reduces issued on this (the MPI) thread, and those in flight are tested so that
 * MPI progresses between backward steps. push of the same keys and arrays then starts
 * what is left, waits for each key's bucket (deadline LUAMX_DIST_TIMEOUT, a silent
 * rank is named as lost) and updates the keys in push order, as the plain push does:
 * the sums are the same additions (bit-identical for 2 workers; with more, MPI's
 * algorithm for a size decides the order of the additions, so within float rounding).
 * Any other verb first completes a session (drain); a push of other keys or arrays, or
 * a second begin, drains it and drops it. Nothing is allocated once the arrays have
 * grown to the largest key list. */
typedef struct ovs {
  int state; /* 0 none, 1 control in flight, 2 control done */
  int shm;   /* large keys go through the shared segment (in the signature) */
  ctl c;
  int n, cap, nb, next, nreq, rcap;
  int *idx;          /* [cap] kv entry index per key, push order */
  lmx_ndarray **v;   /* [cap] gradient arrays */
  lmx_kv_entry **e;  /* [cap] refreshed from idx before use */
  int *order;        /* [cap] push positions in finality order */
  int *bucket;       /* [cap] per push position: its bucket */
  size_t *off;       /* [cap] per push position: offset in the fusion buffer (small) */
  int *left;         /* [cap] per bucket: keys not final yet */
  int *bfirst;       /* [cap + 1] per bucket: first index into order */
  int *req0, *nreqs; /* [cap] per bucket: first request and count (req0 -1: not started) */
  int *req;          /* [rcap] request handles; -1 once finished */
} ovs;

void lmx_kvd_ov_free(ovs *o) {
  if (!o) return;
  void *a[] = {o->idx,  o->v,      o->e,    o->order, o->bucket, o->off,
               o->left, o->bfirst, o->req0, o->nreqs, o->req};
  for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) lmx_free(a[i]);
  lmx_free(o);
}

static int ov_grow(dist *d, int n, int nreq) {
  if (!d->ov && !(d->ov = lmx_calloc(1, sizeof *d->ov)))
    return lmx_fail_nomem("the overlapped push", sizeof *d->ov);
  ovs *o = d->ov;
  int ok = 1;
#define LMX_OV_GROW_(f, cnt)                                          \
  do {                                                                \
    void *q_ = lmx_realloc(o->f, ((size_t)(cnt) + 1) * sizeof *o->f); \
    if (q_)                                                           \
      o->f = q_;                                                      \
    else                                                              \
      ok = 0;                                                         \
  } while (0)
  if (n > o->cap) {
    LMX_OV_GROW_(idx, n);
    LMX_OV_GROW_(v, n);
    LMX_OV_GROW_(e, n);
    LMX_OV_GROW_(order, n);
    LMX_OV_GROW_(bucket, n);
    LMX_OV_GROW_(off, n);
    LMX_OV_GROW_(left, n);
    LMX_OV_GROW_(bfirst, n + 1);
    LMX_OV_GROW_(req0, n);
    LMX_OV_GROW_(nreqs, n);
    if (ok) o->cap = n;
  }
  if (ok && nreq > o->rcap) {
    LMX_OV_GROW_(req, nreq);
    if (ok) o->rcap = nreq;
  }
#undef LMX_OV_GROW_
  return ok ? LMX_OK : lmx_fail_nomem("the overlapped push", (size_t)n * 64);
}

static void ov_entries(lmx_kvstore *kv) {
  ovs *o = ((dist *)kv->state)->ov;
  for (int k = 0; k < o->n; k++) o->e[k] = &kv->e[o->idx[k]];
}

/* Starts bucket b's all-reduces. */
static int ov_start_bucket(lmx_kvstore *kv, int b) {
  dist *d = kv->state;
  ovs *o = d->ov;
  int k0 = o->order[o->bfirst[b]];
  lmx_ndarray *m = o->e[k0]->merge;
  int dt = m->dtype, esz = lmx_dtype_size(dt), req;
  char w[96];
  snprintf(w, sizeof w, "push of key %s", o->e[k0]->key);
  o->req0[b] = o->nreq, o->nreqs[b] = 0;
  /* large, on one node: summed now through the shared segment, from the gradient into
   * the merge buffer (every rank starts the buckets in the same order, and no rank waits
   * on a request before it has started every bucket: ov_advance runs first) */
  if (lmx_nd_bytes(m) >= d->small_bytes && lmx_kvd_shm_key(d, o->e[k0])) {
    LMX_TRY(lmx_kvd_shm_ready(kv));
    if (lmx_kvd_shm_key(d, o->e[k0])) /* else the node could not map it: messages */
      return lmx_kvd_shm_allreduce(&d->shm, lmx_nd_ptr(o->v[k0]), lmx_nd_ptr(m), NULL,
                                   lmx_nd_size(m), dt, o->e[k0]->key);
  }
  if (lmx_nd_bytes(m) >= d->small_bytes) { /* large: from the gradient, in chunks */
    const char *src = lmx_nd_ptr(o->v[k0]);
    int64_t per = (int64_t)(d->chunk_bytes / (size_t)esz), cnt = lmx_nd_size(m);
    for (int64_t c = 0; c < cnt; c += per) {
      size_t at = (size_t)c * (size_t)esz;
      LMX_TRY(lmx_kvd_started(kv,
                              lmx_kvd_mpi.iallreduce(src + at, (char *)lmx_nd_ptr(m) + at,
                                                     (int)(cnt - c < per ? cnt - c : per), dt,
                                                     LMX_MPI_SUM, &req, d->err, (int)sizeof d->err),
                              w));
      o->req[o->nreq++] = req, o->nreqs[b]++;
    }
    return LMX_OK;
  }
  size_t first = o->off[k0], end = first;
  for (int j = o->bfirst[b]; j < o->bfirst[b + 1]; j++) {
    int k = o->order[j];
    size_t kb = lmx_nd_bytes(o->e[k]->merge), pad = ((kb + 63) & ~(size_t)63) - kb;
    memcpy(d->fuse + o->off[k], lmx_nd_ptr(o->v[k]), kb);
    memset(d->fuse + o->off[k] + kb, 0, pad);
    end = o->off[k] + kb + pad;
  }
  LMX_TRY(lmx_kvd_started(
      kv,
      lmx_kvd_mpi.iallreduce(NULL, d->fuse + first, (int)((end - first) / (size_t)esz), dt,
                             LMX_MPI_SUM, &req, d->err, (int)sizeof d->err),
      w));
  o->req[o->nreq++] = req, o->nreqs[b] = 1;
  return LMX_OK;
}

/* Finishes the control (once) and starts the ready buckets in order (all with force). */
static int ov_advance(lmx_kvstore *kv, int force) {
  ovs *o = ((dist *)kv->state)->ov;
  if (o->state == 1) {
    char how[96];
    lmx_kvd_shm_how(kv->state, how, sizeof how);
    o->state = 2;
    LMX_TRY(lmx_kvd_control_end(kv, &o->c, o->n, o->e, o->shm ? how : NULL, 0));
  }
  while (o->next < o->nb && (force || o->left[o->next] == 0))
    LMX_TRY(ov_start_bucket(kv, o->next++));
  return LMX_OK;
}

/* Tests the requests in flight, oldest first, up to the first unfinished one. */
static int ov_progress(lmx_kvstore *kv) {
  dist *d = kv->state;
  ovs *o = d->ov;
  for (int r = 0; r < o->nreq; r++) {
    if (o->req[r] < 0) continue;
    int t = lmx_kvd_mpi.test(o->req[r], d->err, (int)sizeof d->err);
    if (t < 0) return lmx_kvd_started(kv, -1, "push");
    if (t == 0) break;
    o->req[r] = -1;
  }
  return LMX_OK;
}

/* Waits for bucket b's requests. */
static int ov_wait_bucket(lmx_kvstore *kv, int b, double deadline) {
  ovs *o = ((dist *)kv->state)->ov;
  char w[96];
  snprintf(w, sizeof w, "push of key %s", o->e[o->order[o->bfirst[b]]]->key);
  for (int r = o->req0[b]; r < o->req0[b] + o->nreqs[b]; r++)
    if (o->req[r] >= 0) {
      LMX_TRY(lmx_kvd_wait_op(kv, o->req[r], deadline, w));
      o->req[r] = -1;
    }
  return LMX_OK;
}

/* Completes the session (every bucket reduced); it stays for push to consume. */
int lmx_kvd_ov_drain(lmx_kvstore *kv) {
  dist *d = kv->state;
  ovs *o = d->ov;
  if (!o || !o->state) return LMX_OK;
  ov_entries(kv);
  LMX_TRY(ov_advance(kv, 1));
  double deadline = lmx_kvd_now() + d->timeout;
  for (int b = 0; b < o->nb; b++) LMX_TRY(ov_wait_bucket(kv, b, deadline));
  return LMX_OK;
}

int lmx_kvd_overlap_on(const lmx_kvstore *kv) {
  const dist *d = kv->state;
  return d->overlap && d->size > 1;
}

int lmx_kvd_ov_begin(lmx_kvstore *kv, int n, const int *idx, lmx_ndarray *const *values,
                     const int *order) {
  dist *d = kv->state;
  LMX_TRY(lmx_kvd_usable(kv));
  if (d->ov && d->ov->state) { /* a session nobody pushed: complete it and drop it */
    LMX_TRY(lmx_kvd_ov_drain(kv));
    d->ov->state = 0;
  }
  if (!lmx_kvd_overlap_on(kv) || n < 1) return LMX_OK;
  for (int k = 0; k < n; k++) /* only single CPU gradients of the key's shape and dtype */
    if (!lmx_kvd_direct(&kv->e[idx[k]], values + k, 1)) return LMX_OK;
  int nreq = 0;
  for (int k = 0; k < n; k++) {
    size_t b = lmx_nd_bytes(kv->e[idx[k]].merge);
    nreq += b >= d->small_bytes ? (int)((b + d->chunk_bytes - 1) / d->chunk_bytes) : 1;
  }
  LMX_TRY(ov_grow(d, n, nreq));
  ovs *o = d->ov;
  o->n = n;
  memcpy(o->idx, idx, (size_t)n * sizeof *idx);
  memcpy(o->v, values, (size_t)n * sizeof *values);
  memcpy(o->order, order, (size_t)n * sizeof *order);
  ov_entries(kv);
  size_t need;
  lmx_kvd_fused_bytes(d, n, o->e, &need);
  if (need > d->fuse_cap) {
    char *fb = lmx_realloc(d->fuse, need);
    if (!fb) return lmx_fail_nomem("the kvstore's fusion buffer", need);
    d->fuse = fb, d->fuse_cap = need;
  }
  /* buckets along the finality order; the signature covers keys and order */
  uint64_t sig = 1469598103934665603ull;
  for (int k = 0; k < n; k++) sig = lmx_kvd_key_sig(sig, o->e[k]);
  sig = lmx_kvd_fnv(sig, order, (size_t)n * sizeof *order);
  o->shm = 0;
  for (int k = 0; k < n && !o->shm; k++) o->shm = lmx_kvd_shm_key(d, o->e[k]);
  if (o->shm) sig = lmx_kvd_shm_sig(d, sig);
  size_t at = 0, in_bucket = 0;
  int prev_dt = -1, prev_small = 0;
  o->nb = 0;
  for (int j = 0; j < n; j++) {
    lmx_ndarray *m = o->e[order[j]]->merge;
    size_t kb = lmx_nd_bytes(m), padded = (kb + 63) & ~(size_t)63;
    int small = kb < d->small_bytes;
    if (!(small && prev_small && m->dtype == prev_dt && in_bucket + kb <= d->fuse_bytes)) {
      o->bfirst[o->nb] = j, o->left[o->nb] = 0, o->req0[o->nb] = -1, o->nreqs[o->nb] = 0;
      o->nb++, in_bucket = 0;
    }
    o->bucket[order[j]] = o->nb - 1, o->left[o->nb - 1]++;
    if (small) o->off[order[j]] = at, at += padded, in_bucket += padded;
    prev_dt = m->dtype, prev_small = small;
  }
  o->bfirst[o->nb] = n;
  o->next = 0, o->nreq = 0;
  LMX_TRY(lmx_kvd_control_start(kv, &o->c, K_OPUSH, sig));
  o->state = 1;
  return LMX_OK;
}

int lmx_kvd_ov_ready(lmx_kvstore *kv, int n, const int *pos) {
  dist *d = kv->state;
  ovs *o = d->ov;
  if (!o || !o->state) return LMX_OK;
  LMX_TRY(lmx_kvd_usable(kv));
  for (int i = 0; i < n; i++) o->left[o->bucket[pos[i]]]--;
  ov_entries(kv);
  if (o->next < o->nb && o->left[o->next] == 0) LMX_TRY(ov_advance(kv, 0));
  return ov_progress(kv);
}

/* The push of a begun session: 1 in *used when it was this push's (same keys, arrays). */
int lmx_kvd_ov_push(lmx_kvstore *kv, int n, lmx_kv_entry *const *e, lmx_ndarray *const *values,
                    int nv, int *used) {
  dist *d = kv->state;
  ovs *o = d->ov;
  *used = 0;
  if (!o || !o->state) return LMX_OK;
  int same = nv == 1 && n == o->n;
  for (int k = 0; same && k < n; k++) same = e[k] == &kv->e[o->idx[k]] && values[k] == o->v[k];
  if (!same) { /* not this session's push: complete it and drop it */
    LMX_TRY(lmx_kvd_ov_drain(kv));
    o->state = 0;
    return LMX_OK;
  }
  *used = 1;
  ov_entries(kv);
  int rc = ov_advance(kv, 1);
  double deadline = lmx_kvd_now() + d->timeout;
  for (int k = 0; k < n && rc == LMX_OK; k++) { /* in push order, as the plain push */
    int b = o->bucket[k];
    rc = ov_wait_bucket(kv, b, deadline);
    size_t kb = lmx_nd_bytes(e[k]->merge);
    if (rc == LMX_OK && kb < d->small_bytes)
      memcpy(lmx_nd_ptr(e[k]->merge), d->fuse + o->off[k], kb);
    if (rc == LMX_OK) rc = lmx_kvf_apply(kv, e[k]);
  }
  /* An updater failed (the store is not broken): every bucket was started above, so let
   * the later ones finish before the session is dropped; their buffers are reused next. */
  for (int b = 0; rc != LMX_OK && !d->broken && b < o->nb; b++)
    if (ov_wait_bucket(kv, b, deadline) != LMX_OK) break;
  o->state = 0;
  return rc;
}
