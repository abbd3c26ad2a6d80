/* training.h — internals shared by the training helpers of src/exec:
 *
 *   bucket.c   lmx_train_bind (bind sharing parameters, gradients, aux states by name
 *              and the memory pool of a base executor) and the bucketing pool
 *   group.c    the data-parallel executor group (slices, per-context workers, merge,
 *              gradient sum); group_overlap.c its hook for the dist kvstore's overlap
 *   kvstore.c  the kvstore front and lmx_kv_sum_into (dst = sum of arrays); backends
 *              kv_local.c, kv_dist.c (kvstore.h)
 *
 * Threads: only group.c starts threads (one persistent worker per context of a group
 * with two or more contexts). Every callback into the host (monitor, kvstore updater)
 * runs on the thread that called the API function, during that call.
 */
#ifndef LMX_EXEC_TRAINING_H
#define LMX_EXEC_TRAINING_H

#include <pthread.h>

#include "../core/relay.h"
#include "exec.h"

/* A bind that shares with a base executor (MXNet's _bind_exec / simple_bind with
 * shared_arg_names and shared_exec). */
typedef struct {
  lmx_symbol *sym;
  int dev_type, dev_id;
  int ninputs; /* data / label inputs: shape given, never shared */
  const char *const *input_names;
  const lmx_shape *input_shapes;
  const int *input_dtypes; /* may be NULL: float32 unless __dtype__ */
  int nreqs;               /* explicit requests by argument name */
  const char *const *req_names;
  const int *reqs;
  int default_req;    /* non-input arguments not found in base (or with no base) */
  lmx_executor *base; /* NULL: share nothing */
  int nshare;         /* > 0: share only these argument names from base; 0: any name; < 0: none */
  const char *const *share_names;
  int share_inputs; /* 1: an input whose array of the same name and dtype in input_base
                       (NULL: base) is large enough becomes a view of it (MXNet's
                       shared_data_arrays) */
  lmx_executor *input_base;
  const char *what; /* context for messages: "bucket key 7", "context cpu(1)" */
} lmx_tbind;

/* Binds cfg->sym simple_bind style. Rules, per argument of sym:
 *  - an input: shape from cfg, request from cfg's list (else null), own array, or with
 *    share_inputs a view of base's array (and gradient) of that name when it is large
 *    enough and of the same dtype;
 *  - an argument that base has under the same name: base's array (and, unless the
 *    request is null, base's gradient array), request from cfg's list, else base's;
 *  - any other argument: own zero array, request from cfg's list, else default_req.
 * Aux states that base has under the same name are base's arrays. Intermediates come
 * from base's pool (which grows only when they do not fit). out: one reference.
 * Errors carry cfg->what in front. */
int lmx_train_bind(const lmx_tbind *cfg, lmx_executor **out);

/* The sum of n arrays is lmx_kv_sum_into (kvstore.h), the one reduction everything uses. */

/* MXNet's _split_input_slice: begin/end (n each) of the slices of `batch` rows. */
int lmx_train_split(int64_t batch, int n, const double *workload, int64_t *begin, int64_t *end);

/* ---- bucket.c: the bucketing pool (the API's lmx_bucketing) ---- */
typedef struct lmx_bucketing lmx_bucketing;
int lmx_bkt_create(int64_t default_key, lmx_executor *def, lmx_bucketing **out);
void lmx_bkt_destroy(lmx_bucketing *bp);
/* Borrowed executor of a bound key (LMX_ERR_NOTFOUND otherwise); allocates nothing. */
int lmx_bkt_find(const lmx_bucketing *bp, int64_t key, lmx_executor **out);
/* Binds a new key against the default bucket's executor; out is borrowed from bp. */
int lmx_bkt_add(lmx_bucketing *bp, int64_t key, lmx_symbol *sym, int n, const char *const *names,
                const lmx_shape *shapes, lmx_executor **out);
int lmx_bkt_keys(const lmx_bucketing *bp, int cap, int64_t *keys, int *n);
int lmx_bkt_mem(const lmx_bucketing *bp, int64_t *pool, int64_t *arrays);

/* ---- group.c: the data-parallel executor group (the API's lmx_group) ---- */
typedef struct lmx_group lmx_group;
typedef void (*lmx_group_monitor_fn)(int ctx, const char *name, lmx_ndarray *arr, void *user);

struct lmx_group {
  lmx_refcount rc; /* the host's reference, and one per forward / backward in progress */
  lmx_symbol *sym;
  int n; /* contexts */
  int *dev_type, *dev_id;
  double *workload;
  /* configuration: inputs (full-batch shapes) and parameters */
  int nin, nparam, cap_in, cap_param;
  char **in_name, **param_name;
  lmx_shape *in_shape;
  int *in_axis, *in_dtype, *in_req, *param_req;
  /* bound state */
  int bound;
  int64_t batch, *begin, *end;
  lmx_executor **exec, **orig; /* orig: the first executors (reshape binds against them) */
  int *in_arg;                 /* argument index of each input */
  int nheads;
  lmx_ndarray **merged, **in_grad; /* per output / input: the merged (concatenated) array */
  int64_t *out_begin;              /* [h * n + i]: first row of context i in output h */
  lmx_ndarray **sum_src;           /* n scratch pointers */
  /* workers */
  struct lmx_group_worker *w;
  int threads, quit, pending;
  unsigned gen;
  pthread_mutex_t mu;
  pthread_cond_t go, fin;
  lmx_relay relay; /* workers' calls into host callbacks, run by the caller (relay.h) */
  /* the step being run */
  int job, job_train, job_n;
  int *job_in;
  lmx_ndarray **job_src;
  /* monitor */
  lmx_group_monitor_fn mon;
  void *mon_user;
  int mon_all;
  /* the dist kvstore's overlapped push (lmx_grp_set_overlap): keys in push order */
  lmx_kvstore *ov_kv;
  int ov_n, ov_armed;
  char **ov_names;
  int *ov_key, *ov_order, *ov_pos, *ov_tmp; /* ov_pos: per argument of exec[0] */
  lmx_executor *ov_exec;                    /* the hooked executor (one reference) */
  lmx_ndarray **ov_val;
};

int lmx_grp_create(lmx_symbol *sym, int n, const int *dev_type, const int *dev_id,
                   const double *workload, lmx_group **out);
void lmx_grp_destroy(lmx_group *g); /* whatever the count (a failed create) */
/* A group lives until its last reference goes: forward and backward hold one while they
 * run, so a callback (monitor, custom operator) that frees the group frees it after the
 * step, never under it. */
void lmx_grp_retain(lmx_group *g);
void lmx_grp_release(lmx_group *g);
int lmx_grp_add_input(lmx_group *g, const char *name, const lmx_shape *shape, int axis, int dtype,
                      int req);
int lmx_grp_add_param(lmx_group *g, const char *name, int req);
int lmx_grp_bind(lmx_group *g, lmx_group *shared);
int lmx_grp_reshape(lmx_group *g, int n, const char *const *names, const lmx_shape *shapes);
int lmx_grp_check_bound(const lmx_group *g);
int lmx_grp_start_workers(lmx_group *g);
void lmx_grp_stop_workers(lmx_group *g, int started);
int lmx_grp_load(lmx_group *g, int n, const char *const *names, lmx_ndarray *const *src);
int lmx_grp_forward(lmx_group *g, int n, const char *const *names, lmx_ndarray *const *src,
                    int is_train);
int lmx_grp_backward(lmx_group *g, int n, lmx_ndarray *const *head_grads);
int lmx_grp_sum_grads(lmx_group *g);
int lmx_grp_output(lmx_group *g, int h, int ctx, lmx_ndarray **out);
int lmx_grp_input_grad(lmx_group *g, int in, int ctx, lmx_ndarray **out);
int lmx_grp_set_monitor(lmx_group *g, lmx_group_monitor_fn fn, void *user, int all);
/* Overlap: backward starts kv's overlapped push of the n parameters `names` (the keys
 * and the order of the caller's next pushpull, one gradient each). *armed: 1 when it
 * applies (kv offers it, one context, every one of them with a gradient, req write);
 * kv NULL turns it off. The caller keeps kv alive while set. */
int lmx_grp_set_overlap(lmx_group *g, lmx_kvstore *kv, int n, const char *const *names, int *armed);
/* group_overlap.c for group.c: the hook and lists for the current executors (at each
 * install), and everything released (destroy). */
int lmx_grp_ov_derive(lmx_group *g);
/* group.c: the index of argument `name` in x (-1: none), for group_overlap.c too. */
int lmx_grp_arg_index(const lmx_executor *x, const char *name);
void lmx_grp_ov_release(lmx_group *g);

/* ---- kvstore.c (the front; kvstore.h has the backend interface) ---- */
typedef struct lmx_kvstore lmx_kvstore;
typedef int (*lmx_kv_updater_fn)(const char *key, lmx_ndarray *grad, lmx_ndarray *weight,
                                 void *user);
typedef int (*lmx_kv_states_fn)(void *user);
int lmx_kv_create(const char *type, lmx_kvstore **out);
void lmx_kv_destroy(lmx_kvstore *kv);
const char *lmx_kv_type(const lmx_kvstore *kv);
int lmx_kv_rank(const lmx_kvstore *kv);
int lmx_kv_num_workers(const lmx_kvstore *kv);
int lmx_kv_barrier(lmx_kvstore *kv);
int lmx_kv_check(lmx_kvstore *kv, const char *what, int64_t value);
int lmx_kv_save_states(lmx_kvstore *kv, lmx_kv_states_fn fn, void *user);
int lmx_kv_load_states(lmx_kvstore *kv, lmx_kv_states_fn fn, void *user);
void lmx_kv_set_updater(lmx_kvstore *kv, lmx_kv_updater_fn fn, void *user);
int lmx_kv_init(lmx_kvstore *kv, const char *key, const lmx_ndarray *value);
int lmx_kv_push(lmx_kvstore *kv, const char *key, lmx_ndarray *const *values, int n);
int lmx_kv_pull(lmx_kvstore *kv, const char *key, lmx_ndarray *const *outs, int n);
/* n keys; values: nv per key (NULL: pull only), outs: no per key (NULL or 0: push only). */
int lmx_kv_pushpull(lmx_kvstore *kv, int n, const char *const *keys, lmx_ndarray *const *values,
                    int nv, lmx_ndarray *const *outs, int no);
/* The overlapped push (kvstore.h, kv_dist_overlap.c): on when the store's engine offers it and
 * it is not switched off (LUAMX_DIST_OVERLAP=0); key index of a key (-1: unknown);
 * begin / ready as the backend verbs (no-ops where the store has none). */
int lmx_kv_overlap_on(const lmx_kvstore *kv);
int lmx_kv_key_index(const lmx_kvstore *kv, const char *key);
int lmx_kv_overlap_begin(lmx_kvstore *kv, int n, const int *idx, lmx_ndarray *const *values,
                         const int *order);
int lmx_kv_overlap_ready(lmx_kvstore *kv, int n, const int *pos);

#endif
