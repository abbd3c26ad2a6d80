/* api_training.c — entry points of the "Training" section of luamx.h: the bucketing
 * pool, the data-parallel executor group, the kvstore. Argument checks and shape
 * conversion only; the logic is in src/exec/bucket.c, group.c, kvstore.c.
 */
#include <stdio.h>
#include <string.h>

#include "../core/status.h"
#include "../exec/training.h"
#include "../tensor/dtype.h"
#include "api.h"

static int req_ok(int req, const char *fn, const char *name) {
  if (req == LMX_GRAD_NULL || req == LMX_GRAD_WRITE || req == LMX_GRAD_ADD) return LMX_OK;
  return lmx_fail(LMX_ERR_ARG, "%s: '%s': unknown write request %d (null 0, write 1, add 3)", fn,
                  name, req);
}

/* Shapes from (ndims, dims) into out[n]. */
static int shapes_of(const char *fn, int n, const char *const *names, const int64_t *dims,
                     const int *ndims, lmx_shape *out) {
  int at = 0;
  for (int i = 0; i < n; i++) {
    LMX_NEED(names[i], fn, "names[i]");
    if (ndims[i] < 0 || ndims[i] > LMX_MAX_NDIM)
      return lmx_fail(LMX_ERR_ARG, "%s: '%s': ndim %d is out of range (0..%d)", fn, names[i],
                      ndims[i], LMX_MAX_NDIM);
    out[i].ndim = ndims[i];
    for (int d = 0; d < ndims[i]; d++) {
      if (dims[at] < 0)
        return lmx_fail(LMX_ERR_ARG, "%s: '%s': negative dimension %lld", fn, names[i],
                        (long long)dims[at]);
      out[i].dim[d] = dims[at++];
    }
    char what[160];
    snprintf(what, sizeof what, "%s: '%s'", fn, names[i]);
    LMX_TRY(lmx_shape_check(&out[i], what));
  }
  return LMX_OK;
}

int lmx_split_slices(int64_t batch, int n, const double *workload, int64_t *begin, int64_t *end) {
  LMX_ENTER();
  LMX_NEED(workload, "lmx_split_slices", "workload");
  LMX_NEED(begin, "lmx_split_slices", "begin");
  LMX_NEED(end, "lmx_split_slices", "end");
  if (n < 1 || batch < 0)
    return lmx_fail(LMX_ERR_ARG,
                    "lmx_split_slices: need n >= 1 and batch >= 0, got n = %d, "
                    "batch = %lld",
                    n, (long long)batch);
  return lmx_train_split(batch, n, workload, begin, end);
}

/* ---- bucketing ---- */

int lmx_bucketing_new(int64_t default_key, lmx_executor *default_exec, lmx_bucketing **out) {
  LMX_ENTER();
  LMX_NEED(default_exec, "lmx_bucketing_new", "default_exec");
  LMX_NEED(out, "lmx_bucketing_new", "out");
  return lmx_bkt_create(default_key, default_exec, out);
}

int lmx_bucketing_free(lmx_bucketing *bp) {
  lmx_bkt_destroy(bp);
  return LMX_OK;
}

int lmx_bucketing_bind(lmx_bucketing *bp, int64_t key, lmx_symbol *sym, int n,
                       const char *const *names, const int64_t *dims, const int *ndims,
                       lmx_executor **out) {
  LMX_ENTER();
  const char *fn = "lmx_bucketing_bind";
  LMX_NEED(bp, fn, "bp");
  LMX_NEED(sym, fn, "sym");
  LMX_NEED(out, fn, "out");
  if (n < 0 || (n > 0 && (!names || !dims || !ndims)))
    return lmx_fail(LMX_ERR_ARG, "%s: bad input list (n = %d)", fn, n);
  lmx_shape sh[64];
  if (n > 64) return lmx_fail(LMX_ERR_ARG, "%s: at most 64 inputs, got %d", fn, n);
  LMX_TRY(shapes_of(fn, n, names, dims, ndims, sh));
  lmx_executor *x;
  LMX_TRY(lmx_bkt_add(bp, key, sym, n, names, sh, &x));
  lmx_exec_retain(x);
  *out = x;
  return LMX_OK;
}

int lmx_bucketing_get(lmx_bucketing *bp, int64_t key, lmx_executor **out) {
  LMX_ENTER();
  LMX_NEED(bp, "lmx_bucketing_get", "bp");
  LMX_NEED(out, "lmx_bucketing_get", "out");
  lmx_executor *x;
  LMX_TRY(lmx_bkt_find(bp, key, &x));
  lmx_exec_retain(x);
  *out = x;
  return LMX_OK;
}

int lmx_bucketing_keys(const lmx_bucketing *bp, int cap, int64_t *keys, int *n) {
  LMX_ENTER();
  LMX_NEED(bp, "lmx_bucketing_keys", "bp");
  LMX_NEED(n, "lmx_bucketing_keys", "n");
  if (cap > 0) LMX_NEED(keys, "lmx_bucketing_keys", "keys");
  return lmx_bkt_keys(bp, cap, keys, n);
}

int lmx_bucketing_memory(const lmx_bucketing *bp, int64_t *pool, int64_t *arrays) {
  LMX_ENTER();
  LMX_NEED(bp, "lmx_bucketing_memory", "bp");
  return lmx_bkt_mem(bp, pool, arrays);
}

/* ---- group ---- */

int lmx_group_new(lmx_symbol *sym, int n, const int *dev_types, const int *dev_ids,
                  const double *workload, lmx_group **out) {
  LMX_ENTER();
  LMX_NEED(sym, "lmx_group_new", "sym");
  LMX_NEED(dev_types, "lmx_group_new", "dev_types");
  LMX_NEED(dev_ids, "lmx_group_new", "dev_ids");
  LMX_NEED(out, "lmx_group_new", "out");
  return lmx_grp_create(sym, n, dev_types, dev_ids, workload, out);
}

int lmx_group_free(lmx_group *g) {
  lmx_grp_release(g);
  return LMX_OK;
}

int lmx_group_add_input(lmx_group *g, const char *name, const int64_t *dims, int ndim,
                        int batch_axis, int dtype, int req) {
  LMX_ENTER();
  const char *fn = "lmx_group_add_input";
  LMX_NEED(g, fn, "g");
  LMX_NEED(name, fn, "name");
  if (ndim > 0) LMX_NEED(dims, fn, "dims");
  lmx_shape sh;
  LMX_TRY(shapes_of(fn, 1, &name, dims, &ndim, &sh));
  LMX_TRY(req_ok(req, fn, name));
  if (dtype != -1 && !lmx_dtype_valid(dtype))
    return lmx_fail(LMX_ERR_ARG, "%s: '%s': unknown dtype code %d", fn, name, dtype);
  return lmx_grp_add_input(g, name, &sh, batch_axis, dtype, req);
}

int lmx_group_add_param(lmx_group *g, const char *name, int req) {
  LMX_ENTER();
  LMX_NEED(g, "lmx_group_add_param", "g");
  LMX_NEED(name, "lmx_group_add_param", "name");
  LMX_TRY(req_ok(req, "lmx_group_add_param", name));
  return lmx_grp_add_param(g, name, req);
}

int lmx_group_bind(lmx_group *g, lmx_group *shared) {
  LMX_ENTER();
  LMX_NEED(g, "lmx_group_bind", "g");
  return lmx_grp_bind(g, shared);
}

int lmx_group_reshape(lmx_group *g, int n, const char *const *names, const int64_t *dims,
                      const int *ndims) {
  LMX_ENTER();
  const char *fn = "lmx_group_reshape";
  LMX_NEED(g, fn, "g");
  if (n < 0 || n > 64 || (n > 0 && (!names || !dims || !ndims)))
    return lmx_fail(LMX_ERR_ARG, "%s: bad input list (n = %d, at most 64)", fn, n);
  lmx_shape sh[64];
  LMX_TRY(shapes_of(fn, n, names, dims, ndims, sh));
  return lmx_grp_reshape(g, n, names, sh);
}

int lmx_group_info(const lmx_group *g, int *num_ctx, int64_t *batch, int *num_outputs) {
  LMX_ENTER();
  LMX_NEED(g, "lmx_group_info", "g");
  if (num_ctx) *num_ctx = g->n;
  if (batch) *batch = g->bound ? g->batch : 0;
  if (num_outputs) *num_outputs = g->bound ? g->nheads : 0;
  return LMX_OK;
}

int lmx_group_slices(const lmx_group *g, int64_t *begin, int64_t *end) {
  LMX_ENTER();
  LMX_NEED(g, "lmx_group_slices", "g");
  LMX_NEED(begin, "lmx_group_slices", "begin");
  LMX_NEED(end, "lmx_group_slices", "end");
  LMX_TRY(lmx_grp_check_bound(g));
  memcpy(begin, g->begin, (size_t)g->n * sizeof *begin);
  memcpy(end, g->end, (size_t)g->n * sizeof *end);
  return LMX_OK;
}

int lmx_group_executor(lmx_group *g, int i, lmx_executor **exe) {
  LMX_ENTER();
  LMX_NEED(g, "lmx_group_executor", "g");
  LMX_NEED(exe, "lmx_group_executor", "exe");
  LMX_TRY(lmx_grp_check_bound(g));
  if (i < 0 || i >= g->n)
    return lmx_fail(LMX_ERR_ARG, "lmx_group_executor: context %d is out of range (0..%d)", i,
                    g->n - 1);
  lmx_exec_retain(g->exec[i]);
  *exe = g->exec[i];
  return LMX_OK;
}

static int arrays_ok(const char *fn, int n, const char *const *names, lmx_ndarray *const *a) {
  if (n < 0 || (n > 0 && (!names || !a)))
    return lmx_fail(LMX_ERR_ARG, "%s: bad array list (n = %d)", fn, n);
  for (int i = 0; i < n; i++) {
    LMX_NEED(names[i], fn, "names[i]");
    if (!a[i]) return lmx_fail(LMX_ERR_ARG, "%s: the array for '%s' is NULL", fn, names[i]);
  }
  return LMX_OK;
}

int lmx_group_load(lmx_group *g, int n, const char *const *names, lmx_ndarray *const *arrays) {
  LMX_ENTER();
  LMX_NEED(g, "lmx_group_load", "g");
  LMX_TRY(arrays_ok("lmx_group_load", n, names, arrays));
  return lmx_grp_load(g, n, names, arrays);
}

int lmx_group_forward(lmx_group *g, int n, const char *const *names, lmx_ndarray *const *arrays,
                      int is_train) {
  LMX_ENTER();
  LMX_NEED(g, "lmx_group_forward", "g");
  LMX_TRY(arrays_ok("lmx_group_forward", n, names, arrays));
  lmx_grp_retain(g); /* a callback that frees the group frees it after the step */
  int rc = lmx_grp_forward(g, n, names, arrays, is_train != 0);
  lmx_grp_release(g);
  return rc;
}

int lmx_group_backward(lmx_group *g, int n, lmx_ndarray *const *head_grads) {
  LMX_ENTER();
  LMX_NEED(g, "lmx_group_backward", "g");
  if (n < 0 || (n > 0 && !head_grads))
    return lmx_fail(LMX_ERR_ARG, "lmx_group_backward: bad out_grads list (n = %d)", n);
  lmx_grp_retain(g);
  int rc = lmx_grp_backward(g, n, head_grads);
  lmx_grp_release(g);
  return rc;
}

int lmx_group_sum_grads(lmx_group *g) {
  LMX_ENTER();
  LMX_NEED(g, "lmx_group_sum_grads", "g");
  return lmx_grp_sum_grads(g);
}

int lmx_group_output(lmx_group *g, int h, int ctx, lmx_ndarray **out) {
  LMX_ENTER();
  LMX_NEED(g, "lmx_group_output", "g");
  LMX_NEED(out, "lmx_group_output", "out");
  return lmx_grp_output(g, h, ctx, out);
}

int lmx_group_input_grad(lmx_group *g, int i, int ctx, lmx_ndarray **out) {
  LMX_ENTER();
  LMX_NEED(g, "lmx_group_input_grad", "g");
  LMX_NEED(out, "lmx_group_input_grad", "out");
  return lmx_grp_input_grad(g, i, ctx, out);
}

int lmx_group_set_monitor(lmx_group *g, lmx_group_monitor_fn fn, void *user, int monitor_all) {
  LMX_ENTER();
  LMX_NEED(g, "lmx_group_set_monitor", "g");
  return lmx_grp_set_monitor(g, fn, user, monitor_all);
}

int lmx_group_set_overlap(lmx_group *g, lmx_kvstore *kv, int n, const char *const *names,
                          int *armed) {
  LMX_ENTER();
  LMX_NEED(g, "lmx_group_set_overlap", "g");
  if (kv && (n < 0 || (n > 0 && !names)))
    return lmx_fail(LMX_ERR_ARG, "lmx_group_set_overlap: bad names list (n = %d)", n);
  for (int k = 0; kv && k < n; k++)
    if (!names[k]) return lmx_fail(LMX_ERR_ARG, "lmx_group_set_overlap: names[%d] is NULL", k);
  return lmx_grp_set_overlap(g, kv, n, names, armed);
}

/* ---- kvstore ---- */

int lmx_kvstore_new(const char *type, lmx_kvstore **out) {
  LMX_ENTER();
  LMX_NEED(type, "lmx_kvstore_new", "type");
  LMX_NEED(out, "lmx_kvstore_new", "out");
  return lmx_kv_create(type, out);
}

int lmx_kvstore_free(lmx_kvstore *kv) {
  lmx_kv_destroy(kv);
  return LMX_OK;
}

int lmx_kvstore_type(const lmx_kvstore *kv, const char **type) {
  LMX_ENTER();
  LMX_NEED(kv, "lmx_kvstore_type", "kv");
  LMX_NEED(type, "lmx_kvstore_type", "type");
  *type = lmx_kv_type(kv);
  return LMX_OK;
}

int lmx_kvstore_init(lmx_kvstore *kv, const char *key, const lmx_ndarray *value) {
  LMX_ENTER();
  LMX_NEED(kv, "lmx_kvstore_init", "kv");
  LMX_NEED(key, "lmx_kvstore_init", "key");
  LMX_NEED(value, "lmx_kvstore_init", "value");
  return lmx_kv_init(kv, key, value);
}

int lmx_kvstore_push(lmx_kvstore *kv, const char *key, lmx_ndarray *const *values, int n) {
  LMX_ENTER();
  LMX_NEED(kv, "lmx_kvstore_push", "kv");
  LMX_NEED(key, "lmx_kvstore_push", "key");
  if (n > 0) LMX_NEED(values, "lmx_kvstore_push", "values");
  for (int i = 0; i < n; i++)
    if (!values[i]) return lmx_fail(LMX_ERR_ARG, "lmx_kvstore_push: value %d is NULL", i + 1);
  return lmx_kv_push(kv, key, values, n);
}

int lmx_kvstore_pull(lmx_kvstore *kv, const char *key, lmx_ndarray *const *outs, int n) {
  LMX_ENTER();
  LMX_NEED(kv, "lmx_kvstore_pull", "kv");
  LMX_NEED(key, "lmx_kvstore_pull", "key");
  if (n > 0) LMX_NEED(outs, "lmx_kvstore_pull", "outs");
  for (int i = 0; i < n; i++)
    if (!outs[i]) return lmx_fail(LMX_ERR_ARG, "lmx_kvstore_pull: output %d is NULL", i + 1);
  return lmx_kv_pull(kv, key, outs, n);
}

int lmx_kvstore_set_updater(lmx_kvstore *kv, lmx_kv_updater_fn fn, void *user) {
  LMX_ENTER();
  LMX_NEED(kv, "lmx_kvstore_set_updater", "kv");
  lmx_kv_set_updater(kv, fn, user);
  return LMX_OK;
}

int lmx_kvstore_rank(const lmx_kvstore *kv, int *rank) {
  LMX_ENTER();
  LMX_NEED(kv, "lmx_kvstore_rank", "kv");
  LMX_NEED(rank, "lmx_kvstore_rank", "rank");
  *rank = lmx_kv_rank(kv);
  return LMX_OK;
}

int lmx_kvstore_num_workers(const lmx_kvstore *kv, int *num_workers) {
  LMX_ENTER();
  LMX_NEED(kv, "lmx_kvstore_num_workers", "kv");
  LMX_NEED(num_workers, "lmx_kvstore_num_workers", "num_workers");
  *num_workers = lmx_kv_num_workers(kv);
  return LMX_OK;
}

int lmx_kvstore_barrier(lmx_kvstore *kv) {
  LMX_ENTER();
  LMX_NEED(kv, "lmx_kvstore_barrier", "kv");
  return lmx_kv_barrier(kv);
}

int lmx_kvstore_check(lmx_kvstore *kv, const char *what, int64_t value) {
  LMX_ENTER();
  LMX_NEED(kv, "lmx_kvstore_check", "kv");
  LMX_NEED(what, "lmx_kvstore_check", "what");
  return lmx_kv_check(kv, what, value);
}

int lmx_kvstore_pushpull(lmx_kvstore *kv, int nkeys, const char *const *keys,
                         lmx_ndarray *const *values, int nvalues, lmx_ndarray *const *outs,
                         int nouts) {
  LMX_ENTER();
  LMX_NEED(kv, "lmx_kvstore_pushpull", "kv");
  if (nkeys < 0 || nvalues < 0 || nouts < 0)
    return lmx_fail(LMX_ERR_ARG, "lmx_kvstore_pushpull: negative count (nkeys %d, nvalues %d, nouts %d)",
                    nkeys, nvalues, nouts);
  if (nkeys > 0) LMX_NEED(keys, "lmx_kvstore_pushpull", "keys");
  if (!values && !outs)
    return lmx_fail(LMX_ERR_ARG, "lmx_kvstore_pushpull: values and outs are both NULL");
  if (values && nvalues == 0)
    return lmx_fail(LMX_ERR_ARG, "lmx_kvstore_pushpull: values given with nvalues 0");
  for (int k = 0; k < nkeys; k++) {
    if (!keys[k]) return lmx_fail(LMX_ERR_ARG, "lmx_kvstore_pushpull: key %d is NULL", k + 1);
    for (int i = 0; values && i < nvalues; i++)
      if (!values[(size_t)k * (size_t)nvalues + (size_t)i])
        return lmx_fail(LMX_ERR_ARG, "lmx_kvstore_pushpull: key '%s': value %d is NULL", keys[k], i + 1);
    for (int i = 0; outs && i < nouts; i++)
      if (!outs[(size_t)k * (size_t)nouts + (size_t)i])
        return lmx_fail(LMX_ERR_ARG, "lmx_kvstore_pushpull: key '%s': output %d is NULL", keys[k], i + 1);
  }
  return lmx_kv_pushpull(kv, nkeys, keys, values, nvalues, outs, nouts);
}

int lmx_kvstore_save_optimizer_states(lmx_kvstore *kv, lmx_kv_states_fn fn, void *user) {
  LMX_ENTER();
  LMX_NEED(kv, "lmx_kvstore_save_optimizer_states", "kv");
  LMX_NEED(fn, "lmx_kvstore_save_optimizer_states", "fn");
  return lmx_kv_save_states(kv, fn, user);
}

int lmx_kvstore_load_optimizer_states(lmx_kvstore *kv, lmx_kv_states_fn fn, void *user) {
  LMX_ENTER();
  LMX_NEED(kv, "lmx_kvstore_load_optimizer_states", "kv");
  LMX_NEED(fn, "lmx_kvstore_load_optimizer_states", "fn");
  return lmx_kv_load_states(kv, fn, user);
}
