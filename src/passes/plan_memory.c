/* plan_memory.c — storage ids for every entry (MXNet's src/nnvm/plan_memory.cc).
 *
 * Entries outside the plan get LMX_SID_EXT: variables (the user's arrays), head
 * gradients and zeros (arrays the executor owns), and gradients that land in argument
 * gradient arrays. An entry that accumulates into an earlier contribution (alias[])
 * takes that entry's storage. Every other entry is planned:
 *  1. readers are counted per entry (backward nodes count only the inputs their
 *     backward_needs names; every forward head counts once more, so outputs are never
 *     freed);
 *  2. walking the execution order, a node first reuses in place the storage of an input
 *     it reads last (plan_inplace.c's candidates; forward outputs then get req
 *     LMX_REQ_INPLACE, backward gradients keep write), then takes a free block for each other
 *     output, largest first: a free block on the same context of size within
 *     [size, 16 x size] (the smallest such), else one within [size / 16, size) that
 *     grows (the largest), else a new block; then it releases the blocks of inputs whose
 *     last reader it was, and outputs nobody reads;
 *  3. share = 0 (LUAMX_EXEC_NO_SHARE=1 / LMX_BIND_NO_SHARE) gives each planned entry its
 *     own block and takes nothing in place: results must not change, which bisects
 *     planner bugs (and kernels whose backward_needs are wrong).
 * Sizes are real bytes (elements x dtype size) rounded up to 64. planned_bytes is the
 * sum of the blocks (what bind allocates for intermediates), naive_bytes the sum over
 * planned entries (what no sharing at all would cost).
 */
#include <stdlib.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "../ops/kernel.h"
#include "plan.h"

enum { MATCH_RANGE = 16 };

typedef struct {
  int *use;
  char *is_free;
  int share;
  int *chain; /* per node: the Convolution whose inputs it holds (chain_head), or -1 */
} mem_state;

static size_t round64(size_t b) { return b ? (b + 63) & ~(size_t)63 : 64; }

static int is_planned(const lmx_plan *p, int e) {
  const lmx_pnode *n = &p->nodes[p->entry_node[e]];
  if (n->kind == LMX_PN_VAR || n->kind == LMX_PN_ZEROS || p->grad_arg[e] >= 0) return 0;
  return p->alias[e] < 0;
}

static int is_op(const lmx_plan *p, int n, const char *name) {
  const lmx_pnode *nd = &p->nodes[n];
  return nd->kind == LMX_PN_OP && !nd->is_bwd && strcmp(nd->op->name, name) == 0;
}

/* The CPU Convolution whose forward chain node n continues (-1: none). src/exec/fuse.c
 * runs Convolution → BatchNorm → Activation or clip as one step, which writes the last
 * output while it reads the Convolution's inputs; so the chain's later nodes count as
 * readers of those inputs here, and their outputs never take the inputs' storage. A link
 * is an entry read once (refs, counted before), by the next node's first input;
 * BatchNorm's mean and var unread. fuse.c checks the rest. */
static int chain_head(const lmx_plan *p, int n) {
  if (!is_op(p, n, "BatchNorm") && !is_op(p, n, "Activation") && !is_op(p, n, "clip"))
    return -1;
  int e = p->in_entry[p->nodes[n].in0], src = p->entry_node[e];
  if (p->refs[e] != 1 || src < 0) return -1;
  const lmx_pnode *s = &p->nodes[src];
  if (is_op(p, src, "Convolution"))
    return p->ctx_type[s->ctx] == LMX_CPU && e == s->out0 ? src : -1;
  if (!is_op(p, src, "BatchNorm") || is_op(p, n, "BatchNorm") || e != s->out0 || s->nout != 3 ||
      p->refs[s->out0 + 1] || p->refs[s->out0 + 2])
    return -1;
  return chain_head(p, src);
}

/* chain[n] = chain_head(p, n) for every node, and one more reader of the Convolution's
 * inputs per chain node. */
static int chain_refs(lmx_plan *p, int **chain) {
  const char *env = getenv("LUAMX_FUSE"); /* fusion off (fuse.c): nothing to hold */
  if (env && strcmp(env, "0") == 0) return LMX_OK;
  *chain = lmx_alloc(((size_t)p->num_nodes + 1) * sizeof **chain);
  if (!*chain) return lmx_fail_nomem("memory plan", (size_t)p->num_nodes * sizeof **chain);
  for (int n = 0; n < p->num_nodes; n++) (*chain)[n] = chain_head(p, n);
  for (int n = 0; n < p->num_nodes; n++) {
    int c = (*chain)[n];
    for (int k = 0; c >= 0 && k < p->nodes[c].nin; k++)
      if (lmx_plan_reads(p, c, k)) p->refs[p->in_entry[p->nodes[c].in0 + k]]++;
  }
  return LMX_OK;
}

static void count_refs(lmx_plan *p) {
  for (int e = 0; e < p->num_entries; e++) p->refs[e] = 0;
  for (int i = 0; i < p->num_order; i++) {
    int n = p->order[i];
    for (int k = 0; k < p->nodes[n].nin; k++)
      if (lmx_plan_reads(p, n, k)) p->refs[p->in_entry[p->nodes[n].in0 + k]]++;
  }
  for (int h = 0; h < p->nheads; h++) p->refs[p->head_entry[h]]++;
}

static int new_block(lmx_plan *p, mem_state *m, size_t bytes, int ctx, int *sid) {
  int b = p->nblocks;
  size_t cap = (size_t)b + 1;
  size_t *nb = lmx_realloc(p->blk_bytes, cap * sizeof *nb);
  if (nb) p->blk_bytes = nb;
  int *nc = lmx_realloc(p->blk_ctx, cap * sizeof *nc);
  if (nc) p->blk_ctx = nc;
  int *nu = lmx_realloc(m->use, cap * sizeof *nu);
  if (nu) m->use = nu;
  char *nf = lmx_realloc(m->is_free, cap);
  if (nf) m->is_free = nf;
  if (!nb || !nc || !nu || !nf) return lmx_fail_nomem("the memory plan", cap * 24);
  p->blk_bytes[b] = bytes;
  p->blk_ctx[b] = ctx;
  m->is_free[b] = 0;
  m->use[b] = 0;
  p->nblocks++;
  *sid = b;
  return LMX_OK;
}

static int request(lmx_plan *p, mem_state *m, size_t bytes, int ctx, int *sid) {
  if (m->share) {
    int best = -1, grow = -1;
    for (int b = 0; b < p->nblocks; b++) {
      if (!m->is_free[b] || p->blk_ctx[b] != ctx) continue;
      size_t s = p->blk_bytes[b];
      if (s >= bytes && s / MATCH_RANGE <= bytes) {
        if (best < 0 || s < p->blk_bytes[best]) best = b;
      } else if (s < bytes && s >= bytes / MATCH_RANGE) {
        if (grow < 0 || s > p->blk_bytes[grow]) grow = b;
      }
    }
    if (best < 0) best = grow;
    if (best >= 0) {
      if (p->blk_bytes[best] < bytes) p->blk_bytes[best] = bytes;
      m->is_free[best] = 0;
      *sid = best;
      return LMX_OK;
    }
  }
  return new_block(p, m, bytes, ctx, sid);
}

static void take_inplace(lmx_plan *p, mem_state *m, int n) {
  const lmx_pnode *nd = &p->nodes[n];
  unsigned taken = 0;
  for (int i = p->ip_ptr[n]; i < p->ip_ptr[n + 1]; i++) {
    int k = p->ip_pair[i][0], j = p->ip_pair[i][1];
    int ein = p->in_entry[nd->in0 + k], eout = nd->out0 + j, s = p->sid[ein];
    if (k < 32 && (taken >> k & 1)) continue;
    if (p->sid[eout] != LMX_SID_NONE || s < 0 || m->use[s] != 1 || p->refs[eout] == 0) continue;
    if (!is_planned(p, eout)) continue;
    p->sid[eout] = s;
    m->use[s] += p->refs[eout];
    p->inplace[eout] = k;
    if (nd->kind == LMX_PN_OP) p->req[eout] = LMX_REQ_INPLACE;
    if (k < 32) taken |= 1u << k;
  }
}

static int alloc_outputs(lmx_plan *p, mem_state *m, int n) {
  const lmx_pnode *nd = &p->nodes[n];
  for (;;) { /* largest first; for equal sizes the higher index first */
    int pick = -1;
    size_t pb = 0;
    for (int j = 0; j < nd->nout; j++) {
      int e = nd->out0 + j;
      if (p->sid[e] != LMX_SID_NONE || !is_planned(p, e)) continue;
      size_t b = round64(lmx_plan_entry_bytes(p, e));
      if (pick < 0 || b >= pb) pick = e, pb = b;
    }
    if (pick < 0) return LMX_OK;
    LMX_TRY(request(p, m, pb, nd->ctx, &p->sid[pick]));
    m->use[p->sid[pick]] = p->refs[pick];
  }
}

/* One reader of node n's inputs done: their blocks' uses drop, and free at 0. */
static void drop_inputs(lmx_plan *p, mem_state *m, int n) {
  const lmx_pnode *nd = &p->nodes[n];
  for (int k = 0; k < nd->nin; k++) {
    if (!lmx_plan_reads(p, n, k)) continue;
    int s = p->sid[p->in_entry[nd->in0 + k]];
    if (s >= 0 && m->use[s] > 0 && --m->use[s] == 0) m->is_free[s] = 1;
  }
}

static void release_after(lmx_plan *p, mem_state *m, int n) {
  const lmx_pnode *nd = &p->nodes[n];
  drop_inputs(p, m, n);
  if (m->chain && m->chain[n] >= 0) drop_inputs(p, m, m->chain[n]); /* the Convolution's */
  for (int j = 0; j < nd->nout; j++) {
    int s = p->sid[nd->out0 + j];
    if (s >= 0 && is_planned(p, nd->out0 + j) && m->use[s] == 0) m->is_free[s] = 1;
  }
}

static int walk(lmx_plan *p, mem_state *m) {
  for (int e = 0; e < p->num_entries; e++) {
    if (!is_planned(p, e) && p->alias[e] < 0) p->sid[e] = LMX_SID_EXT;
  }
  for (int i = 0; i < p->num_order; i++) {
    int n = p->order[i];
    const lmx_pnode *nd = &p->nodes[n];
    for (int j = 0; j < nd->nout; j++) { /* accumulating outputs: the first's storage */
      int e = nd->out0 + j;
      if (p->alias[e] >= 0) p->sid[e] = p->sid[p->alias[e]];
    }
    if (m->share) take_inplace(p, m, n);
    LMX_TRY(alloc_outputs(p, m, n));
    release_after(p, m, n);
  }
  return LMX_OK;
}

static int workspaces(lmx_plan *p) {
  lmx_free(p->node_ws);
  p->node_ws = lmx_calloc((size_t)p->num_nodes + 1, sizeof(size_t));
  int width = 1;
  for (int n = 0; n < p->num_nodes; n++)
    if (p->nodes[n].nin + p->nodes[n].nout > width) width = p->nodes[n].nin + p->nodes[n].nout;
  lmx_shape *buf = lmx_alloc((size_t)width * 2 * sizeof *buf);
  int *dts = lmx_alloc((size_t)width * 2 * sizeof *dts);
  if (!p->node_ws || !buf || !dts) {
    lmx_free(buf);
    lmx_free(dts);
    return lmx_fail_nomem("workspace sizes", (size_t)width * 2 * sizeof *buf);
  }
  memset(p->ctx_ws, 0, sizeof p->ctx_ws);
  for (int n = 0; n < p->num_nodes; n++) {
    const lmx_pnode *nd = &p->nodes[n];
    if (nd->kind != LMX_PN_OP && nd->kind != LMX_PN_BWD) continue;
    const lmx_kernel *kern = lmx_op_kernel(nd->op, p->ctx_type[nd->ctx]);
    if (!kern || !kern->workspace) continue; /* no kernel: bind refused the op */
    const lmx_pnode *f = nd->kind == LMX_PN_BWD ? &p->nodes[nd->fwd] : nd;
    for (int k = 0; k < f->nin; k++) {
      int e = p->in_entry[f->in0 + k];
      buf[k] = p->shape[e], dts[k] = p->dtype[e];
    }
    for (int j = 0; j < f->nout; j++)
      buf[f->nin + j] = p->shape[f->out0 + j], dts[f->nin + j] = p->dtype[f->out0 + j];
    lmx_op_ctx c = {.op = nd->op, .param = nd->src->param, .node = nd->src->name,
                    .dev_type = p->ctx_type[nd->ctx], .dev_id = p->ctx_id[nd->ctx],
                    .dtypes = dts};
    p->node_ws[n] = kern->workspace(&c, buf, buf + f->nin);
    if (p->node_ws[n] > p->ctx_ws[nd->ctx]) p->ctx_ws[nd->ctx] = p->node_ws[n];
  }
  lmx_free(buf);
  lmx_free(dts);
  return LMX_OK;
}

int lmx_pass_memory(lmx_plan *p, int share) {
  mem_state m = {NULL, NULL, share, NULL};
  p->nblocks = 0;
  p->naive_bytes = p->planned_bytes = 0;
  p->planned_entries = 0;
  count_refs(p);
  int rc = share ? chain_refs(p, &m.chain) : LMX_OK;
  if (rc == LMX_OK) rc = walk(p, &m);
  lmx_free(m.use);
  lmx_free(m.is_free);
  lmx_free(m.chain);
  LMX_TRY(rc);
  for (int b = 0; b < p->nblocks; b++) p->planned_bytes += p->blk_bytes[b];
  for (int e = 0; e < p->num_entries; e++) {
    if (!is_planned(p, e) || p->sid[e] < 0) continue;
    p->naive_bytes += round64(lmx_plan_entry_bytes(p, e));
    p->planned_entries++;
  }
  return workspaces(p);
}
