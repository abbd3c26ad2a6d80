/* scope.c — MXNet's name manager (automatic node names) and attribute scopes.
 *
 * Names: one process-wide counter per hint ("fullyconnected" -> fullyconnected0,
 * fullyconnected1, ...), guarded by a mutex; lmx_names_reset() forgets every counter
 * (MXNet's `with NameManager():` for tests and bucketing).
 * Attribute scopes: a thread-local stack; each level holds the merged dict of all
 * levels below it plus its own keys (inner keys win), so top() is all a new node needs.
 * Values pushed are copied; pop frees the level.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "graph.h"

typedef struct {
  char *hint;
  long long next;
} name_counter;

static pthread_mutex_t name_lock = PTHREAD_MUTEX_INITIALIZER;
static lmx_vec name_counters = LMX_VEC_INIT(name_counter);

int lmx_names_next(const char *hint, char *buf, size_t cap) {
  pthread_mutex_lock(&name_lock);
  name_counter *c = NULL;
  for (size_t i = 0; i < name_counters.len; i++) {
    name_counter *x = &LMX_VEC_AT(&name_counters, name_counter, i);
    if (strcmp(x->hint, hint) == 0) {
      c = x;
      break;
    }
  }
  if (!c) {
    name_counter nc = {lmx_strdup(hint), 0};
    if (!nc.hint || lmx_vec_push(&name_counters, &nc) != LMX_OK) {
      lmx_free(nc.hint);
      pthread_mutex_unlock(&name_lock);
      return lmx_fail_nomem("a name counter", strlen(hint) + 1);
    }
    c = &LMX_VEC_AT(&name_counters, name_counter, name_counters.len - 1);
  }
  long long k = c->next++;
  pthread_mutex_unlock(&name_lock);
  int w = snprintf(buf, cap, "%s%lld", hint, k);
  if (w < 0 || (size_t)w >= cap)
    return lmx_fail(LMX_ERR_ARG, "automatic name for hint '%.64s' is too long", hint);
  return LMX_OK;
}

void lmx_names_reset(void) {
  pthread_mutex_lock(&name_lock);
  for (size_t i = 0; i < name_counters.len; i++)
    lmx_free(LMX_VEC_AT(&name_counters, name_counter, i).hint);
  lmx_vec_release(&name_counters);
  pthread_mutex_unlock(&name_lock);
}

/* ---- attribute scopes ------------------------------------------------------------ */

enum { SCOPE_MAX_DEPTH = 256 };
static _Thread_local lmx_attrs *scope_stack;
static _Thread_local int scope_depth;

int lmx_scope_push(int n, const char *const *keys, const char *const *vals) {
  if (scope_depth >= SCOPE_MAX_DEPTH)
    return lmx_fail(LMX_ERR_STATE, "attribute scopes nested deeper than %d", SCOPE_MAX_DEPTH);
  if (!scope_stack) {
    scope_stack = lmx_calloc(SCOPE_MAX_DEPTH, sizeof *scope_stack);
    if (!scope_stack) return lmx_fail_nomem("the attribute scope stack", 0);
  }
  lmx_attrs *lvl = &scope_stack[scope_depth];
  memset(lvl, 0, sizeof *lvl);
  int rc = scope_depth > 0 ? lmx_attrs_copy(lvl, &scope_stack[scope_depth - 1]) : LMX_OK;
  for (int i = 0; rc == LMX_OK && i < n; i++) {
    if (!keys[i] || !vals[i]) {
      rc = lmx_fail(LMX_ERR_ARG, "attribute scope: key/value %d is NULL", i);
      break;
    }
    rc = lmx_attrs_set(lvl, keys[i], vals[i]);
  }
  if (rc != LMX_OK) {
    lmx_attrs_release(lvl);
    return rc;
  }
  scope_depth++;
  return LMX_OK;
}

int lmx_scope_pop(void) {
  if (scope_depth == 0) return lmx_fail(LMX_ERR_STATE, "attribute scope: pop without push");
  lmx_attrs_release(&scope_stack[--scope_depth]);
  if (scope_depth == 0) {
    lmx_free(scope_stack);
    scope_stack = NULL;
  }
  return LMX_OK;
}

const lmx_attrs *lmx_scope_top(void) {
  return scope_depth > 0 ? &scope_stack[scope_depth - 1] : NULL;
}
