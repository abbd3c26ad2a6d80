/* compose.c — composition (nnvm Symbol::Compose) and deep copy.
 *
 * Atomic composition: the symbol is one op node without inputs. Positional inputs fill
 * its inputs in order; named inputs match the op's input names (arguments then aux
 * states); every input still missing becomes a new variable "<node>_<input>" carrying a
 * copy of the op node's attributes. Then variable versions are refreshed (aux inputs
 * bump their variable's version) and aux variables get the op's __init__ hint.
 * A node must never become reachable from itself: composing a node with a graph that
 * already uses it is refused (no cycles, ever).
 *
 * General composition (the symbol is already composed): inputs by name only; each
 * variable whose name matches is replaced by the given symbol. We do it on a deep copy
 * (MXNet's Symbol.__call__), so other symbols sharing the old nodes are unaffected.
 */
#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "graph.h"

static int is_atomic(const lmx_symbol *s) {
  lmx_node *n = s->out[0].node;
  for (int i = 1; i < s->nout; i++)
    if (s->out[i].node != n) return 0;
  return n->op && n->ninputs == 0 && n->ncdeps == 0;
}

static int candidates_fail(const lmx_node *n, const char *bad) {
  lmx_sbuf sb = LMX_SBUF_INIT;
  char buf[128];
  int total = lmx_node_num_inputs(n);
  for (int i = 0; i < total; i++) {
    lmx_node_input_name(n, i, buf, sizeof buf);
    lmx_sbuf_addf(&sb, "%s%s", i ? ", " : "", buf);
  }
  int rc = lmx_fail(LMX_ERR_ARG, "%s '%s': input '%s' not found; candidate inputs: %s",
                    n->op->name, n->name, bad, sb.failed ? "?" : lmx_sbuf_str(&sb));
  lmx_sbuf_release(&sb);
  return rc;
}

/* Fails if `target` is reachable from any of the entries. A node that only its own
 * symbol holds (one reference) is no node's input, so it is reachable only as one of the
 * entries themselves: then no walk is needed. (A walk per composed node made building an
 * n-node graph, mx.autograd.get_symbol's for one, take n^2 steps.) */
static int check_no_cycle(const lmx_node *target, const lmx_entry *in, int nin) {
  int found = 0;
  if (atomic_load_explicit(&target->rc, memory_order_acquire) == 1) {
    for (int i = 0; i < nin; i++) found |= in[i].node == target;
  } else {
    lmx_node **order;
    int n;
    LMX_TRY(lmx_dfs(in, nin, &order, &n));
    for (int i = 0; i < n; i++) found |= order[i] == target;
    lmx_free(order);
  }
  if (found)
    return lmx_fail(LMX_ERR_ARG,
                    "%s '%s': cannot use a graph that contains '%s' as its own input (cycle)",
                    target->op->name, target->name, target->name);
  return LMX_OK;
}

/* Fills slots[] from the caller's inputs; filled[i] marks given inputs. */
static int place_inputs(lmx_node *nd, int total, int n, const char *const *names,
                        lmx_symbol *const *inputs, lmx_entry *slots, char *filled) {
  char buf[128];
  if (!names && n > total)
    return lmx_fail(LMX_ERR_ARG, "%s '%s': too many inputs: expected at most %d, got %d",
                    nd->op->name, nd->name, total, n);
  int pos = 0;
  for (int i = 0; i < n; i++) {
    int k = pos;
    if (names && names[i]) {
      for (k = 0; k < total; k++) {
        lmx_node_input_name(nd, k, buf, sizeof buf);
        if (strcmp(buf, names[i]) == 0) break;
      }
      if (k == total) return candidates_fail(nd, names[i]);
      if (filled[k])
        return lmx_fail(LMX_ERR_ARG, "%s '%s': input '%s' given twice", nd->op->name,
                        nd->name, names[i]);
    } else if (pos++ >= total || (names && filled[k])) {
      return lmx_fail(LMX_ERR_ARG, "%s '%s': too many inputs: expected at most %d",
                      nd->op->name, nd->name, total);
    }
    lmx_node_input_name(nd, k, buf, sizeof buf);
    if (inputs[i]->nout != 1)
      return lmx_fail(LMX_ERR_ARG,
                      "%s '%s': input '%s' must be a single-output symbol, got %d outputs",
                      nd->op->name, nd->name, buf, inputs[i]->nout);
    slots[k] = inputs[i]->out[0];
    filled[k] = 1;
  }
  return LMX_OK;
}

/* Creates the missing-input variables; on success slots[] are all set and each created
 * variable is held once in `made`. */
static int make_missing(lmx_node *nd, int total, lmx_entry *slots, const char *filled,
                        lmx_node **made) {
  char arg[128], vname[512];
  for (int k = 0; k < total; k++) {
    if (filled[k]) continue;
    lmx_node_input_name(nd, k, arg, sizeof arg);
    if (nd->name[0])
      snprintf(vname, sizeof vname, "%s_%s", nd->name, arg);
    else
      snprintf(vname, sizeof vname, "%s", arg);
    LMX_TRY(lmx_node_new(NULL, vname, &made[k]));
    LMX_TRY(lmx_attrs_copy(&made[k]->attrs, &nd->attrs));
    slots[k] = (lmx_entry){made[k], 0, 0};
  }
  return LMX_OK;
}

static int compose_atomic(lmx_node *nd, int n, const char *const *names,
                          lmx_symbol *const *inputs) {
  int total = lmx_node_num_inputs(nd);
  if (total == 0) {
    if (n == 0) return LMX_OK;
    return lmx_fail(LMX_ERR_ARG, "%s '%s': the operator takes no inputs, got %d",
                    nd->op->name, nd->name, n);
  }
  lmx_entry *slots = lmx_calloc((size_t)total, sizeof *slots);
  char *filled = lmx_calloc((size_t)total, 1);
  lmx_node **made = lmx_calloc((size_t)total, sizeof *made);
  int rc = (!slots || !filled || !made) ? lmx_fail_nomem("composition", (size_t)total * 32)
                                        : LMX_OK;
  if (rc == LMX_OK) rc = place_inputs(nd, total, n, names, inputs, slots, filled);
  if (rc == LMX_OK) rc = check_no_cycle(nd, slots, total);
  if (rc == LMX_OK) rc = make_missing(nd, total, slots, filled, made);
  if (rc == LMX_OK) rc = lmx_node_set_inputs(nd, slots, total);
  if (rc == LMX_OK) {
    rc = lmx_node_update_versions(nd);
    if (rc != LMX_OK) lmx_node_set_inputs(nd, NULL, 0);
  }
  for (int k = 0; rc == LMX_OK && k < total; k++) rc = lmx_node_apply_input_attr(nd, k);
  for (int k = 0; made && k < total; k++) lmx_node_release(made[k]);
  lmx_free(slots);
  lmx_free(filled);
  lmx_free(made);
  return rc;
}

/* Deep copy of the graph under heads; variables named in names[] are replaced by the
 * corresponding input's head. New heads are written to out_heads (one ref each). */
static int copy_graph(const lmx_entry *heads, int nheads, int n, const char *const *names,
                      lmx_symbol *const *inputs, lmx_entry *out_heads, char *used) {
  lmx_node **order;
  int cnt;
  LMX_TRY(lmx_dfs(heads, nheads, &order, &cnt));
  lmx_ptrmap ids = {0};
  lmx_entry *map = lmx_calloc((size_t)cnt + 1, sizeof *map); /* old node -> new entry */
  int rc = map ? LMX_OK : lmx_fail_nomem("a graph copy", ((size_t)cnt + 1) * sizeof *map);
  lmx_entry *tmp = NULL;
  for (int i = 0; i < cnt && rc == LMX_OK; i++) {
    lmx_node *o = order[i];
    rc = lmx_ptrmap_put(&ids, o, i);
    int r = -1;
    for (int k = 0; !o->op && k < n; k++)
      if (strcmp(names[k], o->name) == 0) r = k;
    if (rc != LMX_OK) break;
    if (r >= 0) {
      used[r] = 1;
      map[i] = inputs[r]->out[0];
      lmx_node_retain(map[i].node);
      continue;
    }
    lmx_node *c;
    if ((rc = lmx_node_new(o->op, o->name, &c)) != LMX_OK) break;
    map[i] = (lmx_entry){c, 0, 0};
    c->version = o->version;
    if ((rc = lmx_attrs_copy(&c->attrs, &o->attrs)) || (rc = lmx_node_parse(c))) break;
    lmx_free(tmp);
    tmp = lmx_alloc((size_t)(o->ninputs + 1) * sizeof *tmp);
    if (!tmp) { rc = lmx_fail_nomem("node inputs", 0); break; }
    for (int k = 0; k < o->ninputs; k++) {
      lmx_entry m = map[lmx_ptrmap_get(&ids, o->inputs[k].node)];
      int var = o->inputs[k].node->op == NULL;
      tmp[k] = (lmx_entry){m.node, var ? m.index : o->inputs[k].index,
                           var && m.node->op ? 0 : o->inputs[k].version};
    }
    if ((rc = lmx_node_set_inputs(c, tmp, o->ninputs)) != LMX_OK) break;
    if (o->ncdeps) {
      c->cdeps = lmx_alloc((size_t)o->ncdeps * sizeof *c->cdeps);
      if (!c->cdeps) { rc = lmx_fail_nomem("control deps", 0); break; }
      for (int k = 0; k < o->ncdeps; k++) {
        c->cdeps[k] = map[lmx_ptrmap_get(&ids, o->cdeps[k])].node;
        lmx_node_retain(c->cdeps[k]);
      }
      c->ncdeps = o->ncdeps;
    }
  }
  for (int h = 0; h < nheads && rc == LMX_OK; h++) {
    lmx_entry m = map[lmx_ptrmap_get(&ids, heads[h].node)];
    out_heads[h] = (lmx_entry){m.node, heads[h].node->op ? heads[h].index : m.index, m.version};
    lmx_node_retain(m.node);
  }
  for (int i = 0; map && i < cnt; i++) lmx_node_release(map[i].node);
  lmx_free(tmp);
  lmx_free(map);
  lmx_free(order);
  lmx_ptrmap_release(&ids);
  return rc;
}

static int replace_heads(lmx_symbol *s, int n, const char *const *names,
                         lmx_symbol *const *inputs, char *used) {
  lmx_entry *nh = lmx_calloc((size_t)s->nout, sizeof *nh);
  if (!nh) return lmx_fail_nomem("symbol outputs", (size_t)s->nout * sizeof *nh);
  int rc = copy_graph(s->out, s->nout, n, names, inputs, nh, used);
  const char *nm = lmx_sym_name(s);
  for (int i = 0; rc == LMX_OK && i < n; i++)
    if (!used[i])
      rc = lmx_fail(LMX_ERR_ARG, "symbol '%s' is already composed and has no variable named "
                    "'%s' to replace", nm ? nm : "(group)", names[i]);
  if (rc != LMX_OK) {
    for (int i = 0; i < s->nout; i++)
      if (nh[i].node) lmx_node_release(nh[i].node);
    lmx_free(nh);
    return rc;
  }
  for (int i = 0; i < s->nout; i++) lmx_node_release(s->out[i].node);
  lmx_free(s->out);
  s->out = nh;
  return LMX_OK;
}

static int compose_general(lmx_symbol *s, int n, const char *const *names,
                           lmx_symbol *const *inputs) {
  const char *nm = lmx_sym_name(s);
  int npos = 0;
  for (int i = 0; i < n; i++) npos += !names || !names[i];
  if (npos > 0)
    return lmx_fail(LMX_ERR_ARG,
                    "symbol '%s' is already composed: it accepts only named inputs that "
                    "replace its variables, got %d positional input%s",
                    nm ? nm : "(group)", npos, npos == 1 ? "" : "s");
  for (int i = 0; i < n; i++)
    if (inputs[i]->nout != 1)
      return lmx_fail(LMX_ERR_ARG, "compose: input '%s' must be a single-output symbol",
                      names[i]);
  char *used = lmx_calloc((size_t)n + 1, 1);
  if (!used) return lmx_fail_nomem("composition", (size_t)n + 1);
  int rc = replace_heads(s, n, names, inputs, used);
  lmx_free(used);
  return rc;
}

int lmx_sym_compose(lmx_symbol *s, int n, const char *const *names,
                    lmx_symbol *const *inputs) {
  if (s->nout == 0) return lmx_fail(LMX_ERR_ARG, "compose: the symbol has no outputs");
  if (is_atomic(s)) return compose_atomic(s->out[0].node, n, names, inputs);
  return compose_general(s, n, names, inputs);
}

int lmx_sym_copy(const lmx_symbol *s, lmx_symbol **out) {
  lmx_entry *nh = lmx_calloc((size_t)s->nout + 1, sizeof *nh);
  if (!nh) return lmx_fail_nomem("symbol outputs", (size_t)s->nout * sizeof *nh);
  int rc = copy_graph(s->out, s->nout, 0, NULL, NULL, nh, NULL);
  if (rc == LMX_OK) rc = lmx_sym_from_entries(nh, s->nout, out);
  for (int i = 0; i < s->nout; i++)
    if (nh[i].node) lmx_node_release(nh[i].node);
  lmx_free(nh);
  return rc;
}
