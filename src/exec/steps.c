/* steps.c — materialization: an array for every plan entry and the flat step list.
 *
 * After the passes, bind calls lmx_exec_materialize once. It asks the pool for one slab
 * per storage block, makes a typed view of its slab for every planned entry, points
 * external entries at the bound arrays (arguments, aux states, argument gradients),
 * makes the arrays the executor owns (head gradients, zeros: zero-filled), and then
 * writes every entry's kernel argument (lmx_tensor: pointer, shape, dtype) once into
 * tens[], every step's arguments as entry ids and its write requests into two flat
 * arrays, and its kernel: the function pointers of the node's device's kernel table
 * (lmx_op_kernel) and that device's table and stream in the call context. From then on
 * forward and backward only read steps[] (and copy a step's arguments from tens[] into
 * one buffer before its kernel): nothing is allocated or looked up that the plan did
 * not ask for.
 * Gradient finality: for every argument with a gradient, the last backward step that
 * writes its array (a write, or an accumulation with req add: several consumers add
 * into the one array, copies between contexts included) is where the gradient becomes
 * final; grad_final and the per-step lists final_at / final_args are made here, once,
 * so backward can hand them to a hook (the dist kvstore's overlap) without allocating.
 * What a bound executor keeps is what it runs with: one tensor per entry however many
 * steps read it (a step holds 4-byte entry ids, not 88-byte tensors); the views of
 * intermediates that only steps read are released (a monitor makes them again); the
 * plan's per-entry tables are freed and the rest trimmed to size
 * (lmx_plan_drop_bind_tables). So each bucket of a bucketing pool costs its steps and
 * little more (spec/bucketing_memory_spec.lua).
 * Invariant: ent[e] holds one reference for every entry e that still has an array
 * (accumulating entries share the array of the entry they accumulate into, with their
 * own reference); a NULL ent[e] is a planned intermediate, made by lmx_exec_entry_views.
 */
#include <stdlib.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "../ops/kernel.h"
#include "exec.h"

/* Head gradients are the executor's own (backward copies into them). */
static int own_zeros(lmx_executor *x, int e, lmx_ndarray **out) {
  const lmx_plan *p = &x->plan;
  int c = p->nodes[p->entry_node[e]].ctx;
  return lmx_nd_create(&p->shape[e], p->dtype[e], p->ctx_type[c], p->ctx_id[c], 1, out);
}

/* Zeros nodes (output gradients nothing flows into) are only read: a view of the pool's
 * shared zero array, so executors sharing a pool (buckets) hold one between them. */
static int shared_zeros(lmx_executor *x, int e, lmx_ndarray **out) {
  const lmx_plan *p = &x->plan;
  int c = p->nodes[p->entry_node[e]].ctx;
  lmx_ndarray *z;
  LMX_TRY(lmx_pool_zeros(x->pool, lmx_plan_entry_bytes(p, e), p->ctx_type[c], p->ctx_id[c], &z));
  LMX_TRY(lmx_nd_view(z, &p->shape[e], 0, out));
  (*out)->dtype = p->dtype[e];
  return LMX_OK;
}

static void borrow(lmx_ndarray *a, lmx_ndarray **slot) {
  lmx_ref_inc(&a->rc);
  *slot = a;
}

static int entry_array(lmx_executor *x, const int *slab_of, int e) {
  const lmx_plan *p = &x->plan;
  const lmx_pnode *n = &p->nodes[p->entry_node[e]];
  lmx_ndarray **slot = &x->ent[e];
  if (p->sid[e] >= 0) {
    const lmx_slab *s = &x->pool->slab[slab_of[p->sid[e]]];
    LMX_TRY(lmx_nd_view(s->base, &p->shape[e], s->off, slot));
    (*slot)->dtype = p->dtype[e];
  } else if (p->alias[e] >= 0) {
    borrow(x->ent[p->alias[e]], slot);
  } else if (p->grad_arg[e] >= 0) {
    borrow(x->grads[p->grad_arg[e]], slot);
  } else if (n->kind == LMX_PN_VAR && n->var_kind == LMX_VAR_ARG) {
    borrow(x->args[n->var_index], slot);
  } else if (n->kind == LMX_PN_VAR && n->var_kind == LMX_VAR_AUX) {
    borrow(x->aux[n->var_index], slot);
  } else if (n->kind == LMX_PN_VAR) { /* head gradient */
    LMX_TRY(own_zeros(x, e, slot));
    borrow(*slot, &x->head_grads[n->var_index]);
  } else {
    LMX_TRY(shared_zeros(x, e, slot)); /* zeros */
  }
  return LMX_OK;
}

/* Every planned block and every context's workspace comes from the executor's pool, so
 * executors sharing a pool (reshape, shared_exec, bucketing) share workspaces too: they
 * run one at a time. Workspaces are the last blocks of the request. */
static int entries(lmx_executor *x) {
  const lmx_plan *p = &x->plan;
  int nws = 0, wsctx[LMX_PLAN_MAX_CTX];
  for (int c = 0; c < p->nctx; c++)
    if (p->ctx_ws[c]) wsctx[nws++] = c;
  int nb = p->nblocks + nws;
  x->ent = lmx_calloc((size_t)p->num_entries + 1, sizeof *x->ent);
  x->head_grads = lmx_calloc((size_t)p->nheads + 1, sizeof *x->head_grads);
  size_t *bytes = lmx_alloc(((size_t)nb + 1) * sizeof(size_t));
  int *dt = lmx_alloc(((size_t)nb + 1) * 3 * sizeof(int));
  if (!x->ent || !x->head_grads || !bytes || !dt) {
    lmx_free(bytes);
    lmx_free(dt);
    return lmx_fail_nomem("executor arrays", (size_t)p->num_entries * sizeof(void *));
  }
  int *di = dt + nb + 1, *slab_of = di + nb + 1;
  for (int bk = 0; bk < nb; bk++) {
    int c = bk < p->nblocks ? p->blk_ctx[bk] : wsctx[bk - p->nblocks];
    bytes[bk] = bk < p->nblocks ? p->blk_bytes[bk] : p->ctx_ws[c];
    dt[bk] = p->ctx_type[c];
    di[bk] = p->ctx_id[c];
  }
  int rc = lmx_pool_take(x->pool, nb, bytes, dt, di, slab_of);
  for (int e = 0; e < p->num_entries && rc == LMX_OK; e++) rc = entry_array(x, slab_of, e);
  for (int w = 0; w < nws && rc == LMX_OK; w++) {
    const lmx_slab *sl = &x->pool->slab[slab_of[p->nblocks + w]];
    lmx_shape sh = {1, {(int64_t)p->ctx_ws[wsctx[w]]}};
    rc = lmx_nd_view(sl->base, &sh, sl->off, &x->ws[wsctx[w]]);
  }
  lmx_free(bytes);
  lmx_free(dt);
  return rc;
}

static lmx_tensor tensor_of(const lmx_ndarray *a) {
  lmx_tensor t = {lmx_nd_ptr(a), a->shape, a->dtype};
  return t;
}

/* The entry ids of an op step's kernel arguments: in[nargs] out[nout] aux[naux]. */
static void op_step(lmx_executor *x, lmx_xstep *s, const lmx_pnode *nd, int *slot, int *req) {
  const lmx_plan *p = &x->plan;
  int na = lmx_node_num_args(nd->src);
  s->kind = LMX_STEP_OP;
  s->nargs = na, s->nout = nd->nout, s->naux = nd->nin - na;
  for (int k = 0; k < na; k++) slot[k] = p->in_entry[nd->in0 + k];
  for (int j = 0; j < nd->nout; j++) {
    slot[na + j] = nd->out0 + j;
    req[j] = p->req[nd->out0 + j];
  }
  for (int k = na; k < nd->nin; k++) slot[nd->nout + k] = p->in_entry[nd->in0 + k];
}

/* ... of a backward step: og[nout] in[nargs] out[nout] ig[nargs] aux[naux]. */
static void bwd_step(lmx_executor *x, lmx_xstep *s, const lmx_pnode *b, int *slot, int *req) {
  const lmx_plan *p = &x->plan;
  const lmx_pnode *f = &p->nodes[b->fwd];
  int na = lmx_node_num_args(f->src), no = f->nout, nx = f->nin - na;
  s->kind = LMX_STEP_BWD;
  s->nargs = na, s->nout = no, s->naux = nx;
  const int *in = p->in_entry + b->in0;
  int at = 0;
  for (int j = 0; j < no; j++) slot[at++] = in[j];
  for (int k = 0; k < na; k++) slot[at++] = in[no + k];
  for (int j = 0; j < no; j++) slot[at++] = in[no + f->nin + j];
  for (int k = 0; k < na; k++) {
    slot[at++] = b->out0 + k;
    req[k] = p->req[b->out0 + k];
  }
  for (int k = 0; k < nx; k++) slot[at++] = in[no + na + k];
}

static void fill_step(lmx_executor *x, lmx_xstep *s, int n, int *slot, int nt, int *req) {
  const lmx_plan *p = &x->plan;
  const lmx_pnode *nd = &p->nodes[n];
  s->node = n;
  s->slot = slot;
  s->nt = nt;
  s->req = req;
  s->c.dev_type = p->ctx_type[nd->ctx];
  s->c.dev_id = p->ctx_id[nd->ctx];
  const lmx_device_ops *dev = NULL;
  if (lmx_device_lookup(s->c.dev_type, s->c.dev_id, &dev) == LMX_OK) {
    s->c.dev = dev;
    s->c.stream = lmx_device_stream(dev, s->c.dev_id);
  }
  if (nd->kind == LMX_PN_COPY) {
    s->kind = LMX_STEP_COPY;
    s->src = x->ent[p->in_entry[nd->in0]];
    s->dst = x->ent[nd->out0];
    req[0] = p->req[nd->out0];
    return;
  }
  s->c.op = nd->op;
  s->c.param = nd->src->param;
  s->c.node = nd->src->name;
  if (s->note) s->note[0] = 0, s->c.note = s->note, s->c.note_cap = LMX_STEP_NOTE_CAP;
  if (x->ws[nd->ctx] && p->node_ws[n]) {
    s->c.workspace = lmx_nd_ptr(x->ws[nd->ctx]);
    s->c.workspace_bytes = p->node_ws[n];
  }
  /* The kernel comes from the node's device's table, looked up once here (bind has
   * already refused ops that device lacks). */
  const lmx_kernel *k = lmx_op_kernel(nd->op, s->c.dev_type);
  if (nd->kind == LMX_PN_OP) {
    s->fwd = k ? k->forward : NULL;
    op_step(x, s, nd, slot, req);
  } else {
    s->bwd = k ? k->backward : NULL;
    bwd_step(x, s, nd, slot, req);
  }
}

static void step_sizes(const lmx_plan *p, int n, int *nt, int *nr) {
  const lmx_pnode *nd = &p->nodes[n];
  if (nd->kind == LMX_PN_COPY) *nt = 0, *nr = 1;
  else if (nd->kind == LMX_PN_OP) *nt = nd->nin + nd->nout, *nr = nd->nout;
  else {
    const lmx_pnode *f = &p->nodes[nd->fwd];
    int na = lmx_node_num_args(f->src);
    *nt = 2 * f->nout + 2 * na + (f->nin - na), *nr = na;
  }
}

/* Does step s write (any request but null) into array g? */
static int step_writes(const lmx_executor *x, const lmx_xstep *s, const lmx_ndarray *g) {
  const lmx_plan *p = &x->plan;
  const lmx_pnode *nd = &p->nodes[s->node];
  int out0 = nd->out0, nout = s->kind == LMX_STEP_BWD ? s->nargs : nd->nout;
  if (s->kind == LMX_STEP_COPY) nout = 1;
  for (int j = 0; j < nout; j++)
    if (p->req[out0 + j] != LMX_REQ_NULL && x->ent[out0 + j] == g) return 1;
  return 0;
}

static int final_plan(lmx_executor *x) {
  const lmx_plan *p = &x->plan;
  int na = p->nargs, nb = x->nsteps - x->nfwd_steps;
  x->nbwd_steps = nb;
  x->grad_final = lmx_calloc((size_t)na + 1, sizeof(int));
  x->final_at = lmx_calloc((size_t)nb + 3, sizeof(int));
  x->final_args = lmx_calloc((size_t)na + 1, sizeof(int));
  if (!x->grad_final || !x->final_at || !x->final_args)
    return lmx_fail_nomem("the executor's gradient finality", (size_t)(na + nb) * sizeof(int));
  for (int a = 0; a < na; a++) {
    x->grad_final[a] = x->grads[a] ? -1 : -2;
    for (int i = x->nfwd_steps; x->grads[a] && i < x->nsteps; i++)
      if (step_writes(x, &x->steps[i], x->grads[a])) x->grad_final[a] = i - x->nfwd_steps;
  }
  /* counting sort by step: slot s + 1 for step s (-1 .. nb - 1) */
  for (int a = 0; a < na; a++)
    if (x->grad_final[a] >= -1) x->final_at[x->grad_final[a] + 2]++;
  for (int s = 0; s < nb + 1; s++) x->final_at[s + 1] += x->final_at[s];
  int *pos = lmx_alloc(((size_t)nb + 2) * sizeof(int));
  if (!pos) return lmx_fail_nomem("the executor's gradient finality", (size_t)nb * sizeof(int));
  memcpy(pos, x->final_at, ((size_t)nb + 2) * sizeof(int));
  for (int a = 0; a < na; a++)
    if (x->grad_final[a] >= -1) x->final_args[pos[x->grad_final[a] + 1]++] = a;
  lmx_free(pos);
  return LMX_OK;
}

/* The tensor of output j of step s's node (OP: out[j]; BWD: the gradient of argument
 * j): both are the node's entry out0 + j. */
static const lmx_tensor *step_output(const lmx_executor *x, const lmx_xstep *s, int j) {
  return &x->tens[x->plan.nodes[s->node].out0 + j];
}

/* The pool arena that holds t's data (NULL: none, e.g. an empty tensor at an end). */
static lmx_ndarray *arena_of(const lmx_executor *x, const lmx_tensor *t) {
  const lmx_pool *pl = x->pool;
  for (int i = 0; i < pl->n; i++) {
    lmx_ndarray *base = pl->slab[i].base;
    const char *lo = base->st->ptr, *d = t->data;
    if (d && d >= lo && d < lo + base->st->bytes) return base;
  }
  return NULL;
}

/* A view of the pool arena that holds t's data, shaped and typed as t. */
static int view_of_tensor(const lmx_executor *x, const lmx_tensor *t, lmx_ndarray **out) {
  lmx_ndarray *base = arena_of(x, t);
  if (!base)
    return lmx_fail(LMX_ERR_INTERNAL, "monitor: an intermediate's data is in no arena of "
                    "the executor's pool");
  LMX_TRY(lmx_nd_view(base, &t->shape, (size_t)((const char *)t->data - (const char *)base->st->ptr), out));
  (*out)->dtype = t->dtype;
  return LMX_OK;
}

/* Once the steps are written, the views of planned intermediates are only needed by a
 * monitor: the steps carry their own pointers. Views that no one else reads (heads,
 * copy operands, accumulating aliases, which hold their own reference) are released;
 * lmx_exec_entry_views makes them again when a monitor is installed. */
static void drop_internal_views(lmx_executor *x) {
  const lmx_plan *p = &x->plan;
  char *keep = lmx_calloc((size_t)p->num_entries + 1, 1);
  if (!keep) return; /* keeping the views is always correct */
  for (int h = 0; h < p->nheads; h++) keep[p->head_entry[h]] = 1;
  for (int e = 0; e < p->num_entries; e++)
    if (p->alias[e] >= 0) keep[p->alias[e]] = 1;
  for (int i = 0; i < x->nsteps; i++) {
    const lmx_xstep *s = &x->steps[i];
    const lmx_pnode *nd = &p->nodes[s->node];
    if (s->kind == LMX_STEP_COPY) keep[p->in_entry[nd->in0]] = keep[nd->out0] = 1;
  }
  for (int i = 0; i < x->nsteps; i++) {
    const lmx_xstep *s = &x->steps[i];
    const lmx_pnode *nd = &p->nodes[s->node];
    int nout = s->kind == LMX_STEP_BWD ? s->nargs : nd->nout;
    for (int j = 0; s->kind != LMX_STEP_COPY && j < nout; j++) {
      int e = nd->out0 + j;
      if (p->sid[e] < 0 || keep[e] || !x->ent[e] || !arena_of(x, step_output(x, s, j))) continue;
      lmx_nd_release(x->ent[e]);
      x->ent[e] = NULL;
    }
  }
  lmx_free(keep);
}

int lmx_exec_entry_views(lmx_executor *x) {
  const lmx_plan *p = &x->plan;
  for (int i = 0; i < x->nsteps; i++) {
    const lmx_xstep *s = &x->steps[i];
    const lmx_pnode *nd = &p->nodes[s->node];
    int nout = s->kind == LMX_STEP_BWD ? s->nargs : nd->nout;
    for (int j = 0; s->kind != LMX_STEP_COPY && j < nout; j++)
      if (!x->ent[nd->out0 + j]) LMX_TRY(view_of_tensor(x, step_output(x, s, j), &x->ent[nd->out0 + j]));
  }
  return LMX_OK;
}

/* LUAMX_EXEC_KEEP_PLAN=1 keeps the plan's bind-time tables (unit tests of the passes,
 * debugging); it changes nothing that runs. */
static int keep_plan(void) {
  const char *env = getenv("LUAMX_EXEC_KEEP_PLAN");
  return env && strcmp(env, "1") == 0;
}

/* Does plan node n run a kernel on a device other than the CPU? */
static int step_on_gpu(const lmx_plan *p, int n) {
  const lmx_pnode *nd = &p->nodes[n];
  return nd->kind != LMX_PN_COPY && p->ctx_type[nd->ctx] != LMX_CPU;
}

int lmx_exec_materialize(lmx_executor *x) {
  const lmx_plan *p = &x->plan;
  LMX_TRY(entries(x));
  int nt = 0, nr = 0;
  for (int i = 0; i < p->num_order; i++) {
    int a, b;
    step_sizes(p, p->order[i], &a, &b);
    nt += a, nr += b;
  }
  int ngpu = 0; /* only steps on a GPU get a note: CPU kernels have no choice to report */
  for (int i = 0; i < p->num_order; i++)
    ngpu += step_on_gpu(p, p->order[i]);
  x->steps = lmx_calloc((size_t)p->num_order + 1, sizeof *x->steps);
  x->slots = lmx_calloc((size_t)nt + 1, sizeof *x->slots);
  x->reqs = lmx_calloc((size_t)nr + 1, sizeof *x->reqs);
  x->tens = lmx_calloc((size_t)p->num_entries + 1, sizeof *x->tens);
  x->notes = ngpu ? lmx_calloc((size_t)ngpu, LMX_STEP_NOTE_CAP) : NULL;
  if (!x->steps || !x->slots || !x->reqs || !x->tens || (ngpu && !x->notes))
    return lmx_fail_nomem("executor steps", (size_t)p->num_entries * sizeof(lmx_tensor));
  for (int e = 0; e < p->num_entries; e++)
    if (x->ent[e]) x->tens[e] = tensor_of(x->ent[e]);
  int width = 0;
  nt = nr = ngpu = 0;
  for (int i = 0; i < p->num_order; i++) {
    int a, b;
    step_sizes(p, p->order[i], &a, &b);
    if (step_on_gpu(p, p->order[i])) x->steps[i].note = x->notes + (size_t)ngpu++ * LMX_STEP_NOTE_CAP;
    fill_step(x, &x->steps[i], p->order[i], x->slots + nt, a, x->reqs + nr);
    nt += a, nr += b;
    if (a > width) width = a;
  }
  x->nsteps = p->num_order;
  x->nfwd_steps = p->num_fwd_order;
  x->args_buf = lmx_calloc((size_t)width + 1, sizeof *x->args_buf);
  if (!x->args_buf) return lmx_fail_nomem("executor steps", (size_t)width * sizeof(lmx_tensor));
  LMX_TRY(final_plan(x));
  lmx_exec_fuse(x);
  drop_internal_views(x);
  if (!keep_plan()) lmx_plan_drop_bind_tables(&x->plan);
  return LMX_OK;
}
