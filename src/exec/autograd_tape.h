/* autograd_tape.h — the tape's node, shared by the files of src/exec/autograd*.c
 * (recording and variables: autograd.c; backward: autograd_backward.c; get_symbol's
 * export: autograd_export.c). Not part of any API. */
#ifndef LMX_EXEC_AUTOGRAD_TAPE_H
#define LMX_EXEC_AUTOGRAD_TAPE_H

#include <stdatomic.h>

#include "../tensor/ndarray.h"
#include "autograd.h"

enum { NODE_OP = 0, NODE_LEAF = 1, NODE_FUNCTION = 2 };

typedef struct node node;
struct node {
  lmx_ag_ref ref; /* first: arrays point at it */
  int kind;
  const lmx_op *op;
  void *param;
  lmx_opcall *oc;  /* owner of param when not NULL */
  char **kv;       /* nkeys keys then nkeys values, one allocation (or oc's strings) */
  int nkeys;
  int kv_borrowed; /* kv belongs to oc (a prepared call, retained): not freed here */
  int packed;      /* in/src live in the node's own allocation (op and function nodes) */
  char *name;      /* NULL: automatic (get_symbol) */
  int is_train;
  int freed;       /* saved arrays dropped by a backward without retain_graph */
  int nin, naux, nout, nvis;
  lmx_ndarray **in, **aux, **out; /* references, output views (one allocation) */
  node **src;      /* per input: the producing node (a reference) */
  int *src_idx;
  /* leaves */
  int marked, req;
  lmx_ndarray *grad;
  /* Lua functions (mx.autograd.Function) */
  lmx_autograd_fn fn;
  int64_t fn_id;
  /* backward scratch */
  unsigned epoch, want; /* want == epoch: a variable of mx.autograd.grad */
  int needs, reached;
  int direct; /* a variable whose gradient kernels write straight into grad */
  lmx_ndarray **slot;
  unsigned char *owned;
  node *doomed_next; /* on this thread's list of nodes to destroy (autograd.c) */
};

static inline node *entry_of(const lmx_ndarray *a) { return (node *)a->ag; }

/* A growable list of nodes. */
typedef struct {
  node **v;
  int n, cap;
} nodes;

/* The counter of walks (each takes a fresh epoch; nodes a walk visited carry it). */
extern _Atomic unsigned lmx_ag_epoch;

/* Post-order (inputs first) of the nodes reachable from heads[nh], with an explicit
 * stack; marks them with a fresh epoch, stored in *epoch (when not NULL). */
int lmx_ag_topo(int nh, node *const *heads, nodes *order, unsigned *epoch);

/* Drops a node's saved arrays (backward without retain_graph). */
void lmx_ag_node_drop_saved(node *n);

#endif
