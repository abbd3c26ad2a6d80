/* node.c — graph nodes and their ordered attribute dictionaries.
 *
 * Invariants: attribute keys are unique in a dict and kept in insertion order (JSON
 * sorts on output, listings keep this order). A node's param block always matches its
 * attrs: every change of a non-hidden key on an op node re-parses, and a failed parse
 * leaves both the old value and the old block in place. Releasing a node releases its
 * inputs with an explicit work list, so a chain of a million nodes frees without deep
 * recursion.
 */
#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "graph.h"

/* ---- attribute dicts ------------------------------------------------------------ */

static const char *const hidden_keys[] = {"ctx_group",   "lr_mult",       "wd_mult",
                                          "force_mirroring", "mirror_stage",
                                          "profiler_scope", NULL};

int lmx_attr_is_hidden(const char *key) {
  for (int i = 0; hidden_keys[i]; i++)
    if (strcmp(key, hidden_keys[i]) == 0) return 1;
  return 0;
}

const char *lmx_attr_hidden_plain(const char *key) {
  size_t n = strlen(key);
  if (n < 5 || strncmp(key, "__", 2) != 0 || strcmp(key + n - 2, "__") != 0) return NULL;
  for (int i = 0; hidden_keys[i]; i++) {
    size_t k = strlen(hidden_keys[i]);
    if (k == n - 4 && strncmp(key + 2, hidden_keys[i], k) == 0) return hidden_keys[i];
  }
  return NULL;
}

static int attrs_find(const lmx_attrs *a, const char *key) {
  for (int i = 0; i < a->n; i++)
    if (strcmp(a->kv[i].key, key) == 0) return i;
  return -1;
}

const char *lmx_attrs_get(const lmx_attrs *a, const char *key) {
  int i = attrs_find(a, key);
  return i < 0 ? NULL : a->kv[i].val;
}

int lmx_attrs_set(lmx_attrs *a, const char *key, const char *val) {
  char *v = lmx_strdup(val);
  if (!v) return lmx_fail_nomem("an attribute value", strlen(val) + 1);
  int i = attrs_find(a, key);
  if (i >= 0) {
    lmx_free(a->kv[i].val);
    a->kv[i].val = v;
    return LMX_OK;
  }
  char *k = lmx_strdup(key);
  if (!k) {
    lmx_free(v);
    return lmx_fail_nomem("an attribute key", strlen(key) + 1);
  }
  if (a->n == a->cap) {
    int cap = a->cap ? a->cap * 2 : 4;
    lmx_kv *p = lmx_realloc(a->kv, (size_t)cap * sizeof *p);
    if (!p) {
      lmx_free(k);
      lmx_free(v);
      return lmx_fail_nomem("an attribute dict", (size_t)cap * sizeof *p);
    }
    a->kv = p;
    a->cap = cap;
  }
  a->kv[a->n].key = k;
  a->kv[a->n].val = v;
  a->n++;
  return LMX_OK;
}

int lmx_attrs_remove(lmx_attrs *a, const char *key) {
  int i = attrs_find(a, key);
  if (i < 0) return 0;
  lmx_free(a->kv[i].key);
  lmx_free(a->kv[i].val);
  memmove(a->kv + i, a->kv + i + 1, (size_t)(a->n - i - 1) * sizeof *a->kv);
  a->n--;
  return 1;
}

int lmx_attrs_copy(lmx_attrs *dst, const lmx_attrs *src) {
  for (int i = 0; i < src->n; i++) LMX_TRY(lmx_attrs_set(dst, src->kv[i].key, src->kv[i].val));
  return LMX_OK;
}

void lmx_attrs_release(lmx_attrs *a) {
  for (int i = 0; i < a->n; i++) {
    lmx_free(a->kv[i].key);
    lmx_free(a->kv[i].val);
  }
  lmx_free(a->kv);
  a->kv = NULL;
  a->n = a->cap = 0;
}

/* ---- nodes ------------------------------------------------------------------------ */

int lmx_node_new(const lmx_op *op, const char *name, lmx_node **out) {
  lmx_node *n = lmx_calloc(1, sizeof *n);
  if (!n) return lmx_fail_nomem("a graph node", sizeof *n);
  n->name = lmx_strdup(name ? name : "");
  if (!n->name) {
    lmx_free(n);
    return lmx_fail_nomem("a node name", name ? strlen(name) + 1 : 1);
  }
  lmx_ref_init(&n->rc);
  n->op = op;
  *out = n;
  return LMX_OK;
}

void lmx_node_retain(lmx_node *n) { lmx_ref_inc(&n->rc); }

static void node_destroy_shallow(lmx_node *n) {
  if (n->op && n->param) lmx_op_params_free(n->op, n->param);
  lmx_attrs_release(&n->attrs);
  lmx_free(n->name);
  lmx_free(n->inputs);
  lmx_free(n->cdeps);
  lmx_free(n);
}

void lmx_node_release(lmx_node *n) {
  if (!n || !lmx_ref_dec(&n->rc)) return;
  /* Work list of nodes whose count reached zero; their inputs are released in turn. */
  lmx_vec work = LMX_VEC_INIT(lmx_node *);
  lmx_node *cur = n;
  for (;;) {
    for (int i = 0; i < cur->ninputs + cur->ncdeps; i++) {
      lmx_node *c = i < cur->ninputs ? cur->inputs[i].node : cur->cdeps[i - cur->ninputs];
      if (!lmx_ref_dec(&c->rc)) continue;
      if (lmx_vec_push(&work, &c) != LMX_OK) {
        /* Out of memory while freeing: fall back to recursion for this one. */
        lmx_ref_inc(&c->rc);
        lmx_node_release(c);
      }
    }
    node_destroy_shallow(cur);
    if (work.len == 0) break;
    cur = LMX_VEC_AT(&work, lmx_node *, --work.len);
  }
  lmx_vec_release(&work);
}

int lmx_node_parse(lmx_node *n) {
  if (!n->op) return LMX_OK;
  int k = n->attrs.n;
  const char **keys = lmx_alloc((size_t)(k + 1) * 2 * sizeof *keys);
  if (!keys) return lmx_fail_nomem("parameter keys", (size_t)(k + 1) * 2 * sizeof *keys);
  const char **vals = keys + k + 1;
  for (int i = 0; i < k; i++) {
    keys[i] = n->attrs.kv[i].key;
    vals[i] = n->attrs.kv[i].val;
  }
  void *p = NULL;
  int rc = lmx_op_params_parse(n->op, n->name, keys, vals, k, &p);
  lmx_free(keys);
  if (rc != LMX_OK) return rc;
  if (n->param) lmx_op_params_free(n->op, n->param);
  n->param = p;
  return LMX_OK;
}

int lmx_node_num_args(const lmx_node *n) {
  return n->op ? lmx_op_num_inputs(n->op, n->param) : 0;
}

int lmx_node_num_inputs(const lmx_node *n) {
  return n->op ? lmx_op_num_inputs(n->op, n->param) + lmx_op_num_aux(n->op, n->param) : 0;
}

int lmx_node_num_outputs(const lmx_node *n) {
  return n->op ? lmx_op_num_outputs(n->op, n->param) : 1;
}

int lmx_node_num_visible(const lmx_node *n) {
  return n->op ? lmx_op_num_visible_outputs(n->op, n->param) : 1;
}

void lmx_node_input_name(const lmx_node *n, int i, char *buf, size_t cap) {
  int na = lmx_node_num_args(n);
  if (i < na)
    lmx_op_input_name(n->op, n->param, i, buf, cap);
  else
    lmx_op_aux_name(n->op, n->param, i - na, buf, cap);
}

int lmx_node_set_inputs(lmx_node *n, const lmx_entry *in, int nin) {
  lmx_entry *e = NULL;
  if (nin > 0) {
    e = lmx_alloc((size_t)nin * sizeof *e);
    if (!e) return lmx_fail_nomem("node inputs", (size_t)nin * sizeof *e);
    memcpy(e, in, (size_t)nin * sizeof *e);
    for (int i = 0; i < nin; i++) lmx_node_retain(e[i].node);
  }
  for (int i = 0; i < n->ninputs; i++) lmx_node_release(n->inputs[i].node);
  lmx_free(n->inputs);
  n->inputs = e;
  n->ninputs = nin;
  return LMX_OK;
}

int lmx_node_update_versions(lmx_node *n) {
  int na = lmx_node_num_args(n);
  for (int i = 0; i < n->ninputs; i++) {
    lmx_entry *e = &n->inputs[i];
    if (e->node->op) {
      if (i >= na)
        return lmx_fail(LMX_ERR_ARG,
                        "%s '%s': aux state %d must be a variable (it is mutated), got the "
                        "output of '%s'",
                        n->op->name, n->name, i - na, e->node->name);
      continue;
    }
    e->version = i >= na ? ++e->node->version : e->node->version;
  }
  return LMX_OK;
}

int lmx_node_apply_input_attr(lmx_node *n, int i) {
  int na = lmx_node_num_args(n);
  if (!n->op->aux_init || i < na || i >= n->ninputs) return LMX_OK;
  lmx_node *v = n->inputs[i].node;
  const char *init = n->op->aux_init[i - na];
  if (v->op || !init || lmx_attrs_get(&v->attrs, "__init__")) return LMX_OK;
  return lmx_attrs_set(&v->attrs, "__init__", init);
}

int lmx_node_set_attr(lmx_node *n, const char *key, const char *val) {
  char buf[64];
  if (lmx_attr_is_hidden(key)) {
    snprintf(buf, sizeof buf, "__%s__", key);
    key = buf;
  }
  const char *old = lmx_attrs_get(&n->attrs, key);
  char *saved = old ? lmx_strdup(old) : NULL;
  if (old && !saved) return lmx_fail_nomem("an attribute value", strlen(old) + 1);
  int rc = lmx_attrs_set(&n->attrs, key, val);
  if (rc == LMX_OK && n->op && strncmp(key, "__", 2) != 0) {
    rc = lmx_node_parse(n);
    if (rc != LMX_OK) {
      if (saved) lmx_attrs_set(&n->attrs, key, saved);
      else lmx_attrs_remove(&n->attrs, key);
    }
  }
  lmx_free(saved);
  return rc;
}
