/* kv_nccl.c — the `nccl` kvstore backend (CUDA builds): one worker whose contexts are
 * several GPUs; a push all-reduces each key's values across those GPUs with NCCL
 * instead of copying every one through the host.
 *
 * A push looks at each key's values (one per context). A key goes through NCCL when
 * its values are all on GPUs, on at least two distinct GPUs, of the key's shape and
 * dtype, and on the same set of GPUs as the other NCCL keys of the push. Its values are
 * then summed by one ncclAllReduce per bucket over a communicator with one rank per
 * distinct GPU (ncclCommInitAll on the distinct ids, made at the first such push and
 * kept; a push over another set of GPUs replaces it), queued on each GPU's luamx stream.
 * Several contexts may share a GPU (e.g. {gpu(0), gpu(0), gpu(1)}; NCCL takes a device
 * once): each rank first sums its own values on its GPU with the device's sum-of-n
 * primitive, on that GPU's stream, into its scratch buffer (kv_nccl_plan.c's
 * lmx_nccl_local_groups says which values), and that local sum is what it all-reduces;
 * nothing goes through the host before the all-reduce. A rank with one value sends it
 * as it is (a plain copy when packing).
 *   - small keys (up to LUAMX_NCCL_BUCKET_BYTES, default 1 MiB) fuse into buckets of one
 *     dtype (kv_nccl_plan.c): each GPU packs its values (or their local sum) into its
 *     flat scratch buffer (device copies / sums at aligned offsets), one all-reduce in
 *     place, one copy of the first GPU's bucket to the host, unpacked into the keys'
 *     merge buffers;
 *   - a large key (or one alone in its bucket) is all-reduced from the values (or from
 *     the local sums in the scratch buffers) into the scratch buffers and the first GPU's
 *     sum is copied into its merge buffer.
 * Every other key takes the front's sum (lmx_kvf_merge, i.e. lmx_kv_sum_into): values on
 * CPU contexts (the store then behaves as 'local'/'device'), one value, values that all
 * sit on one GPU (no communicator of one rank: the device's sum-of-n does it), and the
 * values whose shape or dtype is wrong (that sum reports them). As in every backend, the
 * pull then copies the stored value (the sum, or what the updater made of it) back to
 * every context's array, several on one GPU included. Then, as in every
 * backend, the updater runs once per key in the order given (or the sum becomes the
 * stored value), and pull copies the stored value out.
 * Buffers: the scratch buffers (one per GPU, as large as the largest bucket), the host
 * bucket buffer and the plan's arrays are made at the first push and grown when a push
 * needs more; a steady training loop allocates nothing here. The all-reduce leaves the
 * pushed arrays untouched (the sum goes to the scratch buffers).
 * Errors: a missing NCCL is the loader's message (library, soname, package); NCCL
 * failures name the call, the GPUs and NCCL's text; all prefixed "kvstore 'nccl'".
 * Rank 0 of 1 worker, as 'local'.
 */
#ifdef LUAMX_WITH_CUDA
#include <stdlib.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "../device/cuda_nccl.h"
#include "../device/device.h"
#include "../tensor/dtype.h"
#include "kv_nccl_plan.h"
#include "kvstore.h"

enum { MAXDEV = 16 };

typedef struct {
  lmx_nccl_comm *comm; /* over dev[0..ndev) */
  int ndev, dev[MAXDEV];
  const lmx_device_ops *gpu;
  void *scratch[MAXDEV];
  size_t scratch_bytes;
  char *host; /* a fused bucket on its way to the merge buffers */
  size_t host_bytes;
  size_t cap; /* bucket cap in bytes */
  /* per-key work arrays, grown to the largest push */
  int work_cap;
  int *use;    /* 1: through NCCL */
  int *which;  /* index (in the push) of the k-th NCCL key */
  int *dtype;
  int64_t *count;
  int *rank;   /* rank of each value of a key (nv per key, rows of the NCCL keys) */
  lmx_nccl_slot *slot;
  lmx_nccl_bucket *bucket;
} nstate;

static int n_open(lmx_kvstore *kv) {
  nstate *s = lmx_calloc(1, sizeof *s);
  if (!s) return lmx_fail_nomem("the nccl kvstore's state", sizeof *s);
  const char *e = getenv("LUAMX_NCCL_BUCKET_BYTES");
  char *end;
  long long v = e ? strtoll(e, &end, 10) : 0;
  s->cap = e && end != e && v > 0 ? (size_t)v : LMX_NCCL_BUCKET_BYTES;
  kv->state = s;
  return LMX_OK;
}

static void drop_scratch(nstate *s) {
  for (int i = 0; i < s->ndev; i++)
    if (s->scratch[i]) s->gpu->release(s->dev[i], s->scratch[i]), s->scratch[i] = NULL;
  s->scratch_bytes = 0;
}

static void n_close(lmx_kvstore *kv) {
  nstate *s = kv->state;
  if (!s) return;
  drop_scratch(s);
  lmx_nccl_comm_free(s->comm);
  lmx_free(s->host);
  lmx_free(s->use), lmx_free(s->which), lmx_free(s->dtype), lmx_free(s->count);
  lmx_free(s->rank), lmx_free(s->slot), lmx_free(s->bucket);
  lmx_free(s);
  kv->state = NULL;
}

static int grow_work(nstate *s, int n, int nv) {
  (void)nv;
  if (n <= s->work_cap) return LMX_OK;
  int c = n > s->work_cap * 2 ? n : s->work_cap * 2;
  lmx_free(s->use), lmx_free(s->which), lmx_free(s->dtype), lmx_free(s->count);
  lmx_free(s->rank), lmx_free(s->slot), lmx_free(s->bucket);
  s->use = lmx_alloc((size_t)c * sizeof *s->use);
  s->which = lmx_alloc((size_t)c * sizeof *s->which);
  s->dtype = lmx_alloc((size_t)c * sizeof *s->dtype);
  s->count = lmx_alloc((size_t)c * sizeof *s->count);
  s->rank = lmx_alloc((size_t)c * MAXDEV * sizeof *s->rank);
  s->slot = lmx_alloc((size_t)c * sizeof *s->slot);
  s->bucket = lmx_alloc((size_t)c * sizeof *s->bucket);
  s->work_cap = c;
  if (!s->use || !s->which || !s->dtype || !s->count || !s->rank || !s->slot || !s->bucket) {
    s->work_cap = 0;
    return lmx_fail_nomem("the nccl kvstore's plan", (size_t)c * (MAXDEV * sizeof(int) + 64));
  }
  return LMX_OK;
}

/* Whether key k's values can go through NCCL; their GPUs (distinct, ascending) into
 * uniq[*nu]. Several values may share a GPU; at least two GPUs are needed. */
static int eligible(const lmx_kv_entry *e, lmx_ndarray *const *v, int nv, int *uniq, int *nu) {
  int devs[MAXDEV], dup = 0;
  if (nv < 2 || nv > MAXDEV || lmx_nd_size(e->merge) < 1) return 0;
  for (int i = 0; i < nv; i++) {
    if (v[i]->st->dev_type != LMX_GPU || v[i]->dtype != e->merge->dtype ||
        !lmx_shape_equal(&v[i]->shape, &e->merge->shape))
      return 0;
    devs[i] = v[i]->st->dev_id;
  }
  *nu = lmx_nccl_distinct(devs, nv, uniq, &dup);
  return *nu >= 2 && lmx_nccl_dtype(e->merge->dtype) >= 0;
}

/* The communicator over uniq[0..nu), reusing the cached one when it is that set. */
static int ensure_comm(lmx_kvstore *kv, nstate *s, const int *uniq, int nu,
                       const lmx_device_ops *gpu) {
  if (s->comm && s->ndev == nu && memcmp(s->dev, uniq, (size_t)nu * sizeof *uniq) == 0)
    return LMX_OK;
  drop_scratch(s);
  lmx_nccl_comm_free(s->comm);
  s->comm = NULL, s->ndev = 0;
  int rc = lmx_nccl_comm_new(nu, uniq, &s->comm);
  if (rc != LMX_OK) return lmx_fail_prefix(rc, "kvstore '%s': push: ", kv->type);
  s->ndev = nu, s->gpu = gpu;
  memcpy(s->dev, uniq, (size_t)nu * sizeof *uniq);
  return LMX_OK;
}

static int ensure_buffers(lmx_kvstore *kv, nstate *s, size_t dev_bytes, size_t host_bytes) {
  if (dev_bytes > s->scratch_bytes) {
    drop_scratch(s);
    for (int i = 0; i < s->ndev; i++) {
      int rc = s->gpu->alloc(s->dev[i], dev_bytes, &s->scratch[i]);
      /* zeroed once: the alignment gaps of a bucket are summed but never written */
      if (rc == LMX_OK) rc = s->gpu->zero(s->dev[i], s->scratch[i], dev_bytes);
      if (rc != LMX_OK) {
        drop_scratch(s);
        return lmx_fail_prefix(rc, "kvstore '%s': push: the all-reduce buffer on gpu(%d): ",
                               kv->type, s->dev[i]);
      }
    }
    s->scratch_bytes = dev_bytes;
  }
  if (host_bytes > s->host_bytes) {
    lmx_free(s->host);
    s->host_bytes = 0;
    s->host = lmx_alloc(host_bytes);
    if (!s->host) return lmx_fail_nomem("the nccl kvstore's host bucket", host_bytes);
    s->host_bytes = host_bytes;
  }
  return LMX_OK;
}

/* Bucket b: the all-reduce and the sums into the merge buffers of its keys. */
static int reduce_bucket(lmx_kvstore *kv, nstate *s, int b, int m, lmx_kv_entry *const *e,
                         lmx_ndarray *const *values, int nv) {
  const lmx_nccl_bucket *bk = &s->bucket[b];
  size_t es = (size_t)lmx_dtype_size(bk->dtype), bytes = lmx_nccl_bucket_bytes(bk);
  const void *send[MAXDEV];
  void *recv[MAXDEV];
  int one = -1; /* the (first) key of the bucket */
  for (int j = 0; j < m; j++) {
    if (s->slot[j].bucket != b) continue;
    int k = s->which[j], order[MAXDEV], start[MAXDEV + 1];
    if (one < 0) one = k;
    if (lmx_nccl_local_groups(s->rank + (size_t)j * MAXDEV, nv, s->ndev, order, start) < 1)
      return lmx_fail(LMX_ERR_INTERNAL, "kvstore '%s': push: key '%s': bad rank plan",
                      kv->type, e[k]->key);
    lmx_ndarray *const *kv_vals = values + (size_t)k * (size_t)nv;
    for (int r = 0; r < s->ndev; r++) {
      int cnt = start[r + 1] - start[r];
      lmx_ndarray *v = kv_vals[order[start[r]]];
      if (!bk->fused && cnt == 1) {
        send[r] = lmx_nd_ptr(v);
        continue;
      }
      char *dst = (char *)s->scratch[r] + (size_t)s->slot[j].offset * es;
      int rc;
      if (cnt == 1) {
        rc = s->gpu->copy(s->dev[r], dst, lmx_nd_ptr(v), lmx_nd_bytes(v), LMX_COPY_D2D);
      } else { /* this GPU's values summed on it first */
        const void *xs[MAXDEV];
        for (int q = 0; q < cnt; q++) xs[q] = lmx_nd_ptr(kv_vals[order[start[r] + q]]);
        rc = lmx_device_sum_n(s->gpu, s->dev[r], bk->dtype, lmx_nd_size(v), dst, xs, cnt, 0);
      }
      if (rc != LMX_OK)
        return lmx_fail_prefix(rc, "kvstore '%s': push: key '%s': %s on gpu(%d): ", kv->type,
                               e[k]->key, cnt == 1 ? "packing" : "the local sum", s->dev[r]);
      if (!bk->fused) send[r] = dst;
    }
  }
  for (int r = 0; r < s->ndev; r++) {
    recv[r] = s->scratch[r];
    if (bk->fused) send[r] = s->scratch[r];
  }
  int rc = lmx_nccl_allreduce(s->comm, send, recv, (size_t)bk->count,
                              lmx_nccl_dtype(bk->dtype));
  if (rc != LMX_OK) {
    if (bk->fused)
      return lmx_fail_prefix(rc, "kvstore '%s': push: a bucket of %d keys ('%s', ...): ",
                             kv->type, bk->nkeys, e[one]->key);
    return lmx_fail_prefix(rc, "kvstore '%s': push: key '%s': ", kv->type, e[one]->key);
  }
  char *dst = bk->fused ? s->host : lmx_nd_ptr(e[one]->merge);
  rc = s->gpu->copy(s->dev[0], dst, s->scratch[0], bytes, LMX_COPY_D2H);
  if (rc != LMX_OK)
    return lmx_fail_prefix(rc, "kvstore '%s': push: copying the sum to the host: ", kv->type);
  if (!bk->fused) return LMX_OK;
  for (int j = 0; j < m; j++)
    if (s->slot[j].bucket == b) {
      lmx_ndarray *mg = e[s->which[j]]->merge;
      memcpy(lmx_nd_ptr(mg), s->host + (size_t)s->slot[j].offset * es, lmx_nd_bytes(mg));
    }
  return LMX_OK;
}

static int n_push(lmx_kvstore *kv, int n, lmx_kv_entry *const *e, lmx_ndarray *const *values,
                  int nv) {
  nstate *s = kv->state;
  LMX_TRY(grow_work(s, n, nv));
  /* which keys go through NCCL: those over the GPU set of the first such key */
  int set[MAXDEV], nset = 0, m = 0;
  const lmx_device_ops *gpu = NULL;
  for (int k = 0; k < n; k++) {
    lmx_ndarray *const *v = values + (size_t)k * (size_t)nv;
    int uniq[MAXDEV], nu = 0;
    s->use[k] = eligible(e[k], v, nv, uniq, &nu);
    if (s->use[k] && !nset) {
      memcpy(set, uniq, (size_t)nu * sizeof *uniq);
      nset = nu, gpu = v[0]->st->dev;
    }
    if (s->use[k] && (nu != nset || memcmp(set, uniq, (size_t)nu * sizeof *uniq) != 0))
      s->use[k] = 0;
    if (!s->use[k]) continue;
    int devs[MAXDEV];
    for (int i = 0; i < nv; i++) devs[i] = v[i]->st->dev_id;
    lmx_nccl_ranks(devs, nv, set, nset, s->rank + (size_t)m * MAXDEV);
    s->which[m] = k, s->dtype[m] = e[k]->merge->dtype, s->count[m] = lmx_nd_size(e[k]->merge);
    m++;
  }
  if (m) {
    LMX_TRY(ensure_comm(kv, s, set, nset, gpu));
    int nb = lmx_nccl_plan(m, s->dtype, s->count, s->cap, LMX_NCCL_ALIGN, s->slot, s->bucket);
    if (nb < 0) return lmx_fail(LMX_ERR_INTERNAL, "kvstore '%s': push: bad bucket plan", kv->type);
    size_t dev_bytes = 0, host_bytes = 0;
    for (int b = 0; b < nb; b++) {
      size_t by = lmx_nccl_bucket_bytes(&s->bucket[b]);
      if (by > dev_bytes) dev_bytes = by;
      if (s->bucket[b].fused && by > host_bytes) host_bytes = by;
    }
    LMX_TRY(ensure_buffers(kv, s, dev_bytes, host_bytes));
    for (int b = 0; b < nb; b++) LMX_TRY(reduce_bucket(kv, s, b, m, e, values, nv));
  }
  for (int k = 0; k < n; k++)
    if (!s->use[k]) LMX_TRY(lmx_kvf_merge(kv, e[k], values + (size_t)k * (size_t)nv, nv));
  for (int k = 0; k < n; k++) LMX_TRY(lmx_kvf_apply(kv, e[k]));
  return LMX_OK;
}

static int n_init(lmx_kvstore *kv, int n, lmx_kv_entry *const *e) {
  (void)kv, (void)n, (void)e; /* the front already stored the copy */
  return LMX_OK;
}
static int n_barrier(lmx_kvstore *kv) { return (void)kv, LMX_OK; }
static int n_rank(const lmx_kvstore *kv) { return (void)kv, 0; }
static int n_workers(const lmx_kvstore *kv) { return (void)kv, 1; }
static int n_check(lmx_kvstore *kv, const char *what, int64_t value) {
  (void)kv, (void)what, (void)value;
  return LMX_OK;
}
static int n_states(lmx_kvstore *kv, lmx_kv_states_fn fn, void *user) {
  if (fn(user) != 0)
    return lmx_fail(LMX_ERR_IO, "kvstore '%s': the optimizer-state callback failed", kv->type);
  return LMX_OK;
}

const lmx_kv_backend lmx_kv_nccl = {
    .name = "nccl",
    .open = n_open,
    .close = n_close,
    .init = n_init,
    .push = n_push,
    .pull = lmx_kvf_pull,
    .barrier = n_barrier,
    .rank = n_rank,
    .num_workers = n_workers,
    .check = n_check,
    .save_states = n_states,
    .load_states = n_states,
};
#else
typedef int lmx_kv_nccl_unused; /* built without CUDA: 'nccl' is refused in kvstore.c */
#endif
