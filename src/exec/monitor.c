/* monitor.c — monitor callbacks (MXNet's ExecuteMonOutputCallback / MonInputCallback).
 *
 * After every step of forward and backward, one call per output of the node, named as
 * MXNet names it: "<node>_output" for a single unnamed output, "<node>_output<i>" for
 * several, "<node>_<declared name>" when the operator names its outputs; backward nodes
 * are "<fwd>_backward", so "fc_backward_output0" ... With monitor_all, before a step
 * runs, for every input: first the variable's own name when the input is a variable,
 * then "<node>_<input name>" (the operator's declared input names; ops that declare
 * none, backward and copy nodes use "input<i>", as MXNet does).
 * Names are built once, when a monitor is first installed on the executor (per entry and
 * per input slot; an executor that is never monitored, such as most buckets, carries
 * none), so a monitored step allocates nothing; the array handed to the callback is the
 * executor's own array for the entry, borrowed for the duration of the call. Callbacks
 * run on the calling thread.
 */
#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "exec.h"

static char *join(const char *node, const char *what) {
  size_t n = strlen(node) + strlen(what) + 2;
  char *s = lmx_alloc(n);
  if (s) snprintf(s, n, node[0] ? "%s_%s" : "%s%s", node, what);
  return s;
}

static void out_name(const lmx_pnode *nd, int j, char *buf, size_t cap) {
  if (nd->kind == LMX_PN_OP && (nd->op->outputs || nd->op->output_name))
    lmx_op_output_name(nd->op, nd->src->param, j, buf, cap);
  else if (nd->nout == 1)
    snprintf(buf, cap, "output");
  else
    snprintf(buf, cap, "output%d", j);
}

/* MXNet names inputs by the op's declared list (FListInputNames) and "input<i>" when
 * the op declares none: Activation reports "act_input0", Convolution "conv_data". Our
 * descriptors declare none exactly when inputs, num_inputs and input_name are unset. */
static void in_name(const lmx_pnode *nd, int k, char *buf, size_t cap) {
  const lmx_op *op = nd->op;
  int declared = op && (op->inputs || op->num_inputs || op->input_name || op->aux);
  if (nd->kind == LMX_PN_OP && declared) lmx_node_input_name(nd->src, k, buf, cap);
  else snprintf(buf, cap, "input%d", k);
}

static int monitor_names(lmx_executor *x) {
  const lmx_plan *p = &x->plan;
  if (x->mon_out) return LMX_OK;
  x->mon_out = lmx_calloc((size_t)p->num_entries + 1, sizeof(char *));
  x->mon_in = lmx_calloc((size_t)p->num_in + 1, sizeof(char *));
  if (!x->mon_out || !x->mon_in) {
    lmx_free(x->mon_out), lmx_free(x->mon_in);
    x->mon_out = NULL, x->mon_in = NULL;
    return lmx_fail_nomem("monitor names", (size_t)p->num_in * 8);
  }
  char buf[128];
  for (int i = 0; i < p->num_order; i++) {
    const lmx_pnode *nd = &p->nodes[p->order[i]];
    for (int j = 0; j < nd->nout; j++) {
      out_name(nd, j, buf, sizeof buf);
      if (!(x->mon_out[nd->out0 + j] = join(nd->name, buf)))
        return lmx_fail_nomem("monitor names", sizeof buf);
    }
    for (int k = 0; k < nd->nin; k++) {
      in_name(nd, k, buf, sizeof buf);
      if (!(x->mon_in[nd->in0 + k] = join(nd->name, buf)))
        return lmx_fail_nomem("monitor names", sizeof buf);
    }
  }
  return LMX_OK;
}

int lmx_exec_set_monitor(lmx_executor *x, lmx_monitor_cb fn, void *user, int all) {
  if (fn) LMX_TRY(monitor_names(x));
  if (fn) LMX_TRY(lmx_exec_entry_views(x));
  x->mon = fn;
  x->mon_user = fn ? user : NULL;
  x->mon_all = fn && all;
  return LMX_OK;
}

void lmx_monitor_before(const lmx_executor *x, const lmx_xstep *s) {
  const lmx_plan *p = &x->plan;
  const lmx_pnode *nd = &p->nodes[s->node];
  for (int k = 0; k < nd->nin; k++) {
    int e = p->in_entry[nd->in0 + k];
    const lmx_pnode *src = &p->nodes[p->entry_node[e]];
    if (src->kind == LMX_PN_VAR) x->mon(src->name, x->ent[e], x->mon_user);
    x->mon(x->mon_in[nd->in0 + k], x->ent[e], x->mon_user);
  }
}

void lmx_monitor_after(const lmx_executor *x, const lmx_xstep *s) {
  const lmx_pnode *nd = &x->plan.nodes[s->node];
  for (int j = 0; j < nd->nout; j++)
    x->mon(x->mon_out[nd->out0 + j], x->ent[nd->out0 + j], x->mon_user);
}
