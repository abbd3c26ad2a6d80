/* kv_local.c — the `local` (and, on CPU contexts, `device`) kvstore backend: one worker,
 * the reduction over devices runs on the host through lmx_kv_sum_into (kvstore.c).
 * It is also the model for a new backend: each verb is a few lines over the front's
 * helpers (kvstore.h). Rank 0 of 1 worker; barrier and checks succeed at once; the one
 * worker writes and reads optimizer states.
 */
#include "../core/status.h"
#include "kvstore.h"

static int l_init(lmx_kvstore *kv, int n, lmx_kv_entry *const *e) {
  (void)kv, (void)n, (void)e; /* the front already stored the copy */
  return LMX_OK;
}

static int l_push(lmx_kvstore *kv, int n, lmx_kv_entry *const *e, lmx_ndarray *const *values,
                  int nv) {
  for (int k = 0; k < n; k++) {
    LMX_TRY(lmx_kvf_merge(kv, e[k], values + (size_t)k * (size_t)nv, nv));
    LMX_TRY(lmx_kvf_apply(kv, e[k]));
  }
  return LMX_OK;
}

static int l_barrier(lmx_kvstore *kv) { return (void)kv, LMX_OK; }
static int l_rank(const lmx_kvstore *kv) { return (void)kv, 0; }
static int l_workers(const lmx_kvstore *kv) { return (void)kv, 1; }

static int l_check(lmx_kvstore *kv, const char *what, int64_t value) {
  (void)kv, (void)what, (void)value;
  return LMX_OK;
}

static int l_states(lmx_kvstore *kv, lmx_kv_states_fn fn, void *user) {
  if (fn(user) != 0)
    return lmx_fail(LMX_ERR_IO, "kvstore '%s': the optimizer-state callback failed", kv->type);
  return LMX_OK;
}

const lmx_kv_backend lmx_kv_local = {
    .name = "local",
    .init = l_init,
    .push = l_push,
    .pull = lmx_kvf_pull,
    .barrier = l_barrier,
    .rank = l_rank,
    .num_workers = l_workers,
    .check = l_check,
    .save_states = l_states,
    .load_states = l_states,
};
