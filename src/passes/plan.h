/* plan.h — the executor's plan: one typed, dense struct that the bind passes fill.
 *
 * The plan starts as a copy of the forward indexed graph (lmx_igraph: node ids are DFS
 * post-order, entry ids node-major) and grows by appending nodes:
 *   gradient.c   backward nodes "<fwd>_backward", head-gradient variables
 *                "_head_grad_<i>", zero out-grads, gradient copies; write requirements
 *   place.c      a context per node (group2ctx) and "<node>_<i>_copy" nodes between them
 *   order.c      the execution order (forward steps, then backward steps)
 *   plan_shape.c shapes and dtypes of every entry (forward via src/passes/infer_*.c)
 *   plan_inplace.c  candidate in-place (input, output) pairs per node
 *   plan_memory.c   storage ids: liveness-based sharing, in-place reuse, workspace
 * Every result is an array indexed by node id or entry id; there are no string-keyed
 * bags. src/exec/bind.c runs the passes in that order (MXNet's FinishInitGraph).
 *
 * Invariants:
 *  - an entry is produced by exactly one node: entry e belongs to node entry_node[e],
 *    nodes own the contiguous entries out0 .. out0+nout-1;
 *  - every input of a node is produced by a node of smaller id, except inputs that were
 *    redirected to copy nodes (place.c), which order.c schedules before their reader;
 *  - a backward node's inputs are [out_grads (nout_f), inputs (nin_f incl. aux),
 *    outputs (nout_f)] of its forward node and its outputs are the gradients of the
 *    forward node's arguments (aux states get none);
 *  - several contributions to one gradient are summed WITHOUT an extra buffer or node:
 *    the first contribution (in execution order) writes, later ones accumulate (req
 *    ADD) into the same storage: alias[e] names the first contribution's entry, or
 *    grad_arg[e] the argument whose gradient array receives the writes. So a gradient
 *    that n consumers produce costs one buffer and no ElementWiseSum node;
 *  - storage ids: >= 0 a planned block, LMX_SID_EXT an array bound or owned outside the
 *    plan (variables, head gradients, zeros, argument gradients), LMX_SID_NONE unset.
 */
#ifndef LMX_PASSES_PLAN_H
#define LMX_PASSES_PLAN_H

#include <stddef.h>

#include "../graph/indexed.h"

enum { LMX_PN_VAR = 0, LMX_PN_OP = 1, LMX_PN_BWD = 2, LMX_PN_COPY = 3, LMX_PN_ZEROS = 4 };
enum { LMX_VAR_ARG = 0, LMX_VAR_AUX = 1, LMX_VAR_HEADGRAD = 2 };
enum { LMX_SID_NONE = -1, LMX_SID_EXT = -2 };
enum { LMX_PLAN_MAX_CTX = 64 };

typedef struct {
  unsigned char kind;   /* LMX_PN_* */
  unsigned char is_bwd; /* runs in backward() */
  unsigned char var_kind;
  const lmx_op *op;      /* OP and BWD: the operator */
  const lmx_node *src;   /* VAR (arg/aux) and OP: the graph node; BWD: the forward node's */
  int fwd;               /* BWD: plan id of the forward node; -1 otherwise */
  int var_index;         /* VAR: index among args / aux / heads */
  int like;              /* ZEROS, head-gradient VAR: entry whose shape and dtype it takes */
  int in0, nin;          /* inputs: in_entry[in0 .. in0 + nin) */
  int out0, nout;        /* outputs: entries out0 .. out0 + nout - 1 */
  int ctx;               /* index into ctx_type / ctx_id */
  char *name;            /* owned */
} lmx_pnode;

typedef struct lmx_plan {
  /* graph */
  lmx_pnode *nodes;
  int num_nodes, cap_nodes, num_fwd_nodes;
  int *in_entry;
  int num_in, cap_in;
  int num_entries, cap_entries;
  int *entry_node; /* producing node of each entry */
  int nargs, naux, nheads;
  int *arg_node, *aux_node; /* plan node id per argument / aux state */
  int *head_entry;          /* entry per forward head */
  /* gradient.c */
  int *arg_req;        /* per argument: LMX_REQ_NULL / WRITE / ADD (input, then final) */
  int *arg_grad_zero;  /* per argument: backward fills the gradient with zeros */
  int *head_grad_node; /* per head: plan node of _head_grad_<i>, or -1 */
  int has_backward;
  /* place.c */
  int nctx;
  int ctx_type[LMX_PLAN_MAX_CTX], ctx_id[LMX_PLAN_MAX_CTX];
  /* per entry (grown with the graph) */
  lmx_shape *shape;
  int *dtype;
  int *req;      /* write requirement of the producer for this output */
  int *alias;    /* first contribution this one accumulates into, or -1 */
  int *grad_arg; /* argument whose gradient array this entry is, or -1 */
  int *sid;      /* storage id */
  int *inplace;  /* input slot whose storage this output reuses, or -1 */
  int *refs;     /* readers (+1 per forward head) */
  /* order.c */
  int *order;
  int num_order, num_fwd_order;
  /* plan_inplace.c: candidate pairs per node, CSR over nodes */
  int *ip_ptr;          /* num_nodes + 1 */
  int (*ip_pair)[2];    /* {input slot, output index} */
  /* plan_memory.c */
  int nblocks;
  size_t *blk_bytes;
  int *blk_ctx;
  size_t planned_bytes, naive_bytes;
  int planned_entries;
  size_t *node_ws;                   /* workspace bytes per node */
  size_t ctx_ws[LMX_PLAN_MAX_CTX];   /* per context: the largest node workspace */
} lmx_plan;

/* ---- plan_graph.c: building and releasing -------------------------------------- */
/* Copies the forward graph; arguments, aux and heads follow g. */
int lmx_plan_from_igraph(lmx_plan *p, const lmx_igraph *g);
void lmx_plan_release(lmx_plan *p);
/* Frees what only the passes and materialization read (per entry: shape, dtype, req,
 * alias, sid, inplace, refs; the in-place candidates; blocks; node workspaces) and sets
 * those pointers to NULL: a bound executor keeps its arrays and steps instead, so every
 * bucket of a bucketing pool does not carry its plan's tables for its whole life. */
void lmx_plan_drop_bind_tables(lmx_plan *p);
/* Appends a node with nin inputs (copied from in) and nout fresh entries; *id gets its
 * id. name is copied. */
int lmx_plan_add_node(lmx_plan *p, int kind, const char *name, const int *in, int nin,
                      int nout, int *id);
/* The backward_needs bits of an op node (per parameters when the op says so). */
unsigned lmx_plan_bwd_needs(const lmx_op *op, const lmx_node *src);
/* Does the backward of forward op node n read its output gradients? (Not for loss ops,
 * nor when backward_needs leaves LMX_NEEDS_OUT_GRADS out.) */
int lmx_plan_consumes_og(const lmx_plan *p, int n);
/* Does node n read input slot k (backward nodes read only what backward_needs says)? */
int lmx_plan_reads(const lmx_plan *p, int n, int k);
/* Number of arguments (without aux) of a forward op node. */
int lmx_plan_fwd_nargs(const lmx_plan *p, int n);
/* Index of a context (type, id), added when new; -1 when the table is full. */
int lmx_plan_ctx_index(lmx_plan *p, int dev_type, int dev_id);

/* ---- the passes ----------------------------------------------------------------- */
/* gradient.c: arg_req[] set by the caller. Appends the backward graph. */
int lmx_pass_gradient(lmx_plan *p);

/* place.c: var_ctx[i] for every VAR node of kind ARG/AUX given as a ctx index (node id
 * order of p->arg_node/aux_node: arg_ctx, aux_ctx); groups: n names with ctx indices. */
int lmx_pass_place(lmx_plan *p, const int *arg_ctx, const int *aux_ctx, int ngroups,
                   const char *const *groups, const int *group_ctx);

/* order.c */
int lmx_pass_order(lmx_plan *p);

/* plan_shape.c: shapes/dtypes of forward entries from g's inference, seeded by the
 * caller in fwd_shape / fwd_dtype (indexed by forward entry id); then every appended
 * entry. Fails naming what could not be decided. */
int lmx_pass_shapes(lmx_plan *p, const lmx_igraph *g, lmx_shape *fwd_shape, int *fwd_dtype);

/* plan_inplace.c */
int lmx_pass_inplace(lmx_plan *p, int enabled);

/* plan_memory.c: share = 0 gives every planned entry its own block (debug switch). */
int lmx_pass_memory(lmx_plan *p, int share);

/* cse.c: a symbol with common subexpressions merged (MXNet's EliminateCommonExpr):
 * op nodes with the same operator, attributes and input entries become one; never
 * variables, ops that draw random numbers or mutate aux states. Nodes that did not
 * change are shared with s; the others are copies that differ only in their inputs.
 * origins (may be NULL; zeroed first) gets every copy of *out with the node of s it was
 * made from (borrowed pointers: valid while *out and s live); release it with
 * lmx_cse_origins_release. */
typedef struct {
  const lmx_node **copy, **orig;
  int n;
  lmx_ptrmap index; /* copy -> i */
} lmx_cse_origins;
int lmx_pass_cse(const lmx_symbol *s, lmx_symbol **out, lmx_cse_origins *origins);
/* The node of s that `node` (a node of the result) was copied from, or node itself. */
const lmx_node *lmx_cse_origin(const lmx_cse_origins *o, const lmx_node *node);
void lmx_cse_origins_release(lmx_cse_origins *o);

/* Bytes of an entry's data (elements x dtype size). */
size_t lmx_plan_entry_bytes(const lmx_plan *p, int e);

#endif
