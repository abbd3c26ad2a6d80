/* symbol.c — symbols: creation (variables, atomic ops), groups, output selection,
 * internals, children, deep copy.
 *
 * A symbol holds one reference to each distinct use of a node in its heads (one per
 * head entry). Symbols never own nodes exclusively: the same node may be a head of
 * many symbols (outputs of get_internals, selections), so every mutating operation
 * (compose, set_attr) is visible through all of them, as in MXNet.
 * Op creation follows MXSymbolCreateAtomicSymbol: the keys ctx_group, lr_mult, ...
 * become __ctx_group__, ...; keys that merely end in one of them (weight_lr_mult) are
 * rejected as deprecated; the current attribute scope is applied first and explicit
 * keys win.
 */
#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "graph.h"

int lmx_sym_from_entries(const lmx_entry *e, int n, lmx_symbol **out) {
  lmx_symbol *s = lmx_calloc(1, sizeof *s);
  if (!s) return lmx_fail_nomem("a symbol", sizeof *s);
  if (n > 0) {
    s->out = lmx_alloc((size_t)n * sizeof *e);
    if (!s->out) {
      lmx_free(s);
      return lmx_fail_nomem("symbol outputs", (size_t)n * sizeof *e);
    }
    memcpy(s->out, e, (size_t)n * sizeof *e);
    for (int i = 0; i < n; i++) lmx_node_retain(e[i].node);
  }
  s->nout = n;
  lmx_ref_init(&s->rc);
  *out = s;
  return LMX_OK;
}

void lmx_sym_retain(lmx_symbol *s) { lmx_ref_inc(&s->rc); }

static void free_list(lmx_symbol *s) {
  for (int i = 0; i < s->nlist; i++) lmx_free(s->list[i]);
  lmx_free(s->list);
  s->list = NULL;
  s->nlist = 0;
}

void lmx_sym_release(lmx_symbol *s) {
  if (!s || !lmx_ref_dec(&s->rc)) return;
  for (int i = 0; i < s->nout; i++) lmx_node_release(s->out[i].node);
  lmx_free(s->out);
  free_list(s);
  lmx_sbuf_release(&s->text);
  lmx_free(s->attr_val);
  lmx_free(s);
}

/* Wraps a fresh node (one reference, handed over) as a symbol of its visible outputs. */
static int sym_of_node(lmx_node *n, lmx_symbol **out) {
  int nv = lmx_node_num_visible(n);
  lmx_entry stackbuf[8];
  lmx_entry *e = nv <= 8 ? stackbuf : lmx_alloc((size_t)nv * sizeof *e);
  if (!e) {
    lmx_node_release(n);
    return lmx_fail_nomem("symbol outputs", (size_t)nv * sizeof *e);
  }
  for (int i = 0; i < nv; i++) e[i] = (lmx_entry){n, i, 0};
  int rc = lmx_sym_from_entries(e, nv, out);
  if (e != stackbuf) lmx_free(e);
  lmx_node_release(n);
  return rc;
}

static int apply_scope(lmx_node *n) {
  const lmx_attrs *sc = lmx_scope_top();
  if (!sc) return LMX_OK;
  for (int i = 0; i < sc->n; i++) {
    char buf[64];
    const char *k = sc->kv[i].key;
    if (lmx_attr_is_hidden(k)) {
      snprintf(buf, sizeof buf, "__%s__", k);
      k = buf;
    }
    LMX_TRY(lmx_attrs_set(&n->attrs, k, sc->kv[i].val));
  }
  return LMX_OK;
}

int lmx_sym_variable(const char *name, lmx_symbol **out) {
  if (!*name) return lmx_fail(LMX_ERR_ARG, "Variable: name must not be empty");
  lmx_node *n;
  LMX_TRY(lmx_node_new(NULL, name, &n));
  int rc = apply_scope(n);
  if (rc != LMX_OK) {
    lmx_node_release(n);
    return rc;
  }
  return sym_of_node(n, out);
}

/* Adds the user's key/value i to the new node, with MXNet's hidden-key rules. */
static int op_add_key(lmx_node *n, const char *key, const char *val) {
  char buf[64];
  if (lmx_attr_is_hidden(key)) {
    snprintf(buf, sizeof buf, "__%s__", key);
    return lmx_attrs_set(&n->attrs, buf, val);
  }
  if (strncmp(key, "__", 2) != 0) {
    size_t kl = strlen(key);
    static const char *const sfx[] = {"ctx_group", "lr_mult", "wd_mult", "force_mirroring",
                                      "mirror_stage", NULL};
    for (int i = 0; sfx[i]; i++) {
      size_t sl = strlen(sfx[i]);
      if (kl > sl + 1 && key[kl - sl - 1] == '_' && strcmp(key + kl - sl, sfx[i]) == 0)
        return lmx_fail(LMX_ERR_ARG,
                        "%s '%s': attribute '%s' is deprecated; set '%s' on the variable "
                        "'%s_%.*s' instead",
                        n->op->name, n->name, key, sfx[i], n->name, (int)(kl - sl - 1), key);
    }
  }
  return lmx_attrs_set(&n->attrs, key, val);
}

static int lmx_sym_new_op_named(const lmx_op *op, const char *name, int nk,
                                const char *const *keys, const char *const *vals,
                                lmx_node **out);

int lmx_sym_new_op(const char *op_name, const char *name, int nk, const char *const *keys,
                   const char *const *vals, lmx_symbol **out) {
  const lmx_op *op = lmx_op_find(op_name);
  if (!op) return lmx_fail(LMX_ERR_NOTFOUND, "unknown operator '%s'", op_name);
  char auto_name[400];
  if (!name) {
    char hint[128];
    lmx_op_hint_of(op, op_name, hint, sizeof hint);
    LMX_TRY(lmx_names_next(hint, auto_name, sizeof auto_name));
    name = auto_name;
  } else if (lmx_names_prefix()) { /* a Prefix name manager renames given names too */
    const char *pre = lmx_names_prefix();
    size_t lp = strlen(pre), ln = strlen(name);
    char *full = lmx_alloc(lp + ln + 1);
    if (!full) return lmx_fail_nomem("a prefixed node name", lp + ln + 1);
    memcpy(full, pre, lp);
    memcpy(full + lp, name, ln + 1);
    lmx_node *pn;
    int prc = lmx_sym_new_op_named(op, full, nk, keys, vals, &pn);
    lmx_free(full);
    if (prc != LMX_OK) return prc;
    return sym_of_node(pn, out);
  }
  lmx_node *n;
  LMX_TRY(lmx_sym_new_op_named(op, name, nk, keys, vals, &n));
  return sym_of_node(n, out);
}

/* The node of lmx_sym_new_op under its final name: scope attributes, then the user's keys. */
static int lmx_sym_new_op_named(const lmx_op *op, const char *name, int nk,
                                const char *const *keys, const char *const *vals,
                                lmx_node **out) {
  lmx_node *n;
  LMX_TRY(lmx_node_new(op, name, &n));
  int rc = apply_scope(n);
  for (int i = 0; rc == LMX_OK && i < nk; i++) {
    if (!keys[i] || !vals[i])
      rc = lmx_fail(LMX_ERR_ARG, "%s '%s': parameter %d has a NULL key or value", op->name,
                    name, i);
    else
      rc = op_add_key(n, keys[i], vals[i]);
  }
  if (rc == LMX_OK) rc = lmx_node_parse(n);
  if (rc != LMX_OK) {
    lmx_node_release(n);
    return rc;
  }
  *out = n;
  return LMX_OK;
}

int lmx_sym_group(int n, lmx_symbol *const *syms, lmx_symbol **out) {
  int total = 0;
  for (int i = 0; i < n; i++) total += syms[i]->nout;
  lmx_entry *e = lmx_alloc((size_t)(total + 1) * sizeof *e);
  if (!e) return lmx_fail_nomem("group outputs", (size_t)(total + 1) * sizeof *e);
  int k = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < syms[i]->nout; j++) e[k++] = syms[i]->out[j];
  int rc = lmx_sym_from_entries(e, total, out);
  lmx_free(e);
  return rc;
}

int lmx_sym_output(const lmx_symbol *s, int i, lmx_symbol **out) {
  if (i < 0 || i >= s->nout)
    return lmx_fail(LMX_ERR_ARG, "symbol output index %d out of range: the symbol has %d output%s",
                    i, s->nout, s->nout == 1 ? "" : "s");
  return lmx_sym_from_entries(&s->out[i], 1, out);
}

int lmx_sym_internals(const lmx_symbol *s, lmx_symbol **out) {
  lmx_node **order;
  int n;
  LMX_TRY(lmx_dfs(s->out, s->nout, &order, &n));
  lmx_vec e = LMX_VEC_INIT(lmx_entry);
  int rc = LMX_OK;
  for (int i = 0; i < n && rc == LMX_OK; i++) {
    lmx_node *nd = order[i];
    if (!nd->op) {
      lmx_entry x = {nd, 0, nd->version};
      rc = lmx_vec_push(&e, &x);
      continue;
    }
    int nv = lmx_node_num_visible(nd);
    for (int j = 0; j < nv && rc == LMX_OK; j++) {
      lmx_entry x = {nd, j, 0};
      rc = lmx_vec_push(&e, &x);
    }
  }
  if (rc == LMX_OK) rc = lmx_sym_from_entries(e.data, (int)e.len, out);
  lmx_vec_release(&e);
  lmx_free(order);
  return rc;
}

int lmx_sym_children(const lmx_symbol *s, lmx_symbol **out) {
  lmx_vec e = LMX_VEC_INIT(lmx_entry);
  int rc = LMX_OK;
  for (int i = 0; i < s->nout && rc == LMX_OK; i++) {
    int dup = 0;
    for (int j = 0; j < i; j++) dup |= s->out[j].node == s->out[i].node;
    if (dup) continue;
    const lmx_node *nd = s->out[i].node;
    for (int k = 0; k < nd->ninputs && rc == LMX_OK; k++) rc = lmx_vec_push(&e, &nd->inputs[k]);
  }
  if (rc == LMX_OK) rc = lmx_sym_from_entries(e.data, (int)e.len, out);
  lmx_vec_release(&e);
  return rc;
}

const char *lmx_sym_name(const lmx_symbol *s) {
  if (s->nout == 0) return NULL;
  for (int i = 1; i < s->nout; i++)
    if (s->out[i].node != s->out[0].node) return NULL;
  return s->out[0].node->name;
}
