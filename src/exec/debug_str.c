/* debug_str.c — the executor's debug_str() (MXNet's GraphExecutor::Print).
 *
 * The full executor graph (forward outputs, then one gradient output per argument with
 * grad_req != null) in the Symbol printer's layout: "Symbol Outputs:", then per node in
 * execution order "Variable:<name>" or a block "--------------------", "Op:<op>,
 * Name=<name>", "Inputs:" with "\targ[i]=<node>(<index>)" (" version=<v>" for variable
 * inputs), "Attrs:" sorted by key, "Control deps:" (a backward node's forward node).
 * Backward nodes print as "_backward_<Op>", copies as "_copy" (gradient copies) or
 * "_CrossDeviceCopy", zeros as "_zeros". A step whose kernel chose between
 * implementations adds "Kernel: <note>" (lmx_op_ctx.note: on a GPU, Convolution,
 * Pooling, BatchNorm and RNN say "cuDNN" or "own kernels (<why>)", FullyConnected
 * "cuBLASLt (<epilogue>)" or "cuBLAS (<why>)", once they have run).
 * Then, per GPU context, one line with its
 * caching allocator's figures ("Device gpu(0): ..."), one line with the memory plan and, last,
 * MXNet's two total lines ("Total <MB> MB allocated" with the bytes the plan allocates
 * for intermediates, ">> 20"; "Total 11 TempSpace resource requested"), so code that
 * reads the MB figure from line [-3] of the text split at "\n" keeps working.
 */
#include <stdlib.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "exec.h"

static void entry_ref(lmx_sbuf *sb, const lmx_plan *p, int e) {
  const lmx_pnode *n = &p->nodes[p->entry_node[e]];
  lmx_sbuf_addf(sb, "%s(%d)", n->name, e - n->out0);
}

static int cmp_kv(const void *a, const void *b) {
  return strcmp(((const lmx_kv *)a)->key, ((const lmx_kv *)b)->key);
}

static void print_attrs(lmx_sbuf *sb, const lmx_node *src) {
  if (!src || src->attrs.n == 0) return;
  lmx_kv sorted[64];
  int n = src->attrs.n < 64 ? src->attrs.n : 64;
  memcpy(sorted, src->attrs.kv, (size_t)n * sizeof *sorted);
  qsort(sorted, (size_t)n, sizeof *sorted, cmp_kv);
  lmx_sbuf_add(sb, "Attrs:\n");
  for (int i = 0; i < n; i++) lmx_sbuf_addf(sb, "\t%s=%s\n", sorted[i].key, sorted[i].val);
}

static void print_node(lmx_sbuf *sb, const lmx_plan *p, int id, const char *note) {
  const lmx_pnode *nd = &p->nodes[id];
  if (nd->kind == LMX_PN_VAR) {
    lmx_sbuf_addf(sb, "Variable:%s\n", nd->name);
    return;
  }
  lmx_sbuf_add(sb, "--------------------\n");
  if (nd->kind == LMX_PN_OP) lmx_sbuf_addf(sb, "Op:%s, Name=%s\n", nd->op->name, nd->name);
  else if (nd->kind == LMX_PN_BWD) lmx_sbuf_addf(sb, "Op:_backward_%s, Name=%s\n", nd->op->name, nd->name);
  else if (nd->kind == LMX_PN_ZEROS) lmx_sbuf_addf(sb, "Op:_zeros, Name=%s\n", nd->name);
  else lmx_sbuf_addf(sb, "Op:%s, Name=%s\n", p->grad_arg[nd->out0] >= 0 ? "_copy" : "_CrossDeviceCopy",
                     nd->name);
  if (nd->nin > 0) lmx_sbuf_add(sb, "Inputs:\n");
  for (int k = 0; k < nd->nin; k++) {
    int e = p->in_entry[nd->in0 + k];
    const lmx_pnode *src = &p->nodes[p->entry_node[e]];
    lmx_sbuf_addf(sb, "\targ[%d]=", k);
    entry_ref(sb, p, e);
    if (src->kind == LMX_PN_VAR) lmx_sbuf_addf(sb, " version=%d", src->src ? src->src->version : 0);
    lmx_sbuf_add(sb, "\n");
  }
  if (nd->kind == LMX_PN_OP || nd->kind == LMX_PN_BWD) print_attrs(sb, nd->src);
  if (nd->kind == LMX_PN_BWD)
    lmx_sbuf_addf(sb, "Control deps:\n\tcdep[0]=%s\n", p->nodes[nd->fwd].name);
  if (note && note[0]) lmx_sbuf_addf(sb, "Kernel: %s\n", note);
}

static void print_outputs(lmx_sbuf *sb, const lmx_executor *x) {
  const lmx_plan *p = &x->plan;
  int k = 0;
  lmx_sbuf_add(sb, "Symbol Outputs:\n");
  for (int h = 0; h < p->nheads; h++) {
    lmx_sbuf_addf(sb, "\toutput[%d]=", k++);
    entry_ref(sb, p, p->head_entry[h]);
    lmx_sbuf_add(sb, "\n");
  }
  for (int a = 0; a < p->nargs; a++) { /* gradient heads: the last write into each array */
    if (p->arg_req[a] == LMX_REQ_NULL) continue;
    int last = -1;
    for (int e = 0; e < p->num_entries; e++)
      if (p->grad_arg[e] == a) last = e;
    if (last < 0) continue;
    lmx_sbuf_addf(sb, "\toutput[%d]=", k++);
    entry_ref(sb, p, last);
    lmx_sbuf_add(sb, "\n");
  }
}

/* A device with a caching allocator (GPU): one line of its figures. */
static void device_memory(lmx_sbuf *sb, int dev_type, int dev_id) {
  const lmx_device_ops *d;
  int64_t f[LMX_GPUMEM_NUM_FIGURES];
  if (lmx_device_lookup(dev_type, dev_id, &d) != LMX_OK || !d->memory ||
      d->memory(dev_id, f, LMX_GPUMEM_NUM_FIGURES) != LMX_OK) {
    lmx_clear_error();
    return;
  }
  lmx_sbuf_addf(sb, "Device %s(%d): %lld bytes in use in %lld blocks, %lld cached, peak %lld; "
                "%lld allocations (%lld from the cache, %lld raw); device free %lld of %lld\n",
                d->name, dev_id, (long long)f[LMX_GPUMEM_IN_USE],
                (long long)f[LMX_GPUMEM_LIVE_BLOCKS], (long long)f[LMX_GPUMEM_CACHED],
                (long long)f[LMX_GPUMEM_PEAK], (long long)f[LMX_GPUMEM_REQUESTS],
                (long long)f[LMX_GPUMEM_CACHE_HITS], (long long)f[LMX_GPUMEM_RAW_ALLOCS],
                (long long)f[LMX_GPUMEM_FREE], (long long)f[LMX_GPUMEM_TOTAL]);
}

int lmx_exec_debug_str(lmx_executor *x, const char **text) {
  const lmx_plan *p = &x->plan;
  lmx_sbuf *sb = &x->text;
  lmx_sbuf_release(sb);
  print_outputs(sb, x);
  char *seen = lmx_calloc((size_t)p->num_nodes + 1, 1);
  const char **note = lmx_calloc((size_t)p->num_nodes + 1, sizeof *note);
  if (!seen || !note) {
    lmx_free(seen), lmx_free(note);
    return lmx_fail_nomem("debug_str", (size_t)p->num_nodes);
  }
  for (int i = 0; i < x->nsteps; i++)
    note[x->steps[i].node] = x->steps[i].note ? x->steps[i].note : x->steps[i].cpu_note;
  for (int n = 0; n < p->num_nodes; n++) /* variables first, as they appear */
    if (p->nodes[n].kind == LMX_PN_VAR && !p->nodes[n].is_bwd) print_node(sb, p, n, NULL);
  for (int i = 0; i < p->num_order; i++) {
    const lmx_pnode *nd = &p->nodes[p->order[i]];
    for (int k = 0; k < nd->nin; k++) { /* head gradients and zeros just before use */
      int src = p->entry_node[p->in_entry[nd->in0 + k]];
      const lmx_pnode *s = &p->nodes[src];
      if (((s->kind == LMX_PN_VAR && s->is_bwd) || s->kind == LMX_PN_ZEROS) && !seen[src]) {
        seen[src] = 1;
        print_node(sb, p, src, NULL);
      }
    }
    print_node(sb, p, p->order[i], note[p->order[i]]);
  }
  lmx_free(seen), lmx_free(note);
  for (int c = 0; c < p->nctx; c++) device_memory(sb, p->ctx_type[c], p->ctx_id[c]);
  lmx_sbuf_addf(sb, "Memory plan: %zu bytes in %d blocks for %d entries (naive sum %zu bytes); "
                "pool %zu bytes\n", p->planned_bytes, p->nblocks, p->planned_entries,
                p->naive_bytes, x->pool ? x->pool->bytes : 0);
  lmx_sbuf_addf(sb, "Total %zu MB allocated\n", p->planned_bytes >> 20);
  lmx_sbuf_add(sb, "Total 11 TempSpace resource requested\n");
  if (sb->failed) return lmx_fail_nomem("debug_str text", sb->cap * 2);
  *text = lmx_sbuf_str(sb);
  return LMX_OK;
}
