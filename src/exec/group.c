/* group.c — the data-parallel executor group (MXNet's DataParallelExecutorGroup core,
 * §5.5 of MXNET-SEMANTICS.md).
 *
 * One executor per context, bound for its slice of the batch. Slices follow MXNet's
 * _split_input_slice: n_i = round-half-even(w_i * B / sum(w)), the last context takes
 * what rounding left, ranges clipped to B, an empty range is an error.
 * Inputs (data, labels) are sliced along axis 0 (batch axis -1: copied whole to every
 * context); parameters come from the caller's list with their write requests, and are
 * shared by name with the shared group's executor of the same context when one is
 * given; other arguments (states) get their own arrays and request null. Inputs are
 * views of that executor's inputs of the same name when those are large enough
 * (MXNet's shared_data_arrays / reshape views), else their own arrays.
 *
 * Threads. A group of two or more contexts starts one persistent worker thread per
 * context at its first bind; a step (load, forward, backward) publishes a job under the
 * group's mutex, every worker runs it for its own context only, and the caller waits
 * until all are done. Nothing else is shared between workers: each touches only its
 * executor and its own record queue. A one-context group runs on the caller's thread.
 * Monitor callbacks: each executor's callback (running on a worker) copies the array
 * into its context's queue; after the step the CALLER's thread delivers the records,
 * context 0's first, each context's in the order its executor produced them, then
 * frees the copies. (Monitoring is the one case where a step allocates.)
 * Host callbacks (Custom operators written in Lua) reached from a worker are posted to
 * the group's relay (src/core/relay.h) and run by the caller while it waits for the
 * step, so they always run on the thread that called the engine.
 * Errors: a worker keeps its status and message; the caller reports the first failing
 * context's, prefixed with the context's name.
 * Gradients: backward leaves each context's gradient of its own slice (as MXNet);
 * lmx_grp_sum_grads then writes the sum over contexts into every context's gradient
 * array of each non-input argument (summed into context 0's array by lmx_kv_sum_into,
 * the one sum the kvstores use too, then copied out),
 * which equals a one-context run within float rounding; input gradients stay per slice.
 * Reshape binds new executors against the group's original ones (parameters, gradients,
 * aux and pool shared), as MXNet reshapes _default_execs.
 * Overlap with a dist kvstore (group_overlap.c): backward begins the store's
 * overlapped push before running the steps; the hook and lists are derived again at
 * each bind / reshape (install).
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "kvstore.h"

enum { JOB_NONE = 0, JOB_LOAD = 1, JOB_FORWARD = 2, JOB_BACKWARD = 3 };

typedef struct {
  const char *name; /* borrowed from the executor (its monitor names) */
  lmx_ndarray *arr; /* a copy */
} mrec;

typedef struct lmx_group_worker {
  lmx_group *g;
  int i;
  pthread_t th;
  unsigned seen;
  int rc;
  char msg[LMX_ERRMSG_CAP];
  mrec *q;
  int qn, qcap, qfail;
  lmx_ndarray *hg;   /* nheads array headers: views into the caller's head gradients */
  lmx_ndarray **hgp; /* pointers to them (NULL where not given) */
} worker;

int lmx_train_split(int64_t batch, int n, const double *w, int64_t *begin, int64_t *end) {
  double total = 0;
  for (int i = 0; i < n; i++) total += w[i];
  int64_t sum = 0, at = 0;
  for (int i = 0; i < n; i++) sum += (int64_t)nearbyint(w[i] * (double)batch / total);
  for (int i = 0; i < n; i++) {
    int64_t num = (int64_t)nearbyint(w[i] * (double)batch / total);
    if (i == n - 1 && sum < batch) num += batch - sum;
    int64_t b = at < batch ? at : batch, e = b + num < batch ? b + num : batch;
    if (b >= e)
      return lmx_fail(LMX_ERR_ARG,
                      "Too many slices such that some splits are empty (batch size "
                      "%" PRId64 " over %d devices: slice %d would be [%" PRId64 ", %" PRId64 "))",
                      batch, n, i + 1, b, e);
    begin[i] = b, end[i] = e, at = e;
  }
  return LMX_OK;
}

/* ---- per-context work (on the worker, or the caller for one context) ---------------- */

static void on_monitor(const char *name, lmx_ndarray *arr, void *user) {
  worker *w = user;
  if (w->qfail) return;
  if (w->qn == w->qcap) {
    int nc = w->qcap ? w->qcap * 2 : 64;
    mrec *q = lmx_realloc(w->q, (size_t)nc * sizeof *q);
    if (!q) {
      w->qfail = 1;
      return;
    }
    w->q = q, w->qcap = nc;
  }
  lmx_ndarray *copy = NULL;
  if (lmx_nd_create(&arr->shape, arr->dtype, LMX_CPU, 0, 0, &copy) != LMX_OK ||
      lmx_nd_copy(arr, copy) != LMX_OK) {
    lmx_nd_release(copy);
    w->qfail = 1;
    return;
  }
  w->q[w->qn].name = name, w->q[w->qn].arr = copy, w->qn++;
}

/* Rows [b, e) of src (axis 0) into dst, through a header on the stack: no allocation. */
static int copy_rows(const lmx_ndarray *src, int64_t b, int64_t e, lmx_ndarray *dst) {
  lmx_ndarray v = *src;
  int64_t row = src->shape.dim[0] ? lmx_nd_size(src) / src->shape.dim[0] : 0;
  v.offset += (size_t)(b * row) * (size_t)lmx_dtype_size(src->dtype);
  v.shape.dim[0] = e - b;
  return lmx_nd_copy(&v, dst);
}

static int do_load(lmx_group *g, int i) {
  lmx_executor *x = g->exec[i];
  for (int k = 0; k < g->job_n; k++) {
    int in = g->job_in[k];
    lmx_ndarray *dst = x->args[g->in_arg[in]];
    if (g->in_axis[in] < 0)
      LMX_TRY(lmx_nd_copy(g->job_src[k], dst));
    else
      LMX_TRY(copy_rows(g->job_src[k], g->begin[i], g->end[i], dst));
  }
  return LMX_OK;
}

static int do_backward(lmx_group *g, int i) {
  worker *w = &g->w[i];
  lmx_executor *x = g->exec[i];
  for (int h = 0; h < g->nheads; h++) {
    w->hgp[h] = NULL;
    if (h >= g->job_n || !g->job_src[h]) continue;
    lmx_ndarray *out = x->ent[x->plan.head_entry[h]];
    int64_t rows = out->shape.ndim ? out->shape.dim[0] : 1, b = g->out_begin[h * g->n + i];
    w->hg[h] = *g->job_src[h];
    int64_t row = w->hg[h].shape.dim[0] ? lmx_nd_size(&w->hg[h]) / w->hg[h].shape.dim[0] : 0;
    w->hg[h].offset += (size_t)(b * row) * (size_t)lmx_dtype_size(w->hg[h].dtype);
    w->hg[h].shape.dim[0] = rows;
    w->hgp[h] = &w->hg[h];
  }
  return lmx_exec_backward(x, w->hgp, g->nheads, 1);
}

static void run_job(lmx_group *g, int i) {
  worker *w = &g->w[i];
  int rc = LMX_OK;
  lmx_clear_error();
  if (g->job == JOB_LOAD || g->job == JOB_FORWARD) rc = do_load(g, i);
  if (rc == LMX_OK && g->job == JOB_FORWARD) rc = lmx_exec_forward(g->exec[i], g->job_train);
  if (rc == LMX_OK && g->job == JOB_BACKWARD) rc = do_backward(g, i);
  w->rc = rc;
  if (rc != LMX_OK) snprintf(w->msg, sizeof w->msg, "%s", lmx_errmsg());
}

static void *worker_main(void *arg) {
  worker *w = arg;
  lmx_group *g = w->g;
  unsigned seen = w->seen; /* the generation current when the thread was created */
  lmx_relay_bind_thread(&g->relay); /* host callbacks (Custom ops) run on the caller */
  pthread_mutex_lock(&g->mu);
  for (;;) {
    while (!g->quit && g->gen == seen) pthread_cond_wait(&g->go, &g->mu);
    if (g->quit) break;
    seen = g->gen;
    pthread_mutex_unlock(&g->mu);
    run_job(g, w->i);
    pthread_mutex_lock(&g->mu);
    if (--g->pending == 0) pthread_cond_signal(&g->fin);
  }
  pthread_mutex_unlock(&g->mu);
  return NULL;
}

/* ---- the caller's side of a step ---------------------------------------------------- */

static void deliver(lmx_group *g) {
  for (int i = 0; i < g->n; i++) {
    worker *w = &g->w[i];
    for (int k = 0; k < w->qn; k++) {
      if (g->mon) g->mon(i, w->q[k].name, w->q[k].arr, g->mon_user);
      lmx_nd_release(w->q[k].arr);
    }
    w->qn = 0;
  }
}

static int run(lmx_group *g, int job) {
  g->job = job;
  if (g->n == 1 || !g->threads) {
    for (int i = 0; i < g->n; i++) run_job(g, i);
  } else {
    pthread_mutex_lock(&g->mu);
    g->pending = g->n;
    g->gen++;
    pthread_cond_broadcast(&g->go);
    while (g->pending > 0 || g->relay.head)
      if (!lmx_relay_serve(&g->relay)) pthread_cond_wait(&g->fin, &g->mu);
    pthread_mutex_unlock(&g->mu);
  }
  g->job = JOB_NONE;
  deliver(g);
  for (int i = 0; i < g->n; i++) {
    worker *w = &g->w[i];
    if (w->qfail) {
      w->qfail = 0;
      return lmx_fail(LMX_ERR_NOMEM,
                      "group: context %s(%d): out of memory copying a monitored "
                      "array",
                      g->dev_type[i] == LMX_CPU ? "cpu" : "gpu", g->dev_id[i]);
    }
    if (w->rc != LMX_OK)
      return lmx_fail(w->rc, "group: context %s(%d) (device %d of %d): %s",
                      g->dev_type[i] == LMX_CPU ? "cpu" : "gpu", g->dev_id[i], i + 1, g->n, w->msg);
  }
  return LMX_OK;
}

int lmx_grp_start_workers(lmx_group *g) {
  if (g->n == 1 || g->threads) return LMX_OK;
  for (int i = 0; i < g->n; i++) {
    g->w[i].seen = g->gen;
    if (pthread_create(&g->w[i].th, NULL, worker_main, &g->w[i]) != 0) {
      lmx_grp_stop_workers(g, i);
      return lmx_fail(LMX_ERR_INTERNAL,
                      "group: cannot start the worker thread of context "
                      "%s(%d)",
                      g->dev_type[i] == LMX_CPU ? "cpu" : "gpu", g->dev_id[i]);
    }
  }
  g->threads = 1;
  return LMX_OK;
}

void lmx_grp_stop_workers(lmx_group *g, int started) {
  pthread_mutex_lock(&g->mu);
  g->quit = 1;
  pthread_cond_broadcast(&g->go);
  pthread_mutex_unlock(&g->mu);
  for (int i = 0; i < started; i++) pthread_join(g->w[i].th, NULL);
  g->quit = 0;
  g->threads = 0;
}

/* ---- steps ------------------------------------------------------------------------- */

static int find_input(const lmx_group *g, const char *name) {
  for (int i = 0; i < g->nin; i++)
    if (strcmp(g->in_name[i], name) == 0) return i;
  return -1;
}

/* Checks the batch arrays on the caller's thread and records them for the workers. */
static int stage_inputs(lmx_group *g, int n, const char *const *names, lmx_ndarray *const *src) {
  if (n > g->nin)
    return lmx_fail(LMX_ERR_ARG, "group: %d input arrays given, the group has %d inputs", n,
                    g->nin);
  for (int k = 0; k < n; k++) {
    int in = find_input(g, names[k]);
    if (in < 0)
      return lmx_fail(LMX_ERR_NOTFOUND,
                      "group: '%s' is not an input of the group "
                      "(give the data and label names it was bound with)",
                      names[k]);
    if (!lmx_shape_equal(&src[k]->shape, &g->in_shape[in])) {
      char a[LMX_SHAPE_STRCAP], b[LMX_SHAPE_STRCAP];
      return lmx_fail(LMX_ERR_SHAPE,
                      "group: input '%s': expected shape %s (the bound batch), "
                      "got %s; reshape the group for a new batch size",
                      names[k], lmx_shape_str(&g->in_shape[in], a),
                      lmx_shape_str(&src[k]->shape, b));
    }
    g->job_in[k] = in, g->job_src[k] = src[k];
  }
  g->job_n = n;
  return LMX_OK;
}

int lmx_grp_load(lmx_group *g, int n, const char *const *names, lmx_ndarray *const *src) {
  LMX_TRY(lmx_grp_check_bound(g));
  LMX_TRY(stage_inputs(g, n, names, src));
  return run(g, JOB_LOAD);
}

int lmx_grp_forward(lmx_group *g, int n, const char *const *names, lmx_ndarray *const *src,
                    int is_train) {
  LMX_TRY(lmx_grp_check_bound(g));
  LMX_TRY(stage_inputs(g, n, names, src));
  g->job_train = is_train;
  return run(g, JOB_FORWARD);
}

int lmx_grp_backward(lmx_group *g, int n, lmx_ndarray *const *head_grads) {
  LMX_TRY(lmx_grp_check_bound(g));
  if (n > g->nheads)
    return lmx_fail(LMX_ERR_ARG,
                    "group: backward: %d out_grads given, the symbol has %d "
                    "outputs",
                    n, g->nheads);
  for (int h = 0; h < n; h++) {
    const lmx_executor *x0 = g->exec[0];
    const lmx_ndarray *m = g->n > 1 ? g->merged[h] : x0->ent[x0->plan.head_entry[h]];
    const lmx_ndarray *hg = head_grads[h];
    if (!hg) continue;
    if (!lmx_shape_equal(&hg->shape, &m->shape)) {
      char a[LMX_SHAPE_STRCAP], b[LMX_SHAPE_STRCAP];
      return lmx_fail(LMX_ERR_SHAPE,
                      "group: backward: out_grads[%d]: expected shape %s (the "
                      "merged output), got %s",
                      h + 1, lmx_shape_str(&m->shape, a), lmx_shape_str(&hg->shape, b));
    }
    g->job_src[h] = head_grads[h];
  }
  g->job_n = n;
  if (g->ov_armed)
    LMX_TRY(lmx_kv_overlap_begin(g->ov_kv, g->ov_n, g->ov_key, g->ov_val, g->ov_order));
  return run(g, JOB_BACKWARD);
}

int lmx_grp_sum_grads(lmx_group *g) {
  LMX_TRY(lmx_grp_check_bound(g));
  lmx_executor *x0 = g->exec[0];
  for (int a = 0; a < x0->plan.nargs; a++) {
    int is_input = 0; /* input gradients are per slice: never summed */
    for (int k = 0; k < g->nin; k++) is_input |= g->in_arg[k] == a;
    if (!x0->grads[a] || g->n == 1 || is_input) continue;
    for (int i = 0; i < g->n; i++) g->sum_src[i] = g->exec[i]->grads[a];
    int rc = lmx_kv_sum_into(x0->grads[a], g->sum_src, g->n);
    for (int i = 1; i < g->n && rc == LMX_OK; i++) rc = lmx_nd_copy(x0->grads[a], g->sum_src[i]);
    if (rc != LMX_OK)
      return lmx_fail_prefix(rc, "group: summing the gradient of '%s': ", x0->arg_names[a]);
  }
  return LMX_OK;
}

/* Concatenates the n contexts' arrays along axis 0 into dst. */
static int concat(lmx_ndarray *const *parts, int n, lmx_ndarray *dst) {
  int64_t at = 0;
  for (int i = 0; i < n; i++) {
    int64_t rows = parts[i]->shape.ndim ? parts[i]->shape.dim[0] : 1;
    lmx_ndarray v = *dst;
    int64_t row = dst->shape.dim[0] ? lmx_nd_size(dst) / dst->shape.dim[0] : 0;
    v.offset += (size_t)(at * row) * (size_t)lmx_dtype_size(dst->dtype);
    v.shape.dim[0] = rows;
    LMX_TRY(lmx_nd_copy(parts[i], &v));
    at += rows;
  }
  return LMX_OK;
}

int lmx_grp_output(lmx_group *g, int h, int ctx, lmx_ndarray **out) {
  LMX_TRY(lmx_grp_check_bound(g));
  if (h < 0 || h >= g->nheads || ctx < -1 || ctx >= g->n)
    return lmx_fail(LMX_ERR_ARG,
                    "group: output %d of context %d is out of range (%d outputs, "
                    "%d contexts)",
                    h, ctx, g->nheads, g->n);
  lmx_ndarray *a;
  if (ctx >= 0 || g->n == 1) {
    a = g->exec[ctx < 0 ? 0 : ctx]->ent[g->exec[ctx < 0 ? 0 : ctx]->plan.head_entry[h]];
  } else {
    for (int i = 0; i < g->n; i++) g->sum_src[i] = g->exec[i]->ent[g->exec[i]->plan.head_entry[h]];
    LMX_TRY(concat(g->sum_src, g->n, g->merged[h]));
    a = g->merged[h];
  }
  lmx_ref_inc(&a->rc);
  *out = a;
  return LMX_OK;
}

int lmx_grp_input_grad(lmx_group *g, int in, int ctx, lmx_ndarray **out) {
  LMX_TRY(lmx_grp_check_bound(g));
  if (in < 0 || in >= g->nin || ctx < -1 || ctx >= g->n)
    return lmx_fail(LMX_ERR_ARG, "group: input %d of context %d is out of range", in, ctx);
  if (!g->exec[0]->grads[g->in_arg[in]])
    return lmx_fail(LMX_ERR_STATE,
                    "group: input '%s' has no gradient (bind with "
                    "inputs_need_grad)",
                    g->in_name[in]);
  lmx_ndarray *a;
  if (ctx >= 0 || g->n == 1) {
    a = g->exec[ctx < 0 ? 0 : ctx]->grads[g->in_arg[in]];
  } else {
    for (int i = 0; i < g->n; i++) g->sum_src[i] = g->exec[i]->grads[g->in_arg[in]];
    LMX_TRY(concat(g->sum_src, g->n, g->in_grad[in]));
    a = g->in_grad[in];
  }
  lmx_ref_inc(&a->rc);
  *out = a;
  return LMX_OK;
}

int lmx_grp_set_monitor(lmx_group *g, lmx_group_monitor_fn fn, void *user, int all) {
  g->mon = fn, g->mon_user = fn ? user : NULL, g->mon_all = fn && all;
  for (int i = 0; g->bound && i < g->n; i++)
    LMX_TRY(lmx_exec_set_monitor(g->exec[i], fn ? on_monitor : NULL, &g->w[i], g->mon_all));
  return LMX_OK;
}

/* ---- configuration, bind, reshape, release ------------------------------------------ */

static const char *dev_name(int t) {
  return t == LMX_CPU ? "cpu" : "gpu";
}

int lmx_grp_create(lmx_symbol *sym, int n, const int *dt, const int *di, const double *wl,
                   lmx_group **out) {
  if (n < 1) return lmx_fail(LMX_ERR_ARG, "group: at least one context is needed, got %d", n);
  for (int i = 0; i < n; i++) {
    const lmx_device_ops *dev;
    LMX_TRY(lmx_device_lookup(dt[i], di[i], &dev));
    if (wl && !(wl[i] >= 0))
      return lmx_fail(LMX_ERR_ARG, "group: work load %d of context %s(%d) must be >= 0, got %g",
                      i + 1, dev_name(dt[i]), di[i], wl[i]);
  }
  lmx_group *g = lmx_calloc(1, sizeof *g);
  if (!g) return lmx_fail_nomem("an executor group", sizeof *g);
  size_t m = (size_t)n + 1;
  g->n = n;
  g->dev_type = lmx_calloc(m, sizeof(int)), g->dev_id = lmx_calloc(m, sizeof(int));
  g->workload = lmx_calloc(m, sizeof(double));
  g->begin = lmx_calloc(m, sizeof(int64_t)), g->end = lmx_calloc(m, sizeof(int64_t));
  g->exec = lmx_calloc(m, sizeof *g->exec), g->orig = lmx_calloc(m, sizeof *g->orig);
  g->sum_src = lmx_calloc(m, sizeof *g->sum_src);
  g->w = lmx_calloc(m, sizeof *g->w);
  if (!g->dev_type || !g->dev_id || !g->workload || !g->begin || !g->end || !g->exec || !g->orig ||
      !g->sum_src || !g->w) {
    lmx_grp_destroy(g);
    return lmx_fail_nomem("an executor group", m * 64);
  }
  lmx_ref_init(&g->rc);
  pthread_mutex_init(&g->mu, NULL);
  pthread_cond_init(&g->go, NULL);
  pthread_cond_init(&g->fin, NULL);
  lmx_relay_init(&g->relay, &g->mu, &g->fin);
  for (int i = 0; i < n; i++) {
    g->dev_type[i] = dt[i], g->dev_id[i] = di[i], g->workload[i] = wl ? wl[i] : 1.0;
    g->w[i].g = g, g->w[i].i = i;
  }
  lmx_sym_retain(sym);
  g->sym = sym;
  *out = g;
  return LMX_OK;
}

static void release_derived(lmx_group *g) {
  for (int h = 0; g->merged && h < g->nheads; h++) lmx_nd_release(g->merged[h]);
  for (int k = 0; g->in_grad && k < g->nin; k++) lmx_nd_release(g->in_grad[k]);
  lmx_free(g->merged), lmx_free(g->in_grad), lmx_free(g->out_begin), lmx_free(g->in_arg);
  lmx_free(g->job_in), lmx_free(g->job_src);
  for (int i = 0; g->w && i < g->n; i++) lmx_free(g->w[i].hg), lmx_free(g->w[i].hgp);
  for (int i = 0; g->w && i < g->n; i++) g->w[i].hg = NULL, g->w[i].hgp = NULL;
  g->merged = g->in_grad = g->job_src = NULL;
  g->out_begin = NULL, g->in_arg = g->job_in = NULL;
}

void lmx_grp_retain(lmx_group *g) { lmx_ref_inc(&g->rc); }

void lmx_grp_release(lmx_group *g) {
  if (g && lmx_ref_dec(&g->rc)) lmx_grp_destroy(g);
}

void lmx_grp_destroy(lmx_group *g) {
  if (!g) return;
  if (g->threads) lmx_grp_stop_workers(g, g->n);
  release_derived(g);
  for (int i = 0; g->exec && g->orig && i < g->n; i++) { /* one ref each */
    lmx_exec_release(g->exec[i]);
    lmx_exec_release(g->orig[i]);
  }
  for (int i = 0; g->w && i < g->n; i++) lmx_free(g->w[i].q);
  for (int k = 0; k < g->nin; k++) lmx_free(g->in_name[k]);
  for (int k = 0; k < g->nparam; k++) lmx_free(g->param_name[k]);
  lmx_grp_ov_release(g);
  void *arrays[] = {g->dev_type, g->dev_id,   g->workload, g->begin,    g->end,        g->exec,
                    g->orig,     g->sum_src,  g->w,        g->in_name,  g->param_name, g->in_shape,
                    g->in_axis,  g->in_dtype, g->in_req,   g->param_req};
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) lmx_free(arrays[i]);
  if (g->sym) {
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->go);
    pthread_cond_destroy(&g->fin);
    lmx_relay_destroy(&g->relay);
  }
  lmx_sym_release(g->sym);
  lmx_free(g);
}

int lmx_grp_check_bound(const lmx_group *g) {
  if (!g->bound) return lmx_fail(LMX_ERR_STATE, "group: not bound yet (call bind first)");
  return LMX_OK;
}

static int grow_cfg(lmx_group *g, int param) {
  int n = param ? g->nparam : g->nin, *cap = param ? &g->cap_param : &g->cap_in;
  if (n < *cap) return LMX_OK;
  size_t nc = (size_t)(*cap ? *cap * 2 : 8);
  int ok = 1;
#define LMX_GROW_(field, type)                         \
  do {                                                 \
    type *q_ = lmx_realloc(g->field, nc * sizeof *q_); \
    if (q_)                                            \
      g->field = q_;                                   \
    else                                               \
      ok = 0;                                          \
  } while (0)
  if (param) {
    LMX_GROW_(param_name, char *);
    LMX_GROW_(param_req, int);
  } else {
    LMX_GROW_(in_name, char *);
    LMX_GROW_(in_shape, lmx_shape);
    LMX_GROW_(in_axis, int);
    LMX_GROW_(in_dtype, int);
    LMX_GROW_(in_req, int);
  }
#undef LMX_GROW_
  if (!ok) return lmx_fail_nomem("group configuration", nc * 64);
  *cap = (int)nc;
  return LMX_OK;
}

int lmx_grp_add_input(lmx_group *g, const char *name, const lmx_shape *shape, int axis, int dtype,
                      int req) {
  if (g->bound) return lmx_fail(LMX_ERR_STATE, "group: inputs are set before bind");
  if (axis != 0 && axis != -1)
    return lmx_fail(LMX_ERR_UNSUPPORTED,
                    "group: input '%s': batch axis %d is not supported "
                    "(0, or -1 for an input that is not sliced)",
                    name, axis);
  if (axis == 0 && shape->ndim < 1)
    return lmx_fail(LMX_ERR_SHAPE, "group: input '%s' has no batch axis (shape ())", name);
  if (find_input(g, name) >= 0) return lmx_fail(LMX_ERR_ARG, "group: input '%s' given twice", name);
  LMX_TRY(grow_cfg(g, 0));
  char *s = lmx_strdup(name);
  if (!s) return lmx_fail_nomem("an input name", strlen(name) + 1);
  int k = g->nin++;
  g->in_name[k] = s, g->in_shape[k] = *shape, g->in_axis[k] = axis;
  g->in_dtype[k] = dtype, g->in_req[k] = req;
  return LMX_OK;
}

int lmx_grp_add_param(lmx_group *g, const char *name, int req) {
  if (g->bound) return lmx_fail(LMX_ERR_STATE, "group: parameters are set before bind");
  LMX_TRY(grow_cfg(g, 1));
  char *s = lmx_strdup(name);
  if (!s) return lmx_fail_nomem("a parameter name", strlen(name) + 1);
  g->param_name[g->nparam] = s, g->param_req[g->nparam] = req, g->nparam++;
  return LMX_OK;
}

/* The batch size all sliced inputs agree on, and the slices. */
static int slice_batch(lmx_group *g) {
  int first = -1;
  for (int k = 0; k < g->nin; k++) {
    if (g->in_axis[k] < 0) continue;
    if (first < 0) {
      first = k;
    } else if (g->in_shape[k].dim[0] != g->in_shape[first].dim[0]) {
      return lmx_fail(LMX_ERR_SHAPE,
                      "group: inputs '%s' and '%s' disagree on the batch size: "
                      "%" PRId64 " and %" PRId64,
                      g->in_name[first], g->in_name[k], g->in_shape[first].dim[0],
                      g->in_shape[k].dim[0]);
    }
  }
  if (first < 0) return lmx_fail(LMX_ERR_ARG, "group: no input with a batch axis to slice");
  g->batch = g->in_shape[first].dim[0];
  return lmx_train_split(g->batch, g->n, g->workload, g->begin, g->end);
}

static int bind_one(lmx_group *g, int i, lmx_executor *base, lmx_executor **out) {
  size_t m = (size_t)(g->nin + g->nparam) + 1;
  lmx_shape *sh = lmx_calloc(m, sizeof *sh);
  const char **rn = lmx_calloc(m, sizeof *rn);
  int *rq = lmx_calloc(m, sizeof *rq);
  if (!sh || !rn || !rq) {
    lmx_free(sh), lmx_free(rn), lmx_free(rq);
    return lmx_fail_nomem("group bind", m * 64);
  }
  for (int k = 0; k < g->nin; k++) {
    sh[k] = g->in_shape[k];
    if (g->in_axis[k] == 0) sh[k].dim[0] = g->end[i] - g->begin[i];
    rn[k] = g->in_name[k], rq[k] = g->in_req[k];
  }
  for (int k = 0; k < g->nparam; k++)
    rn[g->nin + k] = g->param_name[k], rq[g->nin + k] = g->param_req[k];
  char what[64];
  snprintf(what, sizeof what, "group: context %s(%d)", dev_name(g->dev_type[i]), g->dev_id[i]);
  lmx_tbind c = {.sym = g->sym,
                 .dev_type = g->dev_type[i],
                 .dev_id = g->dev_id[i],
                 .ninputs = g->nin,
                 .input_names = (const char *const *)g->in_name,
                 .input_shapes = sh,
                 .input_dtypes = g->in_dtype,
                 .nreqs = g->nin + g->nparam,
                 .req_names = rn,
                 .reqs = rq,
                 .default_req = LMX_REQ_NULL,
                 .base = base,
                 .nshare = g->nparam,
                 .share_names = (const char *const *)g->param_name,
                 .share_inputs = 1,
                 .what = what};
  if (g->nparam == 0) c.nshare = -1; /* share nothing by name: only the pool */
  int rc = lmx_train_bind(&c, out);
  lmx_free(sh), lmx_free(rn), lmx_free(rq);
  return rc;
}

int lmx_grp_arg_index(const lmx_executor *x, const char *name) {
  for (int a = 0; a < x->plan.nargs; a++)
    if (strcmp(x->arg_names[a], name) == 0) return a;
  return -1;
}

/* A zero array shaped like parts' concatenation along axis 0. */
static int merged_like(lmx_group *g, lmx_ndarray *const *parts, lmx_ndarray **out) {
  lmx_shape s = parts[0]->shape;
  if (s.ndim == 0) s.ndim = 1, s.dim[0] = 1;
  s.dim[0] = 0;
  for (int i = 0; i < g->n; i++) s.dim[0] += parts[i]->shape.ndim ? parts[i]->shape.dim[0] : 1;
  return lmx_nd_create(&s, parts[0]->dtype, LMX_CPU, 0, 1, out);
}

/* Everything derived from the executors: input indices, merge buffers, row offsets,
 * head-gradient headers. Built once per bind / reshape, so steps allocate nothing. */
static int derive(lmx_group *g) {
  lmx_executor *x0 = g->exec[0];
  size_t nh = (size_t)x0->plan.nheads + 1, ni = (size_t)g->nin + 1, n = (size_t)g->n;
  g->nheads = x0->plan.nheads;
  g->in_arg = lmx_calloc(ni, sizeof(int)), g->job_in = lmx_calloc(ni, sizeof(int));
  g->job_src = lmx_calloc(ni + nh, sizeof *g->job_src);
  g->merged = lmx_calloc(nh, sizeof *g->merged), g->in_grad = lmx_calloc(ni, sizeof *g->in_grad);
  g->out_begin = lmx_calloc(nh * n, sizeof(int64_t));
  int ok = g->in_arg && g->job_in && g->job_src && g->merged && g->in_grad && g->out_begin;
  for (int i = 0; ok && i < g->n; i++) {
    g->w[i].hg = lmx_calloc(nh, sizeof(lmx_ndarray));
    g->w[i].hgp = lmx_calloc(nh, sizeof(lmx_ndarray *));
    ok = g->w[i].hg && g->w[i].hgp;
  }
  if (!ok) return lmx_fail_nomem("group buffers", nh * n * sizeof(lmx_ndarray));
  for (int k = 0; k < g->nin; k++) {
    if ((g->in_arg[k] = lmx_grp_arg_index(x0, g->in_name[k])) < 0)
      return lmx_fail(LMX_ERR_NOTFOUND, "group: input '%s' is not an argument of the symbol",
                      g->in_name[k]);
  }
  for (int h = 0; h < g->nheads; h++) {
    int64_t at = 0;
    for (int i = 0; i < g->n; i++) {
      lmx_ndarray *o = g->exec[i]->ent[g->exec[i]->plan.head_entry[h]];
      g->sum_src[i] = o;
      g->out_begin[h * g->n + i] = at;
      at += o->shape.ndim ? o->shape.dim[0] : 1;
    }
    /* one context: outputs and input gradients are the executor's own arrays, so no
     * merge buffers (they cost a whole output per bucket: 73 MB at W3's length 60) */
    if (g->n > 1) LMX_TRY(merged_like(g, g->sum_src, &g->merged[h]));
  }
  for (int k = 0; k < g->nin && g->n > 1; k++) {
    if (!x0->grads[g->in_arg[k]]) continue;
    for (int i = 0; i < g->n; i++) g->sum_src[i] = g->exec[i]->grads[g->in_arg[k]];
    LMX_TRY(merged_like(g, g->sum_src, &g->in_grad[k]));
  }
  return LMX_OK;
}

/* Binds every context against bases[i] (may be NULL) into fresh[]; all or nothing. */
static int bind_all(lmx_group *g, lmx_executor *const *bases, lmx_executor **fresh) {
  int rc = LMX_OK;
  for (int i = 0; i < g->n && rc == LMX_OK; i++)
    rc = bind_one(g, i, bases ? bases[i] : NULL, &fresh[i]);
  if (rc == LMX_OK) return LMX_OK;
  for (int i = 0; i < g->n; i++) lmx_exec_release(fresh[i]), fresh[i] = NULL;
  return rc;
}

static int install(lmx_group *g, lmx_executor **fresh) {
  release_derived(g);
  for (int i = 0; i < g->n; i++) {
    lmx_exec_release(g->exec[i]);
    g->exec[i] = fresh[i];
    if (!g->orig[i]) lmx_exec_retain(fresh[i]), g->orig[i] = fresh[i];
  }
  g->bound = 1;
  int rc = derive(g);
  if (rc == LMX_OK) rc = lmx_grp_set_monitor(g, g->mon, g->mon_user, g->mon_all);
  if (rc == LMX_OK) rc = lmx_grp_ov_derive(g);
  if (rc == LMX_OK) rc = lmx_grp_start_workers(g);
  if (rc != LMX_OK) g->bound = 0;
  return rc;
}

int lmx_grp_bind(lmx_group *g, lmx_group *shared) {
  if (g->bound) return lmx_fail(LMX_ERR_STATE, "group: already bound (use reshape)");
  if (shared && (shared->n != g->n || !shared->bound))
    return lmx_fail(LMX_ERR_ARG,
                    "group: the shared group must be bound on as many contexts "
                    "(%d) as this one, it has %d%s",
                    g->n, shared->n, shared->bound ? "" : " and is not bound");
  LMX_TRY(slice_batch(g));
  lmx_executor **fresh = lmx_calloc((size_t)g->n, sizeof *fresh);
  if (!fresh) return lmx_fail_nomem("group executors", (size_t)g->n * sizeof *fresh);
  int rc = bind_all(g, shared ? shared->exec : NULL, fresh);
  if (rc == LMX_OK) rc = install(g, fresh);
  lmx_free(fresh);
  return rc;
}

int lmx_grp_reshape(lmx_group *g, int n, const char *const *names, const lmx_shape *shapes) {
  LMX_TRY(lmx_grp_check_bound(g));
  lmx_shape *old = lmx_calloc((size_t)g->nin + 1, sizeof *old);
  lmx_executor **fresh = lmx_calloc((size_t)g->n, sizeof *fresh);
  if (!old || !fresh) {
    lmx_free(old), lmx_free(fresh);
    return lmx_fail_nomem("group reshape", (size_t)g->nin * sizeof *old);
  }
  memcpy(old, g->in_shape, (size_t)g->nin * sizeof *old);
  int rc = LMX_OK, changed = 0;
  for (int k = 0; k < n && rc == LMX_OK; k++) {
    int in = find_input(g, names[k]);
    if (in < 0)
      rc = lmx_fail(LMX_ERR_NOTFOUND, "group: reshape: '%s' is not an input", names[k]);
    else if (!lmx_shape_equal(&g->in_shape[in], &shapes[k]))
      changed = 1, g->in_shape[in] = shapes[k];
  }
  if (rc == LMX_OK && changed) rc = slice_batch(g);
  if (rc == LMX_OK && changed) rc = bind_all(g, g->orig, fresh);
  if (rc == LMX_OK && changed) rc = install(g, fresh);
  if (rc != LMX_OK && g->bound) { /* the old executors stay: restore their shapes */
    memcpy(g->in_shape, old, (size_t)g->nin * sizeof *old);
    slice_batch(g);
  }
  lmx_free(old), lmx_free(fresh);
  return rc;
}
