/* json_upgrade.c — parameter parsing and MXNet's legacy JSON upgraders
 * (src/nnvm/legacy_json_util.cc), applied in MXNet's order to files older than the
 * upgrader's version:
 *   FixParsing (< our version): hidden keys (ctx_group, lr_mult, ...) become __key__;
 *     "<input>_<key>" on an op moves to that input's variable as __key__ (when it is a
 *     variable), otherwise stays verbatim;
 *   Parse (always): every op's parameters are parsed (errors name node index and name);
 *   0.9.0: ops stored with fewer inputs (BatchNorm without aux) gain variables
 *     "<node>_<input>" carrying a copy of the op's attributes;
 *   0.9.4: aux variables get the op's __init__ hint (BatchNorm zero/one);
 *   0.9.5: argmax/argmin with axis -1 lose the axis attribute.
 * Then the graph is validated: input counts, output indices, aux inputs are variables.
 */
#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "json_load.h"

static const char *const hidden[] = {"ctx_group", "lr_mult", "wd_mult", "force_mirroring",
                                     "mirror_stage", "profiler_scope", NULL};

/* 0: no match; 1: exact hidden key; 2: "<prefix>_<hidden key>" (prefix length in *plen). */
static int hidden_match(const char *key, const char **hk, size_t *plen) {
  size_t kl = strlen(key);
  for (int i = 0; hidden[i]; i++) {
    size_t hl = strlen(hidden[i]);
    *hk = hidden[i];
    if (strcmp(key, hidden[i]) == 0) return 1;
    if (kl > hl + 1 && key[kl - hl - 1] == '_' && strcmp(key + kl - hl, hidden[i]) == 0) {
      *plen = kl - hl - 1;
      return 2;
    }
  }
  return 0;
}

static int parse_node(lmx_jgraph *g, int i) {
  int rc = lmx_node_parse(g->nodes[i]);
  return rc == LMX_OK ? rc : lmx_fail_prefix(rc, "node %d: ", i);
}

/* Puts one hidden key back (see the file comment). */
static int put_back(lmx_node *nd, const char *key, const char *val) {
  const char *hk;
  size_t plen = 0;
  char buf[64], arg[128];
  int m = hidden_match(key, &hk, &plen);
  if (m == 1) {
    snprintf(buf, sizeof buf, "__%s__", hk);
    return lmx_attrs_set(&nd->attrs, buf, val);
  }
  if (nd->op) {
    int total = lmx_node_num_inputs(nd);
    for (int k = 0; k < total && k < nd->ninputs; k++) {
      lmx_node_input_name(nd, k, arg, sizeof arg);
      if (strlen(arg) != plen || strncmp(arg, key, plen) != 0) continue;
      if (nd->inputs[k].node->op) break;
      snprintf(buf, sizeof buf, "__%s__", hk);
      return lmx_attrs_set(&nd->inputs[k].node->attrs, buf, val);
    }
  }
  return lmx_attrs_set(&nd->attrs, key, val);
}

static int fix_parsing(lmx_jgraph *g, int i) {
  lmx_node *nd = g->nodes[i];
  lmx_attrs moved = {0};
  const char *hk;
  size_t plen;
  int rc = LMX_OK;
  for (int k = 0; k < nd->attrs.n && rc == LMX_OK; k++)
    if (hidden_match(nd->attrs.kv[k].key, &hk, &plen))
      rc = lmx_attrs_set(&moved, nd->attrs.kv[k].key, nd->attrs.kv[k].val);
  for (int k = 0; k < moved.n; k++) lmx_attrs_remove(&nd->attrs, moved.kv[k].key);
  if (rc == LMX_OK && nd->op) rc = parse_node(g, i);
  for (int k = 0; k < moved.n && rc == LMX_OK; k++)
    rc = put_back(nd, moved.kv[k].key, moved.kv[k].val);
  lmx_attrs_release(&moved);
  return rc;
}

/* 0.8 -> 0.9: missing trailing inputs (aux states) become new variables. */
static int add_missing_inputs(lmx_node *nd) {
  int total = lmx_node_num_inputs(nd);
  if (nd->ninputs >= total) return LMX_OK;
  lmx_entry *e = lmx_calloc((size_t)total, sizeof *e);
  if (!e) return lmx_fail_nomem("node inputs", (size_t)total * sizeof *e);
  if (nd->ninputs) memcpy(e, nd->inputs, (size_t)nd->ninputs * sizeof *e);
  int rc = LMX_OK, old = nd->ninputs;
  char arg[128], vname[512];
  for (int k = old; k < total && rc == LMX_OK; k++) {
    lmx_node_input_name(nd, k, arg, sizeof arg);
    snprintf(vname, sizeof vname, "%s_%s", nd->name, arg);
    rc = lmx_node_new(NULL, vname, &e[k].node);
    if (rc == LMX_OK) rc = lmx_attrs_copy(&e[k].node->attrs, &nd->attrs);
  }
  if (rc == LMX_OK) rc = lmx_node_set_inputs(nd, e, total);
  for (int k = old; k < total; k++) lmx_node_release(e[k].node); /* creation refs */
  lmx_free(e);
  return rc;
}

static int validate(lmx_jgraph *g, int i) {
  lmx_node *nd = g->nodes[i];
  if (!nd->op) return LMX_OK;
  int total = lmx_node_num_inputs(nd), na = lmx_node_num_args(nd);
  if (nd->ninputs != total)
    return lmx_fail(LMX_ERR_FORMAT, "node %d '%s': %s expects %d inputs (%d arguments, %d aux "
                    "states), got %d", i, nd->name, nd->op->name, total, na, total - na,
                    nd->ninputs);
  char arg[128];
  for (int k = 0; k < total; k++) {
    const lmx_entry *e = &nd->inputs[k];
    lmx_node_input_name(nd, k, arg, sizeof arg);
    if (e->index >= lmx_node_num_outputs(e->node))
      return lmx_fail(LMX_ERR_FORMAT, "node %d '%s': input '%s' refers to output %d of '%s', "
                      "which has %d output(s)", i, nd->name, arg, e->index, e->node->name,
                      lmx_node_num_outputs(e->node));
    if (k >= na && e->node->op)
      return lmx_fail(LMX_ERR_FORMAT, "node %d '%s': aux state '%s' must be a variable, got "
                      "the output of '%s'", i, nd->name, arg, e->node->name);
  }
  return LMX_OK;
}

static int drop_argmax_axis(lmx_jgraph *g, int i) {
  lmx_node *nd = g->nodes[i];
  if (!nd->op || (strcmp(nd->op->name, "argmax") != 0 && strcmp(nd->op->name, "argmin") != 0))
    return LMX_OK;
  const char *ax = lmx_attrs_get(&nd->attrs, "axis");
  if (!ax || strcmp(ax, "-1") != 0) return LMX_OK;
  lmx_attrs_remove(&nd->attrs, "axis");
  return parse_node(g, i);
}

int lmx_json_upgrade(lmx_jgraph *g) {
  int old = g->version < LMX_MXNET_JSON_VERSION;
  for (int i = 0; i < g->n; i++) {
    if (old) LMX_TRY(fix_parsing(g, i));
    LMX_TRY(parse_node(g, i)); /* MXNet's Parse upgrader: always, after FixParsing */
    if (g->version < 900 && g->nodes[i]->op) LMX_TRY(add_missing_inputs(g->nodes[i]));
    LMX_TRY(validate(g, i));
  }
  for (int i = 0; i < g->n; i++) {
    lmx_node *nd = g->nodes[i];
    for (int k = 0; g->version < 904 && nd->op && k < nd->ninputs; k++)
      LMX_TRY(lmx_node_apply_input_attr(nd, k));
    if (g->version < 905) LMX_TRY(drop_argmax_axis(g, i));
  }
  return LMX_OK;
}
