/* cse.c — common-subexpression elimination (MXNet's EliminateCommonExpr, on by
 * default at bind).
 *
 * Walking the graph in DFS order (inputs before consumers), an op node whose operator,
 * attribute dictionary (compared as a set of key/value pairs) and input entries equal
 * those of an earlier kept node is replaced by that node. Variables are never merged;
 * nor are ops that draw random numbers (LMX_OPF_RANDOM) or write their inputs
 * (LMX_OPF_MUTATES_AUX, LMX_OPF_UPDATE), whose repeated application differs.
 * A node whose inputs were remapped is copied (name, attributes, parameters); a node
 * whose inputs did not change is shared with the input symbol, so the result costs
 * nothing when there is nothing to merge. A copy differs from the node it was made from
 * only in its inputs: the caller may ask for the list of (copy, original) pairs, so what
 * outlives the pass (an executor's plan) can point at the originals, which the input
 * symbol keeps, and the copies go with the result.
 */
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "plan.h"

static int attrs_equal(const lmx_attrs *a, const lmx_attrs *b) {
  if (a->n != b->n) return 0;
  for (int i = 0; i < a->n; i++) {
    const char *v = lmx_attrs_get(b, a->kv[i].key);
    if (!v || strcmp(v, a->kv[i].val) != 0) return 0;
  }
  return 1;
}

static int mergeable(const lmx_node *n) {
  return n->op && !(n->op->flags & (LMX_OPF_RANDOM | LMX_OPF_MUTATES_AUX | LMX_OPF_UPDATE));
}

static int same_inputs(const lmx_node *a, const lmx_entry *in, int nin) {
  if (a->ninputs != nin) return 0;
  for (int i = 0; i < nin; i++)
    if (a->inputs[i].node != in[i].node || a->inputs[i].index != in[i].index) return 0;
  return 1;
}

static int copy_node(const lmx_node *old, const lmx_entry *in, lmx_node **out) {
  lmx_node *n;
  LMX_TRY(lmx_node_new(old->op, old->name, &n));
  int rc = lmx_attrs_copy(&n->attrs, &old->attrs);
  if (rc == LMX_OK) rc = lmx_node_parse(n);
  if (rc == LMX_OK) rc = lmx_node_set_inputs(n, in, old->ninputs);
  if (rc != LMX_OK) {
    lmx_node_release(n);
    return rc;
  }
  *out = n;
  return LMX_OK;
}

/* Maps order[i] to its replacement in map[i] (new nodes carry one reference in owned). */
static int rewrite(lmx_node **order, int n, lmx_node **map, char *owned, lmx_entry *in,
                   lmx_ptrmap *ids) {
  for (int i = 0; i < n; i++) {
    lmx_node *nd = order[i];
    LMX_TRY(lmx_ptrmap_put(ids, nd, i));
    map[i] = nd;
    if (!nd->op) continue;
    for (int k = 0; k < nd->ninputs; k++) {
      in[k] = nd->inputs[k];
      in[k].node = map[lmx_ptrmap_get(ids, nd->inputs[k].node)];
    }
    if (mergeable(nd)) {
      for (int j = 0; j < i; j++) {
        lmx_node *c = map[j];
        if (c != order[j] && !owned[j]) continue; /* j itself was merged away */
        if (c->op == nd->op && mergeable(c) && same_inputs(c, in, nd->ninputs) &&
            attrs_equal(&c->attrs, &nd->attrs)) {
          map[i] = c;
          break;
        }
      }
      if (map[i] != nd) continue;
    }
    if (same_inputs(nd, in, nd->ninputs)) continue;
    LMX_TRY(copy_node(nd, in, &map[i]));
    owned[i] = 1;
  }
  return LMX_OK;
}

/* The (copy, original) pairs of the rewrite, into origins (entries borrowed). */
static int list_origins(lmx_node **order, int n, lmx_node **map, const char *owned,
                        lmx_cse_origins *origins) {
  int k = 0;
  for (int i = 0; i < n; i++) k += owned[i] != 0;
  origins->copy = lmx_calloc((size_t)k + 1, sizeof *origins->copy);
  origins->orig = lmx_calloc((size_t)k + 1, sizeof *origins->orig);
  if (!origins->copy || !origins->orig) {
    lmx_cse_origins_release(origins);
    return lmx_fail_nomem("common-subexpression elimination", (size_t)k * 2 * sizeof(void *));
  }
  for (int i = 0; i < n; i++) {
    if (!owned[i]) continue;
    origins->copy[origins->n] = map[i], origins->orig[origins->n] = order[i];
    int rc = lmx_ptrmap_put(&origins->index, map[i], origins->n++);
    if (rc != LMX_OK) {
      lmx_cse_origins_release(origins);
      return rc;
    }
  }
  return LMX_OK;
}

const lmx_node *lmx_cse_origin(const lmx_cse_origins *o, const lmx_node *node) {
  int i = o && o->n ? lmx_ptrmap_get(&o->index, node) : -1;
  return i >= 0 ? o->orig[i] : node;
}

void lmx_cse_origins_release(lmx_cse_origins *o) {
  if (!o) return;
  lmx_free(o->copy);
  lmx_free(o->orig);
  lmx_ptrmap_release(&o->index);
  memset(o, 0, sizeof *o);
}

int lmx_pass_cse(const lmx_symbol *s, lmx_symbol **out, lmx_cse_origins *origins) {
  if (origins) memset(origins, 0, sizeof *origins);
  lmx_node **order;
  int n;
  LMX_TRY(lmx_dfs(s->out, s->nout, &order, &n));
  int width = 1;
  for (int i = 0; i < n; i++)
    if (order[i]->ninputs > width) width = order[i]->ninputs;
  lmx_node **map = lmx_calloc((size_t)n + 1, sizeof *map);
  char *owned = lmx_calloc((size_t)n + 1, 1);
  lmx_entry *in = lmx_alloc(((size_t)width + (size_t)s->nout + 1) * sizeof *in);
  lmx_ptrmap ids = {0};
  int rc = !map || !owned || !in ? lmx_fail_nomem("common-subexpression elimination",
                                                  (size_t)n * 9) : LMX_OK;
  if (rc == LMX_OK) rc = rewrite(order, n, map, owned, in, &ids);
  if (rc == LMX_OK) {
    for (int h = 0; h < s->nout; h++) {
      in[h] = s->out[h];
      in[h].node = map[lmx_ptrmap_get(&ids, s->out[h].node)];
    }
    rc = lmx_sym_from_entries(in, s->nout, out);
  }
  if (rc == LMX_OK && origins && (rc = list_origins(order, n, map, owned, origins)) != LMX_OK) {
    lmx_sym_release(*out);
    *out = NULL;
  }
  for (int i = 0; map && owned && i < n; i++)
    if (owned[i]) lmx_node_release(map[i]);
  lmx_ptrmap_release(&ids);
  lmx_free(map);
  lmx_free(owned);
  lmx_free(in);
  lmx_free(order);
  return rc;
}
