/* kvstore.c — the local key-value store (MXNet's KVStoreLocal, §5.9 of
 * MXNET-SEMANTICS.md) and the array sum it and the executor group use.
 *
 * A store keeps, per key, the stored value (a copy made at init) and a merge buffer of
 * the same shape. push(key, values[n]) sums the values into the merge buffer; with an
 * updater set it calls updater(key, merged gradient, stored weight) once, otherwise the
 * sum becomes the stored value. pull(key, outs[n]) copies the stored value into every
 * output ("sum gradients, run the update once, broadcast the weights").
 * Types: "local" and "device" (on CPU contexts the two behave the same: the reduction
 * runs on the host). "nccl" and the "dist_*" types are refused: this build has no
 * NCCL support and no MPI launcher.
 * Invariants: buffers are made at init, so push and pull allocate nothing. Keys are
 * strings (the Lua side turns integer keys into their decimal text); a store holds one
 * reference to each of its arrays. The updater is a host function pointer called on
 * the calling thread, during push; a non-zero return fails the push.
 * Threads: a store is used by one thread at a time.
 */
#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "../tensor/dtype.h"
#include "training.h"

typedef struct {
  char *key;
  lmx_ndarray *value, *merge;
} kv_entry;

struct lmx_kvstore {
  char type[16];
  kv_entry *e;
  int n, cap;
  lmx_kv_updater_fn updater;
  void *user;
};

int lmx_train_sum(lmx_ndarray *dst, lmx_ndarray *const *src, int n) {
  char a[LMX_SHAPE_STRCAP], b[LMX_SHAPE_STRCAP];
  for (int i = 0; i < n; i++) {
    if (!lmx_nd_is_cpu(src[i]) || !lmx_nd_is_cpu(dst))
      return lmx_fail(LMX_ERR_UNSUPPORTED,
                      "sum: value %d is on %s(%d); only CPU arrays are "
                      "reduced in this build",
                      i + 1, src[i]->st->dev->name, src[i]->st->dev_id);
    if (!lmx_shape_equal(&src[i]->shape, &dst->shape))
      return lmx_fail(LMX_ERR_SHAPE, "sum: value %d has shape %s, expected %s", i + 1,
                      lmx_shape_str(&src[i]->shape, a), lmx_shape_str(&dst->shape, b));
    if (src[i]->dtype != dst->dtype || (dst->dtype != LMX_FLOAT32 && dst->dtype != LMX_FLOAT64))
      return lmx_fail(LMX_ERR_DTYPE,
                      "sum: value %d has dtype %s, expected %s (float32 or "
                      "float64)",
                      i + 1, lmx_dtype_str(src[i]->dtype), lmx_dtype_str(dst->dtype));
  }
  int64_t m = lmx_nd_size(dst);
  if (dst->dtype == LMX_FLOAT32) {
    float *d = lmx_nd_ptr(dst);
    for (int64_t j = 0; j < m; j++) {
      float s = 0;
      for (int i = 0; i < n; i++) s += ((const float *)lmx_nd_ptr(src[i]))[j];
      d[j] = s;
    }
  } else {
    double *d = lmx_nd_ptr(dst);
    for (int64_t j = 0; j < m; j++) {
      double s = 0;
      for (int i = 0; i < n; i++) s += ((const double *)lmx_nd_ptr(src[i]))[j];
      d[j] = s;
    }
  }
  return LMX_OK;
}

int lmx_kv_create(const char *type, lmx_kvstore **out) {
  if (strcmp(type, "nccl") == 0)
    return lmx_fail(LMX_ERR_UNSUPPORTED,
                    "kvstore 'nccl': this build has no NCCL support "
                    "(built without CUDA/NCCL); use 'local' or 'device'");
  if (strncmp(type, "dist", 4) == 0)
    return lmx_fail(LMX_ERR_UNSUPPORTED,
                    "kvstore '%s': distributed kvstores need an MPI "
                    "launcher (mpirun) and a build with MPI support, which this build lacks; "
                    "use 'local' or 'device'",
                    type);
  if (strcmp(type, "local") != 0 && strcmp(type, "device") != 0)
    return lmx_fail(LMX_ERR_ARG,
                    "kvstore: unknown type '%s' (known: local, device, nccl, "
                    "dist_sync, dist_device_sync, dist_async)",
                    type);
  lmx_kvstore *kv = lmx_calloc(1, sizeof *kv);
  if (!kv) return lmx_fail_nomem("a kvstore", sizeof *kv);
  snprintf(kv->type, sizeof kv->type, "%s", type);
  *out = kv;
  return LMX_OK;
}

void lmx_kv_destroy(lmx_kvstore *kv) {
  if (!kv) return;
  for (int i = 0; i < kv->n; i++) {
    lmx_free(kv->e[i].key);
    lmx_nd_release(kv->e[i].value);
    lmx_nd_release(kv->e[i].merge);
  }
  lmx_free(kv->e);
  lmx_free(kv);
}

const char *lmx_kv_type(const lmx_kvstore *kv) {
  return kv->type;
}

void lmx_kv_set_updater(lmx_kvstore *kv, lmx_kv_updater_fn fn, void *user) {
  kv->updater = fn, kv->user = fn ? user : NULL;
}

static kv_entry *find(lmx_kvstore *kv, const char *key) {
  for (int i = 0; i < kv->n; i++)
    if (strcmp(kv->e[i].key, key) == 0) return &kv->e[i];
  return NULL;
}

static int unknown(const lmx_kvstore *kv, const char *op, const char *key) {
  return lmx_fail(LMX_ERR_NOTFOUND,
                  "kvstore '%s': %s: key '%s' has not been initialized (call "
                  "init first)",
                  kv->type, op, key);
}

int lmx_kv_init(lmx_kvstore *kv, const char *key, const lmx_ndarray *value) {
  if (find(kv, key))
    return lmx_fail(LMX_ERR_STATE, "kvstore '%s': init: key '%s' is already initialized", kv->type,
                    key);
  if (kv->n == kv->cap) {
    int nc = kv->cap ? kv->cap * 2 : 16;
    kv_entry *e = lmx_realloc(kv->e, (size_t)nc * sizeof *e);
    if (!e) return lmx_fail_nomem("kvstore keys", (size_t)nc * sizeof *e);
    kv->e = e, kv->cap = nc;
  }
  kv_entry en = {lmx_strdup(key), NULL, NULL};
  int rc = en.key ? LMX_OK : lmx_fail_nomem("a kvstore key", strlen(key) + 1);
  if (rc == LMX_OK) rc = lmx_nd_create(&value->shape, value->dtype, LMX_CPU, 0, 0, &en.value);
  if (rc == LMX_OK) rc = lmx_nd_create(&value->shape, value->dtype, LMX_CPU, 0, 1, &en.merge);
  if (rc == LMX_OK) rc = lmx_nd_copy(value, en.value);
  if (rc != LMX_OK) {
    lmx_free(en.key), lmx_nd_release(en.value), lmx_nd_release(en.merge);
    return rc;
  }
  kv->e[kv->n++] = en;
  return LMX_OK;
}

int lmx_kv_push(lmx_kvstore *kv, const char *key, lmx_ndarray *const *values, int n) {
  kv_entry *e = find(kv, key);
  if (!e) return unknown(kv, "push", key);
  if (n < 1) return lmx_fail(LMX_ERR_ARG, "kvstore '%s': push: key '%s': no values", kv->type, key);
  int rc = lmx_train_sum(e->merge, values, n);
  if (rc != LMX_OK) return lmx_fail_prefix(rc, "kvstore '%s': push: key '%s': ", kv->type, key);
  if (!kv->updater) return lmx_nd_copy(e->merge, e->value);
  rc = kv->updater(e->key, e->merge, e->value, kv->user);
  if (rc != LMX_OK)
    return lmx_fail(rc, "kvstore '%s': push: the updater failed for key '%s'", kv->type, key);
  return LMX_OK;
}

int lmx_kv_pull(lmx_kvstore *kv, const char *key, lmx_ndarray *const *outs, int n) {
  kv_entry *e = find(kv, key);
  if (!e) return unknown(kv, "pull", key);
  for (int i = 0; i < n; i++) {
    if (!lmx_shape_equal(&outs[i]->shape, &e->value->shape)) {
      char a[LMX_SHAPE_STRCAP], b[LMX_SHAPE_STRCAP];
      return lmx_fail(LMX_ERR_SHAPE,
                      "kvstore '%s': pull: key '%s', output %d: expected shape "
                      "%s, got %s",
                      kv->type, key, i + 1, lmx_shape_str(&e->value->shape, a),
                      lmx_shape_str(&outs[i]->shape, b));
    }
  }
  for (int i = 0; i < n; i++) {
    int rc = lmx_nd_copy(e->value, outs[i]);
    if (rc != LMX_OK)
      return lmx_fail_prefix(rc, "kvstore '%s': pull: key '%s', output %d: ", kv->type, key, i + 1);
  }
  return LMX_OK;
}
