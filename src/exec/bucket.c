/* bucket.c — binding against a base executor, and the bucketing executor pool
 * (MXNet's BucketingModule sharing, §5.4 of MXNET-SEMANTICS.md, and _bind_exec).
 *
 * lmx_train_bind binds a symbol so that every argument the base executor has under the
 * same name (the parameters) is the base's very array, with the base's gradient array,
 * every aux state likewise, and intermediates come from the base's memory pool. The
 * data and label inputs get their own arrays of the given shapes, or, for buckets,
 * views of the default bucket's input arrays when those are large enough (MXNet's
 * shared_data_arrays: a larger input gets its own array).
 *
 * A bucketing pool maps int64 bucket keys to executors. The default bucket's executor
 * is bound first (by the caller) and handed to lmx_bucketing_new; every other bucket is
 * bound against it (not against the current bucket: MXNet PR #5133), so all buckets
 * share parameters, gradients (grad_req add accumulates across buckets), aux states and
 * one pool. The pool takes the smallest free slab that fits each block, largest blocks
 * first, and grows only by the blocks that fit nowhere: a bucket no larger than the
 * default costs no intermediate memory; a larger one grows the pool once, after which
 * buckets of that size or smaller fit as well.
 * Invariants: the pool holds one reference to each executor (keys[i] <-> execs[i]);
 * executors hold references to what they share, so the pool and the executors it
 * handed out may be freed in any order. lmx_bucketing_get allocates nothing.
 * Threads: a pool is used by one thread at a time; its executors must not run at the
 * same time (they alias the pool's memory).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "training.h"

/* ---- binding against a base ---------------------------------------------------------- */

static int find_req(const lmx_tbind *c, const char *name, int *req) {
  for (int i = 0; i < c->nreqs; i++)
    if (strcmp(c->req_names[i], name) == 0) return *req = c->reqs[i], 1;
  return 0;
}

static int is_input(const lmx_tbind *c, const char *name) {
  for (int i = 0; i < c->ninputs; i++)
    if (strcmp(c->input_names[i], name) == 0) return 1;
  return 0;
}

static int base_index(char **names, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], name) == 0) return i;
  return -1;
}

static void give(lmx_ndarray **slot, lmx_ndarray *a) {
  if (!a) return;
  lmx_ref_inc(&a->rc);
  lmx_nd_release(*slot);
  *slot = a;
}

static int shareable(const lmx_tbind *c, const char *name) {
  if (is_input(c, name)) return 0;
  for (int i = 0; i < c->nshare; i++)
    if (strcmp(c->share_names[i], name) == 0) return 1;
  return c->nshare == 0;
}

/* A view of base's array a with shape s when it is large enough (else nothing). */
static int view_of(lmx_ndarray *a, const lmx_shape *s, int dtype, lmx_ndarray **slot) {
  if (!a || a->dtype != dtype || lmx_shape_size(s) > lmx_nd_size(a)) return LMX_OK;
  lmx_ndarray *v;
  LMX_TRY(lmx_nd_view(a, s, a->offset, &v));
  lmx_nd_release(*slot);
  *slot = v;
  return LMX_OK;
}

static int share_input(const lmx_tbind *c, lmx_binder *b, int i, int k) {
  lmx_executor *x = c->input_base ? c->input_base : c->base;
  int j = base_index(x->arg_names, x->plan.nargs, c->input_names[i]);
  if (j < 0) return LMX_OK;
  int dt = c->input_dtypes && c->input_dtypes[i] >= 0 ? c->input_dtypes[i] : LMX_FLOAT32;
  int req = LMX_REQ_NULL;
  find_req(c, c->input_names[i], &req);
  LMX_TRY(view_of(x->args[j], &c->input_shapes[i], dt, &b->args[k]));
  if (b->args[k] && req != LMX_REQ_NULL)
    LMX_TRY(view_of(x->grads[j], &c->input_shapes[i], dt, &b->grads[k]));
  return LMX_OK;
}

static int configure(const lmx_tbind *c, lmx_binder *b) {
  for (int i = 0; i < c->ninputs; i++) {
    int k;
    LMX_TRY(lmx_binder_find(b, c->input_names[i], -1, 0, &k));
    b->shape[k] = c->input_shapes[i];
    if (c->input_dtypes && c->input_dtypes[i] >= 0) b->dtype[k] = c->input_dtypes[i];
    if (c->base && c->share_inputs) LMX_TRY(share_input(c, b, i, k));
  }
  lmx_executor *x = c->base;
  for (int k = 0; k < b->g.nargs; k++) {
    const char *nm = b->g.nodes[b->g.args[k]]->name;
    int req = LMX_REQ_NULL, explicit_req = find_req(c, nm, &req);
    int j = (x && shareable(c, nm)) ? base_index(x->arg_names, x->plan.nargs, nm) : -1;
    if (j >= 0) {
      if (!explicit_req) req = x->grad_req[j];
      give(&b->args[k], x->args[j]);
      if (req != LMX_REQ_NULL) give(&b->grads[k], x->grads[j]);
    } else if (!explicit_req && !is_input(c, nm)) {
      req = c->default_req;
    }
    b->req[k] = req, b->req_set[k] = 1;
  }
  for (int k = 0; x && k < b->g.naux; k++) {
    int j = base_index(x->aux_names, x->plan.naux, b->g.nodes[b->g.aux[k]]->name);
    if (j >= 0) give(&b->aux[k], x->aux[j]);
  }
  if (x) {
    lmx_exec_retain(x);
    b->shared = x;
  }
  return LMX_OK;
}

int lmx_train_bind(const lmx_tbind *c, lmx_executor **out) {
  lmx_binder *b = NULL;
  int rc = lmx_binder_create(c->sym, c->dev_type, c->dev_id, &b);
  if (rc == LMX_OK) rc = configure(c, b);
  if (rc == LMX_OK) rc = lmx_exec_bind(b, 1, out);
  lmx_binder_destroy(b);
  if (rc != LMX_OK && c->what) return lmx_fail_prefix(rc, "%s: ", c->what);
  return rc;
}

/* ---- the bucketing pool --------------------------------------------------------------- */

struct lmx_bucketing {
  lmx_executor **execs; /* execs[0] is the default bucket's */
  int64_t *keys;
  int n, cap;
};

int lmx_bkt_create(int64_t default_key, lmx_executor *def, lmx_bucketing **out) {
  lmx_bucketing *bp = lmx_calloc(1, sizeof *bp);
  if (bp) bp->execs = lmx_calloc(8, sizeof *bp->execs);
  if (bp) bp->keys = lmx_calloc(8, sizeof *bp->keys);
  if (!bp || !bp->execs || !bp->keys) {
    if (bp) lmx_free(bp->execs), lmx_free(bp->keys);
    lmx_free(bp);
    return lmx_fail_nomem("a bucketing pool", 8 * 16);
  }
  bp->cap = 8, bp->n = 1;
  lmx_exec_retain(def);
  bp->execs[0] = def, bp->keys[0] = default_key;
  *out = bp;
  return LMX_OK;
}

void lmx_bkt_destroy(lmx_bucketing *bp) {
  if (!bp) return;
  for (int i = 0; i < bp->n; i++) lmx_exec_release(bp->execs[i]);
  lmx_free(bp->execs);
  lmx_free(bp->keys);
  lmx_free(bp);
}

int lmx_bkt_find(const lmx_bucketing *bp, int64_t key, lmx_executor **out) {
  for (int i = 0; i < bp->n; i++)
    if (bp->keys[i] == key) return *out = bp->execs[i], LMX_OK;
  return lmx_fail(LMX_ERR_NOTFOUND,
                  "bucketing: bucket key %" PRId64
                  " is not bound (%d bucket%s"
                  " bound; the default key is %" PRId64 ")",
                  key, bp->n, bp->n == 1 ? "" : "s", bp->keys[0]);
}

static int grow(lmx_bucketing *bp) {
  if (bp->n < bp->cap) return LMX_OK;
  int nc = bp->cap * 2;
  lmx_executor **e = lmx_realloc(bp->execs, (size_t)nc * sizeof *e);
  if (e) bp->execs = e;
  int64_t *k = lmx_realloc(bp->keys, (size_t)nc * sizeof *k);
  if (k) bp->keys = k;
  if (!e || !k) return lmx_fail_nomem("the bucketing pool", (size_t)nc * 16);
  bp->cap = nc;
  return LMX_OK;
}

/* The bound bucket with the largest inputs (MXNet keeps the largest data arrays in
 * shared_data_arrays, so later buckets view those). */
static lmx_executor *largest_inputs(const lmx_bucketing *bp, int n, const char *const *names) {
  lmx_executor *best = bp->execs[0];
  int64_t best_size = -1;
  for (int b = 0; b < bp->n; b++) {
    const lmx_executor *x = bp->execs[b];
    int64_t size = 0;
    for (int i = 0; i < n; i++) {
      int j = base_index(x->arg_names, x->plan.nargs, names[i]);
      if (j >= 0) size += lmx_nd_size(x->args[j]);
    }
    if (size > best_size) best = bp->execs[b], best_size = size;
  }
  return best;
}

int lmx_bkt_add(lmx_bucketing *bp, int64_t key, lmx_symbol *sym, int n, const char *const *names,
                const lmx_shape *shapes, lmx_executor **out) {
  lmx_executor *def = bp->execs[0], *x = NULL;
  for (int i = 0; i < bp->n; i++)
    if (bp->keys[i] == key)
      return lmx_fail(LMX_ERR_STATE, "bucketing: bucket key %" PRId64 " is already bound", key);
  int *reqs = lmx_calloc((size_t)n + 1, sizeof(int));
  if (!reqs) return lmx_fail_nomem("bucket requests", (size_t)n * sizeof(int));
  for (int i = 0; i < n; i++) { /* inputs keep the default bucket's request (inputs_need_grad) */
    int j = base_index(def->arg_names, def->plan.nargs, names[i]);
    reqs[i] = j >= 0 ? def->grad_req[j] : LMX_REQ_NULL;
  }
  char what[64];
  snprintf(what, sizeof what, "bucket key %" PRId64, key);
  lmx_tbind c = {.sym = sym,
                 .dev_type = def->dev_type,
                 .dev_id = def->dev_id,
                 .ninputs = n,
                 .input_names = names,
                 .input_shapes = shapes,
                 .nreqs = n,
                 .req_names = names,
                 .reqs = reqs,
                 .default_req = LMX_REQ_NULL,
                 .base = def,
                 .share_inputs = 1,
                 .input_base = largest_inputs(bp, n, names),
                 .what = what};
  int rc = grow(bp);
  if (rc == LMX_OK) rc = lmx_train_bind(&c, &x);
  lmx_free(reqs);
  if (rc != LMX_OK) return rc;
  bp->execs[bp->n] = x, bp->keys[bp->n] = key, bp->n++;
  *out = x;
  return LMX_OK;
}

int lmx_bkt_keys(const lmx_bucketing *bp, int cap, int64_t *keys, int *n) {
  for (int i = 0; i < bp->n && i < cap; i++) keys[i] = bp->keys[i];
  *n = bp->n;
  return LMX_OK;
}

/* The arrays of a bucket, flat: args, then gradients, then aux states (NULL slots
 * where an argument has no gradient). */
static int count_arrays(const lmx_executor *x) {
  return 2 * x->plan.nargs + x->plan.naux;
}

static const lmx_ndarray *array_at(const lmx_executor *x, int k) {
  int na = x->plan.nargs;
  return k < na ? x->args[k] : k < 2 * na ? x->grads[k - na] : x->aux[k - 2 * na];
}

/* Whether storage st appears among the arrays before (bucket b, slot k). */
static int seen_before(const lmx_bucketing *bp, int b, int k, const lmx_storage *st) {
  for (int c = 0; c <= b; c++) {
    int n = c < b ? count_arrays(bp->execs[c]) : k;
    for (int j = 0; j < n; j++) {
      const lmx_ndarray *a = array_at(bp->execs[c], j);
      if (a && a->st == st) return 1;
    }
  }
  return 0;
}

/* Storage bytes of every argument, gradient and aux array of all buckets, each storage
 * counted once (shared parameters and input views cost nothing extra). */
int lmx_bkt_mem(const lmx_bucketing *bp, int64_t *pool, int64_t *arrays) {
  int64_t sum = 0;
  for (int b = 0; b < bp->n; b++) {
    for (int k = 0; k < count_arrays(bp->execs[b]); k++) {
      const lmx_ndarray *a = array_at(bp->execs[b], k);
      if (a && !seen_before(bp, b, k, a->st)) sum += (int64_t)a->st->bytes;
    }
  }
  if (pool) *pool = (int64_t)bp->execs[0]->pool->bytes;
  if (arrays) *arrays = sum;
  return LMX_OK;
}
