/* kvstore.h — the kvstore interface: one front (kvstore.c) and one backend per engine.
 *
 * A store is a front struct (keys, stored values, merge buffers, updater) plus a backend
 * chosen by type name from the table in kvstore.c. The front owns everything common to
 * every engine: key lookup, argument checks, the stored copy made at init and the merge
 * buffer each key sums into. A backend supplies the verbs, each over a LIST of keys so
 * that an engine can fuse them: init (make every worker start from the same values),
 * push (sum the values over devices and workers, then update or store), pull (hand the
 * stored values out), pushpull, barrier, rank / num_workers, a consistency check of an
 * integer all workers must agree on, and the optimizer-state save/load hooks (who writes
 * the file, who reads it).
 *
 * Adding a backend (kv_nccl.c is the latest): write src/exec/kv_<name>.c defining
 * `const lmx_kv_backend lmx_kv_<name>` with the verbs below (reuse lmx_kvf_* helpers of
 * the front where the engine has nothing better, as kv_local.c does), declare it here,
 * and add one line {"<type>", &lmx_kv_<name>} to the table in kvstore.c. Nothing else in
 * the engine, the modules or Lua changes: they talk to the verbs only.
 *
 * The sum of n arrays lives in exactly one function, lmx_kv_sum_into: the local backend,
 * the dist backend's local step and the data-parallel group (group.c) all call it. CPU
 * arrays are summed by its own loop (the order the CPU tests pin); arrays on one other
 * device by that device's sum-of-n primitive; arrays on several devices by copying each
 * foreign one onto dst's device (through the host or peer copies) and adding it there.
 */
#ifndef LMX_EXEC_KVSTORE_H
#define LMX_EXEC_KVSTORE_H

#include "training.h"

typedef struct {
  char *key;
  lmx_ndarray *value, *merge; /* CPU arrays made at init */
} lmx_kv_entry;

typedef struct lmx_kv_backend lmx_kv_backend;

struct lmx_kvstore {
  const lmx_kv_backend *be;
  char type[24];
  lmx_kv_entry *e;
  int n, cap;
  lmx_kv_updater_fn updater;
  void *user;
  void *state; /* the backend's own */
};

/* Verbs. Keys come as n entries (found and checked by the front); values/outs as nv
 * arrays per key, key k's at [k * nv, (k + 1) * nv). Every verb returns a status with a
 * message naming the store type and the key. */
struct lmx_kv_backend {
  const char *name; /* engine name in messages: "local", "mpi" */
  int (*open)(lmx_kvstore *kv);
  void (*close)(lmx_kvstore *kv);
  int (*init)(lmx_kvstore *kv, int n, lmx_kv_entry *const *e);
  int (*push)(lmx_kvstore *kv, int n, lmx_kv_entry *const *e, lmx_ndarray *const *values, int nv);
  int (*pull)(lmx_kvstore *kv, int n, lmx_kv_entry *const *e, lmx_ndarray *const *outs, int no);
  /* Optional (NULL: push, then pull): push and pull in one verb, for an engine that can
   * fill the outputs while it reduces (kv_dist.c). Same results and errors as the two. */
  int (*pushpull)(lmx_kvstore *kv, int n, lmx_kv_entry *const *e, lmx_ndarray *const *values,
                  int nv, lmx_ndarray *const *outs, int no);
  int (*barrier)(lmx_kvstore *kv);
  int (*rank)(const lmx_kvstore *kv);
  int (*num_workers)(const lmx_kvstore *kv);
  /* All workers call with the same what/value; an error names the ranks that differ. */
  int (*check)(lmx_kvstore *kv, const char *what, int64_t value);
  /* Optimizer states: save calls fn on the workers that write (the status is shared,
   * so either every worker succeeds or every worker fails); load calls fn everywhere. */
  int (*save_states)(lmx_kvstore *kv, lmx_kv_states_fn fn, void *user);
  int (*load_states)(lmx_kvstore *kv, lmx_kv_states_fn fn, void *user);
  /* The overlapped push (optional, NULL where the engine has none; kv_dist_overlap.c): whether
   * it is on; begin(n keys by entry index in push order, one gradient array each, the
   * push positions in the order backward makes them final); ready(positions now
   * final). The next push of those keys and arrays completes it. */
  int (*overlap_on)(const lmx_kvstore *kv);
  int (*ov_begin)(lmx_kvstore *kv, int n, const int *idx, lmx_ndarray *const *values,
                  const int *order);
  int (*ov_ready)(lmx_kvstore *kv, int n, const int *pos);
};

extern const lmx_kv_backend lmx_kv_local;
extern const lmx_kv_backend lmx_kv_dist;
#ifdef LUAMX_WITH_CUDA
extern const lmx_kv_backend lmx_kv_nccl; /* kv_nccl.c: GPUs of one process through NCCL */
#endif

/* dst = sum of the n arrays src[0..n) (dst may be one of them): CPU arrays of one shape
 * and one dtype (any dtype; float16 summed in float32); allocates nothing. THE sum. */
int lmx_kv_sum_into(lmx_ndarray *dst, lmx_ndarray *const *src, int n);

/* Front helpers a backend may reuse: the local step of a push (merge = sum of the key's
 * nv values) and the update-or-store after it, and the pull copy. */
int lmx_kvf_merge(lmx_kvstore *kv, lmx_kv_entry *e, lmx_ndarray *const *values, int nv);
int lmx_kvf_apply(lmx_kvstore *kv, lmx_kv_entry *e);
int lmx_kvf_pull(lmx_kvstore *kv, int n, lmx_kv_entry *const *e, lmx_ndarray *const *outs, int no);

#endif
