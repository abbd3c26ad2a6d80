/* group_overlap.c — the data-parallel group's side of the dist kvstore's overlapped
 * push (lmx_grp_set_overlap; the store's side is in kv_dist_overlap.c).
 *
 * Armed with a store and the parameter names of the pushpull that follows backward
 * (Module.update's keys, in its order), the group hooks its executor's gradient hook
 * (executor.c, lists from steps.c): after each backward step it hands the store the
 * push positions of the parameters whose gradients became final, and the store starts
 * their all-reduces while the earlier layers' backward runs. lmx_grp_backward begins
 * the store's session before running the steps.
 * Only ONE context: with several, the sum over contexts would have to come first, and
 * their backward runs on worker threads, which are not the MPI thread. Only req write:
 * with add the gradient accumulates over several backwards, so it is not final after
 * one. Otherwise nothing is armed and update pushes as before.
 * Invariants: the lists (key index, gradient array and finality order per key, push
 * position per argument) are made here at arm / bind / reshape time, never per step;
 * the hooked executor is held (one reference), since a caller may keep it after the
 * group is gone, and it is unhooked on every re-derive and at destroy.
 */

#include "../core/alloc.h"
#include "../core/status.h"
#include "kvstore.h"

/* The executor's gradient hook: the finished arguments as push positions. */
static int ov_hook(int step, const int *args, int n, void *user) {
  (void)step;
  lmx_group *g = user;
  int m = 0;
  for (int i = 0; i < n; i++)
    if (g->ov_pos[args[i]] >= 0) g->ov_tmp[m++] = g->ov_pos[args[i]];
  return m ? lmx_kv_overlap_ready(g->ov_kv, m, g->ov_tmp) : LMX_OK;
}

/* Takes the hook off the executor hooked last and drops its reference. */
static void ov_unhook(lmx_group *g) {
  lmx_executor *h = g->ov_exec; /* the executor hooked last (held: it may outlive g) */
  if (h && h->hook == ov_hook && h->hook_user == g) h->hook = NULL, h->hook_user = NULL;
  lmx_exec_release(h);
  g->ov_exec = NULL;
  g->ov_armed = 0;
}

/* Key indices, gradients, finality order and the hook, for the current executors. */
int lmx_grp_ov_derive(lmx_group *g) {
  lmx_executor *x = g->bound ? g->exec[0] : NULL;
  ov_unhook(g);
  lmx_free(g->ov_key), lmx_free(g->ov_order), lmx_free(g->ov_pos), lmx_free(g->ov_tmp);
  lmx_free(g->ov_val);
  g->ov_key = g->ov_order = g->ov_pos = g->ov_tmp = NULL, g->ov_val = NULL;
  if (!g->ov_kv || !x || g->n != 1 || g->ov_n < 1 || !lmx_kv_overlap_on(g->ov_kv)) return LMX_OK;
  size_t n = (size_t)g->ov_n + 1, na = (size_t)x->plan.nargs + 1;
  g->ov_key = lmx_calloc(n, sizeof(int)), g->ov_order = lmx_calloc(n, sizeof(int));
  g->ov_tmp = lmx_calloc(n, sizeof(int)), g->ov_pos = lmx_calloc(na, sizeof(int));
  g->ov_val = lmx_calloc(n, sizeof *g->ov_val);
  if (!g->ov_key || !g->ov_order || !g->ov_tmp || !g->ov_pos || !g->ov_val)
    return lmx_fail_nomem("the group's overlap lists", (n + na) * sizeof(int) * 4);
  for (int a = 0; a < x->plan.nargs; a++) g->ov_pos[a] = -1;
  for (int k = 0; k < g->ov_n; k++) {
    int a = lmx_grp_arg_index(x, g->ov_names[k]);
    g->ov_key[k] = lmx_kv_key_index(g->ov_kv, g->ov_names[k]);
    if (a < 0 || g->ov_key[k] < 0 || !x->grads[a] || x->grad_req[a] != LMX_REQ_WRITE ||
        g->ov_pos[a] >= 0 || x->grad_final[a] < -1)
      return LMX_OK; /* not a case for overlap: the plain push */
    g->ov_pos[a] = k, g->ov_val[k] = x->grads[a], g->ov_tmp[k] = a;
    /* insertion by finality step, ties in push order (ov_tmp: scratch, the arguments) */
    int j = k;
    while (j > 0 && x->grad_final[g->ov_tmp[g->ov_order[j - 1]]] > x->grad_final[a])
      g->ov_order[j] = g->ov_order[j - 1], j--;
    g->ov_order[j] = k;
  }
  x->hook = ov_hook, x->hook_user = g;
  lmx_exec_retain(x);
  g->ov_exec = x, g->ov_armed = 1;
  return LMX_OK;
}

int lmx_grp_set_overlap(lmx_group *g, lmx_kvstore *kv, int n, const char *const *names, int *armed) {
  if (armed) *armed = 0;
  char **copy = NULL;
  if (kv && n > 0) {
    copy = lmx_calloc((size_t)n, sizeof *copy);
    int ok = copy != NULL;
    for (int k = 0; ok && k < n; k++) ok = (copy[k] = lmx_strdup(names[k])) != NULL;
    if (!ok) {
      for (int k = 0; copy && k < n; k++) lmx_free(copy[k]);
      lmx_free(copy);
      return lmx_fail_nomem("the group's overlap keys", (size_t)n * 32);
    }
  }
  for (int k = 0; g->ov_names && k < g->ov_n; k++) lmx_free(g->ov_names[k]);
  lmx_free(g->ov_names);
  g->ov_names = copy, g->ov_n = copy ? n : 0, g->ov_kv = copy ? kv : NULL;
  LMX_TRY(lmx_grp_ov_derive(g));
  if (armed) *armed = g->ov_armed;
  return LMX_OK;
}

void lmx_grp_ov_release(lmx_group *g) {
  ov_unhook(g);
  for (int k = 0; g->ov_names && k < g->ov_n; k++) lmx_free(g->ov_names[k]);
  lmx_free(g->ov_names), lmx_free(g->ov_key), lmx_free(g->ov_order), lmx_free(g->ov_pos);
  lmx_free(g->ov_tmp), lmx_free(g->ov_val);
  g->ov_names = NULL, g->ov_n = 0, g->ov_kv = NULL;
}
