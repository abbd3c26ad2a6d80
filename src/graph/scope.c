/* scope.c — MXNet's name manager (automatic node names) and attribute scopes.
 *
 * Names: one process-wide counter per hint ("fullyconnected" -> fullyconnected0,
 * fullyconnected1, ...), guarded by a mutex; lmx_names_reset() forgets every counter
 * (MXNet's `with NameManager():` for tests and bucketing).
 * Name managers (MXNet's NameManager / Prefix): each has its own counters and a prefix
 * ("" for a plain NameManager). A thread-local stack of entered managers (each holding a
 * reference) decides: while one is entered, automatic names count in its counters and
 * every operator node name, given or automatic, gets its prefix. All counters share the
 * one mutex, so a manager entered on several threads stays consistent.
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

struct lmx_name_manager {
  lmx_refcount rc;
  char *prefix;
  lmx_vec counters; /* name_counter */
};

static pthread_mutex_t name_lock = PTHREAD_MUTEX_INITIALIZER;
static lmx_vec name_counters = LMX_VEC_INIT(name_counter);

enum { NAME_STACK_MAX = 256 };
static _Thread_local lmx_name_manager *name_stack[NAME_STACK_MAX];
static _Thread_local int name_depth;

static lmx_name_manager *current_manager(void) {
  return name_depth > 0 ? name_stack[name_depth - 1] : NULL;
}

static void counters_release(lmx_vec *v) {
  for (size_t i = 0; i < v->len; i++) lmx_free(LMX_VEC_AT(v, name_counter, i).hint);
  lmx_vec_release(v);
}

/* "<prefix><hint><k>" with k from `counters` (the caller holds name_lock). */
static int counter_next(lmx_vec *counters, const char *prefix, const char *hint, char *buf,
                        size_t cap) {
  name_counter *c = NULL;
  for (size_t i = 0; i < counters->len; i++) {
    name_counter *x = &LMX_VEC_AT(counters, name_counter, i);
    if (strcmp(x->hint, hint) == 0) {
      c = x;
      break;
    }
  }
  if (!c) {
    name_counter nc = {lmx_strdup(hint), 0};
    if (!nc.hint || lmx_vec_push(counters, &nc) != LMX_OK) {
      lmx_free(nc.hint);
      return lmx_fail_nomem("a name counter", strlen(hint) + 1);
    }
    c = &LMX_VEC_AT(counters, name_counter, counters->len - 1);
  }
  int w = snprintf(buf, cap, "%s%s%lld", prefix, hint, c->next);
  if (w < 0 || (size_t)w >= cap)
    return lmx_fail(LMX_ERR_ARG, "automatic name for hint '%.64s' is too long", hint);
  c->next++;
  return LMX_OK;
}

int lmx_names_next(const char *hint, char *buf, size_t cap) {
  return lmx_names_get(current_manager(), hint, buf, cap);
}

int lmx_names_get(lmx_name_manager *m, const char *hint, char *buf, size_t cap) {
  pthread_mutex_lock(&name_lock);
  int rc = m ? counter_next(&m->counters, m->prefix, hint, buf, cap)
             : counter_next(&name_counters, "", hint, buf, cap);
  pthread_mutex_unlock(&name_lock);
  return rc;
}

const char *lmx_names_prefix(void) {
  lmx_name_manager *m = current_manager();
  return m && m->prefix[0] ? m->prefix : NULL;
}

void lmx_names_reset(void) {
  pthread_mutex_lock(&name_lock);
  counters_release(&name_counters);
  pthread_mutex_unlock(&name_lock);
}

int lmx_names_manager_new(const char *prefix, lmx_name_manager **out) {
  lmx_name_manager *m = lmx_calloc(1, sizeof *m);
  if (!m) return lmx_fail_nomem("a name manager", sizeof *m);
  m->prefix = lmx_strdup(prefix ? prefix : "");
  if (!m->prefix) {
    lmx_free(m);
    return lmx_fail_nomem("a name manager prefix", prefix ? strlen(prefix) + 1 : 1);
  }
  lmx_ref_init(&m->rc);
  lmx_vec init = LMX_VEC_INIT(name_counter);
  m->counters = init;
  *out = m;
  return LMX_OK;
}

void lmx_names_manager_retain(lmx_name_manager *m) { lmx_ref_inc(&m->rc); }

void lmx_names_manager_release(lmx_name_manager *m) {
  if (!m || !lmx_ref_dec(&m->rc)) return;
  pthread_mutex_lock(&name_lock);
  counters_release(&m->counters);
  pthread_mutex_unlock(&name_lock);
  lmx_free(m->prefix);
  lmx_free(m);
}

int lmx_names_enter(lmx_name_manager *m) {
  if (name_depth >= NAME_STACK_MAX)
    return lmx_fail(LMX_ERR_STATE, "name managers nested deeper than %d", NAME_STACK_MAX);
  lmx_names_manager_retain(m);
  name_stack[name_depth++] = m;
  return LMX_OK;
}

int lmx_names_exit(void) {
  if (name_depth == 0) return lmx_fail(LMX_ERR_STATE, "name manager: exit without enter");
  lmx_name_manager *m = name_stack[--name_depth];
  name_stack[name_depth] = NULL;
  lmx_names_manager_release(m);
  return LMX_OK;
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
