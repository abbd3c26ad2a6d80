/* reshape.c — a new executor for new input shapes that shares memory and parameters
 * with the old one (MXNet's GraphExecutor::Reshape, §1.7 of MXNET-SEMANTICS.md).
 *
 * Shapes are re-inferred from the given ones. For every argument and aux state: if the
 * name was given, or partial_shaping, or the inferred shape equals the current one, the
 * new array is a view of the old array with the new shape when it has no more elements
 * (so same-shape arrays are the very same memory: parameters are shared), and a new
 * zero array when it has more, which needs allow_up_sizing (otherwise an error naming
 * the argument). Gradients follow their argument. Any other change is an error naming
 * the argument. The new executor keeps the grad_req, the contexts and group2ctx, and
 * draws its intermediate buffers from the old executor's pool: after down-sizing, its
 * buffers are prefixes of the old one's. The two must not run at the same time.
 */
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "../passes/infer.h"
#include "exec.h"

static int infer_new(const lmx_executor *x, const lmx_igraph *g, int n,
                     const char *const *names, const lmx_shape *shapes, lmx_shape *sh,
                     char *given) {
  int na = g->nargs;
  for (int i = 0; i < n; i++) {
    int found = -1;
    for (int k = 0; k < na + g->naux && found < 0; k++) {
      const char *nm = k < na ? x->arg_names[k] : x->aux_names[k - na];
      if (strcmp(nm, names[i]) == 0) found = k;
    }
    if (found < 0)
      return lmx_fail(LMX_ERR_NOTFOUND, "reshape: unknown argument '%s'", names[i]);
    int nid = found < na ? g->args[found] : g->aux[found - na];
    sh[g->entry_ptr[nid]] = shapes[i];
    given[found] = 1;
  }
  return lmx_infer_shapes(g, sh);
}

/* The new array for variable k (old array a, new shape s). */
static int new_array(lmx_ndarray *a, const lmx_shape *s, int allow_up, const char *name,
                     lmx_ndarray **out) {
  if (lmx_shape_size(s) > lmx_nd_size(a)) {
    if (!allow_up)
      return lmx_fail(LMX_ERR_SHAPE, "reshape: New shape of arg: %s is larger than original. "
                      "First making a big executor and then down sizing it is more efficient "
                      "than the reverse. If you really want to up size, set "
                      "allow_up_sizing=True to enable allocation of new arrays.", name);
    return lmx_nd_create(s, a->dtype, a->st->dev_type, a->st->dev_id, 1, out);
  }
  return lmx_nd_view(a, s, a->offset, out);
}

static int fill_binder(lmx_executor *x, lmx_binder *b, const lmx_igraph *g, const lmx_shape *sh,
                       const char *given, int partial, int allow_up) {
  int na = g->nargs;
  for (int k = 0; k < na + g->naux; k++) {
    int is_arg = k < na, nid = is_arg ? g->args[k] : g->aux[k - na];
    const lmx_shape *s = &sh[g->entry_ptr[nid]];
    lmx_ndarray *old = is_arg ? x->args[k] : x->aux[k - na];
    const char *nm = is_arg ? x->arg_names[k] : x->aux_names[k - na];
    if (!given[k] && !partial && !lmx_shape_equal(s, &old->shape))
      return lmx_fail(LMX_ERR_SHAPE, "reshape: Shape of unspecified arg: %s changed. This can "
                      "cause the new executor to not share parameters with the old one. "
                      "Please check for error in network. If this is intended, set "
                      "partial_shaping=True to suppress this warning.", nm);
    if (!lmx_shape_known(s))
      return lmx_fail(LMX_ERR_SHAPE, "reshape: cannot decide the new shape of '%s'", nm);
    LMX_TRY(new_array(old, s, allow_up, nm, is_arg ? &b->args[k] : &b->aux[k - na]));
    if (!is_arg) continue;
    b->req[k] = x->grad_req[k];
    b->req_set[k] = 1;
    if (x->grads[k]) LMX_TRY(new_array(x->grads[k], s, 1, nm, &b->grads[k]));
  }
  return LMX_OK;
}

static int configure(lmx_executor *x, lmx_binder *b) {
  for (int i = 0; i < x->ngroups; i++)
    LMX_TRY(lmx_binder_group(b, x->groups[i], x->group_type[i], x->group_id[i]));
  b->no_share = x->no_share;
  lmx_pool_retain(x->pool);
  b->pool = x->pool;
  return LMX_OK;
}

int lmx_exec_reshape(lmx_executor *x, int partial, int allow_up, int n,
                     const char *const *names, const lmx_shape *shapes, lmx_executor **out) {
  lmx_binder *b;
  LMX_TRY(lmx_binder_create(x->sym, x->dev_type, x->dev_id, &b));
  const lmx_igraph *g = &b->g;
  lmx_shape *sh = lmx_calloc((size_t)g->nentries + 1, sizeof *sh);
  char *given = lmx_calloc((size_t)g->nargs + (size_t)g->naux + 1, 1);
  int rc = !sh || !given ? lmx_fail_nomem("reshape", (size_t)g->nentries * sizeof *sh) : LMX_OK;
  if (rc == LMX_OK) rc = infer_new(x, g, n, names, shapes, sh, given);
  if (rc == LMX_OK) rc = fill_binder(x, b, g, sh, given, partial, allow_up);
  if (rc == LMX_OK) rc = configure(x, b);
  if (rc == LMX_OK) rc = lmx_exec_bind(b, 0, out);
  lmx_free(sh);
  lmx_free(given);
  lmx_binder_destroy(b);
  return rc;
}
