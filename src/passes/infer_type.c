/* infer_type.c — dtype inference to a fixed point (MXNet's InferType pass).
 *
 * Same sweep structure as infer_shape.c over an int per entry (-1 = unknown). Variables
 * are seeded from __dtype__ (MXNet's numeric code) where the caller gave nothing. A
 * dtype never changes once known; a conflict names node, op and input.
 */
#include <stdlib.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "../tensor/dtype.h"
#include "infer.h"

static int seed_attrs(const lmx_igraph *g, int *dt) {
  for (int i = 0; i < g->nnodes; i++) {
    const lmx_node *nd = g->nodes[i];
    const char *t = nd->op ? NULL : lmx_attrs_get(&nd->attrs, "__dtype__");
    int *sl = &dt[g->entry_ptr[i]];
    if (!t || *sl >= 0) continue;
    char *end;
    long v = strtol(t, &end, 10);
    if (end == t || *end || (v != -1 && (v < 0 || v > LMX_BFLOAT16 || !lmx_dtype_valid((int)v))))
      return lmx_fail(LMX_ERR_FORMAT, "variable '%s': attribute __dtype__ '%.64s' is not a "
                      "dtype code (0..%d or %d)", nd->name, t, LMX_INT64, LMX_BFLOAT16);
    *sl = (int)v;
  }
  return LMX_OK;
}

static const char *dname(int d) {
  const char *n = d >= 0 ? lmx_dtype_name(d) : NULL;
  return n ? n : "unknown";
}

static int infer_node(const lmx_igraph *g, int nid, int *dt, int *buf, int *changed) {
  const lmx_node *nd = g->nodes[nid];
  int nin = nd->ninputs, na = lmx_node_num_args(nd), nout = lmx_node_num_outputs(nd);
  for (int k = 0; k < nin; k++) buf[k] = dt[g->in_entry[g->in_ptr[nid] + k]];
  for (int k = 0; k < nout; k++) buf[nin + k] = dt[g->entry_ptr[nid] + k];
  int *out = lmx_alloc(((size_t)nout + 1) * sizeof *out);
  if (!out) return lmx_fail_nomem("type inference", (size_t)nout * sizeof *out);
  memcpy(out, buf + nin, (size_t)nout * sizeof *out);
  lmx_op_ctx c = {.op = nd->op, .param = nd->param, .node = nd->name};
  int rc = lmx_op_infer_type(&c, buf, na, out, nout, buf + na, nin - na);
  if (rc == LMX_OK) memcpy(buf + nin, out, (size_t)nout * sizeof *out);
  for (int k = 0; rc == LMX_OK && k < nin + nout; k++) {
    int e = k < nin ? g->in_entry[g->in_ptr[nid] + k] : g->entry_ptr[nid] + k - nin;
    if (buf[k] < 0 || dt[e] == buf[k]) continue;
    if (dt[e] >= 0) {
      char nm[128] = "output";
      if (k < nin) lmx_node_input_name(nd, k, nm, sizeof nm);
      rc = lmx_fail(LMX_ERR_DTYPE, "%s '%s': %s '%s': expected %s, got %s", nd->op->name,
                    nd->name, k < nin ? "input" : "output", nm, dname(buf[k]), dname(dt[e]));
    } else {
      dt[e] = buf[k];
      *changed = 1;
    }
  }
  lmx_free(out);
  return rc;
}

int lmx_infer_types(const lmx_igraph *g, int *dt) {
  LMX_TRY(seed_attrs(g, dt));
  int width = 1;
  for (int i = 0; i < g->nnodes; i++) {
    int w = g->nodes[i]->ninputs + lmx_node_num_outputs(g->nodes[i]);
    if (w > width) width = w;
  }
  int *buf = lmx_alloc((size_t)width * sizeof *buf);
  if (!buf) return lmx_fail_nomem("type inference", (size_t)width * sizeof *buf);
  int rc = LMX_OK;
  for (int round = 0; round < g->nnodes + 2 && rc == LMX_OK; round++) {
    int changed = 0;
    for (int i = 0; i < g->nnodes && rc == LMX_OK; i++)
      if (g->nodes[i]->op) rc = infer_node(g, i, dt, buf, &changed);
    for (int i = g->nnodes - 1; i >= 0 && rc == LMX_OK; i--)
      if (g->nodes[i]->op) rc = infer_node(g, i, dt, buf, &changed);
    if (!changed) break;
  }
  lmx_free(buf);
  return rc;
}
