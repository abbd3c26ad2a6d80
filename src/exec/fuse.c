/* fuse.c — pairs of steps that run as one kernel (a step-level pass after the steps are
 * made; the symbol, its JSON, the plan and the memory figures stay as they are).
 *
 * FullyConnected → SoftmaxOutput (a language model's or classifier's output layer): the
 * SoftmaxOutput backward step writes G, the gradient of FC's output, and a later step,
 * FC's backward, reads it three times. When both run on the CPU, no other step and no
 * head reads G, and no step between the two touches storage that FC's gradients use
 * (they are written early), the pair is marked: the SoftmaxOutput step runs lmx_cpu_fc_smo_backward (src/ops/cpu/fc_smo.c), which makes G
 * a block of columns at a time and gives FC's gradients from each block while it is in
 * cache, and the FC step is skipped. Its debug_str block says "Kernel: fused with the
 * FullyConnected backward". At run time the pair runs as two steps while a monitor is
 * installed (it reads every entry, G included) and when the glue declines (dtypes,
 * layout, overlapping arrays); the note then says so ("not fused ... this time: <why>")
 * and the executor counts the fallback (fuse_runs / fuse_fallbacks).
 *
 * FullyConnected → Activation (an MLP's hidden layers), forward: when both run on the CPU
 * and nothing but the Activation's forward reads FC's output Y (its backward reads its own
 * output, FC's backward its inputs; no head, no copy), the FC step writes the Activation's
 * output z = f(x · wᵀ + b) itself (lmx_cpu_fc_act_forward, src/ops/cpu/nn_fc.c): on
 * oneDNN, bias and f are the product's epilogue, applied while each element is in
 * registers, instead of a bias copy before the product and a pass of f after it. Y is
 * then never written. z is written at FC's place, so no step between the two may touch
 * z's storage. The same fallbacks (monitor, kernel declines) run the two steps.
 *
 * LUAMX_FUSE=0 in the environment at bind time marks no pairs (comparisons, benchmarks).
 */
#include <stdlib.h>
#include <string.h>

#include "../core/status.h"
#include "../tensor/dtype.h"
#include "../ops/cpu/cpu_ops.h"
#include "exec.h"

static const char NOTE_FUSED[] = "fused with the FullyConnected backward (its gradients "
                                 "from G in blocks of columns, G never stored whole)";
static const char NOTE_FC_ACT[] = "fused with the Activation after it (writes its output: "
                                  "bias and activation in oneDNN's epilogue)";
static const char NOTE_FC_ACT2[] = "fused with the Activation after it (writes its output: "
                                   "the product, then the activation over it)";
static const char NOTE_ACT_FC[] = "fused into the FullyConnected before it (which writes "
                                  "this output)";

static int step_of(const lmx_executor *x, const lmx_xstep *s, int kind, const char *op) {
  const lmx_plan *p = &x->plan;
  return s->kind == kind && s->c.op && strcmp(s->c.op->name, op) == 0 &&
         p->ctx_type[p->nodes[s->node].ctx] == LMX_CPU &&
         (kind == LMX_STEP_BWD ? s->bwd != NULL : s->fwd != NULL);
}

static int step_is(const lmx_executor *x, const lmx_xstep *s, const char *op) {
  return step_of(x, s, LMX_STEP_BWD, op);
}

/* How many slots of every step but a and b name entry e. */
static int readers(const lmx_executor *x, int e, const lmx_xstep *a, const lmx_xstep *b) {
  int n = 0;
  for (int i = 0; i < x->nsteps; i++) {
    const lmx_xstep *s = &x->steps[i];
    if (s == a || s == b) continue;
    if (s->kind == LMX_STEP_COPY) {
      const lmx_pnode *nd = &x->plan.nodes[s->node];
      n += x->plan.in_entry[nd->in0] == e || nd->out0 == e;
      continue;
    }
    for (int k = 0; k < s->nt; k++) n += s->slot[k] == e;
  }
  for (int h = 0; h < x->plan.nheads; h++) n += x->plan.head_entry[h] == e;
  return n;
}

static int overlap(const void *a, size_t na, const void *b, size_t nb) {
  const char *pa = a, *pb = b;
  return pa && pb && na && nb && pa < pb + nb && pb < pa + na;
}

static size_t bytes_of(const lmx_tensor *t) {
  size_t n = (size_t)lmx_dtype_size(t->dtype);
  for (int d = 0; d < t->shape.ndim; d++) n *= (size_t)t->shape.dim[d];
  return n;
}

/* Does step s read entry e? A backward step reads only what its op's backward needs. */
static int step_reads(const lmx_executor *x, const lmx_xstep *s, int e) {
  if (s->kind == LMX_STEP_COPY) {
    const lmx_pnode *nd = &x->plan.nodes[s->node];
    return x->plan.in_entry[nd->in0] == e || nd->out0 == e;
  }
  unsigned needs = LMX_NEEDS_OUT_GRADS | LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS;
  if (s->kind == LMX_STEP_BWD) needs = lmx_plan_bwd_needs(s->c.op, x->plan.nodes[s->node].src);
  int no = s->nout, na = s->nargs;
  for (int k = 0; k < s->nt; k++) {
    if (s->slot[k] != e) continue;
    if (s->kind == LMX_STEP_OP) return 1;
    /* og[no] in[na] out[no] ig[na] aux */
    unsigned need = k < no ? LMX_NEEDS_OUT_GRADS
                    : k < no + na ? LMX_NEEDS_INPUTS
                    : k < 2 * no + na ? LMX_NEEDS_OUTPUTS
                    : k < 2 * no + 2 * na ? 0u
                    : LMX_NEEDS_INPUTS;
    if (needs & need) return 1;
  }
  return 0;
}

/* Does any array of step s share storage with tensor t? */
static int touches(const lmx_executor *x, const lmx_xstep *s, const lmx_tensor *t) {
  if (s->kind == LMX_STEP_COPY) {
    const lmx_ndarray *arr[] = {s->src, s->dst};
    for (int a = 0; a < 2; a++)
      if (arr[a] && overlap(lmx_nd_ptr(arr[a]), lmx_nd_size(arr[a]) *
                            (size_t)lmx_dtype_size(arr[a]->dtype), t->data, bytes_of(t)))
        return 1;
    return 0;
  }
  for (int j = 0; j < s->nt; j++) {
    const lmx_tensor *u = &x->tens[s->slot[j]];
    if (overlap(u->data, bytes_of(u), t->data, bytes_of(t))) return 1;
  }
  return 0;
}

/* Does any array of step s share storage with the gradients step f writes? Running f
 * before s (the pair runs at the first step's place) is safe only if not. */
static int touches_outputs(const lmx_executor *x, const lmx_xstep *s, const lmx_xstep *f) {
  int first_ig = f->nout + f->nargs + f->nout;
  for (int k = 0; k < f->nargs; k++)
    if (f->req[k] && touches(x, s, &x->tens[f->slot[first_ig + k]])) return 1;
  return 0;
}

/* FullyConnected → Activation forward pairs (see the top). */
static void fuse_fc_act(lmx_executor *x) {
  for (int i = 0; i < x->nfwd_steps; i++) {
    lmx_xstep *f = &x->steps[i];
    if (!step_of(x, f, LMX_STEP_OP, "FullyConnected") || f->fuse) continue;
    int y = f->slot[f->nargs], j = i + 1; /* FC: in[nargs] out[1] */
    while (j < x->nfwd_steps && !(x->steps[j].kind == LMX_STEP_OP && x->steps[j].nt > 0 &&
                                  step_reads(x, &x->steps[j], y)))
      j++;
    if (j >= x->nfwd_steps) continue;
    lmx_xstep *a = &x->steps[j];
    if (!step_of(x, a, LMX_STEP_OP, "Activation") || a->fuse || a->slot[0] != y) continue;
    int ok = 1;
    for (int h = 0; h < x->plan.nheads && ok; h++) ok = x->plan.head_entry[h] != y;
    for (int k = 0; k < x->nsteps && ok; k++)
      ok = k == i || k == j || !step_reads(x, &x->steps[k], y);
    const lmx_tensor *z = &x->tens[a->slot[a->nargs]];
    for (int k = i + 1; k < j && ok; k++) ok = !touches(x, &x->steps[k], z);
    if (!ok) continue;
    f->fuse = LMX_FUSE_FIRST, a->fuse = LMX_FUSE_SECOND;
    f->pair = j, a->pair = i;
    f->cpu_note = "fused with the Activation after it (writes its output)";
    a->cpu_note = NOTE_ACT_FC;
  }
}

void lmx_exec_fuse(lmx_executor *x) {
  const char *env = getenv("LUAMX_FUSE");
  if (env && strcmp(env, "0") == 0) return;
  fuse_fc_act(x);
  for (int i = x->nfwd_steps; i < x->nsteps; i++) {
    lmx_xstep *s = &x->steps[i];
    if (!step_is(x, s, "SoftmaxOutput")) continue;
    /* SMO: og[1] in[2] out[1] ig[2]; G = ig[0]. Its reader: FC's backward, og[0]. */
    int g = s->slot[s->nout + s->nargs + s->nout], j = i + 1;
    while (j < x->nsteps && !(x->steps[j].kind != LMX_STEP_COPY && x->steps[j].nt > 0 &&
                              x->steps[j].slot[0] == g))
      j++;
    if (j >= x->nsteps) continue;
    lmx_xstep *f = &x->steps[j];
    if (!step_is(x, f, "FullyConnected") || f->fuse || readers(x, g, s, f)) continue;
    int ok = 1;
    for (int k = i + 1; k < j && ok; k++) ok = !touches_outputs(x, &x->steps[k], f);
    if (!ok) continue;
    s->fuse = LMX_FUSE_FIRST, f->fuse = LMX_FUSE_SECOND;
    s->pair = j, f->pair = i;
    s->cpu_note = NOTE_FUSED;
  }
}

/* The two steps' tensors, gathered as run_step does (at most 16 each). */
static int gather2(const lmx_executor *x, const lmx_xstep *s, lmx_tensor *t) {
  if (s->nt > 16) return 0;
  for (int k = 0; k < s->nt; k++) t[k] = x->tens[s->slot[k]];
  return 1;
}

/* The FullyConnected → Activation pair at the FC step. */
static int run_fc_act(lmx_executor *x, lmx_xstep *f) {
  lmx_xstep *a = &x->steps[f->pair];
  static const char NOTE_MON[] = "not fused with the Activation after it this time: a "
                                 "monitor is installed";
  if (x->mon) {
    f->cpu_note = NOTE_MON, a->cpu_note = NULL;
    x->fuse_fallbacks++;
    return 0;
  }
  lmx_tensor tf[16];
  int how = gather2(x, f, tf) ? lmx_cpu_fc_act_forward(&f->c, tf, f->req, &a->c,
                                                       &x->tens[a->slot[a->nargs]], a->req)
                              : 0;
  if (!how) {
    f->cpu_note = "not fused with the Activation after it this time: dtypes, shapes or "
                  "overlapping arrays are not the fused kernel's case";
    a->cpu_note = NULL;
    x->fuse_fallbacks++;
    return 0;
  }
  f->cpu_note = how == 1 ? NOTE_FC_ACT : NOTE_FC_ACT2, a->cpu_note = NOTE_ACT_FC;
  f->fused_ran = 1;
  x->fuse_runs++;
  return 1;
}

int lmx_exec_run_fused(lmx_executor *x, lmx_xstep *s) {
  if (s->fuse == LMX_FUSE_SECOND) return x->steps[s->pair].fused_ran;
  s->fused_ran = 0;
  if (s->kind == LMX_STEP_OP) return run_fc_act(x, s);
  lmx_xstep *f = &x->steps[s->pair];
  lmx_tensor ts[16], tf[16];
  if (x->mon || !gather2(x, s, ts) || !gather2(x, f, tf)) {
    s->cpu_note = "not fused with the FullyConnected backward this time: a monitor is "
                  "installed";
    x->fuse_fallbacks++;
    return 0;
  }
  f->c.is_train = s->c.is_train;
  const lmx_tensor *s_in = ts + s->nout, *s_out = s_in + s->nargs, *s_ig = s_out + s->nout;
  const lmx_tensor *f_in = tf + f->nout, *f_ig = f_in + f->nargs + f->nout;
  if (!lmx_cpu_fc_smo_backward(&s->c, s_in, s_out, s_ig, s->req, &f->c, tf, f_in, f_ig,
                               f->req)) {
    s->cpu_note = "not fused with the FullyConnected backward this time: dtypes, layout or "
                  "overlapping arrays are not the fused kernel's case";
    x->fuse_fallbacks++;
    return 0;
  }
  s->cpu_note = NOTE_FUSED;
  s->fused_ran = 1;
  x->fuse_runs++;
  return 1;
}
