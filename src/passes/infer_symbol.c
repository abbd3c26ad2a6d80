/* infer_symbol.c — shape/type inference for a symbol as the C API presents it:
 * given values by name or position, results in list order (arguments, outputs, aux).
 *
 * Builds the indexed graph, places the caller's values on the variables' entries, runs
 * the pass, and copies the results out. A name may be an argument or an aux state;
 * unknown names fail listing the candidates. In complete (non-partial) mode, unknown
 * results fail with MXNet's "Cannot decide ..." message naming up to 10 arguments.
 */
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "infer.h"
#include "infer_symbol.h"

static int find_var(const lmx_igraph *g, const char *key) {
  for (int i = 0; i < g->nargs; i++)
    if (strcmp(g->nodes[g->args[i]]->name, key) == 0) return g->args[i];
  for (int i = 0; i < g->naux; i++)
    if (strcmp(g->nodes[g->aux[i]]->name, key) == 0) return g->aux[i];
  return -1;
}

static int unknown_name(const lmx_igraph *g, const char *what, const char *key) {
  lmx_sbuf sb = LMX_SBUF_INIT;
  for (int i = 0; i < g->nargs + g->naux; i++) {
    int id = i < g->nargs ? g->args[i] : g->aux[i - g->nargs];
    lmx_sbuf_addf(&sb, "%s%s", i ? ", " : "", g->nodes[id]->name);
  }
  int rc = lmx_fail(LMX_ERR_ARG, "%s: '%s' is not an argument or auxiliary state; candidates: %s",
                    what, key, sb.failed ? "?" : lmx_sbuf_str(&sb));
  lmx_sbuf_release(&sb);
  return rc;
}

/* Entry id of input i (by key or position); fails naming the problem. */
static int input_entry(const lmx_igraph *g, const char *what, int n,
                       const char *const *keys, int i, int *eid) {
  if (!keys) {
    if (n > g->nargs)
      return lmx_fail(LMX_ERR_ARG, "%s: %d positional values given but the symbol has %d "
                      "arguments", what, n, g->nargs);
    *eid = g->entry_ptr[g->args[i]];
    return LMX_OK;
  }
  if (!keys[i]) return lmx_fail(LMX_ERR_ARG, "%s: name %d is NULL", what, i);
  int id = find_var(g, keys[i]);
  if (id < 0) return unknown_name(g, what, keys[i]);
  *eid = g->entry_ptr[id];
  return LMX_OK;
}

/* Entry id of result slot k (arguments, outputs, aux). */
static int slot_entry(const lmx_igraph *g, int k) {
  if (k < g->nargs) return g->entry_ptr[g->args[k]];
  k -= g->nargs;
  if (k < g->nheads) return g->heads[k];
  return g->entry_ptr[g->aux[k - g->nheads]];
}

static int check_cap(const lmx_igraph *g, const char *what, int cap) {
  int need = g->nargs + g->nheads + g->naux;
  if (cap < need)
    return lmx_fail(LMX_ERR_ARG, "%s: result buffers hold %d slots, need %d (arguments + "
                    "outputs + aux states)", what, cap, need);
  return LMX_OK;
}

static int shapes_run(const lmx_igraph *g, int n, const char *const *keys,
                      const lmx_shape *given, int partial, lmx_shape *sh, int *complete) {
  const char *what = "infer_shape";
  for (int i = 0; i < n; i++) {
    int e;
    LMX_TRY(input_entry(g, what, n, keys, i, &e));
    sh[e] = given[i];
  }
  LMX_TRY(lmx_infer_shapes(g, sh));
  int total = g->nargs + g->nheads + g->naux;
  *complete = 1;
  for (int k = 0; k < total; k++) *complete &= lmx_shape_known(&sh[slot_entry(g, k)]);
  if (*complete || partial) return LMX_OK;
  lmx_sbuf sb = LMX_SBUF_INIT;
  char buf[LMX_SHAPE_STRCAP];
  for (int i = 0, shown = 0; i < g->nargs && shown < 10; i++) {
    const lmx_shape *s = &sh[g->entry_ptr[g->args[i]]];
    if (lmx_shape_known(s)) continue;
    lmx_sbuf_addf(&sb, "\n\t%s: %s", g->nodes[g->args[i]]->name,
                  s->ndim ? lmx_shape_str(s, buf) : "()");
    shown++;
  }
  int rc = lmx_fail(LMX_ERR_SHAPE, "Cannot decide shape for the following arguments (0s in "
                    "shape means unknown dimensions). Consider providing them as input:%s",
                    lmx_sbuf_str(&sb));
  lmx_sbuf_release(&sb);
  return rc;
}

int lmx_infer_symbol_shapes(const lmx_symbol *s, int n, const char *const *keys,
                            const lmx_shape *given, int partial, int cap, lmx_shape *out,
                            int *complete) {
  lmx_igraph g;
  LMX_TRY(lmx_igraph_build(s, &g));
  lmx_shape *sh = lmx_calloc((size_t)g.nentries + 1, sizeof *sh);
  int rc = sh ? check_cap(&g, "infer_shape", cap)
              : lmx_fail_nomem("shape inference", (size_t)g.nentries * sizeof *sh);
  if (rc == LMX_OK) rc = shapes_run(&g, n, keys, given, partial, sh, complete);
  for (int k = 0; rc == LMX_OK && k < g.nargs + g.nheads + g.naux; k++)
    out[k] = sh[slot_entry(&g, k)];
  lmx_free(sh);
  lmx_igraph_release(&g);
  return rc;
}

static int types_run(const lmx_igraph *g, int n, const char *const *keys, const int *given,
                     int partial, int *dt, int *complete) {
  for (int i = 0; i < n; i++) {
    int e;
    LMX_TRY(input_entry(g, "infer_type", n, keys, i, &e));
    dt[e] = given[i];
  }
  LMX_TRY(lmx_infer_types(g, dt));
  int total = g->nargs + g->nheads + g->naux;
  *complete = 1;
  for (int k = 0; k < total; k++) *complete &= dt[slot_entry(g, k)] >= 0;
  if (*complete || partial) return LMX_OK;
  lmx_sbuf sb = LMX_SBUF_INIT;
  for (int i = 0, shown = 0; i < g->nargs && shown < 10; i++) {
    if (dt[g->entry_ptr[g->args[i]]] >= 0) continue;
    lmx_sbuf_addf(&sb, "\n\t%s", g->nodes[g->args[i]]->name);
    shown++;
  }
  int rc = lmx_fail(LMX_ERR_DTYPE, "Cannot decide type for the following arguments. Consider "
                    "providing them as input:%s", lmx_sbuf_str(&sb));
  lmx_sbuf_release(&sb);
  return rc;
}

int lmx_infer_symbol_types(const lmx_symbol *s, int n, const char *const *keys,
                           const int *given, int partial, int cap, int *out, int *complete) {
  lmx_igraph g;
  LMX_TRY(lmx_igraph_build(s, &g));
  int *dt = lmx_alloc(((size_t)g.nentries + 1) * sizeof *dt);
  int rc = dt ? check_cap(&g, "infer_type", cap)
              : lmx_fail_nomem("type inference", (size_t)g.nentries * sizeof *dt);
  for (int i = 0; dt && i < g.nentries; i++) dt[i] = -1;
  if (rc == LMX_OK) rc = types_run(&g, n, keys, given, partial, dt, complete);
  for (int k = 0; rc == LMX_OK && k < g.nargs + g.nheads + g.naux; k++)
    out[k] = dt[slot_entry(&g, k)];
  lmx_free(dt);
  lmx_igraph_release(&g);
  return rc;
}
