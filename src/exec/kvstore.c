/* kvstore.c — the kvstore front (MXNet's KVStore, §5.9 of MXNET-SEMANTICS.md): the type
 * table, keys, stored values and merge buffers, the updater, and THE array sum.
 *
 * A store keeps, per key, the stored value (a CPU copy made at init) and a merge buffer
 * of the same shape. push(keys, values) sums each key's values (one per device) into its
 * merge buffer, the backend sums the merge buffers over workers, and then, with an
 * updater set, calls updater(key, merged gradient, stored weight) once per key,
 * otherwise the sum becomes the stored value. pull copies the stored value into every
 * output ("sum gradients, run the update once, broadcast the weights").
 * Backends are chosen by type name from `backends[]` below (see kvstore.h for the
 * verbs and how to add one). "nccl" (kv_nccl.c: the GPUs of one process summed by NCCL
 * all-reduces) exists in CUDA builds and is refused with a message in the others;
 * "dist_async" is refused with a message.
 * Invariants: buffers are made at init, so push and pull allocate nothing (the dist
 * backend's fusion buffers and the nccl backend's all-reduce buffers are made at their
 * first push). Keys are strings (Lua
 * turns integer keys into their decimal text); a store holds one reference to each of
 * its arrays. The updater is a host function pointer called on the calling thread,
 * during push; a non-zero return fails the push.
 * Threads: a store is used by one thread at a time.
 */
#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "../device/device.h"
#include "../tensor/dtype.h"
#include "kvstore.h"

static const struct {
  const char *type;
  const lmx_kv_backend *be;
} backends[] = {
    {"local", &lmx_kv_local},
    {"device", &lmx_kv_local}, /* values on GPUs are summed by lmx_kv_sum_into */
    {"dist_sync", &lmx_kv_dist},
    {"dist_device_sync", &lmx_kv_dist},
#ifdef LUAMX_WITH_CUDA
    {"nccl", &lmx_kv_nccl},
#endif
};

/* ---------------------------------------------------------------- the sum ---- */

#define SUM_LOOP(T, ACC)                                                                   \
  do {                                                                                     \
    T *d = lmx_nd_ptr(dst);                                                                \
    for (int64_t j = 0; j < m; j++) {                                                      \
      ACC s = 0;                                                                           \
      for (int i = 0; i < n; i++) s += (ACC)((const T *)lmx_nd_ptr(src[i]))[j];            \
      d[j] = (T)s;                                                                         \
    }                                                                                      \
  } while (0)

static int same_device(const lmx_ndarray *a, const lmx_ndarray *b) {
  return a->st->dev_type == b->st->dev_type && a->st->dev_id == b->st->dev_id;
}

/* dst (+)= the sources on dst's device, by the device's sum-of-n primitive (on its
 * stream); acc 0 overwrites. */
static int sum_local(lmx_ndarray *dst, lmx_ndarray *const *src, int n, int acc) {
  enum { STACK = 16 };
  const void *stack[STACK], **p = n <= STACK ? stack : lmx_alloc((size_t)n * sizeof *p);
  if (!p) return lmx_fail_nomem("the sum's pointer list", (size_t)n * sizeof *p);
  int k = 0;
  for (int i = 0; i < n; i++)
    if (same_device(src[i], dst)) p[k++] = lmx_nd_ptr(src[i]);
  int rc = k ? lmx_device_sum_n(dst->st->dev, dst->st->dev_id, dst->dtype, lmx_nd_size(dst),
                                lmx_nd_ptr(dst), p, k, acc)
             : LMX_OK;
  if (p != stack) lmx_free(p);
  return rc;
}

int lmx_kv_sum_into(lmx_ndarray *dst, lmx_ndarray *const *src, int n) {
  char a[LMX_SHAPE_STRCAP], b[LMX_SHAPE_STRCAP];
  int all_cpu = lmx_nd_is_cpu(dst), all_here = 1;
  for (int i = 0; i < n; i++) {
    if (!lmx_shape_equal(&src[i]->shape, &dst->shape))
      return lmx_fail(LMX_ERR_SHAPE, "sum: value %d has shape %s, expected %s", i + 1,
                      lmx_shape_str(&src[i]->shape, a), lmx_shape_str(&dst->shape, b));
    if (src[i]->dtype != dst->dtype)
      return lmx_fail(LMX_ERR_DTYPE, "sum: value %d has dtype %s, expected %s", i + 1,
                      lmx_dtype_str(src[i]->dtype), lmx_dtype_str(dst->dtype));
    all_cpu &= lmx_nd_is_cpu(src[i]);
    all_here &= same_device(src[i], dst);
  }
  if (!all_cpu || !all_here) {
    /* On one device: its sum-of-n primitive. Across devices: the values on dst's device
     * first, then every other one copied onto it (a temporary on dst's device) and added,
     * in the order given. */
    int here = 0;
    for (int i = 0; i < n; i++) here += same_device(src[i], dst);
    if (here) LMX_TRY(sum_local(dst, src, n, 0));
    for (int i = 0; i < n; i++) {
      if (same_device(src[i], dst)) continue;
      if (!here++) { /* nothing on dst's device: start from a copy */
        LMX_TRY(lmx_nd_copy(src[i], dst));
        continue;
      }
      lmx_ndarray *t;
      LMX_TRY(lmx_nd_create(&dst->shape, dst->dtype, dst->st->dev_type, dst->st->dev_id, 0, &t));
      int rc = lmx_nd_copy(src[i], t);
      if (rc == LMX_OK) rc = sum_local(dst, &t, 1, 1);
      lmx_nd_release(t);
      LMX_TRY(rc);
    }
    return LMX_OK;
  }
  int64_t m = lmx_nd_size(dst);
  switch (dst->dtype) {
  case LMX_FLOAT32: SUM_LOOP(float, float); break;
  case LMX_FLOAT64: SUM_LOOP(double, double); break;
  case LMX_UINT8: SUM_LOOP(uint8_t, uint32_t); break;
  case LMX_INT8: SUM_LOOP(int8_t, int32_t); break;
  case LMX_INT32: SUM_LOOP(int32_t, int64_t); break;
  case LMX_INT64: SUM_LOOP(int64_t, int64_t); break;
  case LMX_FLOAT16: {
    uint16_t *d = lmx_nd_ptr(dst);
    for (int64_t j = 0; j < m; j++) {
      float s = 0;
      for (int i = 0; i < n; i++) s += lmx_f16_to_f32(((const uint16_t *)lmx_nd_ptr(src[i]))[j]);
      d[j] = lmx_f32_to_f16(s);
    }
    break;
  }
  default:
    return lmx_fail(LMX_ERR_DTYPE, "sum: dtype %s cannot be summed", lmx_dtype_str(dst->dtype));
  }
  return LMX_OK;
}

/* ---------------------------------------------------------------- the front ---- */

int lmx_kv_create(const char *type, lmx_kvstore **out) {
  const lmx_kv_backend *be = NULL;
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
    if (strcmp(type, backends[i].type) == 0) be = backends[i].be;
  if (!be && strcmp(type, "nccl") == 0)
    return lmx_fail(LMX_ERR_UNSUPPORTED,
                    "kvstore 'nccl': this build has no NCCL support "
                    "(built without CUDA: configure with -DLUAMX_CUDA=ON); use 'local' or "
                    "'device'");
  if (!be && strcmp(type, "dist_async") == 0)
    return lmx_fail(LMX_ERR_UNSUPPORTED,
                    "kvstore 'dist_async': asynchronous updates need parameter servers, "
                    "which luamx does not have (its dist kvstores are MPI all-reduces); "
                    "use 'dist_sync' or 'dist_device_sync'");
  if (!be)
    return lmx_fail(LMX_ERR_ARG,
                    "kvstore: unknown type '%s' (known: local, device, nccl, "
                    "dist_sync, dist_device_sync, dist_async)",
                    type);
  lmx_kvstore *kv = lmx_calloc(1, sizeof *kv);
  if (!kv) return lmx_fail_nomem("a kvstore", sizeof *kv);
  snprintf(kv->type, sizeof kv->type, "%s", type);
  kv->be = be;
  int rc = be->open ? be->open(kv) : LMX_OK;
  if (rc != LMX_OK) {
    lmx_free(kv);
    return rc;
  }
  *out = kv;
  return LMX_OK;
}

void lmx_kv_destroy(lmx_kvstore *kv) {
  if (!kv) return;
  if (kv->be->close) kv->be->close(kv);
  for (int i = 0; i < kv->n; i++) {
    lmx_free(kv->e[i].key);
    lmx_nd_release(kv->e[i].value);
    lmx_nd_release(kv->e[i].merge);
  }
  lmx_free(kv->e);
  lmx_free(kv);
}

const char *lmx_kv_type(const lmx_kvstore *kv) { return kv->type; }
int lmx_kv_rank(const lmx_kvstore *kv) { return kv->be->rank(kv); }
int lmx_kv_num_workers(const lmx_kvstore *kv) { return kv->be->num_workers(kv); }
int lmx_kv_barrier(lmx_kvstore *kv) { return kv->be->barrier(kv); }

int lmx_kv_check(lmx_kvstore *kv, const char *what, int64_t value) {
  return kv->be->check(kv, what, value);
}

int lmx_kv_save_states(lmx_kvstore *kv, lmx_kv_states_fn fn, void *user) {
  return kv->be->save_states(kv, fn, user);
}

int lmx_kv_load_states(lmx_kvstore *kv, lmx_kv_states_fn fn, void *user) {
  return kv->be->load_states(kv, fn, user);
}

void lmx_kv_set_updater(lmx_kvstore *kv, lmx_kv_updater_fn fn, void *user) {
  kv->updater = fn, kv->user = fn ? user : NULL;
}

static lmx_kv_entry *find(lmx_kvstore *kv, const char *key) {
  int i = lmx_kv_key_index(kv, key);
  return i < 0 ? NULL : &kv->e[i];
}

/* The n entries of keys (into caller's e[n]); LMX_ERR_NOTFOUND names a missing key. */
static int lookup(lmx_kvstore *kv, const char *op, int n, const char *const *keys,
                  lmx_kv_entry **e) {
  for (int k = 0; k < n; k++) {
    e[k] = find(kv, keys[k]);
    if (!e[k])
      return lmx_fail(LMX_ERR_NOTFOUND,
                      "kvstore '%s': %s: key '%s' has not been initialized (call init first)",
                      kv->type, op, keys[k]);
  }
  return LMX_OK;
}

int lmx_kv_init(lmx_kvstore *kv, const char *key, const lmx_ndarray *value) {
  if (find(kv, key))
    return lmx_fail(LMX_ERR_STATE, "kvstore '%s': init: key '%s' is already initialized", kv->type,
                    key);
  if (kv->n == kv->cap) {
    int nc = kv->cap ? kv->cap * 2 : 16;
    lmx_kv_entry *e = lmx_realloc(kv->e, (size_t)nc * sizeof *e);
    if (!e) return lmx_fail_nomem("kvstore keys", (size_t)nc * sizeof *e);
    kv->e = e, kv->cap = nc;
  }
  lmx_kv_entry en = {lmx_strdup(key), NULL, NULL};
  int rc = en.key ? LMX_OK : lmx_fail_nomem("a kvstore key", strlen(key) + 1);
  if (rc == LMX_OK) rc = lmx_nd_create(&value->shape, value->dtype, LMX_CPU, 0, 0, &en.value);
  if (rc == LMX_OK) rc = lmx_nd_create(&value->shape, value->dtype, LMX_CPU, 0, 1, &en.merge);
  if (rc == LMX_OK) rc = lmx_nd_copy(value, en.value);
  if (rc != LMX_OK) {
    lmx_free(en.key), lmx_nd_release(en.value), lmx_nd_release(en.merge);
    return rc;
  }
  kv->e[kv->n] = en;
  lmx_kv_entry *ep = &kv->e[kv->n];
  rc = kv->be->init(kv, 1, &ep);
  if (rc != LMX_OK) { /* the key stays unknown: init may be retried */
    lmx_free(en.key), lmx_nd_release(en.value), lmx_nd_release(en.merge);
    return rc;
  }
  kv->n++;
  return LMX_OK;
}

enum { KV_MAXKEYS_STACK = 64 };

/* Runs verb over keys with an entry list on the stack (or the heap for many keys). */
static int with_entries(lmx_kvstore *kv, const char *op, int n, const char *const *keys,
                        lmx_kv_entry ***out, lmx_kv_entry **stack) {
  *out = stack;
  if (n > KV_MAXKEYS_STACK) {
    *out = lmx_calloc((size_t)n, sizeof **out);
    if (!*out) return lmx_fail_nomem("a kvstore key list", (size_t)n * sizeof **out);
  }
  int rc = lookup(kv, op, n, keys, *out);
  if (rc != LMX_OK && *out != stack) lmx_free(*out);
  return rc;
}

int lmx_kv_pushpull(lmx_kvstore *kv, int n, const char *const *keys, lmx_ndarray *const *values,
                    int nv, lmx_ndarray *const *outs, int no) {
  if (n < 1) return LMX_OK;
  if (nv < 1 && values)
    return lmx_fail(LMX_ERR_ARG, "kvstore '%s': push: key '%s': no values", kv->type, keys[0]);
  lmx_kv_entry *stack[KV_MAXKEYS_STACK], **e;
  LMX_TRY(with_entries(kv, values ? "push" : "pull", n, keys, &e, stack));
  int rc;
  if (values && outs && no > 0 && kv->be->pushpull) rc = kv->be->pushpull(kv, n, e, values, nv, outs, no);
  else {
    rc = values ? kv->be->push(kv, n, e, values, nv) : LMX_OK;
    if (rc == LMX_OK && outs && no > 0) rc = kv->be->pull(kv, n, e, outs, no);
  }
  if (e != stack) lmx_free(e);
  return rc;
}

int lmx_kv_push(lmx_kvstore *kv, const char *key, lmx_ndarray *const *values, int n) {
  if (n < 1) return lmx_fail(LMX_ERR_ARG, "kvstore '%s': push: key '%s': no values", kv->type, key);
  return lmx_kv_pushpull(kv, 1, &key, values, n, NULL, 0);
}

int lmx_kv_pull(lmx_kvstore *kv, const char *key, lmx_ndarray *const *outs, int n) {
  return lmx_kv_pushpull(kv, 1, &key, NULL, 0, outs, n);
}

int lmx_kv_overlap_on(const lmx_kvstore *kv) { return kv->be->overlap_on && kv->be->overlap_on(kv); }

int lmx_kv_key_index(const lmx_kvstore *kv, const char *key) {
  for (int i = 0; i < kv->n; i++)
    if (strcmp(kv->e[i].key, key) == 0) return i;
  return -1;
}

int lmx_kv_overlap_begin(lmx_kvstore *kv, int n, const int *idx, lmx_ndarray *const *values,
                         const int *order) {
  for (int k = 0; k < n; k++)
    if (idx[k] < 0 || idx[k] >= kv->n)
      return lmx_fail(LMX_ERR_ARG, "kvstore '%s': overlapped push: key %d is not initialized",
                      kv->type, k + 1);
  return kv->be->ov_begin ? kv->be->ov_begin(kv, n, idx, values, order) : LMX_OK;
}

int lmx_kv_overlap_ready(lmx_kvstore *kv, int n, const int *pos) {
  return kv->be->ov_ready ? kv->be->ov_ready(kv, n, pos) : LMX_OK;
}

/* ------------------------------------------------- helpers for the backends ---- */

int lmx_kvf_merge(lmx_kvstore *kv, lmx_kv_entry *e, lmx_ndarray *const *values, int nv) {
  int rc = lmx_kv_sum_into(e->merge, values, nv);
  if (rc != LMX_OK) return lmx_fail_prefix(rc, "kvstore '%s': push: key '%s': ", kv->type, e->key);
  return LMX_OK;
}

int lmx_kvf_apply(lmx_kvstore *kv, lmx_kv_entry *e) {
  if (!kv->updater) { /* the sum becomes the stored value: swap, no copy */
    lmx_ndarray *t = e->value;
    e->value = e->merge, e->merge = t;
    return LMX_OK;
  }
  int rc = kv->updater(e->key, e->merge, e->value, kv->user);
  if (rc != LMX_OK)
    return lmx_fail(rc, "kvstore '%s': push: the updater failed for key '%s'", kv->type, e->key);
  return LMX_OK;
}

int lmx_kvf_pull(lmx_kvstore *kv, int n, lmx_kv_entry *const *e, lmx_ndarray *const *outs, int no) {
  char a[LMX_SHAPE_STRCAP], b[LMX_SHAPE_STRCAP];
  for (int k = 0; k < n; k++)
    for (int i = 0; i < no; i++) {
      lmx_ndarray *o = outs[(size_t)k * (size_t)no + (size_t)i];
      if (!lmx_shape_equal(&o->shape, &e[k]->value->shape))
        return lmx_fail(LMX_ERR_SHAPE, "kvstore '%s': pull: key '%s', output %d: expected shape %s, got %s",
                        kv->type, e[k]->key, i + 1, lmx_shape_str(&e[k]->value->shape, a),
                        lmx_shape_str(&o->shape, b));
    }
  for (int k = 0; k < n; k++)
    for (int i = 0; i < no; i++) {
      int rc = lmx_nd_copy(e[k]->value, outs[(size_t)k * (size_t)no + (size_t)i]);
      if (rc != LMX_OK)
        return lmx_fail_prefix(rc, "kvstore '%s': pull: key '%s', output %d: ", kv->type, e[k]->key,
                               i + 1);
    }
  return LMX_OK;
}
