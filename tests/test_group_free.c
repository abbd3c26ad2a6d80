/* test_group_free.c — a data-parallel group freed from inside its own step: a monitor
 * callback that calls lmx_group_free while lmx_group_forward or lmx_group_backward runs
 * (one context, and two with their worker threads). The engine holds the group while the
 * step runs, so the step finishes (every record of it is still delivered), returns
 * LMX_OK, and the group goes afterwards: nothing is used after it is freed (the ASan
 * build fails otherwise) and every engine block comes back. The Lua side, which refuses
 * to free a running group, is spec/executor_group_spec.lua. */
#include <stdint.h>
#include <stdio.h>

#include "luamx.h"

#include "check.h"

typedef struct {
  lmx_group *g;
  int calls, freed_at;
} watcher;

/* Frees the group at the first record it sees; counts every record. */
static void free_on_first(int ctx, const char *name, lmx_ndarray *arr, void *user) {
  (void)ctx, (void)name, (void)arr;
  watcher *w = user;
  if (w->calls++ == 0) {
    w->freed_at = w->calls;
    lmx_group_free(w->g);
  }
}

static int64_t live_blocks(void) {
  int64_t n = 0;
  lmx_debug_alloc_stats(&n, NULL, NULL);
  return n;
}

/* relu(data): one op, so a step gives a few records per context. */
static lmx_symbol *relu_symbol(void) {
  lmx_symbol *data = NULL, *act = NULL;
  const char *k[] = {"act_type"}, *v[] = {"relu"};
  CHECK(lmx_symbol_variable("data", &data) == LMX_OK, "%s", lmx_last_error());
  CHECK(lmx_symbol_new_op("Activation", "act", 1, k, v, &act) == LMX_OK, "%s", lmx_last_error());
  CHECK(lmx_symbol_compose(act, 1, NULL, &data) == LMX_OK, "%s", lmx_last_error());
  lmx_symbol_free(data);
  return act;
}

static lmx_group *bound_group(lmx_symbol *sym, int nctx) {
  int types[2] = {LMX_CPU, LMX_CPU}, ids[2] = {0, 1};
  lmx_group *g = NULL;
  int64_t dims[2] = {4, 3};
  CHECK(lmx_group_new(sym, nctx, types, ids, NULL, &g) == LMX_OK, "%s", lmx_last_error());
  CHECK(lmx_group_add_input(g, "data", dims, 2, 0, -1, LMX_GRAD_WRITE) == LMX_OK, "%s",
        lmx_last_error());
  CHECK(lmx_group_bind(g, NULL) == LMX_OK, "%s", lmx_last_error());
  return g;
}

/* backward = 0: freed during forward; 1: during backward (forward ran unmonitored). */
static void freed_in_step(int nctx, int backward) {
  int64_t blocks0 = live_blocks();
  lmx_symbol *sym = relu_symbol();
  lmx_group *g = bound_group(sym, nctx);
  int64_t dims[2] = {4, 3};
  lmx_ndarray *x = NULL, *hg = NULL;
  CHECK(lmx_ndarray_new(dims, 2, LMX_FLOAT32, LMX_CPU, 0, &x) == LMX_OK, "%s", lmx_last_error());
  CHECK(lmx_ndarray_new(dims, 2, LMX_FLOAT32, LMX_CPU, 0, &hg) == LMX_OK, "%s", lmx_last_error());
  const char *names[] = {"data"};
  watcher w = {g, 0, 0};
  if (backward) CHECK(lmx_group_forward(g, 1, names, &x, 1) == LMX_OK, "%s", lmx_last_error());
  CHECK(lmx_group_set_monitor(g, free_on_first, &w, 1) == LMX_OK, "%s", lmx_last_error());
  int rc = backward ? lmx_group_backward(g, 1, &hg) : lmx_group_forward(g, 1, names, &x, 1);
  CHECK(rc == LMX_OK, "%d contexts, %s: %s", nctx, backward ? "backward" : "forward",
        lmx_last_error());
  CHECK(w.freed_at == 1, "%d contexts: freed at record %d", nctx, w.freed_at);
  /* the step went on after the free: every context's records were delivered */
  CHECK(w.calls >= 2 * nctx, "%d contexts, %s: %d records", nctx,
        backward ? "backward" : "forward", w.calls);
  lmx_ndarray_free(x);
  lmx_ndarray_free(hg);
  lmx_symbol_free(sym);
  CHECK(live_blocks() == blocks0, "%d contexts: %lld blocks left", nctx,
        (long long)(live_blocks() - blocks0));
}

/* A group freed outside any step goes at once (the count is the caller's only). */
static void freed_idle(void) {
  int64_t blocks0 = live_blocks();
  lmx_symbol *sym = relu_symbol();
  lmx_group *g = bound_group(sym, 2);
  lmx_symbol_free(sym);
  CHECK(live_blocks() > blocks0);
  lmx_group_free(g);
  CHECK(live_blocks() == blocks0, "%lld blocks left", (long long)(live_blocks() - blocks0));
  CHECK(lmx_group_free(NULL) == LMX_OK);
}

int main(void) {
  freed_in_step(1, 0);
  freed_in_step(2, 0);
  freed_in_step(1, 1);
  freed_in_step(2, 1);
  freed_idle();
  return check_summary();
}
