/* autograd.h — the imperative tape (mx.autograd): recording operator calls on NDArrays
 * and running their backward kernels in reverse (the engine behind lmx_autograd_* in
 * src/luamx.h; see there for the contract and src/exec/autograd.c for the design).
 */
#ifndef LMX_EXEC_AUTOGRAD_H
#define LMX_EXEC_AUTOGRAD_H

#include "../luamx.h"

typedef struct lmx_op lmx_op;

/* Non-zero while the thread records (mx.autograd.record). Read by the imperative path
 * once per call: the only cost recording adds to non-recorded calls. */
extern _Thread_local int lmx_ag_recording;
extern _Thread_local int lmx_ag_training;

/* What the tape keeps of one call: the op, its parsed parameters (owned by oc when oc
 * is not NULL, else handed to the tape on success), the parameter strings (copied). */
typedef struct {
  const lmx_op *op;
  void *param;
  lmx_opcall *oc;
  int nkeys;
  const char *const *keys, *const *vals;
  int is_train;
} lmx_ag_call;

/* Records one successful forward call: inputs[nin] (the op's inputs), aux[naux], every
 * output outs[nout] (hidden ones included); the first nret outputs are the caller's and
 * get the new node as their autograd entry. */
int lmx_ag_record(const lmx_ag_call *c, int nin, lmx_ndarray *const *inputs, int naux,
                  lmx_ndarray *const *aux, int nout, lmx_ndarray *const *outs, int nret);

/* Before a recorded call runs: fails when a caller-given output (outs[i] non-NULL, i <
 * nret) is one of the inputs or a variable (attach_grad): in-place writes are not
 * recorded. */
int lmx_ag_check_outputs(const lmx_op *op, int nin, lmx_ndarray *const *inputs, int nret,
                         lmx_ndarray *const *outs);

int lmx_ag_set_state(int recording, int training, int *was_recording, int *was_training);
int lmx_ag_mark(lmx_ndarray *a, int req, lmx_ndarray *grad);
int lmx_ag_get_grad(lmx_ndarray *a, lmx_ndarray **grad, int *req);
int lmx_ag_info(lmx_ndarray *a, int *kind, const char **op_name);
int lmx_ag_detach(lmx_ndarray *a, lmx_ndarray **out);
int lmx_ag_set_name(lmx_ndarray *a, const char *name);
int lmx_ag_backward(int nh, lmx_ndarray *const *heads, lmx_ndarray *const *head_grads,
                    int nvar, lmx_ndarray *const *vars, lmx_ndarray **var_grads,
                    int retain_graph, int is_train);
int lmx_ag_function_dead(int64_t *ids, int cap, int *n);
int lmx_ag_function_record(int nin, lmx_ndarray *const *inputs, int nout,
                           lmx_ndarray *const *outputs, lmx_autograd_fn fn, int64_t id);

/* Graph export for get_symbol. */
typedef struct lmx_ag_graph lmx_ag_graph;
int lmx_ag_export(int nh, lmx_ndarray *const *heads, lmx_ag_graph **out);
void lmx_ag_graph_free(lmx_ag_graph *g);
int lmx_ag_graph_size(const lmx_ag_graph *g, int *nnodes, int *nheads, const int **head_node,
                      const int **head_index);
int lmx_ag_graph_node(const lmx_ag_graph *g, int i, const char **op, const char **name,
                      int *nkeys, const char *const **keys, const char *const **vals,
                      int *nin, const int **in_node, const int **in_index);

#endif
