/* kv_dist.c — the `dist_sync` / `dist_device_sync` kvstore backend: MXNet's dist kvstore
 * meaning on MPI all-reduces (Horovod's scheme, no parameter servers).
 *
 * Files: this one (the plugin, waits, controls, the verbs with the plain push and the hot
 * pushpull), kv_dist_overlap.c (the overlapped push), kv_dist_shm.c (the shared-memory
 * all-reduce); what they share is in kv_dist_impl.h.
 *
 * Every worker keeps the full stored values. init broadcasts rank 0's value, so every
 * worker starts identical. push sums the values over the worker's devices
 * (lmx_kv_sum_into), then all-reduces the merge buffers over workers and runs the same
 * updater on the same sum everywhere, so parameters stay identical without a pull from a
 * server. pull copies the local stored value.
 * Fusion and chunks: keys smaller than LUAMX_DIST_SMALL_BYTES (1 MiB) are packed into
 * fusion buffers of up to LUAMX_DIST_FUSION_BYTES (4 MiB) per dtype, one all-reduce per
 * buffer; larger keys are reduced straight from the pushed value when there is one per
 * key (and, without an updater, straight into the stored value), in chunks of
 * LUAMX_DIST_CHUNK_BYTES (16 MiB: few collectives, each a point where every worker must
 * be running, which matters on oversubscribed cores). A pushpull without an updater
 * reduces a large key straight into its output, in chunks of LUAMX_DIST_HOT_BYTES
 * (1 MiB), each copied into the stored value while in the cache (the hot pushpull,
 * below). When every rank runs on one node (and LUAMX_DIST_SHM_BYTES is not 0), large
 * keys of every kind of push take neither: they are summed through a segment of memory
 * the ranks share (kv_dist_shm.c: no data in MPI messages, one wait on flags per slot of
 * LUAMX_DIST_SHM_BYTES), into the output and the stored value at once for a pushpull
 * without updater, else into the stored value or the merge buffer. A key is updated as
 * soon as its sum is in, before the next keys are reduced. In the plain push
 * the data all-reduces are OpenMPI's blocking ones (its non-blocking MPI_Iallreduce
 * measured at about half their speed here), behind a non-blocking control all-reduce,
 * because that is where a missing or different rank shows. The overlapped push (below;
 * LUAMX_DIST_OVERLAP=0 turns it off) starts non-blocking all-reduces during backward,
 * as gradients become final, and polls them with the deadline too.
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
#include "kv_dist_impl.h"

lmx_mpi_ops lmx_kvd_mpi;
static int mpi_loaded;
/* The node's shared segment (kv_dist_shm.h), one per process for every store: made by
 * the first push that needs it, grown (collectively) when a store needs more. */
static char *shm_seg;
static size_t shm_seg_bytes;

static double env_num(const char *name, double dflt) {
  const char *s = getenv(name);
  char *end;
  double v = s ? strtod(s, &end) : 0;
  return s && end != s && v > 0 ? v : dflt;
}

double lmx_kvd_now(void) {
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
  if (env && *env)
    snprintf(path, sizeof path, "%s", env);
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
  if (!fn || fn(&lmx_kvd_mpi) != 0 || lmx_kvd_mpi.abi != LMX_MPI_ABI_VERSION)
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
  lmx_kvd_mpi.mark_failed();
  unsigned char *alive = lmx_calloc((size_t)d->size, 1);
  char names[256] = "";
  size_t len = 0;
  int nlost = 0;
  if (alive && lmx_kvd_mpi.probe_alive(d->timeout < 10 ? d->timeout / 2 + 0.5 : 5.0, alive, d->err,
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
  return lmx_fail(
      LMX_ERR_IO,
      "kvstore '%s': rank %d: %s: not finished after %g s (LUAMX_DIST_TIMEOUT) although "
      "every rank answers: the workers are in different kvstore calls; stopping",
      kv->type, d->rank, what, d->timeout);
}

int lmx_kvd_wait_op(lmx_kvstore *kv, int req, double deadline, const char *what) {
  dist *d = kv->state;
  for (unsigned spin = 0;; spin++) {
    int r = lmx_kvd_mpi.test(req, d->err, (int)sizeof d->err);
    if (r == 1) return LMX_OK;
    if (r < 0) {
      d->broken = 1;
      lmx_kvd_mpi.mark_failed();
      return lmx_fail(LMX_ERR_IO, "kvstore '%s': rank %d: %s: %s", kv->type, d->rank, what, d->err);
    }
    if ((spin & 255) == 255) {
      if (lmx_kvd_now() > deadline) return lost(kv, what);
      if (spin > 20000) {
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
      } else
        sched_yield();
    }
  }
}

int lmx_kvd_started(lmx_kvstore *kv, int rc, const char *what) {
  dist *d = kv->state;
  if (rc == 0) return LMX_OK;
  d->broken = 1;
  lmx_kvd_mpi.mark_failed();
  return lmx_fail(LMX_ERR_IO, "kvstore '%s': rank %d: %s: %s", kv->type, d->rank, what, d->err);
}

/* ------------------------------------------------ the shared-memory path ---- */

static int shm_failed; /* the node could not map a segment: every rank uses MPI messages */

/* The wait poll of kv_dist_shm.c: answers pings; at the deadline names the lost ranks. */
static int shm_poll(void *ctx, const char *what, int expired) {
  if (expired) return lost(ctx, what);
  lmx_kvd_mpi.serve();
  return LMX_OK;
}

/* Whether key e's sum goes through the node's shared memory. The same on every rank once
 * the push's control has passed (it hashes LUAMX_DIST_SHM_BYTES when one does). */
int lmx_kvd_shm_key(const dist *d, const lmx_kv_entry *e) {
  return d->shm_on && !shm_failed && lmx_nd_bytes(e->merge) >= d->small_bytes &&
         lmx_kvd_shm_dtype(e->merge->dtype);
}

/* Maps (or grows) the segment; called after the push's control, so every rank is here
 * with the same size. Ranks agree on the outcome: if any failed, all use MPI messages. */
int lmx_kvd_shm_ready(lmx_kvstore *kv) {
  dist *d = kv->state;
  size_t need = lmx_kvd_shm_bytes(d->shm.nlocal, d->shm_bytes);
  if (!shm_seg || shm_seg_bytes < need) {
    void *base = NULL;
    int32_t bad = lmx_kvd_mpi.shm(need, &base, d->err, (int)sizeof d->err) != 0;
    if (!bad) lmx_kvd_shm_reset(base, d->shm.local);
    if (lmx_kvd_mpi.allreduce(NULL, &bad, 1, LMX_INT32, LMX_MPI_MAX, d->err, (int)sizeof d->err) !=
        0) {
      d->broken = 1;
      lmx_kvd_mpi.mark_failed();
      return lmx_fail(LMX_ERR_IO, "kvstore '%s': rank %d: shared memory: %s", kv->type, d->rank,
                      d->err);
    }
    shm_seg = bad ? NULL : base, shm_seg_bytes = bad ? 0 : need, shm_failed = bad != 0;
  }
  d->shm.seg = shm_seg;
  return LMX_OK;
}

uint64_t lmx_kvd_shm_sig(const dist *d, uint64_t sig) {
  return lmx_kvd_fnv(lmx_kvd_fnv(sig, "shm", 3), &d->shm_bytes, sizeof d->shm_bytes);
}

void lmx_kvd_shm_how(const dist *d, char *buf, size_t cap) {
  snprintf(buf, cap, "large keys through shared memory, LUAMX_DIST_SHM_BYTES=%zu", d->shm_bytes);
}

int lmx_kvd_usable(lmx_kvstore *kv) {
  dist *d = kv->state;
  if (!d->broken) return LMX_OK;
  return lmx_fail(LMX_ERR_STATE,
                  "kvstore '%s': rank %d: the store failed earlier (a worker was lost or the "
                  "workers disagreed); create a new job",
                  kv->type, d->rank);
}

/* ------------------------------------------------------ signatures ---- */

uint64_t lmx_kvd_fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ull;
  return h;
}

uint64_t lmx_kvd_key_sig(uint64_t h, const lmx_kv_entry *e) {
  h = lmx_kvd_fnv(h, e->key, strlen(e->key) + 1);
  h = lmx_kvd_fnv(h, &e->value->shape.ndim, sizeof e->value->shape.ndim);
  h = lmx_kvd_fnv(h, e->value->shape.dim,
                  sizeof e->value->shape.dim[0] * (size_t)e->value->shape.ndim);
  return lmx_kvd_fnv(h, &e->value->dtype, sizeof e->value->dtype);
}

static const char *kind_name(int k) {
  switch (k) {
    case K_INIT:
      return "init";
    case K_PUSH:
    case K_OPUSH:
      return "push";
    case K_BARRIER:
      return "barrier";
    case K_CHECK:
      return "check";
    default:
      return "optimizer states";
  }
}

/* Text of what this rank is doing, for the disagreement message. */
static void describe(char *buf, size_t cap, int kind, int n, lmx_kv_entry *const *e,
                     const char *what, int64_t value) {
  size_t len = (size_t)snprintf(buf, cap, "%s", kind_name(kind));
  if (kind == K_CHECK) snprintf(buf + len, cap - len, " '%s' = %lld", what, (long long)value);
  for (int k = 0; k < n && len < cap - 1; k++) {
    char s[LMX_SHAPE_STRCAP];
    len +=
        (size_t)snprintf(buf + len, cap - len, "%s'%s' %s %s", k ? ", " : " of key ", e[k]->key,
                         lmx_shape_str(&e[k]->value->shape, s), lmx_dtype_str(e[k]->value->dtype));
    len = len < cap ? len : cap - 1;
  }
  if (kind == K_OPUSH && len < cap - 1)
    snprintf(buf + len, cap - len, " (overlapped with backward%s%s)", what ? "; " : "",
             what ? what : "");
  if (kind == K_PUSH && what && len < cap - 1) snprintf(buf + len, cap - len, " (%s)", what);
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
  int rc = lmx_kvd_started(
      kv, lmx_kvd_mpi.iallgather(my, DESC, all, &req, d->err, (int)sizeof d->err), "report");
  if (rc == LMX_OK) rc = lmx_kvd_wait_op(kv, req, deadline, "report of a disagreement");
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

int lmx_kvd_control_start(lmx_kvstore *kv, ctl *c, int kind, uint64_t sig) {
  dist *d = kv->state;
  c->kind = kind, c->s = (int64_t)(sig >> 2);
  c->v[0] = kind, c->v[1] = -kind, c->v[2] = c->s, c->v[3] = -c->s;
  c->deadline = lmx_kvd_now() + d->timeout;
  return lmx_kvd_started(kv,
                         lmx_kvd_mpi.iallreduce(NULL, c->v, 4, LMX_INT64, LMX_MPI_MAX, &c->req,
                                                d->err, (int)sizeof d->err),
                         kind_name(kind));
}

int lmx_kvd_control_end(lmx_kvstore *kv, ctl *c, int n, lmx_kv_entry *const *e, const char *what,
                        int64_t value) {
  char w[96];
  snprintf(w, sizeof w, "%s%s%s", kind_name(c->kind), n ? " of key " : "", n ? e[0]->key : "");
  LMX_TRY(lmx_kvd_wait_op(kv, c->req, c->deadline, w));
  if (c->v[0] == c->kind && -c->v[1] == c->kind && c->v[2] == c->s && -c->v[3] == c->s)
    return LMX_OK;
  char mine[DESC];
  describe(mine, sizeof mine, c->kind, n, e, what, value);
  return disagree(kv, mine, c->deadline);
}

static int control(lmx_kvstore *kv, int kind, uint64_t sig, int n, lmx_kv_entry *const *e,
                   const char *what, int64_t value) {
  ctl c;
  LMX_TRY(lmx_kvd_control_start(kv, &c, kind, sig));
  return lmx_kvd_control_end(kv, &c, n, e, what, value);
}

/* ---------------------------------------------------------- the verbs ---- */

static int d_open(lmx_kvstore *kv) {
  LMX_TRY(load_plugin(kv->type));
  dist *d = lmx_calloc(1, sizeof *d);
  if (!d) return lmx_fail_nomem("a dist kvstore", sizeof *d);
  if (lmx_kvd_mpi.init(&d->rank, &d->size, d->err, (int)sizeof d->err) != 0) {
    int rc = lmx_fail(LMX_ERR_IO, "kvstore '%s': %s", kv->type, d->err);
    lmx_free(d);
    return rc;
  }
  d->timeout = env_num("LUAMX_DIST_TIMEOUT", 120);
  d->chunk_bytes = (size_t)env_num("LUAMX_DIST_CHUNK_BYTES", 16 << 20);
  d->fuse_bytes = (size_t)env_num("LUAMX_DIST_FUSION_BYTES", 4 << 20);
  d->small_bytes = (size_t)env_num("LUAMX_DIST_SMALL_BYTES", 1 << 20);
  const char *hot = getenv("LUAMX_DIST_HOT_BYTES");
  d->hot_bytes =
      hot && strcmp(hot, "0") == 0 ? 0 : (size_t)env_num("LUAMX_DIST_HOT_BYTES", 1 << 20);
  const char *ov = getenv("LUAMX_DIST_OVERLAP");
  d->overlap =
      !(ov && (strcmp(ov, "0") == 0 || strcmp(ov, "off") == 0 || strcmp(ov, "false") == 0));
  if (d->small_bytes > d->chunk_bytes) d->small_bytes = d->chunk_bytes;
  if (d->fuse_bytes < d->small_bytes) d->fuse_bytes = d->small_bytes;
  if (d->hot_bytes > d->chunk_bytes) d->hot_bytes = d->chunk_bytes;
  const char *shm = getenv("LUAMX_DIST_SHM_BYTES");
  d->shm_bytes =
      shm && strcmp(shm, "0") == 0 ? 0 : (size_t)env_num("LUAMX_DIST_SHM_BYTES", 256 << 10);
  d->shm_bytes = (d->shm_bytes + 63) & ~(size_t)63;
  int local = 0, nlocal = 1;
  if (d->size > 1) lmx_kvd_mpi.node(&local, &nlocal);
  d->shm_on = d->shm_bytes > 0 && d->size > 1 && nlocal == d->size && nlocal <= 256;
  d->shm = (lmx_kvd_shm){.slot = d->shm_bytes,
                         .local = local,
                         .nlocal = nlocal,
                         .timeout = d->timeout,
                         /* measured (bench/dist/ab.sh, Zen 5, 2 ranks): faster from 16
                            MB on, slower at 4 MB, where the value stays in the cache */
                         .stream_bytes = 8 << 20,
                         .poll = shm_poll,
                         .ctx = kv};
  kv->state = d;
  return LMX_OK;
}

static void d_close(lmx_kvstore *kv) {
  dist *d = kv->state;
  if (!d) return;
  lmx_kvd_ov_free(d->ov);
  lmx_free(d->fuse);
  lmx_free(d);
}

static int d_init(lmx_kvstore *kv, int n, lmx_kv_entry *const *e) {
  dist *d = kv->state;
  LMX_TRY(lmx_kvd_usable(kv));
  LMX_TRY(lmx_kvd_ov_drain(kv));
  if (d->size == 1) return LMX_OK;
  uint64_t sig = 1469598103934665603ull;
  for (int k = 0; k < n; k++) sig = lmx_kvd_key_sig(sig, e[k]);
  LMX_TRY(control(kv, K_INIT, sig, n, e, NULL, 0));
  double deadline = lmx_kvd_now() + d->timeout;
  for (int k = 0; k < n; k++) {
    char *p = lmx_nd_ptr(e[k]->value);
    size_t bytes = lmx_nd_bytes(e[k]->value);
    char w[96];
    snprintf(w, sizeof w, "init (broadcast) of key '%s'", e[k]->key);
    for (size_t at = 0; at < bytes; at += d->chunk_bytes) {
      size_t len = bytes - at < d->chunk_bytes ? bytes - at : d->chunk_bytes;
      int req;
      LMX_TRY(lmx_kvd_started(
          kv, lmx_kvd_mpi.ibcast(p + at, (int)len, 0, &req, d->err, (int)sizeof d->err), w));
      LMX_TRY(lmx_kvd_wait_op(kv, req, deadline, w));
    }
  }
  return LMX_OK;
}

int lmx_kvd_fused_bytes(const dist *d, int n, lmx_kv_entry *const *e, size_t *total) {
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
  if (lmx_kvd_mpi.allreduce(src, dst, (int)count, dtype, LMX_MPI_SUM, d->err, (int)sizeof d->err) ==
      0)
    return LMX_OK;
  d->broken = 1;
  lmx_kvd_mpi.mark_failed();
  return lmx_fail(LMX_ERR_IO, "kvstore '%s': rank %d: push of key '%s': %s", kv->type, d->rank, key,
                  d->err);
}

/* A single value of the key's shape and dtype on the CPU: reduced straight from it. */
int lmx_kvd_direct(const lmx_kv_entry *e, lmx_ndarray *const *v, int nv) {
  return nv == 1 && lmx_nd_is_cpu(v[0]) && v[0]->dtype == e->merge->dtype &&
         lmx_shape_equal(&v[0]->shape, &e->merge->shape);
}

/* The hot pushpull (LUAMX_DIST_HOT_BYTES, default 1 MiB; 0 turns it off). A pushpull
 * without an updater, of one CPU array per key of the key's shape and dtype, into one
 * output per key: each large key whose output is a CPU array of its dtype (the pushed
 * array itself, or memory apart from it and from the store) is reduced straight into the
 * output (in place when it is the pushed array), in chunks of that size, and each reduced
 * chunk is copied into the stored value while it is still in the cache; its pull is then
 * done. The plain path (reduce into the stored value, then the pull's copy) moves the data
 * through memory once more. Elementwise the same sums, so the same results (bit for bit
 * on 2 workers; on more, as every chunking, the order MPI's algorithm for the chunk's
 * size adds in). Its chunks are other all-reduces than the plain path's, so which keys
 * take it (and LUAMX_DIST_HOT_BYTES) is part of the push's control signature: ranks
 * that differ disagree with a message. */
static int apart(const lmx_ndarray *a, const lmx_ndarray *b) {
  const char *pa = lmx_nd_ptr(a), *pb = lmx_nd_ptr(b);
  return pa + lmx_nd_bytes(a) <= pb || pb + lmx_nd_bytes(b) <= pa;
}

/* Whether key k of a hot call (pushed values[k], pulled into outs[k]) takes the hot
 * path: large, not given twice in the call, an output that is the pushed array or apart
 * from it, from the store and from every other array of the call (the plain order, all reads of the
 * push before the pull's writes, must not show). The same before and after the push: the stored
 * value of such a key is not swapped. */
static int hot_key(const dist *d, int n, lmx_kv_entry *const *e, lmx_ndarray *const *values,
                   lmx_ndarray *const *outs, int k) {
  const lmx_ndarray *v = values[k], *o = outs[k];
  if (lmx_nd_bytes(e[k]->merge) < d->small_bytes || !lmx_nd_is_cpu(o) ||
      o->dtype != e[k]->merge->dtype || !(lmx_nd_ptr(o) == lmx_nd_ptr(v) || apart(o, v)) ||
      !apart(o, e[k]->value) || !apart(v, e[k]->value))
    return 0;
  for (int j = 0; j < n;
       j++) /* a key given twice: the plain order (both outputs get the last sum) */
    if (j != k &&
        (e[j] == e[k] || !apart(o, values[j]) || !(lmx_nd_is_cpu(outs[j]) ? apart(o, outs[j]) : 1)))
      return 0;
  return 1;
}

/* Whether the call may take the hot path: nothing in its push can fail but MPI (after
 * which the store is broken) and its pull cannot fail, so that writing outputs during
 * the push changes no outcome. */
static int hot_call(const dist *d, const lmx_kvstore *kv, int n, lmx_kv_entry *const *e,
                    lmx_ndarray *const *values, int nv, lmx_ndarray *const *outs, int no) {
  if (!d->hot_bytes || kv->updater || d->size < 2 || nv != 1 || no != 1) return 0;
  for (int k = 0; k < n; k++)
    if (!lmx_kvd_direct(e[k], values + k, 1) ||
        !lmx_shape_equal(&outs[k]->shape, &e[k]->value->shape))
      return 0;
  return 1;
}

/* Key e's hot all-reduce: src into out (in place when the same), chunk by chunk, each
 * chunk then copied into the stored value. */
static int reduce_hot(lmx_kvstore *kv, lmx_kv_entry *e, const char *src, char *out) {
  dist *d = kv->state;
  int dt = e->merge->dtype;
  size_t esz = (size_t)lmx_dtype_size(dt);
  char *val = lmx_nd_ptr(e->value);
  int64_t per = (int64_t)(d->hot_bytes / esz), cnt = lmx_nd_size(e->merge);
  if (per < 1) per = 1;
  for (int64_t c = 0; c < cnt; c += per) {
    size_t off = (size_t)c * esz, len = (size_t)(cnt - c < per ? cnt - c : per);
    LMX_TRY(reduce(kv, src == out ? NULL : src + off, out + off, (int64_t)len, dt, e->key));
    memcpy(val + off, out + off, len * esz);
  }
  return LMX_OK;
}

/* The push; with outs (a hot call) the hot keys are pulled too, and *pulled says so (0
 * when the overlapped session's push ran instead). */
static int push_impl(lmx_kvstore *kv, int n, lmx_kv_entry *const *e, lmx_ndarray *const *values,
                     int nv, lmx_ndarray *const *outs, int *pulled) {
  dist *d = kv->state;
  *pulled = 0;
  LMX_TRY(lmx_kvd_usable(kv));
  if (d->size == 1) {
    for (int k = 0; k < n; k++) {
      LMX_TRY(lmx_kvf_merge(kv, e[k], values + (size_t)k * (size_t)nv, nv));
      LMX_TRY(lmx_kvf_apply(kv, e[k]));
    }
    return LMX_OK;
  }
  int used;
  LMX_TRY(lmx_kvd_ov_push(kv, n, e, values, nv, &used));
  if (used) return LMX_OK;
  *pulled = outs != NULL;
  uint64_t sig = 1469598103934665603ull;
  int hot_chunked = 0, any_shm = 0;
  for (int k = 0; k < n; k++) {
    sig = lmx_kvd_key_sig(sig, e[k]);
    if (lmx_kvd_shm_key(d, e[k])) { /* the same collectives whatever the output */
      any_shm = 1;
      continue;
    }
    /* A hot key of more than one hot chunk makes other all-reduces than the plain path's:
     * every rank must do the same (a rank with another LUAMX_DIST_HOT_BYTES, a plain push,
     * or an output that aliases is a disagreement with a message, not mismatched MPI
     * calls). */
    if (outs && lmx_nd_bytes(e[k]->merge) > d->hot_bytes && hot_key(d, n, e, values, outs, k)) {
      sig = lmx_kvd_fnv(sig, &k, sizeof k);
      hot_chunked = 1;
    }
  }
  char how[192] = "";
  int hl = 0;
  if (hot_chunked) {
    sig = lmx_kvd_fnv(sig, &d->hot_bytes, sizeof d->hot_bytes);
    hl = snprintf(how, sizeof how, "large keys reduced into the outputs, LUAMX_DIST_HOT_BYTES=%zu",
                  d->hot_bytes);
  }
  if (any_shm) {
    sig = lmx_kvd_shm_sig(d, sig);
    if (hl) hl += snprintf(how + hl, sizeof how - (size_t)hl, "; ");
    lmx_kvd_shm_how(d, how + hl, sizeof how - (size_t)hl);
  }
  LMX_TRY(control(kv, K_PUSH, sig, n, e, hot_chunked || any_shm ? how : NULL, 0));
  if (any_shm) LMX_TRY(lmx_kvd_shm_ready(kv));
  /* Every rank is now in this push with the same keys: the data all-reduces are the
   * blocking ones (a rank that dies inside them is mpirun's to report). */
  size_t need;
  lmx_kvd_fused_bytes(d, n, e, &need);
  if (need > d->fuse_cap) {
    char *fb = lmx_realloc(d->fuse, need);
    if (!fb) return lmx_fail_nomem("the kvstore's fusion buffer", need);
    d->fuse = fb, d->fuse_cap = need;
  }
  for (int k = 0; k < n;) {
    lmx_ndarray *const *v = values + (size_t)k * (size_t)nv;
    lmx_ndarray *m = e[k]->merge;
    int dt = m->dtype, esz = lmx_dtype_size(dt);
    if (outs && hot_key(d, n, e, values, outs, k)) {
      if (lmx_kvd_shm_key(d, e[k]))
        LMX_TRY(lmx_kvd_shm_allreduce(&d->shm, lmx_nd_ptr(v[0]), lmx_nd_ptr(outs[k]),
                                      lmx_nd_ptr(e[k]->value), lmx_nd_size(m), dt, e[k]->key));
      else
        LMX_TRY(reduce_hot(kv, e[k], lmx_nd_ptr(v[0]), lmx_nd_ptr(outs[k])));
      k++;
      continue;
    }
    if (lmx_nd_bytes(m) >= d->small_bytes) { /* large: straight from the value, in chunks */
      int from_value = lmx_kvd_direct(e[k], v, nv);
      /* Without an updater the sum is the stored value: reduced straight into it (the
       * blocking all-reduce: nothing reads it meanwhile), so that merge and value do not
       * alternate and the push touches one buffer less (input, store, output). */
      int into_value = from_value && !kv->updater;
      if (!from_value) LMX_TRY(lmx_kvf_merge(kv, e[k], v, nv));
      const char *src = from_value ? lmx_nd_ptr(v[0]) : NULL;
      char *dst = lmx_nd_ptr(into_value ? e[k]->value : m);
      int64_t per = (int64_t)(d->chunk_bytes / (size_t)esz), cnt = lmx_nd_size(m);
      if (lmx_kvd_shm_key(d, e[k]))
        LMX_TRY(lmx_kvd_shm_allreduce(&d->shm, src ? src : dst, dst, NULL, cnt, dt, e[k]->key));
      else
        for (int64_t c = 0; c < cnt; c += per) {
          size_t off = (size_t)c * (size_t)esz;
          LMX_TRY(reduce(kv, src ? src + off : NULL, dst + off, cnt - c < per ? cnt - c : per, dt,
                         e[k]->key));
        }
      if (!into_value) LMX_TRY(lmx_kvf_apply(kv, e[k]));
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
      if (lmx_kvd_direct(e[k], vk, nv))
        memcpy(d->fuse + at, lmx_nd_ptr(vk[0]), kb);
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

static int d_push(lmx_kvstore *kv, int n, lmx_kv_entry *const *e, lmx_ndarray *const *values,
                  int nv) {
  int pulled;
  return push_impl(kv, n, e, values, nv, NULL, &pulled);
}

static int d_pushpull(lmx_kvstore *kv, int n, lmx_kv_entry *const *e, lmx_ndarray *const *values,
                      int nv, lmx_ndarray *const *outs, int no) {
  dist *d = kv->state;
  int hot = hot_call(d, kv, n, e, values, nv, outs, no), pulled;
  LMX_TRY(push_impl(kv, n, e, values, nv, hot ? outs : NULL, &pulled));
  if (!pulled) return lmx_kvf_pull(kv, n, e, outs, no);
  for (int k = 0; k < n; k++)
    if (!hot_key(d, n, e, values, outs, k)) LMX_TRY(lmx_kvf_pull(kv, 1, e + k, outs + k, 1));
  return LMX_OK;
}

static int d_barrier(lmx_kvstore *kv) {
  dist *d = kv->state;
  LMX_TRY(lmx_kvd_usable(kv));
  LMX_TRY(lmx_kvd_ov_drain(kv));
  return d->size == 1 ? LMX_OK : control(kv, K_BARRIER, 0, 0, NULL, NULL, 0);
}

static int d_rank(const lmx_kvstore *kv) {
  return ((const dist *)kv->state)->rank;
}
static int d_workers(const lmx_kvstore *kv) {
  return ((const dist *)kv->state)->size;
}

static int d_check(lmx_kvstore *kv, const char *what, int64_t value) {
  dist *d = kv->state;
  LMX_TRY(lmx_kvd_usable(kv));
  LMX_TRY(lmx_kvd_ov_drain(kv));
  if (d->size == 1) return LMX_OK;
  uint64_t sig =
      lmx_kvd_fnv(lmx_kvd_fnv(1469598103934665603ull, what, strlen(what)), &value, sizeof value);
  return control(kv, K_CHECK, sig, 0, NULL, what, value);
}

/* The status of `fn` on the writing rank(s), shared by all. */
static int states(lmx_kvstore *kv, lmx_kv_states_fn fn, void *user, int writer_only) {
  dist *d = kv->state;
  LMX_TRY(lmx_kvd_usable(kv));
  LMX_TRY(lmx_kvd_ov_drain(kv));
  int64_t st = (!writer_only || d->rank == 0) ? (fn(user) != 0) : 0;
  if (d->size > 1) {
    LMX_TRY(control(kv, K_STATES, (uint64_t)writer_only, 0, NULL, NULL, 0));
    int64_t v[2] = {st ? d->rank + 1 : 0, 0};
    int req;
    LMX_TRY(lmx_kvd_started(kv,
                            lmx_kvd_mpi.iallreduce(NULL, v, 2, LMX_INT64, LMX_MPI_MAX, &req, d->err,
                                                   (int)sizeof d->err),
                            "optimizer states"));
    LMX_TRY(lmx_kvd_wait_op(kv, req, lmx_kvd_now() + d->timeout, "optimizer states"));
    if (v[0])
      return lmx_fail(LMX_ERR_IO, "kvstore '%s': rank %d failed to %s the optimizer states",
                      kv->type, (int)v[0] - 1, writer_only ? "save" : "load");
  } else if (st)
    return lmx_fail(LMX_ERR_IO, "kvstore '%s': the optimizer-state callback failed", kv->type);
  return LMX_OK;
}

static int d_save(lmx_kvstore *kv, lmx_kv_states_fn fn, void *user) {
  return states(kv, fn, user, 1);
}
static int d_load(lmx_kvstore *kv, lmx_kv_states_fn fn, void *user) {
  return states(kv, fn, user, 0);
}

const lmx_kv_backend lmx_kv_dist = {
    .name = "mpi",
    .open = d_open,
    .close = d_close,
    .init = d_init,
    .push = d_push,
    .pull = lmx_kvf_pull,
    .pushpull = d_pushpull,
    .barrier = d_barrier,
    .rank = d_rank,
    .num_workers = d_workers,
    .check = d_check,
    .save_states = d_save,
    .load_states = d_load,
    .overlap_on = lmx_kvd_overlap_on,
    .ov_begin = lmx_kvd_ov_begin,
    .ov_ready = lmx_kvd_ov_ready,
};
