/* infer_shape.c — shape inference to a fixed point (MXNet's InferShape pass).
 *
 * Invariants: shapes only gain information (unknown dims 0 become known, ndim 0 becomes
 * some ndim); a known dim never changes, so the sweeps terminate; we still cap them at
 * nnodes + 2 rounds against a misbehaving rule. Each op sees copies of its input, output
 * and aux shapes; what it deduced is merged back into the entry table, and a merge
 * conflict (one entry used in two slots that the op filled differently) is reported
 * naming the node and the input.
 */
#include <stdlib.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "infer.h"

int lmx_parse_shape_text(const char *text, lmx_shape *s) {
  const char *p = text;
  memset(s, 0, sizeof *s);
  while (*p == ' ') p++;
  char close = *p == '(' ? ')' : *p == '[' ? ']' : 0;
  if (!close) return -1;
  p++;
  for (;;) {
    while (*p == ' ') p++;
    if (*p == close) break;
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p || v < -1 || v > ((long long)1 << 53) || s->ndim == LMX_MAX_NDIM) return -1;
    s->dim[s->ndim++] = v < 0 ? 0 : v;
    p = end;
    while (*p == ' ') p++;
    if (*p == ',') p++;
    else if (*p != close) return -1;
  }
  p++;
  while (*p == ' ') p++;
  return *p ? -1 : 0;
}

/* Merges b into *a; returns 1 when *a changed, -1 on conflict. */
static int merge(lmx_shape *a, const lmx_shape *b) {
  if (b->ndim == 0) return 0;
  if (a->ndim == 0) {
    *a = *b;
    return 1;
  }
  if (a->ndim != b->ndim) return -1;
  int ch = 0;
  for (int i = 0; i < a->ndim; i++) {
    if (b->dim[i] == 0 || a->dim[i] == b->dim[i]) continue;
    if (a->dim[i] != 0) return -1;
    a->dim[i] = b->dim[i];
    ch = 1;
  }
  return ch;
}

static int seed_attrs(const lmx_igraph *g, lmx_shape *shapes) {
  for (int i = 0; i < g->nnodes; i++) {
    const lmx_node *nd = g->nodes[i];
    const char *t = nd->op ? NULL : lmx_attrs_get(&nd->attrs, "__shape__");
    lmx_shape *sl = &shapes[g->entry_ptr[i]];
    if (!t || sl->ndim != 0) continue;
    if (lmx_parse_shape_text(t, sl) != 0)
      return lmx_fail(LMX_ERR_FORMAT, "variable '%s': attribute __shape__ '%.64s' is not a "
                      "shape such as (2, 3)", nd->name, t);
  }
  return LMX_OK;
}

static int scatter(const lmx_igraph *g, int nid, lmx_shape *shapes, const lmx_shape *buf,
                   int *changed) {
  const lmx_node *nd = g->nodes[nid];
  int nin = nd->ninputs, nout = lmx_node_num_outputs(nd);
  for (int k = 0; k < nin + nout; k++) {
    int e = k < nin ? g->in_entry[g->in_ptr[nid] + k] : g->entry_ptr[nid] + k - nin;
    int r = merge(&shapes[e], &buf[k]);
    if (r < 0) {
      char a[LMX_SHAPE_STRCAP], b[LMX_SHAPE_STRCAP], nm[128] = "output";
      if (k < nin) lmx_node_input_name(nd, k, nm, sizeof nm);
      return lmx_fail(LMX_ERR_SHAPE, "%s '%s': %s '%s': expected shape %s, got %s",
                      nd->op->name, nd->name, k < nin ? "input" : "output", nm,
                      lmx_shape_str(&buf[k], a), lmx_shape_str(&shapes[e], b));
    }
    *changed |= r;
  }
  return LMX_OK;
}

static int infer_node(const lmx_igraph *g, int nid, lmx_shape *shapes, lmx_shape *buf,
                      int *changed) {
  const lmx_node *nd = g->nodes[nid];
  int nin = nd->ninputs, na = lmx_node_num_args(nd), nout = lmx_node_num_outputs(nd);
  for (int k = 0; k < nin; k++) buf[k] = shapes[g->in_entry[g->in_ptr[nid] + k]];
  for (int k = 0; k < nout; k++) buf[nin + k] = shapes[g->entry_ptr[nid] + k];
  lmx_shape *out = lmx_alloc(((size_t)nout + 1) * sizeof *out);
  if (!out) return lmx_fail_nomem("shape inference", (size_t)nout * sizeof *out);
  memcpy(out, buf + nin, (size_t)nout * sizeof *out);
  lmx_op_ctx c = {.op = nd->op, .param = nd->param, .node = nd->name};
  int rc = lmx_op_infer_shape(&c, buf, na, out, nout, buf + na, nin - na);
  if (rc == LMX_OK) {
    memcpy(buf + nin, out, (size_t)nout * sizeof *out);
    rc = scatter(g, nid, shapes, buf, changed);
  }
  lmx_free(out);
  return rc;
}

int lmx_infer_shapes(const lmx_igraph *g, lmx_shape *shapes) {
  LMX_TRY(seed_attrs(g, shapes));
  int width = 1;
  for (int i = 0; i < g->nnodes; i++) {
    int w = g->nodes[i]->ninputs + lmx_node_num_outputs(g->nodes[i]);
    if (w > width) width = w;
  }
  lmx_shape *buf = lmx_alloc((size_t)width * sizeof *buf);
  if (!buf) return lmx_fail_nomem("shape inference", (size_t)width * sizeof *buf);
  int rc = LMX_OK;
  for (int round = 0; round < g->nnodes + 2 && rc == LMX_OK; round++) {
    int changed = 0;
    for (int i = 0; i < g->nnodes && rc == LMX_OK; i++)
      if (g->nodes[i]->op) rc = infer_node(g, i, shapes, buf, &changed);
    for (int i = g->nnodes - 1; i >= 0 && rc == LMX_OK; i--)
      if (g->nodes[i]->op) rc = infer_node(g, i, shapes, buf, &changed);
    if (!changed) break;
  }
  lmx_free(buf);
  return rc;
}
