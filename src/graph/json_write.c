/* json_write.c — MXNet's symbol JSON, written byte for byte as dmlc::JSONWriter does.
 *
 * Writer rules (dmlc/json.h): an object or array is opened as single-line or multi-line;
 * every item after the first is preceded by ", "; in a multi-line scope each item (and
 * the closing bracket of a non-empty scope) starts on a new line indented by two spaces
 * per open scope. Which scopes are multi-line: the top object and every node object
 * always; arrays of plain values (ids, [nid, idx, ver] entries) only when they hold
 * more than 10 items; the `nodes` array always; string maps when they hold more than one
 * key. Entries themselves are always single-line. No trailing newline.
 * Layout (nnvm saveload_json.cc): nodes (DFS order; op, name, attrs sorted by key when
 * non-empty, inputs, control_deps when non-empty), arg_nodes (every variable),
 * node_row_ptr, heads, attrs {"mxnet_version": ["int", LMX_MXNET_JSON_VERSION]}.
 * Strings escape \r \n \\ \t " like dmlc, and other control bytes as \u00XX so our output
 * always parses.
 */
#include <stdlib.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "graph.h"

enum { MAX_SCOPES = 16 };

typedef struct {
  lmx_sbuf *sb;
  int depth;
  char multi[MAX_SCOPES];
  int count[MAX_SCOPES];
} jw;

static void jw_newline(jw *w) {
  lmx_sbuf_add(w->sb, "\n");
  for (int i = 0; i < w->depth; i++) lmx_sbuf_add(w->sb, "  ");
}

static void jw_begin(jw *w, const char *br, int multi) {
  lmx_sbuf_add(w->sb, br);
  w->multi[w->depth] = (char)multi;
  w->count[w->depth] = 0;
  w->depth++;
}

static void jw_end(jw *w, const char *br) {
  w->depth--;
  if (w->multi[w->depth] && w->count[w->depth] != 0) jw_newline(w);
  lmx_sbuf_add(w->sb, br);
}

/* Separator before an item (array value or object key). */
static void jw_item(jw *w) {
  int d = w->depth - 1;
  if (w->count[d]++ != 0) lmx_sbuf_add(w->sb, ", ");
  if (w->multi[d]) jw_newline(w);
}

static void jw_string(jw *w, const char *s) {
  lmx_sbuf_add(w->sb, "\"");
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
      case '\r': lmx_sbuf_add(w->sb, "\\r"); break;
      case '\n': lmx_sbuf_add(w->sb, "\\n"); break;
      case '\\': lmx_sbuf_add(w->sb, "\\\\"); break;
      case '\t': lmx_sbuf_add(w->sb, "\\t"); break;
      case '"': lmx_sbuf_add(w->sb, "\\\""); break;
      default:
        if (*p < 0x20) lmx_sbuf_addf(w->sb, "\\u%04x", *p);
        else lmx_sbuf_addn(w->sb, (const char *)p, 1);
    }
  }
  lmx_sbuf_add(w->sb, "\"");
}

static void jw_key(jw *w, const char *k) {
  jw_item(w);
  jw_string(w, k);
  lmx_sbuf_add(w->sb, ": ");
}

static void jw_entry(jw *w, int nid, int idx, int ver) {
  jw_item(w);
  lmx_sbuf_addf(w->sb, "[%d, %d, %d]", nid, idx, ver);
}

static void jw_ints(jw *w, const int *v, int n) {
  jw_begin(w, "[", n > 10);
  for (int i = 0; i < n; i++) {
    jw_item(w);
    lmx_sbuf_addf(w->sb, "%d", v[i]);
  }
  jw_end(w, "]");
}

static int cmp_kv(const void *a, const void *b) {
  return strcmp(((const lmx_kv *)a)->key, ((const lmx_kv *)b)->key);
}

static int write_attrs(jw *w, const lmx_attrs *a) {
  lmx_kv *kv = lmx_alloc((size_t)a->n * sizeof *kv);
  if (!kv) return lmx_fail_nomem("JSON attributes", (size_t)a->n * sizeof *kv);
  memcpy(kv, a->kv, (size_t)a->n * sizeof *kv);
  qsort(kv, (size_t)a->n, sizeof *kv, cmp_kv);
  jw_key(w, "attrs");
  jw_begin(w, "{", a->n > 1);
  for (int i = 0; i < a->n; i++) {
    jw_key(w, kv[i].key);
    jw_string(w, kv[i].val);
  }
  jw_end(w, "}");
  lmx_free(kv);
  return LMX_OK;
}

static int write_node(jw *w, const lmx_node *nd, const lmx_ptrmap *ids) {
  jw_item(w);
  jw_begin(w, "{", 1);
  jw_key(w, "op");
  jw_string(w, nd->op ? nd->op->name : "null");
  jw_key(w, "name");
  jw_string(w, nd->name);
  if (nd->attrs.n) LMX_TRY(write_attrs(w, &nd->attrs));
  jw_key(w, "inputs");
  jw_begin(w, "[", nd->ninputs > 10);
  for (int i = 0; i < nd->ninputs; i++)
    jw_entry(w, lmx_ptrmap_get(ids, nd->inputs[i].node), nd->inputs[i].index,
             nd->inputs[i].version);
  jw_end(w, "]");
  if (nd->ncdeps) {
    jw_key(w, "control_deps");
    jw_begin(w, "[", nd->ncdeps > 10);
    for (int i = 0; i < nd->ncdeps; i++) {
      jw_item(w);
      lmx_sbuf_addf(w->sb, "%d", lmx_ptrmap_get(ids, nd->cdeps[i]));
    }
    jw_end(w, "]");
  }
  jw_end(w, "}");
  return LMX_OK;
}

/* arg_nodes and node_row_ptr. */
static int write_tables(jw *w, lmx_node **order, int n) {
  int *v = lmx_alloc(((size_t)n + 1) * sizeof *v);
  if (!v) return lmx_fail_nomem("JSON tables", ((size_t)n + 1) * sizeof *v);
  int k = 0;
  for (int i = 0; i < n; i++)
    if (!order[i]->op) v[k++] = i;
  jw_key(w, "arg_nodes");
  jw_ints(w, v, k);
  v[0] = 0;
  for (int i = 0; i < n; i++) v[i + 1] = v[i] + lmx_node_num_outputs(order[i]);
  jw_key(w, "node_row_ptr");
  jw_ints(w, v, n + 1);
  lmx_free(v);
  return LMX_OK;
}

static int write_graph(jw *w, const lmx_symbol *s, lmx_node **order, int n,
                       lmx_ptrmap *ids) {
  for (int i = 0; i < n; i++) LMX_TRY(lmx_ptrmap_put(ids, order[i], i));
  jw_begin(w, "{", 1);
  jw_key(w, "nodes");
  jw_begin(w, "[", 1);
  for (int i = 0; i < n; i++) LMX_TRY(write_node(w, order[i], ids));
  jw_end(w, "]");
  LMX_TRY(write_tables(w, order, n));
  jw_key(w, "heads");
  jw_begin(w, "[", s->nout > 10);
  for (int i = 0; i < s->nout; i++)
    jw_entry(w, lmx_ptrmap_get(ids, s->out[i].node), s->out[i].index, s->out[i].version);
  jw_end(w, "]");
  jw_key(w, "attrs");
  jw_begin(w, "{", 0);
  jw_key(w, "mxnet_version");
  lmx_sbuf_addf(w->sb, "[\"int\", %d]", (int)LMX_MXNET_JSON_VERSION);
  jw_end(w, "}");
  jw_end(w, "}");
  return LMX_OK;
}

int lmx_sym_tojson(lmx_symbol *s) {
  lmx_node **order;
  int n;
  LMX_TRY(lmx_dfs(s->out, s->nout, &order, &n));
  lmx_sbuf sb = LMX_SBUF_INIT;
  jw w = {.sb = &sb};
  lmx_ptrmap ids = {0};
  int rc = write_graph(&w, s, order, n, &ids);
  lmx_ptrmap_release(&ids);
  lmx_free(order);
  if (rc == LMX_OK && sb.failed) rc = lmx_fail_nomem("JSON text", sb.len);
  if (rc != LMX_OK) {
    lmx_sbuf_release(&sb);
    return rc;
  }
  lmx_sbuf_release(&s->text);
  s->text = sb;
  return LMX_OK;
}
