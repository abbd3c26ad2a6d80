/* graph.h — symbolic graphs: nodes, entries, symbols (the internal API of src/graph).
 *
 * A node is an operator application (op != NULL) or a variable (op == NULL). It owns its
 * name, its attribute dictionary (parameters as the strings the user gave, in the order
 * given, plus hidden "__x__" keys; MXNet keeps both in one dict and so do we), the
 * parsed parameter block, and its inputs: entries (node, output index, version) that
 * each hold one reference to their node. Nodes are reference counted, so a node lives as
 * long as a symbol or a consumer node references it; handles may be freed in any order.
 * Graphs are acyclic by construction: a node's inputs are set once, from nodes that
 * already exist, and loaders only let a node refer to earlier nodes.
 *
 * A symbol is a list of output entries ("heads"), plus scratch storage for the strings
 * it lends out through the C API (lists, JSON, debug text, attribute values).
 *
 * Invariants:
 *  - op nodes: param is the result of lmx_op_params_parse over attrs (NULL when the op
 *    has no parameter struct); ninputs is 0 until composed, then num_inputs + num_aux.
 *  - variables: no inputs, param NULL, `version` counts mutations by ops (aux states).
 *  - attribute keys are unique within a node.
 * Thread safety: a symbol handle is used by one thread at a time; nodes may be shared
 * between symbols used by different threads only for reading.
 */
#ifndef LMX_GRAPH_GRAPH_H
#define LMX_GRAPH_GRAPH_H

#include <stddef.h>

#include "../core/refcount.h"
#include "../core/vec.h"
#include "../ops/op.h"

typedef struct lmx_node lmx_node;

typedef struct {
  lmx_node *node;
  int index;
  int version;
} lmx_entry;

typedef struct {
  char *key;
  char *val;
} lmx_kv;

/* Ordered small dictionary of strings (insertion order kept; lookups are linear). */
typedef struct {
  lmx_kv *kv;
  int n, cap;
} lmx_attrs;

struct lmx_node {
  lmx_refcount rc;
  const lmx_op *op; /* NULL: variable */
  char *name;
  void *param;
  lmx_attrs attrs;
  lmx_entry *inputs;
  int ninputs;
  lmx_node **cdeps; /* control dependencies (read from JSON, kept, written back) */
  int ncdeps;
  int version;
};

struct lmx_symbol {
  lmx_refcount rc;
  lmx_entry *out;
  int nout;
  /* borrowed-string scratch, see luamx.h */
  char **list;       /* strings of the last lmx_symbol_list */
  int nlist;
  lmx_sbuf text;     /* last tojson / debug_str */
  char *attr_val;    /* last lmx_symbol_get_attr */
};
typedef struct lmx_symbol lmx_symbol;

/* ---- attributes (node.c) ---------------------------------------------------------- */
const char *lmx_attrs_get(const lmx_attrs *a, const char *key);
int lmx_attrs_set(lmx_attrs *a, const char *key, const char *val); /* insert or replace */
int lmx_attrs_remove(lmx_attrs *a, const char *key);               /* 1 if removed */
int lmx_attrs_copy(lmx_attrs *dst, const lmx_attrs *src);          /* dst must be empty */
void lmx_attrs_release(lmx_attrs *a);
/* Is key one of MXNet's hidden keys (ctx_group, lr_mult, ...)? */
int lmx_attr_is_hidden(const char *key);
/* If key is "__k__" with k hidden, returns k (pointer into a static table), else NULL. */
const char *lmx_attr_hidden_plain(const char *key);

/* ---- nodes (node.c) ---------------------------------------------------------------- */
int lmx_node_new(const lmx_op *op, const char *name, lmx_node **out);
void lmx_node_retain(lmx_node *n);
void lmx_node_release(lmx_node *n); /* iterative: deep chains do not recurse */
/* (Re)parses n->param from n->attrs; on failure the old block stays. */
int lmx_node_parse(lmx_node *n);
int lmx_node_num_inputs(const lmx_node *n); /* total incl. aux; 0 for variables */
int lmx_node_num_args(const lmx_node *n);   /* inputs without aux */
int lmx_node_num_outputs(const lmx_node *n);
int lmx_node_num_visible(const lmx_node *n);
/* Name of input i (argument or aux state) into buf. */
void lmx_node_input_name(const lmx_node *n, int i, char *buf, size_t cap);
/* Sets input slot array (takes the given entries, retaining their nodes). */
int lmx_node_set_inputs(lmx_node *n, const lmx_entry *in, int nin);
/* Refreshes variable versions of inputs; bumps mutated (aux) inputs. */
int lmx_node_update_versions(lmx_node *n);
/* Applies op->aux_init (__init__ of aux variables) to variable input i if unset. */
int lmx_node_apply_input_attr(lmx_node *n, int i);

/* ---- names and attribute scopes (scope.c) ------------------------------------------ */
/* "<prefix><hint><counter>": the counters and prefix of the thread's current name
 * manager, or the process-wide counters (no prefix) when none is entered. */
int lmx_names_next(const char *hint, char *buf, size_t cap);
void lmx_names_reset(void);
/* Name managers (MXNet's NameManager / Prefix); see luamx.h lmx_name_manager_*. */
typedef struct lmx_name_manager lmx_name_manager;
int lmx_names_manager_new(const char *prefix, lmx_name_manager **out);
void lmx_names_manager_retain(lmx_name_manager *m);
void lmx_names_manager_release(lmx_name_manager *m);
/* Next automatic name from m's counters with m's prefix (m NULL: process-wide, no prefix). */
int lmx_names_get(lmx_name_manager *m, const char *hint, char *buf, size_t cap);
/* The current manager's prefix, NULL when none or empty. */
const char *lmx_names_prefix(void);
int lmx_names_enter(lmx_name_manager *m);
int lmx_names_exit(void);
/* Thread-local stack of attribute scopes; top() is the merged dict (may be NULL). */
int lmx_scope_push(int n, const char *const *keys, const char *const *vals);
int lmx_scope_pop(void);
const lmx_attrs *lmx_scope_top(void);
/* Sets key on a node with MXNet's hidden-key rule (ctx_group -> __ctx_group__). */
int lmx_node_set_attr(lmx_node *n, const char *key, const char *val);

/* ---- depth-first order (dfs.c) ----------------------------------------------------- */
/* Post-order DFS from heads (inputs in order, then control deps). *order is an
 * lmx_alloc'ed array of borrowed node pointers. */
int lmx_dfs(const lmx_entry *heads, int nheads, lmx_node ***order, int *n);

/* Pointer -> int map (open addressing), used for node ids. */
typedef struct {
  const void **keys;
  int *vals;
  size_t cap, len;
} lmx_ptrmap;
int lmx_ptrmap_put(lmx_ptrmap *m, const void *key, int val);
int lmx_ptrmap_get(const lmx_ptrmap *m, const void *key); /* -1 if absent */
void lmx_ptrmap_release(lmx_ptrmap *m);

/* ---- symbols (symbol.c, compose.c) ------------------------------------------------- */
int lmx_sym_from_entries(const lmx_entry *e, int n, lmx_symbol **out);
void lmx_sym_retain(lmx_symbol *s);
void lmx_sym_release(lmx_symbol *s);
int lmx_sym_variable(const char *name, lmx_symbol **out);
int lmx_sym_new_op(const char *op_name, const char *name, int n, const char *const *keys,
                   const char *const *vals, lmx_symbol **out);
int lmx_sym_compose(lmx_symbol *s, int n, const char *const *names,
                    lmx_symbol *const *inputs);
int lmx_sym_copy(const lmx_symbol *s, lmx_symbol **out);
int lmx_sym_group(int n, lmx_symbol *const *syms, lmx_symbol **out);
int lmx_sym_output(const lmx_symbol *s, int i, lmx_symbol **out);
int lmx_sym_internals(const lmx_symbol *s, lmx_symbol **out);
int lmx_sym_children(const lmx_symbol *s, lmx_symbol **out);
/* Head node name, or NULL when the heads are different nodes. */
const char *lmx_sym_name(const lmx_symbol *s);

/* ---- listings and attributes (listing.c) ------------------------------------------- */
enum { LMX_LK_ARGS, LMX_LK_OUTPUTS, LMX_LK_AUX, LMX_LK_INPUTS, LMX_LK_ATTR, LMX_LK_ATTR_ALL };
/* Fills s->list with newly allocated strings. */
int lmx_sym_list(lmx_symbol *s, int kind);
/* Variables of the graph in DFS order, split into arguments (not mutated) and aux. */
int lmx_sym_variables(const lmx_symbol *s, lmx_node ***args, int *nargs, lmx_node ***aux,
                      int *naux);
/* Output name of head i into sb. */
void lmx_sym_output_name(const lmx_symbol *s, int i, lmx_sbuf *sb);
int lmx_sym_get_attr(lmx_symbol *s, const char *key, const char **val);
int lmx_sym_set_attr(lmx_symbol *s, const char *key, const char *val);
int lmx_sym_debug_str(lmx_symbol *s);

/* ---- JSON (json_write.c, json_read.c, json_upgrade.c) ------------------------------ */
/* The mxnet_version we write: MXNet 1.9.1, whose semantics we follow. */
enum { LMX_MXNET_JSON_VERSION = 10901 };
int lmx_sym_tojson(lmx_symbol *s); /* into s->text */
int lmx_sym_from_json(const char *text, size_t len, lmx_symbol **out);

#endif
