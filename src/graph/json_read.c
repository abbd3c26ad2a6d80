/* json_read.c — loads MXNet symbol JSON (current, NNVM-era and pre-NNVM legacy forms).
 *
 * The text is untrusted. Parsing is jansson's (nesting depth capped by jansson at 2048,
 * NUL bytes and duplicate object keys rejected); every field is then checked for type and
 * range before use, and every failure is LMX_ERR_FORMAT with a message naming the node
 * index, its name and the field. Structural rules that make the result a valid graph:
 *  - a node's inputs and control deps refer only to *earlier* nodes (no forward, self or
 *    cyclic references), output indices are checked against the producer's output count;
 *  - variables have no inputs; every op is a registered operator with valid parameters;
 *  - after the legacy upgrades (json_upgrade.c) every op has exactly its number of
 *    inputs (arguments + aux states).
 * Limits: LOAD_MAX_BYTES of text, LOAD_MAX_NODES nodes, LOAD_MAX_INPUTS entries per node.
 * Nodes are built in file order; those not reachable from the heads are dropped.
 */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "json_load.h"

enum { LOAD_MAX_NODES = 1 << 20, LOAD_MAX_INPUTS = 1 << 16 };
#define LOAD_MAX_BYTES ((size_t)256 << 20)

static const char *node_label(const lmx_jgraph *g, int i) {
  return i < g->n && g->nodes[i] ? g->nodes[i]->name : "?";
}

/* Reads [nid, index] or [nid, index, version]; nid must be < limit. */
static int read_entry(const lmx_jgraph *g, json_t *e, int limit, const char *where,
                      lmx_entry *out) {
  size_t sz = json_is_array(e) ? json_array_size(e) : 0;
  if (sz != 2 && sz != 3)
    return lmx_fail(LMX_ERR_FORMAT, "%s: expected an entry [node_id, index, version]", where);
  long long v[3] = {0, 0, 0};
  for (size_t k = 0; k < sz; k++) {
    json_t *x = json_array_get(e, k);
    if (!json_is_integer(x) || json_integer_value(x) < 0 ||
        json_integer_value(x) > INT_MAX)
      return lmx_fail(LMX_ERR_FORMAT, "%s: element %zu must be a non-negative integer", where,
                      k);
    v[k] = json_integer_value(x);
  }
  if (v[0] >= limit)
    return lmx_fail(LMX_ERR_FORMAT, "%s: refers to node %lld, which is not an earlier node "
                    "(%s)", where, v[0], v[0] < g->total ? "forward, self or cyclic reference"
                                                             : "out of range");
  *out = (lmx_entry){g->nodes[v[0]], (int)v[1], (int)v[2]};
  return LMX_OK;
}

static int read_attr_obj(lmx_node *nd, int i, json_t *obj, const char *field) {
  if (!obj) return LMX_OK;
  if (!json_is_object(obj))
    return lmx_fail(LMX_ERR_FORMAT, "node %d '%s': field '%s' must be an object", i, nd->name,
                    field);
  const char *k;
  json_t *v;
  json_object_foreach(obj, k, v) {
    if (!json_is_string(v))
      return lmx_fail(LMX_ERR_FORMAT, "node %d '%s': %s '%s' must be a string", i, nd->name,
                      field, k);
    LMX_TRY(lmx_attrs_set(&nd->attrs, k, json_string_value(v)));
  }
  return LMX_OK;
}

static int read_inputs(lmx_jgraph *g, int i, json_t *jn, lmx_node *nd) {
  json_t *in = json_object_get(jn, "inputs");
  if (!json_is_array(in))
    return lmx_fail(LMX_ERR_FORMAT, "node %d '%s': field 'inputs' is missing or not a list", i,
                    nd->name);
  size_t nin = json_array_size(in);
  if (nin > LOAD_MAX_INPUTS)
    return lmx_fail(LMX_ERR_FORMAT, "node %d '%s': %zu inputs (limit %d)", i, nd->name, nin,
                    LOAD_MAX_INPUTS);
  if (nin && !nd->op)
    return lmx_fail(LMX_ERR_FORMAT, "node %d '%s': a variable cannot have inputs", i, nd->name);
  lmx_entry *e = lmx_alloc((nin + 1) * sizeof *e);
  if (!e) return lmx_fail_nomem("node inputs", (nin + 1) * sizeof *e);
  char where[200];
  int rc = LMX_OK;
  for (size_t k = 0; k < nin && rc == LMX_OK; k++) {
    snprintf(where, sizeof where, "node %d '%.64s': input %zu", i, nd->name, k);
    rc = read_entry(g, json_array_get(in, k), i, where, &e[k]);
  }
  if (rc == LMX_OK) rc = lmx_node_set_inputs(nd, e, (int)nin);
  lmx_free(e);
  return rc;
}

static int read_cdeps(lmx_jgraph *g, int i, json_t *jn, lmx_node *nd) {
  json_t *cd = json_object_get(jn, "control_deps");
  if (!cd) return LMX_OK;
  size_t n = json_is_array(cd) ? json_array_size(cd) : 0;
  if (!json_is_array(cd) || n > LOAD_MAX_INPUTS)
    return lmx_fail(LMX_ERR_FORMAT, "node %d '%s': field 'control_deps' must be a list of node "
                    "ids", i, nd->name);
  if (!n) return LMX_OK;
  nd->cdeps = lmx_calloc(n, sizeof *nd->cdeps);
  if (!nd->cdeps) return lmx_fail_nomem("control deps", n * sizeof *nd->cdeps);
  for (size_t k = 0; k < n; k++) {
    json_t *x = json_array_get(cd, k);
    if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) >= i)
      return lmx_fail(LMX_ERR_FORMAT, "node %d '%s': control_deps[%zu] must be the id of an "
                      "earlier node", i, nd->name, k);
    nd->cdeps[k] = g->nodes[json_integer_value(x)];
    lmx_node_retain(nd->cdeps[k]);
    nd->ncdeps++;
  }
  return LMX_OK;
}

/* MXNet's plugin operators (plugin/ in its sources, built only on request): named as
 * such, since no stock MXNet build has them either. */
static const char *const plugin_ops[][2] = {
    {"WarpCTC", "plugin/warpctc (Baidu's warp-ctc)"},
    {"CaffeOp", "plugin/caffe"},
    {"CaffeLoss", "plugin/caffe"},
    {"TorchModule", "plugin/torch"},
    {"TorchCriterion", "plugin/torch"},
};

static int unknown_op(int i, const char *nm, const char *ops) {
  for (size_t k = 0; k < sizeof plugin_ops / sizeof plugin_ops[0]; k++)
    if (!strcmp(ops, plugin_ops[k][0]))
      return lmx_fail(LMX_ERR_UNSUPPORTED, "node %d '%s': operator '%s' is not supported: it is "
                      "an MXNet plugin operator (%s), not part of MXNet's operator set", i, nm,
                      ops, plugin_ops[k][1]);
  return lmx_fail(LMX_ERR_UNSUPPORTED, "node %d '%s': unknown operator '%s': it is not "
                  "supported by luamx (mx.op.list() lists the operators it has)", i, nm, ops);
}

static int read_node(lmx_jgraph *g, int i, json_t *jn) {
  if (!json_is_object(jn)) return lmx_fail(LMX_ERR_FORMAT, "node %d: expected an object", i);
  json_t *op = json_object_get(jn, "op"), *name = json_object_get(jn, "name");
  if (!json_is_string(name))
    return lmx_fail(LMX_ERR_FORMAT, "node %d: field 'name' is missing or not a string", i);
  const char *nm = json_string_value(name);
  if (!json_is_string(op))
    return lmx_fail(LMX_ERR_FORMAT, "node %d '%s': field 'op' is missing or not a string", i, nm);
  const char *ops = json_string_value(op);
  const lmx_op *o = NULL;
  if (strcmp(ops, "null") != 0 && !(o = lmx_op_find(ops))) return unknown_op(i, nm, ops);
  json_t *sg = json_object_get(jn, "subgraphs");
  if (sg && (!json_is_array(sg) || json_array_size(sg) > 0))
    return lmx_fail(LMX_ERR_FORMAT, "node %d '%s': subgraphs are not supported", i, nm);
  LMX_TRY(lmx_node_new(o, nm, &g->nodes[i]));
  lmx_node *nd = g->nodes[i];
  LMX_TRY(read_attr_obj(nd, i, json_object_get(jn, "param"), "param"));
  LMX_TRY(read_attr_obj(nd, i, json_object_get(jn, "attr"), "attr"));
  LMX_TRY(read_attr_obj(nd, i, json_object_get(jn, "attrs"), "attrs"));
  LMX_TRY(read_inputs(g, i, jn, nd));
  return read_cdeps(g, i, jn, nd);
}

static int read_version(json_t *root, int *version) {
  json_t *a = json_object_get(root, "attrs");
  *version = 800;
  if (!a) return LMX_OK;
  if (!json_is_object(a)) return lmx_fail(LMX_ERR_FORMAT, "field 'attrs' must be an object");
  json_t *v = json_object_get(a, "mxnet_version");
  if (!v) return LMX_OK;
  json_t *t = json_array_get(v, 0), *x = json_array_get(v, 1);
  if (!json_is_array(v) || json_array_size(v) != 2 || !json_is_string(t) ||
      strcmp(json_string_value(t), "int") != 0 || !json_is_integer(x) ||
      json_integer_value(x) < 0 || json_integer_value(x) > INT_MAX)
    return lmx_fail(LMX_ERR_FORMAT, "attrs: 'mxnet_version' must be [\"int\", <version>]");
  *version = (int)json_integer_value(x);
  return LMX_OK;
}

static int check_arg_nodes(const lmx_jgraph *g, json_t *an) {
  if (!json_is_array(an))
    return lmx_fail(LMX_ERR_FORMAT, "field 'arg_nodes' is missing or not a list");
  for (size_t k = 0; k < json_array_size(an); k++) {
    json_t *x = json_array_get(an, k);
    if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) >= g->n)
      return lmx_fail(LMX_ERR_FORMAT, "arg_nodes[%zu]: expected a node id in [0, %d)", k, g->n);
    int id = (int)json_integer_value(x);
    if (g->nodes[id]->op)
      return lmx_fail(LMX_ERR_FORMAT, "arg_nodes[%zu]: node %d '%s' is not a variable", k, id,
                      node_label(g, id));
  }
  return LMX_OK;
}

static int read_heads(lmx_jgraph *g, json_t *hd, lmx_symbol **out) {
  size_t n = json_is_array(hd) ? json_array_size(hd) : 0;
  if (!json_is_array(hd) || n == 0)
    return lmx_fail(LMX_ERR_FORMAT, "field 'heads' is missing, not a list or empty");
  if (n > LOAD_MAX_INPUTS) return lmx_fail(LMX_ERR_FORMAT, "too many heads (%zu)", n);
  lmx_entry *e = lmx_alloc(n * sizeof *e);
  if (!e) return lmx_fail_nomem("heads", n * sizeof *e);
  int rc = LMX_OK;
  char where[64];
  for (size_t k = 0; k < n && rc == LMX_OK; k++) {
    snprintf(where, sizeof where, "heads[%zu]", k);
    rc = read_entry(g, json_array_get(hd, k), g->n, where, &e[k]);
    if (rc == LMX_OK && e[k].index >= lmx_node_num_outputs(e[k].node))
      rc = lmx_fail(LMX_ERR_FORMAT, "heads[%zu]: node '%s' has no output %d", k,
                    e[k].node->name, e[k].index);
  }
  if (rc == LMX_OK) rc = lmx_sym_from_entries(e, (int)n, out);
  lmx_free(e);
  return rc;
}

static int load_root(json_t *root, lmx_symbol **out) {
  if (!json_is_object(root)) return lmx_fail(LMX_ERR_FORMAT, "symbol JSON must be an object");
  json_t *nodes = json_object_get(root, "nodes");
  if (!json_is_array(nodes))
    return lmx_fail(LMX_ERR_FORMAT, "field 'nodes' is missing or not a list");
  size_t n = json_array_size(nodes);
  if (n == 0 || n > LOAD_MAX_NODES)
    return lmx_fail(LMX_ERR_FORMAT, "field 'nodes' holds %zu nodes (expected 1 to %d)", n,
                    LOAD_MAX_NODES);
  lmx_jgraph g = {0};
  g.total = (int)n;
  g.nodes = lmx_calloc(n, sizeof *g.nodes);
  if (!g.nodes) return lmx_fail_nomem("loaded nodes", n * sizeof *g.nodes);
  int rc = read_version(root, &g.version);
  for (size_t i = 0; i < n && rc == LMX_OK; i++, g.n++)
    rc = read_node(&g, (int)i, json_array_get(nodes, i));
  if (rc == LMX_OK) rc = lmx_json_upgrade(&g);
  if (rc == LMX_OK) rc = check_arg_nodes(&g, json_object_get(root, "arg_nodes"));
  if (rc == LMX_OK) rc = read_heads(&g, json_object_get(root, "heads"), out);
  for (size_t i = 0; i < n; i++) lmx_node_release(g.nodes[i]);
  lmx_free(g.nodes);
  return rc;
}

int lmx_sym_from_json(const char *text, size_t len, lmx_symbol **out) {
  if (len > LOAD_MAX_BYTES)
    return lmx_fail(LMX_ERR_FORMAT, "symbol JSON of %zu bytes exceeds the limit of %zu", len,
                    LOAD_MAX_BYTES);
  json_error_t err;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
  if (!root)
    return lmx_fail(LMX_ERR_FORMAT, "symbol JSON: line %d, column %d: %s", err.line,
                    err.column, err.text);
  int rc = load_root(root, out);
  json_decref(root);
  return rc;
}
