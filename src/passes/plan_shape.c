/* plan_shape.c — shapes and dtypes of every plan entry.
 *
 * The forward entries are inferred by the symbol layer's passes (infer_shape.c,
 * infer_type.c) over the forward indexed graph, seeded by the binder (bound arrays'
 * shapes and dtypes, or simple_bind's shapes and type_dict). Every appended entry then
 * takes its shape from the forward graph: a gradient has its input's shape, a
 * head gradient or zeros its forward entry's, a copy its source's. Nothing may remain
 * unknown: the executor allocates everything at bind. The messages list the arguments
 * that could not be decided (MXNet's "InferShape pass cannot decide shapes ...").
 */
#include <stdio.h>
#include <string.h>

#include "../core/status.h"
#include "../tensor/dtype.h"
#include "infer.h"
#include "plan.h"

static int report_unknown(const lmx_plan *p, const lmx_shape *sh, const int *dt, int shapes) {
  lmx_sbuf sb = LMX_SBUF_INIT;
  int count = 0;
  for (int i = 0; i < p->nargs + p->naux && count < 10; i++) {
    int n = i < p->nargs ? p->arg_node[i] : p->aux_node[i - p->nargs];
    int e = p->nodes[n].out0;
    int unknown = shapes ? !lmx_shape_known(&sh[e]) : dt[e] < 0;
    if (!unknown) continue;
    char s[LMX_SHAPE_STRCAP];
    lmx_sbuf_addf(&sb, "%s%s: %s", count ? ", " : "", p->nodes[n].name,
                  shapes ? lmx_shape_str(&sh[e], s) : "unknown");
    count++;
  }
  int rc;
  if (count == 0) {
    rc = lmx_fail(shapes ? LMX_ERR_SHAPE : LMX_ERR_DTYPE,
                  "bind: cannot decide the %s of every intermediate result",
                  shapes ? "shapes" : "dtypes");
  } else if (shapes) {
    rc = lmx_fail(LMX_ERR_SHAPE, "bind: InferShape pass cannot decide shapes for the following "
                  "arguments (0 means unknown dimensions). Please consider providing them "
                  "as inputs: %s", sb.failed ? "(out of memory)" : lmx_sbuf_str(&sb));
  } else {
    rc = lmx_fail(LMX_ERR_DTYPE, "bind: InferType pass cannot decide dtypes for the following "
                  "arguments. Please consider providing them as inputs: %s",
                  sb.failed ? "(out of memory)" : lmx_sbuf_str(&sb));
  }
  lmx_sbuf_release(&sb);
  return rc;
}

static int forward_known(const lmx_plan *p, int nentries, const lmx_shape *sh, const int *dt) {
  for (int e = 0; e < nentries; e++)
    if (!lmx_shape_known(&sh[e])) return report_unknown(p, sh, dt, 1);
  for (int e = 0; e < nentries; e++)
    if (dt[e] < 0) return report_unknown(p, sh, dt, 0);
  return LMX_OK;
}

/* Appended entries take their shapes from earlier ones; a backward node may read a copy
 * appended after it (place.c), so sweep until nothing changes. */
static void derive(lmx_plan *p) {
  for (int changed = 1, round = 0; changed && round <= p->num_nodes; round++) {
    changed = 0;
    for (int n = p->num_fwd_nodes; n < p->num_nodes; n++) {
      const lmx_pnode *nd = &p->nodes[n];
      for (int k = 0; k < nd->nout; k++) {
        int e = nd->out0 + k, from;
        if (nd->kind == LMX_PN_BWD) from = p->in_entry[p->nodes[nd->fwd].in0 + k];
        else if (nd->kind == LMX_PN_COPY) from = p->in_entry[nd->in0];
        else from = nd->like;
        if (p->dtype[e] == p->dtype[from] && lmx_shape_equal(&p->shape[e], &p->shape[from]))
          continue;
        p->shape[e] = p->shape[from];
        p->dtype[e] = p->dtype[from];
        changed = 1;
      }
    }
  }
}

int lmx_pass_shapes(lmx_plan *p, const lmx_igraph *g, lmx_shape *fwd_shape, int *fwd_dtype) {
  LMX_TRY(lmx_infer_shapes(g, fwd_shape));
  LMX_TRY(lmx_infer_types(g, fwd_dtype));
  LMX_TRY(forward_known(p, g->nentries, fwd_shape, fwd_dtype));
  memcpy(p->shape, fwd_shape, (size_t)g->nentries * sizeof(lmx_shape));
  memcpy(p->dtype, fwd_dtype, (size_t)g->nentries * sizeof(int));
  derive(p);
  return LMX_OK;
}
