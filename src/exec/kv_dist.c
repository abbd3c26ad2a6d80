/* kv_dist.c — the `dist_sync` / `dist_device_sync` kvstore backend: MXNet's dist kvstore
 * meaning on MPI all-reduces (Horovod's scheme, no parameter servers).
 *
 * Every worker keeps the full stored values. init broadcasts rank 0's value, so every
 * worker starts identical. push sums the values over the worker's devices
 * (lmx_kv_sum_into), then all-reduces the merge buffers over workers and runs the same
 * updater on the same sum everywhere, so parameters stay identical without a pull from a
 * server. pull copies the local stored value.
 * Fusion and chunks: keys smaller than LUAMX_DIST_SMALL_BYTES (1 MiB) are packed into
 * fusion buffers of up to LUAMX_DIST_FUSION_BYTES (4 MiB) per dtype, one all-reduce per
 * buffer; larger keys are reduced straight from the pushed value when there is one per
 * key, in chunks of LUAMX_DIST_CHUNK_BYTES (16 MiB: few collectives, each a point where
 * every worker must be running, which matters on oversubscribed cores). A key is updated as soon as its sum is in, before the next
 * keys are reduced. The data all-reduces are OpenMPI's blocking ones (its non-blocking
 * MPI_Iallreduce measured at about half their speed here); only the control all-reduce in
 * front of them is non-blocking, because that is where a missing or different rank shows.
 * Checks: every verb starts with a small control all-reduce of (verb, signature of its
 * keys, shapes and dtypes, or of the checked value); the control is also the barrier.
 * Workers that disagree get an error naming the key and the ranks (an all-gather of the
 * descriptions, made only then), never a deadlock.
 * Deadline: every wait polls with a deadline of LUAMX_DIST_TIMEOUT seconds (default
 * 120). When it passes, the other ranks are pinged (the plugin answers pings while it
 * waits); those that do not answer are named as lost, the store fails for good and the
 * plugin skips MPI_Finalize. mpirun itself ends the job when a rank dies or exits with a
 * non-zero status, naming that rank; the deadline covers ranks that hang.
 * MPI lives in libluamx_mpi.so (src/dist), opened here on the first dist store.
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "../dist/mpi_abi.h"
#include "../tensor/dtype.h"
#include "kvstore.h"

enum { K_INIT = 1, K_PUSH = 2, K_BARRIER = 3, K_CHECK = 4, K_STATES = 5 };

static lmx_mpi_ops mpi;
static int mpi_loaded;

typedef struct {
  int rank, size, broken;
  double timeout;
  size_t small_bytes, fuse_bytes, chunk_bytes;
  char *fuse;  /* fusion buffers, made at the first push, grown when keys need more */
  size_t fuse_cap;
  char err[512];
} dist;

static double env_num(const char *name, double dflt) {
  const char *s = getenv(name);
  char *end;
  double v = s ? strtod(s, &end) : 0;
  return s && end != s && v > 0 ? v : dflt;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---------------------------------------------------------- the plugin ---- */

static int load_plugin(const char *type) {
  if (mpi_loaded) return LMX_OK;
  char path[4096];
  const char *env = getenv("LUAMX_MPI_PLUGIN");
  Dl_info info;
  if (env && *env) snprintf(path, sizeof path, "%s", env);
  else if (dladdr((void *)&load_plugin, &info) && info.dli_fname && strchr(info.dli_fname, '/')) {
    snprintf(path, sizeof path, "%s", info.dli_fname);
    *strrchr(path, '/') = 0;
    size_t len = strlen(path);
    snprintf(path + len, sizeof path - len, "/libluamx_mpi.so");
  } else
    snprintf(path, sizeof path, "libluamx_mpi.so");
  void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (!h && !env) h = dlopen("libluamx_mpi.so", RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    const char *why = dlerror();
    return lmx_fail(LMX_ERR_UNSUPPORTED,
                    "kvstore '%s': cannot load the MPI plugin %s (%s). Distributed kvstores need "
                    "OpenMPI: install it (Debian: apt-get install openmpi-bin libopenmpi-dev), "
                    "then rebuild luamx so that libluamx_mpi.so is built next to libluamx "
                    "(or set LUAMX_MPI_PLUGIN to its path)",
                    type, path, why ? why : "not found");
  }
  lmx_mpi_plugin_fn fn;
  *(void **)&fn = dlsym(h, "lmx_mpi_plugin");
  if (!fn || fn(&mpi) != 0 || mpi.abi != LMX_MPI_ABI_VERSION)
    return lmx_fail(LMX_ERR_UNSUPPORTED,
                    "kvstore '%s': %s is not a luamx MPI plugin of this version (rebuild luamx)",
                    type, path);
  mpi_loaded = 1;
  return LMX_OK;
}

/* ---------------------------------------------------------- waiting ---- */

/* Names the ranks that do not answer a ping; marks the store and process failed. */
static int lost(lmx_kvstore *kv, const char *what) {
  dist *d = kv->state;
  d->broken = 1;
  mpi.mark_failed();
  unsigned char *alive = lmx_calloc((size_t)d->size, 1);
  char names[256] = "";
  size_t len = 0;
  int nlost = 0;
  if (alive && mpi.probe_alive(d->timeout < 10 ? d->timeout / 2 + 0.5 : 5.0, alive, d->err,
                               (int)sizeof d->err) == 0)
    for (int r = 0; r < d->size && len < sizeof names - 16; r++)
      if (!alive[r]) {
        len += (size_t)snprintf(names + len, sizeof names - len, "%s%d", nlost ? ", " : "", r);
        nlost++;
      }
  lmx_free(alive);
  if (nlost)
    return lmx_fail(LMX_ERR_IO,
                    "kvstore '%s': rank %d: %s: no answer for %g s (LUAMX_DIST_TIMEOUT): lost "
                    "rank%s %s (dead, hung, or no longer calling the kvstore); stopping",
                    kv->type, d->rank, what, d->timeout, nlost > 1 ? "s" : "", names);
  return lmx_fail(LMX_ERR_IO,
                  "kvstore '%s': rank %d: %s: not finished after %g s (LUAMX_DIST_TIMEOUT) although "
                  "every rank answers: the workers are in different kvstore calls; stopping",
                  kv->type, d->rank, what, d->timeout);
}

static int wait_op(lmx_kvstore *kv, int req, double deadline, const char *what) {
  dist *d = kv->state;
  for (unsigned spin = 0;; spin++) {
    int r = mpi.test(req, d->err, (int)sizeof d->err);
    if (r == 1) return LMX_OK;
    if (r < 0) {
      d->broken = 1;
      mpi.mark_failed();
      return lmx_fail(LMX_ERR_IO, "kvstore '%s': rank %d: %s: %s", kv->type, d->rank, what, d->err);
    }
    if ((spin & 255) == 255) {
      if (now() > deadline) return lost(kv, what);
      if (spin > 20000) {
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
      } else
        sched_yield();
    }
  }
}

static int started(lmx_kvstore *kv, int rc, const char *what) {
  dist *d = kv->state;
  if (rc == 0) return LMX_OK;
  d->broken = 1;
  mpi.mark_failed();
  return lmx_fail(LMX_ERR_IO, "kvstore '%s': rank %d: %s: %s", kv->type, d->rank, what, d->err);
}

static int usable(lmx_kvstore *kv) {
  dist *d = kv->state;
  if (!d->broken) return LMX_OK;
  return lmx_fail(LMX_ERR_STATE,
                  "kvstore '%s': rank %d: the store failed earlier (a worker was lost or the "
                  "workers disagreed); create a new job",
                  kv->type, d->rank);
}

/* ------------------------------------------------------ signatures ---- */

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ull;
  return h;
}

static uint64_t key_sig(uint64_t h, const lmx_kv_entry *e) {
  h = fnv(h, e->key, strlen(e->key) + 1);
  h = fnv(h, &e->value->shape.ndim, sizeof e->value->shape.ndim);
  h = fnv(h, e->value->shape.dim, sizeof e->value->shape.dim[0] * (size_t)e->value->shape.ndim);
  return fnv(h, &e->value->dtype, sizeof e->value->dtype);
}

static const char *kind_name(int k) {
  switch (k) {
  case K_INIT: return "init";
  case K_PUSH: return "push";
  case K_BARRIER: return "barrier";
  case K_CHECK: return "check";
  default: return "optimizer states";
  }
}

/* Text of what this rank is doing, for the disagreement message. */
static void describe(char *buf, size_t cap, int kind, int n, lmx_kv_entry *const *e,
                     const char *what, int64_t value) {
  size_t len = (size_t)snprintf(buf, cap, "%s", kind_name(kind));
  if (kind == K_CHECK) snprintf(buf + len, cap - len, " '%s' = %lld", what, (long long)value);
  for (int k = 0; k < n && len < cap - 1; k++) {
    char s[LMX_SHAPE_STRCAP];
    len += (size_t)snprintf(buf + len, cap - len, "%s'%s' %s %s", k ? ", " : " of key ", e[k]->key,
                            lmx_shape_str(&e[k]->value->shape, s), lmx_dtype_str(e[k]->value->dtype));
    len = len < cap ? len : cap - 1;
  }
}

enum { DESC = 480 };

/* The workers disagree: gather every rank's description and name the ranks. */
static int disagree(lmx_kvstore *kv, const char *mine, double deadline) {
  dist *d = kv->state;
  char *all = lmx_calloc((size_t)d->size, DESC);
  char my[DESC] = "";
  snprintf(my, sizeof my, "%s", mine);
  int req;
  if (!all) return lmx_fail_nomem("the kvstore's disagreement report", (size_t)d->size * DESC);
  int rc = started(kv, mpi.iallgather(my, DESC, all, &req, d->err, (int)sizeof d->err), "report");
  if (rc == LMX_OK) rc = wait_op(kv, req, deadline, "report of a disagreement");
  if (rc != LMX_OK) return lmx_free(all), rc;
  int other = d->rank == 0 ? -1 : 0;
  for (int r = 0; r < d->size && other < 0; r++)
    if (strcmp(all + (size_t)r * DESC, my) != 0) other = r;
  d->broken = 1;
  char o[DESC];
  snprintf(o, sizeof o, "%s", other >= 0 ? all + (size_t)other * DESC : "(the same)");
  lmx_free(all);
  return lmx_fail(LMX_ERR_STATE,
                  "kvstore '%s': the workers disagree: rank %d calls %s, but rank %d calls %s "
                  "(every worker must init and push the same keys with the same shapes, and run "
                  "the same number of batches)",
                  kv->type, d->rank, my, other, o);
}

/* The control all-reduce every verb starts with: all ranks must present the same
 * (kind, sig). It is also the barrier. */
static int control(lmx_kvstore *kv, int kind, uint64_t sig, int n, lmx_kv_entry *const *e,
                   const char *what, int64_t value) {
  dist *d = kv->state;
  int64_t s = (int64_t)(sig >> 2), v[4] = {kind, -kind, s, -s};
  double deadline = now() + d->timeout;
  int req;
  LMX_TRY(started(kv, mpi.iallreduce(v, 4, LMX_INT64, LMX_MPI_MAX, &req, d->err, (int)sizeof d->err),
                  kind_name(kind)));
  char w[96];
  snprintf(w, sizeof w, "%s%s%s", kind_name(kind), n ? " of key " : "", n ? e[0]->key : "");
  LMX_TRY(wait_op(kv, req, deadline, w));
  if (v[0] == kind && -v[1] == kind && v[2] == s && -v[3] == s) return LMX_OK;
  char mine[DESC];
  describe(mine, sizeof mine, kind, n, e, what, value);
  return disagree(kv, mine, deadline);
}

/* ---------------------------------------------------------- the verbs ---- */

static int d_open(lmx_kvstore *kv) {
  LMX_TRY(load_plugin(kv->type));
  dist *d = lmx_calloc(1, sizeof *d);
  if (!d) return lmx_fail_nomem("a dist kvstore", sizeof *d);
  if (mpi.init(&d->rank, &d->size, d->err, (int)sizeof d->err) != 0) {
    int rc = lmx_fail(LMX_ERR_IO, "kvstore '%s': %s", kv->type, d->err);
    lmx_free(d);
    return rc;
  }
  d->timeout = env_num("LUAMX_DIST_TIMEOUT", 120);
  d->chunk_bytes = (size_t)env_num("LUAMX_DIST_CHUNK_BYTES", 16 << 20);
  d->fuse_bytes = (size_t)env_num("LUAMX_DIST_FUSION_BYTES", 4 << 20);
  d->small_bytes = (size_t)env_num("LUAMX_DIST_SMALL_BYTES", 1 << 20);
  if (d->small_bytes > d->chunk_bytes) d->small_bytes = d->chunk_bytes;
  if (d->fuse_bytes < d->small_bytes) d->fuse_bytes = d->small_bytes;
  kv->state = d;
  return LMX_OK;
}

static void d_close(lmx_kvstore *kv) {
  dist *d = kv->state;
  if (!d) return;
  lmx_free(d->fuse);
  lmx_free(d);
}

static int d_init(lmx_kvstore *kv, int n, lmx_kv_entry *const *e) {
  dist *d = kv->state;
  LMX_TRY(usable(kv));
  if (d->size == 1) return LMX_OK;
  uint64_t sig = 1469598103934665603ull;
  for (int k = 0; k < n; k++) sig = key_sig(sig, e[k]);
  LMX_TRY(control(kv, K_INIT, sig, n, e, NULL, 0));
  double deadline = now() + d->timeout;
  for (int k = 0; k < n; k++) {
    char *p = lmx_nd_ptr(e[k]->value);
    size_t bytes = lmx_nd_bytes(e[k]->value);
    char w[96];
    snprintf(w, sizeof w, "init (broadcast) of key '%s'", e[k]->key);
    for (size_t at = 0; at < bytes; at += d->chunk_bytes) {
      size_t len = bytes - at < d->chunk_bytes ? bytes - at : d->chunk_bytes;
      int req;
      LMX_TRY(started(kv, mpi.ibcast(p + at, (int)len, 0, &req, d->err, (int)sizeof d->err), w));
      LMX_TRY(wait_op(kv, req, deadline, w));
    }
  }
  return LMX_OK;
}

static int fused_bytes(const dist *d, int n, lmx_kv_entry *const *e, size_t *total) {
  size_t t = 0;
  for (int k = 0; k < n; k++) {
    size_t b = lmx_nd_bytes(e[k]->merge);
    if (b < d->small_bytes) t += (b + 63) & ~(size_t)63;
  }
  *total = t;
  return LMX_OK;
}

/* One data all-reduce: src NULL reduces dst in place. */
static int reduce(lmx_kvstore *kv, const void *src, void *dst, int64_t count, int dtype,
                  const char *key) {
  dist *d = kv->state;
  if (mpi.allreduce(src, dst, (int)count, dtype, LMX_MPI_SUM, d->err, (int)sizeof d->err) == 0)
    return LMX_OK;
  d->broken = 1;
  mpi.mark_failed();
  return lmx_fail(LMX_ERR_IO, "kvstore '%s': rank %d: push of key '%s': %s", kv->type, d->rank, key,
                  d->err);
}

/* A single value of the key's shape and dtype on the CPU: reduced straight from it. */
static int direct(const lmx_kv_entry *e, lmx_ndarray *const *v, int nv) {
  return nv == 1 && lmx_nd_is_cpu(v[0]) && v[0]->dtype == e->merge->dtype &&
         lmx_shape_equal(&v[0]->shape, &e->merge->shape);
}

static int d_push(lmx_kvstore *kv, int n, lmx_kv_entry *const *e, lmx_ndarray *const *values,
                  int nv) {
  dist *d = kv->state;
  LMX_TRY(usable(kv));
  if (d->size == 1) {
    for (int k = 0; k < n; k++) {
      LMX_TRY(lmx_kvf_merge(kv, e[k], values + (size_t)k * (size_t)nv, nv));
      LMX_TRY(lmx_kvf_apply(kv, e[k]));
    }
    return LMX_OK;
  }
  uint64_t sig = 1469598103934665603ull;
  for (int k = 0; k < n; k++) sig = key_sig(sig, e[k]);
  LMX_TRY(control(kv, K_PUSH, sig, n, e, NULL, 0));
  /* Every rank is now in this push with the same keys: the data all-reduces are the
   * blocking ones (a rank that dies inside them is mpirun's to report). */
  size_t need;
  fused_bytes(d, n, e, &need);
  if (need > d->fuse_cap) {
    char *fb = lmx_realloc(d->fuse, need);
    if (!fb) return lmx_fail_nomem("the kvstore's fusion buffer", need);
    d->fuse = fb, d->fuse_cap = need;
  }
  for (int k = 0; k < n;) {
    lmx_ndarray *const *v = values + (size_t)k * (size_t)nv;
    lmx_ndarray *m = e[k]->merge;
    int dt = m->dtype, esz = lmx_dtype_size(dt);
    if (lmx_nd_bytes(m) >= d->small_bytes) { /* large: straight from the value, in chunks */
      int from_value = direct(e[k], v, nv);
      if (!from_value) LMX_TRY(lmx_kvf_merge(kv, e[k], v, nv));
      const char *src = from_value ? lmx_nd_ptr(v[0]) : NULL;
      int64_t per = (int64_t)(d->chunk_bytes / (size_t)esz), cnt = lmx_nd_size(m);
      for (int64_t c = 0; c < cnt; c += per) {
        size_t off = (size_t)c * (size_t)esz;
        LMX_TRY(reduce(kv, src ? src + off : NULL, (char *)lmx_nd_ptr(m) + off,
                       cnt - c < per ? cnt - c : per, dt, e[k]->key));
      }
      LMX_TRY(lmx_kvf_apply(kv, e[k]));
      k++;
      continue;
    }
    /* small: consecutive keys of one dtype packed into one fusion buffer */
    int first = k;
    size_t at = 0;
    while (k < n && e[k]->merge->dtype == dt && lmx_nd_bytes(e[k]->merge) < d->small_bytes &&
           at + lmx_nd_bytes(e[k]->merge) <= d->fuse_bytes) {
      lmx_ndarray *const *vk = values + (size_t)k * (size_t)nv;
      size_t kb = lmx_nd_bytes(e[k]->merge), pad = ((kb + 63) & ~(size_t)63) - kb;
      if (direct(e[k], vk, nv)) memcpy(d->fuse + at, lmx_nd_ptr(vk[0]), kb);
      else {
        LMX_TRY(lmx_kvf_merge(kv, e[k], vk, nv));
        memcpy(d->fuse + at, lmx_nd_ptr(e[k]->merge), kb);
      }
      memset(d->fuse + at + kb, 0, pad);
      at += kb + pad;
      k++;
    }
    LMX_TRY(reduce(kv, NULL, d->fuse, (int64_t)(at / (size_t)esz), dt, e[first]->key));
    at = 0;
    for (int j = first; j < k; j++) {
      size_t kb = lmx_nd_bytes(e[j]->merge);
      memcpy(lmx_nd_ptr(e[j]->merge), d->fuse + at, kb);
      at += (kb + 63) & ~(size_t)63;
      LMX_TRY(lmx_kvf_apply(kv, e[j]));
    }
  }
  return LMX_OK;
}

static int d_barrier(lmx_kvstore *kv) {
  dist *d = kv->state;
  LMX_TRY(usable(kv));
  return d->size == 1 ? LMX_OK : control(kv, K_BARRIER, 0, 0, NULL, NULL, 0);
}

static int d_rank(const lmx_kvstore *kv) { return ((const dist *)kv->state)->rank; }
static int d_workers(const lmx_kvstore *kv) { return ((const dist *)kv->state)->size; }

static int d_check(lmx_kvstore *kv, const char *what, int64_t value) {
  dist *d = kv->state;
  LMX_TRY(usable(kv));
  if (d->size == 1) return LMX_OK;
  uint64_t sig = fnv(fnv(1469598103934665603ull, what, strlen(what)), &value, sizeof value);
  return control(kv, K_CHECK, sig, 0, NULL, what, value);
}

/* The status of `fn` on the writing rank(s), shared by all. */
static int states(lmx_kvstore *kv, lmx_kv_states_fn fn, void *user, int writer_only) {
  dist *d = kv->state;
  LMX_TRY(usable(kv));
  int64_t st = (!writer_only || d->rank == 0) ? (fn(user) != 0) : 0;
  if (d->size > 1) {
    LMX_TRY(control(kv, K_STATES, (uint64_t)writer_only, 0, NULL, NULL, 0));
    int64_t v[2] = {st ? d->rank + 1 : 0, 0};
    int req;
    LMX_TRY(started(kv, mpi.iallreduce(v, 2, LMX_INT64, LMX_MPI_MAX, &req, d->err, (int)sizeof d->err),
                    "optimizer states"));
    LMX_TRY(wait_op(kv, req, now() + d->timeout, "optimizer states"));
    if (v[0])
      return lmx_fail(LMX_ERR_IO, "kvstore '%s': rank %d failed to %s the optimizer states", kv->type,
                      (int)v[0] - 1, writer_only ? "save" : "load");
  } else if (st)
    return lmx_fail(LMX_ERR_IO, "kvstore '%s': the optimizer-state callback failed", kv->type);
  return LMX_OK;
}

static int d_save(lmx_kvstore *kv, lmx_kv_states_fn fn, void *user) { return states(kv, fn, user, 1); }
static int d_load(lmx_kvstore *kv, lmx_kv_states_fn fn, void *user) { return states(kv, fn, user, 0); }

const lmx_kv_backend lmx_kv_dist = {
    .name = "mpi",
    .open = d_open,
    .close = d_close,
    .init = d_init,
    .push = d_push,
    .pull = lmx_kvf_pull,
    .barrier = d_barrier,
    .rank = d_rank,
    .num_workers = d_workers,
    .check = d_check,
    .save_states = d_save,
    .load_states = d_load,
};
