/* listing.c — list_arguments/outputs/auxiliary_states/inputs, attributes, debug_str.
 *
 * Orders follow nnvm: variables in post-order DFS (first visit); arguments are the
 * variables no op mutates, auxiliary states the mutated ones (inputs of an op past its
 * argument count). Output names: a variable head is its name; an op head is
 * "<node>_<output name>" (just "<output name>" for an unnamed node).
 * Attribute listings report each hidden key twice ("__lr_mult__" and "lr_mult"), as
 * MXSymbolListAttr does; recursive listings prefix keys with "<node>$".
 * Results land in the symbol's scratch (s->list, s->text, s->attr_val): borrowed by the
 * caller until the next call of the same kind on the same symbol.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "graph.h"

/* Marks variables that some op in `order` mutates (aux inputs); mut[i] for order[i]. */
static int mark_mutated(lmx_node **order, int n, char **mut_out) {
  lmx_ptrmap ids = {0};
  char *mut = lmx_calloc((size_t)n + 1, 1);
  int rc = mut ? LMX_OK : lmx_fail_nomem("a variable list", (size_t)n + 1);
  for (int i = 0; i < n && rc == LMX_OK; i++) rc = lmx_ptrmap_put(&ids, order[i], i);
  for (int i = 0; i < n && rc == LMX_OK; i++) {
    lmx_node *nd = order[i];
    if (!nd->op) continue;
    for (int k = lmx_node_num_args(nd); k < nd->ninputs; k++)
      mut[lmx_ptrmap_get(&ids, nd->inputs[k].node)] = 1;
  }
  lmx_ptrmap_release(&ids);
  if (rc != LMX_OK) {
    lmx_free(mut);
    return rc;
  }
  *mut_out = mut;
  return LMX_OK;
}

int lmx_sym_variables(const lmx_symbol *s, lmx_node ***args, int *nargs, lmx_node ***aux,
                      int *naux) {
  lmx_node **order;
  int n;
  char *mut;
  LMX_TRY(lmx_dfs(s->out, s->nout, &order, &n));
  int rc = mark_mutated(order, n, &mut);
  if (rc != LMX_OK) {
    lmx_free(order);
    return rc;
  }
  lmx_node **a = lmx_alloc(((size_t)n + 1) * sizeof *a);
  lmx_node **x = lmx_alloc(((size_t)n + 1) * sizeof *x);
  if (!a || !x) {
    lmx_free(a);
    lmx_free(x);
    rc = lmx_fail_nomem("a variable list", (size_t)n * sizeof *a);
  } else {
    int na = 0, nx = 0;
    for (int i = 0; i < n; i++) {
      if (order[i]->op) continue;
      if (mut[i]) x[nx++] = order[i];
      else a[na++] = order[i];
    }
    *args = a, *nargs = na, *aux = x, *naux = nx;
  }
  lmx_free(mut);
  lmx_free(order);
  return rc;
}

void lmx_sym_output_name(const lmx_symbol *s, int i, lmx_sbuf *sb) {
  const lmx_entry *e = &s->out[i];
  if (!e->node->op) {
    lmx_sbuf_add(sb, e->node->name);
    return;
  }
  char buf[128];
  lmx_op_output_name(e->node->op, e->node->param, e->index, buf, sizeof buf);
  if (e->node->name[0]) lmx_sbuf_addf(sb, "%s_%s", e->node->name, buf);
  else lmx_sbuf_add(sb, buf);
}

/* Appends a copy of str to the list vector. */
static int push_str(lmx_vec *v, const char *str) {
  char *c = lmx_strdup(str);
  if (!c) return lmx_fail_nomem("a list entry", strlen(str) + 1);
  int rc = lmx_vec_push(v, &c);
  if (rc != LMX_OK) lmx_free(c);
  return rc;
}

static int push_attrs(lmx_vec *v, const lmx_node *nd, int prefixed) {
  lmx_sbuf sb = LMX_SBUF_INIT;
  int rc = LMX_OK;
  for (int i = 0; i < nd->attrs.n && rc == LMX_OK; i++) {
    const char *k = nd->attrs.kv[i].key, *val = nd->attrs.kv[i].val;
    const char *plain = lmx_attr_hidden_plain(k);
    for (int pass = 0; pass < (plain ? 2 : 1) && rc == LMX_OK; pass++) {
      lmx_sbuf_release(&sb);
      if (prefixed) lmx_sbuf_addf(&sb, "%s$", nd->name);
      lmx_sbuf_add(&sb, pass ? plain : k);
      if (sb.failed) rc = lmx_fail_nomem("an attribute list", 0);
      if (rc == LMX_OK) rc = push_str(v, lmx_sbuf_str(&sb));
      if (rc == LMX_OK) rc = push_str(v, val);
    }
  }
  lmx_sbuf_release(&sb);
  return rc;
}

static int list_nodes(const lmx_symbol *s, int kind, lmx_vec *v) {
  if (kind == LMX_LK_ATTR) {
    const char *nm = lmx_sym_name(s);
    return nm ? push_attrs(v, s->out[0].node, 0) : LMX_OK;
  }
  if (kind == LMX_LK_ATTR_ALL || kind == LMX_LK_INPUTS) {
    lmx_node **order;
    int n, rc = LMX_OK;
    LMX_TRY(lmx_dfs(s->out, s->nout, &order, &n));
    for (int i = 0; i < n && rc == LMX_OK; i++) {
      if (kind == LMX_LK_INPUTS) {
        if (!order[i]->op) rc = push_str(v, order[i]->name);
      } else {
        rc = push_attrs(v, order[i], 1);
      }
    }
    lmx_free(order);
    return rc;
  }
  lmx_node **args, **aux;
  int na, nx, rc = LMX_OK;
  LMX_TRY(lmx_sym_variables(s, &args, &na, &aux, &nx));
  lmx_node **src = kind == LMX_LK_ARGS ? args : aux;
  int cnt = kind == LMX_LK_ARGS ? na : nx;
  for (int i = 0; i < cnt && rc == LMX_OK; i++) rc = push_str(v, src[i]->name);
  lmx_free(args);
  lmx_free(aux);
  return rc;
}

int lmx_sym_list(lmx_symbol *s, int kind) {
  lmx_vec v = LMX_VEC_INIT(char *);
  int rc = LMX_OK;
  if (kind == LMX_LK_OUTPUTS) {
    lmx_sbuf sb = LMX_SBUF_INIT;
    for (int i = 0; i < s->nout && rc == LMX_OK; i++) {
      lmx_sbuf_release(&sb);
      lmx_sym_output_name(s, i, &sb);
      rc = sb.failed ? lmx_fail_nomem("an output name", 0) : push_str(&v, lmx_sbuf_str(&sb));
    }
    lmx_sbuf_release(&sb);
  } else if (kind >= LMX_LK_ARGS && kind <= LMX_LK_ATTR_ALL) {
    rc = list_nodes(s, kind, &v);
  } else {
    rc = lmx_fail(LMX_ERR_ARG, "symbol list: unknown kind %d", kind);
  }
  if (rc != LMX_OK) {
    for (size_t i = 0; i < v.len; i++) lmx_free(LMX_VEC_AT(&v, char *, i));
    lmx_vec_release(&v);
    return rc;
  }
  for (int i = 0; i < s->nlist; i++) lmx_free(s->list[i]);
  lmx_free(s->list);
  s->list = v.data;
  s->nlist = (int)v.len;
  return LMX_OK;
}

/* ---- single attributes ----------------------------------------------------------- */

int lmx_sym_get_attr(lmx_symbol *s, const char *key, const char **val) {
  *val = NULL;
  if (!lmx_sym_name(s)) return LMX_OK;
  const lmx_entry *e = &s->out[0];
  const lmx_node *nd = e->node;
  char buf[64];
  const char *v = NULL;
  if (strcmp(key, "name") == 0) v = nd->name;
  else if (strcmp(key, "op_name") == 0) v = nd->op ? nd->op->name : "null";
  else if (strcmp(key, "_value_index") == 0) {
    snprintf(buf, sizeof buf, "%d", e->index);
    v = buf;
  } else {
    v = lmx_attrs_get(&nd->attrs, key);
    if (!v && lmx_attr_is_hidden(key)) {
      char hk[64];
      snprintf(hk, sizeof hk, "__%s__", key);
      v = lmx_attrs_get(&nd->attrs, hk);
    }
  }
  if (!v) return LMX_OK;
  char *c = lmx_strdup(v);
  if (!c) return lmx_fail_nomem("an attribute value", strlen(v) + 1);
  lmx_free(s->attr_val);
  s->attr_val = c;
  *val = c;
  return LMX_OK;
}

int lmx_sym_set_attr(lmx_symbol *s, const char *key, const char *val) {
  if (!lmx_sym_name(s))
    return lmx_fail(LMX_ERR_ARG, "set_attr('%s'): only a symbol with a single head node "
                    "can have attributes set (this one has %d outputs)", key, s->nout);
  lmx_node *nd = s->out[0].node;
  if (strcmp(key, "name") == 0) {
    char *c = lmx_strdup(val);
    if (!c) return lmx_fail_nomem("a node name", strlen(val) + 1);
    lmx_free(nd->name);
    nd->name = c;
    return LMX_OK;
  }
  return lmx_node_set_attr(nd, key, val);
}

/* ---- debug_str (nnvm Symbol::Print) ----------------------------------------------- */

static int cmp_kv(const void *a, const void *b) {
  return strcmp(((const lmx_kv *)a)->key, ((const lmx_kv *)b)->key);
}

static void print_op(lmx_sbuf *sb, const lmx_node *nd) {
  lmx_sbuf_add(sb, "--------------------\n");
  lmx_sbuf_addf(sb, "Op:%s, Name=%s\nInputs:\n", nd->op->name, nd->name);
  for (int i = 0; i < nd->ninputs; i++) {
    const lmx_entry *e = &nd->inputs[i];
    lmx_sbuf_addf(sb, "\targ[%d]=%s(%d)", i, e->node->name, e->index);
    if (!e->node->op) lmx_sbuf_addf(sb, " version=%d", e->version);
    lmx_sbuf_add(sb, "\n");
  }
  if (nd->attrs.n) {
    lmx_kv *kv = lmx_alloc((size_t)nd->attrs.n * sizeof *kv);
    if (!kv) {
      sb->failed = 1;
      return;
    }
    memcpy(kv, nd->attrs.kv, (size_t)nd->attrs.n * sizeof *kv);
    qsort(kv, (size_t)nd->attrs.n, sizeof *kv, cmp_kv);
    lmx_sbuf_add(sb, "Attrs:\n");
    for (int i = 0; i < nd->attrs.n; i++) lmx_sbuf_addf(sb, "\t%s=%s\n", kv[i].key, kv[i].val);
    lmx_free(kv);
  }
  if (nd->ncdeps) {
    lmx_sbuf_add(sb, "Control deps:\n");
    for (int i = 0; i < nd->ncdeps; i++)
      lmx_sbuf_addf(sb, "\tcdep[%d]=%s\n", i, nd->cdeps[i]->name);
  }
}

int lmx_sym_debug_str(lmx_symbol *s) {
  lmx_sbuf sb = LMX_SBUF_INIT;
  const lmx_node *h = s->nout ? s->out[0].node : NULL;
  if (s->nout == 1 && h->ninputs == 0 && h->ncdeps == 0) {
    if (!h->op) lmx_sbuf_addf(&sb, "Variable:%s\n", h->name);
    else lmx_sbuf_addf(&sb, "AtomicFunctor  Op:%s\n", h->op->name);
  } else {
    lmx_sbuf_add(&sb, "Symbol Outputs:\n");
    for (int i = 0; i < s->nout; i++)
      lmx_sbuf_addf(&sb, "\toutput[%d]=%s(%d)\n", i, s->out[i].node->name, s->out[i].index);
    lmx_node **order;
    int n;
    int rc = lmx_dfs(s->out, s->nout, &order, &n);
    if (rc != LMX_OK) {
      lmx_sbuf_release(&sb);
      return rc;
    }
    for (int i = 0; i < n; i++) {
      if (!order[i]->op) lmx_sbuf_addf(&sb, "Variable:%s\n", order[i]->name);
      else print_op(&sb, order[i]);
    }
    lmx_free(order);
  }
  if (sb.failed) {
    lmx_sbuf_release(&sb);
    return lmx_fail_nomem("debug_str text", 0);
  }
  lmx_sbuf_add(&sb, "");
  lmx_sbuf_release(&s->text);
  s->text = sb;
  return LMX_OK;
}
